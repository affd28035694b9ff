//! Real 2 KiB PoRep C2: sectors sealed by filecoin-proofs, proven by cuzk on the CPU through the
//! engine, judged by `filecoin_proofs::verify_seal`.
//!
//! The parameters (2.7M constraints, ~1.1 GB) are made once per target directory and reused;
//! the one full prove runs once per test run.

use crate::common;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bellpepper_core::{Index, LinearCombination, Variable};
use cuzk_filecoin::{
    compiled_r1cs, sample_sector, seal_random_sector, verify_seal, C1Output, FilecoinError,
    FilecoinRequest, ParamFiles, PartitionCircuit, R1csOrigin, Revision, SealProof, SealedSector,
    SectorCircuits, SectorSize,
};
use cuzk_groth16::params_file::PointCheck;
use cuzk_groth16::setup::generate_random_parameters;
use cuzk_groth16::Parameters;
use cuzk_math::Scalar;
use cuzk_synth::circuits::SyntheticCircuit;
use cuzk_synth::{CompiledR1cs, ProvingAssignment};
use cuzk_synth::{ConstraintSystem, Sectioned, SynthesisError, ThroughGadgets};
use ff::PrimeField;
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::{
    as_safe_commitment, with_shape, DefaultPieceHasher, MerkleTreeTrait, SealCommitPhase1Output,
    SectorShape2KiB, SectorShape8MiB,
};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound};

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
        let dir = common::params_dir().to_owned();
        let mut rng = cuzk_testkit::rng("porep fixture");
        let (files, params) = common::parameters(PROOF, &mut rng);
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
    prove_with(
        c1,
        Arc::clone(&fixture.params),
        &fixture.files,
        Some(Arc::clone(&fixture.compiled)),
    )
}

/// cuzk's C2 of `c1` on the CPU through the engine.
fn prove_with(
    c1: &C1Output,
    params: Arc<Parameters>,
    files: &ParamFiles,
    compiled: Option<Arc<CompiledR1cs>>,
) -> Result<Vec<u8>, FilecoinError> {
    common::on_cpu_engine(async |engine| {
        let job = FilecoinRequest::Porep(c1.clone()).job("sector", params, files, compiled)?;
        job.prove(engine).await
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
    let error = FilecoinRequest::Porep(tampered)
        .job("t", Arc::clone(&fixture.params), &fixture.files, None)
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
    let error = FilecoinRequest::Porep(bad)
        .job("b", Arc::clone(&fixture.params), &fixture.files, None)
        .unwrap_err();
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
        let error = FilecoinRequest::Porep(c1.clone())
            .job("f", foreign, &fixture.files, compiled)
            .unwrap_err();
        assert!(
            matches!(&error, FilecoinError::WrongParams { file, .. } if file.ends_with(".params")),
            "{error}"
        );
    }
}

/// Partition 0's circuit exactly as filecoin-proofs' commit-2 builds it from `c1`.
fn filecoin_circuit(c1: &C1Output) -> StackedCircuit<SectorShape2KiB, DefaultPieceHasher> {
    let output: SealCommitPhase1Output<SectorShape2KiB> =
        serde_json::from_slice(&c1.to_raw_json()).unwrap();
    let public_inputs = stacked::PublicInputs {
        replica_id: output.replica_id,
        tau: Some(stacked::Tau {
            comm_d: as_safe_commitment(&output.comm_d, "comm_d").unwrap(),
            comm_r: as_safe_commitment(&output.comm_r, "comm_r").unwrap(),
        }),
        k: None,
        seed: Some(output.seed),
    };
    let vanilla_params = public_params::<SectorShape2KiB>(&PROOF.porep_config().unwrap()).unwrap();
    StackedCompound::circuit(
        &public_inputs,
        (),
        &output.vanilla_proofs[0],
        &vanilla_params,
        Some(0),
    )
    .unwrap()
}

#[test]
fn the_compiled_evaluator_equals_direct_synthesis_on_the_porep_circuit() {
    let fixture = fixture();
    let c1 = &fixture.sectors[1].c1;
    let sector = SectorCircuits::<SectorShape2KiB>::new(c1).unwrap();
    let circuit = sector.circuits[0].clone();
    let start = Instant::now();
    let direct = ProvingAssignment::synthesize(filecoin_circuit(c1)).unwrap();
    let direct_s = start.elapsed().as_secs_f64();
    assert_eq!(
        direct.num_rows(),
        2_687_921 + 40,
        "constraints and the input rows"
    );
    assert_eq!(
        ProvingAssignment::synthesize(circuit.clone()).unwrap(),
        direct
    );
    let start = Instant::now();
    let compiled = fixture.compiled.synthesize(circuit.clone()).unwrap();
    let compiled_s = start.elapsed().as_secs_f64();
    assert_eq!(compiled, direct);
    let start = Instant::now();
    let sectioned = fixture.compiled.synthesize_sectioned(&circuit).unwrap();
    let sectioned_s = start.elapsed().as_secs_f64();
    eprintln!(
        "2 KiB partition synthesis: direct {direct_s:.2} s, compiled {compiled_s:.2} s, \
         {} challenges side by side {sectioned_s:.2} s",
        circuit.sections()
    );
    assert_eq!(sectioned, direct);
    assert_eq!(&direct.input_assignment[1..], &sector.public_inputs[0][..]);
}

#[test]
fn the_r1cs_recorded_challenge_by_challenge_is_the_blank_circuits() {
    let vanilla_params = public_params::<SectorShape2KiB>(&PROOF.porep_config().unwrap()).unwrap();
    let blank: StackedCircuit<SectorShape2KiB, DefaultPieceHasher> =
        StackedCompound::blank_circuit(&vanilla_params);
    crate::compare::recorded_as_whole(PROOF, blank);
}

/// A constraint system that keeps a digest of each row (its three linear combinations, every
/// term) and the variable counts: two circuits with the same digests write the same matrices
/// over variables allocated in the same order. Witness closures are never called.
#[derive(Debug, Default)]
struct RowDigests {
    inputs: usize,
    aux: usize,
    rows: Vec<u64>,
}

impl RowDigests {
    fn of(synthesize: impl FnOnce(&mut Self) -> Result<(), SynthesisError>) -> Self {
        let mut digests = Self::default();
        synthesize(&mut digests).unwrap();
        digests
    }
}

impl ConstraintSystem<Scalar> for RowDigests {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError> {
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError> {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let mut hasher = DefaultHasher::new();
        let zero = LinearCombination::zero;
        for lc in [a(zero()), b(zero()), c(zero())] {
            lc.iter().count().hash(&mut hasher);
            for (variable, coeff) in lc.iter() {
                variable.get_unchecked().hash(&mut hasher);
                coeff.to_repr().hash(&mut hasher);
            }
        }
        self.rows.push(hasher.finish());
    }

    fn push_namespace<NR, N>(&mut self, _: N) {}

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Partition 0's circuit of `c1`, as cuzk builds it.
fn partition<Tree: 'static + MerkleTreeTrait>(c1: &C1Output) -> PartitionCircuit<Tree> {
    SectorCircuits::<Tree>::new(c1).unwrap().circuits.remove(0)
}

#[test]
fn the_reimplemented_porep_circuit_writes_filecoins_rows() {
    let circuit = partition::<SectorShape2KiB>(&fixture().sectors[1].c1);
    let all = 0..circuit.sections();
    let start = Instant::now();
    let theirs = RowDigests::of(|cs| circuit.synthesize_sections(cs, all.clone()));
    let ours = RowDigests::of(|cs| circuit.synthesize_reimplemented(cs, all.clone()));
    eprintln!(
        "the rows of a 2 KiB partition, filecoin's and cuzk's: {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let counts = |d: &RowDigests| (d.inputs, d.aux, d.rows.len());
    assert_eq!(counts(&ours), counts(&theirs), "inputs, aux, rows");
    assert_eq!(theirs.rows.len(), 2_687_921);
    let first_difference = (ours.rows.iter().zip(&theirs.rows)).position(|(a, b)| a != b);
    assert_eq!(first_difference, None);
}

/// `circuit`'s witness by the re-implementation (native SHA-256 and Poseidon) is its gadgets'
/// witness (each on one thread, for its CPU time).
pub(crate) fn the_witness_is_the_gadgets<S: Sectioned>(
    compiled: &Arc<CompiledR1cs>,
    circuit: &S,
    what: &str,
) {
    crate::compare::same_witness_on_one_thread(
        what,
        &|| compiled.witness_sectioned(circuit).unwrap(),
        &|| {
            compiled
                .witness_sectioned(&ThroughGadgets(circuit))
                .unwrap()
        },
    );
}

#[test]
fn the_reimplemented_porep_witness_is_the_gadgets() {
    let fixture = fixture();
    let circuit = partition::<SectorShape2KiB>(&fixture.sectors[1].c1);
    the_witness_is_the_gadgets(&fixture.compiled, &circuit, "2 KiB partition");
}

#[test]
fn the_reimplemented_porep_witness_is_the_gadgets_on_a_sample_8mib_sector() {
    let proof = SealProof::current(SectorSize::S8MiB);
    let files = ParamFiles::new(common::params_dir(), proof).unwrap();
    let (compiled, origin) = compiled_r1cs(&files).unwrap();
    eprintln!("8 MiB compiled R1CS: {origin:?}");
    let mut rng = cuzk_testkit::rng("8 MiB witness");
    let sector = sample_sector(proof, None, &mut rng).unwrap().sector;
    let circuit = partition::<SectorShape8MiB>(&sector.c1);
    the_witness_is_the_gadgets(&compiled, &circuit, "8 MiB partition");
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

/// filecoin-proofs' own commit 2 (bellperson, with cuzk's test parameters) of `c1`.
fn filecoin_c2(c1: &C1Output, sector: &SealedSector) -> Vec<u8> {
    fn c2<Tree: 'static + MerkleTreeTrait>(c1: &C1Output, sector: &SealedSector) -> Vec<u8> {
        let output: SealCommitPhase1Output<Tree> =
            serde_json::from_slice(&c1.to_raw_json()).unwrap();
        filecoin_proofs::seal_commit_phase2(
            &c1.proof.porep_config().unwrap(),
            output,
            sector.identity.prover_id,
            sector.identity.sector_id.into(),
        )
        .unwrap()
        .proof
    }
    with_shape!(c1.proof.size.bytes(), c2, c1, sector)
}

/// A sample (unsealed, committed-capacity) sector of `proof` is proven by filecoin-proofs' own
/// commit 2 and by cuzk, and `verify_seal` accepts both proofs, for its sector only.
fn a_sample_sector_is_proven_and_accepted(proof: SealProof, compiled: Option<Arc<CompiledR1cs>>) {
    let fixture = fixture();
    let mut rng = cuzk_testkit::rng(&format!("sample {proof}"));
    let (files, params) = common::parameters(proof, &mut rng);
    let sector = sample_sector(proof, Some(1000), &mut rng).unwrap().sector;
    let c1 = ffi_c1(&sector);
    assert_eq!(c1.proof, proof);
    let commitments = c1.commitments().unwrap();

    let start = Instant::now();
    let theirs = filecoin_c2(&c1, &sector);
    eprintln!(
        "filecoin-proofs' C2 of a sample {proof} sector: {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert!(verify_seal(proof, &commitments, sector.identity, &theirs, &fixture.dir).unwrap());

    let start = Instant::now();
    let ours = prove_with(&c1, Arc::new(params), &files, compiled).unwrap();
    eprintln!(
        "cuzk's C2 of a sample {proof} sector: {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert!(verify_seal(proof, &commitments, sector.identity, &ours, &fixture.dir).unwrap());

    let mut stranger = sector.identity;
    stranger.sector_id ^= 1;
    assert!(!verify_seal(proof, &commitments, stranger, &ours, &fixture.dir).unwrap());
}

#[test]
fn a_sample_2kib_sector_is_proven_by_filecoin_and_by_cuzk() {
    a_sample_sector_is_proven_and_accepted(PROOF, Some(Arc::clone(&fixture().compiled)));
}

/// A second size end to end (its deeper trees; its witness is checked against the gadgets' in
/// every run). Heavy: about 5 minutes of two cores for its parameters and two proofs, so run with
/// `--ignored`.
#[test]
#[ignore]
fn a_sample_8mib_sector_is_proven_by_filecoin_and_by_cuzk() {
    a_sample_sector_is_proven_and_accepted(SealProof::current(SectorSize::S8MiB), None);
}

/// One flipped byte anywhere a vanilla proof's checks reach (a parent's label, a Merkle path
/// sibling, the replica leaf) and commit 2 refuses the C1 output before proving.
#[test]
fn a_flipped_byte_in_a_sample_vanilla_proof_is_rejected() {
    let fixture = fixture();
    let sector = sample_sector(PROOF, None, &mut cuzk_testkit::rng("flipped"))
        .unwrap()
        .sector;
    let clean: serde_json::Value = serde_json::from_slice(&sector.c1.to_ffi_json()).unwrap();
    let proof = "/vanilla_proofs/StackedDrg2KiBV1/0/1";
    for field in [
        "/labeling_proofs/1/parents/3/0",
        "/replica_column_proofs/drg_parents/2/column/rows/0/5",
        "/replica_column_proofs/c_x/inclusion_proof/data/Single/path/path/0/hashes/1/9",
        "/comm_r_last_proof/data/Single/leaf/0",
        "/comm_d_proofs/data/Single/path/path/3/hashes/0/7",
    ] {
        let mut json = clean.clone();
        let byte = json
            .pointer_mut(&format!("{proof}{field}"))
            .unwrap_or_else(|| panic!("no {field} in {}", clean.pointer(proof).unwrap()));
        *byte = (byte.as_u64().unwrap() ^ 1).into();
        let flipped =
            C1Output::from_json(&serde_json::to_vec(&json).unwrap(), "flipped.json", None).unwrap();
        let error = FilecoinRequest::Porep(flipped)
            .job("f", Arc::clone(&fixture.params), &fixture.files, None)
            .err()
            .unwrap_or_else(|| panic!("{field} flipped was accepted"));
        assert!(
            matches!(&error, FilecoinError::VanillaProofsInvalid { .. }),
            "{field}: {error}"
        );
    }
}

/// Every size samples in seconds with consistent vanilla proofs (checked as commit 1 checks
/// them), as many as the circuit takes; the revisions whose challenges come from comm_r cannot
/// be sampled and say so.
#[test]
fn every_interactive_proof_samples_and_the_others_say_why_not() {
    let mut rng = cuzk_testkit::rng("sizes");
    for size in cuzk_filecoin::SECTOR_SIZES {
        for revision in [Revision::V1, Revision::V1_1] {
            let proof = SealProof { size, revision };
            let start = Instant::now();
            let sample = sample_sector(proof, None, &mut rng).unwrap();
            // Its PoSts were checked by the PoSt verifier on the way.
            assert_eq!(sample.posts.len(), 2, "{proof}");
            let sector = sample.sector;
            sector.c1.validate().unwrap();
            let json: serde_json::Value = serde_json::from_slice(&sector.c1.to_raw_json()).unwrap();
            let partitions = json["vanilla_proofs"].as_array().unwrap();
            let config = proof.porep_config().unwrap();
            assert_eq!(partitions.len(), usize::from(config.partitions), "{proof}");
            eprintln!(
                "sample {proof}: {:.2} s, {} partitions of {} challenges, {} bytes",
                start.elapsed().as_secs_f64(),
                partitions.len(),
                partitions[0].as_array().unwrap().len(),
                sector.c1.to_raw_json().len()
            );
        }
        for revision in [Revision::Synthetic, Revision::NonInteractive] {
            let error = sample_sector(SealProof { size, revision }, None, &mut rng).unwrap_err();
            assert!(matches!(error, FilecoinError::NoSample { .. }), "{error}");
            assert!(error.to_string().contains("derived from comm_r"), "{error}");
        }
    }
}
