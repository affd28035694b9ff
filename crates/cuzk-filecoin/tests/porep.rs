#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Real 2 KiB PoRep C2: sectors sealed by filecoin-proofs, proven by cuzk on the CPU through the
//! engine, judged by `filecoin_proofs::verify_seal`.
//!
//! The parameters (2.7M constraints, ~1.1 GB) are made once per target directory and reused;
//! the one full prove runs once per test run.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use cuzk_filecoin::{
    compiled_r1cs, seal_random_sector, use_parameter_dir, verify_seal, C1Output, FilecoinError,
    ParamFiles, R1csOrigin, SealProof, SealedSector, SectorCircuits, SectorJob, SectorSize,
};
use cuzk_groth16::backend::CpuBackend;
use cuzk_groth16::params_file::PointCheck;
use cuzk_groth16::setup::generate_random_parameters;
use cuzk_groth16::Parameters;
use cuzk_pipeline::sink::MemorySink;
use cuzk_pipeline::{Engine, EngineConfig};
use cuzk_synth::circuits::SyntheticCircuit;
use cuzk_synth::{CompiledR1cs, ProvingAssignment};
use filecoin_proofs::SectorShape2KiB;

const PROOF: SealProof = SealProof {
    size: SectorSize::S2KiB,
    revision: cuzk_filecoin::Revision::V1_1,
};

struct Fixture {
    dir: PathBuf,
    files: ParamFiles,
    params: Arc<Parameters>,
    compiled: Arc<CompiledR1cs>,
    /// Two sectors: the one proven, and another whose commitments the proof must not fit.
    sectors: [SealedSector; 2],
    _work: tempfile::TempDir,
}

/// Parameters under the target directory (made on first use, kept for later runs) and two
/// freshly sealed sectors.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuzk-filecoin-params");
        std::fs::create_dir_all(&dir).unwrap();
        // Before any other Filecoin call: filecoin-proofs reads its settings once.
        use_parameter_dir(&dir).unwrap();
        let mut rng = cuzk_testkit::rng("porep fixture");
        let files = ParamFiles::new(&dir, PROOF).unwrap();
        let params = if files.params.is_file() && files.vk.is_file() {
            files.load(PointCheck::Unchecked).unwrap()
        } else {
            let start = Instant::now();
            let (_, params) = ParamFiles::generate(&dir, PROOF, &mut rng).unwrap();
            eprintln!(
                "setup of {PROOF}: {:.1} s (domain {}, {} aux)",
                start.elapsed().as_secs_f64(),
                params.h.len() + 1,
                params.l.len()
            );
            params
        };
        let start = Instant::now();
        let (compiled, origin) = compiled_r1cs(&files).unwrap();
        assert!(
            !matches!(origin, R1csOrigin::RecordedUncached(_)),
            "{origin:?}"
        );
        eprintln!(
            "compiled R1CS ({origin:?}): {:.1} s, {} rows, nnz {:?}",
            start.elapsed().as_secs_f64(),
            compiled.num_rows(),
            compiled.nnz()
        );
        let work = tempfile::tempdir().unwrap();
        let sectors = [0, 1].map(|i| {
            let start = Instant::now();
            let sector =
                seal_random_sector(PROOF, &work.path().join(format!("s{i}")), None, &mut rng)
                    .unwrap();
            eprintln!("sealed sector {i}: {:.1} s", start.elapsed().as_secs_f64());
            sector
        });
        Fixture {
            dir,
            files,
            params: Arc::new(params),
            compiled,
            sectors,
            _work: work,
        }
    })
}

fn prove(c1: &C1Output) -> Result<Vec<u8>, FilecoinError> {
    let fixture = fixture();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let engine = Engine::start(
            EngineConfig::new(1, 16 << 30),
            vec![Arc::new(CpuBackend)],
            Arc::new(MemorySink::default()),
        )
        .unwrap();
        let job = SectorJob::new(
            "sector",
            c1,
            Arc::clone(&fixture.params),
            &fixture.files,
            Some(Arc::clone(&fixture.compiled)),
        )?;
        job.prove(&engine).await
    })
}

/// The FFI's form of a C1 output, read back: what a real caller hands over.
fn ffi_c1(sector: &SealedSector) -> C1Output {
    C1Output::from_json(&sector.c1.to_ffi_json(), "ffi.json", None).unwrap()
}

#[test]
fn a_sealed_2kib_sector_proven_by_cuzk_is_accepted_by_filecoin() {
    let fixture = fixture();
    let [sector, other] = &fixture.sectors;
    let c1 = ffi_c1(sector);
    assert_eq!(c1.proof, PROOF);
    let start = Instant::now();
    let proof = prove(&c1).unwrap();
    eprintln!(
        "cuzk C2 (CPU, engine): {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert_eq!(proof.len(), 192);

    let commitments = c1.commitments().unwrap();
    assert!(verify_seal(PROOF, &commitments, sector.identity, &proof, &fixture.dir).unwrap());

    // The same proof for another sector, or another prover, is refused.
    let theirs = other.c1.commitments().unwrap();
    assert!(!verify_seal(PROOF, &theirs, other.identity, &proof, &fixture.dir).unwrap());
    let mut stranger = sector.identity;
    stranger.prover_id[0] ^= 1;
    assert!(!verify_seal(PROOF, &commitments, stranger, &proof, &fixture.dir).unwrap());
}

#[test]
fn a_tampered_c1_output_is_named_before_proving() {
    let fixture = fixture();
    let [sector, other] = &fixture.sectors;
    // Sector 0's vanilla proofs with sector 1's comm_r.
    let mut json: serde_json::Value = serde_json::from_slice(&sector.c1.to_ffi_json()).unwrap();
    let theirs: serde_json::Value = serde_json::from_slice(&other.c1.to_ffi_json()).unwrap();
    json["comm_r"] = theirs["comm_r"].clone();
    let tampered =
        C1Output::from_json(&serde_json::to_vec(&json).unwrap(), "tampered.json", None).unwrap();
    let error = SectorJob::new(
        "t",
        &tampered,
        Arc::clone(&fixture.params),
        &fixture.files,
        None,
    )
    .unwrap_err();
    assert!(
        matches!(&error, FilecoinError::VanillaProofsInvalid { file } if file == "tampered.json"),
        "{error}"
    );
}

#[test]
fn malformed_c1_outputs_name_the_file_and_field() {
    let fixture = fixture();
    let ffi = fixture.sectors[0].c1.to_ffi_json();

    let truncated = C1Output::from_json(&ffi[..ffi.len() / 2], "cut.json", None).unwrap_err();
    assert!(
        matches!(truncated, FilecoinError::C1Syntax { .. }),
        "{truncated}"
    );
    assert!(
        truncated.to_string().starts_with("cut.json: "),
        "{truncated}"
    );

    let raw = fixture.sectors[0].c1.to_raw_json();
    let anonymous = C1Output::from_json(&raw, "raw.json", None).unwrap_err();
    assert!(
        matches!(anonymous, FilecoinError::C1WithoutSealProof { .. }),
        "{anonymous}"
    );
    let named = C1Output::from_json(&raw, "raw.json", Some(PROOF)).unwrap();
    assert_eq!(
        named.commitments().unwrap(),
        fixture.sectors[0].c1.commitments().unwrap()
    );

    let other_size = SealProof::current(SectorSize::S8MiB);
    let mismatch = C1Output::from_json(&ffi, "ffi.json", Some(other_size)).unwrap_err();
    assert!(
        matches!(mismatch, FilecoinError::C1SealProofMismatch { .. }),
        "{mismatch}"
    );

    let mut json: serde_json::Value = serde_json::from_slice(&ffi).unwrap();
    json["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]["comm_d_proofs"] = "oops".into();
    let bad = C1Output::from_json(&serde_json::to_vec(&json).unwrap(), "bad.json", None).unwrap();
    let error =
        SectorJob::new("b", &bad, Arc::clone(&fixture.params), &fixture.files, None).unwrap_err();
    match &error {
        FilecoinError::C1Field { file, field, .. } => {
            assert_eq!(file, "bad.json");
            assert!(
                field.starts_with("vanilla_proofs[0][1].comm_d_proofs"),
                "{field}"
            );
        }
        other => panic!("{other}"),
    }

    json["registered_proof"] = "StackedDrg2KiBV1_1".into();
    json["vanilla_proofs"] = serde_json::json!({ "StackedDrg8MiBV1": [] });
    let wrapped =
        C1Output::from_json(&serde_json::to_vec(&json).unwrap(), "w.json", None).unwrap_err();
    assert!(
        wrapped.to_string().contains("StackedDrg2KiBV1"),
        "{wrapped}"
    );
}

#[test]
fn missing_or_foreign_parameters_are_refused() {
    let fixture = fixture();
    let empty = tempfile::tempdir().unwrap();
    let missing = ParamFiles::new(empty.path(), PROOF)
        .unwrap()
        .load(PointCheck::Unchecked)
        .unwrap_err();
    assert!(
        matches!(missing, FilecoinError::ParamsMissing { .. }),
        "{missing}"
    );
    assert!(
        missing.to_string().contains("cuzk setup --porep 2KiB"),
        "{missing}"
    );

    // Another directory than filecoin-proofs' own is refused by verification, naming both.
    let c1 = &fixture.sectors[0].c1;
    let elsewhere = verify_seal(
        PROOF,
        &c1.commitments().unwrap(),
        fixture.sectors[0].identity,
        &[0; 192],
        empty.path(),
    )
    .unwrap_err();
    assert!(
        matches!(elsewhere, FilecoinError::ParameterCacheElsewhere { .. }),
        "{elsewhere}"
    );

    // Parameters of another circuit: another input count, or (found with the compiled shape)
    // the same input count and another size.
    let mut rng = cuzk_testkit::rng("foreign params");
    for (inputs, compiled) in [(3, None), (40, Some(Arc::clone(&fixture.compiled)))] {
        let circuit = SyntheticCircuit {
            constraints: 64,
            boolean_fraction: 0.5,
            public_inputs: inputs,
            seed: 1,
        };
        let foreign = Arc::new(generate_random_parameters(circuit, &mut rng).unwrap());
        let error = SectorJob::new("f", c1, foreign, &fixture.files, compiled).unwrap_err();
        assert!(
            matches!(&error, FilecoinError::WrongParams { file, .. } if file.ends_with(".params")),
            "{error}"
        );
    }
}

#[test]
fn the_compiled_evaluator_equals_direct_synthesis_on_the_porep_circuit() {
    let fixture = fixture();
    let sector = SectorCircuits::<SectorShape2KiB>::new(&fixture.sectors[1].c1).unwrap();
    let circuit = sector.circuits[0].clone();
    let start = Instant::now();
    let direct = ProvingAssignment::synthesize(circuit.clone()).unwrap();
    let direct_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let compiled = fixture.compiled.synthesize(circuit).unwrap();
    let compiled_s = start.elapsed().as_secs_f64();
    eprintln!("2 KiB partition synthesis: direct {direct_s:.2} s, compiled {compiled_s:.2} s");
    assert_eq!(
        direct.num_rows(),
        2_687_921 + 40,
        "constraints and the input rows"
    );
    assert_eq!(compiled, direct);
    assert_eq!(&direct.input_assignment[1..], &sector.public_inputs[0][..]);
}

/// Non-interactive PoRep: 13 partitions of the same 2 KiB circuit (about 13 times the interactive
/// prove), aggregated by filecoin-proofs with a test SRS. Heavy: run with `--ignored`.
#[test]
#[ignore]
fn a_non_interactive_2kib_sector_is_aggregated_and_accepted() {
    let fixture = fixture();
    let proof = SealProof {
        size: SectorSize::S2KiB,
        revision: cuzk_filecoin::Revision::NonInteractive,
    };
    let files = ParamFiles::new(&fixture.dir, proof).unwrap();
    assert_eq!(
        files.params, fixture.files.params,
        "the same circuit and file"
    );
    files
        .generate_srs(&mut cuzk_testkit::rng("test SRS"))
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut rng = cuzk_testkit::rng("NI sector");
    let sector = seal_random_sector(proof, work.path(), None, &mut rng).unwrap();
    let c1 = ffi_c1(&sector);
    let start = Instant::now();
    let aggregate = prove(&c1).unwrap();
    eprintln!(
        "cuzk NI C2 ({} bytes): {:.1} s",
        aggregate.len(),
        start.elapsed().as_secs_f64()
    );
    let commitments = c1.commitments().unwrap();
    assert!(verify_seal(
        proof,
        &commitments,
        sector.identity,
        &aggregate,
        &fixture.dir
    )
    .unwrap());
    let mut stranger = sector.identity;
    stranger.sector_id ^= 1;
    assert!(!verify_seal(proof, &commitments, stranger, &aggregate, &fixture.dir).unwrap());
}
