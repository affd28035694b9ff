//! Multi-threaded multi-scalar multiplication (Pippenger) over affine bases.
//!
//! Groth16 witnesses from hash circuits are mostly 0 and 1, so those scalars
//! are split off first: zeros cost nothing and ones are a plain sum. The rest
//! go through Pippenger with signed window digits, with the work cut into
//! (window, chunk of points) tasks so every thread has something to do.

use group::prime::PrimeCurveAffine;
use group::Group;
use rayon::prelude::*;

use crate::digits::{limbs, num_windows, signed_digit, Limbs};
use crate::{Bitmap, Scalar};

/// Largest window: beyond this the bucket arrays fall out of cache and their
/// memory per thread gets large, for little saving.
const MAX_WINDOW: usize = 16;

/// Points summed per task in plain (bitmap) sums.
const SUM_CHUNK_WORDS: usize = 64;

/// `sum_i scalars[i] * bases[i]`.
///
/// # Panics
/// If the slices differ in length (a caller bug).
pub fn msm<A>(bases: &[A], scalars: &[Scalar]) -> A::Curve
where
    A: PrimeCurveAffine<Scalar = Scalar>,
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
    A: PrimeCurveAffine,
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
            window_sum(bases, reprs, part, w, c)
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

/// `sum_i digit_w(i) * bases[i]` over `indices`, by buckets and running sums.
fn window_sum<A>(bases: &[A], reprs: &[Limbs], indices: &[usize], w: usize, c: usize) -> A::Curve
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
