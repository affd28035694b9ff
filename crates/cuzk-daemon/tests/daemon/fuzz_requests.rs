//! The daemon's requests, fuzzed: `Circuits::check` of Filecoin's circuits on random
//! `SubmitProofRequest`s of every kind and on mutations of valid ones (a 2 KiB sample sector's
//! PoRep wrapper and C1 output, its PoSts, a sealed sector's update); the protobuf messages
//! decoded from random bytes and from mutated encodings of valid ones; and, over a unix socket,
//! random bodies of a `Prove` call to a daemon serving synthetic circuits. Anyone who can reach
//! the socket sends these bytes, so no input may panic or hang the daemon: each is refused with
//! `INVALID_ARGUMENT` naming its field (or, for bytes that are no message, tonic's `INTERNAL`),
//! and the daemon proves on afterwards. `CUZK_FUZZ_CASES` sets the cases per test;
//! `CUZK_TEST_SEED` replays a run.

use crate::{common, filecoin, fuzzing};

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use cuzk_daemon::circuits::filecoin::FilecoinCircuits;
use cuzk_daemon::circuits::synthetic::{SyntheticCircuits, SyntheticRequest};
use cuzk_daemon::circuits::{Circuits, Work};
use cuzk_daemon::client::{porep_request, post_request, snap_request};
use cuzk_daemon::config::Config;
use cuzk_daemon::kinds::Kind;
use cuzk_daemon::proto::await_proof_response::Status;
use cuzk_daemon::proto::{self, ProveRequest, ProveResponse, SubmitProofRequest};
use cuzk_daemon::{serve, DaemonError, Serving};
use cuzk_filecoin::{sample_sector, snap_update, SealProof, SectorSize, SECTOR_SIZES};
use fuzzing::{fuzz, mutate_bytes, mutate_json, mutations, no_panic, Mutation, Outcome};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use prost::bytes::{Buf, BufMut};
use prost::Message;
use rand::{Rng, RngCore};
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Code;

/// Filecoin's circuits, and valid requests of each kind to mutate.
struct Fixture {
    circuits: FilecoinCircuits,
    /// The sample sector's C1 output as the FFI writes it.
    c1: Value,
    porep: SubmitProofRequest,
    winning: SubmitProofRequest,
    window: SubmitProofRequest,
    snap: SubmitProofRequest,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn valid(&self) -> [(&SubmitProofRequest, Kind); 4] {
        [
            (&self.porep, Kind::PoRep),
            (&self.winning, Kind::WinningPost),
            (&self.window, Kind::WindowPost),
            (&self.snap, Kind::SnapDeals),
        ]
    }
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        // First: it settles filecoin-proofs' parameter directory.
        let circuits = FilecoinCircuits::new(Some(filecoin::params_dir()), true, None).unwrap();
        let mut rng = cuzk_testkit::rng("fuzz requests fixture");
        let proof = SealProof::current(SectorSize::S2KiB);
        let sample = sample_sector(proof, Some(1000), &mut rng).unwrap();
        let c1 = sample.sector.c1.to_ffi_json();
        let sector = sample.sector.identity.sector_id;
        let porep = porep_request("fuzz-porep", &c1, "c1.json", 1000, sector).unwrap();
        let post = |post: &cuzk_filecoin::PostRequest| {
            post_request(&format!("fuzz-{}", post.proof), post, 1000)
        };
        let (winning, window) = (post(&sample.posts[0]), post(&sample.posts[1]));
        let (sector_dir, sealed) = common::sealed_sector(dir.path(), &mut rng);
        let update = snap_update(&sealed, &sector_dir, &mut rng).unwrap();
        let snap = snap_request("fuzz-snap", &update, 1000);
        let fixture = Fixture {
            circuits,
            c1: serde_json::from_slice(&c1).unwrap(),
            porep,
            winning,
            window,
            snap,
            _dir: dir,
        };
        for (request, kind) in fixture.valid() {
            let work = fixture.circuits.check(request.clone(), kind);
            assert!(
                matches!(work, Ok(Work::Prove { .. })),
                "the valid {kind:?} request: {work:?}"
            );
        }
        fixture
    })
}

/// What the daemon does with a request that reached it: `Circuits::check` for its kind, after
/// the kind itself (as `Daemon::register` reads it). Ok, or `INVALID_ARGUMENT` naming a field;
/// anything else, or a panic, fails the case.
fn judge(what: &[String], request: SubmitProofRequest) -> Outcome {
    let Some(kind) = Kind::from_wire(request.proof_kind) else {
        return Ok("invalid proof_kind".into());
    };
    let circuits = &fixture().circuits;
    match no_panic(what, || circuits.check(request, kind))? {
        Ok(Work::Prove { circuit, .. }) => Ok(format!("ok {circuit}")),
        Ok(Work::Unsupported(reason)) => Err(TestCaseError::fail(format!(
            "Filecoin's circuits serve every kind, not {kind:?}: {reason}"
        ))),
        Err(DaemonError::InvalidArgument { field, reason }) => {
            if field.trim().is_empty() || reason.trim().is_empty() {
                return Err(TestCaseError::fail(format!(
                    "a refusal that names nothing ({field:?}: {reason:?}) on {what:?}"
                )));
            }
            Ok(format!("invalid {field}"))
        }
        Err(other) => Err(TestCaseError::fail(format!(
            "{other:?} ({}) is not INVALID_ARGUMENT, on {what:?}",
            other.code()
        ))),
    }
}

/// Bytes, mostly short; sometimes exactly 32 (a commitment's or randomness's length).
fn bytes_field() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..48),
        prop::collection::vec(any::<u8>(), 32..=32),
    ]
}

/// A `vanilla_proof`: random bytes, or a PoRep wrapper of random fields (`Phase1Out` random
/// base64, or not base64).
fn vanilla_proof() -> impl Strategy<Value = Vec<u8>> {
    let number = prop_oneof![
        any::<u64>().prop_map(Value::from),
        (0u64..4).prop_map(Value::from),
        Just(Value::from(2048)),
        Just(Value::from(-1)),
        Just(Value::from("2048")),
        Just(Value::Null),
    ];
    let phase1 = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200)
            .prop_map(|b| base64::engine::general_purpose::STANDARD.encode(b)),
        ".{0,40}",
    ];
    let wrapper = (number.clone(), phase1, number, any::<u8>()).prop_map(|(n, p, s, drop)| {
        let mut wrapper = json!({"SectorNum": n, "Phase1Out": p, "SectorSize": s});
        if drop % 4 == 0 {
            let key = ["SectorNum", "Phase1Out", "SectorSize"][(drop / 4 % 3) as usize];
            wrapper.as_object_mut().unwrap().remove(key);
        }
        if drop % 7 == 0 {
            wrapper["Unknown"] = json!(drop);
        }
        serde_json::to_vec(&wrapper).unwrap()
    });
    prop_oneof![prop::collection::vec(any::<u8>(), 0..300), wrapper]
}

/// A registered proof number: in or near the ranges of the three kinds, or any.
fn registered_proof() -> impl Strategy<Value = u64> {
    prop_oneof![3 => 0u64..25, 1 => any::<u64>()]
}

/// A sector size: each real one, 0 (take it from the registered proof), or any.
fn sector_size() -> impl Strategy<Value = u64> {
    let mut sizes: Vec<u64> = SECTOR_SIZES.iter().map(|s| s.bytes()).collect();
    sizes.push(0);
    prop_oneof![3 => prop::sample::select(sizes), 1 => any::<u64>()]
}

fn random_request() -> impl Strategy<Value = SubmitProofRequest> {
    let kind = prop_oneof![
        4 => prop::sample::select(vec![1i32, 2, 3, 4]),
        1 => any::<i32>(),
    ];
    (
        (
            ".{0,12}",
            kind,
            sector_size(),
            registered_proof(),
            any::<i32>(),
        ),
        (
            vanilla_proof(),
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..4),
        ),
        (any::<u64>(), any::<u64>(), bytes_field(), any::<u32>()),
        (bytes_field(), bytes_field(), bytes_field()),
    )
        .prop_map(
            |(
                (request_id, proof_kind, sector_size, registered_proof, priority),
                (vanilla_proof, vanilla_proofs),
                (sector_number, miner_id, randomness, partition_index),
                (comm_r_old, comm_r_new, comm_d_new),
            )| SubmitProofRequest {
                request_id,
                proof_kind,
                sector_size,
                registered_proof,
                priority,
                vanilla_proof,
                vanilla_proofs,
                sector_number,
                miner_id,
                randomness,
                partition_index,
                comm_r_old,
                comm_r_new,
                comm_d_new,
            },
        )
}

#[test]
fn random_requests_of_every_kind_are_refused_by_field() {
    fixture();
    fuzz("random requests", 16384, random_request(), |request| {
        judge(&[format!("{request:?}")], request)
    });
}

/// The wrapper of `c1` (JSON bytes) as Curio forms it, for sector `sector`.
fn wrapper(sector: u64, c1: &[u8], size: u64) -> Vec<u8> {
    json!({
        "SectorNum": sector,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1),
        "SectorSize": size,
    })
    .to_string()
    .into_bytes()
}

#[test]
fn mutated_porep_requests_are_refused_by_field() {
    let fixture = fixture();
    let valid = &fixture.porep;
    let wrapper_tree: Value = serde_json::from_slice(&valid.vanilla_proof).unwrap();
    // What a request's other fields become: mostly left alone.
    let change = (0u8..16, any::<u64>());
    fuzz(
        "porep mutations",
        4096,
        (0u8..4, mutations(3), change),
        |(mode, mutations, (change, arg))| {
            let mut request = valid.clone();
            let (vanilla_proof, mut what) = match mode {
                0 => mutate_bytes(&valid.vanilla_proof, &mutations),
                1 => {
                    let (tree, done) = mutate_json(&wrapper_tree, &mutations);
                    (serde_json::to_vec(&tree).unwrap(), done)
                }
                2 => {
                    let (c1, done) = mutate_json(&fixture.c1, &mutations);
                    let c1 = serde_json::to_vec(&c1).unwrap();
                    (wrapper(valid.sector_number, &c1, 2048), done)
                }
                _ => {
                    let c1 = serde_json::to_vec(&fixture.c1).unwrap();
                    let (c1, done) = mutate_bytes(&c1, &mutations);
                    (wrapper(valid.sector_number, &c1, 2048), done)
                }
            };
            request.vanilla_proof = vanilla_proof;
            match change {
                0 => request.registered_proof = arg % 25,
                1 => request.sector_size = SECTOR_SIZES[(arg % 5) as usize].bytes(),
                2 => request.sector_number = arg,
                3 => request.sector_number = 0,
                4 => request.miner_id = arg,
                5 => request.proof_kind = (arg % 6) as i32,
                _ => {}
            }
            what.push(format!(
                "mode {mode}, then change {change} ({arg}): kind {}, registered proof {}, sector \
                 size {}, sector number {}",
                request.proof_kind,
                request.registered_proof,
                request.sector_size,
                request.sector_number
            ));
            judge(&what, request)
        },
    );
}

#[test]
fn mutated_post_and_snap_requests_are_refused_by_field() {
    let fixture = fixture();
    let change = (0u8..12, any::<u64>());
    fuzz(
        "post and snap mutations",
        8192,
        (1usize..4, mutations(3), change),
        |(which, mutations, (change, arg))| {
            let mut request = fixture.valid()[which].0.clone();
            let i = (arg % request.vanilla_proofs.len() as u64) as usize;
            let (bytes, mut what) = mutate_bytes(&request.vanilla_proofs[i], &mutations);
            request.vanilla_proofs[i] = bytes;
            let cut = |field: &mut Vec<u8>| field.truncate((arg % 40) as usize);
            match change {
                0 => request.registered_proof = arg % 25,
                1 => request.sector_size = arg,
                2 => cut(&mut request.randomness),
                3 => cut(&mut request.comm_r_old),
                4 => cut(&mut request.comm_d_new),
                5 => request.vanilla_proofs.clear(),
                6 => request.partition_index = arg as u32,
                7 => request.proof_kind = (arg % 6) as i32,
                _ => {}
            }
            what.push(format!(
                "vanilla proof {i} of request {which}, then change {change} ({arg})"
            ));
            judge(&what, request)
        },
    );
}

/// Valid requests' protobuf encodings, as `SubmitProofRequest`s and wrapped in `ProveRequest`s.
fn valid_encodings() -> Vec<Vec<u8>> {
    fixture()
        .valid()
        .iter()
        .flat_map(|(request, _)| {
            let prove = ProveRequest {
                submit: Some((*request).clone()),
            };
            [request.encode_to_vec(), prove.encode_to_vec()]
        })
        .collect()
}

/// Decodes `bytes` as either message; those that decode go on to the daemon's checks.
fn judge_message(what: &[String], bytes: &[u8]) -> Outcome {
    let submit = no_panic(what, || SubmitProofRequest::decode(bytes))?;
    let prove = no_panic(what, || ProveRequest::decode(bytes))?;
    let mut outcome = Vec::new();
    if let Ok(submit) = submit {
        outcome.push(format!("submit: {}", judge(what, submit)?));
    }
    match prove {
        Ok(ProveRequest { submit: None }) => outcome.push("prove: invalid submit".into()),
        Ok(ProveRequest {
            submit: Some(submit),
        }) => outcome.push(format!("prove: {}", judge(what, submit)?)),
        Err(_) => {}
    }
    if outcome.is_empty() {
        outcome.push("no message".into());
    }
    Ok(outcome.join(", "))
}

#[test]
fn protobuf_messages_of_random_and_mutated_bytes_decode_or_are_refused() {
    let encodings = valid_encodings();
    let inputs = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256).prop_map(|b| (None, b, Vec::new())),
        (0..encodings.len(), mutations(4)).prop_map(|(i, m)| (Some(i), Vec::new(), m)),
    ];
    fuzz(
        "protobuf messages",
        8192,
        inputs,
        |(valid, random, mutations)| {
            let (bytes, mut what) = match valid {
                Some(i) => mutate_bytes(&encodings[i], &mutations),
                None => (random, Vec::new()),
            };
            what.push(format!("encoding {valid:?}, {} bytes", bytes.len()));
            if valid.is_none() {
                what.push(format!("{bytes:?}"));
            }
            judge_message(&what, &bytes)
        },
    );
}

/// A codec whose messages are their bytes: the body of a call, whatever it holds.
#[derive(Clone, Copy, Debug, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        let mut bytes = vec![0; src.remaining()];
        src.copy_to_slice(&mut bytes);
        Ok(Some(bytes))
    }
}

/// A `Prove` call whose body is `body`: the reply's bytes, or its status.
async fn prove_raw(
    channel: &tonic::transport::Channel,
    body: Vec<u8>,
) -> Result<Vec<u8>, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/cuzk.v1.ProvingEngine/Prove");
    let reply = grpc.unary(tonic::Request::new(body), path, Raw).await?;
    Ok(reply.into_inner())
}

/// A daemon serving synthetic circuits on a unix socket: each `Prove` body of random bytes, or
/// a valid request's encoding with a few bits flipped, gets a status within seconds (never a
/// hang or a dropped connection): `INVALID_ARGUMENT`, tonic's `INTERNAL` for bytes that are no
/// message (never a panic's), or a reply with a result. The daemon proves a valid request after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_prove_bodies_get_a_status_and_the_daemon_proves_on() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cuzk.sock");
    let config = Config::from_toml(
        &format!(
            "[daemon]\ncircuits = \"synthetic\"\nlisten = \"unix://{}\"\n[gpus]\nbackend = \
             \"cpu\"\n[memory]\ntotal_budget = \"4GiB\"\n[synthesis]\npartition_workers = 1\n",
            socket.display()
        ),
        "test.toml",
    )
    .unwrap();
    let (tell, bound) = oneshot::channel();
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(serve(
        config,
        Arc::new(SyntheticCircuits),
        Serving {
            backends: None,
            on_bound: Some(tell),
        },
        async {
            let _ = stopped.await;
        },
    ));
    tokio::time::timeout(Duration::from_secs(30), bound)
        .await
        .expect("the daemon binds within 30 s")
        .expect("the daemon starts");
    let channel = cuzk_daemon::client::channel(&format!("unix://{}", socket.display()))
        .await
        .unwrap();

    let valid = |id: &str| ProveRequest {
        submit: Some(SubmitProofRequest {
            request_id: id.to_owned(),
            proof_kind: proto::ProofKind::PorepSealCommit.into(),
            vanilla_proof: SyntheticRequest::new(64).to_bytes(),
            ..Default::default()
        }),
    };
    let mut rng = cuzk_testkit::rng("raw prove bodies");
    let cases = fuzzing::cases(1024);
    let start = Instant::now();
    let mut outcomes = std::collections::BTreeMap::<String, u32>::new();
    for case in 0..cases {
        let body = if case % 2 == 0 {
            let mut body = vec![0u8; rng.gen_range(0..200)];
            rng.fill_bytes(&mut body);
            body
        } else {
            // Bit flips only: a flipped digit of the valid request stays a small circuit.
            let flips: Vec<Mutation> = (0..rng.gen_range(1..4))
                .map(|_| Mutation {
                    at: rng.next_u64(),
                    op: 0,
                    arg: rng.next_u64(),
                })
                .collect();
            mutate_bytes(&valid(&format!("fuzz-{case}")).encode_to_vec(), &flips).0
        };
        let reply =
            tokio::time::timeout(Duration::from_secs(60), prove_raw(&channel, body.clone()))
                .await
                .unwrap_or_else(|_| panic!("case {case}: no reply within 60 s to {body:?}"));
        let outcome = match reply {
            Ok(bytes) => {
                let reply = ProveResponse::decode(bytes.as_slice()).unwrap();
                let result = reply.result.expect("a reply has a result");
                format!("ok {:?}", result.status())
            }
            Err(status) => {
                let code = status.code();
                assert!(
                    matches!(code, Code::InvalidArgument | Code::Internal),
                    "case {case}: {status:?} on {body:?}"
                );
                assert!(
                    !status.message().contains("panic"),
                    "case {case}: {status:?} on {body:?}"
                );
                format!("{code:?}")
            }
        };
        *outcomes.entry(outcome).or_default() += 1;
    }
    eprintln!(
        "raw prove bodies: {cases} in {:.1} s: {outcomes:?}",
        start.elapsed().as_secs_f64()
    );

    let mut client = cuzk_daemon::proto::proving_engine_client::ProvingEngineClient::new(channel);
    let done = client
        .prove(valid("after the fuzz"))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(done.status(), Status::Completed, "{}", done.error_message);
    assert_eq!(done.proof.len(), 192);
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(60), served)
        .await
        .expect("serve returns after the drain")
        .unwrap()
        .unwrap();
}
