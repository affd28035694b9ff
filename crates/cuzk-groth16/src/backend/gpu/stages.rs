//! The stage metrics of one proof's device work: host times as they happen, device times read once
//! the region is over, and what an MSM run alone records.

use cuzk_gpu::{GpuError, Lane, Timing};

use crate::prover::StageMetric;

/// Collects stage timings: host times as they happen, device times once the region is over.
#[derive(Default)]
pub(super) struct Stages {
    pub(super) metrics: Vec<StageMetric>,
    /// Device stages whose events are read at the end: waiting for each stage's end before the
    /// next was queued left H's lane idle while its thread woke behind syntheses
    /// (measured: docs/performance.md, "Why the code is as it is").
    pub(super) pending: Vec<(&'static str, Timing)>,
}

impl Stages {
    pub(super) fn push(&mut self, key: &'static str, value: f64) {
        self.metrics.push(StageMetric { key, value });
    }

    /// Runs `f` (device work on the GPU's stream) and keeps its device time for `key`, without
    /// waiting for the work.
    pub(super) fn time<T>(
        &mut self,
        gpu: &Lane,
        key: &'static str,
        f: impl FnOnce() -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        let (out, timing) = gpu.timed(f)?;
        self.pending.push((key, timing));
        Ok(out)
    }

    /// The value of a timed device call, its device time recorded under `key`.
    pub(super) fn record<T>(
        &mut self,
        key: &'static str,
        timed: Result<(T, f32), GpuError>,
    ) -> Result<T, GpuError> {
        let (out, ms) = timed?;
        self.push(key, f64::from(ms));
        Ok(out)
    }

    /// Adds `other`'s metrics and pending device stages after these.
    pub(super) fn extend(&mut self, other: Stages) {
        self.metrics.extend(other.metrics);
        self.pending.extend(other.pending);
    }

    /// Every metric, the device stages' read now (the device is idle; a stage whose events cannot
    /// be read, after a failure on the device, is left out). A key timed more than once (each
    /// gather, each of H's vectors) gets the sum.
    pub(super) fn settle(mut self) -> Vec<StageMetric> {
        for (key, timing) in std::mem::take(&mut self.pending) {
            let Ok(ms) = timing.ms() else { continue };
            match self.metrics.iter_mut().find(|m| m.key == key) {
                Some(metric) => metric.value += f64::from(ms),
                None => self.push(key, f64::from(ms)),
            }
        }
        self.metrics
    }
}

/// An MSM run alone on `gpu`, with its device time; recorded under `[passes, room]`: the
/// Pippenger passes it took and the device memory free as it started (an MSM short of memory
/// splits into many small passes, each dearer per point).
pub(super) fn msm_counted<T>(
    gpu: &Lane,
    stages: &mut Stages,
    [passes, room]: [&'static str; 2],
    msm: impl FnOnce() -> Result<T, GpuError>,
) -> Result<(T, f32), GpuError> {
    let before = gpu.msm_passes();
    stages.push(room, gpu.settled_memory()?.0 as f64);
    let timed = gpu.time(msm);
    stages.push(passes, (gpu.msm_passes() - before) as f64);
    timed
}

/// Records under `key` what `gpu`'s streamed passes waited for their points since it was last
/// read (see [`Lane::take_copy_wait_ms`]); nothing when more passes ran than it keeps.
pub(super) fn push_copy_wait(
    stages: &mut Stages,
    key: &'static str,
    gpu: &Lane,
) -> Result<(), GpuError> {
    if let Some(ms) = gpu.take_copy_wait_ms()? {
        stages.push(key, ms);
    }
    Ok(())
}
