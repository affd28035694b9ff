//! `cargo xtask gpu-bundle [--out DIR]`: the GPU test binaries and the `cuzk` binary, built here in
//! release mode with the kernels embedded, gathered in one folder with a script that runs the
//! tests — for a GPU machine that has the driver but no Rust toolchain (build here, copy, run).

use std::fs;
use std::io::BufRead;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// The test targets that need a GPU (they skip with a printed reason without one), by package.
const GPU_TESTS: [(&str, &str); 5] = [
    ("cuzk-gpu", "arith"),
    ("cuzk-gpu", "msm"),
    ("cuzk-gpu", "ntt"),
    ("cuzk-gpu", "scalars"),
    ("cuzk-groth16", "gpu_backend"),
];

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
    let out = match args {
        [] => PathBuf::from("target/gpu-bundle"),
        [flag, dir] if flag == "--out" => PathBuf::from(dir),
        _ => bail!("usage: cargo xtask gpu-bundle [--out DIR]"),
    };
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut names = Vec::new();
    for (package, test) in GPU_TESTS {
        let built = executable(
            &[
                "test",
                "--release",
                "-p",
                package,
                "--test",
                test,
                "--no-run",
            ],
            test,
        )?;
        place(&built, &out.join(test))?;
        names.push(test);
    }
    let cuzk = executable(
        &["build", "--release", "-p", "cuzk-cli", "--bin", "cuzk"],
        "cuzk",
    )?;
    place(&cuzk, &out.join("cuzk"))?;
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
    Ok(())
}

/// Runs cargo with `args` and returns the executable it built for the target named `target`.
fn executable(args: &[&str], target: &str) -> Result<PathBuf> {
    let cargo = crate::cargo_program();
    let mut child = Command::new(&cargo)
        .args(args)
        .arg("--message-format=json-render-diagnostics")
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {cargo} {}", args.join(" ")))?;
    let mut found = None;
    if let Some(stdout) = child.stdout.take() {
        for line in std::io::BufReader::new(stdout).lines() {
            let message: serde_json::Value = serde_json::from_str(&line?)?;
            if message["reason"] == "compiler-artifact" && message["target"]["name"] == target {
                if let Some(path) = message["executable"].as_str() {
                    found = Some(PathBuf::from(path));
                }
            }
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("{cargo} {} failed: {status}", args.join(" "));
    }
    found.with_context(|| format!("{cargo} {} built no executable {target}", args.join(" ")))
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
