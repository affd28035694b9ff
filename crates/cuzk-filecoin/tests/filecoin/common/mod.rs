//! What the Filecoin tests share: one parameter directory under the target directory (kept
//! between runs) and each circuit's parameters in it, made on first use.

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

use cuzk_filecoin::{use_parameter_dir, CircuitId, ParamFiles};
use cuzk_groth16::backend::CpuBackend;
use cuzk_groth16::params_file::PointCheck;
use cuzk_groth16::setup::Multiplier;
use cuzk_groth16::Parameters;
use cuzk_pipeline::sink::MemorySink;
use cuzk_pipeline::{Engine, EngineConfig};

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
