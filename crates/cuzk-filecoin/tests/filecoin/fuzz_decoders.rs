//! Every decoder of request bytes, fuzzed: C1 outputs (`C1Output::from_json`, then what checks
//! and builds a sector's circuits from it), PoSt vanilla proofs (`PostRequest::sectors`,
//! `PostCircuits::new`) and SnapDeals partition proofs (`SnapCircuits::new`), given random bytes
//! and mutations of valid requests (a sample sector's C1 output and PoSts, a sealed sector's
//! update). They read what Curio sends, so no input may panic, and each refusal must name the
//! file or field at fault. `CUZK_FUZZ_CASES` sets the cases per test (by default all run in
//! about 25 s on two cores); `CUZK_TEST_SEED` replays a run.

use crate::{common, fuzzing};

use std::sync::OnceLock;

use cuzk_filecoin::{
    sample_sector, seal_random_sector, snap_update, C1Output, FilecoinError, PostCircuits,
    PostKind, PostProof, PostRequest, RegisteredProof, SealProof, SectorCircuits, SectorSize,
    SnapCircuits, SnapRequest, UpdateProof, MAX_PARTITIONS_PER_DEADLINE, SECTOR_SIZES,
};
use filecoin_proofs::{
    FallbackPoStSectorProof, SectorShape2KiB, SectorShape32GiB, SectorShape64GiB,
};
use fuzzing::{fuzz, mutate_bytes, mutate_json, mutations, no_panic, Mutation, Outcome};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use storage_proofs_update::PartitionProof;

/// What the C1 outputs are called in errors, which must name it.
const SOURCE: &str = "fuzz-c1.json";

/// Runs `decode` on an input described by `what`: a panic fails the case, naming the input; a
/// refusal must name what is at fault.
fn judge(what: &[String], decode: impl FnOnce() -> Result<(), FilecoinError>) -> Outcome {
    // Decoders read filecoin-proofs' settings, which must name this binary's parameters first.
    common::params_dir();
    match no_panic(what, decode)? {
        Ok(()) => Ok("ok".into()),
        Err(e) => named(&e).map_err(|why| TestCaseError::fail(format!("{why} on {what:?}"))),
    }
}

/// The kind of `error` if its text is not empty and names the file, field or step at fault;
/// otherwise why not.
fn named(error: &FilecoinError) -> Result<String, String> {
    let text = error.to_string();
    let (kind, names): (&str, &str) = match error {
        FilecoinError::C1Syntax { file, .. } => ("C1Syntax", file),
        FilecoinError::C1WithoutSealProof { file } => ("C1WithoutSealProof", file),
        FilecoinError::C1SealProofMismatch { file, .. } => ("C1SealProofMismatch", file),
        FilecoinError::VanillaProofsInvalid { file } => ("VanillaProofsInvalid", file),
        FilecoinError::C1Field { file, field, .. } => {
            if file != SOURCE {
                return Err(format!("{text:?} does not name {SOURCE}"));
            }
            ("C1Field", field)
        }
        FilecoinError::ProofInput { field, .. } => ("ProofInput", field),
        FilecoinError::Filecoin { what, .. } => ("Filecoin", what),
        other => return Err(format!("unexpected refusal {other:?} ({text:?})")),
    };
    if text.trim().is_empty() || names.trim().is_empty() || !text.contains(names) {
        return Err(format!("{kind} {text:?} names nothing"));
    }
    if matches!(
        error,
        FilecoinError::C1Syntax { .. }
            | FilecoinError::C1WithoutSealProof { .. }
            | FilecoinError::C1SealProofMismatch { .. }
            | FilecoinError::VanillaProofsInvalid { .. }
    ) && names != SOURCE
    {
        return Err(format!("{text:?} does not name {SOURCE}"));
    }
    Ok(kind.to_owned())
}

/// Valid requests to mutate: a 2 KiB sample sector's C1 output (both forms) and PoSts, and a
/// sealed 2 KiB sector's SnapDeals update.
struct Fixture {
    c1_ffi: Value,
    c1_raw: Value,
    proof: SealProof,
    posts: Vec<PostRequest>,
    /// Each PoSt's vanilla proofs as JSON trees, for mutations of their structure.
    post_trees: Vec<Vec<Value>>,
    snap: SnapRequest,
    snap_trees: Vec<Value>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        common::params_dir();
        let start = std::time::Instant::now();
        let mut rng = cuzk_testkit::rng("fuzz fixture");
        let proof = SealProof::current(SectorSize::S2KiB);
        let sample = sample_sector(proof, Some(1000), &mut rng).unwrap();
        let c1 = &sample.sector.c1;
        SectorCircuits::<SectorShape2KiB>::new(c1).expect("the sample's C1 output is valid");
        for post in &sample.posts {
            PostCircuits::<SectorShape2KiB>::new(post).expect("the sample's PoSts are valid");
        }
        let work = tempfile::tempdir().unwrap();
        let sealed = seal_random_sector(proof, work.path(), Some(1000), &mut rng).unwrap();
        let snap = snap_update(&sealed, work.path(), &mut rng).unwrap();
        SnapCircuits::<SectorShape2KiB>::new(&snap).expect("the update is valid");
        let fixture = Fixture {
            c1_ffi: serde_json::from_slice(&c1.to_ffi_json()).unwrap(),
            c1_raw: serde_json::from_slice(&c1.to_raw_json()).unwrap(),
            proof,
            post_trees: sample
                .posts
                .iter()
                .map(|post| {
                    let trees = post.vanilla_proofs.iter();
                    trees.map(|b| tree::<PostSectorProof>(b)).collect()
                })
                .collect(),
            posts: sample.posts,
            snap_trees: snap
                .vanilla_proofs
                .iter()
                .map(|b| tree::<SnapPartitionProof>(b))
                .collect(),
            snap,
        };
        eprintln!(
            "fixture: {:.1} s, C1 output {} bytes, PoSt vanilla proofs {:?} bytes, update {:?}",
            start.elapsed().as_secs_f64(),
            c1.to_ffi_json().len(),
            fixture
                .posts
                .iter()
                .map(|p| p.vanilla_proofs.iter().map(Vec::len).sum::<usize>())
                .collect::<Vec<_>>(),
            fixture
                .snap
                .vanilla_proofs
                .iter()
                .map(Vec::len)
                .collect::<Vec<_>>(),
        );
        fixture
    })
}

type PostSectorProof = FallbackPoStSectorProof<SectorShape2KiB>;
type SnapPartitionProof = PartitionProof<SectorShape2KiB>;

/// The JSON tree of a bincode `T`, which must encode back to the same bytes.
fn tree<T: Serialize + DeserializeOwned>(bytes: &[u8]) -> Value {
    let value: T = bincode::deserialize(bytes).unwrap();
    let tree = serde_json::to_value(&value).unwrap();
    let back: T = serde_json::from_value(tree.clone()).unwrap();
    assert_eq!(bincode::serialize(&back).unwrap(), bytes, "JSON round trip");
    tree
}

/// Bincode bytes of a `T` mutated in its JSON tree when the mutated tree still is a `T` (what
/// reaches the code behind the decoder), else of its bytes.
fn mutate_bincode<T: Serialize + DeserializeOwned>(
    bytes: &[u8],
    tree: &Value,
    structural: bool,
    mutations: &[Mutation],
) -> (Vec<u8>, Vec<String>) {
    if structural {
        let (mutated, done) = mutate_json(tree, mutations);
        if let Ok(value) = serde_json::from_value::<T>(mutated) {
            return (bincode::serialize(&value).unwrap(), done);
        }
    }
    mutate_bytes(bytes, mutations)
}

/// What the daemon does with a C1 output: parse it, check every field decodes, read its
/// commitments, and (for 2 KiB) verify its vanilla proofs and build the partition circuits.
fn decode_c1(bytes: &[u8], hint: Option<SealProof>) -> Result<(), FilecoinError> {
    let c1 = C1Output::from_json(bytes, SOURCE, hint)?;
    c1.validate()?;
    c1.commitments()?;
    if c1.proof.size == SectorSize::S2KiB {
        SectorCircuits::<SectorShape2KiB>::new(&c1)?;
    }
    Ok(())
}

/// What the daemon does with a PoSt: the sectors its verifier is given, and the circuit from
/// its verified vanilla proofs, for its sector size's tree shape.
fn decode_post(post: &PostRequest) -> Result<(), FilecoinError> {
    post.sectors()?;
    match post.proof.size {
        SectorSize::S2KiB | SectorSize::S8MiB | SectorSize::S512MiB => {
            PostCircuits::<SectorShape2KiB>::new(post).map(drop)
        }
        SectorSize::S32GiB => PostCircuits::<SectorShape32GiB>::new(post).map(drop),
        SectorSize::S64GiB => PostCircuits::<SectorShape64GiB>::new(post).map(drop),
    }
}

/// What the daemon does with a SnapDeals update: its circuits from its verified partition
/// proofs, for its sector size's tree shape.
fn decode_snap(snap: &SnapRequest) -> Result<(), FilecoinError> {
    match snap.proof.size {
        SectorSize::S2KiB | SectorSize::S8MiB | SectorSize::S512MiB => {
            SnapCircuits::<SectorShape2KiB>::new(snap).map(drop)
        }
        SectorSize::S32GiB => SnapCircuits::<SectorShape32GiB>::new(snap).map(drop),
        SectorSize::S64GiB => SnapCircuits::<SectorShape64GiB>::new(snap).map(drop),
    }
}

/// A seal proof to claim for a C1 output, or none; mostly the output's own.
fn seal_hint() -> impl Strategy<Value = Option<SealProof>> {
    let own = SealProof::current(SectorSize::S2KiB);
    prop_oneof![
        3 => Just(Some(own)),
        1 => Just(None),
        1 => (0u64..20).prop_map(SealProof::from_number),
    ]
}

/// JSON of C1 outputs' and requests' vocabulary, nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        prop::sample::select(vec![
            "registered_proof",
            "vanilla_proofs",
            "StackedDrg2KiBV1",
            "comm_r",
            "comm_d",
            "replica_id",
            "seed",
            "ticket",
            "comm_d_proofs",
            "comm_r_last_proof",
            "replica_column_proofs",
            "labeling_proofs",
            "encoding_proof",
            "path",
            "root",
            "leaf",
        ])
        .prop_map(str::to_owned),
        "[a-z_]{0,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (0u64..256).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(vec![
            "StackedDrg2KiBV1_1",
            "StackedDrg2KiBV1",
            "StackedDrg32GiBV1_1",
            "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
            "",
        ])
        .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..8)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

#[test]
fn c1_outputs_of_random_bytes_are_refused_by_name() {
    let bytes = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
    ];
    fuzz(
        "c1 random bytes",
        8192,
        (bytes, seal_hint()),
        |(bytes, hint)| {
            let what = [format!(
                "{} bytes: {:?}",
                bytes.len(),
                String::from_utf8_lossy(&bytes)
            )];
            judge(&what, || decode_c1(&bytes, hint))
        },
    );
}

#[test]
fn mutated_c1_outputs_never_panic_and_name_their_field() {
    let fixture = fixture();
    fuzz(
        "c1 mutations",
        2048,
        (any::<bool>(), any::<bool>(), mutations(4), seal_hint()),
        |(ffi, structural, mutations, hint)| {
            let (tree, hint) = if ffi {
                (&fixture.c1_ffi, hint)
            } else {
                // The raw form names no proof: mostly given the right one.
                (&fixture.c1_raw, hint.or(Some(fixture.proof)))
            };
            let (bytes, mut what) = if structural {
                let (mutated, done) = mutate_json(tree, &mutations);
                (serde_json::to_vec(&mutated).unwrap(), done)
            } else {
                mutate_bytes(&serde_json::to_vec(tree).unwrap(), &mutations)
            };
            what.push(format!("ffi form: {ffi}, seal proof given: {hint:?}"));
            judge(&what, || decode_c1(&bytes, hint))
        },
    );
}

/// Any registered PoSt proof.
fn post_proof() -> impl Strategy<Value = PostProof> {
    let kind = prop::sample::select(vec![
        PostKind::Winning,
        PostKind::WindowV1,
        PostKind::Window,
    ]);
    (kind, prop::sample::select(SECTOR_SIZES.to_vec()))
        .prop_map(|(kind, size)| PostProof { kind, size })
}

#[test]
fn post_vanilla_proofs_of_random_bytes_are_refused_by_name() {
    let request = (
        post_proof(),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..600), 0..4),
        any::<[u8; 32]>(),
        any::<[u8; 32]>(),
        0usize..8,
    );
    fuzz(
        "post random bytes",
        8192,
        request,
        |(proof, vanilla_proofs, randomness, prover_id, partition)| {
            let post = PostRequest {
                proof,
                vanilla_proofs,
                randomness,
                prover_id,
                partition,
            };
            judge(&[format!("{post:?}")], || decode_post(&post))
        },
    );
}

/// How a valid request's other fields change besides its proofs' bytes.
fn field_change() -> impl Strategy<Value = (u8, u64)> {
    (0u8..12, any::<u64>())
}

#[test]
fn mutated_post_vanilla_proofs_never_panic_and_name_their_field() {
    let fixture = fixture();
    let input = (
        0..fixture.posts.len(),
        any::<bool>(),
        mutations(3),
        field_change(),
    );
    fuzz(
        "post mutations",
        2048,
        input,
        |(which, structural, mutations, (change, arg))| {
            let mut post = fixture.posts[which].clone();
            let i = (arg % post.vanilla_proofs.len() as u64) as usize;
            let (bytes, mut what) = mutate_bincode::<PostSectorProof>(
                &post.vanilla_proofs[i],
                &fixture.post_trees[which][i],
                structural,
                &mutations,
            );
            post.vanilla_proofs[i] = bytes;
            what.push(format!("vanilla proof {i} of {}", post.proof));
            match change {
                0 => post.randomness[(arg % 32) as usize] ^= 1 << (arg % 8),
                1 => post.prover_id[(arg % 32) as usize] ^= 1 << (arg % 8),
                // A partition sizes the public inputs (partition × sector count sectors): small
                // ones, or past the deadline's limit, which is refused before anything is sized.
                2 => {
                    post.partition = match arg % 2 {
                        0 => (arg % 64) as usize,
                        _ => MAX_PARTITIONS_PER_DEADLINE + (arg as usize >> 1),
                    }
                }
                3 => post.vanilla_proofs.push(post.vanilla_proofs[0].clone()),
                4 => post.vanilla_proofs.truncate(i),
                5 => {
                    post.proof.kind = match post.proof.kind {
                        PostKind::Winning => PostKind::Window,
                        PostKind::WindowV1 => PostKind::Winning,
                        PostKind::Window => PostKind::WindowV1,
                    }
                }
                6 => post.proof.size = SECTOR_SIZES[(arg % 5) as usize],
                _ => {}
            }
            what.push(format!(
                "then change {change} ({arg}): {} proofs, partition {}, {}",
                post.vanilla_proofs.len(),
                post.partition,
                post.proof
            ));
            judge(&what, || decode_post(&post))
        },
    );
}

#[test]
fn snap_partition_proofs_of_random_bytes_are_refused_by_name() {
    let request = (
        prop::sample::select(SECTOR_SIZES.to_vec()),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..600), 0..3),
        any::<[[u8; 32]; 3]>(),
    );
    fuzz(
        "snap random bytes",
        8192,
        request,
        |(size, vanilla_proofs, [comm_r_old, comm_r_new, comm_d_new])| {
            let snap = SnapRequest {
                proof: UpdateProof { size },
                vanilla_proofs,
                comm_r_old,
                comm_r_new,
                comm_d_new,
            };
            judge(&[format!("{snap:?}")], || decode_snap(&snap))
        },
    );
}

#[test]
fn mutated_snap_partition_proofs_never_panic_and_name_their_field() {
    let fixture = fixture();
    fuzz(
        "snap mutations",
        2048,
        (any::<bool>(), mutations(3), field_change()),
        |(structural, mutations, (change, arg))| {
            let mut snap = fixture.snap.clone();
            let i = (arg % snap.vanilla_proofs.len() as u64) as usize;
            let (bytes, mut what) = mutate_bincode::<SnapPartitionProof>(
                &snap.vanilla_proofs[i],
                &fixture.snap_trees[i],
                structural,
                &mutations,
            );
            snap.vanilla_proofs[i] = bytes;
            let bit = 1 << (arg % 8);
            let byte = (arg % 32) as usize;
            match change {
                0 => snap.comm_r_old[byte] ^= bit,
                1 => snap.comm_r_new[byte] ^= bit,
                2 => snap.comm_d_new[byte] ^= bit,
                3 => snap.comm_d_new = [0xff; 32],
                4 => snap.vanilla_proofs.push(snap.vanilla_proofs[0].clone()),
                5 => snap.vanilla_proofs.clear(),
                6 => snap.proof.size = SECTOR_SIZES[(arg % 5) as usize],
                _ => {}
            }
            what.push(format!(
                "partition proof {i}, then change {change} ({arg}): {} proofs, {}",
                snap.vanilla_proofs.len(),
                snap.proof
            ));
            judge(&what, || decode_snap(&snap))
        },
    );
}

/// The sample's PoSt `which` with its vanilla proof changed in its JSON tree, which must still
/// decode (so the change reaches the code behind the decoder).
fn changed_post(which: PostKind, change: impl FnOnce(&mut Value)) -> PostRequest {
    let fixture = fixture();
    let i = fixture.posts.iter().position(|p| p.proof.kind == which);
    let i = i.expect("the sample has this PoSt");
    let mut tree = fixture.post_trees[i][0].clone();
    change(&mut tree);
    let proof: PostSectorProof = serde_json::from_value(tree).expect("still a vanilla proof");
    let mut post = fixture.posts[i].clone();
    post.vanilla_proofs[0] = bincode::serialize(&proof).unwrap();
    post
}

/// The node at `pointer`, which the fixture must have.
fn node<'a>(tree: &'a mut Value, pointer: &str) -> &'a mut Value {
    let node = tree.pointer_mut(pointer);
    node.unwrap_or_else(|| panic!("the fixture has no {pointer}"))
}

/// The first level of a PoSt vanilla proof's first Merkle path.
const LEVEL: &str = "/vanilla_proof/sectors/0/inclusion_proofs/0/data/Single/path/path/0";

/// What the fuzz tests found filecoin's verifiers panic on, each refused naming its field: as
/// malformed (the panic caught), or earlier for a reason of its own (printed).
#[test]
fn the_malformed_proofs_the_fuzzer_found_are_refused_by_name() {
    /// An input, the field its refusal must name, whether filecoin panics on it, and its
    /// decoding.
    struct Case(
        String,
        &'static str,
        bool,
        Box<dyn FnOnce() -> Result<(), FilecoinError>>,
    );
    /// A change to a PoSt vanilla proof's JSON tree.
    type Change = fn(&mut Value);
    let post = |what: String, kind, change: Change| {
        let decode = move || decode_post(&changed_post(kind, change));
        Case(what, "vanilla_proofs", true, Box::new(decode))
    };
    let path_changes: [(&str, Change); 4] = [
        ("a path level with one sibling removed", |t| {
            let hashes = node(t, &format!("{LEVEL}/hashes")).as_array_mut().unwrap();
            hashes.remove(0);
        }),
        ("a path hash that is no field element", |t| {
            *node(t, &format!("{LEVEL}/hashes/0")) = Value::from(vec![0xffu8; 32]);
        }),
        ("a path level's index 9", |t| {
            *node(t, &format!("{LEVEL}/index")) = Value::from(9);
        }),
        ("no inclusion proofs", |t| {
            *node(t, "/vanilla_proof/sectors/0/inclusion_proofs") = Value::Array(vec![]);
        }),
    ];
    let mut cases = Vec::new();
    for (what, change) in path_changes {
        for kind in [PostKind::Winning, PostKind::Window] {
            cases.push(post(format!("{kind:?}: {what}"), kind, change));
        }
    }
    cases.push(post("Window: no sectors".into(), PostKind::Window, |t| {
        *node(t, "/vanilla_proof/sectors") = Value::Array(vec![]);
    }));
    cases.push(Case(
        "C1: a DRG parent's column one row short".into(),
        "vanilla_proofs",
        true,
        Box::new(|| {
            let mut c1 = fixture().c1_ffi.clone();
            let rows = "/vanilla_proofs/StackedDrg2KiBV1/0/0/replica_column_proofs/drg_parents/0/\
                        column/rows";
            node(&mut c1, rows).as_array_mut().unwrap().pop();
            decode_c1(&serde_json::to_vec(&c1).unwrap(), Some(fixture().proof))
        }),
    ));
    cases.push(Case(
        format!("Window: partition {MAX_PARTITIONS_PER_DEADLINE}"),
        "partition",
        false,
        Box::new(|| {
            let mut post = changed_post(PostKind::Window, |_| {});
            post.partition = MAX_PARTITIONS_PER_DEADLINE;
            decode_post(&post)
        }),
    ));

    let mut wrong = Vec::new();
    for Case(what, field, panics, decode) in cases {
        let verdict = match no_panic(std::slice::from_ref(&what), decode) {
            Err(panicked) => Err(panicked.to_string()),
            Ok(Ok(())) => Err("accepted".to_owned()),
            Ok(Err(e)) => match named(&e) {
                Err(why) => Err(why),
                Ok(_) if !e.to_string().contains(field) => Err(format!("{e} names no {field}")),
                Ok(_) if panics && e.to_string().contains("malformed") => {
                    Ok(format!("the panic caught: {e}"))
                }
                Ok(_) if panics => Ok(format!("refused earlier: {e}")),
                Ok(_) => Ok(e.to_string()),
            },
        };
        eprintln!("{what}: {verdict:?}");
        if let Err(why) = verdict {
            wrong.push(format!("{what}: {why}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
