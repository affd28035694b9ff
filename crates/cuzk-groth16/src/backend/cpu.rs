//! The CPU backend: rayon-parallel NTTs and Pippenger MSMs from `cuzk-math`.

use cuzk_math::{msm, EvaluationDomain, Scalar};
use cuzk_synth::ProvingAssignment;
use ff::Field;
use rayon::prelude::*;

use crate::prover::checked_domain;
use crate::{DeviceLock, Parameters, ProveError, ProverBackend, QuerySums, Started};

/// Proves on the CPU threads of the current rayon pool.
///
/// On a shared "device" the whole computation is the locked region ([`Started::holding`]):
/// its host and its device are the same cores, so two overlapping proofs would only split them.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

/// The coefficients of H = (A·B − C)/Z, all but the top one (always zero): n − 1 of them.
pub fn quotient_coefficients(
    domain: &EvaluationDomain,
    mut a: Vec<Scalar>,
    mut b: Vec<Scalar>,
    mut c: Vec<Scalar>,
) -> Vec<Scalar> {
    let n = domain.size();
    let to_coset = |values: &mut Vec<Scalar>| {
        values.resize(n, Scalar::ZERO);
        domain.intt(values);
        domain.coset_ntt(values);
    };
    rayon::join(
        || to_coset(&mut a),
        || rayon::join(|| to_coset(&mut b), || to_coset(&mut c)),
    );
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .for_each(|((a, b), c)| *a = *a * b - c);
    drop((b, c));
    domain.divide_by_z_on_coset(&mut a);
    domain.coset_intt(&mut a);
    a.truncate(n - 1);
    a
}

/// The scalars of the variables selected by a density bitmap, in order.
fn select(values: &[Scalar], density: &cuzk_math::Bitmap) -> Vec<Scalar> {
    density.iter_ones().map(|i| values[i]).collect()
}

impl CpuBackend {
    /// The query sums of one synthesized circuit (the reference the other backends are tested
    /// against).
    pub fn query_sums(
        &self,
        params: &Parameters,
        mut assignment: ProvingAssignment,
    ) -> Result<QuerySums, ProveError> {
        if let Some(queries) = &params.placed {
            return Err(ProveError::Backend {
                backend: "cpu",
                reason: format!(
                    "the parameters' queries were made on {} and stay there: prove with its backend",
                    queries.place()
                ),
            });
        }
        let domain = checked_domain(params, &assignment)?;
        assignment.complete();
        let ProvingAssignment {
            input_assignment: inputs,
            aux_assignment: aux,
            a,
            b,
            c,
            a_aux_density,
            b_input_density,
            b_aux_density,
            deferred: _,
        } = assignment;

        let h = quotient_coefficients(&domain, a, b, c);
        let a_scalars: Vec<Scalar> = inputs
            .iter()
            .copied()
            .chain(select(&aux, &a_aux_density))
            .collect();
        let mut b_scalars = select(&inputs, &b_input_density);
        b_scalars.extend(select(&aux, &b_aux_density));

        Ok(QuerySums {
            h: msm(&params.h, &h),
            l: msm(&params.l, &aux),
            a: msm(&params.a, &a_scalars),
            b_g1: msm(&params.b_g1, &b_scalars),
            b_g2: msm(&params.b_g2, &b_scalars),
        })
    }
}

impl ProverBackend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        Started::holding(device, || self.query_sums(params, assignment))
    }
}

#[cfg(test)]
mod tests {
    use super::CpuBackend;
    use crate::setup::generate_random_parameters;
    use crate::ProverBackend;
    use cuzk_synth::circuits::SyntheticCircuit;
    use cuzk_synth::{CompiledR1cs, ProvingAssignment};

    /// The CPU holds no device memory: the residency calls report none and change nothing.
    #[test]
    fn residency_is_a_no_op_on_the_cpu() -> Result<(), Box<dyn std::error::Error>> {
        let circuit = SyntheticCircuit {
            constraints: 10,
            boolean_fraction: 0.5,
            public_inputs: 1,
            seed: 1,
        };
        let params = generate_random_parameters(circuit, &mut rand::thread_rng())?;
        let cpu = CpuBackend;
        assert_eq!(cpu.preload(&params, None)?, 0);
        assert_eq!(cpu.resident(&params), None);
        assert_eq!(cpu.evict(&params), 0);
        assert_eq!(cpu.device()?, None);
        Ok(())
    }

    /// An assignment whose products were left to the prover gives the same sums: the CPU computes
    /// them first.
    #[test]
    fn deferred_products_are_computed_on_the_host() -> Result<(), Box<dyn std::error::Error>> {
        let circuit = SyntheticCircuit {
            constraints: 300,
            boolean_fraction: 0.7,
            public_inputs: 2,
            seed: 7,
        };
        let params = generate_random_parameters(circuit.clone(), &mut rand::thread_rng())?;
        let compiled = std::sync::Arc::new(CompiledR1cs::record(circuit.clone())?);
        let deferred = compiled.witness(circuit.clone())?;
        assert!(deferred.a.is_empty());
        let whole = ProvingAssignment::synthesize(circuit)?;
        assert_eq!(
            CpuBackend.query_sums(&params, deferred)?,
            CpuBackend.query_sums(&params, whole)?
        );
        Ok(())
    }
}
