//! The GPU side of a whole run, merged over every device, and its steady state after a warm-up.

use std::collections::{HashMap, HashSet};

use super::busy::PartitionKey;
use super::busy::{
    busy_over_extent, fraction, gpu_intervals, merge, starved_fraction, IdleWindow, Span,
};
use super::regions::{regions, srs_placements, SrsPlacement};
use crate::timeline::Timeline;

/// Jobs left out of the steady state unless told otherwise: the first to finish, whose time holds
/// the pipeline filling up and, on a GPU, the SRS placement. One is also the window the steady
/// state covered before it had a warm-up setting, so earlier figures compare.
pub const DEFAULT_WARMUP_JOBS: usize = 1;

/// The GPU side of a timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuSummary {
    pub intervals: Vec<Span>,
    pub idle_windows: Vec<IdleWindow>,
    /// Busy time over [first GPU start, last GPU end]; 1.0 for a single instant.
    pub busy_fraction: f64,
    /// Idle time with no partition ready (see [`starved_fraction`]) over the same extent; `None`
    /// for a log without GPU_QUEUE records.
    pub starved_fraction: Option<f64>,
    /// Jobs left out of the steady state, the first to finish.
    pub warmup_jobs: usize,
    /// The run after the warm-up; `None` when no job finished after it.
    pub steady: Option<SteadyState>,
    /// Partitions whose device region placed a parameter set on the device, in time order.
    pub srs_placements: Vec<SrsPlacement>,
    pub jobs: usize,
}

/// The run after its warm-up (the first jobs to finish): from the last warm-up job's final
/// GPU_END (the first GPU start with no warm-up) to the last job's final GPU_END.
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyState {
    pub start_ms: f64,
    pub end_ms: f64,
    /// Jobs whose final GPU_END falls in the window (all but the warm-up).
    pub jobs: usize,
    /// The window over the jobs' work inside it, in seconds: each of its jobs counts the share
    /// of its partitions proven inside the window (a job whose partitions were partly proven
    /// before the warm-up ended, as when the warm-up waited for a retried partition, counts
    /// that much less).
    pub s_per_job: f64,
    /// GPU busy time inside the window over its length; 1.0 for a single instant.
    pub busy_fraction: f64,
}

impl GpuSummary {
    /// The partitions that placed a parameter set, as (job, partition).
    pub(super) fn placed(&self) -> HashSet<PartitionKey<'_>> {
        self.srs_placements
            .iter()
            .map(|p| (p.job_id.as_str(), p.partition))
            .collect()
    }
}

/// Merges the intervals of all workers, of all devices, and measures the gaps; the steady state
/// leaves out the first `warmup_jobs` jobs to finish.
pub fn summarize(timeline: &Timeline, warmup_jobs: usize) -> GpuSummary {
    let intervals = gpu_intervals(timeline);
    let (idle_windows, busy_fraction) = busy_over_extent(&intervals);

    let mut final_end: HashMap<&str, f64> = HashMap::new();
    for iv in &intervals {
        let end = final_end.entry(iv.job_id.as_str()).or_insert(iv.end_ms);
        *end = end.max(iv.end_ms);
    }
    let mut finals: Vec<f64> = final_end.values().copied().collect();
    finals.sort_by(f64::total_cmp);
    let steady = steady_state(&intervals, &finals, warmup_jobs);
    let srs_placements = srs_placements(timeline, &regions(&intervals));
    let starved_fraction = starved_fraction(timeline, &idle_windows, busy_fraction, |_| true);
    GpuSummary {
        jobs: finals.len(),
        intervals,
        idle_windows,
        busy_fraction,
        starved_fraction,
        warmup_jobs,
        steady,
        srs_placements,
    }
}

/// The window after the first `warmup_jobs` of the jobs' final GPU_ENDs (`finals`, sorted).
fn steady_state(intervals: &[Span], finals: &[f64], warmup_jobs: usize) -> Option<SteadyState> {
    let jobs = finals.len().checked_sub(warmup_jobs).filter(|&n| n > 0)?;
    let end_ms = *finals.last()?;
    let start_ms = match warmup_jobs.checked_sub(1) {
        Some(last_warmup) => *finals.get(last_warmup)?,
        None => intervals.first()?.start_ms,
    };
    let inside: Vec<Span> = intervals
        .iter()
        .filter(|iv| iv.end_ms > start_ms && iv.start_ms < end_ms)
        .map(|iv| Span {
            start_ms: iv.start_ms.max(start_ms),
            end_ms: iv.end_ms.min(end_ms),
            ..iv.clone()
        })
        .collect();
    let (_, busy_ms) = merge(&inside);
    let work = jobs_proven_after(intervals, start_ms);
    Some(SteadyState {
        start_ms,
        end_ms,
        jobs,
        s_per_job: (end_ms - start_ms) / work / 1000.0,
        busy_fraction: fraction(busy_ms, end_ms - start_ms),
    })
}

/// The jobs' partitions whose final GPU_END comes after `start_ms`, in jobs: each job counts the
/// share of its partitions that do (a retried partition by its last interval).
fn jobs_proven_after(intervals: &[Span], start_ms: f64) -> f64 {
    let mut last: HashMap<(&str, Option<u32>), f64> = HashMap::new();
    for iv in intervals {
        let end = last
            .entry((iv.job_id.as_str(), iv.partition))
            .or_insert(iv.end_ms);
        *end = end.max(iv.end_ms);
    }
    let mut jobs: HashMap<&str, (usize, usize)> = HashMap::new();
    for ((job, _), end) in last {
        let (partitions, after) = jobs.entry(job).or_default();
        *partitions += 1;
        *after += usize::from(end > start_ms);
    }
    jobs.values()
        .map(|&(partitions, after)| after as f64 / partitions as f64)
        .sum()
}
