//! `cuzk verify`: check proofs against the verifying key of a parameters file.

use std::path::Path;

use anyhow::{bail, Context, Result};
use cuzk_groth16::{verify_proof, PreparedVerifyingKey, Proof, VerifyingKey};
use cuzk_math::Scalar;
use serde_json::json;

use crate::args::{GlobalArgs, VerifyArgs, VerifyCommand, VerifyTarget};
use crate::{inputs, Outcome};

/// Checks every proof with its inputs; the first invalid one answers `false`.
pub fn check(pvk: &PreparedVerifyingKey, proofs: &[Proof], inputs: &[Vec<Scalar>]) -> Result<bool> {
    for (i, (proof, inputs)) in proofs.iter().zip(inputs).enumerate() {
        if !verify_proof(pvk, proof, inputs).with_context(|| format!("proof {i}"))? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn read_proofs(path: &Path) -> Result<Vec<Proof>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Proof::many_from_bytes(&bytes).with_context(|| format!("{}", path.display()))
}

pub fn run(global: &GlobalArgs, command: VerifyCommand) -> Result<Outcome> {
    match (command.target, command.proof) {
        (Some(VerifyTarget::Porep(args)), _) => super::porep::verify(global, args),
        (Some(VerifyTarget::WinningPost(args)), _) => super::post::verify(global, args, true),
        (Some(VerifyTarget::WindowPost(args)), _) => super::post::verify(global, args, false),
        (Some(VerifyTarget::Snap(args)), _) => super::snap::verify(global, args),
        (None, Some(args)) => verify(global, args),
        (None, None) => bail!("give a proof to verify (--params …) or `verify porep`"),
    }
}

fn verify(global: &GlobalArgs, args: VerifyArgs) -> Result<Outcome> {
    let vk = VerifyingKey::read_params_file(&args.params)?;
    let proofs = read_proofs(&args.proof)?;
    let mut public_inputs = inputs::read(&args.inputs)?;
    if public_inputs.len() == 1 && proofs.len() > 1 {
        public_inputs = vec![public_inputs[0].clone(); proofs.len()];
    }
    if public_inputs.len() != proofs.len() {
        bail!(
            "{} holds {} proofs but {} has inputs for {}",
            args.proof.display(),
            proofs.len(),
            args.inputs.display(),
            public_inputs.len()
        );
    }
    let pvk = PreparedVerifyingKey::new(&vk);
    let valid = check(&pvk, &proofs, &public_inputs).with_context(|| {
        format!(
            "{} against {}",
            args.inputs.display(),
            args.params.display()
        )
    })?;
    Ok(super::verdict(
        global,
        valid,
        json!({ "proofs": proofs.len() }),
    ))
}
