//! Real 2 KiB SnapDeals: a sector sealed by filecoin-proofs, updated with new data by
//! filecoin-proofs (`encode_into`, the FFI's partition proofs), proven by cuzk on the CPU through
//! the engine, judged by `filecoin_proofs::verify_empty_sector_update_proof`; tampered vanilla
//! proofs, wrong commitments and malformed request files named before any proving.

use crate::common;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use cuzk_filecoin::snap::SnapCircuits;
use cuzk_filecoin::{
    compiled_r1cs, sample_sector, seal_random_sector, snap_update, verify_snap, FilecoinError,
    FilecoinRequest, ParamFiles, SealProof, SectorSize, SnapRequest, UpdateProof,
};
use cuzk_groth16::Parameters;
use cuzk_pipeline::engine::PartitionedCircuit;
use filecoin_proofs::SectorShape2KiB;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicParams,
};

struct Fixture {
    dir: PathBuf,
    snap: SnapRequest,
    _work: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = common::params_dir().to_owned();
        let mut rng = cuzk_testkit::rng("snap fixture");
        let work = tempfile::tempdir().unwrap();
        let proof = SealProof::current(SectorSize::S2KiB);
        let sector = seal_random_sector(proof, work.path(), Some(1000), &mut rng).unwrap();
        let snap = snap_update(&sector, work.path(), &mut rng).unwrap();
        Fixture {
            dir,
            snap,
            _work: work,
        }
    })
}

/// `proof`'s parameters (see [`common::parameters`]).
fn parameters(proof: UpdateProof) -> (ParamFiles, Arc<Parameters>) {
    let seed = format!("setup {proof}");
    let (files, params) = common::parameters(proof, &mut cuzk_testkit::rng(&seed));
    (files, Arc::new(params))
}

/// cuzk's proof of `snap` on the CPU through the engine, with its compiled R1CS.
fn prove(snap: &SnapRequest) -> Result<Vec<u8>, FilecoinError> {
    let (files, params) = parameters(snap.proof);
    let (compiled, _) = compiled_r1cs(&files)?;
    let job = FilecoinRequest::Snap(snap.clone()).job("snap", params, &files, Some(compiled))?;
    common::on_cpu_engine(async |engine| Ok(engine.submit(job.request).wait().await?.proof_bytes()))
}

/// The update circuit re-implemented (its challenges side by side, native Poseidon and SHA-256)
/// writes the witness of filecoin's own circuit (through its gadgets), every value and the rows;
/// each on one thread, for its CPU time.
#[test]
fn the_reimplemented_update_witness_is_filecoins() {
    let snap = &fixture().snap;
    let (files, _) = parameters(snap.proof);
    let (compiled, _) = compiled_r1cs(&files).unwrap();
    let circuits = SnapCircuits::<SectorShape2KiB>::new(snap).unwrap();
    let circuit = circuits.partition(0).circuit;
    crate::compare::same_witness_on_one_thread(
        "2 KiB update partition",
        &|| compiled.witness_sectioned(&circuit).unwrap(),
        &|| compiled.witness(circuit.clone()).unwrap(),
    );
}

/// A sample sector's update (zero data, partition proofs from sparse trees): filecoin's vanilla
/// verifier accepted it on the way (2 KiB and 8 MiB: 1 and 4 partitions), and at 2 KiB cuzk's
/// proof of it is accepted by `verify_empty_sector_update_proof`, not for another comm_d_new.
#[test]
fn a_sample_sectors_update_verifies() {
    fixture();
    let mut rng = cuzk_testkit::rng("sample update");
    let sample = sample_sector(SealProof::current(SectorSize::S8MiB), None, &mut rng).unwrap();
    let partitions = UpdateProof {
        size: SectorSize::S8MiB,
    }
    .update_config()
    .unwrap()
    .update_partitions;
    assert_eq!(sample.update.vanilla_proofs.len(), usize::from(partitions));
    let sample = sample_sector(SealProof::current(SectorSize::S2KiB), None, &mut rng).unwrap();
    let update = &sample.update;
    assert_eq!(
        update.comm_r_old,
        sample.sector.c1.commitments().unwrap().comm_r
    );
    assert_eq!(
        update.comm_r_new, update.comm_r_old,
        "zero data: the replica is unchanged"
    );
    verifies_for_its_commitments_only(update, &prove(update).unwrap());
}

/// The update R1CS recorded challenge by challenge side by side from a zero replica's update (what
/// `compiled_r1cs` records) is the one recorded from filecoin's blank circuit whole.
#[test]
fn the_update_r1cs_recorded_challenge_by_challenge_is_the_blank_circuits() {
    let proof = UpdateProof {
        size: SectorSize::S2KiB,
    };
    let params = PublicParams::from_sector_size(proof.size.bytes());
    let blank = <EmptySectorUpdateCompound<SectorShape2KiB> as CompoundProof<
        '_,
        EmptySectorUpdate<SectorShape2KiB>,
        EmptySectorUpdateCircuit<SectorShape2KiB>,
    >>::blank_circuit(&params);
    crate::compare::recorded_as_whole(proof, blank);
}

#[test]
fn update_of_a_sealed_sector_verifies() {
    let snap = &fixture().snap;
    assert_eq!(
        snap.vanilla_proofs.len(),
        1,
        "2 KiB updates have one partition"
    );
    let proof = prove(snap).unwrap();
    assert_eq!(proof.len(), 192);
    verifies_for_its_commitments_only(snap, &proof);
    let mut flipped = proof.clone();
    flipped[100] ^= 1;
    assert!(
        !verify_snap(snap, &flipped, &fixture().dir).unwrap_or(false),
        "not with a byte flipped"
    );
}

/// `proof` is accepted by `verify_empty_sector_update_proof` for `update`, not for another
/// comm_d_new.
fn verifies_for_its_commitments_only(update: &SnapRequest, proof: &[u8]) {
    assert!(
        verify_snap(update, proof, &fixture().dir).unwrap(),
        "must verify"
    );
    let mut other = update.clone();
    other.comm_d_new[0] ^= 1;
    assert!(
        !verify_snap(&other, proof, &fixture().dir).unwrap_or(false),
        "not for another comm_d_new"
    );
}

#[test]
fn bad_vanilla_proofs_and_commitments_are_named_before_proving() {
    let snap = &fixture().snap;
    let field_of = |request: &SnapRequest| match prove(request) {
        Err(FilecoinError::ProofInput { field, .. }) => field,
        other => panic!("expected a named input error, got {other:?}"),
    };
    let mut truncated = snap.clone();
    truncated.vanilla_proofs[0].truncate(100);
    assert_eq!(field_of(&truncated), "vanilla_proofs[0]");
    let mut none = snap.clone();
    none.vanilla_proofs.clear();
    assert_eq!(field_of(&none), "vanilla_proofs");
    // A commitment of another sector: the partition proof no longer verifies against it.
    let mut wrong = snap.clone();
    wrong.comm_r_new[0] ^= 1;
    assert_eq!(field_of(&wrong), "vanilla_proofs[0]");
    let mut tampered = snap.clone();
    let last = tampered.vanilla_proofs[0].len() - 40;
    tampered.vanilla_proofs[0][last] ^= 1;
    assert!(
        prove(&tampered).is_err(),
        "a tampered partition proof is refused"
    );
    let mut beyond = snap.clone();
    beyond.comm_r_old = [0xff; 32];
    assert_eq!(field_of(&beyond), "comm_r_old");
}

#[test]
fn request_files_round_trip_and_name_bad_fields() {
    let snap = &fixture().snap;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.json");
    snap.write(&path).unwrap();
    assert_eq!(&SnapRequest::read(&path).unwrap(), snap);
    let text = std::fs::read_to_string(&path).unwrap();
    for (from, to, field) in [
        (
            "\"StackedDrg2KiBV1\"",
            "\"StackedDrg2KiBV1_1\"",
            "registered_proof",
        ),
        (
            "\"comm_d_new\": \"0x",
            "\"comm_d_new\": \"0xzz",
            "comm_d_new",
        ),
    ] {
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        match SnapRequest::read(&path) {
            Err(FilecoinError::RequestField { field: got, .. }) => assert_eq!(got, field),
            other => panic!("{field}: expected a field error, got {other:?}"),
        }
    }
}
