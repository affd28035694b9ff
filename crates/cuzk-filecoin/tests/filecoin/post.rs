//! Real 2 KiB WinningPoSt and WindowPoSt: sectors sealed by filecoin-proofs, their vanilla
//! proofs made as the FFI makes them for Curio, proven by cuzk on the CPU through the engine,
//! judged by `filecoin_proofs::verify_winning_post` / `verify_window_post`; bad vanilla proofs
//! and randomness named before any proving.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cuzk_filecoin::post::PostCircuits;
use cuzk_filecoin::{
    compiled_r1cs, post_vanilla_proofs, sample_sector, seal_random_sector, verify_post,
    FilecoinError, FilecoinRequest, ParamFiles, PostKind, PostProof, PostRequest, SealProof,
    SealedSector, SectorSize,
};
use cuzk_groth16::Parameters;
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::SectorShape2KiB;
use rand::RngCore;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};

const WINNING: PostProof = PostProof {
    kind: PostKind::Winning,
    size: SectorSize::S2KiB,
};
const WINDOW: PostProof = PostProof {
    kind: PostKind::Window,
    size: SectorSize::S2KiB,
};

struct Fixture {
    dir: PathBuf,
    /// Three sectors, each sealed in its own work directory, in order of their ids (the
    /// verifier's order).
    sectors: Vec<(SealedSector, PathBuf)>,
    _work: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = common::params_dir().to_owned();
        let mut rng = cuzk_testkit::rng("post fixture");
        let work = tempfile::tempdir().unwrap();
        let prover = rng.next_u64() >> 1;
        let mut sectors: Vec<(SealedSector, PathBuf)> = (0..3)
            .map(|i| {
                let at = work.path().join(format!("s{i}"));
                let proof = SealProof::current(SectorSize::S2KiB);
                let sector = seal_random_sector(proof, &at, Some(prover), &mut rng).unwrap();
                (sector, at)
            })
            .collect();
        sectors.sort_by_key(|(sector, _)| sector.identity.sector_id);
        Fixture {
            dir,
            sectors,
            _work: work,
        }
    })
}

/// `proof`'s parameters (see [`common::parameters`]).
fn parameters(proof: PostProof) -> (ParamFiles, Arc<Parameters>) {
    let seed = format!("setup {proof}");
    let (files, params) = common::parameters(proof, &mut cuzk_testkit::rng(&seed));
    (files, Arc::new(params))
}

/// A randomness that is a field element, as the chain's always is.
fn randomness(seed: &str) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    cuzk_testkit::rng(seed).fill_bytes(&mut bytes);
    bytes[31] &= 0x3f;
    bytes
}

/// The request Curio would send for `proof` over the first `count` sectors.
fn request(proof: PostProof, count: usize, randomness: [u8; 32]) -> PostRequest {
    let sectors: Vec<(&SealedSector, &Path)> = fixture().sectors[..count]
        .iter()
        .map(|(sector, at)| (sector, at.as_path()))
        .collect();
    PostRequest {
        proof,
        vanilla_proofs: post_vanilla_proofs(proof, &sectors, randomness).unwrap(),
        randomness,
        prover_id: sectors[0].0.identity.prover_id,
        partition: 0,
    }
}

/// WindowPoSt over all three sectors, two per partition at 2 KiB: each partition proven from its
/// own sectors' vanilla proofs (challenged together, as Curio's deadline does), the partition
/// proofs concatenated and judged by `verify_window_post` over every sector — for both versions
/// (API 1.0 counts challenges from a sector's place in the whole set).
#[test]
fn window_post_partitions_verify_together() {
    for proof in [
        WINDOW,
        PostProof {
            kind: PostKind::WindowV1,
            ..WINDOW
        },
    ] {
        let chosen = randomness(&format!("partitions {proof}"));
        let all = request(proof, 3, chosen);
        let mut proofs = Vec::new();
        for (partition, range) in [(0, 0..2), (1, 2..3)] {
            let part = PostRequest {
                vanilla_proofs: all.vanilla_proofs[range].to_vec(),
                partition,
                ..all.clone()
            };
            proofs.extend(prove(&part).unwrap());
        }
        assert_eq!(proofs.len(), 2 * 192);
        assert!(verify(&all, 3, chosen, &proofs), "{proof}: both partitions");
        proofs.rotate_left(192);
        assert!(
            !verify(&all, 3, chosen, &proofs),
            "{proof}: partitions out of order"
        );
    }
}

/// The witness of the PoSt sectors re-implemented (native Poseidon) is filecoin's gadgets'
/// witness: a WinningPoSt (its sector repeated for each challenge) and WindowPoSt partitions of
/// one and two sectors (filled by repeating the last), for both WindowPoSt versions.
#[test]
fn the_reimplemented_post_witness_is_the_gadgets() {
    let window_v1 = PostProof {
        kind: PostKind::WindowV1,
        ..WINDOW
    };
    for (proof, count) in [(WINNING, 1), (WINDOW, 1), (WINDOW, 2), (window_v1, 2)] {
        let post = request(
            proof,
            count,
            randomness(&format!("witness {proof} {count}")),
        );
        let (files, _) = parameters(proof);
        let (compiled, _) = compiled_r1cs(&files).unwrap();
        let circuits = PostCircuits::<SectorShape2KiB>::new(&post).unwrap();
        let what = format!("{proof} of {count} sectors");
        crate::porep::the_witness_is_the_gadgets(&compiled, &circuits.circuit, &what);
    }
}

/// The PoSt R1CS recorded sector by sector side by side (what `compiled_r1cs` records) is the
/// one recorded from filecoin's blank circuit whole.
#[test]
fn the_post_r1cs_recorded_sector_by_sector_is_the_blank_circuits() {
    for proof in [WINNING, WINDOW] {
        let config = proof.post_config().unwrap();
        let params = match proof.kind {
            PostKind::Winning => winning_post_public_params::<SectorShape2KiB>(&config),
            _ => window_post_public_params::<SectorShape2KiB>(&config),
        }
        .unwrap();
        let blank = <FallbackPoStCompound<SectorShape2KiB> as CompoundProof<
            '_,
            FallbackPoSt<'_, SectorShape2KiB>,
            FallbackPoStCircuit<SectorShape2KiB>,
        >>::blank_circuit(&params);
        crate::compare::recorded_as_whole(proof, blank);
    }
}

/// cuzk's proof of `post` on the CPU through the engine, with its compiled R1CS.
fn prove(post: &PostRequest) -> Result<Vec<u8>, FilecoinError> {
    let (files, params) = parameters(post.proof);
    let (compiled, _) = compiled_r1cs(&files)?;
    let job = FilecoinRequest::Post(post.clone()).job("post", params, &files, Some(compiled))?;
    common::on_cpu_engine(async |engine| Ok(engine.submit(job.request).wait().await?.proof_bytes()))
}

fn verify(post: &PostRequest, count: usize, randomness: [u8; 32], proof: &[u8]) -> bool {
    let sectors: Vec<(u64, [u8; 32])> = fixture().sectors[..count]
        .iter()
        .map(|(sector, _)| {
            let comm_r = sector.c1.commitments().unwrap().comm_r;
            (sector.identity.sector_id, comm_r)
        })
        .collect();
    verify_post(
        post.proof,
        randomness,
        post.prover_id,
        &sectors,
        proof,
        &fixture().dir,
    )
    .unwrap()
}

#[test]
fn winning_post_of_a_sealed_sector_verifies() {
    let chosen = randomness("winning");
    let post = request(WINNING, 1, chosen);
    let proof = prove(&post).unwrap();
    assert_eq!(proof.len(), 192);
    assert!(verify(&post, 1, chosen, &proof), "the proof must verify");
    assert!(
        !verify(&post, 1, randomness("another"), &proof),
        "not for another randomness"
    );
}

#[test]
fn window_post_of_two_sectors_verifies() {
    let chosen = randomness("window");
    let post = request(WINDOW, 2, chosen);
    let proof = prove(&post).unwrap();
    assert_eq!(proof.len(), 192);
    assert!(verify(&post, 2, chosen, &proof), "the proof must verify");
}

/// A sample (unsealed) sector's WinningPoSt and WindowPoSt, opened from its sparse tree_r_last,
/// are proven by cuzk and accepted by filecoin-proofs' verifiers for that sector only.
#[test]
fn a_sample_sectors_posts_verify() {
    fixture();
    let sample = sample_sector(
        SealProof::current(SectorSize::S2KiB),
        Some(1000),
        &mut cuzk_testkit::rng("sample posts"),
    )
    .unwrap();
    let identity = sample.sector.identity;
    let comm_r = sample.sector.c1.commitments().unwrap().comm_r;
    let kinds: Vec<PostKind> = sample.posts.iter().map(|p| p.proof.kind).collect();
    assert_eq!(kinds, [PostKind::Winning, PostKind::Window]);
    for post in &sample.posts {
        assert_eq!(post.prover_id, identity.prover_id);
        let proof = prove(post).unwrap();
        let judge = |sector_id: u64| {
            verify_post(
                post.proof,
                post.randomness,
                post.prover_id,
                &[(sector_id, comm_r)],
                &proof,
                &fixture().dir,
            )
            .unwrap()
        };
        assert!(judge(identity.sector_id), "{}: must verify", post.proof);
        assert!(
            !judge(identity.sector_id ^ 1),
            "{}: not for another sector",
            post.proof
        );
    }
}

#[test]
fn bad_vanilla_proofs_and_randomness_are_named() {
    let chosen = randomness("bad input");
    let post = request(WINNING, 1, chosen);
    let named = |post: &PostRequest, field: &str| {
        let error = match prove(post) {
            Ok(_) => panic!("{field}: proven"),
            Err(error) => error.to_string(),
        };
        assert!(error.contains(field), "{field}: {error}");
    };
    let mut truncated = post.clone();
    truncated.vanilla_proofs[0].truncate(100);
    named(&truncated, "vanilla_proofs[0]");
    // Its comm_r (after the 8-byte sector id): no longer H(comm_c, comm_r_last).
    let mut tampered = post.clone();
    tampered.vanilla_proofs[0][8 + 5] ^= 1;
    named(&tampered, "vanilla_proofs");
    named(
        &PostRequest {
            randomness: randomness("not the challenges' randomness"),
            ..post.clone()
        },
        "vanilla_proofs",
    );
    named(
        &PostRequest {
            randomness: [0xff; 32],
            ..post.clone()
        },
        "randomness",
    );
    named(
        &PostRequest {
            vanilla_proofs: Vec::new(),
            ..post.clone()
        },
        "none given",
    );
    let mut two = post.clone();
    two.vanilla_proofs.push(post.vanilla_proofs[0].clone());
    named(&two, "2 sectors");
}

#[test]
fn request_files_round_trip_and_name_bad_fields() {
    let post = request(WINDOW, 2, randomness("file"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("window.json");
    post.write(&path).unwrap();
    assert_eq!(PostRequest::read(&path).unwrap(), post);
    let mut ids: Vec<u64> = fixture().sectors[..2]
        .iter()
        .map(|(s, _)| s.identity.sector_id)
        .collect();
    ids.sort();
    let sectors = post.sectors().unwrap();
    let mut listed: Vec<u64> = sectors.iter().map(|(id, _)| *id).collect();
    listed.sort();
    assert_eq!(listed, ids);

    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for (key, value, field) in [
        (
            "registered_proof",
            serde_json::json!("StackedDrgWindow3KiBV1"),
            "registered_proof",
        ),
        (
            "registered_proof",
            serde_json::json!(15),
            "registered_proof",
        ),
        ("randomness", serde_json::json!("0x1234"), "randomness"),
        ("prover_id", serde_json::json!("1234"), "prover_id"),
        (
            "vanilla_proofs",
            serde_json::json!(["0xzz"]),
            "vanilla_proofs[0]",
        ),
        ("partition", serde_json::json!("one"), "partition"),
    ] {
        let mut bad = json.clone();
        bad[key] = value;
        std::fs::write(&path, bad.to_string()).unwrap();
        let error = PostRequest::read(&path).unwrap_err().to_string();
        assert!(
            error.contains("window.json") && error.contains(field),
            "{key}: {error}"
        );
    }
}
