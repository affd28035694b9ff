//! The prover, split where the GPU's work ends.
//!
//! `prove_start` (a [`ProverBackend`]) computes H = (a∘b − c)/Z and the query sums Σ_H, Σ_L, Σ_A,
//! Σ_B in G1 and G2; `prove_finish` is the small CPU epilogue that adds the randomness:
//!
//! ```text
//! A = α + Σ_A + r·δ        B = β + Σ_B + s·δ (in G2)
//! C = s·A + r·B₁ − r·s·δ + Σ_H + Σ_L   where B₁ = β + Σ_B + s·δ in G1
//! ```

use bellpepper_core::Circuit;
use cuzk_math::{G1Projective, G2Projective, Scalar};
use cuzk_synth::ProvingAssignment;
use ff::Field;
use group::Curve;
use rand_core::RngCore;

use crate::{Parameters, Proof, ProveError, VerifyingKey};

/// The query sums: everything of a proof that depends on the witness but not on r and s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuerySums {
    /// Σ hᵢ·Hᵢ over the quotient's coefficients.
    pub h: G1Projective,
    /// Σ wⱼ·Lⱼ over the aux witness.
    pub l: G1Projective,
    /// Σ zⱼ·Aⱼ over inputs and A-dense aux.
    pub a: G1Projective,
    /// Σ zⱼ·Bⱼ in G1 over B-dense inputs and aux.
    pub b_g1: G1Projective,
    /// Σ zⱼ·Bⱼ in G2, same selection.
    pub b_g2: G2Projective,
}

/// The zero-knowledge randomness of one proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Randomness {
    pub r: Scalar,
    pub s: Scalar,
}

impl Randomness {
    pub fn random(rng: &mut impl RngCore) -> Self {
        Randomness {
            r: Scalar::random(&mut *rng),
            s: Scalar::random(&mut *rng),
        }
    }
}

/// The part of the prover a device can take: H and the MSMs of one synthesized circuit.
pub trait ProverBackend: Send + Sync {
    /// A short name for logs ("cpu", "cuda:0").
    fn name(&self) -> &str;

    /// Computes the query sums. Takes the assignment by value so a/b/c can be transformed in place.
    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
    ) -> Result<QuerySums, ProveError>;
}

/// Adds the randomness to the query sums.
pub fn prove_finish(vk: &VerifyingKey, sums: &QuerySums, randomness: Randomness) -> Proof {
    let Randomness { r, s } = randomness;
    let a = sums.a + vk.alpha_g1 + vk.delta_g1 * r;
    let b_g2 = sums.b_g2 + vk.beta_g2 + vk.delta_g2 * s;
    let b_g1 = sums.b_g1 + vk.beta_g1 + vk.delta_g1 * s;
    let c = a * s + b_g1 * r - vk.delta_g1 * (r * s) + sums.h + sums.l;
    Proof {
        a: a.to_affine(),
        b: b_g2.to_affine(),
        c: c.to_affine(),
    }
}

/// Synthesizes `circuit` and proves it with `backend` and fresh randomness.
pub fn prove<C: Circuit<Scalar>>(
    backend: &dyn ProverBackend,
    params: &Parameters,
    circuit: C,
    rng: &mut impl RngCore,
) -> Result<Proof, ProveError> {
    let assignment = ProvingAssignment::synthesize(circuit)?;
    let sums = backend.prove_start(params, assignment)?;
    Ok(prove_finish(&params.vk, &sums, Randomness::random(rng)))
}

/// Checks that `params` were made for the circuit behind `assignment`, before any heavy work.
pub fn check_params_fit(
    params: &Parameters,
    assignment: &ProvingAssignment,
    domain_size: usize,
) -> Result<(), ProveError> {
    let inputs = assignment.input_assignment.len();
    let b_dense = assignment.b_input_density.count_ones() + assignment.b_aux_density.count_ones();
    let checks = [
        ("vk.ic", params.vk.ic.len(), inputs),
        ("h", params.h.len(), domain_size - 1),
        ("l", params.l.len(), assignment.aux_assignment.len()),
        (
            "a",
            params.a.len(),
            inputs + assignment.a_aux_density.count_ones(),
        ),
        ("b_g1", params.b_g1.len(), b_dense),
        ("b_g2", params.b_g2.len(), b_dense),
    ];
    for (query, params, circuit) in checks {
        if params != circuit {
            return Err(ProveError::ParamsMismatch {
                query,
                params,
                circuit,
            });
        }
    }
    Ok(())
}
