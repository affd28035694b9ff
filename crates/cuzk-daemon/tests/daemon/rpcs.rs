//! The daemon in this process over real sockets (unix and TCP on 127.0.0.1), driven by tonic
//! clients, serving synthetic circuits on the CPU: every rpc, the status port, and the faults a
//! long-running daemon must survive.

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use cuzk_daemon::circuits::synthetic::{SyntheticCircuits, SyntheticRequest};
use cuzk_daemon::circuits::Circuits;
use cuzk_daemon::client::{connect, Client};
use cuzk_daemon::config::{Config, Listen};
use cuzk_daemon::proto::await_proof_response::Status;
use cuzk_daemon::proto::{self, SubmitProofRequest};
use cuzk_daemon::{serve, Bound, Serving};
use cuzk_groth16::backend::{CpuBackend, Faults, FaultyBackend};
use cuzk_groth16::{DeviceLock, DeviceStatus, Parameters, ProveError, ProverBackend, Started};
use cuzk_synth::ProvingAssignment;
use tokio::sync::oneshot;
use tonic::Code;

/// A daemon serving in this process until dropped or shut down.
pub(crate) struct Running {
    pub(crate) bound: Bound,
    shutdown: Option<oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<Result<(), cuzk_daemon::ServeError>>,
    _dir: tempfile::TempDir,
}

impl Running {
    pub(crate) async fn start(extra: &str, backends: Option<Vec<Arc<dyn ProverBackend>>>) -> Self {
        Self::start_with(extra, backends, Arc::new(SyntheticCircuits)).await
    }

    /// A daemon serving `circuits` (the synthetic ones with something changed).
    pub(crate) async fn start_with(
        extra: &str,
        backends: Option<Vec<Arc<dyn ProverBackend>>>,
        circuits: Arc<dyn Circuits>,
    ) -> Self {
        // The daemon's log, when RUST_LOG asks for it.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let dir = tempfile::tempdir().unwrap();
        let sets = |key: &str| extra.lines().any(|line| line.trim_start().starts_with(key));
        let listen = if sets("listen =") {
            String::new()
        } else {
            format!(
                "listen = \"unix://{}\"\n",
                dir.path().join("cuzk.sock").display()
            )
        };
        let status = if sets("status_listen =") {
            ""
        } else {
            "status_listen = \"127.0.0.1:0\"\n"
        };
        let text = format!(
            "[daemon]\ncircuits = \"synthetic\"\n{status}{listen}{extra}\n\
             [gpus]\nbackend = \"cpu\"\n[memory]\ntotal_budget = \"4GiB\"\n[synthesis]\npartition_workers = 1\n"
        );
        let text = merge_sections(&text);
        let config = Config::from_toml(&text, "test.toml").unwrap();
        let (tell, bound) = oneshot::channel();
        let (shutdown, stop) = oneshot::channel::<()>();
        let serving = Serving {
            backends,
            on_bound: Some(tell),
        };
        let served = tokio::spawn(serve(config, circuits, serving, async {
            let _ = stop.await;
        }));
        let bound = tokio::time::timeout(Duration::from_secs(30), bound)
            .await
            .expect("the daemon binds within 30 s")
            .expect("the daemon starts");
        Running {
            bound,
            shutdown: Some(shutdown),
            served,
            _dir: dir,
        }
    }

    pub(crate) async fn client(&self) -> Client {
        self.client_with(None).await
    }

    async fn client_with(&self, token: Option<&str>) -> Client {
        connect(&self.bound.grpc.to_string(), token)
            .await
            .unwrap()
            // Room to send a request over the daemon's limit.
            .max_encoding_message_size(512 << 20)
    }

    /// Fires the shutdown signal and waits for `serve` to return.
    pub(crate) async fn stop(mut self) -> Result<(), cuzk_daemon::ServeError> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        tokio::time::timeout(Duration::from_secs(60), &mut self.served)
            .await
            .expect("serve returns after the drain")
            .unwrap()
    }
}

/// The test's extra lines go under `[daemon]`; a later `[daemon]` header would clash, so the
/// sections given twice are merged.
fn merge_sections(text: &str) -> String {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            current = line.to_owned();
            if !sections.iter().any(|(name, _)| *name == current) {
                sections.push((current.clone(), Vec::new()));
            }
        } else if !line.is_empty() {
            if let Some((_, lines)) = sections.iter_mut().find(|(name, _)| *name == current) {
                lines.push(line.to_owned());
            }
        }
    }
    sections
        .into_iter()
        .map(|(name, lines)| format!("{name}\n{}\n", lines.join("\n")))
        .collect()
}

pub(crate) fn synthetic(id: &str, spec: &SyntheticRequest) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: id.to_owned(),
        proof_kind: proto::ProofKind::PorepSealCommit.into(),
        vanilla_proof: spec.to_bytes(),
        ..Default::default()
    }
}

fn prove_request(submit: SubmitProofRequest) -> proto::ProveRequest {
    proto::ProveRequest {
        submit: Some(submit),
    }
}

pub(crate) async fn prove(
    client: &mut Client,
    submit: SubmitProofRequest,
) -> proto::AwaitProofResponse {
    client
        .prove(prove_request(submit))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap()
}

/// The rpcs a test calls often, their replies unwrapped (or the status they failed with).
async fn get_status(client: &mut Client) -> proto::GetStatusResponse {
    client
        .get_status(proto::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner()
}

pub(crate) async fn metrics(client: &mut Client) -> String {
    client
        .get_metrics(proto::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text
}

async fn cancel(client: &mut Client, id: &str) -> Result<bool, tonic::Status> {
    let request = proto::CancelProofRequest {
        job_id: id.to_owned(),
    };
    Ok(client.cancel_proof(request).await?.into_inner().was_running)
}

async fn preload(
    client: &mut Client,
    circuit: &str,
) -> Result<proto::PreloadSrsResponse, tonic::Status> {
    let request = proto::PreloadSrsRequest {
        circuit_id: circuit.to_owned(),
    };
    Ok(client.preload_srs(request).await?.into_inner())
}

async fn evict(
    client: &mut Client,
    circuit: &str,
) -> Result<proto::EvictSrsResponse, tonic::Status> {
    let request = proto::EvictSrsRequest {
        circuit_id: circuit.to_owned(),
    };
    Ok(client.evict_srs(request).await?.into_inner())
}

/// One `Prove` per request, all at once, each on a clone of `client`.
pub(crate) fn prove_all(
    client: &Client,
    requests: Vec<SubmitProofRequest>,
) -> Vec<tokio::task::JoinHandle<proto::AwaitProofResponse>> {
    requests
        .into_iter()
        .map(|request| {
            let mut client = client.clone();
            tokio::spawn(async move { prove(&mut client, request).await })
        })
        .collect()
}

pub(crate) async fn await_job(
    client: &mut Client,
    id: &str,
    timeout_ms: u64,
) -> proto::AwaitProofResponse {
    client
        .await_proof(proto::AwaitProofRequest {
            job_id: id.to_owned(),
            timeout_ms,
        })
        .await
        .unwrap()
        .into_inner()
}

/// The proof bytes verify against the synthetic circuit's parameters and public inputs.
pub(crate) fn assert_valid(constraints: usize, bytes: &[u8], partitions: usize) {
    assert_eq!(bytes.len(), 192 * partitions);
    let circuit = cuzk_daemon::circuits::synthetic::synthetic_circuit(constraints);
    let set = SyntheticCircuits
        .load(&circuit, &cuzk_pipeline::Devices::unmanaged(Vec::new()))
        .unwrap();
    let pvk = cuzk_groth16::PreparedVerifyingKey::new(&set.params.vk);
    let inputs = cuzk_synth::circuits::SyntheticCircuit {
        constraints,
        boolean_fraction: 0.5,
        public_inputs: 2,
        seed: constraints as u64,
    }
    .public_input_values();
    for chunk in bytes.chunks(192) {
        let proof = cuzk_groth16::Proof::from_bytes(chunk).unwrap();
        assert!(cuzk_groth16::verify_proof(&pvk, &proof, &inputs).unwrap());
    }
}

/// A plain HTTP/1.1 request to the status port: (status code, body).
pub(crate) async fn http(addr: std::net::SocketAddr, method: &str, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let code = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (code, body)
}

/// Polls `check` every 20 ms until it holds, for at most `limit`.
pub(crate) async fn eventually<F, Fut>(limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !check().await {
        assert!(
            start.elapsed() < limit,
            "condition not met within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_rpc_over_a_unix_socket() {
    let daemon = Running::start("", None).await;
    let mut client = daemon.client().await;

    // SubmitProof then AwaitProof.
    let spec = SyntheticRequest {
        partitions: 2,
        ..SyntheticRequest::new(300)
    };
    let submitted = client
        .submit_proof(synthetic("first", &spec))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(submitted.job_id, "first");
    assert_eq!(submitted.assigned_gpu, "cpu");
    let done = await_job(&mut client, "first", 0).await;
    assert_eq!(done.status(), Status::Completed, "{}", done.error_message);
    assert_valid(300, &done.proof, 2);
    assert!(done.total_ms >= done.synthesis_ms.min(done.total_ms));
    assert!(
        done.srs_load_ms > 0,
        "the first proof loaded its parameters"
    );

    // Prove, with a fresh id when none is given; the parameters are loaded now.
    let again = prove(&mut client, synthetic("", &SyntheticRequest::new(300))).await;
    assert_eq!(again.status(), Status::Completed);
    assert!(again.job_id.starts_with("job-"), "{}", again.job_id);
    assert_eq!(again.srs_load_ms, 0);
    assert_valid(300, &again.proof, 1);

    // A finished job's result stays retrievable; a cancel of it changes nothing.
    let kept = await_job(&mut client, "first", 0).await;
    assert_eq!(kept.proof, done.proof);
    let was_running = cancel(&mut client, "first").await.unwrap();
    assert!(!was_running);

    // Unknown jobs.
    let unknown = client
        .await_proof(proto::AwaitProofRequest {
            job_id: "nope".into(),
            timeout_ms: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    let unknown = cancel(&mut client, "nope").await.unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);

    // Parameter tiers.
    let preloaded = preload(&mut client, "synthetic-512").await.unwrap();
    assert!(!preloaded.already_loaded);
    let preloaded = preload(&mut client, "synthetic-512").await.unwrap();
    assert!(preloaded.already_loaded);
    assert_eq!(preloaded.load_time_ms, 0);
    let status = get_status(&mut client).await;
    assert_eq!(status.total_proofs_completed, 2);
    assert_eq!(status.total_proofs_failed, 0);
    assert!(status.gpus.is_empty(), "the CPU backend has no GPU");
    let circuits: Vec<(&str, i32, u32)> = status
        .loaded_srs
        .iter()
        .map(|s| (s.circuit_id.as_str(), s.tier, s.ref_count))
        .collect();
    let hot = proto::srs_status::Tier::Hot as i32;
    assert_eq!(
        circuits,
        vec![("synthetic-300", hot, 0), ("synthetic-512", hot, 0)]
    );
    assert!(status.loaded_srs.iter().all(|s| s.size_bytes > 0));
    let queue_names: Vec<&str> = status
        .queues
        .iter()
        .map(|q| q.proof_kind.as_str())
        .collect();
    assert_eq!(
        queue_names,
        ["porep-c2", "snap-update", "window-post", "winning-post"]
    );
    let evicted = evict(&mut client, "synthetic-512").await.unwrap();
    assert!(evicted.was_loaded);
    assert!(evicted.freed_bytes > 0);
    let evicted = evict(&mut client, "synthetic-512").await.unwrap();
    assert!(!evicted.was_loaded);
    let unknown = preload(&mut client, "porep-1t").await.unwrap_err();
    assert_eq!(unknown.code(), Code::InvalidArgument);
    assert!(
        unknown.message().contains("circuit_id"),
        "{}",
        unknown.message()
    );

    // Metrics, by rpc and on the status port.
    let text = metrics(&mut client).await;
    for line in [
        "cuzk_proofs_completed_total 2",
        "cuzk_proofs_completed{proof_kind=\"porep_c2\"} 2",
        "cuzk_proof_duration_seconds_count{proof_kind=\"porep_c2\"} 2",
        "cuzk_partition_synthesis_seconds_count 3",
        "cuzk_partition_gpu_seconds_count 3",
        "cuzk_gpu_workers 2",
        "cuzk_srs_load_seconds_count{circuit_id=\"synthetic-300\"} 1",
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
    let status_addr = daemon.bound.status.unwrap();
    let (code, body) = http(status_addr, "GET", "/metrics").await;
    assert_eq!(code, 200);
    assert!(body.contains("cuzk_proofs_completed{proof_kind=\"porep_c2\"} 2"));
    let (code, body) = http(status_addr, "GET", "/status").await;
    assert_eq!(code, 200);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["total_proofs_completed"], 2);
    assert_eq!(json["loaded_srs"][0]["tier"], "HOT");
    // Curio's daemon's fields beside ours.
    assert_eq!(json["counters"]["total_completed"], 2, "{json}");
    assert_eq!(
        json["counters"]["completed_by_kind"]["porep-c2"], 2,
        "{json}"
    );
    assert_eq!(json["gpu_workers"].as_array().unwrap().len(), 2, "{json}");
    assert_eq!(json["gpu_workers"][0]["state"], "idle", "{json}");
    assert!(
        json["memory"]["total_bytes"].as_u64().unwrap() > 0,
        "{json}"
    );
    assert!(json["uptime_secs"].is_number(), "{json}");
    assert_eq!(json["pipelines"], serde_json::json!([]), "{json}");
    assert!(
        json["allocations"]["srs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|set| set["circuit_id"] == "synthetic-300"),
        "{json}"
    );
    assert_eq!(
        http(status_addr, "GET", "/healthz").await,
        (200, "ok\n".into())
    );
    // Read-only: nothing answers but GET.
    assert_eq!(http(status_addr, "POST", "/metrics").await.0, 405);

    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tcp_wants_the_bearer_token() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token-0123456789\n").unwrap();
    let daemon = Running::start(
        &format!(
            "listen = \"127.0.0.1:0\"\ntoken_file = \"{}\"",
            token_file.display()
        ),
        None,
    )
    .await;
    let mut anonymous = daemon.client().await;
    let refused = anonymous
        .get_status(proto::GetStatusRequest {})
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    let refused = anonymous
        .prove(prove_request(synthetic("x", &SyntheticRequest::new(64))))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);

    assert!(matches!(daemon.bound.grpc, Listen::Tcp(_)));
    let mut wrong = daemon.client_with(Some("s3cret-token-0123456780")).await;
    let refused = wrong
        .get_status(proto::GetStatusRequest {})
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    let mut authorized = daemon.client_with(Some("s3cret-token-0123456789")).await;
    let done = authorized
        .prove(prove_request(synthetic("tcp", &SyntheticRequest::new(64))))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(done.status(), Status::Completed);
    assert_valid(64, &done.proof, 1);
    daemon.stop().await.unwrap();
}

/// A TCP relay between a client and `server` that counts the HTTP/2 PING frames (not their
/// acks) the server sends, each with its time since the relay's first connection.
async fn ping_counting_relay(server: String) -> (String, Arc<Mutex<Vec<Duration>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let pings = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&pings);
    tokio::spawn(async move {
        let (client, _) = listener.accept().await.unwrap();
        let start = Instant::now();
        let upstream = tokio::net::TcpStream::connect(server).await.unwrap();
        let (mut client_read, mut client_write) = client.into_split();
        let (mut server_read, mut server_write) = upstream.into_split();
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
        });
        // Server to client: frames only (the connection preface is the client's). A frame is
        // a 9-byte header (24-bit length, type, flags, stream) and its payload; PING is type
        // 6, its ack flag 1.
        let (mut pending, mut chunk) = (Vec::new(), vec![0u8; 1 << 16]);
        loop {
            let n = match server_read.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if client_write.write_all(&chunk[..n]).await.is_err() {
                return;
            }
            pending.extend_from_slice(&chunk[..n]);
            while pending.len() >= 9 {
                let length = usize::from(pending[0]) << 16
                    | usize::from(pending[1]) << 8
                    | usize::from(pending[2]);
                if pending.len() < 9 + length {
                    break;
                }
                if pending[3] == 6 && pending[4] & 1 == 0 {
                    seen.lock().unwrap().push(start.elapsed());
                }
                pending.drain(..9 + length);
            }
        }
    });
    (addr, pings)
}

/// A `Prove` that waits seconds for its proof sends nothing meanwhile: the server's HTTP/2
/// pings keep NATs and load balancers from dropping the connection, every keepalive_interval;
/// with the interval 0, none.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idle_call_gets_the_servers_keepalive_pings_at_its_interval() {
    let idle = SyntheticRequest {
        synthesis_delay_ms: 1_500,
        ..SyntheticRequest::new(64)
    };
    for (interval, expected) in [("300ms", true), ("0", false)] {
        let daemon = Running::start(
            &format!("listen = \"127.0.0.1:0\"\nkeepalive_interval = \"{interval}\""),
            None,
        )
        .await;
        let (relay, pings) = ping_counting_relay(daemon.bound.grpc.to_string()).await;
        let mut client = connect(&relay, None).await.unwrap();
        let done = prove(&mut client, synthetic(&format!("idle-{interval}"), &idle)).await;
        assert_eq!(done.status(), Status::Completed, "{}", done.error_message);
        let pings = pings.lock().unwrap().clone();
        eprintln!("keepalive_interval {interval}: server pings at {pings:?}");
        if expected {
            // The call idles ~1.5 s: several pings, the first within an interval and a margin.
            assert!(pings.len() >= 2, "{pings:?}");
            assert!(pings[0] < Duration::from_millis(900), "{pings:?}");
        } else {
            assert_eq!(pings, Vec::<Duration>::new());
        }
        daemon.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tcp_with_tls_proves_for_a_client_that_trusts_its_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    let daemon = Running::start(
        &format!(
            "listen = \"127.0.0.1:0\"\ntls_cert_file = \"{}\"\ntls_key_file = \"{}\"",
            cert.display(),
            key.display()
        ),
        None,
    )
    .await;
    let Listen::Tcp(addr) = &daemon.bound.grpc else {
        panic!("bound to TCP");
    };
    let port = addr.rsplit_once(':').unwrap().1;
    let endpoint = |tls: Option<tonic::transport::ClientTlsConfig>| {
        let endpoint =
            tonic::transport::Endpoint::from_shared(format!("https://localhost:{port}")).unwrap();
        match tls {
            Some(tls) => endpoint.tls_config(tls).unwrap(),
            None => endpoint,
        }
    };
    let trusted = tonic::transport::ClientTlsConfig::new()
        .ca_certificate(tonic::transport::Certificate::from_pem(
            generated.cert.pem(),
        ))
        .domain_name("localhost");
    let channel = endpoint(Some(trusted)).connect().await.unwrap();
    let mut client = cuzk_daemon::proto::proving_engine_client::ProvingEngineClient::new(channel);
    let done = client
        .prove(prove_request(synthetic("tls", &SyntheticRequest::new(64))))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(done.status(), Status::Completed);
    assert_valid(64, &done.proof, 1);
    // Plain HTTP/2 on the TLS port gets nowhere.
    let plain = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .connect()
        .await;
    if let Ok(channel) = plain {
        let mut client =
            cuzk_daemon::proto::proving_engine_client::ProvingEngineClient::new(channel);
        assert!(client.get_status(proto::GetStatusRequest {}).await.is_err());
    }
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn await_times_out_and_cancel_in_synthesis_ends_the_job() {
    let daemon = Running::start("", None).await;
    let mut client = daemon.client().await;
    let slow = SyntheticRequest {
        synthesis_delay_ms: 5_000,
        ..SyntheticRequest::new(128)
    };
    client.submit_proof(synthetic("slow", &slow)).await.unwrap();
    let waited = await_job(&mut client, "slow", 100).await;
    assert_eq!(waited.status(), Status::Timeout);
    assert!(waited.proof.is_empty());
    // Wait until its partition is in synthesis.
    eventually(Duration::from_secs(30), || {
        let mut client = client.clone();
        async move {
            let status = get_status(&mut client).await;
            status.queues[0].in_progress == 1
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let was_running = cancel(&mut client, "slow").await.unwrap();
    assert!(was_running, "a partition was in synthesis");
    let ended = await_job(&mut client, "slow", 5_000).await;
    assert_eq!(ended.status(), Status::Cancelled);
    assert!(
        ended.error_message.contains("CancelProof"),
        "{}",
        ended.error_message
    );

    // Still serving.
    let next = prove(&mut client, synthetic("next", &SyntheticRequest::new(128))).await;
    assert_eq!(next.status(), Status::Completed);
    daemon.stop().await.unwrap();
}

/// A CPU backend that says it is a GPU and holds every proof on the "device" until let go.
struct GatedGpu {
    inner: CpuBackend,
    open: Mutex<bool>,
    opened: Condvar,
}

impl GatedGpu {
    fn new() -> Arc<Self> {
        Arc::new(GatedGpu {
            inner: CpuBackend,
            open: Mutex::new(false),
            opened: Condvar::new(),
        })
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

impl ProverBackend for GatedGpu {
    fn name(&self) -> &str {
        "cuda:7 (test)"
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        Started::holding(device, || {
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.opened.wait(open).unwrap();
            }
            drop(open);
            self.inner.query_sums(params, assignment)
        })
    }

    fn device(&self) -> Result<Option<DeviceStatus>, ProveError> {
        Ok(Some(test_gpu(7)))
    }
}

/// What the test backends say of their "device".
fn test_gpu(ordinal: usize) -> DeviceStatus {
    DeviceStatus {
        ordinal,
        name: "Test GPU".into(),
        total_bytes: 1 << 30,
        free_bytes: 1 << 29,
        budget_bytes: 1 << 30,
        peak_bytes: 0,
    }
}

/// A CPU backend that says it is GPU `ordinal` (named so), so that the status lists it.
pub(crate) struct SaysGpu(pub(crate) usize, pub(crate) &'static str);

impl ProverBackend for SaysGpu {
    fn name(&self) -> &str {
        self.1
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        CpuBackend.prove_start(params, assignment, device)
    }

    fn device(&self) -> Result<Option<DeviceStatus>, ProveError> {
        Ok(Some(test_gpu(self.0)))
    }
}

/// Of two devices, the second is dead from the start (it fails every proof and every placement of
/// a parameter set): every request still completes (its partitions retried on the first), and the
/// status (rpc and HTTP) and the metrics say the second is out of service and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_device_that_dies_fails_no_request_and_the_status_says_so() {
    let dead = FaultyBackend::new(Arc::new(SaysGpu(1, "cuda:1 (test)")), Faults::From(0));
    let alive = SaysGpu(0, "cuda:0 (test)");
    let backends: Vec<Arc<dyn ProverBackend>> = vec![Arc::new(alive), Arc::new(dead)];
    let daemon = Running::start("", Some(backends)).await;
    let mut client = daemon.client().await;
    let spec = SyntheticRequest {
        partitions: 2,
        ..SyntheticRequest::new(256)
    };
    let requests = (0..6).map(|i| synthetic(&format!("p{i}"), &spec)).collect();
    for handle in prove_all(&client, requests) {
        let reply = handle.await.unwrap();
        assert_eq!(reply.status(), Status::Completed, "{}", reply.error_message);
        assert_valid(256, &reply.proof, 2);
    }
    let status = get_status(&mut client).await;
    let [alive, dead] = <[proto::GpuStatus; 2]>::try_from(status.gpus).unwrap();
    assert_eq!(
        (alive.ordinal, alive.out_of_service, alive.device_faults),
        (0, false, 0)
    );
    assert_eq!(alive.partitions_proven, 12);
    assert!(dead.out_of_service && dead.device_faults >= 3, "{dead:?}");
    assert!(dead.out_of_service_reason.contains("injected"), "{dead:?}");
    assert_eq!(dead.partitions_proven, 0);

    let text = metrics(&mut client).await;
    let faults = format!(
        "cuzk_device_faults_total{{device=\"1\"}} {}",
        dead.device_faults
    );
    for line in [
        faults.as_str(),
        "cuzk_devices_in_service 1",
        "cuzk_partition_retries_total",
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
    let (_, body) = http(daemon.bound.status.unwrap(), "GET", "/status").await;
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["gpus"][1]["out_of_service"], true);
    // A job submitted now goes to the device in service only.
    let submitted = client
        .submit_proof(synthetic("after", &spec))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(submitted.assigned_gpu, "cuda:0 (test)");
    assert_eq!(json["gpus"][0]["partitions_proven"], 12);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_on_the_gpu_and_the_daemon_goes_on() {
    let gpu = GatedGpu::new();
    let daemon = Running::start("", Some(vec![gpu.clone() as Arc<dyn ProverBackend>])).await;
    let mut client = daemon.client().await;
    client
        .submit_proof(synthetic("on-gpu", &SyntheticRequest::new(256)))
        .await
        .unwrap();
    eventually(Duration::from_secs(30), || {
        let mut client = client.clone();
        async move {
            let status = get_status(&mut client).await;
            status.gpus[0].current_job_id == "on-gpu"
        }
    })
    .await;
    let status = get_status(&mut client).await;
    let gpu_status = &status.gpus[0];
    assert_eq!(
        (
            gpu_status.ordinal,
            gpu_status.name.as_str(),
            gpu_status.current_proof_kind.as_str()
        ),
        (7, "Test GPU", "porep-c2")
    );
    assert_eq!(gpu_status.vram_total_bytes, 1 << 30);
    let was_running = cancel(&mut client, "on-gpu").await.unwrap();
    assert!(was_running, "its partition was on the GPU");
    let ended = await_job(&mut client, "on-gpu", 5_000).await;
    assert_eq!(ended.status(), Status::Cancelled);
    gpu.open();
    let next = prove(&mut client, synthetic("after", &SyntheticRequest::new(256))).await;
    assert_eq!(next.status(), Status::Completed, "{}", next.error_message);
    assert_valid(256, &next.proof, 1);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_request_id_five_times_at_once_is_one_proof() {
    let daemon = Running::start("", None).await;
    let client = daemon.client().await;
    let spec = SyntheticRequest {
        synthesis_delay_ms: 300,
        ..SyntheticRequest::new(200)
    };
    let calls = prove_all(&client, vec![synthetic("porep-1000-7", &spec); 5]);
    let mut proofs = Vec::new();
    for call in calls {
        let done = call.await.unwrap();
        assert_eq!(done.status(), Status::Completed);
        assert_eq!(done.job_id, "porep-1000-7");
        proofs.push(done.proof);
    }
    // One proof, handed to all five (a second would have fresh randomness).
    assert!(proofs.windows(2).all(|w| w[0] == w[1]));
    let mut client = client;
    let status = get_status(&mut client).await;
    assert_eq!(status.total_proofs_completed, 1);
    daemon.stop().await.unwrap();
}

/// The counter of `name` (with its labels) in the metrics text.
pub(crate) fn counter(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

/// Curio retries a task under the same id: a failed or cancelled attempt is never joined (each
/// retry is a new attempt, three at once one attempt), and other content under a running id
/// supersedes it, both callers getting the new proof.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_id_is_retried_and_other_content_supersedes_a_running_one() {
    let daemon = Running::start("", None).await;
    let mut client = daemon.client().await;
    let completed = "cuzk_proofs_completed{proof_kind=\"porep_c2\"}";
    let failed = "cuzk_proofs_failed{proof_kind=\"porep_c2\"}";
    let cancelled = "cuzk_proofs_cancelled_total{proof_kind=\"porep_c2\"}";

    let wrong = SyntheticRequest {
        wrong_inputs: true,
        ..SyntheticRequest::new(96)
    };
    for attempt in 1..=2 {
        let ended = prove(&mut client, synthetic("porep-1000-1", &wrong)).await;
        assert_eq!(ended.status(), Status::Failed, "attempt {attempt}");
        // Computed again, not the first failure handed back.
        assert_eq!(counter(&metrics(&mut client).await, failed), attempt);
    }
    let good = SyntheticRequest {
        synthesis_delay_ms: 400,
        ..SyntheticRequest::new(96)
    };
    let calls = prove_all(&client, vec![synthetic("porep-1000-1", &good); 3]);
    let mut proofs = Vec::new();
    for call in calls {
        let done = call.await.unwrap();
        assert_eq!(done.status(), Status::Completed, "{}", done.error_message);
        proofs.push(done.proof);
    }
    assert!(proofs.windows(2).all(|w| w[0] == w[1]), "three attempts");
    assert_valid(96, &proofs[0], 1);
    assert_eq!(counter(&metrics(&mut client).await, completed), 1);

    // A cancelled attempt is retried too.
    let slow = SyntheticRequest {
        synthesis_delay_ms: 3_000,
        ..SyntheticRequest::new(64)
    };
    client
        .submit_proof(synthetic("porep-1000-2", &slow))
        .await
        .unwrap();
    cancel(&mut client, "porep-1000-2").await.unwrap();
    assert_eq!(
        await_job(&mut client, "porep-1000-2", 0).await.status(),
        Status::Cancelled
    );
    let quick = prove(
        &mut client,
        synthetic("porep-1000-2", &SyntheticRequest::new(64)),
    )
    .await;
    assert_eq!(quick.status(), Status::Completed, "{}", quick.error_message);
    assert_eq!(counter(&metrics(&mut client).await, cancelled), 1);

    // Other content under a running id: the running attempt is cancelled, both callers and
    // AwaitProof get the new attempt's proof.
    let first = {
        let mut client = client.clone();
        let request = synthetic("porep-1000-3", &slow);
        tokio::spawn(async move { prove(&mut client, request).await })
    };
    // Curio's /status fields show it in synthesis.
    let status_addr = daemon.bound.status.unwrap();
    eventually(Duration::from_secs(10), || async move {
        let (_, body) = http(status_addr, "GET", "/status").await;
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        let job = &json["pipelines"][0];
        job["job_id"] == "porep-1000-3"
            && job["total_partitions"] == 1
            && job["partitions"][0]["state"] == "synthesizing"
            && json["synthesis"]["active"] == 1
    })
    .await;
    let other = SyntheticRequest::new(160);
    let second = prove(&mut client, synthetic("porep-1000-3", &other)).await;
    assert_eq!(
        second.status(),
        Status::Completed,
        "{}",
        second.error_message
    );
    assert_valid(160, &second.proof, 1);
    let first = first.await.unwrap();
    assert_eq!(first.status(), Status::Completed, "{}", first.error_message);
    assert_eq!(first.proof, second.proof);
    assert_eq!(
        await_job(&mut client, "porep-1000-3", 0).await.proof,
        second.proof
    );
    let text = metrics(&mut client).await;
    assert_eq!(counter(&text, cancelled), 2, "the superseded attempt");
    assert_eq!(counter(&text, completed), 3);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_critical_job_submitted_last_passes_the_queue_of_mixed_priorities() {
    let daemon = Running::start("", None).await;
    let client = daemon.client().await;
    let queued = SyntheticRequest {
        partitions: 2,
        synthesis_delay_ms: 150,
        ..SyntheticRequest::new(128)
    };
    // 19 clients of LOW, NORMAL and HIGH jobs, then one CRITICAL: 20 at once.
    let priorities = [
        proto::Priority::Normal,
        proto::Priority::Low,
        proto::Priority::High,
    ];
    let finished = Arc::new(Mutex::new(Vec::new()));
    let mut calls = Vec::new();
    for i in 0..19 {
        let mut client = client.clone();
        let priority = priorities[i % 3];
        let mut request = synthetic(&format!("{}-{i}", priority.as_str_name()), &queued);
        request.priority = priority.into();
        // Submitted in order, each before the next.
        let id = client
            .submit_proof(request)
            .await
            .unwrap()
            .into_inner()
            .job_id;
        let finished = Arc::clone(&finished);
        calls.push(tokio::spawn(async move {
            let done = await_job(&mut client, &id, 0).await;
            assert_eq!(done.status(), Status::Completed);
            finished.lock().unwrap().push(id);
        }));
    }
    let mut client_c = client.clone();
    let mut critical = synthetic("CRITICAL", &SyntheticRequest::new(128));
    // Unspecified for WinningPoSt would be CRITICAL too; here it is explicit.
    critical.priority = proto::Priority::Critical.into();
    let finished_c = Arc::clone(&finished);
    calls.push(tokio::spawn(async move {
        let done = prove(&mut client_c, critical).await;
        assert_eq!(done.status(), Status::Completed);
        finished_c.lock().unwrap().push("CRITICAL".to_owned());
    }));
    for call in calls {
        call.await.unwrap();
    }
    let order = finished.lock().unwrap().clone();
    let place = order.iter().position(|id| id == "CRITICAL").unwrap();
    // Ahead of it only what was already in synthesis or on the GPU when it came (one partition
    // worker, two GPU workers, two jobs synthesizing at once).
    assert!(place <= 3, "the critical job finished {place}th: {order:?}");
    // A LOW job queued behind the others ends last.
    assert!(order.last().unwrap().starts_with("LOW"), "{order:?}");
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_and_oversized_requests_are_refused_and_the_daemon_goes_on() {
    let daemon = Running::start("", None).await;
    let mut client = daemon.client().await;
    let mut no_kind = synthetic("bad-kind", &SyntheticRequest::new(64));
    no_kind.proof_kind = 0;
    let mut bad_json = synthetic("bad-json", &SyntheticRequest::new(64));
    bad_json.vanilla_proof = b"{not json".to_vec();
    for (request, field) in [(no_kind, "proof_kind"), (bad_json, "vanilla_proof")] {
        let refused = client.prove(prove_request(request)).await.unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument);
        assert!(
            refused.message().starts_with(field),
            "{}",
            refused.message()
        );
    }
    let refused = client
        .prove(proto::ProveRequest { submit: None })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);

    // Over the 256 MiB limit.
    let mut huge = synthetic("huge", &SyntheticRequest::new(64));
    huge.vanilla_proof = vec![b' '; (256 << 20) + 1];
    let refused = client.prove(prove_request(huge)).await.unwrap_err();
    assert_eq!(refused.code(), Code::OutOfRange, "{refused}");

    // A kind the circuits do not serve: an OK rpc with FAILED, naming the kind.
    let mut winning = synthetic("winning", &SyntheticRequest::new(64));
    winning.proof_kind = proto::ProofKind::WinningPost.into();
    let failed = prove(&mut client, winning).await;
    assert_eq!(failed.status(), Status::Failed);
    assert!(
        failed.error_message.contains("WinningPoSt"),
        "{}",
        failed.error_message
    );

    // A proof that fails: FAILED naming the partition and the cause.
    let wrong = SyntheticRequest {
        partitions: 2,
        wrong_inputs: true,
        ..SyntheticRequest::new(64)
    };
    let failed = prove(&mut client, synthetic("wrong", &wrong)).await;
    assert_eq!(failed.status(), Status::Failed);
    assert!(
        failed.error_message.contains("partition"),
        "{}",
        failed.error_message
    );
    assert!(
        failed.error_message.contains("verify"),
        "{}",
        failed.error_message
    );

    let fine = prove(&mut client, synthetic("fine", &SyntheticRequest::new(64))).await;
    assert_eq!(fine.status(), Status::Completed);
    // A priority number the API does not define is the kind's default, as in Curio's daemon.
    let mut new_priority = synthetic("new-priority", &SyntheticRequest::new(64));
    new_priority.priority = 9;
    let proven = prove(&mut client, new_priority).await;
    assert_eq!(
        proven.status(),
        Status::Completed,
        "{}",
        proven.error_message
    );
    let status = get_status(&mut client).await;
    assert_eq!(
        (status.total_proofs_completed, status.total_proofs_failed),
        (2, 2)
    );
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_disconnects_mid_prove_loses_nothing() {
    let daemon = Running::start("", None).await;
    let spec = SyntheticRequest {
        synthesis_delay_ms: 800,
        ..SyntheticRequest::new(128)
    };
    {
        let mut client = daemon.client().await;
        let request = synthetic("gone", &spec);
        let call = tokio::spawn(async move { prove(&mut client, request).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        call.abort();
        let _ = call.await;
    }
    let mut client = daemon.client().await;
    let done = await_job(&mut client, "gone", 0).await;
    assert_eq!(done.status(), Status::Completed);
    assert_valid(128, &done.proof, 1);
    // A retry under the same id and content gets the same proof, not a second one.
    let retried = prove(&mut client, synthetic("gone", &spec)).await;
    assert_eq!(retried.proof, done.proof);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_lets_running_jobs_finish_then_cancels_what_outlasts_the_drain() {
    let daemon = Running::start("drain_timeout = \"30s\"", None).await;
    let client = daemon.client().await;
    let spec = SyntheticRequest {
        synthesis_delay_ms: 700,
        ..SyntheticRequest::new(128)
    };
    let calls = prove_all(
        &client,
        (0..2)
            .map(|i| synthetic(&format!("drain-{i}"), &spec))
            .collect(),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let path = match &daemon.bound.grpc {
        Listen::Unix(path) => path.clone(),
        Listen::Tcp(_) => unreachable!(),
    };
    let stopping = tokio::spawn(daemon.stop());
    // During the drain, no new proofs.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut late = client.clone();
    let refused = late
        .submit_proof(synthetic("late", &SyntheticRequest::new(64)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable, "{refused}");
    for call in calls {
        let done = call.await.unwrap();
        assert_eq!(done.status(), Status::Completed, "{}", done.error_message);
    }
    stopping.await.unwrap().unwrap();
    assert!(!path.exists(), "the socket file is removed");

    let daemon = Running::start("drain_timeout = \"300ms\"", None).await;
    let mut client = daemon.client().await;
    let long = SyntheticRequest {
        synthesis_delay_ms: 5_000,
        ..SyntheticRequest::new(128)
    };
    let call = tokio::spawn(async move { prove(&mut client, synthetic("long", &long)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    daemon.stop().await.unwrap();
    let ended = call.await.unwrap();
    assert_eq!(ended.status(), Status::Cancelled);
    assert!(
        ended.error_message.contains("shut down"),
        "{}",
        ended.error_message
    );
}

#[test]
fn the_unix_path_of_a_config_is_where_it_binds() {
    let config = Config::from_toml("[daemon]\nlisten = \"unix:///tmp/a/b.sock\"\n", "t").unwrap();
    assert_eq!(config.listen, Listen::Unix(PathBuf::from("/tmp/a/b.sock")));
}
