//! bellperson's parameter file layout.
//!
//! ```text
//! vk:   alpha_g1 beta_g1 beta_g2 gamma_g2 delta_g1 delta_g2   (uncompressed points)
//!       u32 BE |ic|, ic points
//! then  h, l, a, b_g1, b_g2: each a u32 BE length and that many uncompressed points
//! ```
//!
//! Every reader goes through one byte-slice parser, so the mmap and the streaming paths cannot
//! disagree; large queries are decoded in parallel.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

use cuzk_math::{G1Affine, G2Affine};
use memmap2::Mmap;
use rayon::prelude::*;

use crate::keys::QueryLengths;
use crate::point_bytes::UncompressedPoint;
use crate::{Parameters, ParamsError, VerifyingKey};

/// Whether decoded points are checked to lie on the curve and in the prime-order subgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointCheck {
    /// For files from anywhere.
    Checked,
    /// For files this machine wrote or already checked: several times faster.
    Unchecked,
}

/// A cursor over the bytes of one file, for errors that name the file, the field and the offset.
struct Reader<'a> {
    file: &'a str,
    bytes: &'a [u8],
    offset: usize,
    checked: bool,
}

impl<'a> Reader<'a> {
    fn take(&mut self, field: &str, needed: usize) -> Result<&'a [u8], ParamsError> {
        let available = self.bytes.len() - self.offset;
        if needed > available {
            return Err(ParamsError::Truncated {
                file: self.file.to_owned(),
                field: field.to_owned(),
                offset: self.offset,
                needed,
                available,
            });
        }
        let taken = &self.bytes[self.offset..self.offset + needed];
        self.offset += needed;
        Ok(taken)
    }

    fn length(&mut self, field: &str) -> Result<usize, ParamsError> {
        let raw = self.take(&format!("the length of {field}"), 4)?;
        Ok(u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize)
    }

    fn point<P: UncompressedPoint>(&mut self, field: &str) -> Result<P, ParamsError> {
        let offset = self.offset;
        let raw = self.take(field, P::SIZE)?;
        P::decode(raw, self.checked)
            .map_err(|reason| self.invalid::<P>(field.to_owned(), offset, reason))
    }

    /// A length-prefixed list of points, passed over without reading them: its length.
    fn skip_points<P: UncompressedPoint>(&mut self, field: &str) -> Result<usize, ParamsError> {
        let count = self.length(field)?;
        self.take(field, count.saturating_mul(P::SIZE))?;
        Ok(count)
    }

    /// A length-prefixed list of points, decoded in parallel.
    fn points<P: UncompressedPoint>(&mut self, field: &str) -> Result<Vec<P>, ParamsError> {
        let count = self.length(field)?;
        let start = self.offset;
        let raw = self.take(field, count.saturating_mul(P::SIZE))?;
        raw.par_chunks_exact(P::SIZE)
            .enumerate()
            .map(|(i, bytes)| {
                P::decode(bytes, self.checked).map_err(|reason| {
                    self.invalid::<P>(format!("{field}[{i}]"), start + i * P::SIZE, reason)
                })
            })
            .collect()
    }

    fn invalid<P: UncompressedPoint>(
        &self,
        field: String,
        offset: usize,
        reason: &'static str,
    ) -> ParamsError {
        ParamsError::InvalidPoint {
            file: self.file.to_owned(),
            field,
            offset,
            group: P::GROUP,
            reason,
        }
    }

    fn verifying_key(&mut self) -> Result<VerifyingKey, ParamsError> {
        Ok(VerifyingKey {
            alpha_g1: self.point("vk.alpha_g1")?,
            beta_g1: self.point("vk.beta_g1")?,
            beta_g2: self.point("vk.beta_g2")?,
            gamma_g2: self.point("vk.gamma_g2")?,
            delta_g1: self.point("vk.delta_g1")?,
            delta_g2: self.point("vk.delta_g2")?,
            ic: self.points("vk.ic")?,
        })
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

fn io_error(file: &Path, source: std::io::Error) -> ParamsError {
    ParamsError::Io {
        file: display(file),
        source,
    }
}

#[allow(unsafe_code)]
fn map_file(path: &Path) -> Result<Mmap, ParamsError> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    // SAFETY: the map is read-only and lives only while we parse it. A file truncated or rewritten
    // underneath us by another process could change the bytes we read (or fault), which is the
    // accepted contract of memory-mapped parameters: they are not modified while in use.
    unsafe { Mmap::map(&file) }.map_err(|e| io_error(path, e))
}

impl VerifyingKey {
    /// Writes the key in bellperson's layout.
    pub fn write<W: Write>(&self, out: &mut W) -> std::io::Result<()> {
        self.alpha_g1.write_uncompressed(out)?;
        self.beta_g1.write_uncompressed(out)?;
        self.beta_g2.write_uncompressed(out)?;
        self.gamma_g2.write_uncompressed(out)?;
        self.delta_g1.write_uncompressed(out)?;
        self.delta_g2.write_uncompressed(out)?;
        write_points(&self.ic, out)
    }

    /// Reads only the verifying key at the start of a parameters file (always checked).
    pub fn read_params_file(path: &Path) -> Result<Self, ParamsError> {
        let map = map_file(path)?;
        Reader {
            file: &display(path),
            bytes: &map,
            offset: 0,
            checked: true,
        }
        .verifying_key()
    }
}

/// What a parameters file holds, from its length prefixes alone: a memory plan made before the
/// points are read ([`ParamsHeader::read_file`] touches a few pages of a file of any size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamsHeader {
    /// |ic|: the public inputs, the constant one included.
    pub inputs: usize,
    pub lengths: QueryLengths,
    /// The file's bytes; the decoded points take as many in memory.
    pub file_bytes: u64,
}

impl ParamsHeader {
    /// Reads the length of every query through a memory map, passing over the points; a file
    /// whose lengths do not add up to its size is refused as [`Parameters::read_file`] would.
    pub fn read_file(path: &Path) -> Result<Self, ParamsError> {
        let map = map_file(path)?;
        let file = display(path);
        let mut reader = Reader {
            file: &file,
            bytes: &map,
            offset: 0,
            checked: false,
        };
        reader.take("vk", 3 * G1Affine::SIZE + 3 * G2Affine::SIZE)?;
        let inputs = reader.skip_points::<G1Affine>("vk.ic")?;
        let lengths = QueryLengths {
            h: reader.skip_points::<G1Affine>("h")?,
            l: reader.skip_points::<G1Affine>("l")?,
            a: reader.skip_points::<G1Affine>("a")?,
            b_g1: reader.skip_points::<G1Affine>("b_g1")?,
            b_g2: reader.skip_points::<G2Affine>("b_g2")?,
        };
        let extra = map.len() - reader.offset;
        if extra != 0 {
            return Err(ParamsError::TrailingBytes { file, extra });
        }
        Ok(ParamsHeader {
            inputs,
            lengths,
            file_bytes: map.len() as u64,
        })
    }

    /// The header of parameters already in memory (for a set on a device: what the host holds).
    pub fn of(params: &Parameters) -> Self {
        ParamsHeader {
            inputs: params.vk.ic.len(),
            lengths: params.lengths(),
            file_bytes: params.file_size() as u64,
        }
    }
}

/// Points encoded per write. Encoding takes each coordinate out of Montgomery form, which one
/// thread did at ~380 MB/s (47 GB of 32 GiB parameters in ~125 s); a batch is encoded in
/// parallel, then written. 2^18 G2 points are 48 MiB.
const WRITE_BATCH: usize = 1 << 18;

fn write_points<P: UncompressedPoint, W: Write>(points: &[P], out: &mut W) -> std::io::Result<()> {
    out.write_all(&(points.len() as u32).to_be_bytes())?;
    let mut buffer = vec![0u8; WRITE_BATCH.min(points.len()) * P::SIZE];
    for batch in points.chunks(WRITE_BATCH) {
        let bytes = &mut buffer[..batch.len() * P::SIZE];
        bytes
            .par_chunks_mut(P::SIZE)
            .zip(batch)
            .for_each(|(dst, point)| point.encode_into(dst));
        out.write_all(bytes)?;
    }
    Ok(())
}

impl Parameters {
    /// Writes the layout to any writer (buffer it: points go out one at a time).
    pub fn write<W: Write>(&self, mut out: W) -> std::io::Result<()> {
        if let Some(queries) = &self.placed {
            return Err(std::io::Error::other(format!(
                "the queries are on {} and never leave it: nothing to write",
                queries.place()
            )));
        }
        self.vk.write(&mut out)?;
        write_points(&self.h, &mut out)?;
        write_points(&self.l, &mut out)?;
        write_points(&self.a, &mut out)?;
        write_points(&self.b_g1, &mut out)?;
        write_points(&self.b_g2, &mut out)
    }

    /// The whole file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.file_size());
        // Writing to a Vec cannot fail.
        let _ = self.write(&mut out);
        out
    }

    /// Size in bytes of the file layout; with the queries on a device, of what the host holds.
    pub fn file_size(&self) -> usize {
        let g1 = G1Affine::SIZE;
        let g2 = G2Affine::SIZE;
        3 * g1
            + 3 * g2
            + 6 * 4
            + g1 * (self.vk.ic.len() + self.h.len() + self.l.len() + self.a.len() + self.b_g1.len())
            + g2 * self.b_g2.len()
    }

    /// Writes the file atomically: a temporary file in the same directory, renamed into place, so
    /// a reader never sees half a file and a failure leaves nothing behind.
    pub fn write_file(&self, path: &Path) -> Result<(), ParamsError> {
        write_atomically(path, |out| self.write(out)).map_err(|e| io_error(path, e))
    }

    /// Parses the layout from bytes; `source` names them in errors.
    pub fn from_bytes(bytes: &[u8], check: PointCheck, source: &str) -> Result<Self, ParamsError> {
        let mut reader = Reader {
            file: source,
            bytes,
            offset: 0,
            checked: check == PointCheck::Checked,
        };
        let params = Parameters {
            attached: Default::default(),
            vk: reader.verifying_key()?,
            h: reader.points("h")?,
            l: reader.points("l")?,
            a: reader.points("a")?,
            b_g1: reader.points("b_g1")?,
            b_g2: reader.points("b_g2")?,
            placed: None,
        };
        let extra = bytes.len() - reader.offset;
        if extra != 0 {
            return Err(ParamsError::TrailingBytes {
                file: source.to_owned(),
                extra,
            });
        }
        Ok(params)
    }

    /// Reads the layout from a stream.
    pub fn read<R: Read>(
        mut reader: R,
        check: PointCheck,
        source: &str,
    ) -> Result<Self, ParamsError> {
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| ParamsError::Io {
                file: source.to_owned(),
                source: e,
            })?;
        Self::from_bytes(&bytes, check, source)
    }

    /// Reads a parameters file through a memory map (no copy of the raw file in memory).
    pub fn read_file(path: &Path, check: PointCheck) -> Result<Self, ParamsError> {
        let map = map_file(path)?;
        Self::from_bytes(&map, check, &display(path))
    }
}

/// Writes a file through a temporary file in the same directory and a rename, so that readers never
/// see half a file and a failed write leaves nothing behind.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&mut File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    {
        let mut out = BufWriter::new(tmp.as_file_mut());
        write(&mut out)?;
        out.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
