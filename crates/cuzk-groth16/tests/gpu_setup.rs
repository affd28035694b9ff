//! Parameters multiplied out on the GPU are byte for byte the CPU's from the same toxic waste,
//! and prove.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use cuzk_groth16::backend::CpuBackend;
use cuzk_groth16::setup::{generate_parameters_on, Multiplier, ToxicWaste};
use cuzk_groth16::{prove_finish, verify_proof, PreparedVerifyingKey, ProverBackend, Randomness};
use cuzk_synth::circuits::SyntheticCircuit;
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
            generate_parameters_on(circuit.clone(), &toxic, &Multiplier::Gpu(gpu.clone())).unwrap();
        assert!(
            cpu.to_bytes() == on_gpu.to_bytes(),
            "{constraints} constraints: the files differ"
        );

        let assignment = ProvingAssignment::synthesize(circuit.clone()).unwrap();
        let public: Vec<_> = assignment.input_assignment[1..].to_vec();
        let sums = CpuBackend.prove_start(&on_gpu, assignment).unwrap();
        let proof = prove_finish(&on_gpu.vk, &sums, Randomness::random(&mut rng));
        let pvk = PreparedVerifyingKey::new(&on_gpu.vk);
        assert!(verify_proof(&pvk, &proof, &public).unwrap());
    }
}
