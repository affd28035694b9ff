//! Scalars in device memory, shared by the NTT and the MSM.

use blstrs::Scalar;
use cudarc::driver::CudaSlice;
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

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
