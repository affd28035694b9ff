//! `cuzk bench`: jobs of a built-in circuit, or of a sealed sector's PoRep C2, through the engine,
//! measured from the engine's own TIMELINE with the same analysis as `cuzk analyze`, so the two
//! always agree.
//!
//! Every partition of every job is the same circuit (its shape must match the one set of
//! parameters); each proof still has its own randomness and is verified. The built-in circuit's
//! jobs carry its shape key, so the engine records its R1CS from the first partition and
//! synthesizes the rest by witness only, unless --direct-synthesis.

mod probe;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, ensure, Context, Result};
use cuzk_filecoin::{
    compiled_r1cs, parameter_dir, C1Output, FilecoinRequest, ParamFiles, PostRequest, SnapRequest,
};
use cuzk_groth16::backend::{Faults, FaultyBackend, GpuBackend};
use cuzk_groth16::params_file::{ParamsHeader, PointCheck};
use cuzk_groth16::setup::{parameters_for_compiled, Multiplier, ToxicWaste};
use cuzk_groth16::{Parameters, ProverBackend};
use cuzk_pipeline::analysis::{max_synth_in_flight, per_device, summarize, GpuSummary};
use cuzk_pipeline::engine::{HostMemory, HostPlan};
use cuzk_pipeline::sink::{MemorySink, Tee, TimelineSink, WriterSink};
use cuzk_pipeline::timeline::Timeline;
use cuzk_pipeline::{DeviceActivity, Engine, EngineConfig, JobError, JobRequest, Partition};
use cuzk_synth::CompiledR1cs;
use serde_json::{json, Map, Value};
use tokio::sync::Semaphore;

use crate::args::{BackendChoice, BenchArgs, GlobalArgs, InjectedFault};
use crate::circuit::CircuitSpec;
use crate::progress::Progress;
use crate::{backend, report, Outcome};
use probe::Probe;

/// What every job proves.
enum Workload {
    /// `partitions` copies of a built-in circuit, with parameters from our setup.
    Synthetic(CircuitSpec),
    Filecoin(Box<FilecoinWork>),
}

/// A Filecoin request's partitions, with its parameter files and compiled R1CS (none with
/// --direct-synthesis); `test_params` says where to make random test parameters instead of
/// reading the files.
struct FilecoinWork {
    request: FilecoinRequest,
    /// The file it was read from.
    source: PathBuf,
    files: ParamFiles,
    compiled: Option<Arc<CompiledR1cs>>,
    test_params: Option<TestParams>,
}

/// Where random test parameters are made.
enum TestParams {
    /// Multiplied out there, held on the host.
    Host(Multiplier),
    /// On this backend's GPU, and kept there: it is the only one that proves.
    OnDevice(Arc<GpuBackend>),
}

impl TestParams {
    /// What `args` ask for; checked before any file is read, so a GPU that is not there fails at
    /// once.
    fn from_args(args: &BenchArgs, global: &GlobalArgs) -> Result<Option<Self>> {
        if args.test_params_on_gpu {
            if matches!(args.backend, BackendChoice::Cpu) {
                bail!("--test-params-on-gpu makes the parameters on a GPU: not with --backend cpu");
            }
            let gpu = backend::first_gpu(global).context("--test-params-on-gpu")?;
            return Ok(Some(TestParams::OnDevice(Arc::new(GpuBackend::with_gpu(
                gpu,
            )))));
        }
        if args.test_params {
            let multiplier = backend::multiplier(args.backend, global, global.json)?;
            return Ok(Some(TestParams::Host(multiplier)));
        }
        Ok(None)
    }
}

impl Workload {
    fn from_args(args: &BenchArgs, global: &GlobalArgs) -> Result<Self> {
        // Before any file is read: a GPU that is not there fails at once.
        let test_params = TestParams::from_args(args, global)?;
        let (request, source) = match (&args.c1, &args.post, &args.snap, &args.circuit) {
            (Some(c1), ..) => (FilecoinRequest::Porep(C1Output::read(c1, None)?), c1),
            (_, Some(post), ..) => (FilecoinRequest::Post(PostRequest::read(post)?), post),
            (_, _, Some(snap), _) => (FilecoinRequest::Snap(SnapRequest::read(snap)?), snap),
            (.., Some(circuit)) => {
                return Ok(Workload::Synthetic(CircuitSpec::from_args(circuit)?))
            }
            (None, None, None, None) => bail!(
                "give a circuit (--constraints N), a sector (--c1 FILE), --post or --snap FILE"
            ),
        };
        FilecoinWork::new(request, source, args, test_params)
            .map(|work| Workload::Filecoin(Box::new(work)))
    }

    /// The PoSt request of `source` (a --probe's), with the parameter files of `args`' directory.
    fn post(source: &Path, args: &BenchArgs) -> Result<Self> {
        let request = FilecoinRequest::Post(PostRequest::read(source)?);
        FilecoinWork::new(request, source, args, None)
            .map(|work| Workload::Filecoin(Box::new(work)))
    }

    /// Job `id`: `partitions` copies of the circuit, or the request's partitions.
    fn job(&self, id: String, partitions: usize, params: &Arc<Parameters>) -> Result<JobRequest> {
        match self {
            Workload::Synthetic(CircuitSpec::Synthetic(circuit)) => {
                let (circuit, public_inputs) = (circuit.clone(), circuit.public_input_values());
                let shape = circuit.shape_key();
                Ok(
                    JobRequest::new(id, Arc::clone(params), partitions, move |_| Partition {
                        circuit: circuit.clone(),
                        public_inputs: public_inputs.clone(),
                    })
                    .with_shape(shape),
                )
            }
            Workload::Filecoin(work) => work.job(id, params),
        }
    }

    fn describe(&self) -> String {
        match self {
            Workload::Synthetic(spec) => spec.describe(),
            Workload::Filecoin(work) => work.describe(),
        }
    }

    /// The parameters every job proves with; a synthetic circuit's multiplied out by
    /// `multiplier`.
    fn params(&self, progress: Progress, multiplier: &Multiplier) -> Result<Parameters> {
        let params = match self {
            Workload::Synthetic(spec) => {
                progress
                    .stage(
                        "generating parameters (random, NOT a trusted setup)",
                        || spec.random_parameters(multiplier),
                    )
                    .0
            }
            Workload::Filecoin(work) => work.params(progress),
        };
        params.context("parameters")
    }

    /// The header of the parameter file the jobs prove with, read before its points; `None`
    /// for parameters made in the process.
    fn header(&self) -> Result<Option<ParamsHeader>> {
        Ok(match self {
            Workload::Filecoin(work) if work.test_params.is_none() => Some(work.files.header()?),
            Workload::Filecoin(_) | Workload::Synthetic(_) => None,
        })
    }

    /// The host memory plan of proving with `params`, loaded, on `backends`.
    fn host_plan(
        &self,
        params: &Parameters,
        backends: &[Arc<dyn ProverBackend>],
        gpu_workers_per_device: usize,
    ) -> HostPlan {
        HostPlan::loaded(params, self.compiled(), backends, gpu_workers_per_device)
    }

    /// The backend whose GPU holds the test parameters made there: the only one that proves.
    fn params_device(&self) -> Option<&Arc<GpuBackend>> {
        match self {
            Workload::Filecoin(work) => match &work.test_params {
                Some(TestParams::OnDevice(backend)) => Some(backend),
                _ => None,
            },
            Workload::Synthetic(_) => None,
        }
    }

    /// The compiled R1CS the run holds, if any.
    fn compiled(&self) -> Option<&Arc<CompiledR1cs>> {
        match self {
            Workload::Filecoin(work) => work.compiled.as_ref(),
            Workload::Synthetic(_) => None,
        }
    }

    /// The summary's fields that say what was proven, `partitions` per job.
    fn summary(&self, partitions: usize) -> Value {
        match self {
            Workload::Synthetic(CircuitSpec::Synthetic(circuit)) => json!({
                "circuit": "synthetic",
                "constraints": circuit.constraints,
                "boolean_fraction": circuit.boolean_fraction,
            }),
            Workload::Filecoin(work) => work.summary(partitions),
        }
    }
}

impl FilecoinWork {
    fn new(
        request: FilecoinRequest,
        source: &Path,
        args: &BenchArgs,
        test_params: Option<TestParams>,
    ) -> Result<Self> {
        let dir = parameter_dir(args.params_dir.as_deref())?;
        let files = ParamFiles::new(&dir, request.circuit())?;
        // With --direct-synthesis the compiled R1CS serves test parameters' setup only.
        let compiled = match args.direct_synthesis {
            true => None,
            false => Some(compiled_r1cs(&files)?.0),
        };
        Ok(FilecoinWork {
            request,
            source: source.to_owned(),
            files,
            compiled,
            test_params,
        })
    }

    fn job(&self, id: String, params: &Arc<Parameters>) -> Result<JobRequest> {
        let (params, compiled) = (Arc::clone(params), self.compiled.clone());
        Ok(self.request.job(id, params, &self.files, compiled)?.request)
    }

    fn describe(&self) -> String {
        format!("{} of {}", self.request.proof_name(), self.source.display())
    }

    /// The parameter files' points, or random test parameters made for the compiled R1CS.
    fn params(&self, progress: Progress) -> Result<Parameters> {
        let Some(test_params) = &self.test_params else {
            let loaded = progress.stage("loading parameters", || {
                self.files.load(PointCheck::Unchecked)
            });
            return Ok(loaded.0?);
        };
        let made = progress.stage(
            "generating test parameters (random, NOT a trusted setup)",
            || {
                let compiled = match &self.compiled {
                    Some(compiled) => Arc::clone(compiled),
                    None => compiled_r1cs(&self.files)?.0,
                };
                let toxic = ToxicWaste::random(&mut rand::rngs::OsRng);
                anyhow::Ok(match test_params {
                    TestParams::Host(multiplier) => {
                        parameters_for_compiled(&compiled, &toxic, multiplier)?
                    }
                    TestParams::OnDevice(backend) => {
                        backend.parameters_on_device(&compiled, &toxic)?
                    }
                })
            },
        );
        made.0
    }

    fn summary(&self, partitions: usize) -> Value {
        let mut fields = super::request::fields(&self.request, partitions);
        fields["rows"] = json!(self.compiled.as_ref().map(|c| c.num_rows()));
        fields
    }
}

/// The validated run: what `BenchArgs` asked for, defaults resolved.
struct Plan {
    workload: Workload,
    jobs: usize,
    concurrency: usize,
    partitions: usize,
    warmup_jobs: usize,
    /// The host memory the whole run may use; the engine's budget is what its plan leaves.
    available: HostMemory,
    config: EngineConfig,
}

impl Plan {
    fn from_args(args: &BenchArgs, global: &GlobalArgs) -> Result<Self> {
        ensure!(args.jobs > 0, "--jobs must be at least 1");
        ensure!(args.concurrency > 0, "--concurrency must be at least 1");
        ensure!(args.partitions > 0, "--partitions must be at least 1");
        let available = super::host_memory(args.memory_budget)?;
        let workload = Workload::from_args(args, global)?;
        let partitions = match &workload {
            Workload::Synthetic(_) => args.partitions,
            Workload::Filecoin(work) => work.request.partitions()?,
        };
        Ok(Plan {
            workload,
            jobs: args.jobs,
            concurrency: args.concurrency,
            partitions,
            warmup_jobs: args.warmup,
            config: EngineConfig {
                partition_workers: args
                    .partition_workers
                    .unwrap_or_else(rayon::current_num_threads),
                synthesis_concurrency: args.synthesis_concurrency,
                gpu_workers_per_device: args.gpu_workers,
                // Settled once the parameters are loaded: what the run's plan leaves.
                memory_budget: available.bytes,
                compiled_synthesis: !args.direct_synthesis,
                synthesis_nice: args.synthesis_nice,
                // One circuit per bench: nothing to group.
                group_by_circuit: false,
            },
            available,
        })
    }

    /// Job `j` of the load.
    fn job(&self, j: usize, params: &Arc<Parameters>) -> Result<JobRequest> {
        self.workload
            .job(format!("job{j}"), self.partitions, params)
    }
}

/// Submits the jobs, at most `concurrency` in flight, and waits for all, counting them in
/// `finished` as they end; the first failure is reported after the others finished.
async fn run_jobs(
    engine: &Engine,
    plan: &Plan,
    params: &Arc<Parameters>,
    finished: &Arc<AtomicUsize>,
) -> Result<()> {
    let slots = Arc::new(Semaphore::new(plan.concurrency));
    let mut waiting = Vec::with_capacity(plan.jobs);
    for j in 0..plan.jobs {
        let slot = Arc::clone(&slots).acquire_owned().await?;
        let handle = engine.submit(plan.job(j, params)?);
        let finished = Arc::clone(finished);
        waiting.push(tokio::spawn(async move {
            let result = handle.wait().await;
            finished.fetch_add(1, Ordering::AcqRel);
            drop(slot);
            result.map(|_| ())
        }));
    }
    let mut failures: Vec<JobError> = Vec::new();
    for (j, task) in waiting.into_iter().enumerate() {
        if let Err(e) = task.await.with_context(|| format!("job{j}"))? {
            failures.push(e);
        }
    }
    if let Some(first) = failures.first() {
        bail!(
            "{} of {} jobs failed; the first: {first}",
            failures.len(),
            plan.jobs
        );
    }
    Ok(())
}

/// What a run leaves beside its TIMELINE.
struct Ran<'a> {
    backends: &'a [Arc<dyn ProverBackend>],
    params: &'a Parameters,
    /// The engine's view of its devices at the end.
    activity: &'a [DeviceActivity],
    wall_s: f64,
    /// The memory budget's peak.
    peak: u64,
}

/// Each backend's share of the run, in the engine's order (a TIMELINE's `device=`), with the
/// last fault the engine saw on it; a device that ran nothing is listed with no figures.
fn devices(ran: &Ran, gpu: &GpuSummary, timeline: &Timeline) -> Value {
    let seen = per_device(gpu, timeline);
    ran.backends
        .iter()
        .enumerate()
        .map(|(index, backend)| {
            let mut entry = match seen.iter().find(|d| d.device as usize == index) {
                Some(ran) => report::device(ran),
                None => Map::from_iter([
                    ("device".into(), index.into()),
                    ("partitions".into(), 0.into()),
                ]),
            };
            entry.insert("backend".into(), backend.name().into());
            // How proofs used the device: the plan, the memory budget and the most held.
            entry.insert("plan".into(), backend.plan(ran.params).into());
            if let Ok(Some(status)) = backend.device() {
                entry.insert("device_budget_bytes".into(), status.budget_bytes.into());
                entry.insert("device_peak_bytes".into(), status.peak_bytes.into());
            }
            let last_fault = ran.activity.get(index).and_then(|a| a.last_fault.clone());
            entry.insert("last_fault".into(), last_fault.into());
            Value::Object(entry)
        })
        .collect()
}

/// The figures of the run, from its TIMELINE.
fn summary(plan: &Plan, ran: &Ran, timeline: &Timeline) -> Value {
    let (backends, wall_s, peak) = (ran.backends, ran.wall_s, ran.peak);
    let gpu = summarize(timeline, plan.warmup_jobs);
    let mut summary = plan.workload.summary(plan.partitions);
    let run = json!({
        "backend": backends.first().map(|b| b.name()),
        "devices": devices(ran, &gpu, timeline),
        "jobs": plan.jobs,
        "concurrency": plan.concurrency,
        "partitions": plan.partitions,
        "partition_workers": plan.config.partition_workers,
        "gpu_workers": plan.config.gpu_workers_per_device,
        "synthesis_concurrency": plan.config.synthesis_concurrency,
        "synthesis_nice": plan.config.synthesis_nice,
        "memory_budget_bytes": plan.config.memory_budget,
        "wall_s": wall_s,
        "steady_state_s_per_proof": gpu.steady.as_ref().map(|s| s.s_per_job),
        "compiled_synthesis": plan.config.compiled_synthesis,
        // The engine leaves a, b and c to the backends when the job brings its compiled R1CS.
        "products_on_device": plan.workload.compiled().is_some_and(|compiled| {
            backends.iter().all(|b| b.computes_products(ran.params, compiled))
        }),
        "gpu_busy_fraction": gpu.busy_fraction,
        "gpu_idle_windows": gpu.idle_windows.len(),
        "gpu_starved_fraction": gpu.starved_fraction,
        "max_synth_in_flight": max_synth_in_flight(timeline),
        "peak_memory_bytes": peak,
    });
    if let (Value::Object(summary), Value::Object(run)) = (&mut summary, run) {
        summary.extend(run);
        summary.extend(report::figures(timeline, &gpu));
    }
    summary
}

/// The devices' backend names: "cuda:0 (…)" for one, as before multi-GPU runs, and
/// "2 devices, cuda:0 (…) and cuda:1 (…)" for more.
fn device_names(summary: &Value) -> String {
    let devices = summary["devices"].as_array().map_or(&[][..], Vec::as_slice);
    let names: Vec<&str> = devices
        .iter()
        .map(|d| d["backend"].as_str().unwrap_or("?"))
        .collect();
    match names.as_slice() {
        [] => summary["backend"].as_str().unwrap_or("?").to_owned(),
        [one] => (*one).to_owned(),
        [first @ .., last] => format!("{} devices, {} and {last}", names.len(), first.join(", ")),
    }
}

fn print_text(summary: &Value, plan: &Plan) {
    let number = |key: &str| summary[key].as_f64().unwrap_or(f64::NAN);
    let mib = |key: &str| number(key) / f64::from(1u32 << 20);
    outln!(
        "{} jobs × {} partitions, {} at once, on {}: {}",
        plan.jobs,
        plan.partitions,
        plan.concurrency,
        device_names(summary),
        plan.workload.describe()
    );
    outln!("  wall           {:.3} s", number("wall_s"));
    for line in report::lines(summary) {
        outln!("{line}");
    }
    outln!(
        "  GPU busy       {:.1}% over the whole run ({})",
        number("gpu_busy_fraction") * 100.0,
        report::idle(summary)
    );
    for line in report::device_lines(summary) {
        outln!("{line}");
    }
    for device in summary["devices"].as_array().map_or(&[][..], Vec::as_slice) {
        if let Some(plan) = device["plan"].as_str() {
            let gb = |key: &str| device[key].as_f64().unwrap_or(f64::NAN) / 1e9;
            outln!(
                "  device plan    cuda:{}: {plan}; held at most {:.1} of {:.1} GB",
                device["device"],
                gb("device_peak_bytes"),
                gb("device_budget_bytes")
            );
        }
    }
    outln!(
        "  syntheses      at most {} in flight",
        summary["max_synth_in_flight"]
    );
    outln!(
        "  peak memory    {:.1} MiB of a {:.1} MiB budget",
        mib("peak_memory_bytes"),
        mib("memory_budget_bytes")
    );
    if summary["probe"].is_object() {
        outln!("{}", probe::line(&summary["probe"]));
    }
}

/// `backends` with the one `--inject-device-fault` names failing from its proof on.
fn with_injected_fault(
    mut backends: Vec<Arc<dyn ProverBackend>>,
    fault: Option<InjectedFault>,
) -> Result<Vec<Arc<dyn ProverBackend>>> {
    let Some(InjectedFault { device, from_proof }) = fault else {
        return Ok(backends);
    };
    let count = backends.len();
    let backend = backends.get_mut(device).ok_or_else(|| {
        anyhow!("--inject-device-fault: no device {device} (the bench runs on {count})")
    })?;
    let faulty = FaultyBackend::new(Arc::clone(backend), Faults::From(from_proof));
    *backend = Arc::new(faulty);
    Ok(backends)
}

pub fn run(global: &GlobalArgs, args: BenchArgs) -> Result<Outcome> {
    let mut plan = Plan::from_args(&args, global)?;
    let backends: Vec<Arc<dyn ProverBackend>> = match plan.workload.params_device() {
        Some(backend) => vec![backend.clone()],
        None => backend::select_all(args.backend, args.devices.as_deref(), global)?,
    };
    let backends = with_injected_fault(backends, args.inject_device_fault)?;
    let progress = Progress::new(global.json);
    let multiplier = match plan.workload {
        Workload::Synthetic(_) => backend::multiplier(args.backend, global, true)?,
        _ => Multiplier::Cpu,
    };
    // Before a parameter file is read: what its header and the compiled R1CS say.
    if let Some(header) = plan.workload.header()? {
        let r1cs_bytes = plan.workload.compiled().map(|c| c.heap_bytes());
        HostPlan::for_set(&header, r1cs_bytes, false).partitions_budget(&plan.available)?;
    }
    let params = Arc::new(plan.workload.params(progress, &multiplier)?);
    let probe = Probe::from_args(&args, progress)?;
    // The parameters, the R1CS and the backends' staging are not the partitions'.
    let mut host = plan
        .workload
        .host_plan(&params, &backends, plan.config.gpu_workers_per_device);
    if let Some(probe) = &probe {
        host = host.beside(&probe.host_plan(), "--probe");
    }
    plan.config.memory_budget = host.partitions_budget(&plan.available)?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let sink = Arc::new(MemorySink::default());
    // The file gets each record as it happens: a run stopped before its end keeps its log.
    let written = match &args.timeline {
        Some(path) => Some(Arc::new(WriterSink::new(
            File::create(path).with_context(|| format!("creating {}", path.display()))?,
        ))),
        None => None,
    };
    let mut sinks: Vec<Arc<dyn TimelineSink>> = vec![sink.clone()];
    sinks.extend(written.iter().map(|w| w.clone() as Arc<dyn TimelineSink>));
    let engine_sink = Arc::new(Tee(sinks));
    let (ran, elapsed) = progress.stage("proving", || {
        runtime.block_on(async {
            let engine = Engine::start(plan.config.clone(), backends.clone(), engine_sink)?;
            let finished = Arc::new(AtomicUsize::new(0));
            let load = run_jobs(&engine, &plan, &params, &finished);
            let samples = match &probe {
                Some(probe) => Some(
                    probe
                        .around(&engine, load, &finished, plan.warmup_jobs, plan.jobs)
                        .await?,
                ),
                None => {
                    load.await?;
                    None
                }
            };
            anyhow::Ok((engine.memory().peak(), samples, engine.devices()))
        })
    });
    if let (Some(written), Some(path)) = (&written, &args.timeline) {
        written
            .flush()
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let whole = sink.timeline();
    let (peak, samples, activity) = ran?;
    let timeline = probe::without_probes(whole);
    let ran = Ran {
        backends: &backends,
        params: &params,
        activity: &activity,
        wall_s: elapsed.as_secs_f64(),
        peak,
    };
    let mut summary = summary(&plan, &ran, &timeline);
    if let (Some(probe), Some(samples)) = (&probe, &samples) {
        summary["probe"] = probe.summary(samples);
    }
    if let Some(path) = &args.json_out {
        super::write_output(path, format!("{summary}\n").as_bytes())?;
    }
    if global.json {
        outln!("{summary}");
    } else {
        print_text(&summary, &plan);
    }
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_device_is_named_alone_and_several_are_listed() {
        let one = json!({"backend": "cpu", "devices": [{"device": 0, "backend": "cpu"}]});
        assert_eq!(device_names(&one), "cpu");
        let device = |i: usize| json!({"device": i, "backend": format!("cuda:{i} (NVIDIA H200)")});
        let two = json!({"devices": [device(0), device(1)]});
        assert_eq!(
            device_names(&two),
            "2 devices, cuda:0 (NVIDIA H200) and cuda:1 (NVIDIA H200)"
        );
        let three = json!({"devices": [device(0), device(1), device(2)]});
        assert!(device_names(&three)
            .starts_with("3 devices, cuda:0 (NVIDIA H200), cuda:1 (NVIDIA H200) and cuda:2"));
    }
}
