//! Multi-threaded multi-scalar multiplication (Pippenger) over affine bases.
//!
//! Groth16 witnesses from hash circuits are mostly 0 and 1, so those scalars
//! are split off first: zeros cost nothing and ones are a plain sum. The rest
//! go through Pippenger with signed window digits, with the work cut into
//! (window, chunk of points) tasks so every thread has something to do. Wide
//! windows keep their buckets affine and add into them in batches sharing one
//! inversion (about 1.3x faster than projective buckets here).

use blstrs::{Fp, Fp2};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

use crate::digits::{limbs, num_windows, signed_digit, Limbs};
use crate::{Bitmap, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

/// Largest window: beyond this the bucket arrays fall out of cache and their
/// memory per thread gets large, for little saving.
const MAX_WINDOW: usize = 16;

/// Below this window width there are too few buckets to fill batches of
/// affine additions without many collisions.
const MIN_BATCHED_WINDOW: usize = 9;

/// Batch sizes for affine additions: large enough to amortise the inversion,
/// small enough (relative to the bucket count) that few points collide.
const MIN_BATCH: usize = 32;
const MAX_BATCH: usize = 512;

/// Points summed per task in plain (bitmap) sums.
const SUM_CHUNK_WORDS: usize = 64;

/// Affine points whose coordinates can be read and rebuilt, so that MSM
/// buckets can use batched affine additions and batches of projective points
/// can share one inversion when normalised. Implemented for G1 and G2.
pub trait AffineCoordinates: PrimeCurveAffine {
    /// The coordinate field.
    type Base: Field;
    /// `(x, y)` of a point that is not the identity.
    fn coordinates(&self) -> (Self::Base, Self::Base);
    /// The point `(x, y)`, which must be on the curve and in the subgroup.
    fn from_coordinates(x: Self::Base, y: Self::Base) -> Self;
    /// Jacobian `(X, Y, Z)` of a projective point: `x = X/Z^2`, `y = Y/Z^3`.
    fn jacobian(p: &Self::Curve) -> (Self::Base, Self::Base, Self::Base);
}

/// blstrs exposes the same accessors on both groups, with their own coordinate field.
macro_rules! affine_coordinates {
    ($affine:ty, $projective:ty, $base:ty) => {
        impl AffineCoordinates for $affine {
            type Base = $base;
            fn coordinates(&self) -> ($base, $base) {
                (self.x(), self.y())
            }
            fn from_coordinates(x: $base, y: $base) -> Self {
                <$affine>::from_raw_unchecked(x, y, false)
            }
            fn jacobian(p: &$projective) -> ($base, $base, $base) {
                (p.x(), p.y(), p.z())
            }
        }
    };
}

affine_coordinates!(G1Affine, G1Projective, Fp);
affine_coordinates!(G2Affine, G2Projective, Fp2);

/// Converts `points` to affine into `out` with a single field inversion
/// (`group`'s default `batch_normalize`, which blstrs uses, inverts per point).
///
/// # Panics
/// If the slices differ in length.
pub(crate) fn batch_to_affine<A: AffineCoordinates>(points: &[A::Curve], out: &mut [A]) {
    assert_eq!(points.len(), out.len());
    let coords: Vec<_> = points.iter().map(A::jacobian).collect();
    let mut prefix = Vec::with_capacity(coords.len());
    let mut acc = A::Base::ONE;
    for (_, _, z) in &coords {
        prefix.push(acc);
        if !bool::from(z.is_zero()) {
            acc *= z;
        }
    }
    // A product of non-zero field elements is non-zero.
    let mut inv = match Option::<A::Base>::from(acc.invert()) {
        Some(inv) => inv,
        None => panic!("product of non-zero values inverted to nothing"),
    };
    for ((x, y, z), (before, o)) in coords.iter().zip(prefix.iter().zip(out.iter_mut())).rev() {
        if bool::from(z.is_zero()) {
            *o = A::identity();
            continue;
        }
        let z_inv = inv * before;
        inv *= z;
        let z_inv2 = z_inv.square();
        *o = A::from_coordinates(*x * z_inv2, *y * z_inv2 * z_inv);
    }
}

/// `sum_i scalars[i] * bases[i]`.
///
/// # Panics
/// If the slices differ in length (a caller bug).
pub fn msm<A>(bases: &[A], scalars: &[Scalar]) -> A::Curve
where
    A: AffineCoordinates<Scalar = Scalar>,
{
    assert_eq!(
        bases.len(),
        scalars.len(),
        "msm needs exactly one scalar per base"
    );
    let reprs: Vec<Limbs> = scalars.par_iter().map(limbs).collect();
    let ones = Bitmap::from_words(
        reprs
            .par_chunks(64)
            .map(|chunk| {
                chunk
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| **l == [1, 0, 0, 0])
                    .fold(0u64, |word, (bit, _)| word | 1 << bit)
            })
            .collect(),
        reprs.len(),
    );
    let others: Vec<usize> = (0..reprs.len())
        .into_par_iter()
        .filter(|&i| reprs[i] != [0; 4] && reprs[i] != [1, 0, 0, 0])
        .collect();
    let (ones_sum, rest) = rayon::join(
        || bitmap_sum(bases, &ones),
        || pippenger(bases, &reprs, &others),
    );
    ones_sum + rest
}

/// `sum of bases[i]` over the set bits `i` of `bits` (bits past the end of
/// `bases` are ignored).
pub fn bitmap_sum<A>(bases: &[A], bits: &Bitmap) -> A::Curve
where
    A: PrimeCurveAffine,
{
    bits.words()
        .par_chunks(SUM_CHUNK_WORDS)
        .enumerate()
        .map(|(chunk, words)| {
            let mut acc = A::Curve::identity();
            for (w, &word) in words.iter().enumerate() {
                let mut rest = word;
                while rest != 0 {
                    let i = (chunk * SUM_CHUNK_WORDS + w) * 64 + rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    match bases.get(i) {
                        Some(base) => acc += base,
                        None => return acc,
                    }
                }
            }
            acc
        })
        .reduce(A::Curve::identity, |a, b| a + b)
}

/// Pippenger over the scalars `reprs[i]` for `i` in `indices`.
fn pippenger<A>(bases: &[A], reprs: &[Limbs], indices: &[usize]) -> A::Curve
where
    A: AffineCoordinates,
{
    if indices.is_empty() {
        return A::Curve::identity();
    }
    let (c, chunks) = plan(indices.len(), rayon::current_num_threads());
    let windows = num_windows(c);
    let chunk_len = indices.len().div_ceil(chunks);
    let partial: Vec<A::Curve> = (0..windows * chunks)
        .into_par_iter()
        .map(|task| {
            let (w, k) = (task / chunks, task % chunks);
            let end = indices.len().min((k + 1) * chunk_len);
            let part = indices.get(k * chunk_len..end).unwrap_or(&[]);
            if c >= MIN_BATCHED_WINDOW {
                window_sum_batched(bases, reprs, part, w, c)
            } else {
                window_sum_projective(bases, reprs, part, w, c)
            }
        })
        .collect();
    // Horner over the windows, top first: acc = acc * 2^c + W_w.
    let mut acc = A::Curve::identity();
    for per_window in partial.chunks(chunks).rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        for p in per_window {
            acc += p;
        }
    }
    acc
}

/// `sum_i digit_w(i) * bases[i]` over `indices`, by buckets and running sums,
/// with projective buckets; cheaper than batching when there are few buckets.
fn window_sum_projective<A>(
    bases: &[A],
    reprs: &[Limbs],
    indices: &[usize],
    w: usize,
    c: usize,
) -> A::Curve
where
    A: PrimeCurveAffine,
{
    let mut buckets = vec![A::Curve::identity(); 1 << (c - 1)];
    for &i in indices {
        let d = signed_digit(&reprs[i], w, c);
        if d > 0 {
            buckets[d as usize - 1] += &bases[i];
        } else if d < 0 {
            buckets[d.unsigned_abs() as usize - 1] += &-bases[i];
        }
    }
    // sum_b b * B_b as the sum of the suffix sums B_top + ... + B_b.
    let mut running = A::Curve::identity();
    let mut sum = A::Curve::identity();
    for bucket in buckets.iter().rev() {
        running += bucket;
        sum += &running;
    }
    sum
}

/// Affine buckets filled by batched affine additions: each addition costs
/// about six field multiplications once a batch shares one inversion, against
/// eleven for a mixed projective addition. A point whose bucket already waits
/// in the current batch goes to a projective overflow bucket instead, so
/// skewed digits (all scalars equal, say) never degrade below the projective
/// method.
struct AffineBuckets<A: AffineCoordinates> {
    xy: Vec<(A::Base, A::Base)>,
    occupied: Vec<bool>,
    in_batch: Vec<bool>,
    overflow: Vec<A::Curve>,
    /// `(bucket, x, y)` additions waiting for the shared inversion.
    pending: Vec<(usize, A::Base, A::Base)>,
    prefix: Vec<A::Base>,
    batch: usize,
}

impl<A: AffineCoordinates> AffineBuckets<A> {
    fn new(buckets: usize) -> Self {
        let batch = (buckets / 8).clamp(MIN_BATCH, MAX_BATCH);
        Self {
            xy: vec![(A::Base::ZERO, A::Base::ZERO); buckets],
            occupied: vec![false; buckets],
            in_batch: vec![false; buckets],
            overflow: vec![A::Curve::identity(); buckets],
            pending: Vec::with_capacity(batch),
            prefix: Vec::with_capacity(batch),
            batch,
        }
    }

    /// Adds `point` (not the identity), negated when `negate`, to bucket `b`.
    fn add(&mut self, b: usize, point: &A, negate: bool) {
        if self.in_batch[b] {
            if negate {
                self.overflow[b] += &-*point;
            } else {
                self.overflow[b] += point;
            }
            return;
        }
        let (x, y) = point.coordinates();
        let y = if negate { -y } else { y };
        if !self.occupied[b] {
            self.xy[b] = (x, y);
            self.occupied[b] = true;
            return;
        }
        let (bx, by) = self.xy[b];
        if bx == x {
            // Same x: a doubling or a cancellation, too rare to batch.
            if by == y {
                let doubled = A::from_coordinates(x, y).to_curve().double().to_affine();
                self.xy[b] = doubled.coordinates();
            } else {
                self.occupied[b] = false;
            }
            return;
        }
        self.in_batch[b] = true;
        self.pending.push((b, x, y));
        if self.pending.len() == self.batch {
            self.flush();
        }
    }

    /// Performs the pending additions with one inversion (Montgomery's trick).
    fn flush(&mut self) {
        self.prefix.clear();
        let mut acc = A::Base::ONE;
        for &(b, x, _) in &self.pending {
            self.prefix.push(acc);
            acc *= x - self.xy[b].0;
        }
        // Every factor is non-zero: equal x coordinates never enter a batch.
        let mut inv = match Option::<A::Base>::from(acc.invert()) {
            Some(inv) => inv,
            None => panic!("batched affine addition with equal x coordinates"),
        };
        for (&(b, x, y), before) in self.pending.iter().zip(&self.prefix).rev() {
            let (bx, by) = self.xy[b];
            let dx = x - bx;
            let lambda = (y - by) * inv * before;
            inv *= dx;
            let x3 = lambda.square() - bx - x;
            let y3 = lambda * (bx - x3) - by;
            self.xy[b] = (x3, y3);
            self.in_batch[b] = false;
        }
        self.pending.clear();
    }

    /// `sum_b (b + 1) * bucket_b`, by running sums from the top bucket.
    fn weighted_sum(mut self) -> A::Curve {
        self.flush();
        let mut running = A::Curve::identity();
        let mut sum = A::Curve::identity();
        for b in (0..self.xy.len()).rev() {
            if self.occupied[b] {
                let (x, y) = self.xy[b];
                running += &A::from_coordinates(x, y);
            }
            running += &self.overflow[b];
            sum += &running;
        }
        sum
    }
}

/// [`window_sum_projective`] with batched affine buckets.
fn window_sum_batched<A>(
    bases: &[A],
    reprs: &[Limbs],
    indices: &[usize],
    w: usize,
    c: usize,
) -> A::Curve
where
    A: AffineCoordinates,
{
    let mut buckets = AffineBuckets::<A>::new(1 << (c - 1));
    for &i in indices {
        let d = signed_digit(&reprs[i], w, c);
        if d != 0 && !bool::from(bases[i].is_identity()) {
            buckets.add(d.unsigned_abs() as usize - 1, &bases[i], d < 0);
        }
    }
    buckets.weighted_sum()
}

/// Window width and number of point chunks for `m` scalars on `threads`
/// threads, minimising a simple cost model: each task does one mixed addition
/// per point plus about two full additions per bucket, and the tasks run in
/// rounds of `threads`.
fn plan(m: usize, threads: usize) -> (usize, usize) {
    let threads = threads.max(1);
    let mut best = (1, 1);
    let mut best_cost = f64::INFINITY;
    for c in 1..=MAX_WINDOW {
        let windows = num_windows(c);
        for chunks in 1..=(4 * threads).min(m) {
            let rounds = (windows * chunks).div_ceil(threads);
            let per_task = m.div_ceil(chunks) as f64 + 2.5 * (1u64 << (c - 1)) as f64;
            let cost = rounds as f64 * per_task;
            if cost < best_cost {
                best_cost = cost;
                best = (c, chunks);
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::plan;

    #[test]
    fn plan_is_sane() {
        for threads in [1, 2, 16] {
            for m in [1, 2, 10, 1000, 1 << 16, 1 << 22] {
                let (c, chunks) = plan(m, threads);
                assert!((1..=16).contains(&c) && chunks >= 1 && chunks <= m.max(1));
            }
        }
    }
}
