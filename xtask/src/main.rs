//! Project tasks that cargo alone does not cover: `cargo xtask <task>`, one module per task.
//!
//! - `bench [NAME]`: runs the criterion benchmarks (all, or one of `prover`, `packing`, `setup`, `math`, `witness`) in release mode
//!   and prints where the reports are.
//! - `gpu-bundle [--out DIR] [--pack FILE]`: the GPU test binaries and `cuzk`, built in release
//!   mode with the kernels embedded, in one folder with `run-gpu-tests.sh`, for a GPU machine
//!   without Rust (and as one `.tar.xz` for the device scripts).
//! - `kernels [--archs 80,90] [--verbose] [--force]`: compiles `cuda/` into
//!   `target/cuda/cuzk.fatbin` unless it is up to date, first installing nvcc from PyPI into
//!   `target/cuda-toolchain` when none is found.
//! - `sweep [--partition-workers L] [--gpu-workers L] [--concurrency L] [--out DIR] [-- BENCH ARGS]`:
//!   `cuzk bench` over the grid of those lists, into `target/sweep/sweep.csv` and `sweep.svg`.
//!
//! Tasks are glue: how to find nvcc and which flags to give it belong to `cuzk-nvcc`, which
//! `cuzk-gpu`'s build script shares, and must not be decided here.

mod bench;
mod gpu_bundle;
mod kernels;
mod sweep;

use anyhow::{bail, Result};

const USAGE: &str =
    "usage: cargo xtask bench [prover|packing|setup|math|witness]\n       cargo xtask gpu-bundle [--out DIR] [--pack FILE]\n       cargo xtask kernels [--archs 80,90] [--verbose] [--force]\n       cargo xtask sweep [--partition-workers 1,2] [--gpu-workers 1,2] [--concurrency 1,2] [--out DIR] [-- BENCH ARGS]";

/// The cargo that runs this task (`$CARGO`), for the tasks that run cargo themselves.
fn cargo_program() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("bench") => bench::run(args.get(1).map(String::as_str)),
        Some("gpu-bundle") => gpu_bundle::run(&args[1..]),
        Some("kernels") => kernels::run(&args[1..]),
        Some("sweep") => sweep::run(&args[1..]),
        _ => bail!("{USAGE}"),
    }
}
