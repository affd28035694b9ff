use super::*;
use crate::timeline::{Event, Timeline};

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

/// A warm-up that waits for a retried partition ends after most of the next job: the steady
/// state counts only the share of that job proven after it.
#[test]
fn a_job_partly_proven_before_the_warm_up_ended_counts_that_much_less() {
    let s = summary(
        "TIMELINE,0,GPU_START,a,partition=0,worker=0\n\
         TIMELINE,100,GPU_END,a,partition=0,worker=0\n\
         TIMELINE,100,GPU_START,a,partition=1,worker=0\n\
         TIMELINE,110,DEVICE_FAULT,a,partition=1,worker=0,retry=1\n\
         TIMELINE,110,GPU_END,a,partition=1,worker=0\n\
         TIMELINE,110,GPU_START,b,partition=0,worker=0\n\
         TIMELINE,210,GPU_END,b,partition=0,worker=0\n\
         TIMELINE,210,GPU_START,b,partition=1,worker=0\n\
         TIMELINE,310,GPU_END,b,partition=1,worker=0\n\
         TIMELINE,310,GPU_START,b,partition=2,worker=0\n\
         TIMELINE,410,GPU_END,b,partition=2,worker=0\n\
         TIMELINE,410,GPU_START,a,partition=1,worker=0\n\
         TIMELINE,510,GPU_END,a,partition=1,worker=0\n\
         TIMELINE,510,GPU_START,b,partition=3,worker=0\n\
         TIMELINE,610,GPU_END,b,partition=3,worker=0\n",
    );
    let steady = s.steady.clone();
    assert_eq!(
        steady.map(|s| (s.start_ms, s.end_ms, s.jobs)),
        Some((510.0, 610.0, 1))
    );
    // One of b's four partitions in 0.1 s: 0.4 s a job, not 0.1.
    assert_eq!(s_per_job(&s), Some(0.4));
}

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
