//! Device regions by partition, and the partitions whose region placed a parameter set on the
//! device: what the whole-run summary and the per-partition and per-device figures start from.

use std::collections::BTreeMap;

use super::busy::{PartitionKey, Span};
use crate::timeline::{key, Event, Timeline};

/// A partition whose device region placed its parameter set on the device (its PARTITION_STATS
/// carries `srs_place_ms`, which the GPU backend records when it uploads a set): a one-off cost,
/// reported apart and left out of the device-region figures.
#[derive(Clone, Debug, PartialEq)]
pub struct SrsPlacement {
    pub job_id: String,
    pub partition: Option<u32>,
    pub device: Option<u32>,
    /// Its whole device region; `None` when the log has no GPU interval for it.
    pub gpu_ms: Option<f64>,
    /// The placement's part of that region.
    pub place_ms: f64,
}

/// One partition's device region: all its GPU intervals (a backend may take the device more than
/// once), from the first one's start.
#[derive(Clone, Copy, Debug)]
pub(super) struct Region {
    device: Option<u32>,
    pub(super) start_ms: f64,
    pub(super) gpu_ms: f64,
}

pub(super) fn regions(intervals: &[Span]) -> BTreeMap<PartitionKey<'_>, Region> {
    let mut regions: BTreeMap<PartitionKey<'_>, Region> = BTreeMap::new();
    for iv in intervals {
        let region = regions
            .entry((iv.job_id.as_str(), iv.partition))
            .or_insert(Region {
                device: iv.device,
                start_ms: iv.start_ms,
                gpu_ms: 0.0,
            });
        region.start_ms = region.start_ms.min(iv.start_ms);
        region.gpu_ms += iv.end_ms - iv.start_ms;
    }
    regions
}

/// The partitions whose PARTITION_STATS say they placed the SRS, with their device regions.
pub(super) fn srs_placements(
    timeline: &Timeline,
    regions: &BTreeMap<PartitionKey<'_>, Region>,
) -> Vec<SrsPlacement> {
    timeline
        .records
        .iter()
        .filter(|r| r.event == Event::PartitionStats)
        .filter_map(|r| {
            let place_ms = r.number(key::SRS_PLACE_MS)?;
            let region = regions.get(&(r.job_id.as_str(), r.partition()));
            Some(SrsPlacement {
                job_id: r.job_id.clone(),
                partition: r.partition(),
                device: region.and_then(|g| g.device),
                gpu_ms: region.map(|g| g.gpu_ms),
                place_ms,
            })
        })
        .collect()
}
