//! `cuzk analyze`: what a TIMELINE log (ours or the public engine's) says about the GPU, with the
//! figures `cuzk bench` reports (the steady state after its default warm-up of one job).

use anyhow::{Context, Result};
use cuzk_pipeline::analysis::{
    balance, max_synth_in_flight, per_device, summarize, synth_in_flight_histogram, transitions,
    DEFAULT_WARMUP_JOBS,
};
use cuzk_pipeline::timeline::Timeline;
use serde_json::{json, Value};

use crate::args::{AnalyzeArgs, GlobalArgs};
use crate::{report, Outcome};

pub fn run(global: &GlobalArgs, args: AnalyzeArgs) -> Result<Outcome> {
    let log = std::fs::read_to_string(&args.timeline)
        .with_context(|| format!("reading {}", args.timeline.display()))?;
    let timeline = Timeline::parse(&log);
    let gpu = summarize(&timeline, DEFAULT_WARMUP_JOBS);
    let in_flight = max_synth_in_flight(&timeline);
    let histogram = synth_in_flight_histogram(&timeline);
    let handoffs = transitions(&gpu.intervals);
    let per_job = balance(&timeline);
    if let Some(path) = &args.svg {
        super::write_output(path, cuzk_pipeline::gantt::svg(&timeline).as_bytes())?;
    }
    let windows: Vec<_> = gpu
        .idle_windows
        .iter()
        .map(|w| {
            json!({
                "start_ms": w.start_ms,
                "end_ms": w.end_ms,
                "length_ms": w.length_ms(),
                "job_before": w.job_before,
                "job_after": w.job_after,
            })
        })
        .collect();
    let mut summary = json!({
                "gpu_busy_fraction": gpu.busy_fraction,
                "gpu_idle_windows": windows,
                "gpu_starved_fraction": gpu.starved_fraction,
                "steady_state_s_per_job": gpu.steady.as_ref().map(|s| s.s_per_job),
                "max_synth_in_flight": in_flight,
                "synth_in_flight_ms": histogram,
                "balance": per_job.iter().map(|j| json!({
                    "job": j.job_id, "synth_ms": j.synth_ms, "gpu_ms": j.gpu_ms,
                })).collect::<Vec<_>>(),
                "transitions": handoffs.iter().map(|t| json!({
                    "from_job": t.from_job,
                    "to_job": t.to_job,
                    "prev_second_last_gpu_end_ms": t.prev_second_last_end_ms,
                    "next_first_gpu_start_ms": t.next_first_start_ms,
                    "delta_ms": t.delta_ms,
                    "overlap_ms": t.overlap_ms,
                })).collect::<Vec<_>>(),
                "devices": per_device(&gpu, &timeline).iter().map(report::device).collect::<Vec<_>>(),
                "jobs": gpu.jobs,
                "partitions": gpu.intervals.len(),
                "malformed_lines": timeline.malformed,
    });
    if let Value::Object(fields) = &mut summary {
        fields.extend(report::figures(&timeline, &gpu));
    }
    if global.json {
        outln!("{summary}");
        return Ok(Outcome::Success);
    }
    outln!(
        "{}: {} TIMELINE records",
        args.timeline.display(),
        timeline.records.len()
    );
    if timeline.malformed > 0 {
        outln!("  {} malformed TIMELINE lines skipped", timeline.malformed);
    }
    outln!(
        "  jobs {}, partitions on the GPU {}",
        gpu.jobs,
        gpu.intervals.len()
    );
    let starved = gpu.starved_fraction.map_or(String::new(), |f| {
        format!("; idle with no partition ready {:.1}%", f * 100.0)
    });
    outln!(
        "  GPU busy {:.1}% of [first GPU start, last GPU end]{starved}",
        gpu.busy_fraction * 100.0
    );
    for line in report::device_lines(&summary)
        .into_iter()
        .chain(report::lines(&summary))
    {
        outln!("{line}");
    }
    outln!("  syntheses in flight: at most {in_flight}");
    for (k, ms) in histogram.iter().enumerate().filter(|(_, ms)| **ms > 0.0) {
        outln!("    {k:>3} in flight for {ms:>10.1} ms");
    }
    for j in &per_job {
        outln!(
            "  {}: synthesis {:.1} ms, GPU {:.1} ms (synthesis/GPU {:.2})",
            j.job_id,
            j.synth_ms,
            j.gpu_ms,
            if j.gpu_ms > 0.0 {
                j.synth_ms / j.gpu_ms
            } else {
                f64::INFINITY
            }
        );
    }
    for t in &handoffs {
        outln!(
            "  {} → {}: second-to-last GPU_END {:.1}, first GPU_START {:.1}, delta {:.1} ms, overlap {:.1} ms",
            t.from_job,
            t.to_job,
            t.prev_second_last_end_ms,
            t.next_first_start_ms,
            t.delta_ms,
            t.overlap_ms
        );
    }
    outln!("  idle windows: {}", gpu.idle_windows.len());
    for w in &gpu.idle_windows {
        outln!(
            "    {:>10.1} – {:>10.1} ms  {:>8.1} ms  after {} before {}",
            w.start_ms,
            w.end_ms,
            w.length_ms(),
            w.job_before,
            w.job_after
        );
    }
    Ok(Outcome::Success)
}
