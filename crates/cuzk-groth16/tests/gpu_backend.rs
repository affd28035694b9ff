//! The GPU backend gives the CPU backend's query sums (so, with the same r and s, the same proof)
//! for synthetic circuits of several sizes and boolean fractions and for a hand-written circuit,
//! with the proving key resident on the device (with or without its window multiples) or streamed
//! from host memory, and with a, b and c computed on the device from the witness; proving keys
//! placed ahead of their proofs, several at once, and evicted; proofs beside a region in progress.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use bellpepper_core::Circuit;
use bellperson::groth16 as bp;
use blstrs::Bls12;
use cuzk_groth16::backend::{CpuBackend, GpuBackend};
use cuzk_groth16::setup::generate_random_parameters;
use cuzk_groth16::{
    prove_finish, verify_proof, DeviceGuard, DeviceLock, Parameters, PreparedVerifyingKey, Proof,
    ProverBackend, Randomness, Started, Unshared,
};
use cuzk_math::Scalar;
use cuzk_synth::{CompiledR1cs, ProvingAssignment};

/// A backend on the first device, or `None` after printing why the test is skipped.
fn gpu_backend(test: &str) -> Option<GpuBackend> {
    match cuzk_gpu::Lane::first() {
        Ok(gpu) => Some(GpuBackend::with_gpu(gpu)),
        Err(why) => {
            // Past libtest's capture, so CI logs show the skip.
            let _ = writeln!(std::io::stderr(), "{test}: SKIPPED (no GPU: {why})");
            None
        }
    }
}

/// bellperson's verdict on a cuzk proof (its verifying key read from the front of our params file).
fn bellperson_verifies(params: &Parameters, proof: &Proof, inputs: &[Scalar]) -> bool {
    let vk = bp::VerifyingKey::<Bls12>::read(&params.to_bytes()[..]).unwrap();
    let proof = bp::Proof::<Bls12>::read(&proof.to_bytes()[..]).unwrap();
    bp::verify_proof(&bp::prepare_verifying_key(&vk), &proof, inputs).unwrap()
}

/// The GPU backend's stage metrics of a proof whose a, b and c came from the host, and of one
/// that left them to the device.
struct GpuStages {
    host_products: Vec<(&'static str, f64)>,
    device_products: Vec<(&'static str, f64)>,
}

/// Proves `circuit` on both backends; asserts equal sums and a verifying proof.
fn same_as_cpu<C: Circuit<Scalar> + Clone>(
    gpu: &GpuBackend,
    params: &Parameters,
    circuit: C,
    inputs: &[Scalar],
    what: &str,
) -> GpuStages {
    let synth = || ProvingAssignment::synthesize(circuit.clone()).unwrap();
    let cpu = CpuBackend.query_sums(params, synth()).unwrap();
    let started = gpu.prove_start(params, synth(), &Unshared).unwrap();
    assert_eq!(started.sums, cpu, "{what}: GPU and CPU query sums");
    // Again, with the proving key, query positions and staging buffer reused.
    let again = gpu.prove_start(params, synth(), &Unshared).unwrap();
    assert_eq!(again.sums, cpu, "{what}: second proof on the GPU");
    // With a, b and c left to the device: the witness and the compiled matrices alone.
    let compiled = Arc::new(CompiledR1cs::record(circuit.clone()).unwrap());
    let deferred = compiled.witness(circuit.clone()).unwrap();
    let on_device = gpu.prove_start(params, deferred, &Unshared).unwrap();
    assert_eq!(
        on_device.sums, cpu,
        "{what}: a, b and c computed on the GPU"
    );
    assert!(
        on_device.stages.iter().any(|m| m.key == "products_ms"),
        "{what}: the products were timed"
    );
    let mut rng = common::rng(what);
    let proof = prove_finish(&params.vk, &started.sums, Randomness::random(&mut rng));
    let pvk = PreparedVerifyingKey::new(&params.vk);
    assert!(
        verify_proof(&pvk, &proof, inputs).unwrap(),
        "{what}: proof verifies"
    );
    assert!(
        bellperson_verifies(params, &proof, inputs),
        "{what}: bellperson accepts it"
    );
    let pairs = |started: &Started| started.stages.iter().map(|m| (m.key, m.value)).collect();
    GpuStages {
        host_products: pairs(&started),
        device_products: pairs(&on_device),
    }
}

#[test]
fn gpu_proofs_match_cpu_proofs() {
    let Some(gpu) = gpu_backend("gpu_proofs_match_cpu_proofs") else {
        return;
    };
    let mut rng = common::rng("gpu_proofs_match_cpu_proofs");
    // Rows = constraints + public inputs + 1: full domains, one row past a power of two, odd sizes.
    for (constraints, boolean) in [
        (1, 0.0),
        (1000, 0.5),
        ((1 << 12) - 4, 0.0),
        ((1 << 12) - 3, 0.9),
        ((1 << 14) - 4, 0.5),
        ((1 << 16) - 4, 0.95),
        ((1 << 16) - 4, 0.5),
    ] {
        let circuit = common::synthetic(constraints, boolean, constraints as u64);
        let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
        let inputs = circuit.public_input_values();
        let what = format!("synthetic {constraints} constraints, {boolean} boolean");
        let stages = same_as_cpu(&gpu, &params, circuit, &inputs, &what).host_products;
        let keys: Vec<&str> = stages.iter().map(|(k, _)| *k).collect();
        for key in [
            "ntt_ms",
            "msm_h_ms",
            "msm_l_ms",
            "msm_a_ms",
            "msm_b_g1_ms",
            "msm_b_g2_ms",
            "h2d_bytes",
            "device_outside_pool_bytes",
        ] {
            assert!(
                keys.contains(&key),
                "{what}: stage {key} reported in {keys:?}"
            );
        }
        // Witnesses mostly of bits go up packed, and the proofs above say it unpacked right.
        let packed = stages.iter().find(|(k, _)| *k == "witness_packed");
        let expected = if boolean >= 0.9 { 1.0 } else { 0.0 };
        assert_eq!(packed.map(|s| s.1), Some(expected), "{what}: {stages:?}");
    }
    let circuit = common::CubicCircuit {
        x: Scalar::from(3u64),
    };
    let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
    let inputs = circuit.public_inputs();
    same_as_cpu(&gpu, &params, circuit, &inputs, "cubic circuit");
}

/// With no points allowed to stay on the device and its free memory capped, every query is
/// streamed from the parameters' host vectors (locked in place), the proof runs one step at a time
/// (H from two vectors, L from the witness itself) and the proofs are the same; with room for
/// some, those stay and the rest stream.
#[test]
fn streams_the_proving_key_when_memory_is_short() {
    let Ok(device) = cuzk_gpu::Lane::first() else {
        let _ = writeln!(
            std::io::stderr(),
            "streams_the_proving_key_when_memory_is_short: SKIPPED (no GPU)"
        );
        return;
    };
    let mut rng = common::rng("streams_the_proving_key_when_memory_is_short");
    let circuit = common::synthetic((1 << 16) - 4, 0.5, 7);
    let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
    let inputs = circuit.public_input_values();
    device.limit_memory(Some(cuzk_gpu::MEMORY_MARGIN + (512 << 20)));
    let gpu = GpuBackend::with_gpu(device.clone()).resident_points_up_to(0);
    let GpuStages {
        host_products: stages,
        device_products,
    } = same_as_cpu(&gpu, &params, circuit.clone(), &inputs, "capped memory");
    device.limit_memory(None);
    // No matrices resident either: they streamed from the R1CS's host memory.
    let streamed = device_products
        .iter()
        .find(|(k, _)| *k == "matrices_streamed");
    assert_eq!(streamed.map(|s| s.1), Some(1.0), "{device_products:?}");
    let stage = |key: &str| stages.iter().find(|(k, _)| *k == key).map(|s| s.1);
    assert_eq!(stage("srs_resident"), Some(0.0), "streamed: {stages:?}");
    assert_eq!(stage("srs_streamed_queries"), Some(5.0), "{stages:?}");
    assert_eq!(stage("msm_side_by_side"), Some(0.0), "{stages:?}");
    assert!(stage("h_two_vectors_ms").is_some(), "{stages:?}");
    // Each MSM's Pippenger passes are counted: at least one each.
    for query in ["h", "l", "a", "b_g1", "b_g2"] {
        let passes = stage(&format!("msm_{query}_passes"));
        assert!(passes.is_some_and(|p| p >= 1.0), "{query}: {stages:?}");
    }
    assert!(gpu
        .plan(&params)
        .is_some_and(|plan| plan.contains("streamed h l a b_g1 b_g2")));
    // Room for L's points only: L stays, the rest stream.
    let l_bytes = params.l.len() * std::mem::size_of::<cuzk_math::G1Affine>();
    let gpu = GpuBackend::with_gpu(device.clone()).resident_points_up_to(l_bytes);
    let stages = same_as_cpu(&gpu, &params, circuit, &inputs, "L resident").host_products;
    let stage = |key: &str| stages.iter().find(|(k, _)| *k == key).map(|s| s.1);
    assert_eq!(stage("srs_streamed_queries"), Some(4.0), "{stages:?}");
}

/// Every query streamed and the witness mostly bits: with a, b and c made on the device (the
/// witness there before H), the four queries of bits stream beside H's MSM and finish after it;
/// from the host's products (no witness before H) they run after it, alone. The same proofs.
#[test]
fn streams_the_queries_of_bits_beside_h() {
    let Some(gpu) = gpu_backend("streams_the_queries_of_bits_beside_h") else {
        return;
    };
    let mut rng = common::rng("streams_the_queries_of_bits_beside_h");
    let circuit = common::synthetic((1 << 17) - 4, 0.97, 11);
    let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
    let inputs = circuit.public_input_values();
    let gpu = gpu.resident_points_up_to(0);
    let GpuStages {
        host_products,
        device_products,
    } = same_as_cpu(&gpu, &params, circuit, &inputs, "bits beside H");
    let stage =
        |stages: &[(&str, f64)], key: &str| stages.iter().find(|(k, _)| *k == key).map(|s| s.1);
    assert_eq!(
        stage(&device_products, "msm_beside_queries"),
        Some(4.0),
        "{device_products:?}"
    );
    assert_eq!(
        stage(&host_products, "msm_beside_queries"),
        Some(0.0),
        "{host_products:?}"
    );
    for query in ["l", "a", "b_g1", "b_g2"] {
        let ms = stage(&device_products, &format!("msm_{query}_ms"));
        assert!(
            ms.is_some_and(|ms| ms > 0.0),
            "{query}: {device_products:?}"
        );
    }
    // What H's streamed passes and the queries beside them waited for their points: measured,
    // and within the MSMs' own device time.
    let time = |keys: &[&str]| -> f64 {
        keys.iter()
            .filter_map(|key| stage(&device_products, key))
            .sum()
    };
    let beside = ["msm_l_ms", "msm_a_ms", "msm_b_g1_ms", "msm_b_g2_ms"];
    for (key, within) in [
        ("msm_h_copy_wait_ms", time(&["msm_h_ms"])),
        ("msm_beside_copy_wait_ms", time(&beside)),
    ] {
        let ms = stage(&device_products, key);
        assert!(
            ms.is_some_and(|ms| (0.0..=within).contains(&ms)),
            "{key}: {device_products:?}"
        );
    }
    assert_eq!(
        stage(&host_products, "msm_beside_copy_wait_ms"),
        None,
        "nothing beside H: {host_products:?}"
    );
}

/// With the proving key placed with its window multiples (forced here at small sizes, where the
/// default leaves them off), every MSM's windows share buckets and the proofs are the same.
#[test]
fn proves_with_window_multiples() {
    let Some(gpu) = gpu_backend("proves_with_window_multiples") else {
        return;
    };
    let gpu = gpu.window_multiples_from(0);
    let mut rng = common::rng("proves_with_window_multiples");
    for (constraints, boolean) in [(1000, 0.5), ((1 << 14) - 4, 0.9), ((1 << 16) - 4, 0.0)] {
        let circuit = common::synthetic(constraints, boolean, constraints as u64);
        let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
        let inputs = circuit.public_input_values();
        let what = format!("window multiples, {constraints} constraints, {boolean} boolean");
        let stages = same_as_cpu(&gpu, &params, circuit, &inputs, &what).host_products;
        let bits = stages
            .iter()
            .find(|(k, _)| *k == "srs_window_bits")
            .map(|s| s.1);
        assert_eq!(
            bits,
            Some(19.0),
            "{what}: placed with 19-bit multiples: {stages:?}"
        );
    }
}

/// Bytes of a parameter set's query points (host and device layouts are the same).
fn point_bytes(params: &Parameters) -> u64 {
    let g1 = params.h.len() + params.l.len() + params.a.len() + params.b_g1.len();
    (g1 * std::mem::size_of::<cuzk_math::G1Affine>()
        + params.b_g2.len() * std::mem::size_of::<cuzk_math::G2Affine>()) as u64
}

/// Whether a proof's stages show its proving key placed (uploaded or pinned) during it.
fn placed_during(stages: &[(&'static str, f64)]) -> bool {
    stages.iter().any(|(k, _)| *k == "srs_place_ms")
}

/// A preloaded proving key is on the device before the first proof, which then places nothing.
#[test]
fn preloaded_set_proves_without_upload() {
    let Some(gpu) = gpu_backend("preloaded_set_proves_without_upload") else {
        return;
    };
    let mut rng = common::rng("preloaded_set_proves_without_upload");
    let circuit = common::synthetic((1 << 14) - 4, 0.5, 21);
    let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
    let inputs = circuit.public_input_values();
    assert_eq!(gpu.resident(&params), None, "nothing placed yet");
    let bytes = gpu.preload(&params, None).unwrap();
    assert_eq!(bytes, point_bytes(&params), "resident without multiples");
    assert_eq!(gpu.resident(&params), Some(bytes));
    let stages = same_as_cpu(&gpu, &params, circuit, &inputs, "preloaded").host_products;
    assert!(
        !placed_during(&stages),
        "no placement in the proof: {stages:?}"
    );
    assert_eq!(gpu.resident(&params), Some(bytes), "still resident");
    assert_eq!(
        gpu.preload(&params, None).unwrap(),
        bytes,
        "a second preload keeps it"
    );
}

/// Two parameter sets stay on the device together; proofs alternating between them place nothing.
#[test]
fn keeps_several_sets_resident() {
    let Some(gpu) = gpu_backend("keeps_several_sets_resident") else {
        return;
    };
    let mut rng = common::rng("keeps_several_sets_resident");
    let sets: Vec<_> = [((1 << 12) - 4, 0.9), ((1 << 14) - 4, 0.5)]
        .into_iter()
        .map(|(constraints, boolean)| {
            let circuit = common::synthetic(constraints, boolean, constraints as u64);
            let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
            (circuit, params)
        })
        .collect();
    let placed: Vec<u64> = sets
        .iter()
        .map(|(_, params)| gpu.preload(params, None).unwrap())
        .collect();
    for round in 0..2 {
        for (circuit, params) in &sets {
            let what = format!("round {round}, {} constraints", circuit.constraints);
            let inputs = circuit.public_input_values();
            let stages = same_as_cpu(&gpu, params, circuit.clone(), &inputs, &what).host_products;
            assert!(!placed_during(&stages), "{what}: no placement: {stages:?}");
            for (other, &other_bytes) in sets.iter().zip(&placed) {
                assert_eq!(
                    gpu.resident(&other.1),
                    Some(other_bytes),
                    "{what}: both resident"
                );
            }
        }
    }
}

/// A lock whose regions take turns; a holder with `beside` may also run beside them, as the
/// engine lets a CRITICAL partition do.
struct Turns<'a> {
    region: &'a Mutex<()>,
    beside: bool,
}

impl DeviceLock for Turns<'_> {
    fn acquire(&self) -> DeviceGuard<'_> {
        DeviceGuard::new(self.region.lock().unwrap())
    }

    fn acquire_beside(&self) -> Option<DeviceGuard<'_>> {
        self.beside.then(|| DeviceGuard::new(()))
    }

    fn may_go_beside(&self) -> bool {
        self.beside
    }
}

/// Whether a proof's stages say it ran beside the region.
fn ran_beside(started: &Started) -> bool {
    started
        .stages
        .iter()
        .any(|m| m.key == "beside" && m.value == 1.0)
}

/// A small circuit's proofs run beside a large one's regions once all they read is on the device
/// (its first proof places it, taking its turn), with a, b and c computed from the matrices of
/// both circuits, cached side by side; every sum is the CPU's.
#[test]
fn a_proof_beside_the_region_in_progress_matches_the_cpu() {
    let test = "a_proof_beside_the_region_in_progress_matches_the_cpu";
    let Some(gpu) = gpu_backend(test) else {
        return;
    };
    let mut rng = common::rng(test);
    let [large, small] =
        [((1 << 18) - 4, 0.9, 31), ((1 << 12) - 4, 0.5, 32)].map(|(constraints, boolean, seed)| {
            let circuit = common::synthetic(constraints, boolean, seed);
            let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
            let compiled = CompiledR1cs::record(circuit.clone()).unwrap();
            let assignment = ProvingAssignment::synthesize(circuit.clone()).unwrap();
            let cpu = CpuBackend.query_sums(&params, assignment).unwrap();
            (circuit, params, Arc::new(compiled), cpu)
        });
    let prove = |(circuit, params, compiled, cpu): &(
        cuzk_synth::circuits::SyntheticCircuit,
        Parameters,
        Arc<CompiledR1cs>,
        _,
    ),
                 lock: &Turns<'_>,
                 what: &str| {
        let witness = compiled.witness(circuit.clone()).unwrap();
        let started = gpu.prove_start(params, witness, lock).unwrap();
        assert_eq!(&started.sums, cpu, "{what}");
        ran_beside(&started)
    };
    let region = Mutex::new(());
    let critical = Turns {
        region: &region,
        beside: true,
    };
    let regular = Turns {
        region: &region,
        beside: false,
    };
    let placing = prove(&small, &critical, "the small circuit's first proof");
    assert!(
        !placing,
        "its first proof places what it reads, taking its turn"
    );
    let beside = std::thread::scope(|scope| {
        let large_proofs = scope.spawn(|| {
            for round in 0..4 {
                let what = format!("the large circuit, round {round}");
                assert!(!prove(&large, &regular, &what), "{what}: takes its turn");
            }
        });
        let beside = (0..8)
            .filter(|round| {
                prove(
                    &small,
                    &critical,
                    &format!("the small circuit, round {round}"),
                )
            })
            .count();
        large_proofs.join().unwrap();
        beside
    });
    assert_eq!(
        beside, 8,
        "every later proof of the small circuit ran beside"
    );
}

/// An evicted set is no longer resident; its next proof places it again and is still right.
#[test]
fn evicted_set_is_placed_again() {
    let Some(gpu) = gpu_backend("evicted_set_is_placed_again") else {
        return;
    };
    let mut rng = common::rng("evicted_set_is_placed_again");
    let circuit = common::synthetic((1 << 12) - 4, 0.5, 31);
    let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
    let inputs = circuit.public_input_values();
    let bytes = gpu.preload(&params, None).unwrap();
    assert_eq!(
        gpu.evict(&params),
        bytes,
        "evict releases what preload placed"
    );
    assert_eq!(gpu.resident(&params), None);
    assert_eq!(gpu.evict(&params), 0, "nothing left to evict");
    let stages = same_as_cpu(&gpu, &params, circuit, &inputs, "after eviction").host_products;
    assert!(placed_during(&stages), "placed again: {stages:?}");
    assert_eq!(gpu.resident(&params), Some(bytes));
}

/// A set resident on the device settles there: the settled key, without the host vectors,
/// proves as the host set did, even once the host set is gone; the device keeps its points for
/// as long as the settled key lives. A streamed set, or a CPU, settles nothing.
#[test]
fn a_resident_set_settles_on_the_device_without_its_host_copy() {
    let test = "a_resident_set_settles_on_the_device_without_its_host_copy";
    let Some(gpu) = gpu_backend(test) else {
        return;
    };
    let mut rng = common::rng(test);
    let circuit = common::synthetic((1 << 12) - 4, 0.5, 61);
    let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
    let inputs = circuit.public_input_values();
    assert!(gpu.settle(&params).is_none(), "nothing placed yet");
    assert!(
        CpuBackend.settle(&params).is_none(),
        "a CPU keeps no points"
    );
    let bytes = gpu.preload(&params, None).unwrap();
    let part = gpu.settle(&params).expect("every query resident");
    let settled = params.settled(vec![part]);
    assert!(
        settled.h.is_empty() && settled.b_g2.is_empty(),
        "no host vectors"
    );
    assert_eq!(settled.lengths(), params.lengths());
    assert!(gpu.settle(&settled).is_none(), "settled once");

    let synth = || ProvingAssignment::synthesize(circuit.clone()).unwrap();
    let cpu = CpuBackend.query_sums(&params, synth()).unwrap();
    let compiled = Arc::new(CompiledR1cs::record(circuit.clone()).unwrap());
    drop(params);
    let started = gpu.prove_start(&settled, synth(), &Unshared).unwrap();
    assert_eq!(started.sums, cpu, "settled: GPU and CPU query sums");
    let stages: Vec<_> = started.stages.iter().map(|m| (m.key, m.value)).collect();
    assert!(!placed_during(&stages), "nothing placed again: {stages:?}");
    let deferred = compiled.witness(circuit.clone()).unwrap();
    let on_device = gpu.prove_start(&settled, deferred, &Unshared).unwrap();
    assert_eq!(on_device.sums, cpu, "settled: a, b and c on the GPU");
    let proof = prove_finish(&settled.vk, &started.sums, Randomness::random(&mut rng));
    let pvk = PreparedVerifyingKey::new(&settled.vk);
    assert!(verify_proof(&pvk, &proof, &inputs).unwrap(), "verifies");

    assert_eq!(gpu.resident(&settled), Some(bytes));
    assert!(gpu.plan(&settled).is_some(), "its plan is the placed one");
    // Evicted from the backend, the points stay until the settled key goes.
    assert_eq!(gpu.evict(&settled), bytes, "what goes with the settled key");
    assert_eq!(gpu.resident(&settled), Some(bytes));
    let again = gpu.prove_start(&settled, synth(), &Unshared).unwrap();
    assert_eq!(again.sums, cpu, "still proves after the eviction");

    let streamed = GpuBackend::with_gpu(cuzk_gpu::Lane::first().unwrap()).resident_points_up_to(0);
    let other = generate_random_parameters(common::synthetic(1000, 0.5, 62), &mut rng).unwrap();
    assert_eq!(streamed.preload(&other, None).unwrap(), 0);
    assert!(
        streamed.settle(&other).is_none(),
        "streamed: read from the host"
    );
}

/// With window multiples, a set holds ⌈255/19⌉ = 14 times its points' memory, and says so.
#[test]
fn resident_bytes_count_window_multiples() {
    let Some(gpu) = gpu_backend("resident_bytes_count_window_multiples") else {
        return;
    };
    let gpu = gpu.window_multiples_from(0);
    let mut rng = common::rng("resident_bytes_count_window_multiples");
    let circuit = common::synthetic(1000, 0.5, 41);
    let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
    let inputs = circuit.public_input_values();
    let bytes = gpu.preload(&params, None).unwrap();
    assert_eq!(bytes, 14 * point_bytes(&params));
    assert_eq!(gpu.resident(&params), Some(bytes));
    let stages =
        same_as_cpu(&gpu, &params, circuit, &inputs, "preloaded with multiples").host_products;
    assert!(!placed_during(&stages), "no placement: {stages:?}");
    assert_eq!(gpu.evict(&params), bytes);
}

/// A set kept off the device is preloaded as streamed: not resident, 0 device bytes, and its
/// proofs stream it without placing it again; preloaded with its compiled R1CS, its matrices are
/// ready to stream too, and proofs that leave a, b and c to the device prepare nothing.
#[test]
fn preload_streams_when_memory_is_short() {
    let Ok(device) = cuzk_gpu::Lane::first() else {
        let _ = writeln!(
            std::io::stderr(),
            "preload_streams_when_memory_is_short: SKIPPED (no GPU)"
        );
        return;
    };
    let mut rng = common::rng("preload_streams_when_memory_is_short");
    let circuit = common::synthetic((1 << 16) - 4, 0.5, 51);
    let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
    let inputs = circuit.public_input_values();
    device.limit_memory(Some(cuzk_gpu::MEMORY_MARGIN + (512 << 20)));
    let gpu = GpuBackend::with_gpu(device.clone()).resident_points_up_to(0);
    let compiled = Arc::new(CompiledR1cs::record(circuit.clone()).unwrap());
    assert_eq!(gpu.preload(&params, Some(&compiled)).unwrap(), 0);
    assert_eq!(gpu.resident(&params), None);
    let stages = same_as_cpu(
        &gpu,
        &params,
        circuit.clone(),
        &inputs,
        "preloaded, streamed",
    )
    .host_products;
    // A proof leaving a, b and c to the device with the preloaded R1CS prepares no matrices.
    let deferred = compiled.witness(circuit.clone()).unwrap();
    let on_device = gpu.prove_start(&params, deferred, &Unshared).unwrap();
    device.limit_memory(None);
    let cpu = CpuBackend
        .query_sums(&params, ProvingAssignment::synthesize(circuit).unwrap())
        .unwrap();
    assert_eq!(on_device.sums, cpu, "products from preloaded matrices");
    let stage = |key: &str| {
        on_device
            .stages
            .iter()
            .find(|m| m.key == key)
            .map(|m| m.value)
    };
    assert_eq!(
        stage("matrices_streamed"),
        Some(1.0),
        "{:?}",
        on_device.stages
    );
    assert_eq!(stage("matrices_place_ms"), None, "{:?}", on_device.stages);
    assert!(
        !placed_during(&stages),
        "pinned once, by preload: {stages:?}"
    );
    let resident = stages.iter().find(|(k, _)| *k == "srs_resident");
    assert_eq!(resident.map(|s| s.1), Some(0.0), "streamed: {stages:?}");
    assert_eq!(gpu.evict(&params), 0, "no device bytes to release");
}

/// The backend names its device and the driver's memory figures.
#[test]
fn reports_its_device() {
    let Some(gpu) = gpu_backend("reports_its_device") else {
        return;
    };
    let status = gpu.device().unwrap().expect("a GPU backend has a device");
    assert_eq!(status.ordinal, 0);
    assert!(!status.name.is_empty());
    assert!(
        0 < status.free_bytes && status.free_bytes <= status.total_bytes,
        "{status:?}"
    );
}
