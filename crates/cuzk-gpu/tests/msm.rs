//! GPU MSM agrees with the CPU MSM of cuzk-math on random inputs at many sizes and on edge cases.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_gpu::msm::{bitmap_sum, msm, DeviceBases, MsmAffine};
use cuzk_gpu::Gpu;
use ff::Field;
use group::prime::PrimeCurveAffine;
use rand_core::RngCore;

/// The scalar patterns of the edge cases, by name.
fn scalars(rng: &mut impl RngCore, kind: &str, n: usize) -> Vec<Scalar> {
    let random = |rng: &mut dyn RngCore| Scalar::random(rng);
    match kind {
        "random" => (0..n).map(|_| random(rng)).collect(),
        "zero" => vec![Scalar::ZERO; n],
        "one" => vec![Scalar::ONE; n],
        "minus_one" => vec![-Scalar::ONE; n],
        "equal" => vec![random(rng); n],
        "sparse" => (0..n)
            .map(|i| {
                if i % 97 == 0 {
                    random(rng)
                } else {
                    Scalar::ZERO
                }
            })
            .collect(),
        "small" => (0..n)
            .map(|_| Scalar::from(rng.next_u64() & 0xffff))
            .collect(),
        "boolean_mix" => (0..n)
            .map(|_| match rng.next_u32() % 4 {
                0 => Scalar::ZERO,
                1 | 2 => Scalar::ONE,
                _ => random(rng),
            })
            .collect(),
        other => panic!("unknown scalar kind {other}"),
    }
}

fn check<A>(gpu: &Gpu, rng: &mut impl RngCore, points: &[A], sizes: &[usize], kinds: &[&str])
where
    A: MsmAffine + cuzk_math::msm::AffineCoordinates<Scalar = Scalar> + Send + Sync,
    A::Projective: PartialEq + std::fmt::Debug + From<A::Curve>,
{
    let bases = DeviceBases::upload(gpu, points).unwrap();
    for &n in sizes {
        for kind in kinds {
            let s = scalars(rng, kind, n);
            let expect = cuzk_math::msm(&points[..n], &s);
            let got = msm(gpu, &bases, &s).unwrap();
            assert_eq!(got, A::Projective::from(expect), "n = {n}, scalars {kind}");
        }
    }
}

/// Bitmap sums at awkward lengths and densities, against cuzk-math's.
fn check_bitmap_sums<A>(gpu: &Gpu, rng: &mut impl RngCore, points: &[A])
where
    A: MsmAffine + cuzk_math::msm::AffineCoordinates<Scalar = Scalar> + Send + Sync,
    A::Projective: PartialEq + std::fmt::Debug + From<A::Curve>,
{
    let bases = DeviceBases::upload(gpu, points).unwrap();
    let max = points.len();
    for n in [0, 1, 31, 32, 33, 63, 64, 65, 1000, 4097, max]
        .into_iter()
        .filter(|&n| n <= max)
    {
        for density in [0u32, 1, 50, 99, 100] {
            let mut bits = cuzk_math::Bitmap::new();
            for _ in 0..n {
                bits.push(rng.next_u32() % 100 < density);
            }
            let expect = cuzk_math::bitmap_sum(&points[..n], &bits);
            let got = bitmap_sum(gpu, &bases, bits.words(), n).unwrap();
            assert_eq!(got, A::Projective::from(expect), "n = {n}, {density}% set");
        }
    }
}

const EDGE_KINDS: [&str; 8] = [
    "random",
    "zero",
    "one",
    "minus_one",
    "equal",
    "sparse",
    "small",
    "boolean_mix",
];

#[test]
fn g1_msm_matches_cpu() {
    let Some(gpu) = common::gpu("g1_msm_matches_cpu") else {
        return;
    };
    let mut rng = common::rng("g1_msm_matches_cpu");
    // Enough bases for the fixed edge sizes below, whatever CUZK_GPU_TEST_MAX_LOG says.
    let max = (1usize << common::max_log()).max(4097);
    let mut points = cuzk_testkit::distinct_points::<G1Projective>(&mut rng, max);
    points[5] = G1Affine::identity(); // an identity base
    check(
        &gpu,
        &mut rng,
        &points,
        &[0, 1, 2, 3, 7, 100, 1000, 4097],
        &EDGE_KINDS,
    );
    let powers: Vec<usize> = (4..=common::max_log()).map(|l| 1 << l).collect();
    check(&gpu, &mut rng, &points, &powers, &["random"]);
    check_bitmap_sums(&gpu, &mut rng, &points);
}

#[test]
fn g2_msm_matches_cpu() {
    let Some(gpu) = common::gpu("g2_msm_matches_cpu") else {
        return;
    };
    let mut rng = common::rng("g2_msm_matches_cpu");
    let max = (1usize << common::max_log().min(18)).max(1025);
    let mut points = cuzk_testkit::distinct_points::<G2Projective>(&mut rng, max);
    points[3] = G2Affine::identity();
    check(
        &gpu,
        &mut rng,
        &points,
        &[0, 1, 2, 5, 100, 1025],
        &EDGE_KINDS,
    );
    let powers: Vec<usize> = (4..=common::max_log().min(18))
        .step_by(2)
        .map(|l| 1 << l)
        .collect();
    check(&gpu, &mut rng, &points, &powers, &["random"]);
    check_bitmap_sums(&gpu, &mut rng, &points);
}
