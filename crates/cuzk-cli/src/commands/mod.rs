//! One module per subcommand: each validates its arguments, then calls the libraries.

pub mod analyze;
pub mod bench;
pub mod bench_kernels;
pub mod bench_prover;
pub mod client;
pub mod demo;
pub mod doctor;
pub mod porep;
pub mod post;
pub mod prove;
pub mod request;
pub mod serve;
pub mod setup;
pub mod snap;
pub mod verify;

use std::path::Path;

use anyhow::{Context, Result};
use cuzk_pipeline::engine::{auto_memory_budget, HostMemory};
use serde_json::{json, Value};

use crate::args::{GlobalArgs, MemoryArg};
use crate::Outcome;

/// The host memory a run may use, everything it holds counted: `--memory-budget` as given, or
/// the automatic budget (the machine's memory, or its cgroup's limit when lower, less a margin).
pub fn host_memory(arg: MemoryArg) -> Result<HostMemory> {
    Ok(match arg {
        MemoryArg::Bytes(bytes) => HostMemory::new(bytes, "--memory-budget"),
        MemoryArg::Auto => auto_memory_budget().context("--memory-budget auto")?,
    })
}

/// Writes a small output file atomically (temporary file, then rename).
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    cuzk_groth16::params_file::write_atomically(path, |out| out.write_all(bytes))
        .with_context(|| format!("writing {}", path.display()))
}

/// Writes a Filecoin proof to `out` and reports it: `fields` with the file and the proving time
/// under `--json`, else one line.
pub fn write_proof(
    global: &GlobalArgs,
    out: &Path,
    bytes: &[u8],
    elapsed: std::time::Duration,
    mut fields: Value,
) -> Result<Outcome> {
    write_output(out, bytes)?;
    if global.json {
        fields["proof"] = json!(out);
        fields["prove_s"] = json!(elapsed.as_secs_f64());
        outln!("{fields}");
    } else {
        outln!("wrote {} ({} bytes)", out.display(), bytes.len());
    }
    Ok(Outcome::Success)
}

/// Reports a verification verdict, as `fields` with `"valid"` added under `--json` or as one word,
/// and the outcome it exits with (valid: success; invalid: rejected).
pub fn verdict(global: &GlobalArgs, valid: bool, mut fields: Value) -> Outcome {
    if global.json {
        fields["valid"] = Value::Bool(valid);
        outln!("{fields}");
    } else {
        outln!("{}", if valid { "valid" } else { "INVALID" });
    }
    if valid {
        Outcome::Success
    } else {
        Outcome::Rejected
    }
}
