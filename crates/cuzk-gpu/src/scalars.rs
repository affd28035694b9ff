//! Scalars in device memory, shared by the NTT and the MSM.

use blstrs::Scalar;
use cudarc::driver::CudaSlice;
use ff::Field;

use crate::error::DriverContext;
use crate::layout::{as_words, scalars_as_words_mut};
use crate::{Gpu, GpuError};

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

    /// Copies the values into `out`, which must have the same length; waits for the stream.
    pub fn download(&self, gpu: &Gpu, out: &mut [Scalar]) -> Result<(), GpuError> {
        if out.len() != self.len {
            return Err(GpuError::InvalidInput {
                what: "scalar download",
                reason: format!(
                    "{} scalars on the device, {} on the host",
                    self.len,
                    out.len()
                ),
            });
        }
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
