//! Sparse matrix–vector products over Fr on the device (`cuda/sparse/spmv.cuh`): matrices
//! uploaded once, times many vectors. What the prover uses them for: a constraint system's three
//! matrices times each proof's witness, so that a proof sends the witness up instead of the three
//! products (at 32 GiB 4.2 GB instead of 17), which the host then neither computes nor holds.
//!
//! Matrices stay on the device ([`DeviceSparse`]) where they fit; on a smaller device they stay in
//! host memory, page-locked in place, and stream through two chunk buffers for every product
//! ([`StreamedSparse`]): at 32 GiB 7.3 GB of matrices against 12.9 GB of a, b and c, and the host
//! still computes only the witness.

use blstrs::Scalar;
use cudarc::driver::{CudaEvent, CudaFunction, CudaSlice, CudaView, LaunchConfig, PushKernelArg};
use ff::Field;

use crate::error::DriverContext;
use crate::layout::SCALAR_WORDS;
use crate::{DeviceScalars, GpuError, HostLocked, Lane};

/// One matrix in compressed sparse rows on the host: row r's entries are `starts[r]..starts[r +
/// 1]`, each a column and an index into the coefficient table.
#[derive(Clone, Copy, Debug)]
pub struct SparseRows<'a> {
    pub starts: &'a [u32],
    pub columns: &'a [u32],
    pub coeffs: &'a [u32],
}

/// One matrix on the device.
#[derive(Debug)]
struct DeviceRows {
    starts: CudaSlice<u32>,
    columns: CudaSlice<u32>,
    coeffs: CudaSlice<u32>,
    rows: u32,
}

/// Matrices sharing one coefficient table (index 0 is one), on the device, for products with
/// vectors of `columns` scalars.
#[derive(Debug)]
pub struct DeviceSparse {
    table: DeviceScalars,
    matrices: Vec<DeviceRows>,
    columns: usize,
    bytes: usize,
}

const THREADS: u32 = 256;

fn invalid(reason: String) -> GpuError {
    GpuError::InvalidInput {
        what: "sparse matrix",
        reason,
    }
}

/// Checks what the kernel relies on: a running count of entries, columns below `columns`,
/// coefficient indices inside the table, 32-bit counts.
fn check(m: usize, rows: &SparseRows<'_>, columns: usize, table: usize) -> Result<(), GpuError> {
    let nnz = rows.columns.len();
    if rows.coeffs.len() != nnz {
        return Err(invalid(format!(
            "matrix {m}: {nnz} columns but {} coefficients",
            rows.coeffs.len()
        )));
    }
    if rows.starts.is_empty() || u32::try_from(rows.starts.len() - 1).is_err() {
        return Err(invalid(format!(
            "matrix {m}: {} row starts (one more than the rows, below 2^32)",
            rows.starts.len()
        )));
    }
    let ordered = rows.starts.first() == Some(&0)
        && rows.starts.windows(2).all(|w| w[0] <= w[1])
        && rows.starts.last().map(|&s| s as usize) == Some(nnz);
    if !ordered {
        return Err(invalid(format!(
            "matrix {m}: row starts are not a running count of its {nnz} entries"
        )));
    }
    if let Some(&column) = rows.columns.iter().find(|&&c| c as usize >= columns) {
        return Err(invalid(format!(
            "matrix {m}: column {column} of a vector of {columns}"
        )));
    }
    if let Some(&coeff) = rows.coeffs.iter().find(|&&k| k as usize >= table) {
        return Err(invalid(format!(
            "matrix {m}: coefficient {coeff} of a table of {table}"
        )));
    }
    Ok(())
}

/// [`check`] for every matrix, and the table's first coefficient.
fn check_all(
    table: &[Scalar],
    matrices: &[SparseRows<'_>],
    columns: usize,
) -> Result<(), GpuError> {
    if table.first() != Some(&Scalar::ONE) {
        return Err(invalid("the coefficient table must begin with one".into()));
    }
    for (m, rows) in matrices.iter().enumerate() {
        check(m, rows, columns, table.len())?;
    }
    Ok(())
}

/// What a product needs of its vectors: `z` as long as the matrices are wide, `out` room for the
/// rows.
fn check_vectors(
    rows: usize,
    columns: usize,
    z: &DeviceScalars,
    out: &DeviceScalars,
) -> Result<(), GpuError> {
    if z.len() != columns || out.len() < rows {
        return Err(invalid(format!(
            "a product of {rows} rows by {columns} columns needs a vector of {columns} and room \
             for the rows; got {} and {}",
            z.len(),
            out.len()
        )));
    }
    Ok(())
}

/// One launch of `spmv_fr`: `rows` rows whose starts begin at `entry_base`, their entries at
/// index 0 of `columns` and `coeffs`, into `out` (one scalar per row).
struct RowsLaunch<'a> {
    starts: CudaView<'a, u32>,
    columns: CudaView<'a, u32>,
    coeffs: CudaView<'a, u32>,
    rows: u32,
    entry_base: u32,
}

impl RowsLaunch<'_> {
    /// Queues the product on `gpu`'s stream.
    ///
    /// # Safety
    /// `starts` holds rows + 1 values, non-decreasing, the first equal to `entry_base`; the
    /// entries in between are in `columns` and `coeffs`, every column below `z`'s length and
    /// every coefficient below `table`'s; `out` holds at least `rows` scalars.
    unsafe fn launch(
        &self,
        gpu: &Lane,
        kernel: &CudaFunction,
        table: &DeviceScalars,
        z: &DeviceScalars,
        out: &mut cudarc::driver::CudaViewMut<'_, u32>,
    ) -> Result<(), GpuError> {
        if self.rows == 0 {
            return Ok(());
        }
        let config = LaunchConfig {
            grid_dim: (self.rows.div_ceil(THREADS), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the caller's conditions: threads at or past `rows` return, the others read
        // their row's entries at start − entry_base, inside the buffers, and write out[row].
        unsafe {
            gpu.stream()
                .launch_builder(kernel)
                .arg(&self.starts)
                .arg(&self.columns)
                .arg(&self.coeffs)
                .arg(&table.words)
                .arg(&z.words)
                .arg(&self.rows)
                .arg(&self.entry_base)
                .arg(out)
                .launch(config)
                .call("spmv_fr")?;
        }
        Ok(())
    }
}

impl DeviceSparse {
    /// Uploads `matrices` and their coefficient `table` after checking every entry.
    pub fn upload(
        gpu: &Lane,
        table: &[Scalar],
        matrices: &[SparseRows<'_>],
        columns: usize,
    ) -> Result<Self, GpuError> {
        check_all(table, matrices, columns)?;
        let bytes = Self::bytes_of(table, matrices);
        gpu.ensure_fits("sparse matrices", bytes)?;
        let upload = |values: &[u32]| -> Result<CudaSlice<u32>, GpuError> {
            if values.is_empty() {
                gpu.zeros::<u32>(1, "cuMemAlloc (sparse)")
            } else {
                gpu.upload(values, "cuMemcpyHtoD (sparse)")
            }
        };
        let matrices = matrices
            .iter()
            .map(|rows| {
                Ok(DeviceRows {
                    starts: upload(rows.starts)?,
                    columns: upload(rows.columns)?,
                    coeffs: upload(rows.coeffs)?,
                    // Checked to fit above.
                    rows: (rows.starts.len() - 1) as u32,
                })
            })
            .collect::<Result<Vec<_>, GpuError>>()?;
        Ok(DeviceSparse {
            table: DeviceScalars::upload(gpu, table)?,
            matrices,
            columns,
            bytes,
        })
    }

    /// Device bytes `matrices` and their `table` take once uploaded.
    pub fn bytes_of(table: &[Scalar], matrices: &[SparseRows<'_>]) -> usize {
        std::mem::size_of_val(table)
            + matrices
                .iter()
                .map(|r| 4 * (r.starts.len() + r.columns.len() + r.coeffs.len()))
                .sum::<usize>()
    }

    /// Device bytes the matrices and the table hold.
    pub fn device_bytes(&self) -> usize {
        self.bytes
    }

    /// Rows of matrix `m` (0 for a matrix it does not have).
    pub fn rows(&self, m: usize) -> usize {
        self.matrices.get(m).map_or(0, |rows| rows.rows as usize)
    }

    /// `out[..rows] = M·z` for matrix `m`, on the device's stream; `out`'s other scalars are left
    /// as they are (zero for a fresh vector, as the NTT's padding needs).
    pub fn multiply(
        &self,
        gpu: &Lane,
        m: usize,
        z: &DeviceScalars,
        out: &mut DeviceScalars,
    ) -> Result<(), GpuError> {
        let Some(rows) = self.matrices.get(m) else {
            return Err(invalid(format!("matrix {m} of {}", self.matrices.len())));
        };
        check_vectors(rows.rows as usize, self.columns, z, out)?;
        let kernel = gpu.kernel("spmv_fr")?;
        let launch = RowsLaunch {
            starts: rows.starts.as_view(),
            columns: rows.columns.as_view(),
            coeffs: rows.coeffs.as_view(),
            rows: rows.rows,
            entry_base: 0,
        };
        // SAFETY: `upload` checked that `starts` is a running count from 0 of the entries (rows
        // + 1 values), every column below `self.columns` (= z's length, checked above) and every
        // coefficient index below the table's length; `out` holds at least `rows` scalars.
        unsafe { launch.launch(gpu, &kernel, &self.table, z, &mut out.words.as_view_mut()) }
    }
}

/// Limits on one chunk of a streamed matrix: each of the two chunk buffers holds this many entries
/// and rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkLimit {
    pub entries: usize,
    pub rows: usize,
}

impl ChunkLimit {
    /// 2^24 entries and 2^23 rows: two buffers of 160 MB, a 32 GiB PoRep's matrix (~240M entries)
    /// in ~15 chunks, each copied in ~3 ms at 50 GB/s — long enough that a launch and an event per
    /// chunk cost nothing, short enough that only the first copy is not hidden.
    pub const DEFAULT: ChunkLimit = ChunkLimit {
        entries: 1 << 24,
        rows: 1 << 23,
    };

    /// The smallest buffers: one entry and one row (a device buffer is never empty).
    const LEAST: ChunkLimit = ChunkLimit {
        entries: 1,
        rows: 1,
    };

    /// Device bytes of the two chunk buffers.
    pub fn buffer_bytes(&self) -> usize {
        2 * 4 * (self.rows + 1 + 2 * self.entries)
    }

    /// Room for both: the larger entries and the larger rows.
    fn max(self, other: ChunkLimit) -> ChunkLimit {
        ChunkLimit {
            entries: self.entries.max(other.entries),
            rows: self.rows.max(other.rows),
        }
    }
}

/// The row ranges of a matrix's chunks, in order: each as many rows as fit `limit`, at least one
/// (a row longer than the limit is a chunk of its own, its buffer sized to it).
fn chunk_rows(starts: &[u32], limit: ChunkLimit) -> Vec<(usize, usize)> {
    let rows = starts.len().saturating_sub(1);
    let mut chunks = Vec::new();
    let mut first = 0;
    while first < rows {
        let cap = starts[first] as usize + limit.entries;
        let last = (first + limit.rows.max(1)).min(rows);
        let within = starts[first + 1..=last].partition_point(|&s| s as usize <= cap);
        let end = first + within.max(1);
        chunks.push((first, end));
        first = end;
    }
    chunks
}

/// The entries and rows of the largest chunk of `matrices` in chunks of at most `limit` (more
/// entries where one row has more).
fn largest_chunk(matrices: &[SparseRows<'_>], limit: ChunkLimit) -> ChunkLimit {
    matrices
        .iter()
        .map(|rows| extent(rows.starts, &chunk_rows(rows.starts, limit)))
        .fold(ChunkLimit::LEAST, ChunkLimit::max)
}

/// The entries and rows of the largest of one matrix's `chunks`.
fn extent(starts: &[u32], chunks: &[(usize, usize)]) -> ChunkLimit {
    let of = |&(first, end): &(usize, usize)| ChunkLimit {
        entries: (starts[end] - starts[first]) as usize,
        rows: end - first,
    };
    chunks
        .iter()
        .map(of)
        .fold(ChunkLimit::LEAST, ChunkLimit::max)
}

/// One matrix kept in host memory: which memory was checked (each slice's address and
/// length), and its chunks.
#[derive(Debug)]
struct HostRows {
    slices: [(usize, usize); 3],
    rows: usize,
    chunks: Vec<(usize, usize)>,
}

impl HostRows {
    fn slices_of(rows: &SparseRows<'_>) -> [(usize, usize); 3] {
        [rows.starts, rows.columns, rows.coeffs].map(|s| (s.as_ptr() as usize, s.len()))
    }
}

/// Matrices sharing one coefficient table (index 0 is one) that stay in the caller's host memory
/// and stream through the device in chunks of rows for every product: each chunk's copy on the
/// copy stream overlaps the product of the chunk before it, if the memory is page-locked
/// ([`lock_in_host`]; from pageable memory the driver stages each copy). On the device: the table,
/// and two chunk buffers during a product.
#[derive(Debug)]
pub struct StreamedSparse {
    table: DeviceScalars,
    matrices: Vec<HostRows>,
    columns: usize,
    /// Entries and rows of the largest chunk: each buffer's size.
    buffer: ChunkLimit,
}

/// Page-locks `matrices` where they are, for [`StreamedSparse`]'s copies; the caller drops the
/// locks before the matrices.
pub fn lock_in_host(gpu: &Lane, matrices: &[SparseRows<'_>]) -> Result<Vec<HostLocked>, GpuError> {
    let slices = matrices
        .iter()
        .flat_map(|rows| [rows.starts, rows.columns, rows.coeffs]);
    slices
        .filter(|values| !values.is_empty())
        .map(|values| HostLocked::new(gpu, values))
        .collect()
}

/// One chunk buffer on the device.
struct ChunkBuffer {
    starts: CudaSlice<u32>,
    columns: CudaSlice<u32>,
    coeffs: CudaSlice<u32>,
}

impl StreamedSparse {
    /// Checks every entry of `matrices`, splits them into chunks of at most `limit` and uploads
    /// their coefficient `table`. The caller keeps the matrices unchanged while this value lives
    /// and passes the same slices to [`StreamedSparse::multiply`].
    pub fn new(
        gpu: &Lane,
        table: &[Scalar],
        matrices: &[SparseRows<'_>],
        columns: usize,
        limit: ChunkLimit,
    ) -> Result<Self, GpuError> {
        check_all(table, matrices, columns)?;
        let matrices_host: Vec<HostRows> = matrices
            .iter()
            .map(|rows| HostRows {
                slices: HostRows::slices_of(rows),
                rows: rows.starts.len() - 1,
                chunks: chunk_rows(rows.starts, limit),
            })
            .collect();
        let buffer = matrices
            .iter()
            .zip(&matrices_host)
            .map(|(rows, host)| extent(rows.starts, &host.chunks))
            .fold(ChunkLimit::LEAST, ChunkLimit::max);
        Ok(StreamedSparse {
            table: DeviceScalars::upload(gpu, table)?,
            matrices: matrices_host,
            columns,
            buffer,
        })
    }

    /// Device bytes a product of `matrices` takes beside its vectors, streamed in chunks of at
    /// most `limit`: the table and two buffers of the largest chunk.
    pub fn device_bytes(table: &[Scalar], matrices: &[SparseRows<'_>], limit: ChunkLimit) -> usize {
        std::mem::size_of_val(table) + largest_chunk(matrices, limit).buffer_bytes()
    }

    /// `out[..rows] = M·z` for matrix `m`, whose slices `rows` are the ones checked, as
    /// [`DeviceSparse::multiply`]. Returns once the last chunk is copied: its products are queued
    /// on the device's stream.
    pub fn multiply(
        &self,
        gpu: &Lane,
        m: usize,
        rows: SparseRows<'_>,
        z: &DeviceScalars,
        out: &mut DeviceScalars,
    ) -> Result<(), GpuError> {
        let Some(host) = self.matrices.get(m) else {
            return Err(invalid(format!("matrix {m} of {}", self.matrices.len())));
        };
        if HostRows::slices_of(&rows) != host.slices {
            return Err(invalid(format!(
                "matrix {m} is not the memory that was checked"
            )));
        }
        check_vectors(host.rows, self.columns, z, out)?;
        if host.chunks.is_empty() {
            return Ok(());
        }
        let kernel = gpu.kernel("spmv_fr")?;
        let copy = gpu.copy_stream();
        let alloc = |len: usize| gpu.zeros::<u32>(len, "cuMemAlloc (sparse chunk)");
        let buffer = || -> Result<ChunkBuffer, GpuError> {
            Ok(ChunkBuffer {
                starts: alloc(self.buffer.rows + 1)?,
                columns: alloc(self.buffer.entries)?,
                coeffs: alloc(self.buffer.entries)?,
            })
        };
        let mut buffers = [buffer()?, buffer()?];
        // Each buffer's last product: the copy into it waits for that.
        let mut consumed: [Option<CudaEvent>; 2] = [None, None];
        for (k, &(first, end)) in host.chunks.iter().enumerate() {
            let slot = k % 2;
            let buffer = &mut buffers[slot];
            if let Some(done) = &consumed[slot] {
                copy.wait(done)
                    .call("cuStreamWaitEvent (sparse chunk consumed)")?;
            }
            let (e0, e1) = (rows.starts[first] as usize, rows.starts[end] as usize);
            let parts = [
                (&rows.starts[first..=end], &mut buffer.starts),
                (&rows.columns[e0..e1], &mut buffer.columns),
                (&rows.coeffs[e0..e1], &mut buffer.coeffs),
            ];
            for (values, device) in parts {
                if !values.is_empty() {
                    copy.memcpy_htod(values, &mut device.slice_mut(..values.len()))
                        .call("cuMemcpyHtoDAsync (sparse chunk)")?;
                }
            }
            let copied = copy
                .record_event(None)
                .call("cuEventRecord (sparse chunk copied)")?;
            gpu.stream()
                .wait(&copied)
                .call("cuStreamWaitEvent (sparse chunk copied)")?;
            let launch = RowsLaunch {
                starts: buffer.starts.as_view(),
                columns: buffer.columns.as_view(),
                coeffs: buffer.coeffs.as_view(),
                // `new` checked every count fits 32 bits.
                rows: (end - first) as u32,
                entry_base: e0 as u32,
            };
            let mut target = out
                .words
                .slice_mut(first * SCALAR_WORDS..end * SCALAR_WORDS);
            // SAFETY: `new` checked these very slices (same addresses and lengths; the caller
            // keeps them unchanged): `starts` is a running count, so the chunk's rows + 1 starts
            // begin at e0 and its entries e0..e1 are the ones copied to index 0; columns are below
            // `self.columns` = z's length and coefficients inside the table; `target` is the
            // chunk's rows of `out`, which holds all rows (checked above).
            unsafe { launch.launch(gpu, &kernel, &self.table, z, &mut target)? };
            consumed[slot] = Some(
                gpu.stream()
                    .record_event(None)
                    .call("cuEventRecord (sparse chunk consumed)")?,
            );
        }
        // The copies read `rows`, borrowed for this call only.
        copy.synchronize()
            .call("cuStreamSynchronize (sparse chunks)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts of rows with these entry counts.
    fn starts(lengths: &[u32]) -> Vec<u32> {
        std::iter::once(0)
            .chain(lengths.iter().scan(0, |end, len| {
                *end += len;
                Some(*end)
            }))
            .collect()
    }

    #[test]
    fn chunks_cover_every_row_once_within_the_limits() {
        let limit = ChunkLimit {
            entries: 4,
            rows: 3,
        };
        // Rows of 1, 2, 0, 0, 0, 9 (longer than a chunk: alone), 4, 1 entries.
        let s = starts(&[1, 2, 0, 0, 0, 9, 4, 1]);
        assert_eq!(
            chunk_rows(&s, limit),
            [(0, 3), (3, 5), (5, 6), (6, 7), (7, 8)]
        );
        assert_eq!(
            largest_chunk(
                &[SparseRows {
                    starts: &s,
                    columns: &[],
                    coeffs: &[],
                }],
                limit
            ),
            ChunkLimit {
                entries: 9,
                rows: 3
            }
        );
        // No rows, no chunks; empty rows fill chunks by the row limit.
        assert!(chunk_rows(&[0], limit).is_empty());
        assert_eq!(
            chunk_rows(&starts(&[0; 7]), limit),
            [(0, 3), (3, 6), (6, 7)]
        );
    }
}
