//! `cuzk demo`: the whole path on a built-in circuit, in a temporary directory.

use anyhow::{Context, Result};
use cuzk_groth16::params_file::PointCheck;
use cuzk_groth16::PreparedVerifyingKey;
use cuzk_synth::circuits::SyntheticCircuit;
use serde_json::json;

use crate::args::{DemoArgs, GlobalArgs};
use crate::circuit::CircuitSpec;
use crate::commands::{prove, setup, verify};
use crate::progress::Progress;
use crate::{backend, Outcome};

pub fn run(global: &GlobalArgs, args: DemoArgs) -> Result<Outcome> {
    let spec = CircuitSpec::Synthetic(SyntheticCircuit {
        constraints: args.constraints,
        boolean_fraction: args.boolean_fraction,
        public_inputs: 2,
        seed: args.seed,
    });
    let progress = Progress::new(global.json);
    if !global.json {
        eprintln!("{}", spec.describe());
    }
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let path = dir.path().join("synthetic.params");
    let backend = backend::select(args.backend, global)?;
    // The device that proves also sets up (the CPU's fallback was said by select).
    let multiplier = backend::multiplier(args.backend, global, true)?;
    let (_, setup_s) =
        setup::generate(&spec, &path, &multiplier, &mut rand::rngs::OsRng, progress)?;
    let params = prove::load_params(&path, PointCheck::Unchecked, progress)?;
    let proven = prove::prove_circuit(&spec, &params, backend.as_ref(), progress)?;
    let pvk = PreparedVerifyingKey::new(&params.vk);
    let (valid, verify_time) = progress.stage("verifying", || {
        verify::check(
            &pvk,
            &[proven.proof],
            std::slice::from_ref(&proven.public_inputs),
        )
    });
    let valid = valid?;
    Ok(super::verdict(
        global,
        valid,
        json!({
            "constraints": args.constraints,
            "setup_s": setup_s,
            "timings": proven.timings,
            "verify_s": verify_time.as_secs_f64(),
        }),
    ))
}
