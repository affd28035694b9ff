//! `cuzk bench-prover`: the prover's time excluding synthesis, stage by stage.
//!
//! Generates random parameters for the circuit (not timed), then for one warm-up and `--runs`
//! timed proofs: synthesises (timed apart) and runs the backend's `prove_start` (wall clock), with
//! the stages the backend reports. Prints the medians, and the spread of `prove_start` (on a GPU
//! its runs differ by how the device interleaves the MSMs' streams); the last proof is checked to
//! verify.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use cuzk_groth16::{prove_finish, verify_proof, PreparedVerifyingKey, Randomness, Unshared};
use cuzk_synth::ProvingAssignment;
use rand::rngs::OsRng;
use serde_json::json;

use crate::args::{BenchProverArgs, GlobalArgs};
use crate::circuit::CircuitSpec;
use crate::progress::Progress;
use crate::{backend, Outcome};

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The smallest and largest value (NaN for none).
fn spread(values: &[f64]) -> (f64, f64) {
    let min = values.iter().copied().min_by(f64::total_cmp);
    let max = values.iter().copied().max_by(f64::total_cmp);
    (min.unwrap_or(f64::NAN), max.unwrap_or(f64::NAN))
}

pub fn run(global: &GlobalArgs, args: BenchProverArgs) -> Result<Outcome> {
    let CircuitSpec::Synthetic(circuit) = CircuitSpec::from_args(&args.circuit)?;
    let progress = Progress::new(global.json);
    if !global.json {
        eprintln!("{}", CircuitSpec::Synthetic(circuit.clone()).describe());
    }
    let backend = backend::select(args.backend, global)?;
    let multiplier = backend::multiplier(args.backend, global, true)?;
    let spec = CircuitSpec::Synthetic(circuit.clone());
    let (params, _) = progress.stage(
        "generating parameters (random, NOT a trusted setup)",
        || spec.random_parameters(&multiplier),
    );
    let params = params.context("setup failed")?;
    let (mut synth_ms, mut prove_ms) = (Vec::new(), Vec::new());
    let mut stages: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    let mut last = None;
    for run in 0..=args.runs.max(1) {
        let start = Instant::now();
        let assignment = ProvingAssignment::synthesize(circuit.clone())?;
        let synthesized = Instant::now();
        let started = backend.prove_start(&params, assignment, &Unshared)?;
        let done = Instant::now();
        if run > 0 {
            synth_ms.push((synthesized - start).as_secs_f64() * 1e3);
            prove_ms.push((done - synthesized).as_secs_f64() * 1e3);
            for m in &started.stages {
                stages.entry(m.key).or_default().push(m.value);
            }
            if args.each_run && !global.json {
                let line: Vec<String> = started
                    .stages
                    .iter()
                    .map(|m| format!("{} {:.2}", m.key, m.value))
                    .collect();
                let ms = prove_ms.last().copied().unwrap_or(f64::NAN);
                outln!("run {run}: prove_start {ms:.2} ms; {}", line.join(", "));
            }
        }
        last = Some(started.sums);
    }
    let sums = last.context("no proof was run")?;
    let proof = prove_finish(&params.vk, &sums, Randomness::random(&mut OsRng));
    let pvk = PreparedVerifyingKey::new(&params.vk);
    let valid = verify_proof(&pvk, &proof, &circuit.public_input_values())?;
    ensure!(
        valid,
        "the benchmarked prover made a proof that does not verify"
    );

    let stage_medians: BTreeMap<&str, f64> =
        stages.into_iter().map(|(k, v)| (k, median(v))).collect();
    let (fastest, slowest) = spread(&prove_ms);
    let (synth, prove) = (median(synth_ms), median(prove_ms));
    if global.json {
        outln!(
            "{}",
            json!({
                "backend": backend.name(),
                "constraints": circuit.constraints,
                "boolean_fraction": circuit.boolean_fraction,
                "runs": args.runs,
                "synthesis_ms": synth,
                "prove_start_ms": prove,
                "prove_start_min_ms": fastest,
                "prove_start_max_ms": slowest,
                "stages": stage_medians,
            })
        );
    } else {
        outln!("backend {}, median of {} runs", backend.name(), args.runs);
        outln!("synthesis      {synth:>10.2} ms");
        outln!("prove_start    {prove:>10.2} ms  (runs {fastest:.2} to {slowest:.2})");
        for (key, value) in &stage_medians {
            outln!("  {key:<16} {value:>12.2}");
        }
    }
    Ok(Outcome::Success)
}
