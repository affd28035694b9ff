//! Fixed-base scalar multiplication by precomputed window tables, used to
//! generate proving parameters (millions of multiples of one generator)
//! without a generic double-and-add per point.

use group::prime::{PrimeCurve, PrimeCurveAffine};
use group::Curve;
use rayon::prelude::*;

use crate::digits::{limbs, num_windows, signed_digit};
use crate::msm::{batch_to_affine, AffineCoordinates};
use crate::Scalar;

/// Widths above this make tables of hundreds of megabytes.
const MAX_WINDOW_BITS: usize = 20;

/// Scalars multiplied per task in `mul_many`; each chunk shares one batch
/// normalisation.
const MUL_CHUNK: usize = 1024;

/// Multiples of one base point: window `k` holds `d * 2^(w*k) * base` for
/// `1 <= d <= 2^(w-1)` (signed digits halve the table), stored affine so each
/// multiplication is about `256 / w` mixed additions and no doublings.
#[derive(Debug)]
pub struct FixedBaseTable<G: Curve> {
    window_bits: usize,
    windows: Vec<Vec<G::AffineRepr>>,
}

impl<G> FixedBaseTable<G>
where
    G: PrimeCurve<Scalar = Scalar>,
    G::Affine: AffineCoordinates,
{
    /// Tables for `base` with `window_bits`-wide windows (clamped to
    /// `1..=20`); memory is about `2^(w-1) * 256 / w` affine points.
    pub fn new(base: G, window_bits: usize) -> Self {
        let c = window_bits.clamp(1, MAX_WINDOW_BITS);
        let half = 1usize << (c - 1);
        let mut window_bases = Vec::with_capacity(num_windows(c));
        let mut b = base;
        for _ in 0..num_windows(c) {
            window_bases.push(b);
            for _ in 0..c {
                b = b.double();
            }
        }
        let windows = window_bases
            .into_par_iter()
            .map(|b| {
                let mut multiples = Vec::with_capacity(half);
                let mut acc = b;
                for _ in 0..half {
                    multiples.push(acc);
                    acc += b;
                }
                let mut affine = vec![G::Affine::identity(); half];
                batch_to_affine(&multiples, &mut affine);
                affine
            })
            .collect();
        Self {
            window_bits: c,
            windows,
        }
    }

    /// The window width c.
    pub fn window_bits(&self) -> usize {
        self.window_bits
    }

    /// Every entry, window by window: `d * 2^(c*w) * base` at `w * 2^(c-1) + d - 1` (the layout
    /// the GPU's fixed-base kernel reads).
    pub fn entries(&self) -> Vec<G::AffineRepr> {
        self.windows.concat()
    }

    /// The windows of the table (signed digits of every scalar below 2^255 fit).
    pub fn windows(&self) -> usize {
        self.windows.len()
    }

    /// `scalar * base`.
    pub fn mul(&self, scalar: &Scalar) -> G {
        let l = limbs(scalar);
        let mut acc = G::identity();
        for (w, table) in self.windows.iter().enumerate() {
            let d = signed_digit(&l, w, self.window_bits);
            let entry = d.unsigned_abs() as usize;
            if d > 0 {
                acc += &table[entry - 1];
            } else if d < 0 {
                acc += &-table[entry - 1];
            }
        }
        acc
    }

    /// `scalar * base` for every scalar, in order, as affine points.
    pub fn mul_many(&self, scalars: &[Scalar]) -> Vec<G::AffineRepr> {
        let mut out = vec![G::Affine::identity(); scalars.len()];
        out.par_chunks_mut(MUL_CHUNK)
            .zip(scalars.par_chunks(MUL_CHUNK))
            .for_each(|(out, scalars)| {
                let projective: Vec<G> = scalars.iter().map(|s| self.mul(s)).collect();
                batch_to_affine(&projective, out);
            });
        out
    }
}
