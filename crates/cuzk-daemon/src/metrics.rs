//! The daemon's Prometheus registry: one registry, every metric named here once.
//!
//! Curio's daemon's names, with its labels (`cuzk_proofs_completed_total` and
//! `cuzk_proofs_failed_total` unlabelled; `cuzk_proofs_completed`, `cuzk_proofs_failed` and
//! `cuzk_proof_duration_seconds` by `proof_kind`, valued `porep_c2`, `snap_update`,
//! `window_post`, `winning_post`; `cuzk_queue_depth`, `cuzk_running_jobs`, `cuzk_gpu_workers`,
//! `cuzk_uptime_seconds`), so its dashboards read this daemon unchanged, and ours.
//! Per-partition figures come from the engine's TIMELINE records ([`crate::sink::RecordSink`]
//! hands them over as they pass on to the log), so the engine knows nothing of Prometheus. Labels are proof kinds, circuit ids and device indices: never request ids.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use cuzk_pipeline::timeline::{key, Event, Record};
use prometheus::{
    Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    Opts, Registry, TextEncoder,
};

use crate::kinds::Kind;

/// The window over which the GPU busy fraction is measured.
const BUSY_WINDOW: Duration = Duration::from_secs(60);

/// Every metric the daemon exports.
pub struct Metrics {
    registry: Registry,
    completed_total: IntCounter,
    failed_total: IntCounter,
    completed: IntCounterVec,
    failed: IntCounterVec,
    cancelled: IntCounterVec,
    stepped_back: IntCounterVec,
    /// Seconds from submission to the result, by kind: 50 ms … ~1.9 h.
    duration: HistogramVec,
    queue_depth: IntGauge,
    running_jobs: IntGauge,
    gpu_workers: IntGauge,
    uptime: Gauge,
    /// Per partition: 1 ms … ~9 min.
    synthesis: Histogram,
    gpu: Histogram,
    gpu_busy_seconds: GaugeVec,
    gpu_busy_fraction: Gauge,
    device_faults: IntCounterVec,
    partition_retries: IntCounter,
    devices_in_service: IntGauge,
    budget_bytes: IntGauge,
    budget_in_use: IntGauge,
    warm_bytes: IntGauge,
    pinned_bytes: IntGauge,
    /// 10 ms … ~22 min (18 buckets doubling from 10 ms: the last 1,311 s).
    srs_load: HistogramVec,
    busy: Mutex<BusyWindow>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

/// Device-region intervals that ended within the last [`BUSY_WINDOW`].
#[derive(Default)]
struct BusyWindow {
    /// (end, length), oldest first.
    intervals: VecDeque<(Instant, Duration)>,
}

impl BusyWindow {
    fn add(&mut self, end: Instant, length: Duration) {
        self.intervals.push_back((end, length));
    }

    /// Busy seconds within the window ending `now`.
    fn busy(&mut self, now: Instant) -> f64 {
        let start = now.checked_sub(BUSY_WINDOW);
        while let (Some(start), Some((end, _))) = (start, self.intervals.front()) {
            if *end > start {
                break;
            }
            self.intervals.pop_front();
        }
        self.intervals
            .iter()
            .map(|(end, length)| {
                let begin = end.checked_sub(*length).unwrap_or(*end);
                let from = start.map_or(begin, |s| begin.max(s));
                end.saturating_duration_since(from).as_secs_f64()
            })
            .sum()
    }
}

fn buckets(first: f64, factor: f64, count: usize) -> Vec<f64> {
    prometheus::exponential_buckets(first, factor, count).unwrap_or_default()
}

/// The daemon state a scrape reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gauges {
    pub queue_depth: u64,
    pub running_jobs: u64,
    pub gpu_workers: u64,
    pub devices: u64,
    pub devices_in_service: u64,
    pub uptime_seconds: f64,
    pub budget_bytes: u64,
    pub budget_in_use: u64,
    pub warm_bytes: u64,
    pub pinned_bytes: u64,
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let kind = &["proof_kind"];
        let metrics = Metrics {
            registry: Registry::new(),
            completed_total: IntCounter::new("cuzk_proofs_completed_total", "Proofs completed")?,
            failed_total: IntCounter::new("cuzk_proofs_failed_total", "Proofs failed")?,
            completed: IntCounterVec::new(
                Opts::new("cuzk_proofs_completed", "Proofs completed, by kind"),
                kind,
            )?,
            failed: IntCounterVec::new(
                Opts::new("cuzk_proofs_failed", "Proofs failed, by kind"),
                kind,
            )?,
            cancelled: IntCounterVec::new(
                Opts::new("cuzk_proofs_cancelled_total", "Proofs cancelled"),
                kind,
            )?,
            stepped_back: IntCounterVec::new(
                Opts::new(
                    "cuzk_jobs_stepped_back_total",
                    "Queued jobs that gave their parameter set back to a more urgent load",
                ),
                kind,
            )?,
            duration: HistogramVec::new(
                HistogramOpts::new(
                    "cuzk_proof_duration_seconds",
                    "Seconds from submission to a completed proof",
                )
                .buckets(buckets(0.05, 2.0, 18)),
                kind,
            )?,
            queue_depth: IntGauge::new(
                "cuzk_queue_depth",
                "Jobs waiting, none of their work running",
            )?,
            running_jobs: IntGauge::new("cuzk_running_jobs", "Jobs with work running")?,
            gpu_workers: IntGauge::new("cuzk_gpu_workers", "GPU workers of the engine")?,
            uptime: Gauge::new("cuzk_uptime_seconds", "Seconds since the daemon started")?,
            synthesis: Histogram::with_opts(
                HistogramOpts::new(
                    "cuzk_partition_synthesis_seconds",
                    "Synthesis time of one partition",
                )
                .buckets(buckets(0.001, 2.0, 20)),
            )?,
            gpu: Histogram::with_opts(
                HistogramOpts::new(
                    "cuzk_partition_gpu_seconds",
                    "Device-region time of one partition",
                )
                .buckets(buckets(0.001, 2.0, 20)),
            )?,
            gpu_busy_seconds: GaugeVec::new(
                Opts::new(
                    "cuzk_gpu_busy_seconds_total",
                    "Seconds each device spent in device regions",
                ),
                &["device"],
            )?,
            gpu_busy_fraction: Gauge::new(
                "cuzk_gpu_busy_fraction",
                "Share of the last 60 s the devices spent in device regions",
            )?,
            device_faults: IntCounterVec::new(
                Opts::new(
                    "cuzk_device_faults_total",
                    "Partition attempts failed by a fault of their device",
                ),
                &["device"],
            )?,
            partition_retries: IntCounter::new(
                "cuzk_partition_retries_total",
                "Partitions retried on another device after a device fault",
            )?,
            devices_in_service: IntGauge::new(
                "cuzk_devices_in_service",
                "Devices not taken out of service after repeated faults",
            )?,
            budget_bytes: IntGauge::new(
                "cuzk_memory_budget_bytes",
                "Host bytes partitions may hold",
            )?,
            budget_in_use: IntGauge::new(
                "cuzk_memory_budget_in_use_bytes",
                "Host bytes partitions in flight hold",
            )?,
            warm_bytes: IntGauge::new(
                "cuzk_srs_warm_bytes",
                "Host bytes of loaded parameter sets",
            )?,
            pinned_bytes: IntGauge::new("cuzk_pinned_memory_bytes", "Page-locked host bytes")?,
            srs_load: HistogramVec::new(
                HistogramOpts::new(
                    "cuzk_srs_load_seconds",
                    "Seconds to load a parameter set and place it on the devices",
                )
                .buckets(buckets(0.01, 2.0, 18)),
                &["circuit_id"],
            )?,
            busy: Mutex::new(BusyWindow::default()),
        };
        let r = &metrics.registry;
        r.register(Box::new(metrics.completed_total.clone()))?;
        r.register(Box::new(metrics.failed_total.clone()))?;
        r.register(Box::new(metrics.completed.clone()))?;
        r.register(Box::new(metrics.failed.clone()))?;
        r.register(Box::new(metrics.cancelled.clone()))?;
        r.register(Box::new(metrics.stepped_back.clone()))?;
        r.register(Box::new(metrics.duration.clone()))?;
        r.register(Box::new(metrics.queue_depth.clone()))?;
        r.register(Box::new(metrics.running_jobs.clone()))?;
        r.register(Box::new(metrics.gpu_workers.clone()))?;
        r.register(Box::new(metrics.uptime.clone()))?;
        r.register(Box::new(metrics.synthesis.clone()))?;
        r.register(Box::new(metrics.gpu.clone()))?;
        r.register(Box::new(metrics.gpu_busy_seconds.clone()))?;
        r.register(Box::new(metrics.gpu_busy_fraction.clone()))?;
        r.register(Box::new(metrics.device_faults.clone()))?;
        r.register(Box::new(metrics.partition_retries.clone()))?;
        r.register(Box::new(metrics.devices_in_service.clone()))?;
        r.register(Box::new(metrics.budget_bytes.clone()))?;
        r.register(Box::new(metrics.budget_in_use.clone()))?;
        r.register(Box::new(metrics.warm_bytes.clone()))?;
        r.register(Box::new(metrics.pinned_bytes.clone()))?;
        r.register(Box::new(metrics.srs_load.clone()))?;
        for kind in crate::kinds::KINDS {
            // Every kind's series exist from the start, at zero.
            let name = kind.metric_label();
            metrics.completed.with_label_values(&[name]);
            metrics.failed.with_label_values(&[name]);
            metrics.cancelled.with_label_values(&[name]);
            metrics.stepped_back.with_label_values(&[name]);
        }
        Ok(metrics)
    }

    pub fn completed(&self, kind: Kind, seconds: f64) {
        self.completed_total.inc();
        self.completed
            .with_label_values(&[kind.metric_label()])
            .inc();
        self.duration
            .with_label_values(&[kind.metric_label()])
            .observe(seconds);
    }

    pub fn failed(&self, kind: Kind) {
        self.failed_total.inc();
        self.failed.with_label_values(&[kind.metric_label()]).inc();
    }

    pub fn cancelled(&self, kind: Kind) {
        self.cancelled
            .with_label_values(&[kind.metric_label()])
            .inc();
    }

    pub fn stepped_back(&self, kind: Kind) {
        self.stepped_back
            .with_label_values(&[kind.metric_label()])
            .inc();
    }

    pub fn srs_loaded(&self, circuit: &str, seconds: f64) {
        self.srs_load.with_label_values(&[circuit]).observe(seconds);
    }

    /// The totals a status reports.
    pub fn totals(&self) -> (u64, u64) {
        (self.completed_total.get(), self.failed_total.get())
    }

    /// Completed and failed proofs of one kind.
    pub fn by_kind(&self, kind: Kind) -> (u64, u64) {
        let label = [kind.metric_label()];
        (
            self.completed.with_label_values(&label).get(),
            self.failed.with_label_values(&label).get(),
        )
    }

    /// The exposition text, the gauges first set from `gauges`.
    pub fn render(&self, gauges: Gauges) -> String {
        let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.queue_depth.set(clamp(gauges.queue_depth));
        self.running_jobs.set(clamp(gauges.running_jobs));
        self.gpu_workers.set(clamp(gauges.gpu_workers));
        self.devices_in_service
            .set(clamp(gauges.devices_in_service));
        self.uptime.set(gauges.uptime_seconds);
        self.budget_bytes.set(clamp(gauges.budget_bytes));
        self.budget_in_use.set(clamp(gauges.budget_in_use));
        self.warm_bytes.set(clamp(gauges.warm_bytes));
        self.pinned_bytes.set(clamp(gauges.pinned_bytes));
        let busy = self
            .busy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .busy(Instant::now());
        let window = BUSY_WINDOW
            .as_secs_f64()
            .min(gauges.uptime_seconds.max(f64::MIN_POSITIVE));
        self.gpu_busy_fraction
            .set((busy / (window * gauges.devices.max(1) as f64)).min(1.0));
        TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_else(|e| format!("# encoding the metrics failed: {e}\n"))
    }

    /// Reads the records that carry per-partition figures.
    pub fn record(&self, record: &Record) {
        if record.event == Event::GpuEnd {
            if let Some(ms) = record.number(key::GPU_MS) {
                let device = record.get(key::DEVICE).unwrap_or("0");
                self.gpu_busy_seconds
                    .with_label_values(&[device])
                    .add(ms / 1e3);
                self.busy
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .add(Instant::now(), Duration::from_secs_f64(ms.max(0.0) / 1e3));
            }
        } else if record.event == Event::DeviceFault {
            let device = record.get(key::DEVICE).unwrap_or("0");
            self.device_faults.with_label_values(&[device]).inc();
            if record.get(key::RETRY) == Some("1") {
                self.partition_retries.inc();
            }
        } else if record.event == Event::PartitionStats {
            if let Some(ms) = record.number(key::SYNTH_MS) {
                self.synthesis.observe(ms / 1e3);
            }
            if let Some(ms) = record.number(key::GPU_MS) {
                self.gpu.observe(ms / 1e3);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_busy_window_counts_only_its_last_minute() {
        let mut window = BusyWindow::default();
        let now = Instant::now() + Duration::from_secs(120);
        window.add(now - Duration::from_secs(90), Duration::from_secs(10));
        window.add(now - Duration::from_secs(50), Duration::from_secs(20));
        window.add(now, Duration::from_secs(5));
        // The first ended before the window; the second straddles its start by 10 s.
        let busy = window.busy(now);
        assert!((busy - 15.0).abs() < 1e-6, "{busy}");
        assert_eq!(window.intervals.len(), 2);
    }

    #[test]
    fn curio_names_are_exported() {
        let metrics = Metrics::new().unwrap();
        metrics.completed(Kind::PoRep, 1.5);
        metrics.failed(Kind::WinningPost);
        let text = metrics.render(Gauges {
            uptime_seconds: 3.0,
            ..Gauges::default()
        });
        for name in [
            "cuzk_proofs_completed_total 1",
            "cuzk_proofs_failed_total 1",
            "cuzk_proofs_completed{proof_kind=\"porep_c2\"} 1",
            "cuzk_proofs_completed{proof_kind=\"snap_update\"} 0",
            "cuzk_proofs_failed{proof_kind=\"winning_post\"} 1",
            "cuzk_proofs_failed{proof_kind=\"window_post\"} 0",
            "cuzk_queue_depth 0",
            "cuzk_running_jobs",
            "cuzk_gpu_workers",
            "cuzk_uptime_seconds 3",
            "cuzk_proof_duration_seconds_bucket{proof_kind=\"porep_c2\"",
            "cuzk_proof_duration_seconds_count{proof_kind=\"porep_c2\"} 1",
            "cuzk_proof_duration_seconds_sum{proof_kind=\"porep_c2\"} 1.5",
            "cuzk_partition_synthesis_seconds_bucket",
            "cuzk_gpu_busy_fraction",
        ] {
            assert!(
                text.lines().any(|line| line.starts_with(name)),
                "{name} missing from\n{text}"
            );
        }
    }
}
