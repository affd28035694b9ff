//! Helpers for tests and benchmarks: a random generator whose seed changes every run but is printed
//! (and can be pinned), and many distinct curve points made cheaply.
//!
//! Test-side only: no library crate may depend on it outside `[dev-dependencies]`, except the CLI's
//! benchmark command.
#![forbid(unsafe_code)]

use group::{Curve, Group};
use rand_chacha::ChaCha20Rng;
use rand_core::{OsRng, RngCore, SeedableRng};
use rayon::prelude::*;

/// `CUZK_TEST_SEED` or, without it, fresh entropy; printed with `test`'s name (libtest shows it
/// when the test fails) so the run can be replayed.
pub fn seed(test: &str) -> u64 {
    let seed = std::env::var("CUZK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| OsRng.next_u64());
    eprintln!("{test}: CUZK_TEST_SEED={seed}");
    seed
}

/// A generator seeded by [`seed`].
pub fn rng(test: &str) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed(test))
}

/// `n` distinct affine points at the cost of about one addition each: per chunk a random start,
/// then running sums of 64 random steps. Uniform enough for MSM inputs, far cheaper than `n`
/// random points.
pub fn distinct_points<P>(rng: &mut impl RngCore, n: usize) -> Vec<P::AffineRepr>
where
    P: Group + Curve + Send + Sync,
    P::AffineRepr: Send + Copy,
{
    const CHUNK: usize = 1 << 14;
    let steps: Vec<P> = (0..64).map(|_| P::random(&mut *rng)).collect();
    let starts: Vec<P> = (0..n.div_ceil(CHUNK))
        .map(|_| P::random(&mut *rng))
        .collect();
    let chunks: Vec<Vec<P::AffineRepr>> = starts
        .into_par_iter()
        .enumerate()
        .map(|(c, mut acc)| {
            let len = CHUNK.min(n - c * CHUNK);
            let projective: Vec<P> = (0..len)
                .map(|i| {
                    acc += steps[i % 64];
                    acc
                })
                .collect();
            let mut affine = vec![P::identity().to_affine(); len];
            P::batch_normalize(&projective, &mut affine);
            affine
        })
        .collect();
    chunks.concat()
}
