//! Sparse matrix–vector products over Fr on the device (`cuda/sparse/spmv.cuh`): matrices
//! uploaded once, times many vectors. What the prover uses them for: a constraint system's three
//! matrices times each proof's witness, so that a proof sends the witness up instead of the three
//! products (at 32 GiB 4.2 GB instead of 17), which the host then neither computes nor holds.

use blstrs::Scalar;
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use ff::Field;

use crate::error::DriverContext;
use crate::{DeviceScalars, Gpu, GpuError};

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

impl DeviceSparse {
    /// Uploads `matrices` and their coefficient `table` after checking every entry.
    pub fn upload(
        gpu: &Gpu,
        table: &[Scalar],
        matrices: &[SparseRows<'_>],
        columns: usize,
    ) -> Result<Self, GpuError> {
        if table.first() != Some(&Scalar::ONE) {
            return Err(invalid("the coefficient table must begin with one".into()));
        }
        for (m, rows) in matrices.iter().enumerate() {
            check(m, rows, columns, table.len())?;
        }
        let bytes = Self::bytes_of(table, matrices);
        gpu.ensure_fits("sparse matrices", bytes)?;
        let stream = gpu.stream();
        let upload = |values: &[u32]| -> Result<CudaSlice<u32>, GpuError> {
            if values.is_empty() {
                stream.alloc_zeros::<u32>(1).call("cuMemAlloc (sparse)")
            } else {
                stream.clone_htod(values).call("cuMemcpyHtoD (sparse)")
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
        gpu: &Gpu,
        m: usize,
        z: &DeviceScalars,
        out: &mut DeviceScalars,
    ) -> Result<(), GpuError> {
        let Some(rows) = self.matrices.get(m) else {
            return Err(invalid(format!("matrix {m} of {}", self.matrices.len())));
        };
        if z.len() != self.columns || out.len() < rows.rows as usize {
            return Err(invalid(format!(
                "a product of {} rows by {} columns needs a vector of {} and room for the rows; \
                 got {} and {}",
                rows.rows,
                self.columns,
                self.columns,
                z.len(),
                out.len()
            )));
        }
        if rows.rows == 0 {
            return Ok(());
        }
        let kernel = gpu.kernel("spmv_fr")?;
        let config = LaunchConfig {
            grid_dim: (rows.rows.div_ceil(THREADS), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: `upload` checked that `starts` is a running count of the entries (rows + 1
        // values), every column is below `self.columns` (= z's length, checked above) and every
        // coefficient index below the table's length; `out` holds at least `rows` scalars.
        // Threads at or past `rows` return, the others read their row and write out[row].
        unsafe {
            gpu.stream()
                .launch_builder(&kernel)
                .arg(&rows.starts)
                .arg(&rows.columns)
                .arg(&rows.coeffs)
                .arg(&self.table.words)
                .arg(&z.words)
                .arg(&rows.rows)
                .arg(&mut out.words)
                .launch(config)
                .call("spmv_fr")?;
        }
        Ok(())
    }
}
