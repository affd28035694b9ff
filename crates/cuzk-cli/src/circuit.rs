//! Built-in circuits as the CLI names them, validated.

use anyhow::{ensure, Result};
use cuzk_groth16::setup::{generate_parameters_on, Multiplier, ToxicWaste};
use cuzk_groth16::Parameters;
use cuzk_synth::circuits::SyntheticCircuit;

use crate::args::{CircuitArgs, CircuitKind};

/// A validated circuit choice.
#[derive(Debug, Clone)]
pub enum CircuitSpec {
    Synthetic(SyntheticCircuit),
}

impl CircuitSpec {
    pub fn from_args(args: &CircuitArgs) -> Result<Self> {
        match args.circuit {
            CircuitKind::Synthetic => {
                ensure!(
                    (0.0..=1.0).contains(&args.boolean_fraction),
                    "--boolean-fraction must be between 0 and 1, got {}",
                    args.boolean_fraction
                );
                ensure!(args.constraints > 0, "--constraints must be at least 1");
                Ok(CircuitSpec::Synthetic(SyntheticCircuit {
                    constraints: args.constraints,
                    boolean_fraction: args.boolean_fraction,
                    public_inputs: args.public_inputs,
                    seed: args.seed,
                }))
            }
        }
    }

    /// Parameters from fresh toxic waste (NOT a trusted setup), multiplied out by `multiplier`:
    /// a 2^24-constraint set takes minutes on the CPU, seconds on a GPU.
    pub fn random_parameters(&self, multiplier: &Multiplier) -> Result<Parameters> {
        let toxic = ToxicWaste::random(&mut rand::rngs::OsRng);
        match self {
            CircuitSpec::Synthetic(c) => Ok(generate_parameters_on(c.clone(), &toxic, multiplier)?),
        }
    }

    /// A one-line description for logs.
    pub fn describe(&self) -> String {
        match self {
            CircuitSpec::Synthetic(c) => format!(
                "synthetic circuit: {} constraints, {:.0}% boolean, {} public inputs, seed {}",
                c.constraints,
                c.boolean_fraction * 100.0,
                c.public_inputs,
                c.seed
            ),
        }
    }
}
