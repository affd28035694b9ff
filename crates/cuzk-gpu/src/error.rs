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
    #[error("{what} needs {needed} bytes of device memory, {free} are free{}", account_text(.account))]
    OutOfMemory {
        what: &'static str,
        needed: usize,
        free: usize,
        /// Where the device's memory was when the allocation was refused (None for a plan's
        /// refusal, made from sizes alone).
        account: Option<MemoryAccount>,
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

    /// When the device failed rather than the work asked of it, the kind of fault (`driver`,
    /// `out_of_memory`, `unavailable`): the same work may succeed on another device. `None` for
    /// the work's own errors (bad input, kernels missing from this build).
    pub fn device_fault(&self) -> Option<&'static str> {
        match self {
            GpuError::OutOfMemory { .. } => Some("out_of_memory"),
            GpuError::Driver { .. } if self.is_out_of_memory() => Some("out_of_memory"),
            GpuError::Driver { .. } => Some("driver"),
            GpuError::Unavailable(_) => Some("unavailable"),
            GpuError::MissingKernel { .. } | GpuError::InvalidInput { .. } => None,
        }
    }
}

/// Where a device's memory is: what explains an allocation refused within a budget that a plan
/// fitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryAccount {
    /// Bytes cuzk's buffers hold, and the most cuzk may hold.
    pub held: usize,
    pub budget: usize,
    /// Bytes the pool keeps from the device, in use or not.
    pub pooled: usize,
    /// Device bytes taken since the device was opened by anything but the pool (see
    /// [`Lane::memory_outside_pool`](crate::Lane::memory_outside_pool)).
    pub outside: usize,
}

fn account_text(account: &Option<MemoryAccount>) -> String {
    match account {
        Some(a) => format!(
            " (cuzk holds {} of its {}-byte budget, its pool {}; {} taken outside the pool since \
             the device opened)",
            a.held, a.budget, a.pooled, a.outside
        ),
        None => String::new(),
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
