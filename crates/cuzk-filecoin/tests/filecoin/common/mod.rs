//! What the Filecoin tests share: one parameter directory under the target directory (kept
//! between runs) and each circuit's parameters in it, made on first use.

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

use bellpepper_core::Circuit;
use cuzk_filecoin::{compiled_r1cs, use_parameter_dir, CircuitId, ParamFiles, R1csOrigin};
use cuzk_groth16::backend::CpuBackend;
use cuzk_groth16::params_file::PointCheck;
use cuzk_groth16::setup::Multiplier;
use cuzk_groth16::Parameters;
use cuzk_math::Scalar;
use cuzk_pipeline::sink::MemorySink;
use cuzk_pipeline::{Engine, EngineConfig};
use cuzk_synth::{CompiledR1cs, ProvingAssignment};

/// The parameter directory, set as filecoin-proofs' before any other Filecoin call (it reads its
/// settings once).
pub fn params_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuzk-filecoin-params");
        std::fs::create_dir_all(&dir).unwrap();
        use_parameter_dir(&dir).unwrap();
        dir
    })
}

/// `circuit`'s parameters in [`params_dir`]: read, or made (toxic waste from `rng`) and written
/// on first use.
pub fn parameters<C: Into<CircuitId> + Display + Copy>(
    circuit: C,
    rng: &mut impl rand::RngCore,
) -> (ParamFiles, Parameters) {
    // One test at a time: two making the same files at once would each prove with their own
    // while the verifier reads whichever was renamed into place last.
    static MAKING: Mutex<()> = Mutex::new(());
    let _making = MAKING.lock().unwrap_or_else(PoisonError::into_inner);
    let dir = params_dir();
    let files = ParamFiles::new(dir, circuit).unwrap();
    if files.params.is_file() && files.vk.is_file() {
        let params = files.load(PointCheck::Unchecked).unwrap();
        return (files, params);
    }
    let start = Instant::now();
    let (files, params) = ParamFiles::generate(dir, circuit, rng, &Multiplier::Cpu).unwrap();
    eprintln!(
        "setup of {circuit}: {:.1} s (domain {}, {} aux)",
        start.elapsed().as_secs_f64(),
        params.h.len() + 1,
        params.l.len()
    );
    (files, params)
}

/// `run` against an engine on the CPU backend (one synthesis worker), on a runtime of its own.
pub fn on_cpu_engine<T>(run: impl AsyncFnOnce(&Engine) -> T) -> T {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let engine = Engine::start(
            EngineConfig::new(1, 16 << 30),
            vec![std::sync::Arc::new(CpuBackend)],
            std::sync::Arc::new(MemorySink::default()),
        )
        .unwrap();
        run(&engine).await
    })
}

/// Two ways to a circuit's witness, each on one thread for its CPU time (printed): `ours` and
/// the `reference` it must equal, value for value.
pub fn same_witness_on_one_thread(
    what: &str,
    ours: &(dyn Fn() -> ProvingAssignment + Sync),
    reference: &(dyn Fn() -> ProvingAssignment + Sync),
) {
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let timed = |witness: &(dyn Fn() -> ProvingAssignment + Sync)| {
        let start = Instant::now();
        let assignment = one_thread.install(witness);
        (assignment, start.elapsed().as_secs_f64())
    };
    let (ours, ours_s) = timed(ours);
    let (theirs, theirs_s) = timed(reference);
    eprintln!(
        "{what} witness on one thread: re-implemented (native SHA-256 and Poseidon) {ours_s:.2} s, \
         the reference {theirs_s:.2} s"
    );
    assert!(ours == theirs, "{what}: the witnesses differ");
}

/// `proof`'s compiled R1CS as `compiled_r1cs` records it into an empty directory (side by side)
/// equals `whole`'s recording, the blank circuit's in one run.
pub fn recorded_as_whole<C: Circuit<Scalar>>(
    proof: impl Into<CircuitId> + Display + Copy,
    whole: C,
) {
    let dir = tempfile::tempdir().unwrap();
    let files = ParamFiles::new(dir.path(), proof).unwrap();
    let start = Instant::now();
    let (sectioned, origin) = compiled_r1cs(&files).unwrap();
    let sectioned_s = start.elapsed().as_secs_f64();
    assert!(matches!(origin, R1csOrigin::Recorded), "{origin:?}");
    let start = Instant::now();
    let whole = CompiledR1cs::record(whole).unwrap();
    eprintln!(
        "recording the {proof} R1CS: the blank circuit whole {:.2} s, side by side \
         {sectioned_s:.2} s (sampling included)",
        start.elapsed().as_secs_f64()
    );
    assert_eq!(*sectioned, whole, "{proof}");
}
