//! Parameter sets under a host budget, over a real socket: a HIGH job whose set does not fit
//! beside two sets in use by queued NORMAL work is proven once the proofs already started end;
//! the queued jobs step back and are all proven after it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cuzk_daemon::circuits::synthetic::{synthetic_circuit, SyntheticCircuits, SyntheticRequest};
use cuzk_daemon::circuits::{CircuitFiles, Circuits, ParamSet, Work};
use cuzk_daemon::kinds::Kind;
use cuzk_daemon::proto::{self, await_proof_response::Status, SubmitProofRequest};
use cuzk_daemon::DaemonError;
use cuzk_pipeline::Devices;

use crate::rpcs::{
    assert_valid, await_job, counter, eventually, metrics, prove, synthetic, Running,
};

/// The synthetic circuits with each set's size known before it loads, as a parameter file's
/// is: so a set that does not fit the budget waits for room.
struct SizedSynthetic {
    bytes: HashMap<String, u64>,
}

impl SizedSynthetic {
    fn new(constraints: &[usize]) -> Self {
        let devices = Devices::unmanaged(Vec::new());
        let bytes = constraints
            .iter()
            .map(|&n| {
                let circuit = synthetic_circuit(n);
                let set = SyntheticCircuits.load(&circuit, &devices).unwrap();
                (circuit, set.bytes)
            })
            .collect();
        SizedSynthetic { bytes }
    }
}

impl Circuits for SizedSynthetic {
    fn check(&self, request: SubmitProofRequest, kind: Kind) -> Result<Work, DaemonError> {
        SyntheticCircuits.check(request, kind)
    }

    fn on_disk(&self) -> Vec<String> {
        self.bytes.keys().cloned().collect()
    }

    fn describe(&self, circuit: &str) -> Result<CircuitFiles, DaemonError> {
        Ok(CircuitFiles {
            location: "generated on load".into(),
            bytes: self.bytes.get(circuit).copied(),
        })
    }

    fn load(&self, circuit: &str, devices: &Devices) -> Result<ParamSet, String> {
        SyntheticCircuits.load(circuit, devices)
    }
}

/// The test's three circuits: two for NORMAL work, one for the HIGH job.
const A: usize = 96;
const B: usize = 97;
const URGENT: usize = 98;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_high_job_meeting_sets_in_use_is_proven_once_the_started_proofs_end() {
    let circuits = SizedSynthetic::new(&[A, B, URGENT]);
    let size = |n| circuits.bytes[&synthetic_circuit(n)];
    // Room for the two NORMAL sets, not for the third beside them.
    let budget = size(A) + size(B) + size(URGENT) / 2;
    let extra = format!(
        "[memory]\nsrs_budget = {budget}\neviction_min_idle = \"100ms\"\n\
         [synthesis]\njobs_synthesizing = 1"
    );
    let daemon = Running::start_with(&extra, None, Arc::new(circuits)).await;
    let client = daemon.client().await;

    // Six NORMAL jobs of two circuits in turn, each two partitions of 300 ms of synthesis: one
    // job synthesizes at a time, so most are queued in the engine holding their sets.
    let finished = Arc::new(Mutex::new(Vec::new()));
    let mut calls = Vec::new();
    let queued = |n, i| {
        let spec = SyntheticRequest {
            partitions: 2,
            synthesis_delay_ms: 300,
            ..SyntheticRequest::new(n)
        };
        (format!("{n}-{i}"), synthetic(&format!("{n}-{i}"), &spec))
    };
    let normal = (0..3).flat_map(|i| [queued(A, i), queued(B, i)]);
    for (id, request) in normal.collect::<Vec<_>>() {
        let mut client = client.clone();
        client.submit_proof(request).await.unwrap();
        let finished = Arc::clone(&finished);
        calls.push(tokio::spawn(async move {
            let done = await_job(&mut client, &id, 0).await;
            assert_eq!(
                done.status(),
                Status::Completed,
                "{id}: {}",
                done.error_message
            );
            let constraints = if id.starts_with(&A.to_string()) { A } else { B };
            assert_valid(constraints, &done.proof, 2);
            finished.lock().unwrap().push(id);
        }));
    }
    // Both sets loaded, one job started and the rest queued in the engine: then the HIGH one.
    let mut status_client = client.clone();
    eventually(Duration::from_secs(30), || {
        let mut client = status_client.clone();
        async move {
            let status = client
                .get_status(proto::GetStatusRequest {})
                .await
                .unwrap()
                .into_inner();
            let hot = proto::srs_status::Tier::Hot;
            let loaded = status.loaded_srs.iter().filter(|s| s.tier() == hot).count();
            let pending = status.queues.iter().map(|q| q.pending).sum::<u32>();
            loaded == 2 && pending >= 4
        }
    })
    .await;
    let mut urgent = synthetic("urgent", &SyntheticRequest::new(URGENT));
    urgent.priority = proto::Priority::High.into();
    let done = prove(&mut status_client, urgent).await;
    assert_eq!(done.status(), Status::Completed, "{}", done.error_message);
    assert_valid(URGENT, &done.proof, 1);
    let ahead = finished.lock().unwrap().clone();
    for call in calls {
        call.await.unwrap();
    }
    // Ahead of it only the jobs started when it came (one synthesizing, one maybe on the GPU);
    // without stepping back it would wait for every queued job of one of the two sets.
    assert!(ahead.len() <= 2, "finished before the HIGH job: {ahead:?}");
    assert_eq!(finished.lock().unwrap().len(), 6);
    let text = metrics(&mut status_client).await;
    let stepped_back = counter(
        &text,
        "cuzk_jobs_stepped_back_total{proof_kind=\"porep_c2\"}",
    );
    assert!(stepped_back >= 3, "{stepped_back} jobs stepped back");
    daemon.stop().await.unwrap();
}
