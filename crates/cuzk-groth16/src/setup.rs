//! Random parameters for tests and benchmarks.
//!
//! **Not a trusted setup**: the toxic waste exists in this process's memory, so anyone who can read
//! it can forge proofs. Use it to exercise and measure the prover, never for real proofs.
//!
//! Faster than bellperson's generator because every query point is a fixed-base multiplication of
//! the generator by a window table (on the CPU, or many at once on a GPU: [`Multiplier`]), and the
//! QAP evaluations at τ are one sparse pass over the recorded R1CS instead of per-variable lists.

use std::sync::Arc;

use bellpepper_core::Circuit;
use cuzk_math::{
    EvaluationDomain, FixedBaseTable, G1Affine, G1Projective, G2Affine, G2Projective, Scalar,
};
use cuzk_synth::{Column, CompiledR1cs, R1csShape, Term};
use ff::Field;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::keys::QueryLengths;
use crate::{Parameters, SetupError, VerifyingKey};

/// The secrets of a setup. Whoever knows them can forge proofs.
#[derive(Clone, Copy, Debug)]
pub struct ToxicWaste {
    pub tau: Scalar,
    pub alpha: Scalar,
    pub beta: Scalar,
    pub gamma: Scalar,
    pub delta: Scalar,
}

impl ToxicWaste {
    pub fn random(rng: &mut impl RngCore) -> Self {
        let mut nonzero = || loop {
            let x = Scalar::random(&mut *rng);
            if !bool::from(x.is_zero()) {
                return x;
            }
        };
        ToxicWaste {
            tau: nonzero(),
            alpha: nonzero(),
            beta: nonzero(),
            gamma: nonzero(),
            delta: nonzero(),
        }
    }
}

/// Parameters for `circuit` from fresh toxic waste (for tests and benchmarks only).
pub fn generate_random_parameters<C: Circuit<Scalar>>(
    circuit: C,
    rng: &mut impl RngCore,
) -> Result<Parameters, SetupError> {
    generate_parameters(circuit, &ToxicWaste::random(rng))
}

/// Parameters for `circuit` from the given toxic waste.
pub fn generate_parameters<C: Circuit<Scalar>>(
    circuit: C,
    toxic: &ToxicWaste,
) -> Result<Parameters, SetupError> {
    generate_parameters_on(circuit, toxic, &Multiplier::Cpu)
}

/// Parameters for `circuit` from the given toxic waste, multiplied out by `multiplier`.
pub fn generate_parameters_on<C: Circuit<Scalar>>(
    circuit: C,
    toxic: &ToxicWaste,
    multiplier: &Multiplier,
) -> Result<Parameters, SetupError> {
    parameters_for_shape(&R1csShape::record(circuit)?, toxic, multiplier)
}

/// Where the query points (millions of multiples of the two generators) are multiplied out. The
/// points are the same either way.
#[derive(Clone, Debug, Default)]
pub enum Multiplier {
    #[default]
    Cpu,
    /// On a device: a backend's (`Multiplier::gpu`, the GPU backend's).
    Device(Arc<dyn DeviceMultiplier>),
}

/// Fixed-base multiplications of many scalars at once on a device.
pub trait DeviceMultiplier: Send + Sync + std::fmt::Debug {
    /// `s · table's base` for every scalar, in order.
    fn g1(
        &self,
        table: &FixedBaseTable<G1Projective>,
        scalars: &[Scalar],
    ) -> Result<Vec<G1Affine>, SetupError>;
    /// The same in G2.
    fn g2(
        &self,
        table: &FixedBaseTable<G2Projective>,
        scalars: &[Scalar],
    ) -> Result<Vec<G2Affine>, SetupError>;
}

impl Multiplier {
    /// `s · base` for every scalar, in order, in G1.
    fn g1(
        &self,
        table: &FixedBaseTable<G1Projective>,
        scalars: &[Scalar],
    ) -> Result<Vec<G1Affine>, SetupError> {
        match self {
            Multiplier::Cpu => Ok(table.mul_many(scalars)),
            Multiplier::Device(device) => device.g1(table, scalars),
        }
    }

    /// The same in G2.
    fn g2(
        &self,
        table: &FixedBaseTable<G2Projective>,
        scalars: &[Scalar],
    ) -> Result<Vec<G2Affine>, SetupError> {
        match self {
            Multiplier::Cpu => Ok(table.mul_many(scalars)),
            Multiplier::Device(device) => device.g2(table, scalars),
        }
    }
}

/// Window size of a fixed-base table that will serve `count` multiplications: larger tables cost
/// more to build and fall out of cache, smaller ones cost more additions per multiplication.
fn window_bits(count: usize) -> usize {
    let log = (usize::BITS - count.leading_zeros()) as usize;
    log.saturating_sub(3).clamp(2, 12)
}

/// Σ coeff·L_row(τ) for every column of one matrix.
fn evaluate_columns(
    terms: &[Term],
    lagrange: &[Scalar],
    num_inputs: usize,
    columns: usize,
) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; columns];
    for term in terms {
        let column = match term.column {
            Column::Input(i) => i as usize,
            Column::Aux(i) => num_inputs + i as usize,
        };
        out[column] += term.coeff * lagrange[term.row as usize];
    }
    out
}

/// τ^i · factor for i in 0..count, in parallel chunks.
fn scaled_powers(tau: Scalar, factor: Scalar, count: usize) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 14;
    let mut out = vec![Scalar::ZERO; count];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut power = tau.pow_vartime([(k * CHUNK) as u64]) * factor;
            for value in chunk {
                *value = power;
                power *= tau;
            }
        });
    out
}

fn inverse(x: Scalar, name: &'static str) -> Result<Scalar, SetupError> {
    Option::from(x.invert()).ok_or(SetupError::ZeroSecret(name))
}

/// Parameters for a recorded R1CS, their points multiplied out by `multiplier`.
pub fn parameters_for_shape(
    shape: &R1csShape,
    toxic: &ToxicWaste,
    multiplier: &Multiplier,
) -> Result<Parameters, SetupError> {
    let (num_inputs, columns) = (shape.num_inputs, shape.num_inputs + shape.num_aux);
    let key = KeyScalars::new(shape.num_rows, num_inputs, toxic, |lagrange| {
        let (at, (bt, ct)) = rayon::join(
            || evaluate_columns(&shape.a, lagrange, num_inputs, columns),
            || {
                rayon::join(
                    || evaluate_columns(&shape.b, lagrange, num_inputs, columns),
                    || evaluate_columns(&shape.c, lagrange, num_inputs, columns),
                )
            },
        );
        [at, bt, ct]
    })?;
    with_points(key, multiplier)
}

/// Parameters for a compiled R1CS (the engine's cached form: 8 bytes per entry, where a recorded
/// shape holds 48, so a 32 GiB PoRep partition's fits in memory), the same as from its shape.
pub fn parameters_for_compiled(
    compiled: &CompiledR1cs,
    toxic: &ToxicWaste,
    multiplier: &Multiplier,
) -> Result<Parameters, SetupError> {
    with_points(KeyScalars::of_compiled(compiled, toxic)?, multiplier)
}

/// The parameters of `key`, their points multiplied out by `multiplier`.
pub(crate) fn with_points(
    key: KeyScalars,
    multiplier: &Multiplier,
) -> Result<Parameters, SetupError> {
    Ok(Parameters {
        attached: Default::default(),
        h: multiplier.g1(&key.g1, &key.h)?,
        l: multiplier.g1(&key.g1, key.l())?,
        a: multiplier.g1(&key.g1, &key.a)?,
        b_g1: multiplier.g1(&key.g1, &key.b)?,
        b_g2: multiplier.g2(&key.g2, &key.b)?,
        vk: key.vk,
        placed: None,
    })
}

/// A proving key before its points: the verifying key, the generators' tables and every query's
/// scalars.
pub(crate) struct KeyScalars {
    pub(crate) vk: VerifyingKey,
    pub(crate) g1: FixedBaseTable<G1Projective>,
    pub(crate) g2: FixedBaseTable<G2Projective>,
    pub(crate) h: Vec<Scalar>,
    /// IC's scalars (the inputs'), then L's: one vector, as they are computed alike.
    ic_l: Vec<Scalar>,
    num_inputs: usize,
    pub(crate) a: Vec<Scalar>,
    pub(crate) b: Vec<Scalar>,
}

impl KeyScalars {
    /// The scalars of a compiled R1CS's key.
    pub(crate) fn of_compiled(
        compiled: &CompiledR1cs,
        toxic: &ToxicWaste,
    ) -> Result<Self, SetupError> {
        KeyScalars::new(
            compiled.num_rows(),
            compiled.num_inputs(),
            toxic,
            |lagrange| compiled.weigh_columns(lagrange),
        )
    }

    /// The scalars of a circuit's key, from its sizes and `evaluate`, which gives the A, B and C
    /// columns (inputs, then aux) weighed by the Lagrange basis at τ.
    fn new(
        num_rows: usize,
        num_inputs: usize,
        toxic: &ToxicWaste,
        evaluate: impl FnOnce(&[Scalar]) -> [Vec<Scalar>; 3],
    ) -> Result<Self, SetupError> {
        let &ToxicWaste {
            tau,
            alpha,
            beta,
            gamma,
            delta,
        } = toxic;
        let domain = EvaluationDomain::new(num_rows)?;
        let lagrange = domain.lagrange_coefficients_at(&tau);
        let [at, bt, ct] = evaluate(&lagrange);
        drop(lagrange);
        let columns = at.len();

        let (gamma_inv, delta_inv) = (inverse(gamma, "gamma")?, inverse(delta, "delta")?);
        let mut ic_l: Vec<Scalar> = (0..columns)
            .into_par_iter()
            .map(|j| beta * at[j] + alpha * bt[j] + ct[j])
            .collect();
        let (ic, l) = ic_l.split_at_mut(num_inputs);
        ic.par_iter_mut().for_each(|x| *x *= gamma_inv);
        l.par_iter_mut().for_each(|x| *x *= delta_inv);
        if let Some(j) = l.iter().position(|x| bool::from(x.is_zero())) {
            return Err(SetupError::UnconstrainedVariable(j));
        }
        let h = scaled_powers(tau, domain.z_at(&tau) * delta_inv, domain.size() - 1);
        let nonzero = |values: &[Scalar]| -> Vec<Scalar> {
            values
                .iter()
                .copied()
                .filter(|x| !bool::from(x.is_zero()))
                .collect()
        };
        let (a, b) = (nonzero(&at), nonzero(&bt));
        drop((at, bt, ct));

        let g1_count = h.len() + columns + a.len() + b.len();
        let g1 = FixedBaseTable::new(G1Projective::generator(), window_bits(g1_count));
        let g2 = FixedBaseTable::new(G2Projective::generator(), window_bits(b.len()));
        let vk = VerifyingKey {
            alpha_g1: g1.mul(&alpha).to_affine(),
            beta_g1: g1.mul(&beta).to_affine(),
            beta_g2: g2.mul(&beta).to_affine(),
            gamma_g2: g2.mul(&gamma).to_affine(),
            delta_g1: g1.mul(&delta).to_affine(),
            delta_g2: g2.mul(&delta).to_affine(),
            ic: g1.mul_many(&ic_l[..num_inputs]),
        };
        Ok(KeyScalars {
            vk,
            g1,
            g2,
            h,
            ic_l,
            num_inputs,
            a,
            b,
        })
    }

    pub(crate) fn l(&self) -> &[Scalar] {
        &self.ic_l[self.num_inputs..]
    }

    /// How many points each query of the key holds.
    pub(crate) fn lengths(&self) -> QueryLengths {
        QueryLengths {
            h: self.h.len(),
            l: self.l().len(),
            a: self.a.len(),
            b_g1: self.b.len(),
            b_g2: self.b.len(),
        }
    }
}
