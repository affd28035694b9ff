//! The host: GPUs (opened as the daemon opens them, so a device whose architecture the embedded
//! kernels miss fails here as it would there), host memory and the limit the process runs
//! under, and the page-lock limit the GPU backends' staging needs.

use std::sync::Arc;

use cuzk_daemon::config::{BackendChoice, Config};
use cuzk_daemon::memory::HostBudgets;
use cuzk_daemon::server::device_options;
use cuzk_daemon::ServeError;
use cuzk_gpu::GpuUnavailable;
use cuzk_groth16::backend::{select, SelectError};
use cuzk_groth16::ProverBackend;
use cuzk_pipeline::engine::machine_memory;
use cuzk_pipeline::engine::memory::gib;

use super::Check;

/// The GPU lines, and the GPU backends the daemon would prove with (none on the CPU).
pub struct Gpus {
    pub checks: Vec<Check>,
    pub backends: Vec<Arc<dyn ProverBackend>>,
}

/// Rebuilding with kernels for every architecture a device may have.
const REBUILD_KERNELS: &str = "build the kernels for this GPU's architecture \
    (`CUZK_CUDA_ARCHS=<sm, e.g. 90> cargo xtask kernels --force`, then rebuild cuzk), or use a \
    release built with them";

/// The backends `[gpus]` selects, as `cuzk serve` selects them.
pub fn gpus(config: &Config) -> Gpus {
    let cpu = |checks| Gpus {
        checks,
        backends: Vec::new(),
    };
    if config.backend == BackendChoice::Cpu {
        return cpu(vec![Check::ok(
            "gpu",
            "skipped: gpus.backend = \"cpu\" (proving on the CPU)",
        )]);
    }
    let selection = match select(
        config.backend,
        config.devices.as_deref(),
        &device_options(config),
    ) {
        Ok(selection) => selection,
        Err(e) => return cpu(vec![selection_failed(&e)]),
    };
    if let Some(why) = selection.fallback {
        return cpu(vec![Check::warn(
            "gpu",
            format!("no usable GPU ({why}): the CPU backend will be used"),
        )
        .with_fix(unavailable_fix(&why))]);
    }
    let checks = selection
        .backends
        .iter()
        .map(|backend| match backend.device() {
            Ok(Some(device)) => Check::ok(
                format!("gpu {}", device.ordinal),
                format!(
                    "{}: {} ({} free, cuzk's budget {}); kernels loaded",
                    device.name,
                    gib(device.total_bytes),
                    gib(device.free_bytes),
                    gib(device.budget_bytes)
                ),
            ),
            Ok(None) => Check::ok("gpu", format!("{}: no device", backend.name())),
            Err(e) => Check::fail(
                "gpu",
                format!("{}: its memory cannot be read: {e}", backend.name()),
                "check the device with `nvidia-smi`",
            ),
        })
        .collect();
    Gpus {
        checks,
        backends: selection.backends,
    }
}

/// A selection that failed: `gpus.backend = "gpu"` without a usable GPU, a listed device that is
/// not there, or one that does not open.
fn selection_failed(e: &SelectError) -> Check {
    let fix = match e {
        SelectError::NoGpu(why) => unavailable_fix(why),
        SelectError::NoSuchDevice { found, .. } => {
            format!("list devices the driver reports ({found:?}) in gpus.devices, or [] for all")
        }
        // Loading the module is where a missing architecture shows.
        SelectError::Open { .. } => REBUILD_KERNELS.to_owned(),
    };
    Check::fail("gpu", e.to_string(), fix)
}

/// What to do when no GPU can be used.
fn unavailable_fix(why: &GpuUnavailable) -> String {
    match why {
        GpuUnavailable::KernelsNotBuilt => "this cuzk was built without GPU kernels: \
            `cargo xtask kernels`, then rebuild (or set gpus.backend = \"cpu\")"
            .to_owned(),
        GpuUnavailable::KernelsFile { .. } => {
            format!(
                "unset ${} or point it at a readable fatbin",
                cuzk_gpu::KERNELS_FILE_ENV
            )
        }
        GpuUnavailable::NoDriver => "install the NVIDIA driver (libcuda.so.1 must be on the \
            library path), or set gpus.backend = \"cpu\""
            .to_owned(),
        GpuUnavailable::Driver { .. } | GpuUnavailable::NoDevice => "check `nvidia-smi`; in a \
            container, pass the GPUs through (--gpus all, NVIDIA_VISIBLE_DEVICES)"
            .to_owned(),
    }
}

/// The memory the process may use and the daemon's budget of it.
pub fn host_memory(budgets: &Result<HostBudgets, ServeError>) -> Check {
    let machine = match machine_memory() {
        Ok(machine) => machine.to_string(),
        Err(e) => return Check::fail("memory", e.to_string(), "run on Linux with /proc mounted"),
    };
    match budgets {
        Ok(b) => Check::ok(
            "memory",
            format!(
                "the process may use {machine}; the daemon's budget {}: parameter sets {}, \
                 partitions {}",
                b.total,
                gib(b.sets),
                gib(b.partitions)
            ),
        ),
        Err(e) => Check::fail(
            "memory",
            format!("the process may use {machine}; {e}"),
            "set memory.total_budget and memory.srs_budget so that partitions keep a share",
        ),
    }
}

/// The soft `RLIMIT_MEMLOCK`: `None` when unlimited.
fn memlock_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Memlock).current
}

/// The page-lock limit against what the GPU backends may lock: staging buffers per worker and
/// streamed parameters locked where they are, together up to the memory budget.
pub fn memlock(budgets: Option<&HostBudgets>, uses_gpu: bool) -> Check {
    let limit = memlock_limit();
    let needed = budgets.map(|b| b.total.bytes);
    memlock_verdict(limit, needed, uses_gpu)
}

fn memlock_verdict(limit: Option<u64>, needed: Option<u64>, uses_gpu: bool) -> Check {
    const FIX: &str = "LimitMEMLOCK=infinity under [Service] in the systemd unit, or \
        `ulimit -l unlimited` in the shell that starts cuzk (the hard limit: `memlock unlimited` \
        in /etc/security/limits.conf; containers: --ulimit memlock=-1)";
    let Some(limit) = limit else {
        return Check::ok("memlock", "page-lock limit (ulimit -l): unlimited");
    };
    let limit_text = format!("page-lock limit (ulimit -l) {} KiB", limit >> 10);
    let enough = needed.is_some_and(|needed| limit >= needed);
    match (enough, uses_gpu) {
        (true, _) => Check::ok("memlock", format!("{limit_text}: the whole memory budget")),
        (false, true) => Check::fail(
            "memlock",
            format!(
                "{limit_text}: too low for the GPU backends' page-locked staging and streamed \
                 parameters (up to the memory budget{})",
                needed.map_or(String::new(), |n| format!(", {}", gib(n)))
            ),
            FIX,
        ),
        (false, false) => Check::warn(
            "memlock",
            format!(
                "{limit_text}: too low for a GPU (the CPU backend page-locks nothing, so it \
                 matters only once a GPU is used)"
            ),
        )
        .with_fix(FIX),
    }
}

/// The kernel's transparent huge page mode: each partition's witness and products (gigabytes at
/// 32 GiB) ask for huge pages, which `never` refuses.
pub fn huge_pages() -> Check {
    huge_pages_verdict(cuzk_hostmem::transparent_huge_pages().as_deref())
}

fn huge_pages_verdict(mode: Option<&str>) -> Check {
    const WHAT: &str = "transparent huge pages";
    match mode {
        Some(mode @ ("madvise" | "always")) => Check::ok(
            "hugepages",
            format!("{WHAT}: {mode} (witnesses and products are on huge pages)"),
        ),
        Some(mode) => Check::warn(
            "hugepages",
            format!(
                "{WHAT}: {mode}: each 4 GB witness or product of a 32 GiB partition takes a                  million page faults to fill and as many to free"
            ),
        )
        .with_fix("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (as root)"),
        None => Check::ok("hugepages", format!("{WHAT}: not reported by this system")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Verdict;
    use super::*;

    #[test]
    fn huge_pages_turned_off_are_a_warning_with_the_fix() {
        let never = huge_pages_verdict(Some("never"));
        assert_eq!(never.verdict, Verdict::Warn);
        assert!(never.fix.is_some_and(|fix| fix.contains("madvise >")));
        for mode in [Some("madvise"), Some("always"), None] {
            assert_eq!(huge_pages_verdict(mode).verdict, Verdict::Ok, "{mode:?}");
        }
    }

    #[test]
    fn a_low_page_lock_limit_fails_only_where_a_gpu_proves() {
        const GIB: u64 = 1 << 30;
        let low = Some(64 << 10);
        assert_eq!(
            memlock_verdict(low, Some(16 * GIB), true).verdict,
            Verdict::Fail
        );
        let cpu = memlock_verdict(low, Some(16 * GIB), false);
        assert_eq!(cpu.verdict, Verdict::Warn);
        assert!(cpu.detail.contains("64 KiB"), "{}", cpu.detail);
        assert!(cpu
            .fix
            .is_some_and(|fix| fix.contains("LimitMEMLOCK=infinity")));
        assert_eq!(memlock_verdict(None, None, true).verdict, Verdict::Ok);
        assert_eq!(
            memlock_verdict(Some(32 * GIB), Some(16 * GIB), true).verdict,
            Verdict::Ok
        );
    }
}
