//! `cargo xtask kernels [--archs 80,90] [--verbose] [--force]`: compiles `cuda/` into
//! `target/cuda/cuzk.fatbin`, provisioning nvcc from PyPI into `target/cuda-toolchain` when none
//! is found. A fatbin already built from the same sources, nvcc and archs is kept (`--force`
//! compiles anyway): a rewritten one would make cargo rebuild every crate that embeds it.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_nvcc::Archs;

const USAGE: &str = "usage: cargo xtask kernels [--archs 80,90] [--verbose] [--force]";

pub fn run(args: &[String]) -> Result<()> {
    let mut archs = None;
    let mut verbose = false;
    let mut force = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--archs" => archs = Some(args.next().context(USAGE)?.as_str()),
            "--verbose" | "-v" => verbose = true,
            "--force" => force = true,
            other => match other.strip_prefix("--archs=") {
                Some(list) => archs = Some(list),
                None => bail!("unknown argument {other:?}\n{USAGE}"),
            },
        }
    }
    let archs = match archs {
        Some(list) => Archs::parse(list)?,
        None => Archs::from_env()?,
    };

    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask has no parent directory")?;
    let target = root.join("target");
    let toolchain = match cuzk_nvcc::find(&target) {
        Some(found) => found,
        None => cuzk_nvcc::provision(&target)?,
    };
    println!(
        "nvcc:  {} ({})",
        toolchain.nvcc.display(),
        toolchain.version
    );
    println!("archs: {archs}");

    let out = target.join("cuda/cuzk.fatbin");
    let cuda = root.join("cuda");
    if !force && cuzk_nvcc::is_fresh(&toolchain, &cuda, &out, &archs)? {
        println!(
            "{} is up to date (--force compiles it again)",
            out.display()
        );
        return Ok(());
    }
    let start = Instant::now();
    let diagnostics = cuzk_nvcc::compile_fatbin(&toolchain, &cuda, &out, &archs, verbose)?;
    let elapsed = start.elapsed();
    print!("{diagnostics}");
    let size = std::fs::metadata(&out)
        .with_context(|| format!("reading {}", out.display()))?
        .len();
    println!(
        "wrote {} ({:.1} KiB) in {:.1} s",
        out.display(),
        size as f64 / 1024.0,
        elapsed.as_secs_f64()
    );
    Ok(())
}
