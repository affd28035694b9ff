//! `cuzk setup`: random test parameters for a built-in circuit or a Filecoin circuit.

use std::path::Path;

use anyhow::{bail, Context, Result};
use cuzk_filecoin::{
    compiled_r1cs, CircuitId, ParamFiles, PostKind, PostProof, SealProof, UpdateProof,
};
use cuzk_groth16::setup::{generate_parameters_on, Multiplier, ToxicWaste};
use cuzk_groth16::Parameters;
use rand::rngs::OsRng;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::{json, Value};

use crate::args::{GlobalArgs, SetupArgs};
use crate::circuit::CircuitSpec;
use crate::progress::Progress;
use crate::{backend, Outcome};

/// Where the toxic waste comes from: the OS, or `seed` (reproducible, forgeable).
pub fn toxic_rng(seed: Option<u64>) -> Box<dyn RngCore> {
    match seed {
        Some(seed) => Box::new(ChaCha20Rng::seed_from_u64(seed)),
        None => Box::new(OsRng),
    }
}

/// Generates and writes parameters; returns them for callers that go on to prove.
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
        return setup_filecoin(global, circuit, &args);
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
    let fields = json!({ "params": args.out, "setup_s": seconds });
    let line = format!(
        "wrote {} ({} bytes, domain 2^{})",
        args.out.display(),
        params.file_size(),
        (params.h.len() + 1).trailing_zeros()
    );
    Ok(report(global, &params, fields, line))
}

/// Reports parameters written: `fields` and their sizes under `--json`, else `line`.
fn report(global: &GlobalArgs, params: &Parameters, mut fields: Value, line: String) -> Outcome {
    fields["public_inputs"] = json!(params.vk.ic.len() - 1);
    fields["aux"] = json!(params.l.len());
    fields["domain_size"] = json!(params.h.len() + 1);
    fields["file_bytes"] = json!(params.file_size());
    if global.json {
        outln!("{fields}");
    } else {
        outln!("{line}");
    }
    Outcome::Success
}

/// `cuzk setup --porep|--winning-post|--window-post|--snap`: test parameters for a Filecoin
/// circuit, with its compiled R1CS (recorded or read) beside them.
fn setup_filecoin(global: &GlobalArgs, circuit: CircuitId, args: &SetupArgs) -> Result<Outcome> {
    let out = &args.out;
    let multiplier = backend::multiplier(args.backend, global, global.json)?;
    let progress = Progress::new(global.json);
    eprintln!(
        "cuzk: WARNING: random test parameters for {circuit}, NOT the Filecoin network's: proofs \
         made with them verify only against this .vk, and they are not a trusted setup"
    );
    let files = ParamFiles::new(out, circuit)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    // Setup reads the circuit's compiled R1CS, which proving reads too: made (or read) first.
    let (compiled, r1cs_time) =
        progress.stage("recording the circuit's R1CS", || compiled_r1cs(&files));
    let (compiled, origin) = compiled?;
    let (generated, elapsed) = progress.stage("generating parameters", || {
        files.generate_for(&compiled, &mut toxic_rng(args.toxic_seed), &multiplier)
    });
    let params = generated?;
    let fields = json!({
        "circuit": circuit.to_string(),
        "params": files.params,
        "vk": files.vk,
        "r1cs": format!("{origin:?}"),
        "r1cs_s": r1cs_time.as_secs_f64(),
        "setup_s": elapsed.as_secs_f64(),
    });
    let line = format!(
        "wrote {} ({} bytes) and {}",
        files.params.display(),
        params.file_size(),
        files.vk.display()
    );
    Ok(report(global, &params, fields, line))
}
