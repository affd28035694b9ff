//! `cuzk prove porep|winning-post|window-post|snap`: a Filecoin request of any kind proven
//! the same way, by one engine job of its partitions.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use cuzk_filecoin::{FilecoinJob, FilecoinRequest, LoadedR1cs, LoadedSet, ParamFiles, R1csOrigin};
use cuzk_groth16::params_file::PointCheck;
use cuzk_groth16::{Parameters, ProverBackend};
use cuzk_pipeline::engine::HostPlan;
use cuzk_pipeline::sink::{MemorySink, TimelineSink, WriterSink};
use cuzk_pipeline::{Engine, EngineConfig};
use cuzk_synth::CompiledR1cs;
use serde_json::{json, Value};

use crate::args::{GlobalArgs, ProvingArgs};
use crate::progress::Progress;
use crate::{backend, Outcome};

/// Proves `request` (read from `source`) with the parameters in `params_dir` and writes its
/// proof bytes to `out`.
pub fn prove(
    global: &GlobalArgs,
    request: &FilecoinRequest,
    source: &Path,
    params_dir: &Path,
    proving: &ProvingArgs,
    out: &Path,
) -> Result<Outcome> {
    let progress = Progress::new(global.json);
    let files = ParamFiles::new(params_dir, request.circuit())?;
    let prover = Prover::load(global, proving, &files)?;
    let (job, _) = progress.stage("building the circuits", || {
        request.job(
            source.display().to_string(),
            Arc::clone(&prover.params),
            &files,
            prover.compiled.clone(),
        )
    });
    let job = job?;
    let partitions = job.partitions;
    let doing = format!(
        "proving {partitions} partition(s) of {}",
        request.proof_name()
    );
    let (bytes, elapsed) = progress.stage(&doing, || prover.run(job));
    let bytes = bytes.with_context(|| format!("proving {}", source.display()))?;
    super::write_proof(global, out, &bytes, elapsed, fields(request, partitions))
}

/// What a request is, as `prove --json` and bench summaries name it: its kind (`circuit`), its
/// registered proof, its `partitions` (and a PoSt's sectors).
pub fn fields(request: &FilecoinRequest, partitions: usize) -> Value {
    let (circuit, proof_key) = match request {
        FilecoinRequest::Porep(_) => ("porep", "seal_proof"),
        FilecoinRequest::Post(_) => ("post", "post_proof"),
        FilecoinRequest::Snap(_) => ("snap", "update_proof"),
    };
    let mut fields = json!({
        "circuit": circuit,
        proof_key: request.proof_name(),
        "partitions": partitions,
    });
    if let FilecoinRequest::Post(post) = request {
        fields["sectors"] = json!(post.vanilla_proofs.len());
    }
    fields
}

/// What proving a Filecoin circuit holds: its parameters, its compiled R1CS (unless
/// --direct-synthesis), the backends and the engine's settings.
pub struct Prover {
    pub params: Arc<Parameters>,
    pub compiled: Option<Arc<CompiledR1cs>>,
    backends: Vec<Arc<dyn ProverBackend>>,
    config: EngineConfig,
    sink: Arc<dyn TimelineSink>,
    partition_workers: Option<usize>,
}

impl Prover {
    /// Loads `files`' parameters and compiled R1CS and settles the engine's memory and TIMELINE.
    /// The host memory plan is checked first from the files alone, so a run that cannot fit
    /// stops before it reads them, then again with what the loaded set says (the GPU staging).
    pub fn load(global: &GlobalArgs, args: &ProvingArgs, files: &ParamFiles) -> Result<Self> {
        let progress = Progress::new(global.json);
        let backends = backend::select_all(args.backend, None, global)?;
        let available = super::host_memory(args.memory_budget)?;
        // Not cached yet, the compiled R1CS is recorded at its first use: its size is not known.
        let r1cs_bytes = (!args.direct_synthesis).then(|| files.r1cs_file_bytes().unwrap_or(0));
        HostPlan::for_set(&files.header()?, r1cs_bytes, false).partitions_budget(&available)?;
        let check = if args.check_params {
            PointCheck::Checked
        } else {
            PointCheck::Unchecked
        };
        let stage = match args.direct_synthesis {
            true => "loading parameters",
            false => "loading parameters and the compiled R1CS",
        };
        let (loaded, _) = progress.stage(stage, || files.load_set(check, !args.direct_synthesis));
        let LoadedSet { params, compiled } = loaded?;
        let compiled = compiled.map(|LoadedR1cs { r1cs, origin, .. }| {
            if let R1csOrigin::RecordedUncached(e) = origin {
                eprintln!(
                    "cuzk: could not cache the compiled R1CS in {}: {e}",
                    files.r1cs.display()
                );
            }
            r1cs
        });
        let mut config = EngineConfig::new(1, 1);
        config.memory_budget = HostPlan::loaded(
            &params,
            compiled.as_ref(),
            &backends,
            config.gpu_workers_per_device,
        )
        .partitions_budget(&available)?;
        config.synthesis_concurrency = 1;
        let sink: Arc<dyn TimelineSink> = match &args.timeline {
            Some(path) => {
                let file = std::fs::File::create(path)
                    .with_context(|| format!("creating {}", path.display()))?;
                Arc::new(WriterSink::new(file))
            }
            None => Arc::new(MemorySink::default()),
        };
        Ok(Prover {
            params,
            compiled,
            backends,
            config,
            sink,
            partition_workers: args.partition_workers,
        })
    }

    /// Proves `job` on an engine sized for it: the request's proof bytes.
    pub fn run(self, job: FilecoinJob) -> Result<Vec<u8>> {
        let mut config = self.config;
        config.partition_workers = self
            .partition_workers
            .unwrap_or_else(|| job.partitions.min(rayon::current_num_threads()));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the runtime")?;
        runtime.block_on(async {
            let engine = Engine::start(config, self.backends, self.sink)?;
            anyhow::Ok(job.prove(&engine).await?)
        })
    }
}
