//! A timeline as an SVG Gantt chart: one lane per synthesis slot and per GPU worker, one colour per
//! job, so a person sees at a glance where the GPU waited and whether synthesis kept up.

use std::fmt::Write;

use crate::analysis::{gpu_intervals, synth_intervals, Span};
use crate::timeline::Timeline;

const LABEL_W: f64 = 90.0;
const PLOT_W: f64 = 1200.0;
const LANE_H: f64 = 18.0;
const TOP: f64 = 24.0;

/// Packs spans into lanes: a span goes to its worker's lane when it names one, otherwise to the
/// first lane that is free by its start.
fn lanes(spans: &[Span], by_worker: bool) -> Vec<Vec<&Span>> {
    let mut lanes: Vec<Vec<&Span>> = Vec::new();
    for span in spans {
        let lane = match span.worker.filter(|_| by_worker) {
            Some(w) => w as usize,
            None => lanes
                .iter()
                .position(|l| l.last().is_none_or(|last| last.end_ms <= span.start_ms))
                .unwrap_or(lanes.len()),
        };
        if lanes.len() <= lane {
            lanes.resize_with(lane + 1, Vec::new);
        }
        lanes[lane].push(span);
    }
    lanes
}

/// Well-separated hues for consecutive jobs (golden-angle steps).
fn colour(job: usize) -> String {
    format!("hsl({:.0},60%,55%)", (job as f64 * 137.508) % 360.0)
}

/// The chart as an SVG document.
pub fn svg(timeline: &Timeline) -> String {
    let gpu = gpu_intervals(timeline);
    let synth = synth_intervals(timeline);
    let mut jobs: Vec<&str> = Vec::new();
    for span in synth.iter().chain(&gpu) {
        if !jobs.contains(&span.job_id.as_str()) {
            jobs.push(&span.job_id);
        }
    }
    let (t0, t1) = synth
        .iter()
        .chain(&gpu)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
            (lo.min(s.start_ms), hi.max(s.end_ms))
        });
    let span_ms = if t1 > t0 { t1 - t0 } else { 1.0 };
    let x = |t: f64| LABEL_W + (t - t0) / span_ms * PLOT_W;
    let rows: Vec<(String, Vec<&Span>)> = lanes(&synth, false)
        .into_iter()
        .enumerate()
        .map(|(i, l)| (format!("synth {i}"), l))
        .chain(
            lanes(&gpu, true)
                .into_iter()
                .enumerate()
                .map(|(i, l)| (format!("GPU {i}"), l)),
        )
        .collect();
    let height = TOP + LANE_H * rows.len() as f64 + 24.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" font-family="sans-serif" font-size="11">"#,
        w = LABEL_W + PLOT_W + 20.0
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    // Legend: one swatch per job, across the top.
    for (job, name) in jobs.iter().enumerate() {
        let lx = LABEL_W + 110.0 * job as f64;
        let _ = writeln!(
            out,
            r#"<rect x="{lx}" y="4" width="10" height="10" fill="{}"/><text x="{}" y="13">{name}</text>"#,
            colour(job),
            lx + 14.0
        );
    }
    for (lane, (label, spans)) in rows.iter().enumerate() {
        let y = TOP + LANE_H * lane as f64;
        let _ = writeln!(out, r#"<text x="4" y="{}">{label}</text>"#, y + 13.0);
        for s in spans {
            let job = jobs.iter().position(|j| *j == s.job_id).unwrap_or(0);
            let _ = writeln!(
                out,
                r#"<rect x="{:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="{}" stroke="black" stroke-width="0.3"><title>{} p{} {:.1}–{:.1} ms</title></rect>"#,
                x(s.start_ms),
                y + 2.0,
                (x(s.end_ms) - x(s.start_ms)).max(0.5),
                LANE_H - 4.0,
                colour(job),
                s.job_id,
                s.partition.map_or("?".into(), |p| p.to_string()),
                s.start_ms,
                s.end_ms
            );
        }
    }
    let axis_y = TOP + LANE_H * rows.len() as f64 + 14.0;
    for k in 0..=4 {
        let t = t0 + span_ms * f64::from(k) / 4.0;
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{axis_y}" text-anchor="middle">{:.2} s</text>"#,
            x(t),
            (t - t0) / 1000.0
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lane_per_synthesis_slot_and_gpu_worker() {
        let t = Timeline::parse(
            "TIMELINE,0,SYNTH_START,a,partition=0\n\
             TIMELINE,0,SYNTH_START,a,partition=1\n\
             TIMELINE,50,SYNTH_END,a,partition=0\n\
             TIMELINE,60,SYNTH_END,a,partition=1\n\
             TIMELINE,55,SYNTH_START,b,partition=0\n\
             TIMELINE,90,SYNTH_END,b,partition=0\n\
             TIMELINE,50,GPU_START,a,partition=0,worker=0\n\
             TIMELINE,70,GPU_END,a,partition=0,worker=0\n\
             TIMELINE,60,GPU_START,a,partition=1,worker=1\n\
             TIMELINE,80,GPU_END,a,partition=1,worker=1\n",
        );
        let svg = svg(&t);
        for label in ["synth 0", "synth 1", "GPU 0", "GPU 1"] {
            assert!(svg.contains(&format!(">{label}<")), "{label}");
        }
        assert!(
            !svg.contains(">synth 2<"),
            "b's synthesis reuses a free slot"
        );
        // Background, two legend swatches and five spans.
        assert_eq!(svg.matches("<rect").count(), 8);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    }
}
