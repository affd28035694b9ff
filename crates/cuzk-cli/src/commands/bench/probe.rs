//! `cuzk bench --probe FILE`: a latency-critical PoSt (a WinningPoSt, say) proven at CRITICAL
//! priority, first on the idle engine, then again and again while the bench's load keeps it busy.
//! What Curio's WinningPoSt waits for behind a queue of PoRep sectors, against its quiet latency.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use cuzk_groth16::setup::Multiplier;
use cuzk_groth16::Parameters;
use cuzk_pipeline::analysis::Spread;
use cuzk_pipeline::engine::HostPlan;
use cuzk_pipeline::timeline::Timeline;
use cuzk_pipeline::{Engine, JobTimings, Priority};
use serde_json::{json, Value};

use super::Workload;
use crate::args::BenchArgs;
use crate::progress::Progress;
use crate::report;

/// Probes on the idle engine, after one that places the parameters on the device.
pub const QUIET_PROBES: usize = 5;

/// The job ids of probes start with this; the load's do not.
const PROBE_ID: &str = "probe";

/// The probe request and what proves it.
pub struct Probe {
    workload: Workload,
    params: Arc<Parameters>,
    interval: Duration,
}

/// One probe's latency, from building its request (its vanilla proofs checked, as the daemon does
/// for each request) to its verified proof, and the engine's account of where it went.
struct Sample {
    total_ms: f64,
    timings: JobTimings,
}

/// The probes of one run: alone, and under load.
pub struct Samples {
    quiet: Vec<Sample>,
    loaded: Vec<Sample>,
}

impl Probe {
    /// The probe `args` ask for, its parameters loaded; none without --probe.
    pub fn from_args(args: &BenchArgs, progress: Progress) -> Result<Option<Self>> {
        let Some(source) = &args.probe else {
            return Ok(None);
        };
        let workload = Workload::post(source, args).context("--probe")?;
        let params = Arc::new(
            workload
                .params(progress, &Multiplier::Cpu)
                .context("--probe")?,
        );
        Ok(Some(Probe {
            workload,
            params,
            interval: Duration::from_millis(args.probe_interval_ms),
        }))
    }

    /// What its parameter set and compiled R1CS hold beside the load's.
    pub fn host_plan(&self) -> HostPlan {
        self.workload.host_plan(&self.params, &[], 0)
    }

    /// Probe `n`, start to finish.
    async fn once(&self, engine: &Engine, n: usize) -> Result<Sample> {
        let start = Instant::now();
        let request = self
            .workload
            .job(format!("{PROBE_ID}{n}"), 1, &self.params)?
            .with_priority(Priority::Critical);
        let output = engine
            .submit(request)
            .wait()
            .await
            .with_context(|| format!("probe {n}"))?;
        Ok(Sample {
            total_ms: start.elapsed().as_secs_f64() * 1e3,
            timings: output.timings,
        })
    }

    /// Runs `load` (whose jobs count themselves in `finished`) with the probes around it:
    /// one to place the parameters, [`QUIET_PROBES`] on the idle engine, then one every interval
    /// (after the previous one finished) from the end of the load's warm-up (`warmup` of its
    /// `jobs` finished) until its last job finishes.
    pub async fn around(
        &self,
        engine: &Engine,
        load: impl Future<Output = Result<()>>,
        finished: &AtomicUsize,
        warmup: usize,
        jobs: usize,
    ) -> Result<Samples> {
        self.once(engine, 0).await?;
        let mut quiet = Vec::with_capacity(QUIET_PROBES);
        for n in 1..=QUIET_PROBES {
            quiet.push(self.once(engine, n).await?);
        }
        let loaded = async {
            let mut samples = Vec::new();
            loop {
                let done = finished.load(Ordering::Acquire);
                if done >= jobs {
                    return anyhow::Ok(samples);
                }
                if done >= warmup.min(jobs.saturating_sub(1)) {
                    let n = QUIET_PROBES + 1 + samples.len();
                    samples.push(self.once(engine, n).await?);
                }
                tokio::time::sleep(self.interval).await;
            }
        };
        let (load, loaded) = tokio::join!(load, loaded);
        load?;
        Ok(Samples {
            quiet,
            loaded: loaded?,
        })
    }

    /// The probes' figures: latency alone and under load, and where the loaded ones waited.
    pub fn summary(&self, samples: &Samples) -> Value {
        let spread = |samples: &[Sample], f: fn(&Sample) -> f64| {
            Spread::of(&samples.iter().map(f).collect::<Vec<_>>())
        };
        let quiet = spread(&samples.quiet, |s| s.total_ms);
        let loaded = spread(&samples.loaded, |s| s.total_ms);
        let loaded_stage = |f: fn(&Sample) -> f64| report::spread(spread(&samples.loaded, f));
        json!({
            "request": self.workload.describe(),
            "priority": "CRITICAL",
            "interval_ms": self.interval.as_secs_f64() * 1e3,
            "quiet_ms": report::spread(quiet),
            "loaded_ms": report::spread(loaded),
            "loaded_over_quiet": quiet.zip(loaded).map(|(q, l)| l.median / q.median),
            "loaded_queue_wait_ms": loaded_stage(|s| s.timings.queue_wait_ms),
            "loaded_synthesis_ms": loaded_stage(|s| s.timings.synthesis_ms),
            "loaded_gpu_wait_ms": loaded_stage(|s| s.timings.gpu_wait_ms),
            "loaded_gpu_ms": loaded_stage(|s| s.timings.gpu_ms),
            "loaded_finalize_ms": loaded_stage(|s| s.timings.finalize_ms),
        })
    }
}

/// The load's records alone: the bench's figures are the load's.
pub fn without_probes(mut timeline: Timeline) -> Timeline {
    timeline.records.retain(|r| !r.job_id.starts_with(PROBE_ID));
    timeline
}

/// The probe's line of the text report.
pub fn line(probe: &Value) -> String {
    let ms = |key: &str, figure: &str| probe[key][figure].as_f64().unwrap_or(f64::NAN);
    format!(
        "  probe          {} at CRITICAL: {:.1} ms median alone, {:.1} ms under load \
         (p90 {:.1}, {} probes; {:.2}× alone), medians under load: queued {:.1}, synthesis {:.1}, \
         waiting for the device {:.1}, device region {:.1}, epilogue {:.1} ms",
        probe["request"].as_str().unwrap_or("?"),
        ms("quiet_ms", "median"),
        ms("loaded_ms", "median"),
        ms("loaded_ms", "p90"),
        probe["loaded_ms"]["count"],
        probe["loaded_over_quiet"].as_f64().unwrap_or(f64::NAN),
        ms("loaded_queue_wait_ms", "median"),
        ms("loaded_synthesis_ms", "median"),
        ms("loaded_gpu_wait_ms", "median"),
        ms("loaded_gpu_ms", "median"),
        ms("loaded_finalize_ms", "median"),
    )
}
