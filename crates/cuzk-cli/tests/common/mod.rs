//! What the `cuzk` binary's test files share: the 2 KiB PoRep parameters, and a memory cgroup
//! to run the binary in.
#![allow(dead_code)] // each test binary uses a part

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use cuzk_filecoin::{CircuitId, ParamFiles, SealProof};

/// Runs the `cuzk` binary with `args` to its end.
pub fn cuzk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(args)
        .output()
        .expect("run cuzk")
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// 2 KiB PoRep parameters (and their compiled R1CS) in [`shared_params`]' directory.
pub fn porep_params() -> PathBuf {
    let proof = SealProof::from_size_or_name("2KiB").unwrap();
    shared_params("--porep", proof)
}

/// `circuit`'s 2 KiB parameters (and compiled R1CS) in the directory
/// crates/cuzk-filecoin/tests/filecoin also uses: made by `cuzk setup <flag> 2KiB` (and moved in
/// whole) when absent, so each set is made once per target directory.
pub fn shared_params(flag: &str, circuit: impl Into<CircuitId>) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuzk-filecoin-params");
    fs::create_dir_all(&dir).unwrap();
    let circuit = circuit.into();
    let files = ParamFiles::new(&dir, circuit).unwrap();
    if files.params.is_file() && files.vk.is_file() {
        return dir;
    }
    let start = Instant::now();
    let scratch = tempfile::Builder::new()
        .prefix(".setup-")
        .tempdir_in(&dir)
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["setup", flag, "2KiB", "--out"])
        .arg(scratch.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "setup {flag}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made = ParamFiles::new(scratch.path(), circuit).unwrap();
    // Setup recorded the R1CS: kept, so a first proof need not record it again.
    if made.r1cs.is_file() && !files.r1cs.is_file() {
        fs::rename(&made.r1cs, &files.r1cs).unwrap();
    }
    // The .vk last: a directory with both files holds a matching pair.
    fs::rename(&made.params, &files.params).unwrap();
    fs::rename(&made.vk, &files.vk).unwrap();
    eprintln!(
        "generated 2 KiB {flag} parameters in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    dir
}

/// A memory cgroup of its own, under this process's (cgroup v2 `memory.max`, else v1
/// `memory.limit_in_bytes`), that commands can be run in; removed on drop.
pub struct MemoryCgroup {
    dir: PathBuf,
}

impl MemoryCgroup {
    /// A cgroup named `name` limited to `bytes`, or why this machine cannot make one (no
    /// writable cgroup file system, no memory controller, not allowed).
    pub fn new(name: &str, bytes: u64) -> Result<Self, String> {
        let mut why = Vec::new();
        for cgroup in cuzk_pipeline::engine::own_memory_cgroups() {
            let dir = cgroup
                .dir
                .join(format!("cuzk-test-{}-{name}", std::process::id()));
            match Self::make(&dir, cgroup.limit_file, bytes) {
                Ok(()) => return Ok(MemoryCgroup { dir }),
                Err(e) => {
                    let _ = fs::remove_dir(&dir);
                    why.push(format!("{}: {e}", dir.display()));
                }
            }
        }
        Err(match why.is_empty() {
            true => "no memory cgroup in /proc/self/cgroup".into(),
            false => why.join("; "),
        })
    }

    fn make(dir: &Path, limit_file: &str, bytes: u64) -> Result<(), String> {
        fs::create_dir(dir).map_err(|e| format!("creating it: {e}"))?;
        let limit = dir.join(limit_file);
        fs::write(&limit, bytes.to_string()).map_err(|e| format!("{limit_file}: {e}"))?;
        let set = fs::read_to_string(&limit).map_err(|e| format!("{limit_file}: {e}"))?;
        match set.trim().parse::<u64>() {
            Ok(value) if value <= bytes => Ok(()),
            _ => Err(format!(
                "{limit_file} reads {:?} after writing {bytes}",
                set.trim()
            )),
        }
    }

    /// `cuzk` to be run inside the cgroup (a shell that joins it, then becomes cuzk, keeping
    /// its process id); the caller adds the arguments.
    pub fn command(&self) -> Command {
        let procs = self.dir.join("cgroup.procs");
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!(
                "echo $$ > '{}' && exec \"$0\" \"$@\"",
                procs.display()
            ))
            .arg(env!("CARGO_BIN_EXE_cuzk"));
        command
    }

    /// Runs `cuzk args…` inside the cgroup and waits for it.
    pub fn cuzk(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // Its processes have all exited (each run waits for its own).
        let _ = fs::remove_dir(&self.dir);
    }
}
