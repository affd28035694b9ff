//! cuzk and bellperson 0.27 interoperate: parameters, proofs and verification, both ways.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test or bench should stop loudly

mod common;

use bellperson::groth16 as bp;
use blstrs::Bls12;
use common::{rng, synthetic, CubicCircuit};
use cuzk_groth16::backend::CpuBackend;
use cuzk_groth16::params_file::PointCheck;
use cuzk_groth16::setup::generate_random_parameters;
use cuzk_groth16::{
    prove, prove_finish, verify_proof, verify_proofs_batch, Parameters, PreparedVerifyingKey,
    Proof, Randomness,
};
use cuzk_math::Scalar;
use cuzk_synth::ProvingAssignment;
use ff::Field;

fn bp_params_bytes(params: &bp::Parameters<Bls12>) -> Vec<u8> {
    let mut bytes = Vec::new();
    params.write(&mut bytes).expect("write to Vec");
    bytes
}

fn bp_proof_bytes(proof: &bp::Proof<Bls12>) -> Vec<u8> {
    let mut bytes = Vec::new();
    proof.write(&mut bytes).expect("write to Vec");
    bytes
}

fn bp_verifies(params: &bp::Parameters<Bls12>, proof: &Proof, inputs: &[Scalar]) -> bool {
    let proof =
        bp::Proof::<Bls12>::read(&proof.to_bytes()[..]).expect("bellperson reads our proof");
    let pvk = bp::prepare_verifying_key(&params.vk);
    bp::verify_proof(&pvk, &proof, inputs).expect("bellperson verification runs")
}

fn cuzk_verifies(params: &Parameters, proof: &Proof, inputs: &[Scalar]) -> bool {
    verify_proof(&PreparedVerifyingKey::new(&params.vk), proof, inputs).expect("input count")
}

/// Each circuit with its public inputs.
fn circuits(rng: &mut impl rand_core::RngCore) -> Vec<(String, Box<dyn Fn() -> Case>)> {
    let x = Scalar::random(&mut *rng);
    let seed = rng.next_u64();
    vec![
        (
            "cubic".into(),
            Box::new(move || Case::Cubic(CubicCircuit { x })),
        ),
        (
            "synthetic, 50% boolean".into(),
            Box::new(move || Case::Synthetic(synthetic(700, 0.5, seed))),
        ),
        (
            "synthetic, no booleans".into(),
            Box::new(move || Case::Synthetic(synthetic(300, 0.0, seed))),
        ),
        (
            "synthetic, 95% boolean".into(),
            Box::new(move || Case::Synthetic(synthetic(1000, 0.95, seed))),
        ),
    ]
}

#[derive(Clone)]
enum Case {
    Cubic(CubicCircuit),
    Synthetic(cuzk_synth::circuits::SyntheticCircuit),
}

impl Case {
    fn inputs(&self) -> Vec<Scalar> {
        match self {
            Case::Cubic(c) => c.public_inputs(),
            Case::Synthetic(c) => c.public_input_values(),
        }
    }
}

impl bellpepper_core::Circuit<Scalar> for Case {
    fn synthesize<CS: bellpepper_core::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellpepper_core::SynthesisError> {
        match self {
            Case::Cubic(c) => c.synthesize(cs),
            Case::Synthetic(c) => c.synthesize(cs),
        }
    }
}

#[test]
fn bellperson_params_prove_in_cuzk_and_verify_in_bellperson() {
    let mut rng = rng("bellperson_params_prove_in_cuzk");
    for (name, make) in circuits(&mut rng) {
        let bp_params = bp::generate_random_parameters::<Bls12, _, _>(make(), &mut rng)
            .expect("bellperson setup");
        let bytes = bp_params_bytes(&bp_params);
        let params = Parameters::from_bytes(&bytes, PointCheck::Checked, "bellperson")
            .expect("cuzk reads bellperson params");
        assert_eq!(
            params.to_bytes(),
            bytes,
            "{name}: params round-trip byte for byte"
        );

        let inputs = make().inputs();
        let proof = prove(&CpuBackend, &params, make(), &mut rng).expect("cuzk proves");
        assert!(
            bp_verifies(&bp_params, &proof, &inputs),
            "{name}: bellperson accepts cuzk's proof"
        );
        assert!(
            cuzk_verifies(&params, &proof, &inputs),
            "{name}: cuzk accepts its proof"
        );
        let proof_bytes = proof.to_bytes();
        assert_eq!(
            Proof::from_bytes(&proof_bytes).expect("parse").to_bytes(),
            proof_bytes
        );

        let mut wrong = inputs.clone();
        wrong[0] += Scalar::ONE;
        assert!(
            !bp_verifies(&bp_params, &proof, &wrong),
            "{name}: bellperson rejects a wrong input"
        );
        assert!(
            !cuzk_verifies(&params, &proof, &wrong),
            "{name}: cuzk rejects a wrong input"
        );
    }
}

#[test]
fn cuzk_params_prove_in_bellperson_and_verify_in_cuzk() {
    let mut rng = rng("cuzk_params_prove_in_bellperson");
    for (name, make) in circuits(&mut rng) {
        let params = generate_random_parameters(make(), &mut rng).expect("cuzk setup");
        let bytes = params.to_bytes();
        let bp_params =
            bp::Parameters::<Bls12>::read(&bytes[..], true).expect("bellperson reads cuzk params");
        assert_eq!(
            bp_params_bytes(&bp_params),
            bytes,
            "{name}: bellperson writes back the same bytes"
        );

        let inputs = make().inputs();
        let bp_proof =
            bp::create_random_proof(make(), &bp_params, &mut rng).expect("bellperson proves");
        let proof =
            Proof::from_bytes(&bp_proof_bytes(&bp_proof)).expect("cuzk reads bellperson's proof");
        assert_eq!(proof.to_bytes().to_vec(), bp_proof_bytes(&bp_proof));
        assert!(
            cuzk_verifies(&params, &proof, &inputs),
            "{name}: cuzk accepts bellperson's proof"
        );

        let mut wrong = inputs.clone();
        *wrong.last_mut().expect("inputs") -= Scalar::ONE;
        assert!(
            !cuzk_verifies(&params, &proof, &wrong),
            "{name}: cuzk rejects a wrong input"
        );
        assert!(
            !bp_verifies(&bp_params, &proof, &wrong),
            "{name}: bellperson rejects a wrong input"
        );

        // And cuzk's own proof with cuzk's own parameters, checked by bellperson.
        let own = prove(&CpuBackend, &params, make(), &mut rng).expect("cuzk proves");
        assert!(
            bp_verifies(&bp_params, &own, &inputs),
            "{name}: bellperson accepts cuzk's proof"
        );
    }
}

#[test]
fn same_randomness_gives_bellpersons_exact_proof() {
    let mut rng = rng("same_randomness_gives_bellpersons_exact_proof");
    for (name, make) in circuits(&mut rng) {
        let params = generate_random_parameters(make(), &mut rng).expect("cuzk setup");
        let bp_params = bp::Parameters::<Bls12>::read(&params.to_bytes()[..], false).expect("read");
        let randomness = Randomness::random(&mut rng);
        let bp_proof = bp::create_proof(make(), &bp_params, randomness.r, randomness.s)
            .expect("bellperson proves");
        let sums = CpuBackend
            .query_sums(
                &params,
                ProvingAssignment::synthesize(make()).expect("synthesis"),
            )
            .expect("prove_start");
        let proof = prove_finish(&params.vk, &sums, randomness);
        assert_eq!(
            proof.to_bytes().to_vec(),
            bp_proof_bytes(&bp_proof),
            "{name}"
        );
    }
}

#[test]
fn batch_verification_accepts_good_batches_and_rejects_one_bad_proof() {
    let mut rng = rng("batch_verification");
    let seed = rand_core::RngCore::next_u64(&mut rng);
    let circuit = |k: u64| synthetic(200, 0.5, seed + k);
    let params = generate_random_parameters(circuit(0), &mut rng).expect("setup");
    let pvk = PreparedVerifyingKey::new(&params.vk);
    // Same shape, different seeds would be different circuits; so reuse the circuit, vary r and s.
    let proofs: Vec<Proof> = (0..4)
        .map(|_| prove(&CpuBackend, &params, circuit(0), &mut rng).expect("prove"))
        .collect();
    let inputs = vec![circuit(0).public_input_values(); proofs.len()];
    assert!(verify_proofs_batch(&pvk, &mut rng, &proofs, &inputs).expect("batch"));
    assert!(verify_proofs_batch(&pvk, &mut rng, &[], &[]).expect("empty batch"));

    let mut bad_inputs = inputs.clone();
    bad_inputs[2][1] += Scalar::ONE;
    assert!(!verify_proofs_batch(&pvk, &mut rng, &proofs, &bad_inputs).expect("batch"));

    let mut swapped = proofs.clone();
    swapped[1].c = proofs[0].a;
    assert!(!verify_proofs_batch(&pvk, &mut rng, &swapped, &inputs).expect("batch"));
    assert!(
        verify_proofs_batch(&pvk, &mut rng, &proofs, &inputs[..3]).is_err(),
        "count mismatch is an error"
    );
}
