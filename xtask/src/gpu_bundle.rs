//! `cargo xtask gpu-bundle [--out DIR] [--pack FILE]`: the GPU test binaries and the `cuzk`
//! binary, built here in release mode with the kernels embedded, gathered in one folder with a
//! script that runs the tests — for a GPU machine that has the driver but no Rust toolchain
//! (build here, copy, run). `--pack FILE` also writes the folder as one `.tar.xz`, what the device
//! scripts under `benches/device/` carry.

use std::fs;
use std::io::BufRead;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

const USAGE: &str = "usage: cargo xtask gpu-bundle [--out DIR] [--pack FILE]";

/// What a test's source calls to open a device: it needs a GPU (and skips with a printed reason
/// without one). `common::gpu(` is the tests' own helper that does so.
const OPENS_A_DEVICE: [&str; 5] = [
    "Lane::first(",
    "Lane::new(",
    "Lane::open(",
    "common::gpu(",
    "common::gpu_with_budget(",
];

/// Whether a test target whose source is `source` needs a GPU.
fn needs_gpu(source: &str) -> bool {
    OPENS_A_DEVICE.iter().any(|call| source.contains(call))
}

/// The script written beside the binaries: every test binary once, its summary line (and how many
/// tests skipped, with one reason: a passing line means nothing when every test skipped), the
/// tail of its output when it fails, and a non-zero exit if any failed. Arguments go to every binary
/// (a test name filter, `--nocapture`).
const RUN_SCRIPT: &str = r#"#!/bin/sh
# Runs the bundled GPU tests (CUZK_GPU_TEST_MAX_LOG=26 for the largest sizes); see `cargo xtask gpu-bundle`.
cd "$(dirname "$0")" || exit 1
status=0
for t in TESTS; do
  if ./"$t" "$@" > "$t.log" 2>&1; then
    printf '%-12s %s\n' "$t" "$(grep 'test result' "$t.log" | tail -n 1)"
    skipped=$(grep -c ': SKIPPED' "$t.log")
    [ "$skipped" -eq 0 ] || printf '%-12s %s tests SKIPPED, e.g. %s\n' "" "$skipped" "$(grep -m 1 ': SKIPPED' "$t.log")"
  else
    status=1
    printf '%-12s FAILED (log: %s.log)\n' "$t" "$t"
    tail -n 30 "$t.log"
  fi
done
exit $status
"#;

pub fn run(args: &[String]) -> Result<()> {
    let mut out = PathBuf::from("target/gpu-bundle");
    let mut pack = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().map(PathBuf::from).context(USAGE);
        match arg.as_str() {
            "--out" => out = value()?,
            "--pack" => pack = Some(value()?),
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    // A bundle without kernels would only skip every test there: compile them first (nvcc
    // provisioned if none is found; kept when already built from these sources).
    crate::kernels::run(&[])?;
    let built = workspace_executables()?;
    let mut names = Vec::new();
    for test in built.iter().filter(|e| e.test) {
        let source = fs::read_to_string(&test.source)
            .with_context(|| format!("reading {}", test.source.display()))?;
        if !needs_gpu(&source) {
            continue;
        }
        if names.contains(&test.target.as_str()) {
            bail!("two GPU test targets named {}: rename one", test.target);
        }
        place(&test.path, &out.join(&test.target))?;
        names.push(test.target.as_str());
    }
    names.sort_unstable();
    println!("GPU tests: {}", names.join(" "));
    let cuzk = built
        .iter()
        .find(|e| e.package == "cuzk-cli" && e.target == "cuzk" && !e.test)
        .context("the workspace's test build made no cuzk binary")?;
    place(&cuzk.path, &out.join("cuzk"))?;
    let script = out.join("run-gpu-tests.sh");
    let partial = out.join(".run-gpu-tests.sh.partial");
    fs::write(&partial, RUN_SCRIPT.replace("TESTS", &names.join(" ")))
        .with_context(|| format!("writing {}", partial.display()))?;
    fs::set_permissions(&partial, fs::Permissions::from_mode(0o755))?;
    fs::rename(&partial, &script).with_context(|| format!("writing {}", script.display()))?;
    println!(
        "GPU bundle in {}: copy it to the GPU machine and run ./run-gpu-tests.sh there \
         (./cuzk bench-kernels, bench-prover, … for timings)",
        out.display()
    );
    if let Some(pack) = pack {
        write_pack(&out, &pack)?;
        println!("packed as {}", pack.display());
    }
    Ok(())
}

/// An executable the build made.
struct Executable {
    package: String,
    target: String,
    /// A test target's (else a binary's).
    test: bool,
    path: PathBuf,
    /// The target's root source file.
    source: PathBuf,
}

/// Builds every test of the workspace in release mode, as `.ci/run` does (one build: naming
/// packages one by one resolves other features and rebuilds the dependencies for each), and
/// returns the executables it made, `cuzk` among them (cuzk-cli's tests need it).
fn workspace_executables() -> Result<Vec<Executable>> {
    let cargo = crate::cargo_program();
    let args = [
        "test",
        "--workspace",
        "--release",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ];
    let mut child = Command::new(&cargo)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {cargo} {}", args.join(" ")))?;
    let mut found = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        for line in std::io::BufReader::new(stdout).lines() {
            let message: serde_json::Value = serde_json::from_str(&line?)?;
            let (Some(path), Some(target), Some(id), Some(source)) = (
                message["executable"].as_str(),
                message["target"]["name"].as_str(),
                message["package_id"].as_str(),
                message["target"]["src_path"].as_str(),
            ) else {
                continue;
            };
            found.push(Executable {
                package: package_name(id).to_owned(),
                target: target.to_owned(),
                test: message["profile"]["test"].as_bool() == Some(true),
                path: PathBuf::from(path),
                source: PathBuf::from(source),
            });
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("{cargo} {} failed: {status}", args.join(" "));
    }
    Ok(found)
}

/// The package name in a cargo package id: `path+file:///…/crates/cuzk-gpu#0.1.0` (a workspace
/// member named as its folder) or `path+file:///…#cuzk-gpu@0.1.0`.
fn package_name(id: &str) -> &str {
    let (path, fragment) = id.rsplit_once('#').unwrap_or((id, ""));
    match fragment.split_once('@') {
        Some((name, _)) => name,
        None => path.rsplit('/').next().unwrap_or(path),
    }
}

/// `dir`'s files as one `.tar.xz` at `pack`, written beside it first and renamed.
fn write_pack(dir: &Path, pack: &Path) -> Result<()> {
    if let Some(parent) = pack.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let mut partial = pack.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let status = Command::new("tar")
        .arg("-C")
        .arg(dir)
        .args(["-I", "xz -6 -T0", "-cf"])
        .arg(&partial)
        .arg(".")
        .status()
        .context("running tar")?;
    if !status.success() {
        bail!("tar failed writing {}: {status}", partial.display());
    }
    fs::rename(&partial, pack).with_context(|| format!("writing {}", pack.display()))
}

/// Copies `from` to `to` without its symbols when `strip` is there (release builds keep debug
/// information, several times the code's size), as it is otherwise.
fn place(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    let stripped = Command::new("strip")
        .arg(to)
        .status()
        .is_ok_and(|s| s.success());
    if !stripped {
        println!("note: {} keeps its symbols (no strip here)", to.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_that_open_a_device_are_gpu_tests() {
        assert!(needs_gpu(
            "let Some(gpu) = common::gpu(\"msm\") else { return };"
        ));
        assert!(needs_gpu("match cuzk_gpu::Lane::first() {"));
        assert!(needs_gpu("let gpu = Lane::new(0)?;"));
        assert!(!needs_gpu("let backend = CpuBackend;"));
    }

    #[test]
    fn the_workspace_gpu_tests_are_found_by_their_sources() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let gpu = |path: &str| needs_gpu(&fs::read_to_string(root.join(path)).unwrap_or_default());
        for path in [
            "crates/cuzk-gpu/tests/msm.rs",
            "crates/cuzk-gpu/tests/waiting.rs",
            "crates/cuzk-gpu/tests/pool.rs",
            "crates/cuzk-groth16/tests/gpu_backend.rs",
            "crates/cuzk-groth16/tests/gpu_sparse.rs",
            "crates/cuzk-pipeline/tests/gpu_devices.rs",
        ] {
            assert!(gpu(path), "{path} opens a device");
        }
        for path in [
            "crates/cuzk-gpu/tests/cuda_constants.rs",
            "crates/cuzk-groth16/tests/setup.rs",
            "crates/cuzk-pipeline/tests/engine.rs",
        ] {
            assert!(!gpu(path), "{path} needs no device");
        }
    }
}
