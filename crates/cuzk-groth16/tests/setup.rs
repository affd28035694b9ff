//! Setup from the compiled R1CS (the prover's cached form) gives byte for byte the parameters
//! setup from the recorded shape gives, for the same toxic waste.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use cuzk_groth16::setup::{parameters_for_compiled, parameters_for_shape, Multiplier, ToxicWaste};
use cuzk_synth::circuits::SyntheticCircuit;
use cuzk_synth::{CompiledR1cs, R1csShape};

#[test]
fn setup_from_the_compiled_r1cs_equals_setup_from_the_shape() {
    let mut rng = common::rng("compiled setup");
    for (constraints, boolean_fraction, public_inputs) in
        [(1000, 0.5, 2), (4096, 0.9, 17), (77, 0.0, 1)]
    {
        let circuit = SyntheticCircuit {
            constraints,
            boolean_fraction,
            public_inputs,
            seed: constraints as u64,
        };
        let toxic = ToxicWaste::random(&mut rng);
        let shape = R1csShape::record(circuit.clone()).unwrap();
        let compiled = CompiledR1cs::record(circuit).unwrap();
        let from_shape = parameters_for_shape(&shape, &toxic, &Multiplier::Cpu).unwrap();
        let from_compiled = parameters_for_compiled(&compiled, &toxic, &Multiplier::Cpu).unwrap();
        assert!(
            from_shape.to_bytes() == from_compiled.to_bytes(),
            "{constraints} constraints: the parameters differ"
        );
    }
}
