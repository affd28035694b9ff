//! Choosing the prover backend (`cuzk_groth16::backend::select`, from `--backend`).

use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use cuzk_gpu::Gpu;
use cuzk_groth16::backend::{self as backends, BackendChoice as Choice};
use cuzk_groth16::setup::Multiplier;
use cuzk_groth16::ProverBackend;

use crate::args::BackendChoice;

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
/// when there is no GPU). `Auto` falls back to the CPU and says why, once.
pub fn select_all(
    choice: BackendChoice,
    devices: Option<&[usize]>,
    quiet: bool,
) -> Result<Vec<Arc<dyn ProverBackend>>> {
    let selection =
        backends::select(choice.into(), devices, None).context("--backend/--devices")?;
    if let (Some(why), false) = (&selection.fallback, quiet) {
        eprintln!("cuzk: no usable GPU ({why}); proving on the CPU");
    }
    Ok(selection.backends)
}

/// The backend of the first device (or the CPU), for single proofs.
pub fn select(choice: BackendChoice, quiet: bool) -> Result<Arc<dyn ProverBackend>> {
    select_all(choice, None, quiet)?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("no prover backend"))
}

/// Where setup multiplies its points: the first GPU, or the CPU (`Auto` falls back and says why).
pub fn multiplier(choice: BackendChoice, quiet: bool) -> Result<Multiplier> {
    match choice {
        BackendChoice::Cpu => Ok(Multiplier::Cpu),
        BackendChoice::Gpu => Ok(Multiplier::Gpu(Gpu::first().context("--backend gpu")?)),
        BackendChoice::Auto => Ok(match Gpu::first() {
            Ok(gpu) => Multiplier::Gpu(gpu),
            Err(why) => {
                if !quiet {
                    eprintln!("cuzk: no usable GPU ({why}); setting up on the CPU");
                }
                Multiplier::Cpu
            }
        }),
    }
}
