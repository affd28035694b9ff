//! Radix-2 evaluation domains over the scalar field and the CPU NTTs on them.
//!
//! The transforms are iterative, in-place decimation-in-time butterflies after
//! a bit-reversal permutation, with the twiddles precomputed per call. Above a
//! cache-sized leaf the butterfly network is walked recursively: the two halves
//! are transformed independently (in parallel) while they still fit in cache,
//! then joined by one stage whose butterflies are split across threads.

use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::Scalar;

/// Sub-transforms of at most this many points run serially, all stages at
/// once, while they are resident in the L2 cache.
const LEAF: usize = 1 << 12;

/// Element-wise passes split their work into chunks of this many elements, so
/// each task is big enough to amortise scheduling.
const CHUNK: usize = 1 << 12;

/// Why a domain could not be built.
#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// The field's two-adic subgroup is too small for the request.
    #[error(
        "a domain of {requested} points is larger than 2^{max_log}, the largest \
         power-of-two domain this scalar field supports"
    )]
    TooLarge {
        /// The number of points asked for.
        requested: usize,
        /// The largest supported log2 of the domain size.
        max_log: u32,
    },
}

/// The multiplicative subgroup `{omega^i : 0 <= i < n}` for a power of two `n`,
/// plus the coset `g * omega^i` used to divide by the vanishing polynomial.
#[derive(Clone, Debug)]
pub struct EvaluationDomain {
    log_size: u32,
    omega: Scalar,
    omega_inv: Scalar,
    size_inv: Scalar,
    gen_inv: Scalar,
}

impl EvaluationDomain {
    /// The smallest power-of-two domain with at least `max(min_size, 1)` points.
    pub fn new(min_size: usize) -> Result<Self, DomainError> {
        let max_log = Scalar::S - 1;
        let too_large = DomainError::TooLarge {
            requested: min_size,
            max_log,
        };
        let log_size = match min_size.max(1).checked_next_power_of_two() {
            Some(n) if n.trailing_zeros() <= max_log => n.trailing_zeros(),
            _ => return Err(too_large),
        };
        // Squaring the 2^S-th root of unity down to a 2^log-th one is what
        // bellperson does, so constraint i lands on the same point omega^i.
        let mut omega = Scalar::ROOT_OF_UNITY;
        let mut omega_inv = Scalar::ROOT_OF_UNITY_INV;
        for _ in log_size..Scalar::S {
            omega = omega.square();
            omega_inv = omega_inv.square();
        }
        let mut size_inv = Scalar::ONE;
        for _ in 0..log_size {
            size_inv *= Scalar::TWO_INV;
        }
        Ok(Self {
            log_size,
            omega,
            omega_inv,
            size_inv,
            gen_inv: invert_nonzero(&Scalar::MULTIPLICATIVE_GENERATOR),
        })
    }

    /// Number of points `n`.
    pub fn size(&self) -> usize {
        1 << self.log_size
    }

    /// `log2(n)`.
    pub fn log_size(&self) -> u32 {
        self.log_size
    }

    /// The primitive `n`-th root of unity generating the domain.
    pub fn omega(&self) -> Scalar {
        self.omega
    }

    /// Coefficients to evaluations at `omega^i`, natural order in and out.
    pub fn ntt(&self, values: &mut [Scalar]) {
        self.check_len(values);
        transform(values, self.omega);
    }

    /// Evaluations at `omega^i` back to coefficients.
    pub fn intt(&self, values: &mut [Scalar]) {
        self.check_len(values);
        transform(values, self.omega_inv);
        scale(values, self.size_inv);
    }

    /// Coefficients to evaluations at `g * omega^i`, `g` the multiplicative
    /// generator (a coset on which the vanishing polynomial is non-zero).
    pub fn coset_ntt(&self, values: &mut [Scalar]) {
        self.check_len(values);
        mul_by_powers(values, Scalar::ONE, Scalar::MULTIPLICATIVE_GENERATOR);
        transform(values, self.omega);
    }

    /// Evaluations at `g * omega^i` back to coefficients.
    pub fn coset_intt(&self, values: &mut [Scalar]) {
        self.check_len(values);
        transform(values, self.omega_inv);
        // The 1/n of the inverse transform rides along with the g^-i scaling.
        mul_by_powers(values, self.size_inv, self.gen_inv);
    }

    /// The vanishing polynomial `x^n - 1` at `x`.
    pub fn z_at(&self, x: &Scalar) -> Scalar {
        x.pow_vartime([self.size() as u64]) - Scalar::ONE
    }

    /// Divides evaluations on the coset by the vanishing polynomial, which is
    /// the constant `g^n - 1` there.
    pub fn divide_by_z_on_coset(&self, values: &mut [Scalar]) {
        let z = self.z_at(&Scalar::MULTIPLICATIVE_GENERATOR);
        scale(values, invert_nonzero(&z));
    }

    /// The Lagrange basis polynomials of the domain evaluated at `tau`:
    /// `L_i(tau) = (tau^n - 1) / n * omega^i / (tau - omega^i)`.
    pub fn lagrange_coefficients_at(&self, tau: &Scalar) -> Vec<Scalar> {
        let n = self.size();
        let omegas = powers(self.omega, Scalar::ONE, n);
        let z = self.z_at(tau);
        if bool::from(z.is_zero()) {
            // tau = omega^k: the basis is the indicator of k.
            return omegas
                .par_iter()
                .map(|w| if w == tau { Scalar::ONE } else { Scalar::ZERO })
                .collect();
        }
        let mut denominators: Vec<Scalar> = omegas.par_iter().map(|w| *tau - w).collect();
        denominators.par_chunks_mut(CHUNK).for_each(batch_invert);
        let factor = z * self.size_inv;
        denominators
            .par_iter_mut()
            .zip(omegas.par_iter())
            .for_each(|(d, w)| *d *= factor * w);
        denominators
    }

    fn check_len(&self, values: &[Scalar]) {
        assert_eq!(
            values.len(),
            self.size(),
            "transform input must have exactly the domain size"
        );
    }
}

/// Inverse of a value the caller knows is non-zero.
fn invert_nonzero(x: &Scalar) -> Scalar {
    match Option::<Scalar>::from(x.invert()) {
        Some(inv) => inv,
        None => panic!("attempted to invert zero"),
    }
}

/// Montgomery's trick: one field inversion for a whole slice of non-zero values.
fn batch_invert(values: &mut [Scalar]) {
    let mut prefix = Vec::with_capacity(values.len());
    let mut acc = Scalar::ONE;
    for v in values.iter() {
        prefix.push(acc);
        acc *= v;
    }
    let mut inv = invert_nonzero(&acc);
    for (v, before) in values.iter_mut().zip(prefix).rev() {
        let next = inv * *v;
        *v = inv * before;
        inv = next;
    }
}

/// `[first * base^i for i in 0..n]`, computed in parallel chunks.
fn powers(base: Scalar, first: Scalar, n: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut cur = first * base.pow_vartime([(c * CHUNK) as u64]);
            for v in chunk {
                *v = cur;
                cur *= base;
            }
        });
    out
}

/// `values[i] *= first * base^i`.
fn mul_by_powers(values: &mut [Scalar], first: Scalar, base: Scalar) {
    values
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut cur = first * base.pow_vartime([(c * CHUNK) as u64]);
            for v in chunk {
                *v *= cur;
                cur *= base;
            }
        });
}

fn scale(values: &mut [Scalar], factor: Scalar) {
    values.par_iter_mut().for_each(|v| *v *= factor);
}

/// Twiddles for every stage: the stage joining blocks of `m` points uses
/// `table[m + j] = w_{2m}^j` for `j < m`, so each stage reads a contiguous run.
struct Twiddles {
    table: Vec<Scalar>,
}

impl Twiddles {
    fn new(omega: Scalar, n: usize) -> Self {
        let half = n / 2;
        let mut table = vec![Scalar::ZERO; half];
        table.extend(powers(omega, Scalar::ONE, half));
        // w_{2m}^j = w_{4m}^{2j}: each level is every other entry of the next.
        let mut m = half / 2;
        while m >= 1 {
            let (lower, upper) = table.split_at_mut(2 * m);
            for (j, t) in lower[m..].iter_mut().enumerate() {
                *t = upper[2 * j];
            }
            m /= 2;
        }
        Self { table }
    }

    fn level(&self, m: usize) -> &[Scalar] {
        &self.table[m..2 * m]
    }
}

/// Natural-order in, natural-order out DFT with root `omega`, unscaled.
fn transform(values: &mut [Scalar], omega: Scalar) {
    let n = values.len();
    if n <= 1 {
        return;
    }
    let twiddles = Twiddles::new(omega, n);
    bit_reverse(values);
    dit(values, &twiddles);
}

fn bit_reverse(values: &mut [Scalar]) {
    let n = values.len();
    let shift = usize::BITS - n.trailing_zeros();
    let rev = |i: usize| i.reverse_bits() >> shift;
    if n <= LEAF {
        for i in 0..n {
            let j = rev(i);
            if i < j {
                values.swap(i, j);
            }
        }
        return;
    }
    // In-place swaps are hard to split safely; gather into scratch instead.
    let gathered: Vec<Scalar> = (0..n).into_par_iter().map(|i| values[rev(i)]).collect();
    values
        .par_chunks_mut(CHUNK)
        .zip(gathered.par_chunks(CHUNK))
        .for_each(|(dst, src)| dst.copy_from_slice(src));
}

/// Decimation-in-time butterflies on bit-reversed input.
fn dit(values: &mut [Scalar], twiddles: &Twiddles) {
    let n = values.len();
    if n <= LEAF {
        dit_serial(values, twiddles);
        return;
    }
    let half = n / 2;
    let (lo, hi) = values.split_at_mut(half);
    rayon::join(|| dit(lo, twiddles), || dit(hi, twiddles));
    lo.par_chunks_mut(CHUNK)
        .zip(hi.par_chunks_mut(CHUNK))
        .zip(twiddles.level(half).par_chunks(CHUNK))
        .for_each(|((lo, hi), w)| butterflies(lo, hi, w));
}

fn dit_serial(values: &mut [Scalar], twiddles: &Twiddles) {
    // The first stage's only twiddle is 1.
    for pair in values.chunks_exact_mut(2) {
        let (a, b) = (pair[0], pair[1]);
        pair[0] = a + b;
        pair[1] = a - b;
    }
    let mut m = 2;
    while m < values.len() {
        let w = twiddles.level(m);
        for block in values.chunks_exact_mut(2 * m) {
            let (lo, hi) = block.split_at_mut(m);
            butterflies(lo, hi, w);
        }
        m *= 2;
    }
}

#[inline]
fn butterflies(lo: &mut [Scalar], hi: &mut [Scalar], w: &[Scalar]) {
    for ((a, b), w) in lo.iter_mut().zip(hi.iter_mut()).zip(w) {
        let t = *b * w;
        *b = *a - t;
        *a += t;
    }
}
