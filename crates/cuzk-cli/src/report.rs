//! The TIMELINE figures `cuzk bench` and `cuzk analyze` both report: the steady state after a
//! warm-up, the SRS placements apart, each partition's stage times as median and spread, each
//! device's share. They are built once as JSON and the text lines are read back from that JSON,
//! so the two commands, and each one's two forms, give the same numbers.

use cuzk_pipeline::analysis::{
    partition_figures, synth_stats_by_path, DeviceSummary, GpuSummary, Spread,
};
use cuzk_pipeline::timeline::{key, Timeline};
use serde_json::{json, Map, Value};

/// Per-partition figures in the order a partition meets them: JSON key (a TIMELINE key) and label.
const STAGES: [(&str, &str); 5] = [
    (key::SYNTH_MS, "synthesis"),
    (key::PREP_COPY_MS, "staging"),
    (key::STAGE_ABC_MS, "abc in region"),
    (key::GPU_MS, "device region"),
    (key::PROVE_START_MS, "prove_start"),
];

/// A [`Spread`] as JSON; null for no values.
pub fn spread(spread: Option<Spread>) -> Value {
    spread.map_or(Value::Null, |s| {
        json!({"count": s.count, "median": s.median, "p10": s.p10, "p90": s.p90, "mean": s.mean})
    })
}

/// `warmup_jobs`, `steady_state`, `srs_placements`, `per_partition` and `synthesis` (partitions
/// by how they were synthesized).
pub fn figures(timeline: &Timeline, gpu: &GpuSummary) -> Map<String, Value> {
    let partitions = partition_figures(timeline, gpu);
    let mut per_partition = json!({
        "over": if partitions.steady { "steady_state" } else { "whole_run" },
        "partitions": partitions.partitions,
        (key::SYNTH_MS): spread(partitions.synth_ms),
        (key::GPU_MS): spread(partitions.gpu_ms),
    });
    for (key, stage) in &partitions.stages {
        per_partition[*key] = spread(Some(*stage));
    }
    let steady = gpu.steady.as_ref().map(|s| {
        json!({
            "start_ms": s.start_ms,
            "end_ms": s.end_ms,
            "jobs": s.jobs,
            "s_per_proof": s.s_per_job,
            "gpu_busy_fraction": s.busy_fraction,
        })
    });
    let placements: Vec<Value> = gpu
        .srs_placements
        .iter()
        .map(|p| {
            json!({
                "job": p.job_id,
                "partition": p.partition,
                "device": p.device,
                "gpu_ms": p.gpu_ms,
                (key::SRS_PLACE_MS): p.place_ms,
            })
        })
        .collect();
    let synthesis: Map<String, Value> = synth_stats_by_path(timeline)
        .into_iter()
        .map(|(path, s)| {
            (
                path,
                json!({"partitions": s.count, "synth_ms_median": s.median}),
            )
        })
        .collect();
    let mut figures = Map::new();
    figures.insert("warmup_jobs".into(), gpu.warmup_jobs.into());
    figures.insert("steady_state".into(), steady.into());
    figures.insert("srs_placements".into(), placements.into());
    figures.insert("per_partition".into(), per_partition);
    figures.insert("synthesis".into(), synthesis.into());
    figures
}

/// One device's entry of the `devices` array.
pub fn device(d: &DeviceSummary) -> Map<String, Value> {
    Map::from_iter([
        ("device".into(), d.device.into()),
        ("partitions".into(), d.partitions.into()),
        ("gpu_ms".into(), spread(d.gpu_ms)),
        ("gpu_busy_fraction".into(), d.busy_fraction.into()),
        ("gpu_idle_windows".into(), d.idle_windows.len().into()),
        ("gpu_starved_fraction".into(), d.starved_fraction.into()),
        ("faults".into(), d.faults.into()),
        ("out_of_service_ms".into(), d.out_of_service_ms.into()),
    ])
}

/// "12 idle windows, 21.9% with no partition ready" of a device or a run's summary: the share
/// of the span the GPU waited for synthesis, when the log can say.
pub fn idle(figures: &Value) -> String {
    let starved = figures["gpu_starved_fraction"]
        .as_f64()
        .map_or(String::new(), |f| {
            format!(", {:.1}% with no partition ready", f * 100.0)
        });
    format!("{} idle windows{starved}", figures["gpu_idle_windows"])
}

/// ", 3 device faults, out of service at 12.3 s" for a device that had faults, else nothing.
fn faults(device: &Value) -> String {
    let count = device["faults"].as_u64().unwrap_or(0);
    let last = device["last_fault"]
        .as_str()
        .map_or(String::new(), |e| format!(" (the last: {e})"));
    let out = device["out_of_service_ms"]
        .as_f64()
        .map_or(String::new(), |ms| {
            format!(", out of service at {:.1} s", ms / 1e3)
        });
    match count {
        0 => out,
        1 => format!(", 1 device fault{out}{last}"),
        n => format!(", {n} device faults{out}{last}"),
    }
}

fn jobs(n: u64) -> String {
    if n == 1 {
        "1 job".to_owned()
    } else {
        format!("{n} jobs")
    }
}

/// The text of [`figures`]: the steady state, the SRS placements, the per-partition figures and
/// how partitions were synthesized, one line each.
pub fn lines(summary: &Value) -> Vec<String> {
    let number = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let warmup = jobs(summary["warmup_jobs"].as_u64().unwrap_or(0));
    let steady = &summary["steady_state"];
    let mut lines = vec![if steady.is_object() {
        format!(
            "  steady state   {:.3} s per proof over {}, {:.3}–{:.3} s, after a warm-up of {warmup}; GPU busy {:.1}%",
            number(&steady["s_per_proof"]),
            jobs(steady["jobs"].as_u64().unwrap_or(0)),
            number(&steady["start_ms"]) / 1e3,
            number(&steady["end_ms"]) / 1e3,
            number(&steady["gpu_busy_fraction"]) * 100.0,
        )
    } else {
        format!("  steady state   none: no job finished after a warm-up of {warmup}")
    }];
    let placements = summary["srs_placements"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    for p in placements {
        let partition = p["partition"]
            .as_u64()
            .map_or(String::new(), |k| format!(" partition {k}"));
        let device = p["device"]
            .as_u64()
            .map_or(String::new(), |d| format!(" on device {d}"));
        let region = p["gpu_ms"].as_f64().map_or(String::new(), |ms| {
            format!(" of a {ms:.1} ms device region")
        });
        lines.push(format!(
            "  SRS placement  {}{partition}{device}: {:.1} ms{region}",
            p["job"].as_str().unwrap_or("?"),
            number(&p[key::SRS_PLACE_MS]),
        ));
    }
    let per_partition = &summary["per_partition"];
    let measured = per_partition["partitions"].as_u64().unwrap_or(0);
    let apart = if placements.is_empty() {
        ""
    } else {
        ", SRS placements apart"
    };
    lines.push(if per_partition["over"] == "steady_state" {
        format!("  partitions     {measured} picked up for the GPU in the steady state{apart}:")
    } else {
        format!("  partitions     all {measured} (no steady state){apart}:")
    });
    for (key, label) in STAGES {
        let s = &per_partition[key];
        if s.is_object() {
            lines.push(format!(
                "  {label:<15}{:.1} ms median, p10 {:.1}, p90 {:.1}, {} partitions",
                number(&s["median"]),
                number(&s["p10"]),
                number(&s["p90"]),
                s["count"],
            ));
        }
    }
    if let Some(paths) = summary["synthesis"].as_object().filter(|p| !p.is_empty()) {
        let each: Vec<String> = paths
            .iter()
            .map(|(path, figures)| {
                let median = number(&figures["synth_ms_median"]);
                format!("{} {path} ({median:.1} ms median)", figures["partitions"])
            })
            .collect();
        lines.push(format!("  synthesized    {}", each.join(", ")));
    }
    lines
}

/// One line per device when there are several, so one device idling behind another shows.
pub fn device_lines(summary: &Value) -> Vec<String> {
    let devices = summary["devices"].as_array().map_or(&[][..], Vec::as_slice);
    if devices.len() < 2 {
        return Vec::new();
    }
    devices
        .iter()
        .map(|device| {
            let label = format!("device {}", device["device"]);
            let name = device["backend"]
                .as_str()
                .map_or(String::new(), |name| format!("{name}: "));
            if device["partitions"].as_u64().unwrap_or(0) == 0 {
                return format!("  {label:<15}{name}no partitions{}", faults(device));
            }
            // None when its only partitions placed the SRS.
            let region = device["gpu_ms"]["median"]
                .as_f64()
                .map_or(String::new(), |ms| {
                    format!(", {ms:.1} ms median device region")
                });
            format!(
                "  {label:<15}{name}{} partitions, busy {:.1}% of its own span ({}){region}{}",
                device["partitions"],
                device["gpu_busy_fraction"].as_f64().unwrap_or(f64::NAN) * 100.0,
                idle(device),
                faults(device),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use cuzk_pipeline::analysis::{summarize, STAGE_KEYS};

    use super::*;

    #[test]
    fn every_stage_key_has_a_label() {
        for key in STAGE_KEYS {
            assert!(STAGES.iter().any(|(k, _)| *k == key), "{key}");
        }
    }

    /// Three jobs of two partitions, one after another: job0's partition 0 places the SRS in a
    /// 500 ms device region, every other region takes 70 ms.
    const SLOW_FIRST: &str = "\
        TIMELINE,0,GPU_START,job0,partition=0,device=0\n\
        TIMELINE,500,GPU_END,job0,partition=0,device=0\n\
        TIMELINE,500,PARTITION_STATS,job0,partition=0,synth_ms=40,synthesis=recorded,prep_copy_ms=9,srs_place_ms=420\n\
        TIMELINE,500,GPU_START,job0,partition=1,device=0\n\
        TIMELINE,570,GPU_END,job0,partition=1,device=0\n\
        TIMELINE,570,PARTITION_STATS,job0,partition=1,synth_ms=20,synthesis=compiled,prep_copy_ms=7\n\
        TIMELINE,570,GPU_START,job1,partition=0,device=0\n\
        TIMELINE,640,GPU_END,job1,partition=0,device=0\n\
        TIMELINE,640,PARTITION_STATS,job1,partition=0,synth_ms=20,synthesis=compiled,prep_copy_ms=7\n\
        TIMELINE,640,GPU_START,job1,partition=1,device=0\n\
        TIMELINE,710,GPU_END,job1,partition=1,device=0\n\
        TIMELINE,710,PARTITION_STATS,job1,partition=1,synth_ms=20,synthesis=compiled,prep_copy_ms=7\n\
        TIMELINE,710,GPU_START,job2,partition=0,device=0\n\
        TIMELINE,780,GPU_END,job2,partition=0,device=0\n\
        TIMELINE,780,PARTITION_STATS,job2,partition=0,synth_ms=20,synthesis=compiled,prep_copy_ms=8\n\
        TIMELINE,780,GPU_START,job2,partition=1,device=0\n\
        TIMELINE,850,GPU_END,job2,partition=1,device=0\n\
        TIMELINE,850,PARTITION_STATS,job2,partition=1,synth_ms=20,synthesis=compiled,prep_copy_ms=7\n";

    fn text(log: &str, warmup: usize) -> Vec<String> {
        let timeline = Timeline::parse(log);
        lines(&Value::Object(figures(
            &timeline,
            &summarize(&timeline, warmup),
        )))
    }

    #[test]
    fn the_slow_first_partition_is_reported_apart() {
        assert_eq!(
            text(SLOW_FIRST, 1),
            [
                "  steady state   0.140 s per proof over 2 jobs, 0.570–0.850 s, after a warm-up of 1 job; GPU busy 100.0%",
                "  SRS placement  job0 partition 0 on device 0: 420.0 ms of a 500.0 ms device region",
                "  partitions     4 picked up for the GPU in the steady state, SRS placements apart:",
                "  staging        7.0 ms median, p10 7.0, p90 7.7, 4 partitions",
                "  device region  70.0 ms median, p10 70.0, p90 70.0, 4 partitions",
                "  synthesized    5 compiled (20.0 ms median), 1 recorded (40.0 ms median)",
            ]
        );
        let whole_run = text(SLOW_FIRST, 3);
        assert_eq!(
            whole_run[0],
            "  steady state   none: no job finished after a warm-up of 3 jobs"
        );
        assert_eq!(
            whole_run[2..4],
            [
                "  partitions     all 5 (no steady state), SRS placements apart:",
                "  staging        7.0 ms median, p10 7.0, p90 7.6, 5 partitions",
            ]
        );
    }

    fn gpu(index: usize, busy: f64, windows: usize, gpu_ms: f64) -> Value {
        json!({
            "device": index,
            "backend": format!("cuda:{index} (NVIDIA H200)"),
            "partitions": 20,
            "gpu_ms": {"count": 19, "median": gpu_ms, "p10": gpu_ms, "p90": gpu_ms, "mean": gpu_ms},
            "gpu_busy_fraction": busy,
            "gpu_idle_windows": windows,
        })
    }

    #[test]
    fn several_devices_get_a_line_each() {
        let one = json!({"devices": [{"device": 0, "backend": "cpu"}]});
        assert!(device_lines(&one).is_empty());
        let dead = json!({
            "device": 2, "backend": "cuda:2 (NVIDIA H200)", "partitions": 0,
            "faults": 3, "out_of_service_ms": 1234.5,
        });
        let mut faulty = gpu(1, 0.94, 0, 71.0);
        faulty["faults"] = json!(1);
        let mut starved = gpu(0, 0.951, 1, 70.04);
        starved["gpu_starved_fraction"] = json!(0.0412);
        let three = json!({
            "devices": [starved, faulty, dead],
        });
        assert_eq!(
            device_lines(&three),
            [
                "  device 0       cuda:0 (NVIDIA H200): 20 partitions, busy 95.1% of its own span (1 idle windows, 4.1% with no partition ready), 70.0 ms median device region",
                "  device 1       cuda:1 (NVIDIA H200): 20 partitions, busy 94.0% of its own span (0 idle windows), 71.0 ms median device region, 1 device fault",
                "  device 2       cuda:2 (NVIDIA H200): no partitions, 3 device faults, out of service at 1.2 s",
            ]
        );
    }
}
