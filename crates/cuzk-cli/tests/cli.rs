//! The `cuzk` binary as scripts use it: exit codes, files written or not, error messages.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test or bench should stop loudly

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{cuzk, stderr};

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use cuzk_filecoin::{CircuitId, PostKind, PostProof, UpdateProof};

struct Files {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Files {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        Files { _dir: dir, root }
    }

    fn path(&self, name: &str) -> String {
        self.root.join(name).to_string_lossy().into_owned()
    }
}

const CIRCUIT: [&str; 6] = [
    "--constraints",
    "600",
    "--seed",
    "7",
    "--boolean-fraction",
    "0.8",
];

fn setup(files: &Files, name: &str, circuit: &[&str]) {
    let out = files.path(name);
    let mut args = vec!["setup", "--circuit", "synthetic", "--out", &out];
    args.extend_from_slice(circuit);
    let output = cuzk(&args);
    assert!(output.status.success(), "setup: {}", stderr(&output));
}

fn prove(files: &Files, params: &str, circuit: &[&str]) -> Output {
    let (params, proof, inputs) = (
        files.path(params),
        files.path("proof"),
        files.path("inputs.json"),
    );
    let mut args = vec![
        "prove",
        "--params",
        &params,
        "--circuit",
        "synthetic",
        "--proof-out",
        &proof,
        "--inputs-out",
        &inputs,
    ];
    args.extend_from_slice(circuit);
    cuzk(&args)
}

fn verify(files: &Files, params: &str, proof: &str, inputs: &str) -> Output {
    cuzk(&[
        "verify",
        "--params",
        &files.path(params),
        "--proof",
        &files.path(proof),
        "--inputs",
        &files.path(inputs),
    ])
}

#[test]
fn setup_prove_verify_round_trip_and_exit_codes() {
    let files = Files::new();
    setup(&files, "p.params", &CIRCUIT);
    let output = prove(&files, "p.params", &CIRCUIT);
    assert!(output.status.success(), "prove: {}", stderr(&output));
    assert_eq!(
        std::fs::metadata(files.path("proof")).expect("proof").len(),
        192
    );

    let output = verify(&files, "p.params", "proof", "inputs.json");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // A wrong public input: exit 1.
    let inputs: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(files.path("inputs.json")).expect("inputs"))
            .expect("json");
    assert_eq!(inputs.len(), 2);
    let mut wrong = inputs.clone();
    wrong[0] = format!("0x{}", "00".repeat(32));
    std::fs::write(
        files.path("wrong.json"),
        serde_json::to_string(&wrong).expect("json"),
    )
    .expect("write");
    assert_eq!(
        verify(&files, "p.params", "proof", "wrong.json")
            .status
            .code(),
        Some(1)
    );

    // --json output.
    let output = cuzk(&[
        "--json",
        "verify",
        "--params",
        &files.path("p.params"),
        "--proof",
        &files.path("proof"),
        "--inputs",
        &files.path("inputs.json"),
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json stdout");
    assert_eq!(summary["valid"], true);
}

#[test]
fn unusable_input_exits_2_with_a_named_cause_and_writes_nothing() {
    let files = Files::new();
    setup(&files, "p.params", &CIRCUIT);
    let good = std::fs::read(files.path("p.params")).expect("params");

    // Truncated params: prove fails, names the file, writes no proof.
    std::fs::write(files.path("short.params"), &good[..good.len() - 10]).expect("write");
    let output = prove(&files, "short.params", &CIRCUIT);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("short.params") && stderr(&output).contains("truncated"),
        "{}",
        stderr(&output)
    );
    assert!(
        !Path::new(&files.path("proof")).exists(),
        "no partial proof file"
    );

    // Params of another circuit.
    let other = [
        "--constraints",
        "900",
        "--seed",
        "7",
        "--boolean-fraction",
        "0.8",
    ];
    let output = prove(&files, "p.params", &other);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("do not fit the circuit"),
        "{}",
        stderr(&output)
    );
    assert!(!Path::new(&files.path("proof")).exists());

    // A good proof for the checks below.
    assert!(prove(&files, "p.params", &CIRCUIT).status.success());

    // Proof of the wrong length.
    std::fs::write(files.path("long.proof"), [0u8; 193]).expect("write");
    let output = verify(&files, "p.params", "long.proof", "inputs.json");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("long.proof") && stderr(&output).contains("192"),
        "{}",
        stderr(&output)
    );

    // Malformed inputs JSON, in several ways.
    for (name, text, expect) in [
        ("bad1.json", "{\"a\": 1}", "expected a JSON array"),
        ("bad2.json", "[\"0x12\"", "not valid JSON"),
        ("bad3.json", "[\"12\", \"0x00\"]", "does not start with 0x"),
        (
            "bad4.json",
            &format!("[\"0x{}\"]", "ff".repeat(32)),
            "not a canonical scalar",
        ),
        ("bad5.json", "[1, 2]", "not a string"),
    ] {
        std::fs::write(files.path(name), text).expect("write");
        let output = verify(&files, "p.params", "proof", name);
        assert_eq!(output.status.code(), Some(2), "{name}");
        assert!(
            stderr(&output).contains(name) && stderr(&output).contains(expect),
            "{name}: {}",
            stderr(&output)
        );
    }

    // Wrong number of inputs.
    std::fs::write(
        files.path("one.json"),
        format!("[\"0x{}\"]", "00".repeat(32)),
    )
    .expect("write");
    let output = verify(&files, "p.params", "proof", "one.json");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("takes 2 public inputs, got 1"),
        "{}",
        stderr(&output)
    );

    // Bad arguments.
    let output = cuzk(&[
        "setup",
        "--constraints",
        "10",
        "--boolean-fraction",
        "1.5",
        "--out",
        &files.path("x"),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(!Path::new(&files.path("x")).exists());
}

/// `verify` needs only the verifying key, so it works for params bellperson made for any circuit.
#[test]
fn verify_accepts_bellperson_params_and_proofs() {
    let files = Files::new();
    let circuit = cuzk_synth::circuits::SyntheticCircuit {
        constraints: 300,
        boolean_fraction: 0.3,
        public_inputs: 4,
        seed: 11,
    };
    let mut rng = rand::thread_rng();
    let params =
        bp::generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng).expect("setup");
    let mut bytes = Vec::new();
    params.write(&mut bytes).expect("write");
    std::fs::write(files.path("bp.params"), bytes).expect("write");
    let proof = bp::create_random_proof(circuit.clone(), &params, &mut rng).expect("prove");
    let mut proof_bytes = Vec::new();
    proof.write(&mut proof_bytes).expect("write");
    // Two copies: a multi-proof file with one inputs list for both.
    proof_bytes.extend_from_slice(&proof_bytes.clone());
    std::fs::write(files.path("bp.proof"), proof_bytes).expect("write");
    let inputs: Vec<String> = circuit
        .public_input_values()
        .iter()
        .map(|x: &Scalar| format!("0x{}", hex::encode(x.to_bytes_le())))
        .collect();
    std::fs::write(
        files.path("bp.json"),
        serde_json::to_string(&inputs).expect("json"),
    )
    .expect("write");
    let output = verify(&files, "bp.params", "bp.proof", "bp.json");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// `cuzk analyze` on a hand-built log: two GPU workers, lines out of order, noise and a malformed
/// line; known idle window, busy fraction and throughput.
#[test]
fn analyze_reports_idle_windows_and_throughput() {
    let files = Files::new();
    let log = "\
        engine starting\n\
        TIMELINE,300,GPU_END,b,partition=1,worker=0\n\
        TIMELINE,0,SYNTH_START,a,partition=0\n\
        TIMELINE,0,GPU_START,a,partition=0,worker=0\n\
        TIMELINE,40,GPU_START,a,partition=1,worker=1\n\
        TIMELINE,60,GPU_END,a,partition=0,worker=0\n\
        TIMELINE,100,GPU_END,a,partition=1,worker=1\n\
        TIMELINE,120,GPU_START,b,partition=0,worker=1\n\
        TIMELINE,150,GPU_START,b,partition=1,worker=0\n\
        TIMELINE,200,GPU_END,b,partition=0,worker=1\n\
        TIMELINE,not-a-number,GPU_END,b,partition=0\n";
    std::fs::write(files.path("t.log"), log).expect("write");
    let svg = files.path("t.svg");
    let output = cuzk(&["--json", "analyze", &files.path("t.log"), "--svg", &svg]);
    assert!(output.status.success(), "{}", stderr(&output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(summary["jobs"], 2);
    assert_eq!(summary["partitions"], 4);
    assert_eq!(summary["malformed_lines"], 1);
    assert_eq!(summary["max_synth_in_flight"], 1);
    assert_eq!(summary["steady_state_s_per_job"], 0.2);
    let busy = summary["gpu_busy_fraction"].as_f64().expect("number");
    assert!((busy - 280.0 / 300.0).abs() < 1e-9);
    let windows = summary["gpu_idle_windows"].as_array().expect("array");
    assert_eq!(windows.len(), 1);
    assert_eq!(windows[0]["start_ms"], 100.0);
    assert_eq!(windows[0]["end_ms"], 120.0);
    assert_eq!(summary["transitions"][0]["delta_ms"], 60.0);
    let chart = std::fs::read_to_string(&svg).expect("svg written");
    assert!(chart.contains(">GPU 0<") && chart.contains(">GPU 1<"));

    let output = cuzk(&["analyze", &files.path("missing.log")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("missing.log"));
}

/// `cuzk analyze` on a hand-built two-device log: the merged view shows no idle time, the lines
/// per device show each device's own gaps.
#[test]
fn analyze_reports_each_device() {
    let files = Files::new();
    let log = "\
        TIMELINE,0,GPU_START,a,partition=0,worker=0,device=0\n\
        TIMELINE,10,GPU_START,a,partition=1,worker=1,device=1\n\
        TIMELINE,50,GPU_END,a,partition=0,worker=0,device=0\n\
        TIMELINE,60,GPU_END,a,partition=1,worker=1,device=1\n\
        TIMELINE,50,GPU_START,b,partition=0,worker=0,device=0\n\
        TIMELINE,100,GPU_END,b,partition=0,worker=0,device=0\n\
        TIMELINE,80,GPU_START,b,partition=1,worker=1,device=1\n\
        TIMELINE,110,GPU_END,b,partition=1,worker=1,device=1\n";
    let path = files.path("two.log");
    std::fs::write(&path, log).expect("write");
    let output = cuzk(&["--json", "analyze", &path]);
    assert!(output.status.success(), "{}", stderr(&output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(summary["gpu_busy_fraction"], 1.0);
    let devices = summary["devices"].as_array().expect("devices");
    let figures: Vec<_> = devices
        .iter()
        .map(|d| {
            let number = |key: &str| d[key].as_f64().expect(key);
            (
                number("device"),
                number("partitions"),
                number("gpu_idle_windows"),
                d["gpu_ms"]["median"].as_f64().expect("median"),
            )
        })
        .collect();
    assert_eq!(figures, [(0.0, 2.0, 0.0, 50.0), (1.0, 2.0, 1.0, 40.0)]);
    let busy = devices[1]["gpu_busy_fraction"].as_f64().expect("busy");
    assert!((busy - 80.0 / 100.0).abs() < 1e-9);

    let output = cuzk(&["analyze", &path]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("device 0       2 partitions, busy 100.0%")
            && text.contains(
                "device 1       2 partitions, busy 80.0% of its own span (1 idle windows)"
            ),
        "{text}"
    );
}

/// `cuzk analyze` on a hand-built log whose first partition placed the SRS in a 900 ms device
/// region while the others took 70 to 90 ms: the placement on a line of its own, the medians of
/// the steady partitions (after the first job) alone, the same figures in JSON and text.
#[test]
fn analyze_sets_the_srs_placement_apart() {
    let files = Files::new();
    let mut log = String::new();
    let mut start = 0;
    for (k, region) in [900, 70, 80, 70, 90, 70].into_iter().enumerate() {
        let (job, partition) = (k / 2, k % 2);
        let end = start + region;
        let srs = if k == 0 { ",srs_place_ms=830" } else { "" };
        log += &format!(
            "TIMELINE,{start},GPU_START,job{job},partition={partition},device=0\n\
             TIMELINE,{end},GPU_END,job{job},partition={partition},device=0\n\
             TIMELINE,{end},PARTITION_STATS,job{job},partition={partition},prove_start_ms={}{srs}\n",
            region + 5
        );
        start = end;
    }
    let path = files.path("srs.log");
    std::fs::write(&path, log).expect("write");
    let output = cuzk(&["--json", "analyze", &path]);
    assert!(output.status.success(), "{}", stderr(&output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let placements = summary["srs_placements"].as_array().expect("placements");
    assert_eq!(placements.len(), 1, "{summary}");
    assert_eq!(
        (
            &placements[0]["job"],
            &placements[0]["gpu_ms"],
            &placements[0]["srs_place_ms"]
        ),
        (&"job0".into(), &900.0.into(), &830.0.into())
    );
    // Final GPU_ENDs 970, 1120, 1280: the steady state runs from the first job's end, 310 ms
    // for the other two.
    assert_eq!(summary["warmup_jobs"], 1);
    assert_eq!(summary["steady_state"]["jobs"], 2);
    assert_eq!(summary["steady_state_s_per_job"], 0.155);
    let per_partition = &summary["per_partition"];
    assert_eq!(per_partition["over"], "steady_state");
    assert_eq!(per_partition["gpu_ms"]["count"], 4);
    assert_eq!(per_partition["gpu_ms"]["median"], 75.0);
    assert_eq!(per_partition["prove_start_ms"]["median"], 80.0);
    // The device's own figure covers the whole run, its placement still apart.
    assert_eq!(summary["devices"][0]["gpu_ms"]["median"], 70.0);

    let output = cuzk(&["analyze", &path]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    for line in [
        "  steady state   0.155 s per proof over 2 jobs, 0.970–1.280 s, after a warm-up of 1 job; GPU busy 100.0%",
        "  SRS placement  job0 partition 0 on device 0: 830.0 ms of a 900.0 ms device region",
        "  partitions     4 picked up for the GPU in the steady state, SRS placements apart:",
        "  device region  75.0 ms median, p10 70.0, p90 87.0, 4 partitions",
        "  prove_start    80.0 ms median, p10 75.0, p90 92.0, 4 partitions",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
    }
}

/// `cuzk bench` runs 4 jobs of 4 partitions through the engine on the CPU, and `cuzk analyze` on
/// the TIMELINE it wrote reports the same steady state and GPU busy fraction as its summary.
#[test]
fn bench_runs_jobs_and_analyze_agrees_with_its_summary() {
    let files = Files::new();
    let (timeline, summary) = (files.path("bench.log"), files.path("bench.json"));
    let output = cuzk(&[
        "bench",
        "--backend",
        "cpu",
        "--circuit",
        "synthetic",
        "--constraints",
        "300",
        "--boolean-fraction",
        "0.8",
        "-j",
        "4",
        "-c",
        "2",
        "--partitions",
        "4",
        "--partition-workers",
        "2",
        "--memory-budget",
        "64M",
        "--timeline",
        &timeline,
        "--json-out",
        &summary,
    ]);
    assert!(output.status.success(), "bench: {}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("s per proof over 3 jobs"), "{text}");
    assert!(text.contains("after a warm-up of 1 job"), "{text}");
    // One device: the header names it alone, and no line per device.
    assert!(text.contains(" at once, on cpu: "), "{text}");
    assert!(!text.contains("device 0"), "{text}");
    let bench: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).expect("summary")).expect("json");
    assert_eq!(bench["jobs"], 4);
    let devices = bench["devices"].as_array().expect("devices");
    assert_eq!(devices.len(), 1, "{devices:?}");
    assert_eq!(
        (
            &devices[0]["device"],
            &devices[0]["backend"],
            &devices[0]["partitions"]
        ),
        (&0.into(), &"cpu".into(), &16.into())
    );
    assert_eq!(devices[0]["gpu_busy_fraction"], bench["gpu_busy_fraction"]);
    assert!(bench["peak_memory_bytes"].as_u64().expect("peak") <= 64 << 20);
    // The circuit's R1CS is recorded once; the partitions synthesized while it was being recorded
    // went direct (on a loaded machine that can be both first jobs'), every later one compiled:
    // at least the last job's, which starts after two jobs have finished.
    assert_eq!(bench["compiled_synthesis"], true);
    assert_eq!(bench["products_on_device"], false, "the CPU backend");
    let paths = bench["synthesis"].as_object().expect("synthesis paths");
    assert_eq!(paths["recorded"]["partitions"], 1, "{paths:?}");
    assert!(
        paths["compiled"]["partitions"].as_u64() >= Some(4),
        "{paths:?}"
    );
    let partitions: u64 = paths
        .values()
        .filter_map(|p| p["partitions"].as_u64())
        .sum();
    assert_eq!(partitions, 16);

    let output = cuzk(&["--json", "analyze", &timeline]);
    assert!(output.status.success(), "analyze: {}", stderr(&output));
    let analyzed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(analyzed["jobs"], 4);
    assert_eq!(analyzed["partitions"], 16);
    assert_eq!(analyzed["malformed_lines"], 0);
    assert_eq!(analyzed["devices"][0]["partitions"], 16);
    let steady = bench["steady_state_s_per_proof"]
        .as_f64()
        .expect("steady state");
    assert!(steady > 0.0);
    let figures = [
        (steady, &analyzed["steady_state_s_per_job"]),
        (
            bench["gpu_busy_fraction"].as_f64().expect("busy"),
            &analyzed["gpu_busy_fraction"],
        ),
    ];
    for (ours, theirs) in figures {
        assert!((ours - theirs.as_f64().expect("number")).abs() < 1e-9);
    }
    // The shared figures are the same numbers: the warm-up, the steady window, per partition.
    for key in [
        "warmup_jobs",
        "steady_state",
        "srs_placements",
        "per_partition",
        "synthesis",
    ] {
        assert_eq!(bench[key], analyzed[key], "{key}");
    }
    let per_partition = &bench["per_partition"];
    assert_eq!(per_partition["over"], "steady_state");
    let median = |key: &str| per_partition[key]["median"].as_f64();
    assert!(median("gpu_ms") > Some(0.0), "{per_partition}");
    assert!(median("synth_ms") > Some(0.0), "{per_partition}");
    assert!(median("prove_start_ms") > Some(0.0), "{per_partition}");
}

/// `cuzk bench --direct-synthesis` records nothing and compiles nothing.
#[test]
fn bench_direct_synthesis_compiles_nothing() {
    let output = cuzk(&[
        "--json",
        "bench",
        "--backend",
        "cpu",
        "--constraints",
        "200",
        "-j",
        "2",
        "--partitions",
        "2",
        "--memory-budget",
        "64M",
        "--direct-synthesis",
    ]);
    assert!(output.status.success(), "bench: {}", stderr(&output));
    let bench: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(bench["compiled_synthesis"], false);
    let paths = bench["synthesis"].as_object().expect("synthesis paths");
    assert_eq!(paths.keys().collect::<Vec<_>>(), ["direct"]);
    assert_eq!(paths["direct"]["partitions"], 4);
}

/// Two CPU devices, the second dying after its first proof: every job still comes back whole,
/// and the summary names the faults and when the device went out of service. On one device that
/// dies, the bench fails and says why.
#[test]
fn bench_loses_no_job_to_a_device_that_dies() {
    let bench = |devices: &str, fault: &str| {
        cuzk(&[
            "--json",
            "bench",
            "--backend",
            "cpu",
            "--constraints",
            "200",
            "-j",
            "6",
            "--partitions",
            "3",
            "--memory-budget",
            "64M",
            "--devices",
            devices,
            "--inject-device-fault",
            fault,
        ])
    };
    let output = bench("0,1", "1@1");
    assert!(output.status.success(), "bench: {}", stderr(&output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let devices = summary["devices"].as_array().expect("devices");
    let figures: Vec<_> = devices
        .iter()
        .map(|d| (d["faults"].as_u64(), d["out_of_service_ms"].is_number()))
        .collect();
    assert_eq!(figures, [(Some(0), false), (Some(3), true)], "{summary}");
    let proven: u64 = devices
        .iter()
        .filter_map(|d| d["partitions"].as_u64())
        .sum();
    assert_eq!(proven, 18, "{summary}");

    let output = bench("0", "0@0");
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("device fault"), "{message}");

    let output = bench("0,1", "2@0");
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("--inject-device-fault: no device 2"),
        "{message}"
    );
    let output = bench("0,1", "one@two");
    assert!(
        stderr(&output).contains("not DEVICE@PROOF"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn bench_prover_reports_the_median_within_its_spread_and_the_stages() {
    let output = cuzk(&[
        "--json",
        "bench-prover",
        "--backend",
        "cpu",
        "--constraints",
        "300",
        "--boolean-fraction",
        "0.9",
        "--runs",
        "3",
    ]);
    assert!(output.status.success(), "bench-prover: {}", stderr(&output));
    let bench: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let ms = |key: &str| {
        bench[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} in {bench}"))
    };
    let (min, median, max) = (
        ms("prove_start_min_ms"),
        ms("prove_start_ms"),
        ms("prove_start_max_ms"),
    );
    assert!(0.0 < min && min <= median && median <= max, "{bench}");
    assert_eq!(bench["runs"], 3);
    assert!(ms("synthesis_ms") > 0.0);
    assert!(bench["stages"].is_object(), "{bench}");
}

#[test]
fn bench_refuses_unusable_settings() {
    for (flag, value, cause) in [
        ("--memory-budget", "12Q", "\"q\" is not a size unit"),
        ("--memory-budget", "lots", "\"lots\" is not a size"),
        ("--memory-budget", "0", "give a size above zero"),
        ("--jobs", "0", "--jobs must be at least 1"),
        ("--synthesis-nice", "20", "0..=19"),
        (
            "--gpu-workers",
            "0",
            "gpu_workers_per_device must be at least 1",
        ),
    ] {
        let output = cuzk(&[
            "bench",
            "--backend",
            "cpu",
            "--constraints",
            "10",
            flag,
            value,
        ]);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}");
        assert!(stderr(&output).contains(cause), "{}", stderr(&output));
    }
}

#[test]
fn test_params_on_gpu_need_a_gpu() {
    let files = Files::new();
    let c1 = files.path("c1.json");
    std::fs::write(&c1, "{}").unwrap();
    let output = cuzk(&[
        "bench",
        "--c1",
        &c1,
        "--test-params-on-gpu",
        "--backend",
        "cpu",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--test-params-on-gpu"),
        "{}",
        stderr(&output)
    );
    let both = cuzk(&[
        "bench",
        "--c1",
        &c1,
        "--test-params-on-gpu",
        "--test-params",
    ]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    assert!(
        stderr(&both).contains("cannot be used with"),
        "{}",
        stderr(&both)
    );
}

#[test]
fn porep_commands_name_what_is_unusable() {
    let files = Files::new();
    let output = cuzk(&[
        "seal-test-sector",
        "--size",
        "2KiB",
        "--out",
        &files.path("s"),
    ]);
    assert!(output.status.success(), "seal: {}", stderr(&output));
    let c1 = files.path("s/c1.json");
    let sector: serde_json::Value =
        serde_json::from_slice(&std::fs::read(files.path("s/sector.json")).unwrap()).unwrap();
    let (prover_id, sector_id) = (
        sector["prover_id"].as_str().unwrap().to_owned(),
        sector["sector_id"].to_string(),
    );
    let empty = files.path("params");
    std::fs::create_dir(&empty).unwrap();

    // No parameters: exit 2, the missing file and the command that makes test ones named.
    let output = cuzk(&["prove", "porep", "--c1", &c1, "--params-dir", &empty]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains(".params"), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("cuzk setup --porep 2KiB"),
        "{}",
        stderr(&output)
    );
    assert!(!Path::new(&files.path("s/c1.proof")).exists());
    let output = cuzk(&[
        "verify",
        "porep",
        "--c1",
        &c1,
        "--proof",
        &c1,
        "--params-dir",
        &empty,
        "--prover-id",
        &prover_id,
        "--sector-id",
        &sector_id,
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains(".vk"), "{}", stderr(&output));

    // A truncated C1 output: exit 2 naming the file.
    let bytes = std::fs::read(&c1).unwrap();
    std::fs::write(files.path("cut.json"), &bytes[..bytes.len() / 3]).unwrap();
    let output = cuzk(&[
        "prove",
        "porep",
        "--c1",
        &files.path("cut.json"),
        "--params-dir",
        &empty,
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cut.json: not a C1 output"),
        "{}",
        stderr(&output)
    );

    let output = cuzk(&["setup", "--porep", "3KiB", "--out", &empty]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("\"3KiB\""), "{}", stderr(&output));
}

/// A 2 KiB PoRep on the CPU against host memory too small for it: with `--memory-budget 1G`, and
/// inside a memory cgroup of 1.5 GiB (the automatic budget follows the cgroup), `prove porep`
/// exits 2 before it reads the parameters, naming each part it needs and what is there, never
/// killed by the kernel; in a cgroup of 3 GiB it proves. The cgroup runs skip, saying why, where
/// this machine cannot make a memory cgroup.
#[test]
fn porep_too_big_for_its_memory_is_refused_and_one_that_fits_proves() {
    let params = common::porep_params();
    let params_dir = params.to_str().unwrap();
    let files = Files::new();
    let output = cuzk(&["sample-sector", "--size", "2KiB", "--out", &files.path("s")]);
    assert!(output.status.success(), "sample: {}", stderr(&output));
    let c1 = files.path("s/c1.json");
    let args = |out: &'static str, extra: &[&'static str]| {
        let mut args: Vec<String> = ["prove", "porep", "--backend", "cpu", "--c1", &c1]
            .iter()
            .map(|a| a.to_string())
            .collect();
        args.extend(["--params-dir", params_dir, "--out"].map(String::from));
        args.push(files.path(out));
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    };
    let refused = |output: &Output, out: &str, source: &str| {
        let text = stderr(output);
        assert_eq!(output.status.code(), Some(2), "{text}");
        for part in [
            "not enough host memory",
            "parameters",
            "one partition in flight",
            source,
        ] {
            assert!(text.contains(part), "{part:?} in {text}");
        }
        assert!(!Path::new(&files.path(out)).exists(), "no proof");
    };
    let explicit = args("explicit.proof", &["--memory-budget", "1G"]);
    let output = cuzk(&explicit.iter().map(String::as_str).collect::<Vec<_>>());
    refused(&output, "explicit.proof", "(--memory-budget) available");

    // The compiled R1CS is recorded at a first proof, outside any cgroup, if it is not cached.
    let proof = cuzk_filecoin::SealProof::from_size_or_name("2KiB").unwrap();
    if !cuzk_filecoin::ParamFiles::new(&params, proof)
        .unwrap()
        .r1cs
        .is_file()
    {
        let first = args("first.proof", &[]);
        let output = cuzk(&first.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(output.status.success(), "prove: {}", stderr(&output));
    }
    let small = match common::MemoryCgroup::new("small", 1500 << 20) {
        Ok(cgroup) => cgroup,
        Err(why) => {
            eprintln!("SKIPPED the memory cgroup runs: cannot make a memory cgroup here: {why}");
            return;
        }
    };
    let small_args = args("small.proof", &[]);
    let output = small.cuzk(&small_args.iter().map(String::as_str).collect::<Vec<_>>());
    refused(&output, "small.proof", "cgroup memory");
    drop(small);
    let large = common::MemoryCgroup::new("large", 3 << 30).unwrap();
    let large_args = args("large.proof", &[]);
    let output = large.cuzk(&large_args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        output.status.success(),
        "prove in 3 GiB: {:?} {}",
        output.status,
        stderr(&output)
    );
    assert_eq!(std::fs::read(files.path("large.proof")).unwrap().len(), 192);
}

/// `sample-sector` writes a 32 GiB sector's C1 output (10 partitions), its sector.json, its
/// WinningPoSt and WindowPoSt requests and its update (16 partitions) in seconds; it refuses a directory that already holds a sector and a revision it cannot sample.
#[test]
fn sample_sector_writes_a_32gib_c1_output() {
    let files = Files::new();
    let out = files.path("s32");
    let output = cuzk(&[
        "--json",
        "sample-sector",
        "--size",
        "32GiB",
        "--out",
        &out,
        "--miner-id",
        "1000",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let sector: serde_json::Value =
        serde_json::from_slice(&std::fs::read(files.path("s32/sector.json")).unwrap()).unwrap();
    assert_eq!(sector["seal_proof"], "StackedDrg32GiBV1_1");
    assert!(
        sector["prover_id"]
            .as_str()
            .unwrap()
            .starts_with("0xe807000"),
        "{sector}"
    );
    let c1: serde_json::Value =
        serde_json::from_slice(&std::fs::read(files.path("s32/c1.json")).unwrap()).unwrap();
    assert_eq!(c1["registered_proof"], "StackedDrg32GiBV1_1");
    assert_eq!(
        c1["vanilla_proofs"]["StackedDrg32GiBV1"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
    for (name, registered) in [
        ("winning-post", "StackedDrgWinning32GiBV1"),
        ("window-post", "StackedDrgWindow32GiBV1_1"),
    ] {
        let request: serde_json::Value = serde_json::from_slice(
            &std::fs::read(files.path(&format!("s32/{name}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(request["registered_proof"], registered, "{name}");
        assert_eq!(
            request["vanilla_proofs"].as_array().unwrap().len(),
            1,
            "{name}"
        );
    }
    let update: serde_json::Value =
        serde_json::from_slice(&std::fs::read(files.path("s32/snap.json")).unwrap()).unwrap();
    assert_eq!(update["registered_proof"], "StackedDrg32GiBV1", "{update}");
    assert_eq!(update["vanilla_proofs"].as_array().unwrap().len(), 16);
    assert_eq!(update["comm_r_new"], update["comm_r_old"], "zero data");

    let again = cuzk(&["sample-sector", "--size", "32GiB", "--out", &out]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("already holds a sector"),
        "{}",
        stderr(&again)
    );

    let synthetic = files.path("synthetic");
    let output = cuzk(&[
        "sample-sector",
        "--size",
        "StackedDrg2KiBV1_1_Feat_SyntheticPoRep",
        "--out",
        &synthetic,
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("derived from comm_r"),
        "{}",
        stderr(&output)
    );
    assert!(!Path::new(&synthetic).join("c1.json").exists());
}

#[test]
fn a_kernels_file_that_cannot_be_read_is_named() {
    let files = Files::new();
    let missing = files.path("missing.fatbin");
    let output = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["demo", "--constraints", "64", "--backend", "gpu"])
        .env("CUZK_KERNELS_FILE", &missing)
        .output()
        .expect("run cuzk");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains(&missing), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("CUZK_KERNELS_FILE"),
        "{}",
        stderr(&output)
    );
}

/// WinningPoSt, WindowPoSt and SnapDeals of a sealed 2 KiB sector, as an operator runs them: the
/// requests `seal-test-sector` writes, test parameters, prove, verify (filecoin's verifiers), bench;
/// a flipped proof byte, a request of the other kind and missing parameters refused with exit 2.
#[test]
fn request_commands_prove_and_verify_a_sealed_sector() {
    let files = Files::new();
    let output = cuzk(&[
        "seal-test-sector",
        "--size",
        "2KiB",
        "--out",
        &files.path("s"),
    ]);
    assert!(output.status.success(), "seal: {}", stderr(&output));
    let winning = PostProof::from_size_or_name("2KiB", PostKind::Winning).unwrap();
    let window = PostProof::from_size_or_name("2KiB", PostKind::Window).unwrap();
    let update = UpdateProof::from_size_or_name("2KiB").unwrap();
    // Every kind's parameters are in one directory, made by `cuzk setup` where absent.
    let params = common::shared_params("--winning-post", winning)
        .to_string_lossy()
        .into_owned();
    let empty = files.path("empty");
    std::fs::create_dir(&empty).unwrap();
    // Setup flag, bench flag and circuit of each kind.
    for (kind, flag, bench_flag, circuit, id) in [
        (
            "winning-post",
            "--winning-post",
            "--post",
            "post",
            winning.into(),
        ),
        (
            "window-post",
            "--window-post",
            "--post",
            "post",
            window.into(),
        ),
        ("snap", "--snap", "--snap", "snap", CircuitId::from(update)),
    ] {
        let request = files.path(&format!("s/{kind}.json"));
        let proof = files.path(&format!("s/{kind}.proof"));
        let missing = cuzk(&["prove", kind, "--request", &request, "--params-dir", &empty]);
        assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
        assert!(
            stderr(&missing).contains(&format!("cuzk setup {flag} 2KiB")),
            "{}",
            stderr(&missing)
        );
        assert!(!Path::new(&proof).exists(), "no proof from a failed run");

        common::shared_params(flag, id);
        let prove = cuzk(&[
            "prove",
            kind,
            "--request",
            &request,
            "--params-dir",
            &params,
            "--backend",
            "cpu",
        ]);
        assert!(prove.status.success(), "prove: {}", stderr(&prove));
        assert_eq!(std::fs::read(&proof).unwrap().len(), 192);
        let verify = |proof: &str| {
            cuzk(&[
                "verify",
                kind,
                "--request",
                &request,
                "--params-dir",
                &params,
                "--proof",
                proof,
            ])
        };
        let valid = verify(&proof);
        assert!(valid.status.success(), "verify: {}", stderr(&valid));

        let mut bytes = std::fs::read(&proof).unwrap();
        bytes[100] ^= 1;
        let flipped = files.path("flipped.proof");
        std::fs::write(&flipped, bytes).unwrap();
        assert_ne!(verify(&flipped).status.code(), Some(0), "a flipped byte");

        let bench = cuzk(&[
            "--json",
            "bench",
            bench_flag,
            &request,
            "--params-dir",
            &params,
            "--backend",
            "cpu",
            "-j",
            "1",
            "-c",
            "1",
            "--warmup",
            "0",
        ]);
        assert!(bench.status.success(), "bench: {}", stderr(&bench));
        let summary: serde_json::Value = serde_json::from_slice(&bench.stdout).unwrap();
        assert_eq!(summary["circuit"], circuit, "{summary}");
        assert_eq!(summary["partitions"], 1, "{summary}");
    }
    // Random test parameters for a request of another kind than PoRep: nothing but the compiled
    // R1CS cache needed in the directory, every proof verified against their key.
    let fresh = files.path("fresh");
    std::fs::create_dir(&fresh).unwrap();
    for (bench_flag, kind, circuit) in [
        ("--post", "window-post", "post"),
        ("--snap", "snap", "snap"),
    ] {
        let bench = cuzk(&[
            "--json",
            "bench",
            bench_flag,
            &files.path(&format!("s/{kind}.json")),
            "--test-params",
            "--params-dir",
            &fresh,
            "--backend",
            "cpu",
            "-j",
            "1",
            "--warmup",
            "0",
        ]);
        assert!(bench.status.success(), "{kind} bench: {}", stderr(&bench));
        let summary: serde_json::Value = serde_json::from_slice(&bench.stdout).unwrap();
        assert_eq!(summary["circuit"], circuit, "{summary}");
    }
    // A WinningPoSt probe at CRITICAL beside a WindowPoSt load: alone, then under the load; the
    // bench's own figures are the load's.
    let probed = cuzk(&[
        "--json",
        "bench",
        "--post",
        &files.path("s/window-post.json"),
        "--probe",
        &files.path("s/winning-post.json"),
        "--probe-interval-ms",
        "0",
        "--params-dir",
        &params,
        "--backend",
        "cpu",
        "-j",
        "3",
        "-c",
        "1",
        "--warmup",
        "0",
    ]);
    assert!(probed.status.success(), "probe: {}", stderr(&probed));
    let summary: serde_json::Value = serde_json::from_slice(&probed.stdout).unwrap();
    let probe = &summary["probe"];
    assert_eq!(probe["priority"], "CRITICAL", "{summary}");
    assert_eq!(probe["quiet_ms"]["count"], 5, "{summary}");
    assert!(
        probe["loaded_ms"]["count"].as_u64().unwrap_or(0) >= 1,
        "{summary}"
    );
    assert!(
        probe["loaded_over_quiet"].as_f64().unwrap() > 0.0,
        "{summary}"
    );
    assert_eq!(
        summary["post_proof"], "StackedDrgWindow2KiBV1_1",
        "{summary}"
    );
    let load_partitions = summary["per_partition"]["partitions"].as_u64().unwrap();
    assert!(load_partitions <= 3, "{summary}");

    let other = cuzk(&[
        "prove",
        "window-post",
        "--request",
        &files.path("s/winning-post.json"),
        "--params-dir",
        &params,
    ]);
    assert_eq!(other.status.code(), Some(2), "{}", stderr(&other));
    assert!(
        stderr(&other).contains("is not a WindowPoSt"),
        "{}",
        stderr(&other)
    );
}

/// Output to a reader that has gone (`cuzk … | head`) ends the command as a pipe writer's end
/// by SIGPIPE would, status 141, with nothing on stderr (no panic).
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["serve", "--print-sample-config"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The read end closed before the first write.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(141), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
}
