//! Implementations of [`crate::ProverBackend`], and the choice between them.

mod cpu;
mod faulty;
mod gpu;

use std::sync::Arc;

pub use cpu::CpuBackend;
use cuzk_gpu::{GpuError, GpuUnavailable, MemoryBudget};
pub use faulty::{Faults, FaultyBackend};
pub use gpu::{upload_matrices, GpuBackend};

use crate::ProverBackend;

/// Which backend to prove with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// The GPUs when usable, the CPU otherwise.
    Auto,
    Gpu,
    Cpu,
}

/// The backends chosen: one per device (one CPU backend when there is no GPU).
pub struct Selection {
    pub backends: Vec<Arc<dyn ProverBackend>>,
    /// Why `Auto` fell back to the CPU, for the caller to say once.
    pub fallback: Option<GpuUnavailable>,
}

impl std::fmt::Debug for Selection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.backends.iter().map(|b| b.name()).collect();
        f.debug_struct("Selection")
            .field("backends", &names)
            .field("fallback", &self.fallback)
            .finish()
    }
}

/// Why no backend could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error("no usable GPU: {0}")]
    NoGpu(GpuUnavailable),
    #[error("no device {missing} (the driver reports {found:?})")]
    NoSuchDevice { missing: usize, found: Vec<usize> },
    #[error("opening device {ordinal}: {source}")]
    Open {
        ordinal: usize,
        #[source]
        source: GpuError,
    },
}

/// How each GPU backend is opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceOptions {
    /// Threads of each backend's staging copies (`None`: its default).
    pub staging_threads: Option<usize>,
    /// Bytes cuzk may hold on each device, its context included (`--gpu-memory`,
    /// `gpus.memory_limit`; `None`: what the device has free when opened, less a margin).
    pub memory_limit: Option<u64>,
}

/// Page-locked host bytes the backends hold now (staging buffers, parameter sets locked in place
/// for streaming): memory taken from what the OS can page, which a daemon reports beside its
/// limit.
pub fn pinned_host_bytes() -> u64 {
    cuzk_gpu::pinned_bytes()
}

/// The backends of `choice`: with a GPU, one per device (`devices`, or every device the driver
/// reports); `Auto` without a usable GPU falls back to the CPU and says why. `Cpu` with `devices`
/// gives one CPU backend per entry, all on the same cores: a multi-device engine to try without
/// a GPU. A GPU listed k times gets k backends, each planning with 1/k of its budget.
pub fn select(
    choice: BackendChoice,
    devices: Option<&[usize]>,
    options: &DeviceOptions,
) -> Result<Selection, SelectError> {
    let cpu = |fallback| Selection {
        backends: vec![Arc::new(CpuBackend)],
        fallback,
    };
    match (choice, cuzk_gpu::probe()) {
        (BackendChoice::Cpu, _) => Ok(Selection {
            backends: devices.map_or(vec![Arc::new(CpuBackend)], |list| {
                let one = || Arc::new(CpuBackend) as Arc<dyn ProverBackend>;
                std::iter::repeat_with(one)
                    .take(list.len().max(1))
                    .collect()
            }),
            fallback: None,
        }),
        (BackendChoice::Gpu, Err(why)) => Err(SelectError::NoGpu(why)),
        (BackendChoice::Auto, Err(why)) => Ok(cpu(Some(why))),
        (BackendChoice::Gpu | BackendChoice::Auto, Ok(found)) => {
            let found: Vec<usize> = found.iter().map(|d| d.ordinal).collect();
            let chosen = devices.map_or_else(|| found.clone(), <[usize]>::to_vec);
            let backends = chosen
                .iter()
                .map(|&ordinal| {
                    if !found.contains(&ordinal) {
                        return Err(SelectError::NoSuchDevice {
                            missing: ordinal,
                            found: found.clone(),
                        });
                    }
                    let sharing = chosen.iter().filter(|&&o| o == ordinal).count();
                    open_shared(ordinal, sharing, options.memory_limit)
                        .map(|b| match options.staging_threads {
                            Some(threads) => b.with_staging_threads(threads),
                            None => b,
                        })
                        .map(|b| Arc::new(b) as Arc<dyn ProverBackend>)
                        .map_err(|source| SelectError::Open { ordinal, source })
                })
                .collect::<Result<_, _>>()?;
            Ok(Selection {
                backends,
                fallback: None,
            })
        }
    }
}

/// A backend of device `ordinal` with `memory_limit` (bytes) for cuzk on it, one of `sharing`
/// backends there: each plans with its share of the budget, or two backends on one device each
/// take what the other needs (measured: docs/performance.md, "Why the code is as it is").
fn open_shared(
    ordinal: usize,
    sharing: usize,
    memory_limit: Option<u64>,
) -> Result<GpuBackend, GpuError> {
    let budget = match memory_limit {
        Some(bytes) => MemoryBudget::Bytes(usize::try_from(bytes).unwrap_or(usize::MAX)),
        None => MemoryBudget::FreeAtStart,
    };
    let gpu = cuzk_gpu::Lane::open(ordinal, budget)?;
    if sharing > 1 {
        gpu.limit_memory(Some(gpu.budget() / sharing));
    }
    Ok(GpuBackend::with_gpu(gpu))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The CPU gives one backend per listed device (a multi-device engine without a GPU), one
    /// when none is listed.
    #[test]
    fn the_cpu_gives_a_backend_per_listed_device() {
        let count = |devices: Option<&[usize]>| {
            let selection = select(BackendChoice::Cpu, devices, &DeviceOptions::default()).unwrap();
            assert!(selection.fallback.is_none());
            selection.backends.len()
        };
        assert_eq!(count(None), 1);
        assert_eq!(count(Some(&[0, 1, 2])), 3);
        assert_eq!(count(Some(&[])), 1);
    }
}
