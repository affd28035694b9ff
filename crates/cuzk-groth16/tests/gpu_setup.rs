//! Parameters multiplied out on the GPU are byte for byte the CPU's from the same toxic waste,
//! and prove; parameters left on the GPU prove there, with the same verifying key, and nowhere
//! else.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use cuzk_groth16::backend::{CpuBackend, GpuBackend};
use cuzk_groth16::setup::{
    generate_parameters_on, parameters_for_compiled, Multiplier, ToxicWaste,
};
use cuzk_groth16::{
    prove_finish, verify_proof, PreparedVerifyingKey, ProverBackend, Randomness, Unshared,
};
use cuzk_synth::circuits::SyntheticCircuit;
use cuzk_synth::CompiledR1cs;
use cuzk_synth::ProvingAssignment;

#[test]
fn gpu_made_parameters_equal_the_cpus_and_prove() {
    let Some(gpu) = common::gpu("gpu_made_parameters_equal_the_cpus_and_prove") else {
        return;
    };
    let mut rng = common::rng("gpu setup");
    for (constraints, inputs) in [(1 << 12, 3), (5000, 1), (1 << 16, 17)] {
        let circuit = SyntheticCircuit {
            constraints,
            boolean_fraction: 0.3,
            public_inputs: inputs,
            seed: constraints as u64,
        };
        let toxic = ToxicWaste::random(&mut rng);
        let cpu = generate_parameters_on(circuit.clone(), &toxic, &Multiplier::Cpu).unwrap();
        let on_gpu =
            generate_parameters_on(circuit.clone(), &toxic, &Multiplier::gpu(gpu.clone())).unwrap();
        assert!(
            cpu.to_bytes() == on_gpu.to_bytes(),
            "{constraints} constraints: the files differ"
        );

        let assignment = ProvingAssignment::synthesize(circuit.clone()).unwrap();
        let public: Vec<_> = assignment.input_assignment[1..].to_vec();
        let sums = CpuBackend.query_sums(&on_gpu, assignment).unwrap();
        let proof = prove_finish(&on_gpu.vk, &sums, Randomness::random(&mut rng));
        let pvk = PreparedVerifyingKey::new(&on_gpu.vk);
        assert!(verify_proof(&pvk, &proof, &public).unwrap());
    }
}

#[test]
fn parameters_left_on_the_gpu_prove_there_only() {
    let Some(gpu) = common::gpu("parameters_left_on_the_gpu_prove_there_only") else {
        return;
    };
    let backend = GpuBackend::with_gpu(gpu);
    let mut rng = common::rng("parameters on the device");
    for (constraints, inputs) in [(1 << 12, 3), (5000, 1), (1 << 16, 17)] {
        let circuit = SyntheticCircuit {
            constraints,
            boolean_fraction: 0.3,
            public_inputs: inputs,
            seed: constraints as u64,
        };
        let compiled = CompiledR1cs::record(circuit.clone()).unwrap();
        let toxic = ToxicWaste::random(&mut rng);
        let host = parameters_for_compiled(&compiled, &toxic, &Multiplier::Cpu).unwrap();
        let on_device = backend.parameters_on_device(&compiled, &toxic).unwrap();
        assert_eq!(
            on_device.vk, host.vk,
            "{constraints} constraints: verifying keys"
        );
        assert_eq!(on_device.lengths(), host.lengths());
        assert!(
            on_device.h.is_empty() && on_device.b_g2.is_empty(),
            "nothing on the host"
        );
        assert!(backend.resident(&on_device).is_some_and(|bytes| bytes > 0));

        let assignment = ProvingAssignment::synthesize(circuit.clone()).unwrap();
        let public: Vec<_> = assignment.input_assignment[1..].to_vec();
        let sums = backend
            .prove_start(&on_device, assignment.clone(), &Unshared)
            .unwrap()
            .sums;
        let proof = prove_finish(&on_device.vk, &sums, Randomness::random(&mut rng));
        let pvk = PreparedVerifyingKey::new(&host.vk);
        assert!(
            verify_proof(&pvk, &proof, &public).unwrap(),
            "{constraints} constraints"
        );

        let refused = CpuBackend.query_sums(&on_device, assignment).unwrap_err();
        assert!(refused.to_string().contains("stay there"), "{refused}");
        let unwritable = on_device.write(Vec::new()).unwrap_err();
        assert!(
            unwritable.to_string().contains("never leave"),
            "{unwritable}"
        );
    }
}
