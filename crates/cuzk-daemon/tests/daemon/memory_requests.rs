//! A request whose parameter set and one partition cannot fit the daemon's host memory, over a
//! real socket: it ends FAILED naming memory, each part and the budget, before the set is read,
//! and the daemon serves on.

use crate::{common, filecoin};

use cuzk_daemon::proto;
use cuzk_daemon::proto::await_proof_response::Status;
use cuzk_filecoin::{PostProof, RegisteredProof};
use cuzk_pipeline::engine::HostPlan;
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_too_big_for_host_memory_fails_naming_it_and_the_daemon_serves_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = cuzk_testkit::rng("memory requests");
    let winning = PostProof::from_number(0).unwrap();
    let (files, _) = filecoin::parameters(winning, &mut rng);
    // Half of what proving with the set takes at least: never enough.
    let plan = HostPlan::for_set(&files.header().unwrap(), None, false);
    let budget = plan.needed() / 2;
    let (config, circuits) = common::filecoin_daemon(dir.path(), &budget.to_string());
    let (sector_dir, sector) = common::sealed_sector(dir.path(), &mut rng);
    let request = common::winning_request("winning", &sector, &sector_dir, [7u8; 32]);

    let (mut client, served) = common::start(config, &circuits).await;

    for attempt in ["first", "retried"] {
        let failed = common::prove(&mut client, request.clone()).await;
        assert_eq!(failed.status(), Status::Failed, "{attempt}");
        let message = &failed.error_message;
        for part in [
            "winning-2k",
            "not enough host memory",
            "parameters",
            "one partition in flight",
            "([memory] total_budget) available",
        ] {
            assert!(message.contains(part), "{attempt}: {part:?} in {message}");
        }
    }

    // Serving on: the status, a malformed request refused by its field; the set never read.
    let status = client
        .get_status(proto::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.total_proofs_failed, 2);
    let cold = proto::srs_status::Tier::Cold;
    assert!(
        status.loaded_srs.iter().all(|s| s.tier() == cold),
        "{:?}",
        status.loaded_srs
    );
    let mut malformed = request.clone();
    malformed.randomness.truncate(31);
    let refused = client
        .prove(proto::ProveRequest {
            submit: Some(malformed),
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused}");

    served.stop().await;
}
