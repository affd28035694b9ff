//! Choosing the prover backend.

use anyhow::{bail, Result};
use cuzk_groth16::backend::CpuBackend;
use cuzk_groth16::ProverBackend;

use crate::args::BackendChoice;

/// The backend to prove with. `Auto` falls back to the CPU and says why, once.
pub fn select(choice: BackendChoice, quiet: bool) -> Result<Box<dyn ProverBackend>> {
    let gpu = cuzk_gpu::probe();
    match (choice, gpu) {
        (BackendChoice::Cpu, _) => Ok(Box::new(CpuBackend)),
        (BackendChoice::Gpu, Err(why)) => bail!("--backend gpu: no usable GPU: {why}"),
        (BackendChoice::Auto, Err(why)) => {
            if !quiet {
                eprintln!("cuzk: no usable GPU ({why}); proving on the CPU");
            }
            Ok(Box::new(CpuBackend))
        }
        (BackendChoice::Auto, Ok(devices)) => {
            if !quiet {
                eprintln!(
                    "cuzk: found {} GPU(s), but this build has no GPU prover yet; proving on the CPU",
                    devices.len()
                );
            }
            Ok(Box::new(CpuBackend))
        }
        (BackendChoice::Gpu, Ok(_)) => bail!("--backend gpu: this build has no GPU prover yet"),
    }
}
