//! `cuzk prove`: synthesize a built-in circuit and prove it.

use std::path::Path;

use anyhow::{bail, Context, Result};
use cuzk_groth16::params_file::PointCheck;
use cuzk_groth16::{prove_finish, Parameters, Proof, ProverBackend, Randomness, Unshared};
use cuzk_math::Scalar;
use cuzk_synth::ProvingAssignment;
use serde_json::{json, Value};

use crate::args::{CircuitArgs, GlobalArgs, ProveArgs, ProveCommand, ProveTarget};
use crate::circuit::CircuitSpec;
use crate::progress::Progress;
use crate::{backend, inputs, Outcome};

/// A proof with its public inputs and the time each stage took.
pub struct Proven {
    pub proof: Proof,
    pub public_inputs: Vec<Scalar>,
    pub timings: Value,
}

/// Synthesizes and proves `spec` with `backend`.
pub fn prove_circuit(
    spec: &CircuitSpec,
    params: &Parameters,
    backend: &dyn ProverBackend,
    progress: Progress,
) -> Result<Proven> {
    let (assignment, synth) = progress.stage("synthesizing", || match spec {
        CircuitSpec::Synthetic(c) => ProvingAssignment::synthesize(c.clone()),
    });
    let assignment = assignment.context("synthesis failed")?;
    let public_inputs = assignment.input_assignment[1..].to_vec();
    let (sums, start) = progress.stage(&format!("prove_start on {}", backend.name()), || {
        backend
            .prove_start(params, assignment, &Unshared)
            .map(|started| started.sums)
    });
    let sums = sums?;
    let (proof, finish) = progress.stage("prove_finish", || {
        prove_finish(
            &params.vk,
            &sums,
            Randomness::random(&mut rand::rngs::OsRng),
        )
    });
    Ok(Proven {
        proof,
        public_inputs,
        timings: json!({
            "backend": backend.name(),
            "synthesis_s": synth.as_secs_f64(),
            "prove_start_s": start.as_secs_f64(),
            "prove_finish_s": finish.as_secs_f64(),
        }),
    })
}

/// Loads a parameters file under a spinner.
pub fn load_params(path: &Path, check: PointCheck, progress: Progress) -> Result<Parameters> {
    let (params, _) = progress.stage("loading parameters", || Parameters::read_file(path, check));
    Ok(params?)
}

pub fn run(global: &GlobalArgs, command: ProveCommand) -> Result<Outcome> {
    match (command.target, command.args, command.circuit) {
        (Some(ProveTarget::Porep(args)), _, _) => super::porep::prove(global, args),
        (Some(ProveTarget::WinningPost(args)), _, _) => super::post::prove(global, args, true),
        (Some(ProveTarget::WindowPost(args)), _, _) => super::post::prove(global, args, false),
        (Some(ProveTarget::Snap(args)), _, _) => super::snap::prove(global, args),
        (None, Some(args), Some(circuit)) => prove(global, args, &circuit),
        _ => bail!("give a circuit to prove (--params … --constraints …) or `prove porep`"),
    }
}

fn prove(global: &GlobalArgs, args: ProveArgs, circuit: &CircuitArgs) -> Result<Outcome> {
    let spec = CircuitSpec::from_args(circuit)?;
    let progress = Progress::new(global.json);
    let backend = backend::select(args.backend, global)?;
    let check = if args.unchecked_params {
        PointCheck::Unchecked
    } else {
        PointCheck::Checked
    };
    let params = load_params(&args.params, check, progress)?;
    let proven = prove_circuit(&spec, &params, backend.as_ref(), progress)
        .with_context(|| format!("proving with {}", args.params.display()))?;
    super::write_output(&args.proof_out, &proven.proof.to_bytes())?;
    if let Some(path) = &args.inputs_out {
        super::write_output(path, inputs::to_json(&proven.public_inputs).as_bytes())?;
    }
    if global.json {
        outln!(
            "{}",
            json!({
                "proof": args.proof_out,
                "inputs": args.inputs_out,
                "timings": proven.timings,
            })
        );
    } else {
        outln!("wrote {}", args.proof_out.display());
    }
    Ok(Outcome::Success)
}
