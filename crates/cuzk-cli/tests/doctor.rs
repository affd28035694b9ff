//! `cuzk doctor` as an operator runs it: a CPU configuration over a parameter directory of
//! small stand-in files (a synthetic circuit's parameters under a Filecoin circuit's names:
//! the doctor reads lengths and digests, never the points), each fault made on purpose and
//! named in the report. No GPU needed: on a host without one the GPU line says why it skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{cuzk, stderr};

use cuzk_filecoin::manifest::file_digest;
use cuzk_filecoin::{CircuitId, ParamFiles, PostKind, PostProof, SealProof, SectorSize};
use serde_json::Value;

/// A host to check: a configuration, its parameter directory and its socket directory.
struct Host {
    _dir: tempfile::TempDir,
    root: PathBuf,
    params: PathBuf,
}

const WINNING: CircuitId = CircuitId::Post(PostProof {
    kind: PostKind::Winning,
    size: SectorSize::S2KiB,
});
const WINDOW: CircuitId = CircuitId::Post(PostProof {
    kind: PostKind::Window,
    size: SectorSize::S2KiB,
});

impl Host {
    /// A CPU configuration that preloads `preload`.
    fn new(preload: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let params = root.join("params");
        fs::create_dir_all(&params).unwrap();
        fs::create_dir_all(root.join("run")).unwrap();
        let preload: Vec<String> = preload.iter().map(|c| format!("{c:?}")).collect();
        fs::write(
            root.join("cuzk.toml"),
            format!(
                "[daemon]\nlisten = \"unix://{}/run/cuzk.sock\"\n\
                 [memory]\ntotal_budget = \"4GiB\"\n\
                 [gpus]\nbackend = \"cpu\"\n\
                 [srs]\nparam_cache = \"{}\"\npreload = [{}]\n",
                root.display(),
                params.display(),
                preload.join(", ")
            ),
        )
        .unwrap();
        Host {
            _dir: dir,
            root,
            params,
        }
    }

    /// Writes stand-in parameters for `circuit` under its Filecoin names: a small synthetic
    /// circuit's, its `.vk` the verifying key they begin with (as `cuzk setup` writes them).
    fn put_params(&self, circuit: CircuitId) -> ParamFiles {
        let files = ParamFiles::new(&self.params, circuit).unwrap();
        let made = self.root.join("made.params");
        if !made.is_file() {
            let output = cuzk(&[
                "setup",
                "--circuit",
                "synthetic",
                "--constraints",
                "64",
                "--out",
                made.to_str().unwrap(),
            ]);
            assert!(output.status.success(), "setup: {}", stderr(&output));
        }
        let bytes = fs::read(&made).unwrap();
        // α, β in G1 … δ in G2 (864 bytes uncompressed), then |ic| and ic's G1 points.
        let ic = u32::from_be_bytes(bytes[864..868].try_into().unwrap()) as usize;
        fs::write(&files.params, &bytes).unwrap();
        fs::write(&files.vk, &bytes[..868 + 96 * ic]).unwrap();
        files
    }

    /// A manifest in parameters.json's form that lists `files` as they are now: the network's
    /// files, for this test.
    fn manifest(&self, files: &[&ParamFiles]) -> String {
        let mut entries = serde_json::Map::new();
        for file in files.iter().flat_map(|f| [&f.params, &f.vk]) {
            let name = file.file_name().unwrap().to_str().unwrap().to_owned();
            let digest = file_digest(file).unwrap();
            entries.insert(
                name,
                serde_json::json!({"cid": "Qm", "digest": digest, "sector_size": 2048}),
            );
        }
        let path = self.root.join("parameters.json");
        fs::write(&path, Value::Object(entries).to_string()).unwrap();
        path.to_str().unwrap().to_owned()
    }

    fn config(&self) -> String {
        self.root.join("cuzk.toml").to_str().unwrap().to_owned()
    }

    /// `cuzk doctor --json` on this host; its report and exit code.
    fn doctor(&self, extra: &[&str]) -> (Vec<Value>, Output) {
        let config = self.config();
        let mut args = vec!["doctor", "--json", "--config", &config];
        args.extend_from_slice(extra);
        let output = cuzk(&args);
        (report(&output), output)
    }
}

/// The `--json` report: an array of {check, verdict, detail, fix}.
fn report(output: &Output) -> Vec<Value> {
    let checks: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            stderr(output)
        )
    });
    for check in &checks {
        for key in ["check", "verdict", "detail"] {
            assert!(check[key].is_string(), "{key} in {check}");
        }
        assert!(
            check["fix"].is_string() || check["fix"].is_null(),
            "{check}"
        );
    }
    checks
}

/// The check named `name`.
fn check<'a>(checks: &'a [Value], name: &str) -> &'a Value {
    checks
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name:?} in {checks:#?}"))
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn a_healthy_cpu_setup_passes_and_test_parameters_are_named_as_such() {
    let host = Host::new(&["winning-2k"]);
    host.put_params(WINNING);
    let (checks, output) = host.doctor(&[]);
    assert!(output.status.success(), "{checks:#?}\n{}", stderr(&output));
    assert!(checks.iter().all(|c| c["verdict"] != "fail"), "{checks:#?}");
    assert!(check(&checks, "gpu")["detail"]
        .as_str()
        .unwrap()
        .contains("skipped"));
    for name in [
        "config",
        "memory",
        "memlock",
        "hugepages",
        "plan winning-2k",
        "socket",
    ] {
        check(&checks, name);
    }
    let params = check(&checks, "params winning-2k");
    assert_eq!(params["verdict"], "warn", "{params}");
    assert!(
        params["detail"]
            .as_str()
            .unwrap()
            .contains("test parameters"),
        "{params}"
    );
    // The text report: a line per check.
    let config = host.config();
    let text = cuzk(&["doctor", "--config", &config]);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert_eq!(
        text.lines().filter(|l| !l.contains("fix:")).count(),
        checks.len(),
        "{text}"
    );
    assert!(text.contains("params winning-2k"), "{text}");
}

#[test]
fn a_missing_file_is_named_with_the_circuit_that_needs_it() {
    let host = Host::new(&["winning-2k", "porep-2k"]);
    host.put_params(WINNING);
    let (checks, output) = host.doctor(&[]);
    assert_eq!(output.status.code(), Some(2), "{checks:#?}");
    let missing = check(&checks, "params porep-2k");
    assert_eq!(missing["verdict"], "fail");
    let files = ParamFiles::new(&host.params, SealProof::current(SectorSize::S2KiB)).unwrap();
    let detail = missing["detail"].as_str().unwrap();
    assert!(detail.contains(&file_name(&files.params)), "{detail}");
    assert!(detail.contains("StackedDrg2KiBV1_1"), "{detail}");
    assert!(
        missing["fix"]
            .as_str()
            .unwrap()
            .contains("cuzk setup --porep 2KiB"),
        "{missing}"
    );
    assert!(
        stderr(&output).contains("params porep-2k"),
        "{}",
        stderr(&output)
    );
    // The other circuit is fine.
    assert_ne!(check(&checks, "params winning-2k")["verdict"], "fail");
}

#[test]
fn a_file_cut_short_and_a_flipped_byte_are_named() {
    let host = Host::new(&["winning-2k", "wpost-2k"]);
    let winning = host.put_params(WINNING);
    let window = host.put_params(WINDOW);
    let manifest = host.manifest(&[&winning, &window]);
    let (checks, output) = host.doctor(&["--manifest", &manifest]);
    assert!(output.status.success(), "{checks:#?}");
    let intact = check(&checks, "params wpost-2k");
    assert_eq!(intact["verdict"], "ok", "{intact}");
    assert!(intact["detail"]
        .as_str()
        .unwrap()
        .contains("digest matches"));

    // Cut short: its own length prefixes say so, digests or not.
    let bytes = fs::read(&winning.params).unwrap();
    fs::write(&winning.params, &bytes[..bytes.len() - 100]).unwrap();
    // One byte of a point changed: only the digest can tell.
    let mut bytes = fs::read(&window.params).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    fs::write(&window.params, &bytes).unwrap();
    let (checks, output) = host.doctor(&["--manifest", &manifest, "--digests"]);
    assert_eq!(output.status.code(), Some(2), "{checks:#?}");
    let short = check(&checks, "params winning-2k");
    assert_eq!(short["verdict"], "fail");
    let detail = short["detail"].as_str().unwrap();
    assert!(detail.contains(&file_name(&winning.params)), "{detail}");
    assert!(detail.contains("truncated"), "{detail}");
    let flipped = check(&checks, "params wpost-2k");
    assert_eq!(flipped["verdict"], "fail");
    let detail = flipped["detail"].as_str().unwrap();
    assert!(detail.contains(&file_name(&window.params)), "{detail}");
    assert!(detail.contains("digest"), "{detail}");
    assert!(flipped["fix"].is_string());
}

#[test]
fn a_page_lock_limit_too_low_is_named() {
    let host = Host::new(&[]);
    let config = host.config();
    // Lowering a limit needs no privilege.
    let output = Command::new("sh")
        .args(["-c", "ulimit -l 64 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_cuzk"))
        .args(["doctor", "--json", "--config", &config])
        .output()
        .unwrap();
    let checks = report(&output);
    let memlock = check(&checks, "memlock");
    // The CPU backend locks nothing: named, but not a failure (on a GPU host it is one).
    assert_eq!(memlock["verdict"], "warn", "{memlock}");
    assert!(
        memlock["detail"].as_str().unwrap().contains("64 KiB"),
        "{memlock}"
    );
    assert!(
        memlock["fix"]
            .as_str()
            .unwrap()
            .contains("LimitMEMLOCK=infinity"),
        "{memlock}"
    );
}

#[test]
fn a_bad_configuration_fails_naming_its_key() {
    let host = Host::new(&[]);
    fs::write(host.config(), "[gpus]\nbackend = \"tpu\"\n").unwrap();
    let (checks, output) = host.doctor(&[]);
    assert_eq!(output.status.code(), Some(2));
    let config = check(&checks, "config");
    assert_eq!(config["verdict"], "fail");
    assert!(
        config["detail"].as_str().unwrap().contains("gpus.backend"),
        "{config}"
    );
}
