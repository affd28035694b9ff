//! Each device measured over its own span, for multi-GPU runs where the merged view would hide one
//! device idling behind another.

use std::collections::{BTreeMap, HashSet};

use super::busy::PartitionKey;
use super::busy::{busy_over_extent, starved_fraction, IdleWindow, Span};
use super::regions::regions;
use super::stats::Spread;
use super::steady_state::GpuSummary;
use crate::timeline::{Event, EventName, Timeline};

/// One device's share of the GPU side, measured over its own [first start, last end] so a device
/// that started late or finished early is not counted idle for the others' time.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSummary {
    /// `device=D` of its records; records without it count as device 0.
    pub device: u32,
    /// Distinct (job, partition) pairs it ran, those that failed on it by a device fault left out.
    pub partitions: usize,
    /// Device region per partition, its SRS placements and faults left out.
    pub gpu_ms: Option<Spread>,
    pub busy_fraction: f64,
    pub idle_windows: Vec<IdleWindow>,
    /// Its idle time with no partition ready for it (see [`starved_fraction`]) over its span.
    pub starved_fraction: Option<f64>,
    /// Its DEVICE_FAULT records: attempts that failed by a fault of the device (their device
    /// regions, however short, count in its busy time).
    pub faults: usize,
    /// When its DEVICE_OUT record took it out of service.
    pub out_of_service_ms: Option<f64>,
}

/// Every device seen in the summary's intervals or in `timeline`'s device faults, by device
/// number.
pub fn per_device(gpu: &GpuSummary, timeline: &Timeline) -> Vec<DeviceSummary> {
    let placed = gpu.placed();
    let mut devices: BTreeMap<u32, Vec<Span>> = BTreeMap::new();
    for iv in &gpu.intervals {
        let device = devices.entry(iv.device.unwrap_or(0)).or_default();
        device.push(iv.clone());
    }
    let mut faults: BTreeMap<u32, usize> = BTreeMap::new();
    let mut failed: HashSet<(u32, PartitionKey<'_>)> = HashSet::new();
    let mut out: BTreeMap<u32, f64> = BTreeMap::new();
    for record in &timeline.records {
        match (&record.event, record.device()) {
            (EventName::Known(Event::DeviceFault), Some(device)) => {
                *faults.entry(device).or_default() += 1;
                failed.insert((device, (record.job_id.as_str(), record.partition())));
            }
            (EventName::Known(Event::DeviceOut), Some(device)) => {
                out.entry(device).or_insert(record.ms);
            }
            _ => continue,
        }
        devices.entry(record.device().unwrap_or(0)).or_default();
    }
    devices
        .into_iter()
        .map(|(device, spans)| {
            let (idle_windows, busy_fraction) = busy_over_extent(&spans);
            let mut regions = regions(&spans);
            regions.retain(|key, _| !failed.contains(&(device, *key)));
            let gpu_ms: Vec<f64> = regions
                .iter()
                .filter(|(key, _)| !placed.contains(*key))
                .map(|(_, region)| region.gpu_ms)
                .collect();
            let starved_fraction =
                starved_fraction(timeline, &idle_windows, busy_fraction, |d| d == device);
            DeviceSummary {
                device,
                partitions: regions.len(),
                gpu_ms: Spread::of(&gpu_ms),
                busy_fraction,
                starved_fraction,
                idle_windows,
                faults: faults.get(&device).copied().unwrap_or(0),
                out_of_service_ms: out.get(&device).copied(),
            }
        })
        .collect()
}
