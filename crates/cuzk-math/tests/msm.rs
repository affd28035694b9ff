#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use cuzk_math::msm::AffineCoordinates;
use cuzk_math::{msm, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

fn naive<A: PrimeCurveAffine<Scalar = Scalar>>(bases: &[A], scalars: &[Scalar]) -> A::Curve {
    bases
        .iter()
        .zip(scalars)
        .fold(A::Curve::identity(), |acc, (b, s)| acc + *b * s)
}

/// Random bases, with a few identities mixed in when asked.
fn bases<A: PrimeCurveAffine>(rng: &mut ChaCha8Rng, n: usize, identities: bool) -> Vec<A> {
    // Hashing to the curve is slow for G2, so most points are cheap
    // combinations of a few random ones.
    let seeds: Vec<A::Curve> = (0..8).map(|_| A::Curve::random(&mut *rng)).collect();
    let mut acc = A::Curve::random(&mut *rng);
    let proj: Vec<A::Curve> = (0..n)
        .map(|i| {
            acc = acc.double() + seeds[rng.gen_range(0..seeds.len())];
            if identities && i % 5 == 1 {
                A::Curve::identity()
            } else {
                acc
            }
        })
        .collect();
    let mut out = vec![A::identity(); n];
    A::Curve::batch_normalize(&proj, &mut out);
    out
}

/// Scalar patterns that exercise the special-casing and digit recoding.
fn scalar_cases(rng: &mut ChaCha8Rng, n: usize) -> Vec<(&'static str, Vec<Scalar>)> {
    let same = Scalar::random(&mut *rng);
    let mut gen = |f: &mut dyn FnMut(&mut ChaCha8Rng, usize) -> Scalar| -> Vec<Scalar> {
        (0..n).map(|i| f(rng, i)).collect()
    };
    vec![
        ("random", gen(&mut |r, _| Scalar::random(r))),
        ("zeros", gen(&mut |_, _| Scalar::ZERO)),
        ("ones", gen(&mut |_, _| Scalar::ONE)),
        ("minus ones", gen(&mut |_, _| -Scalar::ONE)),
        ("all equal", gen(&mut |_, _| same)),
        (
            "sparse",
            gen(&mut |r, _| {
                if r.gen_bool(0.1) {
                    Scalar::random(r)
                } else {
                    Scalar::ZERO
                }
            }),
        ),
        (
            "small",
            gen(&mut |r, _| Scalar::from(r.gen_range(0u64..1 << 16))),
        ),
        (
            "0/1/random mix",
            gen(&mut |r, _| match r.gen_range(0..10) {
                0..=4 => Scalar::ZERO,
                5..=8 => Scalar::ONE,
                _ => Scalar::random(r),
            }),
        ),
        (
            "2^k - 1 and 2^k",
            gen(&mut |r, i| {
                let p = Scalar::from(2u64).pow_vartime([r.gen_range(0u64..255)]);
                if i % 2 == 0 {
                    p - Scalar::ONE
                } else {
                    p
                }
            }),
        ),
        (
            "2 and -2",
            gen(&mut |_, i| {
                if i % 2 == 0 {
                    Scalar::from(2)
                } else {
                    -Scalar::from(2)
                }
            }),
        ),
    ]
}

fn check<A: AffineCoordinates<Scalar = Scalar>>(sizes: &[usize], full_cases_up_to: usize) {
    let (seed, mut rng) = common::rng();
    for &n in sizes {
        for identities in [false, true] {
            let b: Vec<A> = bases(&mut rng, n, identities);
            let cases = scalar_cases(&mut rng, n);
            let cases = if n <= full_cases_up_to {
                &cases[..]
            } else {
                &cases[..1]
            };
            for (name, scalars) in cases {
                assert_eq!(
                    msm(&b, scalars),
                    naive(&b, scalars),
                    "n {n}, identities {identities}, scalars {name}, seed {seed}"
                );
            }
        }
    }
}

const SIZES: &[usize] = &[
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 33, 63, 100, 255, 257, 1000,
];

#[test]
fn g1_matches_naive() {
    check::<G1Affine>(SIZES, 1000);
    check::<G1Affine>(&[4099], 4099);
}

#[test]
fn g2_matches_naive() {
    check::<G2Affine>(SIZES, 300);
    check::<G2Affine>(&[2049], 0);
}

/// The work split depends on the thread count; check it at both extremes.
#[test]
fn thread_counts() {
    let (seed, mut rng) = common::rng();
    let b: Vec<G1Affine> = bases(&mut rng, 3000, true);
    let cases = scalar_cases(&mut rng, 3000);
    for threads in [1, 2, 3, 16] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        for (name, scalars) in &cases {
            assert_eq!(
                pool.install(|| msm(&b, scalars)),
                naive(&b, scalars),
                "threads {threads}, scalars {name}, seed {seed}"
            );
        }
    }
}

#[test]
#[should_panic]
fn length_mismatch_panics() {
    let _ = msm(&[G1Affine::generator()], &[]);
}

/// Repeated and opposite bases make buckets meet their own points, the
/// doubling and cancellation cases of affine bucket additions.
#[test]
fn repeated_and_opposite_bases() {
    let (seed, mut rng) = common::rng();
    let p = G1Affine::from(G1Projective::random(&mut rng));
    let q = G2Affine::from(G2Projective::random(&mut rng));
    for n in [2, 3, 100, 4099] {
        let same = Scalar::random(&mut rng);
        let scalar_sets = [
            vec![same; n],
            (0..n).map(|_| Scalar::random(&mut rng)).collect::<Vec<_>>(),
            (0..n).map(|i| Scalar::from(2 + (i % 3) as u64)).collect(),
        ];
        for scalars in &scalar_sets {
            let repeated = vec![p; n];
            let opposite: Vec<G1Affine> = (0..n).map(|i| if i % 2 == 0 { p } else { -p }).collect();
            for b in [&repeated, &opposite] {
                assert_eq!(msm(b, scalars), naive(b, scalars), "n {n}, seed {seed}");
            }
            let g2: Vec<G2Affine> = (0..n).map(|i| if i % 3 == 0 { -q } else { q }).collect();
            assert_eq!(
                msm(&g2, scalars),
                naive(&g2, scalars),
                "g2 n {n}, seed {seed}"
            );
        }
    }
}
