//! Synthesis of one 2 KiB PoRep partition: cuzk's direct synthesis, cuzk's compiled evaluator
//! with the witness through the circuit's gadgets and with its native witness (challenges side by
//! side; then the witness alone, as when a GPU computes the products), wall and CPU seconds, and
//! (with `--bellperson`) bellperson's own, inside filecoin-proofs' commit-2, on the same
//! machine and threads. For docs/perf-notes.md:
//!
//! ```sh
//! cargo bench -p cuzk-filecoin --bench synthesis_speed -- PARAMS_DIR [RUNS] [--bellperson]
//! # any size's first partition from a C1 file (a sample sector's): the native witness checked
//! # against the gadgets', then both timed
//! cargo bench -p cuzk-filecoin --bench synthesis_speed -- PARAMS_DIR 3 --c1 c1.json
//! # WinningPoSt and WindowPoSt of a sealed 2 KiB sector: native witness against the gadgets'
//! cargo bench -p cuzk-filecoin --bench synthesis_speed -- PARAMS_DIR 5 --post
//! # a SnapDeals update of it: native witness against filecoin's circuit and the gadgets'
//! cargo bench -p cuzk-filecoin --bench synthesis_speed -- PARAMS_DIR 5 --snap
//! # only the witness path, for a profiler:
//! RAYON_NUM_THREADS=1 perf record -g target/release/deps/synthesis_speed-* PARAMS_DIR 10 --witness-only
//! ```
//! PARAMS_DIR holds the 2 KiB parameters (`cuzk setup --porep 2KiB`); bellperson's run proves
//! with them too, so it also shows that bellperson reads cuzk's parameter files.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cuzk_filecoin::post::PostCircuits;
use cuzk_filecoin::snap::SnapCircuits;
use cuzk_filecoin::{
    compiled_r1cs, post_vanilla_proofs, seal_random_sector, snap_update, use_parameter_dir,
    verify_seal, C1Output, ParamFiles, PostKind, PostProof, PostRequest, SealProof, SealedSector,
    SectorCircuits, SectorSize,
};
use cuzk_pipeline::engine::PartitionedCircuit;
use cuzk_synth::{CompiledR1cs, ProvingAssignment, Sectioned, ThroughGadgets};
use filecoin_proofs::{with_shape, MerkleTreeTrait, SealCommitPhase1Output, SectorShape2KiB};

/// Wall and CPU seconds (all threads) of `runs` runs of `f`.
fn timed(runs: usize, f: &dyn Fn() -> ProvingAssignment) -> (Vec<Duration>, Vec<Duration>) {
    (0..runs)
        .map(|_| {
            let (start, cpu) = (Instant::now(), cpu_time());
            let assignment = f();
            let times = (start.elapsed(), cpu_time().saturating_sub(cpu));
            drop(assignment);
            times
        })
        .unzip()
}

/// One line per path: wall min and median, CPU median.
fn table(runs: usize, sections: usize, paths: &[(&str, &dyn Fn() -> ProvingAssignment)]) {
    println!(
        "{} threads, {sections} challenges side by side; seconds over {runs} runs",
        rayon::current_num_threads(),
    );
    println!("| path | wall min | wall median | CPU median |");
    println!("|---|---|---|---|");
    for (name, path) in paths {
        let (wall, cpu) = timed(runs, *path);
        let (wall_min, wall_median) = median(wall);
        let (_, cpu_median) = median(cpu);
        println!("| {name} | {wall_min:.3} | {wall_median:.3} | {cpu_median:.3} |");
    }
}

/// Any size's first partition from a C1 file (a sample sector's, say): its native witness checked
/// against the gadgets' (the whole witness, every value), then both timed, witness alone.
fn witness_of_c1<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Output,
    dir: &Path,
    runs: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let (compiled, origin) = compiled_r1cs(&ParamFiles::new(dir, c1.proof)?)?;
    println!(
        "{}: compiled R1CS {origin:?} in {:.1} s, {} rows",
        c1.proof,
        start.elapsed().as_secs_f64(),
        compiled.num_rows()
    );
    let circuits = SectorCircuits::<Tree>::new(c1)?;
    let circuit = circuits.circuits.first().ok_or("no partition")?;
    native_against_gadgets(&compiled, circuit, runs)
}

/// `circuit`'s native witness checked against its gadgets' (the whole witness, every value),
/// then both timed, witness alone.
fn native_against_gadgets<S: Sectioned>(
    compiled: &Arc<CompiledR1cs>,
    circuit: &S,
    runs: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let gadgets = ThroughGadgets(circuit);
    let native = compiled.witness_sectioned(circuit)?;
    let reference = compiled.witness_sectioned(&gadgets)?;
    if native != reference {
        return Err("the native witness differs from the gadgets'".into());
    }
    drop((native, reference));
    println!("native witness = the gadgets' witness (every value)");
    let paths: [(&str, &dyn Fn() -> ProvingAssignment); 2] = [
        ("witness alone through the gadgets", &|| {
            compiled.witness_sectioned(&gadgets).unwrap_or_default()
        }),
        ("witness alone, native", &|| {
            compiled.witness_sectioned(circuit).unwrap_or_default()
        }),
    ];
    table(runs, circuit.sections(), &paths);
    Ok(())
}

/// An update of `sector` (sealed in `cache`) with random data: its partition's native witness
/// checked against filecoin's own circuit and against the gadgets', then timed (PARAMS_DIR must
/// hold the update's parameters: `cuzk setup --snap 2KiB`).
fn witness_of_snap(
    sector: &SealedSector,
    cache: &Path,
    dir: &Path,
    runs: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let snap = snap_update(sector, cache, &mut rand::rngs::OsRng)?;
    let (compiled, _) = compiled_r1cs(&ParamFiles::new(dir, snap.proof)?)?;
    println!("{}:", snap.proof);
    let circuits = SnapCircuits::<SectorShape2KiB>::new(&snap)?;
    let circuit = circuits.partition(0).circuit;
    if compiled.witness_sectioned(&circuit)? != compiled.witness(circuit.clone())? {
        return Err("the native witness differs from filecoin's circuit's".into());
    }
    native_against_gadgets(&compiled, &circuit, runs)
}

/// WinningPoSt and WindowPoSt of `sector` (sealed in `cache`): each circuit's native witness
/// against its gadgets' (PARAMS_DIR must hold both PoSt parameter sets: `cuzk setup
/// --winning-post 2KiB --window-post 2KiB`).
fn witness_of_posts(
    sector: &SealedSector,
    cache: &Path,
    dir: &Path,
    runs: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    for kind in [PostKind::Winning, PostKind::Window] {
        let proof = PostProof {
            kind,
            size: SectorSize::S2KiB,
        };
        let randomness = [7u8; 32];
        let request = PostRequest {
            proof,
            vanilla_proofs: post_vanilla_proofs(proof, &[(sector, cache)], randomness)?,
            randomness,
            prover_id: sector.identity.prover_id,
            partition: 0,
        };
        let (compiled, _) = compiled_r1cs(&ParamFiles::new(dir, proof)?)?;
        println!("{proof}:");
        let circuits = PostCircuits::<SectorShape2KiB>::new(&request)?;
        native_against_gadgets(&compiled, &circuits.circuit, runs)?;
    }
    Ok(())
}

/// CPU time of this process, every thread's.
fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

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
    // `cargo bench` adds `--bench`; a run over every bench without a directory only says how.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let usage = "usage: synthesis_speed PARAMS_DIR [RUNS] [--c1 FILE] [--post] [--snap] \
                 [--witness-only] [--bellperson]";
    let Some(dir) = args.first().map(PathBuf::from) else {
        eprintln!("{usage}");
        return Ok(());
    };
    let runs: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(3);
    let flag = |name: &str| args.iter().any(|a| a == name);
    use_parameter_dir(&dir)?;
    if let Some(at) = args.iter().position(|a| a == "--c1") {
        let c1 = C1Output::read(&PathBuf::from(args.get(at + 1).ok_or(usage)?), None)?;
        let size = c1.proof.size.bytes();
        return with_shape!(size, witness_of_c1, &c1, &dir, runs,);
    }
    let proof = SealProof::current(SectorSize::S2KiB);
    let work = tempfile::tempdir()?;
    let sector = seal_random_sector(proof, work.path(), None, &mut rand::rngs::OsRng)?;
    let (compiled, origin) = compiled_r1cs(&ParamFiles::new(&dir, proof)?)?;
    println!("compiled R1CS: {origin:?}, nnz {:?}", compiled.nnz());
    if flag("--post") {
        return witness_of_posts(&sector, work.path(), &dir, runs);
    }
    if flag("--snap") {
        return witness_of_snap(&sector, work.path(), &dir, runs);
    }
    let circuits = SectorCircuits::<SectorShape2KiB>::new(&sector.c1)?;
    let circuit = &circuits.circuits[0];

    if flag("--witness-only") {
        // For a profiler: nothing but the witness path, `runs` times.
        let (wall, _) = timed(runs, &|| {
            compiled.witness_sectioned(circuit).unwrap_or_default()
        });
        let (min, median) = median(wall);
        println!("witness alone: min {min:.3} s median {median:.3} s");
        return Ok(());
    }
    let gadgets = ThroughGadgets(circuit);
    let paths: [(&str, &dyn Fn() -> ProvingAssignment); 5] = [
        ("direct synthesis (the reference)", &|| {
            ProvingAssignment::synthesize(circuit.clone()).unwrap_or_default()
        }),
        ("compiled, witness through the gadgets", &|| {
            compiled.synthesize_sectioned(&gadgets).unwrap_or_default()
        }),
        ("compiled, native witness", &|| {
            compiled.synthesize_sectioned(circuit).unwrap_or_default()
        }),
        ("witness alone through the gadgets", &|| {
            compiled.witness_sectioned(&gadgets).unwrap_or_default()
        }),
        ("witness alone, native", &|| {
            compiled.witness_sectioned(circuit).unwrap_or_default()
        }),
    ];
    table(runs, circuit.sections(), &paths);

    if flag("--bellperson") {
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
