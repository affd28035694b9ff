//! Scalars in device memory, shared by the NTT and the MSM.

use blstrs::Scalar;
use cudarc::driver::{CudaSlice, CudaView};
use ff::Field;

use crate::error::DriverContext;
use crate::layout::{as_words, scalars_as_words_mut, SCALAR_WORDS};
use crate::{GpuError, Lane, Pinned, Timing};

/// Scalars in device memory, in the host's Montgomery layout.
#[derive(Debug)]
pub struct DeviceScalars {
    pub(crate) words: CudaSlice<u32>,
    pub(crate) len: usize,
}

/// Room for `len` scalars on the device (at least one word, so empty vectors have a buffer), after
/// checking it fits.
fn alloc(gpu: &Lane, what: &'static str, len: usize) -> Result<CudaSlice<u32>, GpuError> {
    gpu.ensure_fits(what, len * 4 * SCALAR_WORDS)?;
    gpu.zeros::<u32>(len.max(1) * SCALAR_WORDS, "cuMemAlloc (scalars)")
}

/// Refuses a range that is not inside `len` values.
fn check_range(what: &'static str, start: usize, end: usize, len: usize) -> Result<(), GpuError> {
    if start > end || end > len {
        return Err(GpuError::InvalidInput {
            what,
            reason: format!("range {start}..{end} of {len} values"),
        });
    }
    Ok(())
}

impl DeviceScalars {
    /// `len` zeros.
    pub fn zeros(gpu: &Lane, len: usize) -> Result<Self, GpuError> {
        Ok(DeviceScalars {
            words: alloc(gpu, "scalars", len)?,
            len,
        })
    }

    pub fn upload(gpu: &Lane, values: &[Scalar]) -> Result<Self, GpuError> {
        gpu.ensure_fits("scalars", std::mem::size_of_val(values))?;
        let words = gpu.upload(as_words(values), "cuMemcpyHtoD (scalars)")?;
        Ok(DeviceScalars {
            words,
            len: values.len(),
        })
    }

    /// Uploads `parts` one after another into one device vector (no concatenation on the host).
    pub fn upload_concat(gpu: &Lane, parts: &[&[Scalar]]) -> Result<Self, GpuError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut words = alloc(gpu, "scalars", len)?;
        let stream = gpu.stream();
        let mut at = 0;
        for part in parts {
            let end = at + part.len() * SCALAR_WORDS;
            stream
                .memcpy_htod(as_words(part), &mut words.slice_mut(at..end))
                .call("cuMemcpyHtoD (scalars)")?;
            at = end;
        }
        Ok(DeviceScalars { words, len })
    }

    /// Uploads from page-locked memory: an asynchronous copy on the device's stream, ordered
    /// before the work enqueued after it.
    pub fn upload_pinned(gpu: &Lane, values: &Pinned<Scalar>) -> Result<Self, GpuError> {
        Self::upload_pinned_range(gpu, values, 0, values.len())
    }

    /// Uploads values [start, end) of page-locked memory, asynchronously like `upload_pinned`.
    pub fn upload_pinned_range(
        gpu: &Lane,
        values: &Pinned<Scalar>,
        start: usize,
        end: usize,
    ) -> Result<Self, GpuError> {
        check_range("pinned scalar upload", start, end, values.len())?;
        let len = end - start;
        let mut words = alloc(gpu, "scalars", len)?;
        gpu.stream()
            .memcpy_htod(
                values.words_of(start, end)?,
                &mut words.slice_mut(..len * SCALAR_WORDS),
            )
            .call("cuMemcpyHtoDAsync (scalars)")?;
        Ok(DeviceScalars { words, len })
    }

    /// As [`Self::upload_pinned_range`], the copy queued on the device's copy stream: it overlaps
    /// the kernels on the main stream until the main stream waits for its [`Arrival`].
    pub fn upload_pinned_range_ahead(
        gpu: &Lane,
        values: &Pinned<Scalar>,
        start: usize,
        end: usize,
    ) -> Result<(Self, Arrival), GpuError> {
        check_range("pinned scalar upload", start, end, values.len())?;
        let mut uploaded = DeviceScalars {
            words: alloc(gpu, "scalars", end - start)?,
            len: end - start,
        };
        let arrival = uploaded.refill_pinned_ahead(gpu, values, start)?;
        Ok((uploaded, arrival))
    }

    /// Overwrites the values with as many of page-locked memory from `start`, on the copy stream
    /// once the work queued on the main stream so far (which may still read them) is done.
    pub fn refill_pinned_ahead(
        &mut self,
        gpu: &Lane,
        values: &Pinned<Scalar>,
        start: usize,
    ) -> Result<Arrival, GpuError> {
        let end = start + self.len;
        check_range("pinned scalar refill", start, end, values.len())?;
        let copy = gpu.copy_stream();
        copy.join(gpu.stream())
            .call("cuStreamWaitEvent (before a refill)")?;
        let ((), copied) = Timing::around(copy, || {
            copy.memcpy_htod(
                values.words_of(start, end)?,
                &mut self.words.slice_mut(..self.len * SCALAR_WORDS),
            )
            .call("cuMemcpyHtoDAsync (scalars ahead)")
        })?;
        Ok(Arrival(copied))
    }

    /// Copies the values into page-locked `out` of the same length, asynchronously: reading `out`
    /// ([`Pinned::as_slice`]) waits for the copy.
    pub fn download_pinned(&self, gpu: &Lane, out: &mut Pinned<Scalar>) -> Result<(), GpuError> {
        self.check_len("pinned scalar download", out.len())?;
        gpu.stream()
            .memcpy_dtoh(&self.values(), &mut out.words)
            .call("cuMemcpyDtoHAsync (scalars)")
    }

    /// The words of the `len` values: the buffer may be longer once truncated or shifted.
    fn values(&self) -> CudaView<'_, u32> {
        self.words.slice(..self.len * SCALAR_WORDS)
    }

    fn check_len(&self, what: &'static str, host: usize) -> Result<(), GpuError> {
        if host != self.len {
            return Err(GpuError::InvalidInput {
                what,
                reason: format!("{} scalars on the device, {host} on the host", self.len),
            });
        }
        Ok(())
    }

    /// Copies the values into `out`, which must have the same length; waits for the stream.
    pub fn download(&self, gpu: &Lane, out: &mut [Scalar]) -> Result<(), GpuError> {
        self.check_len("scalar download", out.len())?;
        gpu.stream()
            .memcpy_dtoh(&self.values(), scalars_as_words_mut(out))
            .call("cuMemcpyDtoH (scalars)")
    }

    pub fn to_vec(&self, gpu: &Lane) -> Result<Vec<Scalar>, GpuError> {
        let mut out = vec![Scalar::ZERO; self.len];
        self.download(gpu, &mut out)?;
        Ok(out)
    }

    /// Keeps the first `len` scalars (no copy; the rest of the buffer is no longer used).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A copy queued on the copy stream ([`DeviceScalars::upload_pinned_range_ahead`]): the main
/// stream's work that reads its data must be queued after [`Arrival::wait`].
#[must_use = "the copied values may be read only after waiting for their arrival"]
#[derive(Debug)]
pub struct Arrival(Timing);

/// Work timed on the main stream ([`Lane::timed`]) as an arrival: waiting for it orders nothing
/// new, and gives its device time back, so callers treat values copied and values computed alike.
impl From<Timing> for Arrival {
    fn from(timing: Timing) -> Self {
        Arrival(timing)
    }
}

impl Arrival {
    /// Orders the work queued on `gpu`'s main stream from now on after the copy (the host does
    /// not wait); returns the copy's own device time.
    pub fn wait(self, gpu: &Lane) -> Result<Timing, GpuError> {
        gpu.stream()
            .wait(self.0.end())
            .call("cuStreamWaitEvent (scalars copied)")?;
        Ok(self.0)
    }
}

/// Positions into a scalar vector, uploaded once and read by every MSM through them (a query's
/// variables are the same for every proof of a circuit).
#[derive(Debug)]
pub struct DeviceIndex {
    pub(crate) words: CudaSlice<u32>,
    pub(crate) len: usize,
    pub(crate) max: u32,
}

impl DeviceIndex {
    pub fn upload(gpu: &Lane, indices: &[u32]) -> Result<Self, GpuError> {
        if indices.len() > u32::MAX as usize {
            return Err(GpuError::InvalidInput {
                what: "gather index",
                reason: format!("{} indices exceed one launch's 2^32", indices.len()),
            });
        }
        gpu.ensure_fits("gather index", 4 * indices.len())?;
        let words = if indices.is_empty() {
            gpu.zeros::<u32>(1, "cuMemAlloc (gather index)")?
        } else {
            gpu.upload(indices, "cuMemcpyHtoD (gather index)")?
        };
        Ok(DeviceIndex {
            words,
            len: indices.len(),
            max: indices.iter().copied().max().unwrap_or(0),
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
