//! Finding nvcc, or installing it from PyPI into a venv under the target directory.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{io, run, Error};

/// The venv that [`provision`] creates, relative to the target directory.
const VENV_DIR: &str = "cuda-toolchain";

/// The wheels [`provision`] installs. Pinned as a set: an unpinned `nvidia-nvvm` resolves to a newer
/// cicc, whose PTX this ptxas rejects.
const PINNED_WHEELS: [&str; 5] = [
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-cccl==13.0.85",
];

/// Written into the venv once an install is complete, holding the pins: a venv without it (an
/// interrupted install) or with other pins is installed into again rather than used.
const STAMP: &str = "cuzk-pins.txt";

/// An nvcc that runs.
///
/// Nothing else is needed to compile: nvcc's `nvcc.profile` (system install or wheel alike) adds
/// the CUDA headers, the cccl headers and cicc's directory, relative to nvcc itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    pub nvcc: PathBuf,
    /// The release line of `nvcc --version`, e.g. `Cuda compilation tools, release 13.0, V13.0.88`.
    pub version: String,
}

impl Toolchain {
    /// Runs `nvcc --version`, so a broken install is never picked.
    fn at(nvcc: PathBuf) -> Result<Self, Error> {
        let output = run(Command::new(&nvcc).arg("--version"))?;
        let text = String::from_utf8_lossy(&output.stdout);
        let version = text
            .lines()
            .find(|line| line.contains("release"))
            .unwrap_or(text.trim())
            .trim()
            .to_owned();
        Ok(Toolchain { nvcc, version })
    }
}

/// The first nvcc that runs among `$CUDA_HOME/bin/nvcc`, `nvcc` on `PATH`, and the one
/// [`provision`] installed under `target_dir`. Never touches the network.
pub fn find(target_dir: &Path) -> Option<Toolchain> {
    let cuda_home = env::var_os("CUDA_HOME").map(|home| PathBuf::from(home).join("bin/nvcc"));
    let on_path = env::var_os("PATH")
        .into_iter()
        .flat_map(|path| env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("nvcc"));
    cuda_home
        .into_iter()
        .chain(on_path)
        .filter(|nvcc| nvcc.is_file())
        .chain(provisioned(&target_dir.join(VENV_DIR)))
        .find_map(|nvcc| Toolchain::at(nvcc).ok())
}

/// The venv's nvcc, if an install with today's pins completed there.
fn provisioned(venv: &Path) -> Option<PathBuf> {
    let stamp = fs::read_to_string(venv.join(STAMP)).ok()?;
    if stamp != stamp_text() {
        return None;
    }
    nvcc_in(venv)
}

fn stamp_text() -> String {
    PINNED_WHEELS.join("\n") + "\n"
}

/// Where the nvcc wheel puts nvcc, whatever the venv's Python minor version.
fn nvcc_in(venv: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(venv.join("lib"))
        .ok()?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("python3"))
        .map(|entry| entry.path().join("site-packages/nvidia/cu13/bin/nvcc"))
        .filter(|nvcc| nvcc.is_file())
        .collect();
    found.sort();
    found.pop()
}

/// Installs the pinned CUDA 13.0 compiler wheels into a venv at `<target_dir>/cuda-toolchain` (made with
/// `python3 -m venv`) and returns its nvcc; reuses the venv when a previous call completed.
/// Downloads about 100 MB from PyPI the first time; prints progress, as that takes a while.
pub fn provision(target_dir: &Path) -> Result<Toolchain, Error> {
    let venv = target_dir.join(VENV_DIR);
    if let Some(nvcc) = provisioned(&venv) {
        println!(
            "cuzk-nvcc: reusing the CUDA toolchain in {}",
            venv.display()
        );
        return Toolchain::at(nvcc);
    }
    let python = venv.join("bin/python3");
    if !python.is_file() {
        println!("cuzk-nvcc: creating a Python venv in {}", venv.display());
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    }
    println!(
        "cuzk-nvcc: installing {} from PyPI (a minute or two)",
        PINNED_WHEELS.join(" ")
    );
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
        ])
        .args(PINNED_WHEELS))?;
    let nvcc = nvcc_in(&venv).ok_or_else(|| Error::NoNvccInVenv { venv: venv.clone() })?;
    let toolchain = Toolchain::at(nvcc)?;
    let stamp = venv.join(STAMP);
    fs::write(&stamp, stamp_text()).map_err(io(stamp))?;
    println!("cuzk-nvcc: installed {}", toolchain.nvcc.display());
    Ok(toolchain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_venv_is_used_only_after_a_complete_install_with_todays_pins() {
        let venv = env::temp_dir().join(format!("cuzk-nvcc-venv-{}", std::process::id()));
        let bin = venv.join("lib/python3.12/site-packages/nvidia/cu13/bin");
        fs::create_dir_all(&bin).unwrap();
        fs::write(bin.join("nvcc"), "").unwrap();
        let interrupted = provisioned(&venv);
        fs::write(venv.join(STAMP), "nvidia-nvvm\n").unwrap();
        let other_pins = provisioned(&venv);
        fs::write(venv.join(STAMP), stamp_text()).unwrap();
        let complete = provisioned(&venv);
        fs::remove_dir_all(&venv).unwrap();
        assert_eq!(interrupted, None);
        assert_eq!(other_pins, None);
        assert_eq!(complete, Some(bin.join("nvcc")));
    }
}
