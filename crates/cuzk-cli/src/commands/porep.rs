//! Filecoin PoRep: `setup --porep`, `prove porep`, `verify porep`, `seal-test-sector` and
//! `sample-sector`.
//!
//! Every command that touches filecoin-proofs' parameter directory settles it first
//! ([`cuzk_filecoin::parameter_dir`]), because filecoin-proofs reads its settings only once.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use cuzk_filecoin::{
    compiled_r1cs, parameter_dir, seal_random_sector, verify_seal, C1Output, CircuitId, ParamFiles,
    R1csOrigin, SealProof, SealedSector, SectorIdentity, SectorJob,
};
use cuzk_groth16::params_file::PointCheck;
use cuzk_groth16::{Parameters, ProverBackend};
use cuzk_pipeline::engine::HostPlan;
use cuzk_pipeline::sink::{MemorySink, TimelineSink, WriterSink};
use cuzk_pipeline::{Engine, EngineConfig, JobRequest};
use cuzk_synth::CompiledR1cs;
use serde_json::json;

use crate::args::{
    GlobalArgs, PorepInputArgs, PorepProveArgs, PorepVerifyArgs, ProvingArgs, SetupArgs,
    TestSectorArgs,
};
use crate::progress::Progress;
use crate::{backend, Outcome};

/// What a PoRep command reads, validated: the parameter directory settled, the C1 output parsed.
struct PorepInput {
    params_dir: PathBuf,
    c1: C1Output,
}

impl PorepInput {
    fn open(args: &PorepInputArgs) -> Result<Self> {
        let params_dir = parameter_dir(args.params_dir.as_deref())?;
        let proof = args
            .seal_proof
            .as_deref()
            .map(SealProof::from_size_or_name)
            .transpose()?;
        let c1 = C1Output::read(&args.c1, proof)?;
        Ok(PorepInput { params_dir, c1 })
    }
}

/// `cuzk setup --porep|--winning-post|--window-post`: test parameters for a Filecoin circuit.
pub fn setup(global: &GlobalArgs, circuit: CircuitId, args: &SetupArgs) -> Result<Outcome> {
    let out = &args.out;
    let multiplier = backend::multiplier(args.backend, global, global.json)?;
    let progress = Progress::new(global.json);
    eprintln!(
        "cuzk: WARNING: random test parameters for {circuit}, NOT the Filecoin network's: proofs \
         made with them verify only against this .vk, and they are not a trusted setup"
    );
    let files = ParamFiles::new(out, circuit)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    // Setup reads the circuit's compiled R1CS, which proving reads too: made (or read) first.
    let (compiled, r1cs_time) =
        progress.stage("recording the circuit's R1CS", || compiled_r1cs(&files));
    let (compiled, origin) = compiled?;
    let (generated, elapsed) = progress.stage("generating parameters", || {
        files.generate_for(
            &compiled,
            &mut super::setup::toxic_rng(args.toxic_seed),
            &multiplier,
        )
    });
    let params = generated?;
    let summary = json!({
        "circuit": circuit.to_string(),
        "params": files.params,
        "vk": files.vk,
        "public_inputs": params.vk.ic.len() - 1,
        "aux": params.l.len(),
        "domain_size": params.h.len() + 1,
        "file_bytes": params.file_size(),
        "r1cs": format!("{origin:?}"),
        "r1cs_s": r1cs_time.as_secs_f64(),
        "setup_s": elapsed.as_secs_f64(),
    });
    if global.json {
        println!("{summary}");
    } else {
        println!(
            "wrote {} ({} bytes) and {}",
            files.params.display(),
            params.file_size(),
            files.vk.display()
        );
    }
    Ok(Outcome::Success)
}

/// The default proof file: the C1 file's name with the extension `.proof`.
fn default_proof_path(c1: &Path) -> PathBuf {
    c1.with_extension("proof")
}

pub fn prove(global: &GlobalArgs, args: PorepProveArgs) -> Result<Outcome> {
    let progress = Progress::new(global.json);
    let input = PorepInput::open(&args.input)?;
    let proof = input.c1.proof;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_proof_path(&args.input.c1));
    let files = ParamFiles::new(&input.params_dir, proof)?;
    let prover = Prover::load(global, &args.proving, &files)?;
    let (job, _) = progress.stage("building the partition circuits", || {
        SectorJob::new(
            args.input.c1.display().to_string(),
            &input.c1,
            Arc::clone(&prover.params),
            &files,
            prover.compiled.clone(),
        )
    });
    let job = job?;
    let partitions = job.partitions;
    let (request, finish) = job.split();
    let (bytes, elapsed) = progress.stage(
        &format!("proving {partitions} partition(s) of {proof}"),
        || anyhow::Ok(finish.finish(prover.run(partitions, request)?)?),
    );
    let bytes = bytes.with_context(|| format!("proving {}", args.input.c1.display()))?;
    super::write_proof(
        global,
        &out,
        &bytes,
        elapsed,
        json!({
            "seal_proof": proof.name(),
            "partitions": partitions,
        }),
    )
}

/// What proving a Filecoin circuit holds: its parameters, its compiled R1CS (unless
/// --direct-synthesis), the backends and the engine's settings.
pub(super) struct Prover {
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
        let (params, _) = progress.stage("loading parameters", || files.load(check));
        let params = Arc::new(params?);
        let compiled = if args.direct_synthesis {
            None
        } else {
            let (compiled, _) =
                progress.stage("loading the compiled R1CS", || compiled_r1cs(files));
            let (compiled, origin) = compiled?;
            if let R1csOrigin::RecordedUncached(e) = origin {
                eprintln!(
                    "cuzk: could not cache the compiled R1CS in {}: {e}",
                    files.r1cs.display()
                );
            }
            Some(compiled)
        };
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

    /// Proves `request` (`partitions` partitions) on an engine sized for it: its partition
    /// proofs, concatenated.
    pub fn run(self, partitions: usize, request: JobRequest) -> Result<Vec<u8>> {
        let mut config = self.config;
        config.partition_workers = self
            .partition_workers
            .unwrap_or_else(|| partitions.min(rayon::current_num_threads()));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the runtime")?;
        runtime.block_on(async {
            let engine = Engine::start(config, self.backends, self.sink)?;
            anyhow::Ok(engine.submit(request).wait().await?.proof_bytes())
        })
    }
}

fn parse_prover_id(text: &str) -> Result<[u8; 32]> {
    let digits = text
        .strip_prefix("0x")
        .with_context(|| format!("--prover-id {text:?}: expected 0x-prefixed hex"))?;
    let bytes = hex::decode(digits).with_context(|| format!("--prover-id {text:?}"))?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        anyhow::anyhow!(
            "--prover-id {text:?}: expected 32 bytes, got {}",
            bytes.len()
        )
    })
}

pub fn verify(global: &GlobalArgs, args: PorepVerifyArgs) -> Result<Outcome> {
    let input = PorepInput::open(&args.input)?;
    let identity = SectorIdentity {
        prover_id: parse_prover_id(&args.prover_id)?,
        sector_id: args.sector_id,
    };
    let proof_bytes =
        std::fs::read(&args.proof).with_context(|| format!("reading {}", args.proof.display()))?;
    let commitments = input.c1.commitments()?;
    let valid = verify_seal(
        input.c1.proof,
        &commitments,
        identity,
        &proof_bytes,
        &input.params_dir,
    )
    .with_context(|| format!("verifying {}", args.proof.display()))?;
    Ok(super::verdict(
        global,
        valid,
        json!({ "seal_proof": input.c1.proof.name() }),
    ))
}

pub fn seal_test_sector(global: &GlobalArgs, args: TestSectorArgs) -> Result<Outcome> {
    let sector_dir = args.out.join("sector");
    write_test_sector(global, &args, "sealing a random", |proof| {
        let sector = seal_random_sector(proof, &sector_dir, args.miner_id, &mut rand::rngs::OsRng)?;
        // The sealed files are there to prove: PoSt requests of the sector too, and an update.
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("creating {}", args.out.display()))?;
        super::post::write_test_requests(proof, &sector, &sector_dir, &args.out)
            .context("writing the sector's PoSt requests")?;
        super::snap::write_test_request(&sector, &sector_dir, &args.out)
            .context("updating the sector (SnapDeals)")?;
        Ok(sector)
    })
}

pub fn sample_sector(global: &GlobalArgs, args: TestSectorArgs) -> Result<Outcome> {
    write_test_sector(global, &args, "sampling a committed-capacity", |proof| {
        let sample = cuzk_filecoin::sample_sector(proof, args.miner_id, &mut rand::rngs::OsRng)?;
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("creating {}", args.out.display()))?;
        for post in &sample.posts {
            post.write(
                &args
                    .out
                    .join(super::post::request_file_name(post.proof.kind)),
            )?;
        }
        sample
            .update
            .write(&args.out.join(super::snap::REQUEST_FILE_NAME))?;
        Ok(sample.sector)
    })
}

/// Makes a sector for `args` with `make` and writes its C1 output (c1.json) and sector.json.
fn write_test_sector(
    global: &GlobalArgs,
    args: &TestSectorArgs,
    doing: &str,
    make: impl FnOnce(SealProof) -> Result<SealedSector>,
) -> Result<Outcome> {
    let proof = SealProof::from_size_or_name(&args.size)?;
    let c1_path = args.out.join("c1.json");
    if c1_path.exists() {
        bail!("{} already holds a sector (c1.json)", args.out.display());
    }
    let progress = Progress::new(global.json);
    let (sector, elapsed) = progress.stage(&format!("{doing} {proof} sector"), || make(proof));
    let sector = sector?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    super::write_output(&c1_path, &sector.c1.to_ffi_json())?;
    let prover_id = format!("0x{}", hex::encode(sector.identity.prover_id));
    let description = json!({
        "seal_proof": proof.name(),
        "prover_id": prover_id,
        "sector_id": sector.identity.sector_id,
        "c1": c1_path,
        "made_s": elapsed.as_secs_f64(),
    });
    super::write_output(
        &args.out.join("sector.json"),
        description.to_string().as_bytes(),
    )?;
    if global.json {
        println!("{description}");
    } else {
        println!(
            "wrote {} (prover id {prover_id}, sector id {}) in {:.1} s",
            c1_path.display(),
            sector.identity.sector_id,
            elapsed.as_secs_f64()
        );
    }
    Ok(Outcome::Success)
}
