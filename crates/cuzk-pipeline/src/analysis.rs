//! What a TIMELINE says about the GPU: its busy intervals merged over all workers, the idle
//! windows between them, the busy fraction and the steady-state time per job; the same per device
//! for multi-GPU runs, where the merged view would hide one device idling behind another.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::timeline::{Record, Timeline};

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
    /// (last job's final GPU_END − first job's final GPU_END) / (jobs − 1), in seconds.
    pub steady_state_s_per_job: Option<f64>,
    pub jobs: usize,
}

/// Pairs each `closing` record with the latest earlier unmatched `opening` record of the same job
/// and partition; closings without an opening are dropped. Sorted by start.
fn pair(timeline: &Timeline, opening: &str, closing: &str) -> Vec<Span> {
    let mut open: HashMap<(&str, Option<u32>), Vec<f64>> = HashMap::new();
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
        worker: end.get("worker").and_then(|w| w.parse().ok()),
        device: end.get("device").and_then(|d| d.parse().ok()),
        start_ms,
        end_ms: end.ms,
    }
}

/// Partitions on the GPU, falling back to GPU_PICKUP for logs with no GPU_START.
pub fn gpu_intervals(timeline: &Timeline) -> Vec<Span> {
    let has_start = timeline.records.iter().any(|r| r.event == "GPU_START");
    pair(
        timeline,
        if has_start { "GPU_START" } else { "GPU_PICKUP" },
        "GPU_END",
    )
}

/// Partitions in synthesis.
pub fn synth_intervals(timeline: &Timeline) -> Vec<Span> {
    pair(timeline, "SYNTH_START", "SYNTH_END")
}

/// Busy stretches of intervals sorted by start: the gaps between stretches and the busy fraction
/// over [first start, last end] (1.0 for a single instant or none).
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
    let span_ms = match (
        intervals.first(),
        intervals.iter().map(|i| i.end_ms).reduce(f64::max),
    ) {
        (Some(first), Some(last)) => last - first.start_ms,
        _ => 0.0,
    };
    let busy_fraction = if span_ms > 0.0 {
        busy_ms / span_ms
    } else {
        1.0
    };
    (idle_windows, busy_fraction)
}

/// Merges the intervals of all workers, of all devices, and measures the gaps.
pub fn summarize(timeline: &Timeline) -> GpuSummary {
    let intervals = gpu_intervals(timeline);
    let (idle_windows, busy_fraction) = merge(&intervals);

    let mut final_end: HashMap<&str, f64> = HashMap::new();
    for iv in &intervals {
        let end = final_end.entry(iv.job_id.as_str()).or_insert(iv.end_ms);
        *end = end.max(iv.end_ms);
    }
    let mut finals: Vec<f64> = final_end.values().copied().collect();
    finals.sort_by(f64::total_cmp);
    let steady_state_s_per_job = match finals.as_slice() {
        [first, .., last] => Some((last - first) / (finals.len() - 1) as f64 / 1000.0),
        _ => None,
    };
    GpuSummary {
        jobs: finals.len(),
        intervals,
        idle_windows,
        busy_fraction,
        steady_state_s_per_job,
    }
}

/// One device's share of the GPU side, measured over its own [first start, last end] so a device
/// that started late or finished early is not counted idle for the others' time.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSummary {
    /// `device=D` of its records; records without it count as device 0.
    pub device: u32,
    /// Distinct (job, partition) pairs it ran.
    pub partitions: usize,
    /// Total time in its device regions.
    pub gpu_ms: f64,
    pub busy_fraction: f64,
    pub idle_windows: Vec<IdleWindow>,
}

impl DeviceSummary {
    /// Device-region time per partition (a backend may take the device more than once each).
    pub fn gpu_ms_per_partition(&self) -> Option<f64> {
        (self.partitions > 0).then(|| self.gpu_ms / self.partitions as f64)
    }
}

/// Every device seen in `intervals` (as [`gpu_intervals`] returns them), by device number.
pub fn per_device(intervals: &[Span]) -> Vec<DeviceSummary> {
    let mut devices: BTreeMap<u32, Vec<Span>> = BTreeMap::new();
    for iv in intervals {
        let device = devices.entry(iv.device.unwrap_or(0)).or_default();
        device.push(iv.clone());
    }
    devices
        .into_iter()
        .map(|(device, mut spans)| {
            spans.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
            let (idle_windows, busy_fraction) = merge(&spans);
            let partitions: HashSet<(&str, Option<u32>)> = spans
                .iter()
                .map(|s| (s.job_id.as_str(), s.partition))
                .collect();
            DeviceSummary {
                device,
                partitions: partitions.len(),
                gpu_ms: spans.iter().map(|s| s.end_ms - s.start_ms).sum(),
                busy_fraction,
                idle_windows,
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

/// Synthesis durations (SYNTH_START to SYNTH_END of the same job and partition), in ms.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SynthStats {
    pub count: usize,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
}

impl SynthStats {
    fn of(durations: &[f64]) -> Self {
        if durations.is_empty() {
            return SynthStats::default();
        }
        SynthStats {
            count: durations.len(),
            min_ms: durations.iter().copied().fold(f64::INFINITY, f64::min),
            mean_ms: durations.iter().sum::<f64>() / durations.len() as f64,
            max_ms: durations.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

pub fn synth_stats(timeline: &Timeline) -> SynthStats {
    let durations: Vec<f64> = synth_intervals(timeline)
        .iter()
        .map(|s| s.end_ms - s.start_ms)
        .collect();
    SynthStats::of(&durations)
}

/// Synthesis durations of finished partitions (their PARTITION_STATS' synth_ms) by how they were
/// synthesized (`synthesis=`: direct, recorded, compiled); empty for logs that do not say.
pub fn synth_stats_by_path(timeline: &Timeline) -> BTreeMap<String, SynthStats> {
    let mut durations: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for record in timeline
        .records
        .iter()
        .filter(|r| r.event == "PARTITION_STATS")
    {
        let (Some(path), Some(ms)) = (record.get("synthesis"), record.get("synth_ms")) else {
            continue;
        };
        if let Ok(ms) = ms.parse() {
            durations.entry(path.to_owned()).or_default().push(ms);
        }
    }
    durations
        .into_iter()
        .map(|(path, ms)| (path, SynthStats::of(&ms)))
        .collect()
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
        .filter_map(|r| match r.event.as_str() {
            "SYNTH_START" => Some((r.ms, 1)),
            "SYNTH_END" => Some((r.ms, -1)),
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
        summarize(&Timeline::parse(log))
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
        // Final GPU_ENDs: a at 100, b at 300.
        assert_eq!(s.steady_state_s_per_job, Some(0.2));
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
        let devices = per_device(&s.intervals);
        let figures: Vec<_> = devices
            .iter()
            .map(|d| (d.device, d.partitions, d.gpu_ms, d.idle_windows.len()))
            .collect();
        assert_eq!(figures, [(0, 3, 150.0, 1), (1, 3, 140.0, 2)]);
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
        assert_eq!(devices[0].gpu_ms_per_partition(), Some(50.0));
    }

    #[test]
    fn records_without_a_device_are_device_zero() {
        let s = summary(TWO_WORKERS);
        let devices = per_device(&s.intervals);
        assert_eq!(devices.len(), 1);
        let d = &devices[0];
        assert_eq!((d.device, d.partitions, d.gpu_ms), (0, 4, 350.0));
        assert_eq!(
            (d.busy_fraction, &d.idle_windows),
            (s.busy_fraction, &s.idle_windows)
        );
        assert!(per_device(&[]).is_empty());
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
        assert_eq!(s.steady_state_s_per_job, Some(0.0275));
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
        let stats = synth_stats(&t);
        assert_eq!((stats.count, stats.min_ms, stats.max_ms), (2, 10.0, 15.0));
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
            .map(|(path, s)| (path.as_str(), s.count, s.mean_ms))
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
        assert_eq!(
            (s.jobs, s.busy_fraction, s.steady_state_s_per_job),
            (0, 1.0, None)
        );
        let s = summary("TIMELINE,1,GPU_START,a,partition=0\nTIMELINE,2,GPU_END,a,partition=0\n");
        assert_eq!(
            (s.jobs, s.busy_fraction, s.steady_state_s_per_job),
            (1, 1.0, None)
        );
    }
}
