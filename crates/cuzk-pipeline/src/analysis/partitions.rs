//! Per-partition figures: device regions, stage times from PARTITION_STATS and synthesis times by
//! path.

use std::collections::{BTreeMap, HashMap};

use super::busy::{synth_intervals, PartitionKey};
use super::regions::regions;
use super::stats::Spread;
use super::steady_state::GpuSummary;
use crate::timeline::{key, Event, Record, Timeline};

/// PARTITION_STATS keys reported per partition, when a log has them: `prove_start` (host
/// preparation, device wait and device region); the host copy of a, b, c and the witness into
/// page-locked memory before the device region; the copy of a, b, c inside the region, as logs
/// before that change recorded it (their `prep_copy_ms` is the witness alone).
pub const STAGE_KEYS: [&str; 3] = [key::PROVE_START_MS, key::PREP_COPY_MS, key::STAGE_ABC_MS];

/// Synthesis durations of finished partitions (their PARTITION_STATS' synth_ms) by how they were
/// synthesized (`synthesis=`: direct, recorded, compiled), over the whole run; empty for logs that
/// do not say.
pub fn synth_stats_by_path(timeline: &Timeline) -> BTreeMap<String, Spread> {
    let mut durations: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for record in timeline
        .records
        .iter()
        .filter(|r| r.event == Event::PartitionStats)
    {
        let (Some(path), Some(ms)) = (record.get(key::SYNTHESIS), record.number(key::SYNTH_MS))
        else {
            continue;
        };
        durations.entry(path.to_owned()).or_default().push(ms);
    }
    durations
        .into_iter()
        .filter_map(|(path, ms)| Some((path, Spread::of(&ms)?)))
        .collect()
}

/// Per-partition figures of the partitions measured: those a GPU worker took (GPU_PICKUP, where
/// `prove_start` begins; the device region's start in logs without it) in the steady state, every
/// one when the run has none, the SRS placements left out. So a slow first partition, a partition
/// that waited out the placement on the device lock, or a cold start does not stand for the rest.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionFigures {
    /// Whether they cover the steady state; else the whole run.
    pub steady: bool,
    pub partitions: usize,
    /// SYNTH_START to SYNTH_END.
    pub synth_ms: Option<Spread>,
    /// The device region (all of a partition's GPU intervals).
    pub gpu_ms: Option<Spread>,
    /// The [`STAGE_KEYS`] the log has, in that order.
    pub stages: Vec<(&'static str, Spread)>,
}

pub fn partition_figures(timeline: &Timeline, gpu: &GpuSummary) -> PartitionFigures {
    let from_ms = gpu
        .steady
        .as_ref()
        .map_or(f64::NEG_INFINITY, |s| s.start_ms);
    let placed = gpu.placed();
    let mut picked_up: HashMap<PartitionKey<'_>, f64> = HashMap::new();
    for r in timeline
        .records
        .iter()
        .filter(|r| r.event == Event::GpuPickup)
    {
        let first = picked_up
            .entry((r.job_id.as_str(), r.partition()))
            .or_insert(r.ms);
        *first = first.min(r.ms);
    }
    let measured: BTreeMap<PartitionKey<'_>, f64> = regions(&gpu.intervals)
        .into_iter()
        .filter(|(key, region)| {
            let taken = picked_up.get(key).map_or(region.start_ms, |&ms| ms);
            taken.min(region.start_ms) >= from_ms && !placed.contains(key)
        })
        .map(|(key, region)| (key, region.gpu_ms))
        .collect();
    let gpu_ms: Vec<f64> = measured.values().copied().collect();
    let synth_ms: Vec<f64> = synth_intervals(timeline)
        .iter()
        .filter(|s| measured.contains_key(&(s.job_id.as_str(), s.partition)))
        .map(|s| s.end_ms - s.start_ms)
        .collect();
    let stats: Vec<&Record> = timeline
        .records
        .iter()
        .filter(|r| {
            r.event == Event::PartitionStats
                && measured.contains_key(&(r.job_id.as_str(), r.partition()))
        })
        .collect();
    let stages = STAGE_KEYS
        .into_iter()
        .filter_map(|key| {
            let values: Vec<f64> = stats.iter().filter_map(|r| r.number(key)).collect();
            Some((key, Spread::of(&values)?))
        })
        .collect();
    PartitionFigures {
        steady: gpu.steady.is_some(),
        partitions: measured.len(),
        synth_ms: Spread::of(&synth_ms),
        gpu_ms: Spread::of(&gpu_ms),
        stages,
    }
}
