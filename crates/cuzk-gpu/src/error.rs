//! Errors of the GPU layer, each naming the call or kernel that failed.

use cudarc::driver::DriverError;

use crate::GpuUnavailable;

#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error(transparent)]
    Unavailable(#[from] GpuUnavailable),
    #[error("CUDA {call} failed: {source}")]
    Driver {
        call: &'static str,
        #[source]
        source: DriverError,
    },
    #[error("kernel {name} is not in the embedded module (kernels out of date? rebuild them)")]
    MissingKernel {
        name: &'static str,
        #[source]
        source: DriverError,
    },
    #[error("{what} needs {needed} bytes of device memory, {free} are free")]
    OutOfMemory {
        what: &'static str,
        needed: usize,
        free: usize,
    },
    #[error("{what}: {reason}")]
    InvalidInput { what: &'static str, reason: String },
}

impl GpuError {
    /// Whether the device ran out of memory: as planned ([`GpuError::OutOfMemory`]) or as the
    /// driver said (an allocation's `CUDA_ERROR_OUT_OF_MEMORY`).
    pub fn is_out_of_memory(&self) -> bool {
        use cudarc::driver::sys::CUresult;
        match self {
            GpuError::OutOfMemory { .. } => true,
            GpuError::Driver { source, .. } => source.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            _ => false,
        }
    }
}

/// Attaches the name of the driver call to a cudarc error.
pub(crate) trait DriverContext<T> {
    fn call(self, call: &'static str) -> Result<T, GpuError>;
}

impl<T> DriverContext<T> for Result<T, DriverError> {
    fn call(self, call: &'static str) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::Driver { call, source })
    }
}
