//! A compiled R1CS's matrices times a witness on the GPU give the a, b and c of the compiled
//! evaluator on the host: what a proof needs to send only its witness to the device.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use cuzk_gpu::DeviceScalars;
use cuzk_groth16::backend::upload_matrices;
use cuzk_synth::circuits::SyntheticCircuit;
use cuzk_synth::CompiledR1cs;

#[test]
fn the_device_products_of_a_compiled_r1cs_equal_the_host_evaluators() {
    let Some(gpu) = common::gpu("the_device_products_of_a_compiled_r1cs_equal_the_host_evaluators")
    else {
        return;
    };
    let seed = cuzk_testkit::seed("gpu sparse products");
    for (constraints, fraction, inputs) in [(1000, 0.0, 1), (1 << 14, 0.9, 5), (1 << 17, 0.5, 33)] {
        let circuit = SyntheticCircuit {
            constraints,
            boolean_fraction: fraction,
            public_inputs: inputs,
            seed,
        };
        let compiled = CompiledR1cs::record(circuit.clone()).unwrap();
        let host = compiled.synthesize(circuit).unwrap();
        let sparse = upload_matrices(&gpu, &compiled).unwrap();
        let z = DeviceScalars::upload_concat(&gpu, &[&host.input_assignment, &host.aux_assignment])
            .unwrap();
        for (m, want) in [&host.a, &host.b, &host.c].into_iter().enumerate() {
            let mut out = DeviceScalars::zeros(&gpu, want.len()).unwrap();
            sparse.multiply(&gpu, m, &z, &mut out).unwrap();
            assert!(
                out.to_vec(&gpu).unwrap() == *want,
                "{constraints} constraints, matrix {m}"
            );
        }
    }
}
