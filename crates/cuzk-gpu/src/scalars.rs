//! Scalars in device memory, shared by the NTT and the MSM.

use blstrs::Scalar;
use cudarc::driver::{CudaSlice, PushKernelArg};
use ff::Field;

use crate::error::DriverContext;
use crate::layout::{as_words, scalars_as_words_mut, SCALAR_WORDS};
use crate::{Gpu, GpuError, Pinned};

/// Scalars in device memory, in the host's Montgomery layout.
#[derive(Debug)]
pub struct DeviceScalars {
    pub(crate) words: CudaSlice<u32>,
    pub(crate) len: usize,
}

impl DeviceScalars {
    pub fn upload(gpu: &Gpu, values: &[Scalar]) -> Result<Self, GpuError> {
        gpu.ensure_fits("scalars", std::mem::size_of_val(values))?;
        let words = gpu
            .stream()
            .clone_htod(as_words(values))
            .call("cuMemcpyHtoD (scalars)")?;
        Ok(DeviceScalars {
            words,
            len: values.len(),
        })
    }

    /// Uploads `parts` one after another into one device vector (no concatenation on the host).
    pub fn upload_concat(gpu: &Gpu, parts: &[&[Scalar]]) -> Result<Self, GpuError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        gpu.ensure_fits("scalars", len * 4 * SCALAR_WORDS)?;
        let stream = gpu.stream();
        let mut words = stream
            .alloc_zeros::<u32>(len.max(1) * SCALAR_WORDS)
            .call("cuMemAlloc (scalars)")?;
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
    pub fn upload_pinned(gpu: &Gpu, values: &Pinned<Scalar>) -> Result<Self, GpuError> {
        gpu.ensure_fits("scalars", values.len() * 4 * SCALAR_WORDS)?;
        let words = gpu
            .stream()
            .clone_htod(&values.words)
            .call("cuMemcpyHtoDAsync (scalars)")?;
        Ok(DeviceScalars {
            words,
            len: values.len(),
        })
    }

    /// Copies the values into page-locked `out` of the same length, asynchronously: reading `out`
    /// ([`Pinned::as_slice`]) waits for the copy.
    pub fn download_pinned(&self, gpu: &Gpu, out: &mut Pinned<Scalar>) -> Result<(), GpuError> {
        self.check_len("pinned scalar download", out.len())?;
        gpu.stream()
            .memcpy_dtoh(&self.words, &mut out.words)
            .call("cuMemcpyDtoHAsync (scalars)")
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
    pub fn download(&self, gpu: &Gpu, out: &mut [Scalar]) -> Result<(), GpuError> {
        self.check_len("scalar download", out.len())?;
        gpu.stream()
            .memcpy_dtoh(&self.words, scalars_as_words_mut(out))
            .call("cuMemcpyDtoH (scalars)")
    }

    pub fn to_vec(&self, gpu: &Gpu) -> Result<Vec<Scalar>, GpuError> {
        let mut out = vec![Scalar::ZERO; self.len];
        self.download(gpu, &mut out)?;
        Ok(out)
    }

    /// The scalars at `indices` (each below `len()`), in that order, as a new device vector: one
    /// gather on the device instead of a compaction on the host and a second upload.
    pub fn gather(&self, gpu: &Gpu, indices: &[u32]) -> Result<DeviceScalars, GpuError> {
        if indices.len() > u32::MAX as usize {
            return Err(GpuError::InvalidInput {
                what: "scalar gather",
                reason: format!("{} indices exceed one launch's 2^32", indices.len()),
            });
        }
        if let Some(&bad) = indices.iter().find(|&&i| i as usize >= self.len) {
            return Err(GpuError::InvalidInput {
                what: "scalar gather",
                reason: format!("index {bad} of {} scalars", self.len),
            });
        }
        if indices.is_empty() {
            return Ok(DeviceScalars {
                words: gpu
                    .stream()
                    .alloc_zeros::<u32>(SCALAR_WORDS)
                    .call("cuMemAlloc")?,
                len: 0,
            });
        }
        gpu.ensure_fits("gathered scalars", indices.len() * (4 * SCALAR_WORDS + 4))?;
        let stream = gpu.stream();
        let index = stream
            .clone_htod(indices)
            .call("cuMemcpyHtoD (gather indices)")?;
        let mut out = stream
            .alloc_zeros::<u32>(indices.len() * SCALAR_WORDS)
            .call("cuMemAlloc (gathered scalars)")?;
        let kernel = gpu.kernel("gather_fr")?;
        let n = indices.len() as u32;
        // SAFETY: `index` holds n indices, each checked above to be below self.len, the scalars
        // `self.words` holds; `out` holds n scalars; threads at or past n return.
        unsafe {
            stream
                .launch_builder(&kernel)
                .arg(&self.words)
                .arg(&index)
                .arg(&n)
                .arg(&mut out)
                .launch(cudarc::driver::LaunchConfig::for_num_elems(n))
                .call("gather_fr")?;
        }
        Ok(DeviceScalars {
            words: out,
            len: indices.len(),
        })
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
