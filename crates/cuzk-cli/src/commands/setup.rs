//! `cuzk setup`: random test parameters for a built-in circuit.

use std::path::Path;

use anyhow::{bail, Context, Result};
use cuzk_groth16::setup::generate_random_parameters;
use cuzk_groth16::Parameters;
use serde_json::json;

use crate::args::{GlobalArgs, SetupArgs};
use crate::circuit::CircuitSpec;
use crate::progress::Progress;
use crate::Outcome;

/// Generates and writes parameters; returns them for callers that go on to prove.
pub fn generate(spec: &CircuitSpec, out: &Path, progress: Progress) -> Result<(Parameters, f64)> {
    let mut rng = rand::rngs::OsRng;
    let (params, elapsed) = progress.stage(
        "generating parameters (random, NOT a trusted setup)",
        || match spec {
            CircuitSpec::Synthetic(c) => generate_random_parameters(c.clone(), &mut rng),
        },
    );
    let params = params.context("setup failed")?;
    let (written, _) = progress.stage("writing parameters", || params.write_file(out));
    written?;
    Ok((params, elapsed.as_secs_f64()))
}

pub fn run(global: &GlobalArgs, args: SetupArgs) -> Result<Outcome> {
    let circuit = match (&args.porep, &args.circuit) {
        (Some(proof), _) => return super::porep::setup(global, proof, &args.out),
        (None, Some(circuit)) => circuit,
        (None, None) => bail!("give a circuit (--constraints N) or --porep SIZE"),
    };
    let spec = CircuitSpec::from_args(circuit)?;
    let progress = Progress::new(global.json);
    if !global.json {
        eprintln!("{}", spec.describe());
    }
    let (params, seconds) = generate(&spec, &args.out, progress)?;
    let summary = json!({
        "params": args.out,
        "public_inputs": params.vk.ic.len() - 1,
        "aux": params.l.len(),
        "domain_size": params.h.len() + 1,
        "file_bytes": params.file_size(),
        "setup_s": seconds,
    });
    if global.json {
        println!("{summary}");
    } else {
        println!(
            "wrote {} ({} bytes, domain 2^{})",
            args.out.display(),
            params.file_size(),
            (params.h.len() + 1).trailing_zeros()
        );
    }
    Ok(Outcome::Success)
}
