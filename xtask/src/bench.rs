//! `cargo xtask bench [NAME]`: the criterion benchmarks, in release mode.

use std::process::Command;

use anyhow::{bail, Context, Result};

/// Benches and the crate that owns each.
const BENCHES: [(&str, &str); 5] = [
    ("prover", "cuzk-groth16"),
    ("packing", "cuzk-gpu"),
    ("setup", "cuzk-groth16"),
    ("math", "cuzk-math"),
    ("witness", "cuzk-synth"),
];

/// Runs all benches, or the one named `only`, and prints where the reports are.
pub fn run(only: Option<&str>) -> Result<()> {
    let selected: Vec<_> = BENCHES
        .iter()
        .filter(|(name, _)| only.is_none_or(|o| o == *name))
        .collect();
    if selected.is_empty() {
        bail!(
            "unknown bench {:?}; known: prover, packing, setup, math, witness",
            only.unwrap_or_default()
        );
    }
    for (name, package) in selected {
        cargo(&["bench", "-p", package, "--bench", name])?;
    }
    println!("criterion reports: target/criterion/report/index.html");
    Ok(())
}

fn cargo(args: &[&str]) -> Result<()> {
    let cargo = crate::cargo_program();
    let status = Command::new(&cargo)
        .args(args)
        .status()
        .with_context(|| format!("running {cargo} {}", args.join(" ")))?;
    if !status.success() {
        bail!("{cargo} {} failed: {status}", args.join(" "));
    }
    Ok(())
}
