//! What a TIMELINE says about the GPU: its busy intervals merged over all workers, the idle
//! windows between them, the busy fraction and the steady state after a warm-up; the partitions
//! that placed a parameter set on the device, apart; each partition's stage times as median and
//! spread; the same per device for multi-GPU runs, where the merged view would hide one device
//! idling behind another.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::timeline::{key, Event, EventName, Record, Timeline};

/// Jobs left out of the steady state unless told otherwise: the first to finish, whose time holds
/// the pipeline filling up and, on a GPU, the SRS placement. One is also the window the steady
/// state covered before it had a warm-up setting, so earlier figures compare.
pub const DEFAULT_WARMUP_JOBS: usize = 1;

/// PARTITION_STATS keys reported per partition, when a log has them: `prove_start` (host
/// preparation, device wait and device region); the host copy of a, b, c and the witness into
/// page-locked memory before the device region; the copy of a, b, c inside the region, as logs
/// before that change recorded it (their `prep_copy_ms` is the witness alone).
pub const STAGE_KEYS: [&str; 3] = [key::PROVE_START_MS, key::PREP_COPY_MS, key::STAGE_ABC_MS];

/// The `qs` quantiles (each in [0, 1]) of `values`, interpolated linearly between the nearest
/// ranks (so the median of an even count is the mean of the middle two); `None` for no values.
pub fn percentiles<const N: usize>(values: &[f64], qs: [f64; N]) -> Option<[f64; N]> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let last = sorted.len().checked_sub(1)?;
    Some(qs.map(|q| {
        let rank = q.clamp(0.0, 1.0) * last as f64;
        let (below, above) = (rank.floor() as usize, rank.ceil() as usize);
        sorted[below] + (sorted[above] - sorted[below]) * (rank - below as f64)
    }))
}

/// A sample's median and spread, the form every per-partition figure takes: a mean alone lets one
/// slow partition (an SRS placement, a cold start) stand for all.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub count: usize,
    pub p10: f64,
    pub median: f64,
    pub p90: f64,
    /// Kept beside the median for totals (mean × count).
    pub mean: f64,
}

impl Spread {
    /// `None` for no values.
    pub fn of(values: &[f64]) -> Option<Self> {
        let [p10, median, p90] = percentiles(values, [0.1, 0.5, 0.9])?;
        Some(Spread {
            count: values.len(),
            p10,
            median,
            p90,
            mean: values.iter().sum::<f64>() / values.len() as f64,
        })
    }
}

/// One partition's time in a stage: on the GPU (GPU_START, or GPU_PICKUP when the log has no
/// GPU_START, to GPU_END) or in synthesis (SYNTH_START to SYNTH_END).
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub job_id: String,
    pub partition: Option<u32>,
    /// `worker=W` of the closing record, when the log says.
    pub worker: Option<u32>,
    /// `device=D` of the closing record, when the log says (single-device logs often do not).
    pub device: Option<u32>,
    pub start_ms: f64,
    pub end_ms: f64,
}

/// A stretch with no partition on the GPU, between two busy stretches.
#[derive(Clone, Debug, PartialEq)]
pub struct IdleWindow {
    pub start_ms: f64,
    pub end_ms: f64,
    /// The job whose interval ended last before the window.
    pub job_before: String,
    /// The job whose interval starts the next busy stretch.
    pub job_after: String,
}

impl IdleWindow {
    pub fn length_ms(&self) -> f64 {
        self.end_ms - self.start_ms
    }
}

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
    /// The window over its jobs, in seconds.
    pub s_per_job: f64,
    /// GPU busy time inside the window over its length; 1.0 for a single instant.
    pub busy_fraction: f64,
}

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

impl GpuSummary {
    /// The partitions that placed a parameter set, as (job, partition).
    fn placed(&self) -> HashSet<PartitionKey<'_>> {
        self.srs_placements
            .iter()
            .map(|p| (p.job_id.as_str(), p.partition))
            .collect()
    }
}

/// Pairs each `closing` record with the latest earlier unmatched `opening` record of the same job
/// and partition; closings without an opening are dropped. Sorted by start.
fn pair(timeline: &Timeline, opening: Event, closing: Event) -> Vec<Span> {
    let mut open: HashMap<PartitionKey<'_>, Vec<f64>> = HashMap::new();
    let mut spans = Vec::new();
    for record in &timeline.records {
        let key = (record.job_id.as_str(), record.partition());
        if record.event == opening {
            open.entry(key).or_default().push(record.ms);
        } else if record.event == closing {
            if let Some(start_ms) = open.get_mut(&key).and_then(Vec::pop) {
                spans.push(span(record, start_ms));
            }
        }
    }
    spans.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    spans
}

fn span(end: &Record, start_ms: f64) -> Span {
    Span {
        job_id: end.job_id.clone(),
        partition: end.partition(),
        worker: end.worker(),
        device: end.device(),
        start_ms,
        end_ms: end.ms,
    }
}

/// Partitions on the GPU, falling back to GPU_PICKUP for logs with no GPU_START.
pub fn gpu_intervals(timeline: &Timeline) -> Vec<Span> {
    let has_start = timeline.records.iter().any(|r| r.event == Event::GpuStart);
    pair(
        timeline,
        if has_start {
            Event::GpuStart
        } else {
            Event::GpuPickup
        },
        Event::GpuEnd,
    )
}

/// Partitions in synthesis.
pub fn synth_intervals(timeline: &Timeline) -> Vec<Span> {
    pair(timeline, Event::SynthStart, Event::SynthEnd)
}

/// Busy stretches of intervals sorted by start: the gaps between stretches and the busy time.
fn merge(intervals: &[Span]) -> (Vec<IdleWindow>, f64) {
    let mut idle_windows = Vec::new();
    let mut busy_ms = 0.0;
    // The busy stretch being merged: its start, its end and the job that reached that end.
    let mut stretch: Option<(f64, f64, &str)> = None;
    for iv in intervals {
        stretch = Some(match stretch {
            None => (iv.start_ms, iv.end_ms, iv.job_id.as_str()),
            Some((start, end, job)) if iv.start_ms <= end => {
                if iv.end_ms > end {
                    (start, iv.end_ms, iv.job_id.as_str())
                } else {
                    (start, end, job)
                }
            }
            Some((start, end, job)) => {
                busy_ms += end - start;
                idle_windows.push(IdleWindow {
                    start_ms: end,
                    end_ms: iv.start_ms,
                    job_before: job.to_owned(),
                    job_after: iv.job_id.clone(),
                });
                (iv.start_ms, iv.end_ms, iv.job_id.as_str())
            }
        });
    }
    if let Some((start, end, _)) = stretch {
        busy_ms += end - start;
    }
    (idle_windows, busy_ms)
}

/// Busy time over a window's length; 1.0 for a window of no length.
fn fraction(busy_ms: f64, window_ms: f64) -> f64 {
    if window_ms > 0.0 {
        busy_ms / window_ms
    } else {
        1.0
    }
}

/// Intervals sorted by start, merged: the gaps and the busy fraction over [first start, last end]
/// (1.0 for a single instant or none).
fn busy_over_extent(intervals: &[Span]) -> (Vec<IdleWindow>, f64) {
    let (idle_windows, busy_ms) = merge(intervals);
    let extent_ms = match (
        intervals.first(),
        intervals.iter().map(|i| i.end_ms).reduce(f64::max),
    ) {
        (Some(first), Some(last)) => last - first.start_ms,
        _ => 0.0,
    };
    (idle_windows, fraction(busy_ms, extent_ms))
}

/// The share of a span that its GPU idled with no partition ready for it: none waiting in the
/// GPU queue (GPU_QUEUE to GPU_PICKUP, for any device) and none picked up by a worker of a device
/// that `mine` accepts and being prepared there (GPU_PICKUP to GPU_START). That idle time waited
/// for synthesis: the host did not keep up. `idle_windows` (sorted, disjoint) and
/// `busy_fraction` are the span's; `None` when the log has no GPU_QUEUE records.
pub fn starved_fraction(
    timeline: &Timeline,
    idle_windows: &[IdleWindow],
    busy_fraction: f64,
    mine: impl Fn(u32) -> bool,
) -> Option<f64> {
    if !timeline.records.iter().any(|r| r.event == Event::GpuQueue) {
        return None;
    }
    let mut ready = pair(timeline, Event::GpuQueue, Event::GpuPickup);
    ready.extend(
        pair(timeline, Event::GpuPickup, Event::GpuStart)
            .into_iter()
            .filter(|s| mine(s.device.unwrap_or(0))),
    );
    let idle_ms: f64 = idle_windows.iter().map(IdleWindow::length_ms).sum();
    if idle_ms <= 0.0 {
        return Some(0.0);
    }
    Some((1.0 - busy_fraction) * uncovered_ms(idle_windows, &ready) / idle_ms)
}

/// The time of `windows` (sorted, disjoint) that no span of `cover` overlaps.
fn uncovered_ms(windows: &[IdleWindow], cover: &[Span]) -> f64 {
    let mut union: Vec<(f64, f64)> = Vec::new();
    let mut spans: Vec<(f64, f64)> = cover.iter().map(|s| (s.start_ms, s.end_ms)).collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (start, end) in spans {
        match union.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => union.push((start, end)),
        }
    }
    let mut first = 0;
    let mut uncovered = 0.0;
    for window in windows {
        while union.get(first).is_some_and(|u| u.1 <= window.start_ms) {
            first += 1;
        }
        let covered: f64 = union[first..]
            .iter()
            .take_while(|u| u.0 < window.end_ms)
            .map(|u| u.1.min(window.end_ms) - u.0.max(window.start_ms))
            .sum();
        uncovered += window.length_ms() - covered;
    }
    uncovered
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
    Some(SteadyState {
        start_ms,
        end_ms,
        jobs,
        s_per_job: (end_ms - start_ms) / jobs as f64 / 1000.0,
        busy_fraction: fraction(busy_ms, end_ms - start_ms),
    })
}

/// A partition of a job, as TIMELINE records name it.
type PartitionKey<'a> = (&'a str, Option<u32>);

/// One partition's device region: all its GPU intervals (a backend may take the device more than
/// once), from the first one's start.
#[derive(Clone, Copy, Debug)]
struct Region {
    device: Option<u32>,
    start_ms: f64,
    gpu_ms: f64,
}

fn regions(intervals: &[Span]) -> BTreeMap<PartitionKey<'_>, Region> {
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
fn srs_placements(
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

/// How one job handed the GPU to the next (jobs in order of their first GPU start).
#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    pub from_job: String,
    pub to_job: String,
    /// The previous job's second-to-last GPU_END (its last when it has one partition).
    pub prev_second_last_end_ms: f64,
    /// The next job's first GPU_START.
    pub next_first_start_ms: f64,
    /// next_first_start − prev_second_last_end.
    pub delta_ms: f64,
    /// How long the next job's first partition overlapped the previous job's last one.
    pub overlap_ms: f64,
}

/// Job-to-job transitions on the GPU.
pub fn transitions(intervals: &[Span]) -> Vec<Transition> {
    let mut jobs: Vec<(&str, Vec<&Span>)> = Vec::new();
    for iv in intervals {
        match jobs.iter_mut().find(|(job, _)| *job == iv.job_id) {
            Some((_, list)) => list.push(iv),
            None => jobs.push((iv.job_id.as_str(), vec![iv])),
        }
    }
    jobs.windows(2)
        .filter_map(|pair| {
            let (prev_job, prev) = &pair[0];
            let (next_job, next) = &pair[1];
            let mut ends: Vec<f64> = prev.iter().map(|i| i.end_ms).collect();
            ends.sort_by(f64::total_cmp);
            let prev_second_last_end_ms = ends
                .len()
                .checked_sub(2)
                .map_or(*ends.first()?, |i| ends[i]);
            let last = prev.iter().max_by(|a, b| a.end_ms.total_cmp(&b.end_ms))?;
            let first = next
                .iter()
                .min_by(|a, b| a.start_ms.total_cmp(&b.start_ms))?;
            let overlap_ms =
                (last.end_ms.min(first.end_ms) - last.start_ms.max(first.start_ms)).max(0.0);
            Some(Transition {
                from_job: (*prev_job).to_owned(),
                to_job: (*next_job).to_owned(),
                prev_second_last_end_ms,
                next_first_start_ms: first.start_ms,
                delta_ms: first.start_ms - prev_second_last_end_ms,
                overlap_ms,
            })
        })
        .collect()
}

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

/// Per job, its partitions' total synthesis time against their total GPU time: with P syntheses in
/// parallel the GPU stays fed while synth_ms / P ≤ gpu_ms.
#[derive(Clone, Debug, PartialEq)]
pub struct JobBalance {
    pub job_id: String,
    pub synth_ms: f64,
    pub gpu_ms: f64,
}

/// Jobs in order of first appearance.
pub fn balance(timeline: &Timeline) -> Vec<JobBalance> {
    let mut jobs: Vec<JobBalance> = Vec::new();
    let mut add = |span: &Span, synth: bool| {
        let index = match jobs.iter().position(|j| j.job_id == span.job_id) {
            Some(i) => i,
            None => {
                jobs.push(JobBalance {
                    job_id: span.job_id.clone(),
                    synth_ms: 0.0,
                    gpu_ms: 0.0,
                });
                jobs.len() - 1
            }
        };
        let length = span.end_ms - span.start_ms;
        if synth {
            jobs[index].synth_ms += length;
        } else {
            jobs[index].gpu_ms += length;
        }
    };
    for span in synth_intervals(timeline) {
        add(&span, true);
    }
    for span in gpu_intervals(timeline) {
        add(&span, false);
    }
    jobs
}

/// Time spent with k syntheses in flight, for every k seen (index k, milliseconds).
pub fn synth_in_flight_histogram(timeline: &Timeline) -> Vec<f64> {
    let events = synth_events(timeline);
    let mut histogram: Vec<f64> = Vec::new();
    let mut now = 0usize;
    for pair in events.windows(2) {
        now = (now as i64 + pair[0].1 as i64).max(0) as usize;
        if histogram.len() <= now {
            histogram.resize(now + 1, 0.0);
        }
        histogram[now] += pair[1].0 - pair[0].0;
    }
    histogram
}

/// (time, +1 for a start / −1 for an end), ends first at equal times.
fn synth_events(timeline: &Timeline) -> Vec<(f64, i32)> {
    let mut events: Vec<(f64, i32)> = timeline
        .records
        .iter()
        .filter_map(|r| match r.event {
            EventName::Known(Event::SynthStart) => Some((r.ms, 1)),
            EventName::Known(Event::SynthEnd) => Some((r.ms, -1)),
            _ => None,
        })
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    events
}

/// The most syntheses running at once: SYNTH_START opens one, SYNTH_END closes one (at equal times
/// ends count first, so back-to-back syntheses are not overlap).
pub fn max_synth_in_flight(timeline: &Timeline) -> usize {
    let events = synth_events(timeline);
    let (mut now, mut max) = (0i32, 0i32);
    for (_, delta) in events {
        now += delta;
        max = max.max(now);
    }
    max.max(0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(log: &str) -> GpuSummary {
        summarize(&Timeline::parse(log), DEFAULT_WARMUP_JOBS)
    }

    fn s_per_job(s: &GpuSummary) -> Option<f64> {
        s.steady.as_ref().map(|s| s.s_per_job)
    }

    #[test]
    fn percentiles_interpolate_between_ranks() {
        assert_eq!(percentiles(&[], [0.5]), None);
        assert_eq!(percentiles(&[5.0], [0.1, 0.5, 0.9]), Some([5.0; 3]));
        assert_eq!(percentiles(&[3.0, 1.0, 2.0], [0.5]), Some([2.0]));
        // Ranks 0.3, 1.5 and 2.7 of 1, 2, 3, 4.
        let [p10, median, p90] =
            percentiles(&[4.0, 1.0, 3.0, 2.0], [0.1, 0.5, 0.9]).unwrap_or([f64::NAN; 3]);
        assert!((p10 - 1.3).abs() < 1e-12 && (p90 - 3.7).abs() < 1e-12);
        assert_eq!(median, 2.5);
        assert_eq!(percentiles(&[1.0, 2.0], [-1.0, 2.0]), Some([1.0, 2.0]));
        assert_eq!(Spread::of(&[]), None);
        let spread = Spread::of(&[10.0, 70.0, 70.0, 70.0, 1000.0]);
        assert_eq!(
            spread.map(|s| (s.count, s.median, s.mean)),
            Some((5, 70.0, 244.0))
        );
    }

    /// Four jobs of two partitions on one device, one after another: a's partition 0 places the
    /// SRS (400 ms, 330 of them placing), every other device region takes 70 ms, synthesis 20 ms
    /// (30 for a0), the staging copy 7 ms. Final GPU_ENDs: a 470, b 610, c 750, d 890. Each
    /// partition is picked up as its region starts, but b0 at 100: it waited out the placement.
    fn slow_first_partition() -> Timeline {
        let mut log = String::new();
        let mut gpu_start = 0;
        for (j, job) in ["a", "b", "c", "d"].into_iter().enumerate() {
            for partition in 0..2 {
                let first = j == 0 && partition == 0;
                let (region, synth) = if first { (400, 30) } else { (70, 20) };
                let gpu_end = gpu_start + region;
                let synth_start = gpu_start - synth;
                let srs = if first { ",srs_place_ms=330" } else { "" };
                let pickup = if (j, partition) == (1, 0) {
                    100
                } else {
                    gpu_start
                };
                log += &format!(
                    "TIMELINE,{synth_start},SYNTH_START,{job},partition={partition}\n\
                     TIMELINE,{gpu_start},SYNTH_END,{job},partition={partition},synth_ms={synth}\n\
                     TIMELINE,{pickup},GPU_PICKUP,{job},partition={partition},device=0\n\
                     TIMELINE,{gpu_start},GPU_START,{job},partition={partition},device=0\n\
                     TIMELINE,{gpu_end},GPU_END,{job},partition={partition},device=0\n\
                     TIMELINE,{gpu_end},PARTITION_STATS,{job},partition={partition},\
                     synth_ms={synth},prove_start_ms={},gpu_ms={region},prep_copy_ms=7{srs}\n",
                    region + 10
                );
                gpu_start = gpu_end;
            }
        }
        Timeline::parse(&log)
    }

    #[test]
    fn the_srs_placement_is_apart_and_the_steady_state_follows_the_warm_up() {
        let timeline = slow_first_partition();
        let gpu = summarize(&timeline, 1);
        assert_eq!(
            gpu.srs_placements,
            [SrsPlacement {
                job_id: "a".into(),
                partition: Some(0),
                device: Some(0),
                gpu_ms: Some(400.0),
                place_ms: 330.0,
            }]
        );
        let steady = gpu.steady.clone();
        assert_eq!(
            steady.map(|s| (s.start_ms, s.end_ms, s.jobs, s.busy_fraction)),
            Some((470.0, 890.0, 3, 1.0))
        );
        assert_eq!(s_per_job(&gpu), Some(0.14));
        // b1 to d1 were picked up after a ended; b0 before, though its region began after.
        let figures = partition_figures(&timeline, &gpu);
        assert!(figures.steady);
        assert_eq!(figures.partitions, 5);
        let median = |s: Option<Spread>| s.map(|s| (s.count, s.median));
        assert_eq!(median(figures.gpu_ms), Some((5, 70.0)));
        assert_eq!(median(figures.synth_ms), Some((5, 20.0)));
        let stages: Vec<_> = figures
            .stages
            .iter()
            .map(|(key, s)| (*key, s.count, s.median))
            .collect();
        assert_eq!(
            stages,
            [("prove_start_ms", 5, 80.0), ("prep_copy_ms", 5, 7.0)]
        );
        let devices = per_device(&gpu, &timeline);
        assert_eq!(devices.len(), 1);
        // The device's own figure covers the whole run, the placement still apart.
        assert_eq!(median(devices[0].gpu_ms), Some((7, 70.0)));
        assert_eq!(devices[0].partitions, 8);

        // No warm-up: from the first GPU start, every partition but the placement.
        let gpu = summarize(&timeline, 0);
        assert_eq!(s_per_job(&gpu), Some(0.2225));
        let figures = partition_figures(&timeline, &gpu);
        assert_eq!(median(figures.gpu_ms), Some((7, 70.0)));
        assert_eq!(median(figures.synth_ms), Some((7, 20.0)));

        // A warm-up of every job leaves no steady state: the whole run is measured instead.
        let gpu = summarize(&timeline, 4);
        assert_eq!(gpu.steady, None);
        let figures = partition_figures(&timeline, &gpu);
        assert!(!figures.steady);
        assert_eq!(median(figures.gpu_ms), Some((7, 70.0)));
    }

    /// A log without PARTITION_STATS (the public engine's, or before them) has no placements to
    /// set apart and no stage figures; its device regions and syntheses still count. Without
    /// GPU_PICKUP, a partition counts from its device region's start.
    #[test]
    fn logs_without_partition_stats_still_give_regions() {
        let timeline = Timeline::parse(
            &slow_first_partition()
                .records
                .iter()
                .filter(|r| r.event != Event::PartitionStats && r.event != Event::GpuPickup)
                .map(|r| format!("{r}\n"))
                .collect::<String>(),
        );
        let gpu = summarize(&timeline, 0);
        assert!(gpu.srs_placements.is_empty());
        let figures = partition_figures(&timeline, &gpu);
        assert_eq!(figures.partitions, 8);
        assert_eq!(figures.gpu_ms.map(|s| s.median), Some(70.0));
        assert!(figures.stages.is_empty());
        // b0's region began as a ended.
        let steady = partition_figures(&timeline, &summarize(&timeline, 1));
        assert_eq!(steady.partitions, 6);
    }

    /// Two workers, overlapping intervals, lines out of order, noise: GPU busy 0–100 and 120–300
    /// (worker intervals 0–60, 40–100, 120–200, 150–300), so one idle window 100–120.
    const TWO_WORKERS: &str = "\
        TIMELINE,150,GPU_START,b,partition=1,worker=0\n\
        boot noise\n\
        TIMELINE,0,GPU_START,a,partition=0,worker=0\n\
        TIMELINE,60,GPU_END,a,partition=0,worker=0\n\
        TIMELINE,40,GPU_START,a,partition=1,worker=1\n\
        TIMELINE,100,GPU_END,a,partition=1,worker=1\n\
        TIMELINE,120,GPU_START,b,partition=0,worker=1\n\
        TIMELINE,oops\n\
        TIMELINE,200,GPU_END,b,partition=0,worker=1\n\
        TIMELINE,300,GPU_END,b,partition=1,worker=0\n";

    #[test]
    fn merges_workers_and_finds_the_idle_window() {
        let s = summary(TWO_WORKERS);
        assert_eq!(s.intervals.len(), 4);
        assert_eq!(s.jobs, 2);
        assert_eq!(
            s.idle_windows,
            vec![IdleWindow {
                start_ms: 100.0,
                end_ms: 120.0,
                job_before: "a".into(),
                job_after: "b".into(),
            }]
        );
        assert!((s.busy_fraction - 280.0 / 300.0).abs() < 1e-12);
        // Final GPU_ENDs: a at 100, b at 300; in 100–300 the GPU is busy from 120.
        assert_eq!(s_per_job(&s), Some(0.2));
        assert_eq!(s.steady.map(|s| s.busy_fraction), Some(0.9));
    }

    /// Two devices of two workers each. Device 0: a0 0–50, a2 50–100, b0 130–180 (idle 100–130).
    /// Device 1: a1 10–60, a3 70–120, b1 held twice, 120–140 and 150–170 (idle 60–70, 140–150).
    /// Merged, some device is busy from 0 to 180 without a gap.
    const TWO_DEVICES: &str = "\
        TIMELINE,0,GPU_START,a,partition=0,worker=0,device=0\n\
        TIMELINE,10,GPU_START,a,partition=1,worker=2,device=1\n\
        TIMELINE,50,GPU_END,a,partition=0,worker=0,device=0,gpu_ms=50\n\
        TIMELINE,50,GPU_START,a,partition=2,worker=1,device=0\n\
        TIMELINE,60,GPU_END,a,partition=1,worker=2,device=1,gpu_ms=50\n\
        TIMELINE,70,GPU_START,a,partition=3,worker=3,device=1\n\
        TIMELINE,100,GPU_END,a,partition=2,worker=1,device=0,gpu_ms=50\n\
        TIMELINE,120,GPU_END,a,partition=3,worker=3,device=1,gpu_ms=50\n\
        TIMELINE,120,GPU_START,b,partition=1,worker=2,device=1\n\
        TIMELINE,130,GPU_START,b,partition=0,worker=0,device=0\n\
        TIMELINE,140,GPU_END,b,partition=1,worker=2,device=1,gpu_ms=20\n\
        TIMELINE,150,GPU_START,b,partition=1,worker=2,device=1\n\
        TIMELINE,170,GPU_END,b,partition=1,worker=2,device=1,gpu_ms=20\n\
        TIMELINE,180,GPU_END,b,partition=0,worker=0,device=0,gpu_ms=50\n";

    #[test]
    fn each_device_is_measured_over_its_own_span() {
        let s = summary(TWO_DEVICES);
        assert_eq!((s.busy_fraction, s.idle_windows.len()), (1.0, 0));
        let devices = per_device(&s, &Timeline::parse(TWO_DEVICES));
        let figures: Vec<_> = devices
            .iter()
            .map(|d| {
                let total = d.gpu_ms.map(|g| g.mean * g.count as f64);
                (d.device, d.partitions, total, d.idle_windows.len())
            })
            .collect();
        assert_eq!(figures, [(0, 3, Some(150.0), 1), (1, 3, Some(140.0), 2)]);
        assert!((devices[0].busy_fraction - 150.0 / 180.0).abs() < 1e-12);
        assert!((devices[1].busy_fraction - 140.0 / 160.0).abs() < 1e-12);
        assert_eq!(
            devices[0].idle_windows,
            vec![IdleWindow {
                start_ms: 100.0,
                end_ms: 130.0,
                job_before: "a".into(),
                job_after: "b".into(),
            }]
        );
        let windows: Vec<_> = devices[1]
            .idle_windows
            .iter()
            .map(|w| (w.start_ms, w.end_ms))
            .collect();
        assert_eq!(windows, [(60.0, 70.0), (140.0, 150.0)]);
        // b1 took the device twice: one region of 40 ms.
        let medians: Vec<_> = devices.iter().map(|d| d.gpu_ms.map(|g| g.median)).collect();
        assert_eq!(medians, [Some(50.0), Some(50.0)]);
        assert!(devices
            .iter()
            .all(|d| d.faults == 0 && d.out_of_service_ms.is_none()));
    }

    /// Device faults and the end of a device's service are counted per device, a device with
    /// faults and no interval included; a failed attempt is not a partition the device ran.
    #[test]
    fn device_faults_are_counted_per_device() {
        let log = format!(
            "{TWO_DEVICES}\
            TIMELINE,190,DEVICE_FAULT,b,partition=1,worker=2,device=1,retry=1\n\
            TIMELINE,191,DEVICE_FAULT,c,partition=1,worker=2,device=1,retry=1\n\
            TIMELINE,192,DEVICE_FAULT,c,partition=2,worker=4,device=2,retry=1\n\
            TIMELINE,193,DEVICE_OUT,-,device=1\n"
        );
        let timeline = Timeline::parse(&log);
        let devices = per_device(&summarize(&timeline, 0), &timeline);
        let faults: Vec<_> = devices
            .iter()
            .map(|d| (d.device, d.faults, d.out_of_service_ms))
            .collect();
        assert_eq!(faults, [(0, 0, None), (1, 2, Some(193.0)), (2, 1, None)]);
        // b1's attempt on device 1 failed: it is not one of the partitions device 1 ran.
        let partitions: Vec<_> = devices.iter().map(|d| d.partitions).collect();
        assert_eq!(partitions, [3, 2, 0]);
    }

    /// Device 0 idles 50–90 and 140–170: nothing is ready 50–80 (starved), b is being prepared
    /// 80–90, c waits in the queue 130–160 and is prepared 160–170. Device 1 prepares d 55–75:
    /// that feeds the merged GPU, not device 0.
    #[test]
    fn idle_time_with_no_partition_ready_is_starved() {
        let log = "\
            TIMELINE,0,GPU_QUEUE,a,partition=0\n\
            TIMELINE,0,GPU_PICKUP,a,partition=0,worker=0,device=0\n\
            TIMELINE,0,GPU_START,a,partition=0,worker=0,device=0\n\
            TIMELINE,50,GPU_END,a,partition=0,worker=0,device=0\n\
            TIMELINE,55,GPU_QUEUE,d,partition=0\n\
            TIMELINE,55,GPU_PICKUP,d,partition=0,worker=2,device=1\n\
            TIMELINE,75,GPU_START,d,partition=0,worker=2,device=1\n\
            TIMELINE,80,GPU_QUEUE,b,partition=0\n\
            TIMELINE,80,GPU_PICKUP,b,partition=0,worker=1,device=0\n\
            TIMELINE,90,GPU_START,b,partition=0,worker=1,device=0\n\
            TIMELINE,100,GPU_END,d,partition=0,worker=2,device=1\n\
            TIMELINE,130,GPU_QUEUE,c,partition=0\n\
            TIMELINE,140,GPU_END,b,partition=0,worker=1,device=0\n\
            TIMELINE,160,GPU_PICKUP,c,partition=0,worker=0,device=0\n\
            TIMELINE,170,GPU_START,c,partition=0,worker=0,device=0\n\
            TIMELINE,200,GPU_END,c,partition=0,worker=0,device=0\n";
        let timeline = Timeline::parse(log);
        let gpu = summarize(&timeline, 0);
        let devices = per_device(&gpu, &timeline);
        let close = |got: Option<f64>, want: f64| got.is_some_and(|g| (g - want).abs() < 1e-12);
        assert!(close(devices[0].starved_fraction, 30.0 / 200.0));
        assert!(close(devices[1].starved_fraction, 0.0));
        // Merged, the GPU idles 50–75 and 140–170; d's preparation covers 55–75.
        assert!(close(gpu.starved_fraction, 5.0 / 200.0));
        // A log with no GPU_QUEUE cannot say.
        assert_eq!(summary(TWO_WORKERS).starved_fraction, None);
    }

    #[test]
    fn records_without_a_device_are_device_zero() {
        let s = summary(TWO_WORKERS);
        let devices = per_device(&s, &Timeline::parse(TWO_WORKERS));
        assert_eq!(devices.len(), 1);
        let d = &devices[0];
        let total = d.gpu_ms.map(|g| g.mean * g.count as f64);
        assert_eq!((d.device, d.partitions, total), (0, 4, Some(350.0)));
        assert_eq!(
            (d.busy_fraction, &d.idle_windows),
            (s.busy_fraction, &s.idle_windows)
        );
        assert!(per_device(&summary(""), &Timeline::default()).is_empty());
    }

    #[test]
    fn pickup_stands_in_for_a_missing_gpu_start() {
        let s = summary(
            "TIMELINE,5,GPU_PICKUP,x,partition=0,worker=0\n\
             TIMELINE,25,GPU_END,x,partition=0,worker=0\n\
             TIMELINE,30,GPU_PICKUP,y,partition=0,worker=0\n\
             TIMELINE,50,GPU_END,y,partition=0,worker=0\n\
             TIMELINE,60,GPU_PICKUP,z,partition=0,worker=0\n\
             TIMELINE,80,GPU_END,z,partition=0,worker=0\n",
        );
        assert_eq!(s.idle_windows.len(), 2);
        assert!((s.busy_fraction - 60.0 / 75.0).abs() < 1e-12);
        assert_eq!(s_per_job(&s), Some(0.0275));
    }

    #[test]
    fn counts_syntheses_in_flight() {
        let t = Timeline::parse(
            "TIMELINE,0,SYNTH_START,a,partition=0\n\
             TIMELINE,5,SYNTH_START,a,partition=1\n\
             TIMELINE,7,SYNTH_START,b,partition=0\n\
             TIMELINE,10,SYNTH_END,a,partition=0\n\
             TIMELINE,10,SYNTH_START,b,partition=1\n\
             TIMELINE,20,SYNTH_END,a,partition=1\n",
        );
        assert_eq!(max_synth_in_flight(&t), 3);
        // 0–5: 1, 5–7: 2, 7–10: 3, 10–20: 3 (a0 ended and b1 started at 10; b's never end).
        assert_eq!(synth_in_flight_histogram(&t), vec![0.0, 5.0, 2.0, 13.0]);
    }

    #[test]
    fn synthesis_times_by_path() {
        let t = Timeline::parse(
            "TIMELINE,1,PARTITION_STATS,a,partition=0,synth_ms=30,synthesis=recorded\n\
             TIMELINE,2,PARTITION_STATS,a,partition=1,synth_ms=12,synthesis=compiled\n\
             TIMELINE,3,PARTITION_STATS,b,partition=0,synth_ms=8,synthesis=compiled\n\
             TIMELINE,4,PARTITION_STATS,b,partition=1,synth_ms=9\n",
        );
        let by_path = synth_stats_by_path(&t);
        let summary: Vec<_> = by_path
            .iter()
            .map(|(path, s)| (path.as_str(), s.count, s.median))
            .collect();
        assert_eq!(summary, [("compiled", 2, 10.0), ("recorded", 1, 30.0)]);
    }

    #[test]
    fn balance_per_job() {
        let t = Timeline::parse(&format!(
            "TIMELINE,0,SYNTH_START,a,partition=0\nTIMELINE,30,SYNTH_END,a,partition=0\n{TWO_WORKERS}"
        ));
        let b = balance(&t);
        assert_eq!(b.len(), 2);
        assert_eq!(
            (b[0].job_id.as_str(), b[0].synth_ms, b[0].gpu_ms),
            ("a", 30.0, 120.0)
        );
        assert_eq!(
            (b[1].job_id.as_str(), b[1].synth_ms, b[1].gpu_ms),
            ("b", 0.0, 230.0)
        );
    }

    #[test]
    fn transitions_between_jobs() {
        let s = summary(TWO_WORKERS);
        let t = transitions(&s.intervals);
        assert_eq!(t.len(), 1);
        // a's ends: 60, 100 → second-to-last 60; b's first start 120; a's last (40–100) and b's
        // first (120–200) do not overlap.
        assert_eq!(
            (t[0].prev_second_last_end_ms, t[0].next_first_start_ms),
            (60.0, 120.0)
        );
        assert_eq!((t[0].delta_ms, t[0].overlap_ms), (60.0, 0.0));
    }

    #[test]
    fn empty_and_single_job_timelines() {
        let s = summary("nothing here\n");
        assert_eq!((s.jobs, s.busy_fraction, s.steady), (0, 1.0, None));
        let s = summary("TIMELINE,1,GPU_START,a,partition=0\nTIMELINE,2,GPU_END,a,partition=0\n");
        assert_eq!((s.jobs, s.busy_fraction, s.steady), (1, 1.0, None));
    }
}
