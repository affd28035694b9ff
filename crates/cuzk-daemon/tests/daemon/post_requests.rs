//! WinningPoSt and WindowPoSt requests as Curio forms them (the FFI's vanilla proofs of a sealed
//! 2 KiB sector, randomness, miner id), against a daemon serving Filecoin's circuits over a real
//! socket: proven, the proofs accepted by filecoin's verifiers; malformed requests refused naming
//! their field; a tampered vanilla proof failed with a reason, the daemon serving on.

use crate::{common, filecoin};

use cuzk_daemon::config::TestParams;
use cuzk_daemon::proto::await_proof_response::Status;
use cuzk_daemon::proto::{self, SubmitProofRequest};
use cuzk_filecoin::{post_vanilla_proofs, verify_post, PostKind, PostProof, RegisteredProof};
use rand::RngCore;
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn post_requests_are_proven_and_malformed_ones_named() {
    let dir = tempfile::tempdir().unwrap();
    let (config, circuits) = common::filecoin_daemon(dir.path(), "4GiB");
    let mut rng = cuzk_testkit::rng("post requests");
    let (sector_dir, sector) = common::sealed_sector(dir.path(), &mut rng);
    let comm_r = sector.c1.commitments().unwrap().comm_r;
    let (winning, window) = (
        PostProof::from_number(0).unwrap(),
        PostProof::from_number(10).unwrap(),
    );
    for proof in [winning, window] {
        filecoin::parameters(proof, &mut rng);
    }
    let mut randomness = [0u8; 32];
    rng.fill_bytes(&mut randomness);
    randomness[31] &= 0x3f;
    let request = |proof: PostProof| SubmitProofRequest {
        request_id: format!("post-{}", proof.number()),
        proof_kind: match proof.kind {
            PostKind::Winning => proto::ProofKind::WinningPost,
            _ => proto::ProofKind::WindowPostPartition,
        }
        .into(),
        registered_proof: proof.number(),
        vanilla_proofs: post_vanilla_proofs(proof, &[(&sector, &sector_dir)], randomness).unwrap(),
        randomness: randomness.to_vec(),
        miner_id: 1000,
        ..Default::default()
    };

    let (mut client, served) = common::start(config, &circuits).await;
    let mut prove = async |submit: SubmitProofRequest| {
        client
            .prove(proto::ProveRequest {
                submit: Some(submit),
            })
            .await
    };

    for proof in [winning, window] {
        let done = prove(request(proof))
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        assert_eq!(
            done.status(),
            Status::Completed,
            "{proof}: {}",
            done.error_message
        );
        assert_eq!(done.proof.len(), 192);
        let sectors = [(sector.identity.sector_id, comm_r)];
        let valid = verify_post(
            proof,
            randomness,
            sector.identity.prover_id,
            &sectors,
            &done.proof,
            filecoin::params_dir(),
        )
        .unwrap();
        assert!(valid, "{proof}: filecoin's verifier");
    }

    let with = |change: &dyn Fn(&mut SubmitProofRequest)| {
        let mut changed = request(winning);
        change(&mut changed);
        changed
    };
    let cases: Vec<(&str, SubmitProofRequest, &str)> = vec![
        (
            "a WindowPoSt proof for WinningPoSt",
            with(&|r| r.registered_proof = 10),
            "registered_proof",
        ),
        (
            "a registered proof out of range",
            with(&|r| r.registered_proof = 15),
            "registered_proof",
        ),
        (
            "short randomness",
            with(&|r| r.randomness.truncate(31)),
            "randomness",
        ),
        (
            "no vanilla proofs",
            with(&|r| r.vanilla_proofs.clear()),
            "vanilla_proofs",
        ),
    ];
    for (what, mut submit, field) in cases {
        // An id of its own: a known id would be answered with that job's result.
        submit.request_id = what.into();
        let refused = prove(submit).await.expect_err(what);
        assert_eq!(refused.code(), Code::InvalidArgument, "{what}: {refused}");
        assert!(
            refused.message().starts_with(field),
            "{what}: expected the field {field}, got {}",
            refused.message()
        );
    }

    // Well formed, but its vanilla proof was tampered with: FAILED, naming it; then served on.
    let tampered = with(&|r| {
        r.request_id = "tampered".into();
        r.vanilla_proofs[0][8 + 5] ^= 1;
    });
    let failed = prove(tampered).await.unwrap().into_inner().result.unwrap();
    assert_eq!(failed.status(), Status::Failed);
    assert!(
        failed.error_message.contains("vanilla_proofs"),
        "{}",
        failed.error_message
    );
    let again = with(&|r| r.request_id = "again".into());
    let done = prove(again).await.unwrap().into_inner().result.unwrap();
    assert_eq!(done.status(), Status::Completed, "{}", done.error_message);

    served.stop().await;
}

/// With `srs.test_params = "cpu"` the daemon makes random parameters at load instead of reading
/// the files: a WinningPoSt is proven with them (the engine verifies its partition against their
/// key), and filecoin's verifier, which knows only the files' key, rejects the proof.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn test_parameters_are_made_at_load_in_place_of_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, _) = common::filecoin_daemon(dir.path(), "4GiB");
    config.test_params = Some(TestParams::Cpu);
    let circuits = cuzk_daemon::server::circuits(&config).unwrap();
    let mut rng = cuzk_testkit::rng("test parameters");
    let (sector_dir, sector) = common::sealed_sector(dir.path(), &mut rng);
    let winning = PostProof::from_number(0).unwrap();
    // The files' parameters, which filecoin's verifier reads.
    filecoin::parameters(winning, &mut rng);
    let mut randomness = [0u8; 32];
    rng.fill_bytes(&mut randomness);
    randomness[31] &= 0x3f;
    let submit = common::winning_request("winning-test-params", &sector, &sector_dir, randomness);

    let (mut client, served) = common::start(config, &circuits).await;
    let done = common::prove(&mut client, submit).await;
    assert_eq!(done.status(), Status::Completed, "{}", done.error_message);
    assert_eq!(done.proof.len(), 192);
    let comm_r = sector.c1.commitments().unwrap().comm_r;
    let valid = verify_post(
        winning,
        randomness,
        sector.identity.prover_id,
        &[(sector.identity.sector_id, comm_r)],
        &done.proof,
        filecoin::params_dir(),
    )
    .unwrap();
    assert!(!valid, "made with the files' parameters after all");
    served.stop().await;
}
