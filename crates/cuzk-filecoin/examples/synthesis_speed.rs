//! Synthesis of one 2 KiB PoRep partition: cuzk's direct synthesis, cuzk's compiled evaluator
//! (its challenges in sequence, then side by side, then the witness alone as when a GPU computes
//! the products) and (with `--bellperson`) bellperson's own, inside filecoin-proofs' commit-2, on the same
//! machine and threads. For docs/perf-notes.md:
//!
//! ```sh
//! cargo run --release -p cuzk-filecoin --example synthesis_speed -- PARAMS_DIR [RUNS] [--bellperson]
//! # only the witness path, for a profiler:
//! RAYON_NUM_THREADS=1 perf record -g target/release/examples/synthesis_speed PARAMS_DIR 10 --witness-only
//! ```
//! PARAMS_DIR holds the 2 KiB parameters (`cuzk setup --porep 2KiB`); bellperson's run proves
//! with them too, so it also shows that bellperson reads cuzk's parameter files.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cuzk_filecoin::{
    compiled_r1cs, seal_random_sector, use_parameter_dir, verify_seal, ParamFiles, SealProof,
    SectorCircuits, SectorSize,
};
use cuzk_synth::{ProvingAssignment, Sectioned};
use filecoin_proofs::{SealCommitPhase1Output, SectorShape2KiB};

/// Keeps bellperson's "synthesis time" log line.
struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record<'_>) {
        let line = record.args().to_string();
        if line.contains("synthesis time") || line.contains("prover time") {
            if let Ok(mut lines) = self.0.lock() {
                lines.push(line);
            }
        }
    }

    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

fn median(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    (times[0].as_secs_f64(), times[times.len() / 2].as_secs_f64())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(
        args.first()
            .ok_or("usage: synthesis_speed PARAMS_DIR [RUNS]")?,
    );
    let runs: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(3);
    use_parameter_dir(&dir)?;
    let proof = SealProof::current(SectorSize::S2KiB);
    let work = tempfile::tempdir()?;
    let sector = seal_random_sector(proof, work.path(), None, &mut rand::rngs::OsRng)?;
    let (compiled, origin) = compiled_r1cs(&ParamFiles::new(&dir, proof)?)?;
    println!("compiled R1CS: {origin:?}, nnz {:?}", compiled.nnz());
    let circuits = SectorCircuits::<SectorShape2KiB>::new(&sector.c1)?;
    let circuit = &circuits.circuits[0];

    let time = |f: &dyn Fn() -> ProvingAssignment| {
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                let assignment = f();
                let elapsed = start.elapsed();
                drop(assignment);
                elapsed
            })
            .collect::<Vec<_>>()
    };
    if args.iter().any(|a| a == "--witness-only") {
        // For a profiler: nothing but the witness path, `runs` times.
        let (min, median) = median(time(&|| {
            compiled.witness_sectioned(circuit).unwrap_or_default()
        }));
        println!("witness alone: min {min:.3} s median {median:.3} s");
        return Ok(());
    }
    let direct = time(&|| ProvingAssignment::synthesize(circuit.clone()).unwrap_or_default());
    let evaluated = time(&|| compiled.synthesize(circuit.clone()).unwrap_or_default());
    let sectioned = time(&|| compiled.synthesize_sectioned(circuit).unwrap_or_default());
    let witness = time(&|| compiled.witness_sectioned(circuit).unwrap_or_default());
    let (direct_min, direct_median) = median(direct);
    let (compiled_min, compiled_median) = median(evaluated);
    let (sectioned_min, sectioned_median) = median(sectioned);
    let (witness_min, witness_median) = median(witness);
    println!(
        "threads {}: direct min {direct_min:.3} s median {direct_median:.3} s; compiled min \
         {compiled_min:.3} s median {compiled_median:.3} s; speedup (median) {:.2}x; {} \
         challenges side by side min {sectioned_min:.3} s median {sectioned_median:.3} s; \
         witness alone (products left to the GPU) min {witness_min:.3} s median \
         {witness_median:.3} s",
        rayon::current_num_threads(),
        direct_median / compiled_median,
        circuit.sections(),
    );

    if args.iter().any(|a| a == "--bellperson") {
        log::set_logger(&CAPTURE).map_err(|e| e.to_string())?;
        log::set_max_level(log::LevelFilter::Info);
        let output: SealCommitPhase1Output<SectorShape2KiB> =
            serde_json::from_slice(&sector.c1.to_raw_json())?;
        let start = Instant::now();
        let proof_bytes = filecoin_proofs::seal_commit_phase2(
            &proof.porep_config()?,
            output,
            sector.identity.prover_id,
            sector.identity.sector_id.into(),
        )
        .map_err(|e| format!("{e:#}"))?
        .proof;
        println!(
            "bellperson commit-2 with cuzk's parameters: {:.1} s, {:?}",
            start.elapsed().as_secs_f64(),
            CAPTURE.0.lock().map(|l| l.clone()).unwrap_or_default()
        );
        let commitments = sector.c1.commitments()?;
        let valid = verify_seal(proof, &commitments, sector.identity, &proof_bytes, &dir)?;
        println!("bellperson's proof verifies: {valid}");
    }
    Ok(())
}
