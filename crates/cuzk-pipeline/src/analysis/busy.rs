//! When the GPU and synthesis were busy: intervals paired from their records, merged into busy
//! stretches and idle windows, the idle time no partition was ready for, syntheses in flight, and
//! how one job handed the GPU to the next.

use std::collections::HashMap;

use crate::timeline::{Event, EventName, Record, Timeline};

/// A partition of a job, as TIMELINE records name it.
pub(super) type PartitionKey<'a> = (&'a str, Option<u32>);

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
pub(super) fn merge(intervals: &[Span]) -> (Vec<IdleWindow>, f64) {
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
pub(super) fn fraction(busy_ms: f64, window_ms: f64) -> f64 {
    if window_ms > 0.0 {
        busy_ms / window_ms
    } else {
        1.0
    }
}

/// Intervals sorted by start, merged: the gaps and the busy fraction over [first start, last end]
/// (1.0 for a single instant or none).
pub(super) fn busy_over_extent(intervals: &[Span]) -> (Vec<IdleWindow>, f64) {
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
