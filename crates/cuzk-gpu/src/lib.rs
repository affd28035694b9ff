//! The GPU layer: CUDA devices found through the driver loaded at run time (no link-time CUDA),
//! the kernels embedded in the binary, and typed launchers for them.
//!
//! - [`probe`]: which devices are usable, or why none is.
//! - [`Lane`]: a stream of work on one device, which has the kernel module loaded and the memory
//!   budget cuzk keeps to on it ([`MemoryBudget`]: a pool of our own, capped); lanes of one device
//!   share both and run side by side.
//! - [`layout`]: how blstrs values are laid out for the device (uploads are byte copies).
//! - [`Pinned`]: page-locked host buffers, for copies that overlap kernels.
//! - [`PackedScalars`]: scalars mostly 0 or 1 (a witness), packed on the host for a short upload.
//! - [`msm`]: multi-scalar multiplication in G1 and G2, bases resident or streamed from the host.
//! - [`ntt`]: forward/inverse NTTs over Fr, on the subgroup or its coset, in chainable orders.
//! - [`sparse`]: sparse matrices (compressed rows, one coefficient table) times device vectors.
//! - [`fixed_base`]: many multiples of one generator (what parameter generation makes).
//! - [`rate`]: the field product rate the device reaches, the ceiling kernels are read against.
//!
//! It knows BLS12-381 arithmetic and nothing of Groth16: it must not know what a proof, a query or
//! a circuit is. Everything here is optional at run time: without kernels or a driver, [`probe`]
//! says why and callers fall back to the CPU.

mod device;
mod error;
pub mod fixed_base;
pub mod layout;
mod memory;
pub mod msm;
pub mod ntt;
mod packed;
mod pinned;
mod probe;
pub mod rate;
mod scalars;
pub mod sparse;
mod timing;

pub use device::Lane;
pub use error::{GpuError, MemoryAccount};
pub use memory::{MemoryBudget, CONTEXT_ALLOWANCE};
pub use packed::{PackedLayout, PackedScalars};
pub use pinned::{pinned_bytes, HostLocked, Pinned};
pub use probe::{probe, DeviceInfo, GpuUnavailable};
pub use scalars::{Arrival, DeviceIndex, DeviceScalars};
pub use timing::Timing;

/// Free device memory that plans leave unused: for the driver, for other processes' small
/// allocations and for estimates that run short.
pub const MEMORY_MARGIN: usize = 256 << 20;

/// A null device pointer, for a kernel's optional inputs ("no entries", "no direct table").
pub(crate) const NULL: u64 = 0;

/// Names a fatbin file to load instead of the embedded kernels: for timing kernels built apart from
/// the binary (variants of one source, say) without relinking it.
pub const KERNELS_FILE_ENV: &str = "CUZK_KERNELS_FILE";

/// The file `$CUZK_KERNELS_FILE` names, when it is set.
fn kernels_file() -> Option<std::path::PathBuf> {
    std::env::var_os(KERNELS_FILE_ENV).map(Into::into)
}

fn unreadable(path: std::path::PathBuf, e: std::io::Error) -> GpuUnavailable {
    GpuUnavailable::KernelsFile {
        path,
        reason: e.to_string(),
    }
}

/// The kernel image a device loads: the kernels file when one is named, else the embedded fatbin.
pub(crate) fn kernel_image() -> Result<std::borrow::Cow<'static, [u8]>, GpuUnavailable> {
    match kernels_file() {
        Some(path) => std::fs::read(&path)
            .map(std::borrow::Cow::Owned)
            .map_err(|e| unreadable(path, e)),
        None => fatbin()
            .map(std::borrow::Cow::Borrowed)
            .ok_or(GpuUnavailable::KernelsNotBuilt),
    }
}

/// Whether there are kernels to load (the kernels file is not read here: probing is frequent).
pub(crate) fn kernels_present() -> Result<(), GpuUnavailable> {
    match kernels_file() {
        Some(path) => std::fs::metadata(&path)
            .map(drop)
            .map_err(|e| unreadable(path, e)),
        None => fatbin().map(drop).ok_or(GpuUnavailable::KernelsNotBuilt),
    }
}

/// The embedded kernel fatbin, when the build had one.
pub fn fatbin() -> Option<&'static [u8]> {
    #[cfg(cuzk_kernels)]
    {
        Some(include_bytes!(env!("CUZK_FATBIN_PATH")))
    }
    #[cfg(not(cuzk_kernels))]
    {
        None
    }
}
