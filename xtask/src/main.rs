//! Project tasks that cargo alone does not cover: `cargo xtask <task>`, one module per task.
//!
//! - `bench [NAME]`: runs the criterion benchmarks (all, or one of `prover`, `setup`, `math`) in release mode
//!   and prints where the reports are.
//! - `kernels [--archs 80,90] [--verbose]`: compiles `cuda/` into `target/cuda/cuzk.fatbin`, first
//!   installing nvcc from PyPI into `target/cuda-toolchain` when none is found.
//!
//! Tasks are glue: how to find nvcc and which flags to give it belong to `cuzk-nvcc`, which
//! `cuzk-gpu`'s build script shares, and must not be decided here.

mod bench;
mod kernels;

use anyhow::{bail, Result};

const USAGE: &str =
    "usage: cargo xtask bench [prover|setup|math]\n       cargo xtask kernels [--archs 80,90] [--verbose]";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("bench") => bench::run(args.get(1).map(String::as_str)),
        Some("kernels") => kernels::run(&args[1..]),
        _ => bail!("{USAGE}"),
    }
}
