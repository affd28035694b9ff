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

/// Attaches the name of the driver call to a cudarc error.
pub(crate) trait DriverContext<T> {
    fn call(self, call: &'static str) -> Result<T, GpuError>;
}

impl<T> DriverContext<T> for Result<T, DriverError> {
    fn call(self, call: &'static str) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::Driver { call, source })
    }
}
