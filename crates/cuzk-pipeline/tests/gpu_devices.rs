//! The engine over several GPU backends: every GPU visible, or two backends on one GPU when it is
//! the only one. Partitions spread over them, and a device that fails (a real out-of-memory, or
//! an injected fault) loses no job. Skipped, saying why, without a GPU.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::Arc;

use cuzk_gpu::Lane;
use cuzk_groth16::backend::{Faults, FaultyBackend, GpuBackend};
use cuzk_groth16::setup::generate_random_parameters;
use cuzk_groth16::{verify_proof, Parameters, PreparedVerifyingKey, ProverBackend};
use cuzk_pipeline::sink::MemorySink;
use cuzk_pipeline::{DeviceActivity, Engine, EngineConfig, JobRequest, Partition};
use cuzk_synth::circuits::SyntheticCircuit;

const CONSTRAINTS: usize = 1 << 12;
const JOBS: usize = 6;
const PARTITIONS: usize = 4;

fn circuit() -> SyntheticCircuit {
    SyntheticCircuit {
        constraints: CONSTRAINTS,
        boolean_fraction: 0.5,
        public_inputs: 2,
        seed: 7,
    }
}

/// Two or more devices: one per GPU, or two on the only one. `None` after saying why the test
/// is skipped (to stderr, past libtest's capture).
fn gpus(test: &str) -> Option<Vec<Arc<Lane>>> {
    let found = match cuzk_gpu::probe() {
        Ok(found) => found,
        Err(why) => {
            let _ = writeln!(std::io::stderr(), "{test}: SKIPPED (no GPU: {why})");
            return None;
        }
    };
    let mut ordinals: Vec<usize> = found.iter().map(|d| d.ordinal).collect();
    if ordinals.len() == 1 {
        ordinals.push(ordinals[0]);
    }
    Some(
        ordinals
            .into_iter()
            .map(|o| Lane::new(o).unwrap())
            .collect(),
    )
}

/// Runs `JOBS` jobs of `PARTITIONS` partitions on `backends`, checks every proof, and returns
/// what each device did.
async fn prove_on(backends: Vec<Arc<dyn ProverBackend>>) -> Vec<DeviceActivity> {
    let mut rng = cuzk_testkit::rng("gpu devices params");
    let params: Arc<Parameters> =
        Arc::new(generate_random_parameters(circuit(), &mut rng).unwrap());
    let pvk = PreparedVerifyingKey::new(&params.vk);
    let inputs = circuit().public_input_values();
    let config = EngineConfig::new(4, 4 << 30);
    let engine = Engine::start(config, backends, Arc::new(MemorySink::default())).unwrap();
    let handles: Vec<_> = (0..JOBS)
        .map(|j| {
            let inputs = inputs.clone();
            engine.submit(JobRequest::new(
                format!("job{j}"),
                Arc::clone(&params),
                PARTITIONS,
                move |_| Partition {
                    circuit: circuit(),
                    public_inputs: inputs.clone(),
                },
            ))
        })
        .collect();
    for handle in handles {
        let output = handle.wait().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(output.proofs.len(), PARTITIONS);
        for proof in &output.proofs {
            assert!(verify_proof(&pvk, proof, &inputs).unwrap());
        }
    }
    engine.devices()
}

fn backend(gpu: &Arc<Lane>) -> Arc<dyn ProverBackend> {
    Arc::new(GpuBackend::with_gpu(Arc::clone(gpu)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_device_proves_a_share() {
    let Some(gpus) = gpus("every_device_proves_a_share") else {
        return;
    };
    let devices = prove_on(gpus.iter().map(backend).collect()).await;
    for device in &devices {
        assert!(device.partitions > 0, "{devices:?}");
        assert_eq!((device.faults, &device.out_of_service), (0, &None));
    }
    let total: u64 = devices.iter().map(|d| d.partitions).sum();
    assert_eq!(total, (JOBS * PARTITIONS) as u64);
}

/// The last device can use 1 MiB of its memory: each of its proofs fails with a real
/// out-of-memory error, is retried on another device, and the device goes out of service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_out_of_memory_loses_no_job() {
    let Some(gpus) = gpus("a_device_out_of_memory_loses_no_job") else {
        return;
    };
    let starved = Lane::new(gpus[gpus.len() - 1].ordinal()).unwrap();
    starved.limit_memory(Some(1 << 20));
    let mut backends: Vec<_> = gpus[..gpus.len() - 1].iter().map(backend).collect();
    backends.push(backend(&starved));
    let devices = prove_on(backends).await;
    let last = devices.last().unwrap();
    assert_eq!(last.partitions, 0, "{devices:?}");
    let reason = last
        .out_of_service
        .as_deref()
        .unwrap_or_else(|| panic!("{devices:?}"));
    assert!(reason.contains("device memory"), "{reason}");
}

/// A device that dies after two proofs (an injected fault in front of a real GPU backend).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_that_dies_loses_no_job() {
    let Some(gpus) = gpus("a_device_that_dies_loses_no_job") else {
        return;
    };
    let mut backends: Vec<_> = gpus.iter().map(backend).collect();
    let last = backends.pop().unwrap();
    backends.push(Arc::new(FaultyBackend::new(last, Faults::From(2))));
    let devices = prove_on(backends).await;
    let dead = devices.last().unwrap();
    assert!(
        dead.partitions <= 2 && dead.out_of_service.is_some(),
        "{devices:?}"
    );
}
