//! Verification: e(A, B) = e(α, β) · e(Σ xᵢ·ICᵢ, γ) · e(C, δ).

use cuzk_math::{Bls12, G1Affine, G1Projective, G2Prepared, Gt, Scalar};
use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use pairing::{MillerLoopResult, MultiMillerLoop};
use rand_core::RngCore;

use crate::{Proof, VerifyError, VerifyingKey};

/// A verifying key with its pairing-side work done once.
#[derive(Debug, Clone)]
pub struct PreparedVerifyingKey {
    alpha_g1_beta_g2: Gt,
    neg_gamma_g2: G2Prepared,
    neg_delta_g2: G2Prepared,
    ic: Vec<G1Affine>,
    /// IC₁… in the form blst's multi-exponentiation takes, converted once.
    input_bases: Vec<G1Projective>,
}

impl PreparedVerifyingKey {
    pub fn new(vk: &VerifyingKey) -> Self {
        PreparedVerifyingKey {
            alpha_g1_beta_g2: <Bls12 as pairing::Engine>::pairing(&vk.alpha_g1, &vk.beta_g2),
            neg_gamma_g2: G2Prepared::from(-vk.gamma_g2),
            neg_delta_g2: G2Prepared::from(-vk.delta_g2),
            ic: vk.ic.clone(),
            input_bases: vk.ic.iter().skip(1).map(G1Projective::from).collect(),
        }
    }

    /// Public inputs a proof takes (the constant one not counted).
    pub fn num_public_inputs(&self) -> usize {
        self.ic.len().saturating_sub(1)
    }

    /// IC₀ + Σ xᵢ·ICᵢ₊₁.
    fn input_point(&self, inputs: &[Scalar]) -> Result<G1Projective, VerifyError> {
        if inputs.len() + 1 != self.ic.len() {
            return Err(VerifyError::InputCount {
                expected: self.num_public_inputs(),
                got: inputs.len(),
            });
        }
        let first = G1Projective::from(self.ic[0]);
        if inputs.is_empty() {
            return Ok(first);
        }
        // One Pippenger instead of a scalar multiplication per input: a WinningPoSt's 130-odd
        // inputs took 16 ms one by one, most of its proof's epilogue.
        Ok(first + G1Projective::multi_exp(&self.input_bases, inputs))
    }
}

/// Checks one proof. `Ok(false)` is a proof that does not verify; `Err` a wrong input count.
pub fn verify_proof(
    pvk: &PreparedVerifyingKey,
    proof: &Proof,
    public_inputs: &[Scalar],
) -> Result<bool, VerifyError> {
    let acc = pvk.input_point(public_inputs)?.to_affine();
    let b = G2Prepared::from(proof.b);
    let product = Bls12::multi_miller_loop(&[
        (&proof.a, &b),
        (&acc, &pvk.neg_gamma_g2),
        (&proof.c, &pvk.neg_delta_g2),
    ])
    .final_exponentiation();
    Ok(product == pvk.alpha_g1_beta_g2)
}

/// Checks many proofs of one key with one final exponentiation: each proof's equation is raised to
/// a random 128-bit ρᵢ and the products compared, so a batch with a bad proof passes only with
/// probability ~2⁻¹²⁸.
pub fn verify_proofs_batch<R: RngCore>(
    pvk: &PreparedVerifyingKey,
    rng: &mut R,
    proofs: &[Proof],
    public_inputs: &[Vec<Scalar>],
) -> Result<bool, VerifyError> {
    if proofs.len() != public_inputs.len() {
        return Err(VerifyError::InputCount {
            expected: proofs.len(),
            got: public_inputs.len(),
        });
    }
    if proofs.is_empty() {
        return Ok(true);
    }
    let mut rho_sum = Scalar::ZERO;
    let mut acc_inputs = G1Projective::identity();
    let mut acc_c = G1Projective::identity();
    let mut scaled_a = Vec::with_capacity(proofs.len());
    let mut prepared_b = Vec::with_capacity(proofs.len());
    for (proof, inputs) in proofs.iter().zip(public_inputs) {
        let rho = Scalar::from_u128(u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64()));
        rho_sum += rho;
        acc_inputs += pvk.input_point(inputs)? * rho;
        acc_c += proof.c * rho;
        scaled_a.push(G1Projective::from(proof.a) * rho);
        prepared_b.push(G2Prepared::from(proof.b));
    }
    let (acc_inputs, acc_c) = (acc_inputs.to_affine(), acc_c.to_affine());
    let mut scaled_a_affine = vec![G1Affine::identity(); scaled_a.len()];
    G1Projective::batch_normalize(&scaled_a, &mut scaled_a_affine);
    let scaled_a = scaled_a_affine;
    let mut terms: Vec<(&G1Affine, &G2Prepared)> = scaled_a.iter().zip(&prepared_b).collect();
    terms.push((&acc_inputs, &pvk.neg_gamma_g2));
    terms.push((&acc_c, &pvk.neg_delta_g2));
    let product = Bls12::multi_miller_loop(&terms).final_exponentiation();
    Ok(product == pvk.alpha_g1_beta_g2 * rho_sum)
}
