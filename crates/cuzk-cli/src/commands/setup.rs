//! `cuzk setup`: random test parameters for a built-in circuit.

use std::path::Path;

use anyhow::{bail, Context, Result};
use cuzk_filecoin::{CircuitId, PostKind, PostProof, SealProof, UpdateProof};
use cuzk_groth16::setup::{generate_parameters_on, Multiplier, ToxicWaste};
use cuzk_groth16::Parameters;
use rand::rngs::OsRng;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::json;

use crate::args::{GlobalArgs, SetupArgs};
use crate::circuit::CircuitSpec;
use crate::progress::Progress;
use crate::{backend, Outcome};

/// Generates and writes parameters; returns them for callers that go on to prove.
/// Where the toxic waste comes from: the OS, or `seed` (reproducible, forgeable).
pub fn toxic_rng(seed: Option<u64>) -> Box<dyn RngCore> {
    match seed {
        Some(seed) => Box::new(ChaCha20Rng::seed_from_u64(seed)),
        None => Box::new(OsRng),
    }
}

pub fn generate(
    spec: &CircuitSpec,
    out: &Path,
    multiplier: &Multiplier,
    rng: &mut impl RngCore,
    progress: Progress,
) -> Result<(Parameters, f64)> {
    let (params, elapsed) = progress.stage(
        "generating parameters (random, NOT a trusted setup)",
        || match spec {
            CircuitSpec::Synthetic(c) => {
                generate_parameters_on(c.clone(), &ToxicWaste::random(rng), multiplier)
            }
        },
    );
    let params = params.context("setup failed")?;
    let (written, _) = progress.stage("writing parameters", || params.write_file(out));
    written?;
    Ok((params, elapsed.as_secs_f64()))
}

pub fn run(global: &GlobalArgs, args: SetupArgs) -> Result<Outcome> {
    let filecoin = match (
        &args.porep,
        &args.winning_post,
        &args.window_post,
        &args.snap,
    ) {
        (Some(proof), ..) => Some(CircuitId::from(SealProof::from_size_or_name(proof)?)),
        (_, Some(proof), ..) => Some(CircuitId::from(PostProof::from_size_or_name(
            proof,
            PostKind::Winning,
        )?)),
        (_, _, Some(proof), _) => Some(CircuitId::from(PostProof::from_size_or_name(
            proof,
            PostKind::Window,
        )?)),
        (.., Some(proof)) => Some(CircuitId::from(UpdateProof::from_size_or_name(proof)?)),
        _ => None,
    };
    if let Some(circuit) = filecoin {
        return super::porep::setup(global, circuit, &args);
    }
    let Some(circuit) = &args.circuit else {
        bail!("give a circuit (--constraints N), --porep, --winning-post, --window-post or --snap SIZE");
    };
    let spec = CircuitSpec::from_args(circuit)?;
    let progress = Progress::new(global.json);
    if !global.json {
        eprintln!("{}", spec.describe());
    }
    let multiplier = backend::multiplier(args.backend, global, global.json)?;
    let (params, seconds) = generate(
        &spec,
        &args.out,
        &multiplier,
        &mut toxic_rng(args.toxic_seed),
        progress,
    )?;
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
