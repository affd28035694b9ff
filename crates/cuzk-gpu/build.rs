//! Embeds the kernel fatbin, so a binary copied to a GPU machine needs nothing but the driver.
//! Without one the crate still builds and reports "GPU kernels not built" at run time.
//!
//! Where the fatbin comes from, first match wins:
//! 1. `$CUZK_FATBIN`;
//! 2. `cuda/` compiled here by the nvcc that `cuzk_nvcc::find` sees (`$CUDA_HOME`, `PATH`, or the
//!    one `cargo xtask kernels` installed), unless `target/cuda/cuzk.fatbin` is already exactly
//!    that compile: a compile error fails the build, as a broken kernel must not silently
//!    disappear;
//! 3. `target/cuda/cuzk.fatbin` from `cargo xtask kernels`;
//! 4. none.
//!
//! It never installs anything or touches the network: that is `cargo xtask kernels`' job.

use std::env;
use std::error::Error;
use std::fs;
use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(cuzk_kernels)");
    match fatbin() {
        Ok(Some(path)) => {
            println!("cargo:rustc-cfg=cuzk_kernels");
            println!("cargo:rustc-env=CUZK_FATBIN_PATH={}", path.display());
        }
        Ok(None) => {}
        Err(e) => {
            eprintln!("error: building the GPU kernels failed\n{e}");
            std::process::exit(1);
        }
    }
}

fn fatbin() -> Result<Option<PathBuf>, Box<dyn Error>> {
    println!("cargo:rerun-if-env-changed=CUZK_FATBIN");
    if let Some(path) = env::var_os("CUZK_FATBIN") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            return Err(format!("CUZK_FATBIN={} is not a file", path.display()).into());
        }
        println!("cargo:rerun-if-changed={}", path.display());
        return Ok(Some(path));
    }

    // Read when the script runs, not baked in when it is compiled: a target directory moved with
    // its compiled build script would otherwise look for kernels where the crate used to be.
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").ok_or("CARGO_MANIFEST_DIR is not set")?);
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .ok_or("cuzk-gpu is not two levels below the workspace root")?;
    let cuda_dir = root.join("cuda");
    let target_dir = root.join("target");
    // The whole directory, so that a new file (cuzk.cu itself, at first) reruns this script.
    println!("cargo:rerun-if-changed={}", cuda_dir.display());
    let wanted = cuda_dir.join(cuzk_nvcc::ENTRY).is_file();
    if wanted {
        for var in ["CUDA_HOME", "PATH", cuzk_nvcc::ARCHS_ENV] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        if let Some(toolchain) = cuzk_nvcc::find(&target_dir) {
            for source in cuzk_nvcc::sources(&cuda_dir)? {
                println!("cargo:rerun-if-changed={}", source.display());
            }
            println!("cargo:rerun-if-changed={}", toolchain.nvcc.display());
            let archs = cuzk_nvcc::Archs::from_env()?;
            let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?)
                .join("cuzk.fatbin");
            // Kernels take minutes: reuse what `cargo xtask kernels` or our last run built from
            // exactly these sources with this nvcc and these archs (`PATH` changing, say).
            let prebuilt = target_dir.join("cuda/cuzk.fatbin");
            for built in [&prebuilt, &out] {
                if cuzk_nvcc::is_fresh(&toolchain, &cuda_dir, built, &archs)? {
                    println!("cargo:rerun-if-changed={}", built.display());
                    return Ok(Some(built.clone()));
                }
            }
            let diagnostics =
                cuzk_nvcc::compile_fatbin(&toolchain, &cuda_dir, &out, &archs, false)?;
            for line in diagnostics.lines().filter(|line| !line.trim().is_empty()) {
                println!("cargo:warning=nvcc: {line}");
            }
            return Ok(Some(out));
        }
    }

    // Watch the directory `cargo xtask kernels` writes into rather than the fatbin: a missing
    // watched file would rerun this script, and rebuild this crate and its dependents, on every
    // build. Creating it empty is harmless; if that fails we only lose that.
    let prebuilt_dir = target_dir.join("cuda");
    let _ = fs::create_dir_all(&prebuilt_dir);
    println!("cargo:rerun-if-changed={}", prebuilt_dir.display());
    let prebuilt = prebuilt_dir.join("cuzk.fatbin");
    if prebuilt.is_file() {
        return Ok(Some(prebuilt));
    }
    if wanted {
        println!("cargo:warning=GPU kernels not built: no nvcc found (run cargo xtask kernels)");
    }
    Ok(None)
}
