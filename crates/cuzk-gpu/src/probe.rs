//! Finding usable devices.

use cudarc::driver::result;

/// Why no GPU can be used; callers print it once and use the CPU.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuUnavailable {
    #[error("GPU kernels not built (run `cargo xtask kernels`, then rebuild)")]
    KernelsNotBuilt,
    #[error("GPU kernels file {} (${}) unreadable: {reason}", path.display(), crate::KERNELS_FILE_ENV)]
    KernelsFile {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("no CUDA driver library (libcuda) found")]
    NoDriver,
    #[error("CUDA driver call {call} failed: {reason}")]
    Driver { call: &'static str, reason: String },
    #[error("the CUDA driver reports no devices")]
    NoDevice,
}

/// A device the driver reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub total_memory: usize,
}

fn driver_error(call: &'static str) -> impl Fn(result::DriverError) -> GpuUnavailable {
    move |e| GpuUnavailable::Driver {
        call,
        reason: e.to_string(),
    }
}

/// The devices that can run our kernels, or why there are none.
pub fn probe() -> Result<Vec<DeviceInfo>, GpuUnavailable> {
    crate::kernels_present()?;
    // SAFETY: only tries to dlopen the driver library by its usual names; no symbol is called.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(GpuUnavailable::NoDriver);
    }
    result::init().map_err(driver_error("cuInit"))?;
    let count = result::device::get_count().map_err(driver_error("cuDeviceGetCount"))?;
    if count <= 0 {
        return Err(GpuUnavailable::NoDevice);
    }
    (0..count)
        .map(|ordinal| {
            let device = result::device::get(ordinal).map_err(driver_error("cuDeviceGet"))?;
            Ok(DeviceInfo {
                ordinal: ordinal as usize,
                name: result::device::get_name(device).map_err(driver_error("cuDeviceGetName"))?,
                // SAFETY: `device` is a valid handle returned by cuDeviceGet after cuInit.
                total_memory: unsafe { result::device::total_mem(device) }
                    .map_err(driver_error("cuDeviceTotalMem"))?,
            })
        })
        .collect()
}
