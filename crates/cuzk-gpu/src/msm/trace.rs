//! `CUZK_MSM_TRACE=1`: one line per Pippenger pass on stderr, with the time of each stage and how
//! the entries fell into buckets — to find which stage a slow MSM spends its time in, and what of
//! its scalars makes it slow, on a real run (no profiler needed). Off, it costs one flag read.
//!
//! Each stage ends with a wait for the device, so a traced pass overlaps nothing: read the stages'
//! shares, not the total.

use std::sync::OnceLock;
use std::time::Instant;

use cudarc::driver::{CudaEvent, CudaSlice};

use super::MsmParams;
use crate::error::DriverContext;
use crate::{GpuError, Lane};

/// The variable that turns the trace on (any value but empty or `0`).
pub const MSM_TRACE_ENV: &str = "CUZK_MSM_TRACE";

fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        std::env::var(MSM_TRACE_ENV).is_ok_and(|value| !value.is_empty() && value != "0")
    })
}

/// When tracing: how long the host waited for a streamed pass's points to arrive (`copied`, the
/// event after their copy), measured before the pass begins.
pub(super) fn copy_wait_ms(copied: &CudaEvent) -> Result<Option<f64>, GpuError> {
    if !enabled() {
        return Ok(None);
    }
    let start = Instant::now();
    copied
        .synchronize()
        .call("cuEventSynchronize (MSM trace)")?;
    Ok(Some(start.elapsed().as_secs_f64() * 1e3))
}

/// The stages of one traced pass so far.
pub(super) struct PassTrace<'a> {
    gpu: &'a Lane,
    last: Instant,
    line: String,
}

impl<'a> PassTrace<'a> {
    /// A trace of a pass with params `p`, when tracing is on; `copy_wait_ms`: what a streamed pass
    /// waited for its points' copy before it began.
    pub(super) fn start(
        gpu: &'a Lane,
        p: &MsmParams,
        copy_wait_ms: Option<f64>,
    ) -> Result<Option<Self>, GpuError> {
        if !enabled() {
            return Ok(None);
        }
        gpu.synchronize()?;
        let mut line = format!(
            "MSM_PASS,n={},c={},windows={},sets={}",
            p.n,
            p.window_bits,
            p.windows,
            p.sets()
        );
        if let Some(ms) = copy_wait_ms {
            line += &format!(",copy_wait_ms={ms:.3}");
        }
        Ok(Some(PassTrace {
            gpu,
            last: Instant::now(),
            line,
        }))
    }

    /// Ends stage `name` once the device has done what was queued for it.
    pub(super) fn stage(&mut self, name: &str) -> Result<(), GpuError> {
        self.gpu.synchronize()?;
        if let Some(side) = self.gpu.side_lane_if_made() {
            side.synchronize()?;
        }
        let now = Instant::now();
        let ms = (now - self.last).as_secs_f64() * 1e3;
        self.line += &format!(",{name}_ms={ms:.3}");
        self.last = now;
        Ok(())
    }

    /// Records how the sorted entries fell into buckets (from the scanned histogram `offsets`):
    /// entries in the first window and in the others, the largest bucket, the buckets used.
    pub(super) fn occupancy(
        &mut self,
        p: &MsmParams,
        offsets: &CudaSlice<u32>,
    ) -> Result<(), GpuError> {
        let offsets = self
            .gpu
            .stream()
            .clone_dtoh(offsets)
            .call("cuMemcpyDtoH (MSM trace)")?;
        let counts: Vec<u32> = offsets.windows(2).map(|w| w[1] - w[0]).collect();
        let per_set = p.buckets as usize;
        let first: u64 = counts.iter().take(per_set).map(|&c| u64::from(c)).sum();
        let rest: u64 = counts.iter().skip(per_set).map(|&c| u64::from(c)).sum();
        let largest = counts.iter().copied().max().unwrap_or(0);
        let used = counts.iter().filter(|&&c| c > 0).count();
        self.line += &format!(
            ",entries_first_set={first},entries_other_sets={rest},largest_bucket={largest},buckets_used={used}"
        );
        Ok(())
    }

    /// Writes the line, with the pair rounds the pass ran.
    pub(super) fn finish(self, rounds: u32) {
        eprintln!("{},rounds={rounds}", self.line);
    }
}
