//! Choosing the prover backend (`cuzk_groth16::backend::select`, from `--backend`).

use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use cuzk_gpu::{Lane, MemoryBudget};
use cuzk_groth16::backend::{self as backends, BackendChoice as Choice, DeviceOptions};
use cuzk_groth16::setup::Multiplier;
use cuzk_groth16::ProverBackend;

use crate::args::{BackendChoice, GlobalArgs, MemoryArg};

impl From<BackendChoice> for Choice {
    fn from(choice: BackendChoice) -> Self {
        match choice {
            BackendChoice::Auto => Choice::Auto,
            BackendChoice::Cpu => Choice::Cpu,
            BackendChoice::Gpu => Choice::Gpu,
        }
    }
}

/// One backend per device to prove with (`devices`, by ordinal, or every GPU; one CPU backend
/// when there is no GPU), each with `--gpu-memory`. `Auto` falls back to the CPU and says why,
/// once (not with `--json`).
pub fn select_all(
    choice: BackendChoice,
    devices: Option<&[usize]>,
    global: &GlobalArgs,
) -> Result<Vec<Arc<dyn ProverBackend>>> {
    let options = DeviceOptions {
        staging_threads: None,
        memory_limit: memory_limit(global),
    };
    let selection = backends::select(choice.into(), devices, &options)
        .context("--backend/--devices/--gpu-memory")?;
    if let (Some(why), false) = (&selection.fallback, global.json) {
        eprintln!("cuzk: no usable GPU ({why}); proving on the CPU");
    }
    Ok(selection.backends)
}

/// The backend of the first device (or the CPU), for single proofs.
pub fn select(choice: BackendChoice, global: &GlobalArgs) -> Result<Arc<dyn ProverBackend>> {
    select_all(choice, None, global)?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("no prover backend"))
}

/// `--gpu-memory` in bytes (`None`: auto).
fn memory_limit(global: &GlobalArgs) -> Option<u64> {
    match global.gpu_memory {
        MemoryArg::Auto => None,
        MemoryArg::Bytes(bytes) => Some(bytes),
    }
}

/// The first GPU, opened with `--gpu-memory`.
pub fn first_gpu(global: &GlobalArgs) -> Result<Arc<Lane>, cuzk_gpu::GpuError> {
    let budget = match memory_limit(global) {
        Some(bytes) => MemoryBudget::Bytes(usize::try_from(bytes).unwrap_or(usize::MAX)),
        None => MemoryBudget::FreeAtStart,
    };
    Lane::open(0, budget)
}

/// Where setup multiplies its points: the first GPU, or the CPU (`Auto` falls back and says why
/// unless `quiet`).
pub fn multiplier(choice: BackendChoice, global: &GlobalArgs, quiet: bool) -> Result<Multiplier> {
    match choice {
        BackendChoice::Cpu => Ok(Multiplier::Cpu),
        BackendChoice::Gpu => Ok(Multiplier::gpu(first_gpu(global).context("--backend gpu")?)),
        BackendChoice::Auto => Ok(match first_gpu(global) {
            Ok(gpu) => Multiplier::gpu(gpu),
            Err(why) => {
                if !quiet {
                    eprintln!("cuzk: no usable GPU ({why}); setting up on the CPU");
                }
                Multiplier::Cpu
            }
        }),
    }
}
