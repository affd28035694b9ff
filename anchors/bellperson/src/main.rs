//! `bellperson-anchor`: an anchor for cuzk's PoSt timings. It proves cuzk's PoSt request files
//! with filecoin-proofs' own prover (bellperson, on the GPU through its `cuda` feature) from
//! the same parameter files, so both provers can be timed on one circuit and one machine.
//!
//! - [`request`]: cuzk's request files and the registered PoSt proofs' configurations.
//! - [`prove`]: filecoin-proofs' provers and verifiers for one request.
//! - [`gpu_log`]: the logger, which also counts bellperson's reports of its GPU kernels.
//!
//! Exit codes: 1 for an error, 2 for bad arguments, 3 for a proof that does not verify.
#![forbid(unsafe_code)]

mod gpu_log;
mod prove;
mod request;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::gpu_log::GpuEvents;
use crate::request::{PostKind, PostRequest};

/// Proves a cuzk PoSt request with filecoin-proofs 19 (bellperson's prover, CUDA build) and
/// times it.
#[derive(Debug, Parser)]
#[command(name = "bellperson-anchor", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A WinningPoSt request (`winning-post.json` from `cuzk seal-test-sector`).
    WinningPost(RunArgs),
    /// A WindowPoSt partition request (`window-post.json`).
    WindowPost(RunArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The request file, in cuzk's format.
    #[arg(long)]
    request: PathBuf,
    /// Directory with the circuit's `.params` and `.vk` under filecoin-proofs' names (`cuzk
    /// setup --winning-post SIZE --out DIR`); becomes FIL_PROOFS_PARAMETER_CACHE.
    #[arg(long)]
    params_dir: PathBuf,
    /// Timed proofs after the warm-up proof.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Also write the results as JSON here.
    #[arg(long)]
    json_out: Option<PathBuf>,
    /// Also write the last proof here (its 192 bytes, as `cuzk prove --out` writes them).
    #[arg(long)]
    proof_out: Option<PathBuf>,
}

/// What one invocation measured, as written to `--json-out`.
#[derive(Debug, serde::Serialize)]
struct Report {
    kind: &'static str,
    proof: String,
    runs: usize,
    /// Each timed proof's wall time: filecoin-proofs' whole call (its checks of the vanilla
    /// proofs, synthesis, bellperson's prover).
    ms: Vec<f64>,
    median_ms: f64,
    min_ms: f64,
    /// The first proof, which also reads the parameters into filecoin-proofs' cache.
    warmup_ms: f64,
    /// Whether bellperson ran its FFTs and multiexps on the GPU in every timed proof, nothing
    /// falling back to the CPU (from its log).
    gpu: bool,
    gpu_events: GpuEvents,
    /// BELLMAN_NO_GPU as set, which turns bellperson's GPU off.
    bellman_no_gpu: Option<String>,
    verified: bool,
    proof_bytes: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(report) if report.verified => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(3),
        Err(e) => {
            eprintln!("bellperson-anchor: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<Report> {
    gpu_log::init()?;
    let (kind, args) = match cli.command {
        Command::WinningPost(args) => (PostKind::Winning, args),
        Command::WindowPost(args) => (PostKind::Window, args),
    };
    let request = PostRequest::read(&args.request)?;
    ensure!(
        request.proof.kind() == kind,
        "{} holds a {} request, not a {} one",
        args.request.display(),
        request.proof,
        kind.name()
    );
    prove::use_parameter_dir(&args.params_dir)?;
    let prover = prove::prover(&request)
        .with_context(|| format!("proving {} from {}", request.proof, args.request.display()))?;

    let warmup = prover.prove().context("the warm-up proof")?;
    let warmup_ms = ms_of(warmup.elapsed);
    let mut verified = prover
        .verify(&warmup.proof)
        .context("verifying the warm-up proof")?;

    let before = gpu_log::events();
    let mut ms = Vec::new();
    let mut last = warmup.proof;
    for run in 0..args.runs {
        let proved = prover
            .prove()
            .with_context(|| format!("timed proof {run}"))?;
        ms.push(ms_of(proved.elapsed));
        last = proved.proof;
    }
    let events = gpu_log::events().since(before);
    verified &= prover.verify(&last).context("verifying the last proof")?;

    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    let median_ms = if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    };
    let report = Report {
        kind: kind.name(),
        proof: request.proof.to_string(),
        runs: ms.len(),
        min_ms: sorted[0],
        median_ms,
        ms,
        warmup_ms,
        gpu: events.on_gpu(),
        gpu_events: events,
        bellman_no_gpu: std::env::var("BELLMAN_NO_GPU").ok(),
        verified,
        proof_bytes: last.len(),
    };
    println!(
        "{} {} (bellperson, GPU: {}): warm-up {:.1} ms; {} runs: median {:.1} ms, min {:.1} ms; \
         proof {}",
        report.kind,
        report.proof,
        if report.gpu { "yes" } else { "no" },
        report.warmup_ms,
        report.runs,
        report.median_ms,
        report.min_ms,
        if verified {
            "verified"
        } else {
            "DOES NOT VERIFY"
        },
    );
    if let Some(path) = &args.json_out {
        let json = serde_json::to_vec_pretty(&report)?;
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.proof_out {
        std::fs::write(path, &last).with_context(|| format!("writing {}", path.display()))?;
    }
    if !verified {
        eprintln!("bellperson-anchor: filecoin-proofs' verifier rejects the proof");
    }
    Ok(report)
}

fn ms_of(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1e3
}
