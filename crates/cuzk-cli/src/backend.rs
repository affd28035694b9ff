//! Choosing the prover backend.

use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use cuzk_groth16::backend::{CpuBackend, GpuBackend};
use cuzk_groth16::ProverBackend;

use crate::args::BackendChoice;

/// One backend per device to prove with (one CPU backend when there is no GPU). `Auto` falls back
/// to the CPU and says why, once.
pub fn select_all(choice: BackendChoice, quiet: bool) -> Result<Vec<Arc<dyn ProverBackend>>> {
    let cpu = || -> Vec<Arc<dyn ProverBackend>> { vec![Arc::new(CpuBackend)] };
    match (choice, cuzk_gpu::probe()) {
        (BackendChoice::Cpu, _) => Ok(cpu()),
        (BackendChoice::Gpu, Err(why)) => bail!("--backend gpu: no usable GPU: {why}"),
        (BackendChoice::Auto, Err(why)) => {
            if !quiet {
                eprintln!("cuzk: no usable GPU ({why}); proving on the CPU");
            }
            Ok(cpu())
        }
        (BackendChoice::Gpu | BackendChoice::Auto, Ok(_)) => {
            let backends = GpuBackend::all().context("opening the GPUs")?;
            Ok(backends
                .into_iter()
                .map(|b| Arc::new(b) as Arc<dyn ProverBackend>)
                .collect())
        }
    }
}

/// The backend of the first device (or the CPU), for single proofs.
pub fn select(choice: BackendChoice, quiet: bool) -> Result<Arc<dyn ProverBackend>> {
    select_all(choice, quiet)?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("no prover backend"))
}
