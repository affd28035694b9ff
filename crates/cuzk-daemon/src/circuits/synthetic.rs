//! Synthetic circuits of any size, served through the same machinery as Filecoin's: for tests
//! and benchmarks of the daemon itself (transport, ids, priorities, cancel, tiers, soak), where a
//! real proof would take seconds to minutes on a CPU.
//!
//! A request is a `POREP_SEAL_COMMIT` whose `vanilla_proof` is JSON: `{"constraints": N,
//! "partitions": P, "synthesis_delay_ms": D, "wrong_inputs": false}` (all but `constraints`
//! optional). It proves on circuit `synthetic-N`, whose parameters are generated on load from a
//! seed fixed by N. `synthesis_delay_ms` holds each partition in synthesis that long;
//! `wrong_inputs` hands the engine public inputs the proofs cannot verify against, so the job
//! fails in its finalizer.

use std::sync::Arc;
use std::time::Duration;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_groth16::setup::generate_random_parameters;
use cuzk_math::Scalar;
use cuzk_pipeline::{Devices, JobRequest, Partition};
use cuzk_synth::circuits::SyntheticCircuit;
use ff::Field;
use rand::SeedableRng;
use serde::Deserialize;

use super::{BuildJob, CircuitFiles, Circuits, ParamSet, PreparedJob, Work};
use crate::error::DaemonError;
use crate::kinds::Kind;
use crate::proto::SubmitProofRequest;

const PREFIX: &str = "synthetic-";

/// Serves [`SyntheticRequest`]s.
#[derive(Clone, Copy, Debug, Default)]
pub struct SyntheticCircuits;

/// What a synthetic request's `vanilla_proof` holds.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SyntheticRequest {
    pub constraints: usize,
    #[serde(default = "one")]
    pub partitions: usize,
    #[serde(default)]
    pub synthesis_delay_ms: u64,
    #[serde(default)]
    pub wrong_inputs: bool,
}

fn one() -> usize {
    1
}

impl SyntheticRequest {
    pub fn new(constraints: usize) -> Self {
        SyntheticRequest {
            constraints,
            partitions: 1,
            synthesis_delay_ms: 0,
            wrong_inputs: false,
        }
    }

    /// The request's `vanilla_proof` bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// The id of the synthetic circuit of `constraints` constraints.
pub fn synthetic_circuit(constraints: usize) -> String {
    format!("{PREFIX}{constraints}")
}

fn circuit_of(constraints: usize) -> SyntheticCircuit {
    SyntheticCircuit {
        constraints,
        boolean_fraction: 0.5,
        public_inputs: 2,
        seed: constraints as u64,
    }
}

fn constraints_of(circuit: &str) -> Result<usize, DaemonError> {
    circuit
        .strip_prefix(PREFIX)
        .and_then(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            DaemonError::invalid(
                "circuit_id",
                format!("unknown circuit {circuit:?} (this daemon serves synthetic-<constraints>)"),
            )
        })
}

impl Circuits for SyntheticCircuits {
    fn check(&self, request: SubmitProofRequest, kind: Kind) -> Result<Work, DaemonError> {
        if kind != Kind::PoRep {
            return Ok(Work::Unsupported(format!(
                "{} proofs are not served by the synthetic circuits",
                kind.title()
            )));
        }
        let spec: SyntheticRequest = serde_json::from_slice(&request.vanilla_proof)
            .map_err(|e| DaemonError::invalid("vanilla_proof", e.to_string()))?;
        if spec.constraints == 0 || spec.partitions == 0 {
            return Err(DaemonError::invalid(
                "vanilla_proof",
                "constraints and partitions must be at least 1",
            ));
        }
        Ok(Work::Prove {
            circuit: synthetic_circuit(spec.constraints),
            job: Arc::new(spec),
        })
    }

    fn on_disk(&self) -> Vec<String> {
        Vec::new()
    }

    fn describe(&self, circuit: &str) -> Result<CircuitFiles, DaemonError> {
        constraints_of(circuit)?;
        Ok(CircuitFiles {
            location: "generated on load".into(),
            bytes: None,
        })
    }

    fn load(&self, circuit: &str, _: &Devices) -> Result<ParamSet, String> {
        let constraints = constraints_of(circuit).map_err(|e| e.to_string())?;
        let mut rng = rand::rngs::StdRng::seed_from_u64(constraints as u64);
        let params = generate_random_parameters(circuit_of(constraints), &mut rng)
            .map_err(|e| e.to_string())?;
        Ok(ParamSet {
            bytes: params.file_size() as u64,
            key_bytes: params.file_size() as u64,
            params: Arc::new(params),
            compiled: None,
            r1cs_origin: None,
        })
    }
}

impl BuildJob for SyntheticRequest {
    fn build(self: Arc<Self>, id: &str, params: &ParamSet) -> Result<PreparedJob, String> {
        let circuit = circuit_of(self.constraints);
        let mut public_inputs = circuit.public_input_values();
        if self.wrong_inputs {
            public_inputs[0] += Scalar::ONE;
        }
        let delay = Duration::from_millis(self.synthesis_delay_ms);
        let partition = move |_| Partition {
            circuit: Delayed {
                circuit: circuit.clone(),
                delay,
            },
            public_inputs: public_inputs.clone(),
        };
        Ok(PreparedJob {
            request: JobRequest::new(id, Arc::clone(&params.params), self.partitions, partition),
            finish: Box::new(|output| Ok(output.proof_bytes())),
        })
    }
}

/// A circuit that takes `delay` before its synthesis: a partition held in synthesis on purpose.
#[derive(Clone)]
struct Delayed {
    circuit: SyntheticCircuit,
    delay: Duration,
}

impl Circuit<Scalar> for Delayed {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        std::thread::sleep(self.delay);
        self.circuit.synthesize(cs)
    }
}
