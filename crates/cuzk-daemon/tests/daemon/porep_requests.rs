//! Filecoin requests as Curio forms them, malformed in each way a request can be, against a
//! daemon serving Filecoin's circuits over a real socket: each refused with `INVALID_ARGUMENT`
//! naming its field, the daemon serving on afterwards.

use crate::common;

use base64::Engine as _;
use cuzk_daemon::client::porep_request;
use cuzk_daemon::proto::await_proof_response::Status;
use cuzk_daemon::proto::{self, SubmitProofRequest};
use cuzk_filecoin::{sample_sector, SealProof, SectorSize};
use serde_json::{json, Value};
use tonic::Code;

fn wrapper(sector: u64, phase1: &[u8], size: u64) -> Vec<u8> {
    json!({
        "SectorNum": sector,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(phase1),
        "SectorSize": size,
    })
    .to_string()
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_porep_requests_name_their_field() {
    let dir = tempfile::tempdir().unwrap();
    let (config, circuits) = common::filecoin_daemon(dir.path(), "4GiB");
    let mut rng = cuzk_testkit::rng("malformed porep requests");
    let (_, sector) = common::sealed_sector(dir.path(), &mut rng);
    let c1 = sector.c1.to_ffi_json();
    let id = sector.identity.sector_id;

    let (mut client, served) = common::start(config, &circuits).await;

    let valid = porep_request("porep-1000-1", &c1, "c1.json", 1000, id).unwrap();
    assert_eq!(valid.registered_proof, 5);
    assert_eq!(valid.sector_size, 2048);
    let with = |change: &dyn Fn(&mut SubmitProofRequest)| {
        let mut request = valid.clone();
        change(&mut request);
        request
    };
    let mut corrupt: Value = serde_json::from_slice(&c1).unwrap();
    corrupt["comm_r"] = json!("not a commitment");
    let corrupt = serde_json::to_vec(&corrupt).unwrap();
    let cases: Vec<(&str, SubmitProofRequest, &str)> = vec![
        ("unknown kind", with(&|r| r.proof_kind = 9), "proof_kind"),
        (
            "unknown registered proof",
            with(&|r| r.registered_proof = 20),
            "registered_proof",
        ),
        (
            "the C1 of another sector size",
            with(&|r| {
                r.registered_proof = 8;
                r.sector_size = 0;
                r.vanilla_proof = wrapper(id, &c1, 34359738368)
            }),
            "registered_proof",
        ),
        (
            "the wrapper's size against the registered proof",
            with(&|r| {
                r.registered_proof = 8;
                r.sector_size = 0
            }),
            "vanilla_proof.SectorSize",
        ),
        (
            "sector size against the registered proof",
            with(&|r| r.sector_size = 4096),
            "sector_size",
        ),
        (
            "wrapper size against the registered proof",
            with(&|r| r.vanilla_proof = wrapper(id, &c1, 34359738368)),
            "vanilla_proof.SectorSize",
        ),
        (
            "bad JSON",
            with(&|r| r.vanilla_proof = b"{\"SectorNum\": 1,".to_vec()),
            "vanilla_proof",
        ),
        (
            "bad base64",
            with(&|r| {
                r.vanilla_proof = json!({"SectorNum": id, "Phase1Out": "***", "SectorSize": 2048})
                    .to_string()
                    .into_bytes()
            }),
            "vanilla_proof.Phase1Out",
        ),
        (
            "a C1 that is not JSON",
            with(&|r| r.vanilla_proof = wrapper(id, b"{\"vanilla", 2048)),
            "vanilla_proof.Phase1Out",
        ),
        (
            "a C1 with a bad field",
            with(&|r| r.vanilla_proof = wrapper(id, &corrupt, 2048)),
            "vanilla_proof.Phase1Out",
        ),
        (
            "sector number against the wrapper",
            with(&|r| r.sector_number = id.wrapping_add(1)),
            "sector_number",
        ),
        (
            "a SnapDeals update proof out of range",
            with(&|r| {
                r.proof_kind = proto::ProofKind::SnapDealsUpdate.into();
                r.registered_proof = 7
            }),
            "registered_proof",
        ),
        (
            "a SnapDeals update without partition proofs",
            with(&|r| {
                r.proof_kind = proto::ProofKind::SnapDealsUpdate.into();
                r.registered_proof = 0;
            }),
            "vanilla_proofs",
        ),
        (
            "a SnapDeals update with a short comm_r_old",
            with(&|r| {
                r.proof_kind = proto::ProofKind::SnapDealsUpdate.into();
                r.registered_proof = 0;
                r.vanilla_proofs = vec![vec![1]];
                r.comm_r_old = vec![0; 31];
                r.comm_r_new = vec![0; 32];
                r.comm_d_new = vec![0; 32];
            }),
            "comm_r_old",
        ),
    ];
    for (what, request, field) in cases {
        let refused = client
            .prove(proto::ProveRequest {
                submit: Some(request),
            })
            .await
            .expect_err(what);
        assert_eq!(refused.code(), Code::InvalidArgument, "{what}: {refused}");
        assert!(
            refused.message().starts_with(field),
            "{what}: expected the field {field}, got {}",
            refused.message()
        );
    }
    let bad_field = client
        .prove(proto::ProveRequest {
            submit: Some(with(&|r| r.vanilla_proof = wrapper(id, &corrupt, 2048))),
        })
        .await
        .unwrap_err();
    assert!(
        bad_field.message().contains("comm_r"),
        "{}",
        bad_field.message()
    );

    // A well-formed request whose parameters are missing: FAILED, saying which and what to do.
    // A 512 MiB sector's: no test makes its parameters (the directory is every test's).
    let large = sample_sector(
        SealProof::current(SectorSize::S512MiB),
        Some(1000),
        &mut rng,
    )
    .unwrap()
    .sector;
    let large = porep_request(
        "porep-1000-2",
        &large.c1.to_ffi_json(),
        "c1.json",
        1000,
        large.identity.sector_id,
    )
    .unwrap();
    let missing = client
        .prove(proto::ProveRequest {
            submit: Some(large),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(missing.status(), Status::Failed);
    assert!(
        missing.error_message.contains("porep-512m"),
        "{}",
        missing.error_message
    );
    assert!(
        missing.error_message.contains("missing parameters"),
        "{}",
        missing.error_message
    );

    let status = client
        .get_status(proto::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    // The one with missing parameters: malformed requests are refused, never counted.
    assert_eq!(status.total_proofs_failed, 1);
    let cold = proto::srs_status::Tier::Cold;
    assert!(
        status.loaded_srs.iter().all(|s| s.tier() == cold),
        "no parameters read: {:?}",
        status.loaded_srs
    );
    served.stop().await;
}
