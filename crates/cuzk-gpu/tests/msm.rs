//! GPU MSM agrees with the CPU MSM of cuzk-math on random inputs at many sizes and on edge cases.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_gpu::layout::as_words;
use cuzk_gpu::msm::{
    bitmap_sum, msm, msm_device, msm_device_with, msm_streamed, msm_streamed_with, DeviceBases,
    MsmAffine, MsmScalars, PointBuffers, SplitMsm, ZeroOneScalars,
};
use cuzk_gpu::{DeviceIndex, DeviceScalars, HostLocked, Lane};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
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
        // A PoRep witness: 0/1 but for a few field elements, whose digits lie far apart among
        // otherwise empty buckets.
        "bits_few_large" => (0..n)
            .map(|i| match i % (n / 3).max(1) == 1 {
                true => random(rng),
                false => Scalar::from(rng.next_u32() as u64 & 1),
            })
            .collect(),
        // Most 0/1 and one in 16 a field element: a B query's witness, split into its ones and
        // the rest.
        "bits_some_large" => (0..n)
            .map(|i| match i % 16 == 5 {
                true => random(rng),
                false => Scalar::from(rng.next_u32() as u64 & 1),
            })
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

/// How a test puts its bases on the device: plain, or with their window multiples.
type Upload<A> = fn(&Lane, &[A]) -> Result<DeviceBases<A>, cuzk_gpu::GpuError>;

fn check<A>(gpu: &Lane, rng: &mut impl RngCore, points: &[A], sizes: &[usize], kinds: &[&str])
where
    A: MsmAffine + cuzk_math::msm::AffineCoordinates<Scalar = Scalar> + Send + Sync,
    A::Projective: PartialEq + std::fmt::Debug + From<A::Curve>,
{
    check_uploaded(gpu, rng, points, sizes, kinds, DeviceBases::upload);
}

fn check_uploaded<A>(
    gpu: &Lane,
    rng: &mut impl RngCore,
    points: &[A],
    sizes: &[usize],
    kinds: &[&str],
    upload: Upload<A>,
) where
    A: MsmAffine + cuzk_math::msm::AffineCoordinates<Scalar = Scalar> + Send + Sync,
    A::Projective: PartialEq + std::fmt::Debug + From<A::Curve>,
{
    let bases = upload(gpu, points).unwrap();
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
fn check_bitmap_sums<A>(gpu: &Lane, rng: &mut impl RngCore, points: &[A])
where
    A: MsmAffine + cuzk_math::msm::AffineCoordinates<Scalar = Scalar> + Send + Sync,
    A::Projective: PartialEq + std::fmt::Debug + From<A::Curve>,
{
    let max = points.len();
    let lengths = [0, 1, 31, 32, 33, 63, 64, 65, 1000, 4097, max];
    check_bitmap_sums_over(gpu, rng, points, &lengths, &[0, 1, 50, 99, 100]);
    // Past what one block of the window sums adds up (1024 threads' sums of 256 bits each).
    let long = cycled(points, 3 << 18 | 33);
    check_bitmap_sums_over(gpu, rng, &long, &[long.len()], &[50, 100]);
}

fn check_bitmap_sums_over<A>(
    gpu: &Lane,
    rng: &mut impl RngCore,
    points: &[A],
    lengths: &[usize],
    densities: &[u32],
) where
    A: MsmAffine + cuzk_math::msm::AffineCoordinates<Scalar = Scalar> + Send + Sync,
    A::Projective: PartialEq + std::fmt::Debug + From<A::Curve>,
{
    let bases = DeviceBases::upload(gpu, points).unwrap();
    for &n in lengths.iter().filter(|&&n| n <= points.len()) {
        for &density in densities {
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
    // Skewed scalars at the largest size: buckets of up to n entries, summed over several levels.
    let largest = [1 << common::max_log()];
    check(
        &gpu,
        &mut rng,
        &points,
        &largest,
        &["equal", "small", "boolean_mix", "bits_few_large"],
    );
    check_bitmap_sums(&gpu, &mut rng, &points);
}

/// Σ sᵢ·Pᵢ with Pᵢ = Q_(i mod m) equals Σⱼ (Σ_(i ≡ j) sᵢ)·Qⱼ: a check of one large MSM against a
/// CPU MSM of only m = `distinct.len()` points. Repeated bases also put a point twice, or with
/// its negation, into one bucket: the doubling and cancelling cases of every addition.
fn check_repeated_bases<A>(gpu: &Lane, rng: &mut impl RngCore, distinct: &[A], log: u32, kind: &str)
where
    A: MsmAffine + cuzk_math::msm::AffineCoordinates<Scalar = Scalar> + Send + Sync,
    A::Projective: PartialEq + std::fmt::Debug + From<A::Curve>,
{
    check_repeated_uploaded(gpu, rng, distinct, log, kind, DeviceBases::upload);
}

fn check_repeated_uploaded<A>(
    gpu: &Lane,
    rng: &mut impl RngCore,
    distinct: &[A],
    log: u32,
    kind: &str,
    upload: impl Fn(&Lane, &[A]) -> Result<DeviceBases<A>, cuzk_gpu::GpuError>,
) where
    A: MsmAffine + cuzk_math::msm::AffineCoordinates<Scalar = Scalar> + Send + Sync,
    A::Projective: PartialEq + std::fmt::Debug + From<A::Curve>,
{
    let n = 1usize << log;
    let points = cycled(distinct, n);
    let s = scalars(rng, kind, n);
    let expect = repeated_msm(distinct, &s);
    let bases = upload(gpu, &points).unwrap();
    assert_eq!(
        msm(gpu, &bases, &s).unwrap(),
        expect,
        "n = 2^{log}, scalars {kind}"
    );
}

/// Window multiples of the width and the bucket sets an MSM of this many bases gets by default.
fn default_multiples<A: MsmAffine>(
    gpu: &Lane,
    points: &[A],
) -> Result<DeviceBases<A>, cuzk_gpu::GpuError> {
    let bits = cuzk_gpu::msm::multiple_window_bits(points.len());
    DeviceBases::upload_with_window_multiples(gpu, points, bits)
}

/// One large MSM per group, in G1 also over window multiples (run with CUZK_GPU_TEST_MAX_LOG=26
/// for 2^26 in G1 — five sets of shared buckets — and 2^22 in G2).
#[test]
fn large_msm_matches_cpu_on_repeated_bases() {
    let Some(gpu) = common::gpu("large_msm_matches_cpu_on_repeated_bases") else {
        return;
    };
    let mut rng = common::rng("large_msm_matches_cpu_on_repeated_bases");
    let log = common::max_log();
    let g1 = cuzk_testkit::distinct_points::<G1Projective>(&mut rng, 1 << 14);
    check_repeated_bases(&gpu, &mut rng, &g1, log, "random");
    check_repeated_uploaded(&gpu, &mut rng, &g1, log, "random", default_multiples);
    let g2 = cuzk_testkit::distinct_points::<G2Projective>(&mut rng, 1 << 12);
    check_repeated_bases(&gpu, &mut rng, &g2, log.min(22), "random");
}

/// Sizes large enough for the batch-affine pair rounds, on few distinct bases, so that equal and
/// opposite points meet in their additions, and with skewed scalars.
#[test]
fn pair_rounds_match_cpu_on_repeated_bases() {
    let Some(gpu) = common::gpu("pair_rounds_match_cpu_on_repeated_bases") else {
        return;
    };
    let mut rng = common::rng("pair_rounds_match_cpu_on_repeated_bases");
    let mut g1 = cuzk_testkit::distinct_points::<G1Projective>(&mut rng, 1 << 10);
    g1[7] = G1Affine::identity();
    let g2 = cuzk_testkit::distinct_points::<G2Projective>(&mut rng, 1 << 8);
    for kind in [
        "random",
        "equal",
        "minus_one",
        "small",
        "sparse",
        "boolean_mix",
        "bits_few_large",
        "bits_some_large",
        "one",
        "zero",
    ] {
        check_repeated_bases(&gpu, &mut rng, &g1, 18, kind);
        check_repeated_bases(&gpu, &mut rng, &g1, 20, kind);
        check_repeated_bases(&gpu, &mut rng, &g2, 18, kind);
    }
}

/// Short of memory, a pass keeps its pair rounds with one group of windows in flight (2^20 G1
/// points in 1400 MB: passes of 2^19, groups of 16 windows; 2^18 G2 points: groups of 8), in
/// smaller passes (1000 MB), or none at all (700 MB: 2^20 G1 points without rounds): each agrees
/// with the CPU, on repeated bases and on witness-shaped scalars.
#[test]
fn pair_rounds_short_of_memory_match_cpu() {
    let Some(gpu) = common::gpu("pair_rounds_short_of_memory_match_cpu") else {
        return;
    };
    let mut rng = common::rng("pair_rounds_short_of_memory_match_cpu");
    let g1 = cuzk_testkit::distinct_points::<G1Projective>(&mut rng, 1 << 10);
    let g2 = cuzk_testkit::distinct_points::<G2Projective>(&mut rng, 1 << 8);
    for limit in [1400usize, 1000, 700] {
        for kind in ["random", "bits_few_large"] {
            let capped = |gpu: &Lane, points: &[G1Affine]| {
                let bases = DeviceBases::upload(gpu, points)?;
                gpu.limit_memory(Some(limit << 20));
                Ok(bases)
            };
            check_repeated_uploaded(&gpu, &mut rng, &g1, 20, kind, capped);
            gpu.limit_memory(None);
            let capped = |gpu: &Lane, points: &[G2Affine]| {
                let bases = DeviceBases::upload(gpu, points)?;
                gpu.limit_memory(Some(limit << 20));
                Ok(bases)
            };
            check_repeated_uploaded(&gpu, &mut rng, &g2, 18, kind, capped);
            gpu.limit_memory(None);
        }
    }
}

/// With free memory capped below one pass's needs, the MSM runs as several passes and still agrees;
/// with too little for the smallest pass it is refused with an out-of-memory error.
#[test]
fn msm_splits_when_memory_is_short() {
    let Some(gpu) = common::gpu("msm_splits_when_memory_is_short") else {
        return;
    };
    let mut rng = common::rng("msm_splits_when_memory_is_short");
    let n = 1 << 16;
    let points = cuzk_testkit::distinct_points::<G1Projective>(&mut rng, n);
    let bases = DeviceBases::upload(&gpu, &points).unwrap();
    let s = scalars(&mut rng, "random", n);
    let expect = cuzk_math::msm(&points, &s);
    let split = common::with_memory_limit(&gpu, Some(300 << 20), || msm(&gpu, &bases, &s));
    let refused = common::with_memory_limit(&gpu, Some(1 << 20), || msm(&gpu, &bases, &s));
    assert_eq!(split.unwrap(), expect);
    assert!(
        matches!(refused, Err(cuzk_gpu::GpuError::OutOfMemory { .. })),
        "{refused:?}"
    );
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

/// Points streamed from page-locked memory give the CPU's result, in one chunk and (with free
/// memory capped) in several double-buffered chunks.
#[test]
fn streamed_msm_matches_cpu() {
    let Some(gpu) = common::gpu("streamed_msm_matches_cpu") else {
        return;
    };
    let mut rng = common::rng("streamed_msm_matches_cpu");
    let n = 1 << 16;
    let g1 = cuzk_testkit::distinct_points::<G1Projective>(&mut rng, n);
    let g2 = cuzk_testkit::distinct_points::<G2Projective>(&mut rng, 1 << 10);
    // G1 from memory locked in place, G2 from pageable memory: both are streamed correctly.
    let locked = HostLocked::new(&gpu, &g1).unwrap();
    for (size, limit) in [(1, None), (1000, None), (n, None), (n, Some(300 << 20))] {
        let s = scalars(&mut rng, "random", size);
        let device = DeviceScalars::upload(&gpu, &s).unwrap();
        let got = common::with_memory_limit(&gpu, limit, || msm_streamed(&gpu, &g1, &device));
        assert_eq!(
            got.unwrap(),
            cuzk_math::msm(&g1[..size], &s),
            "G1 n = {size}, {limit:?}"
        );
    }
    let s = scalars(&mut rng, "boolean_mix", g2.len());
    let device = DeviceScalars::upload(&gpu, &s).unwrap();
    assert_eq!(
        msm_streamed(&gpu, &g2, &device).unwrap(),
        cuzk_math::msm(&g2, &s)
    );
    drop(locked);
}

/// Scalars mostly 0 or 1, their points streamed: the ones summed chunk by chunk and the others
/// gathered agree with the CPU, in one chunk and (memory capped) in several, G1 and G2.
#[test]
fn split_streamed_msm_matches_cpu() {
    let Some(gpu) = common::gpu("split_streamed_msm_matches_cpu") else {
        return;
    };
    let mut rng = common::rng("split_streamed_msm_matches_cpu");
    let g1 = cuzk_testkit::distinct_points::<G1Projective>(&mut rng, 1 << 10);
    let g2 = cuzk_testkit::distinct_points::<G2Projective>(&mut rng, 1 << 8);
    for kind in ["bits_some_large", "bits_few_large", "one"] {
        for limit in [None, Some(270 << 20)] {
            check_split_streamed(&gpu, &mut rng, &g1, 18, kind, limit);
            check_split_streamed(&gpu, &mut rng, &g2, 17, kind, limit);
        }
    }
}

/// As [`check_repeated_uploaded`], the points streamed from host memory with free memory capped
/// at `limit` while the MSM runs.
fn check_split_streamed<A>(
    gpu: &Lane,
    rng: &mut impl RngCore,
    distinct: &[A],
    log: u32,
    kind: &str,
    limit: Option<usize>,
) where
    A: MsmAffine + cuzk_math::msm::AffineCoordinates<Scalar = Scalar> + Send + Sync,
    A::Projective: PartialEq + std::fmt::Debug + From<A::Curve>,
{
    let n = 1usize << log;
    let points = cycled(distinct, n);
    let s = scalars(rng, kind, n);
    let expect = repeated_msm(distinct, &s);
    let device = DeviceScalars::upload(gpu, &s).unwrap();
    let got = common::with_memory_limit(gpu, limit, || msm_streamed(gpu, &points, &device));
    assert_eq!(
        got.unwrap(),
        expect,
        "n = 2^{log}, scalars {kind}, {limit:?}"
    );
}

/// A split MSM in its steps, as the queries beside H's MSM run one: classified on one lane (once
/// for G1 and G2, as B's), its points streamed on another through buffers made before (small, so
/// in many ranges; one buffer serving G1 then G2), summed on the first. Agrees with the CPU; finishing before every point is
/// taken, or streaming twice, is refused; dense scalars are not split.
#[test]
fn split_msm_in_steps_matches_cpu() {
    let Some(gpu) = common::gpu("split_msm_in_steps_matches_cpu") else {
        return;
    };
    let mut rng = common::rng("split_msm_in_steps_matches_cpu");
    let side = gpu.lane().unwrap();
    let g1 = cuzk_testkit::distinct_points::<G1Projective>(&mut rng, 1 << 10);
    let g2 = cuzk_testkit::distinct_points::<G2Projective>(&mut rng, 1 << 8);
    let mut buffers = PointBuffers::new(&side, 1 << 20).unwrap();
    for kind in ["bits_some_large", "bits_few_large", "one"] {
        check_split_in_steps(&gpu, &side, &mut buffers, &mut rng, (&g1, &g2), kind);
    }
    let n = 1 << 17;
    let dense = DeviceScalars::upload(&gpu, &scalars(&mut rng, "random", n)).unwrap();
    let split = SplitMsm::<G1Affine>::of(&gpu, &MsmScalars::all(&dense)).unwrap();
    assert!(split.is_none(), "dense scalars are not split");
    let bits = DeviceScalars::upload(&gpu, &scalars(&mut rng, "bits_few_large", n)).unwrap();
    let of = || {
        SplitMsm::<G1Affine>::of(&gpu, &MsmScalars::all(&bits))
            .unwrap()
            .unwrap()
    };
    assert!(of().finish(&gpu).is_err(), "finished with no point taken");
    let points = cycled(&g1, n);
    let mut twice = of();
    twice.stream(&side, &points, &mut buffers).unwrap();
    assert!(
        twice.stream(&side, &points, &mut buffers).is_err(),
        "streamed twice"
    );
    assert!(
        of().stream(&side, &points[..n - 1], &mut buffers).is_err(),
        "too few points"
    );
}

/// One classification of `kind` scalars, split over G1 and (shared) over G2 points, both streamed
/// through `buffers` on `side` and finished on `gpu`.
fn check_split_in_steps(
    gpu: &Lane,
    side: &Lane,
    buffers: &mut PointBuffers,
    rng: &mut impl RngCore,
    (g1, g2): (&[G1Affine], &[G2Affine]),
    kind: &str,
) {
    // Not a multiple of a buffer's points: the last range is shorter.
    let n = (1usize << 17) + 3 * 256 + 17;
    let s = scalars(rng, kind, n);
    let device = DeviceScalars::upload(gpu, &s).unwrap();
    let mut in_g1 = SplitMsm::<G1Affine>::of(gpu, &MsmScalars::all(&device))
        .unwrap()
        .unwrap_or_else(|| panic!("{kind}: split"));
    let mut in_g2 = in_g1.over::<G2Affine>(gpu).unwrap();
    drop(device);
    side.wait_for(gpu).unwrap();
    let (points_g1, points_g2) = (cycled(g1, n), cycled(g2, n));
    in_g1.stream(side, &points_g1, buffers).unwrap();
    in_g2.stream(side, &points_g2, buffers).unwrap();
    gpu.wait_for(side).unwrap();
    let g1_sum = in_g1.finish(gpu).unwrap();
    assert_eq!(g1_sum, repeated_msm(g1, &s), "{kind} in G1: n = {n}");
    let g2_sum = in_g2.finish(gpu).unwrap();
    assert_eq!(g2_sum, repeated_msm(g2, &s), "{kind} in G2: n = {n}");
}

/// Scalars read in place from a longer vector — through positions (a query's variables among the
/// witness) or past a prefix (L's, past the inputs) — give the MSM of the scalars they name, split
/// or not (each way forced, and as memory decides), resident or streamed.
#[test]
fn scalars_read_in_place_match_cpu() {
    let Some(gpu) = common::gpu("scalars_read_in_place_match_cpu") else {
        return;
    };
    let mut rng = common::rng("scalars_read_in_place_match_cpu");
    let distinct = cuzk_testkit::distinct_points::<G1Projective>(&mut rng, 1 << 10);
    let n = 1usize << 17;
    let points = cycled(&distinct, n);
    let bases = DeviceBases::upload(&gpu, &points).unwrap();
    for kind in ["bits_some_large", "random"] {
        // The witness: twice as long as the query; the query takes every other variable, from
        // the back, so positions are neither in order nor all.
        let witness = scalars(&mut rng, kind, 2 * n + 5);
        let positions: Vec<u32> = (0..n).map(|i| (2 * n + 4 - 2 * i) as u32).collect();
        let named: Vec<Scalar> = positions.iter().map(|&p| witness[p as usize]).collect();
        let device = DeviceScalars::upload(&gpu, &witness).unwrap();
        let index = DeviceIndex::upload(&gpu, &positions).unwrap();
        let indexed = MsmScalars::indexed(&device, &index).unwrap();
        let expect = repeated_msm(&distinct, &named);
        for zero_one in [ZeroOneScalars::Pippenger, ZeroOneScalars::Split] {
            assert_eq!(
                msm_device_with(&gpu, &bases, indexed, zero_one).unwrap(),
                expect,
                "{kind} by position, {zero_one:?}"
            );
        }
        for zero_one in [ZeroOneScalars::Pippenger, ZeroOneScalars::Split] {
            assert_eq!(
                msm_streamed_with(&gpu, &points, indexed, zero_one).unwrap(),
                expect,
                "{kind} by position, streamed, {zero_one:?}"
            );
        }
        // Past a prefix: the last n values.
        let after = MsmScalars::after(&device, n + 5).unwrap();
        let expect = repeated_msm(&distinct, &witness[n + 5..]);
        for zero_one in [ZeroOneScalars::Pippenger, ZeroOneScalars::Split] {
            assert_eq!(
                msm_device_with(&gpu, &bases, after, zero_one).unwrap(),
                expect,
                "{kind} past a prefix, {zero_one:?}"
            );
        }
        // Short of memory: the others' Pippenger passes sized to what is left.
        let short =
            common::with_memory_limit(&gpu, Some(300 << 20), || msm_device(&gpu, &bases, after));
        assert_eq!(
            short.unwrap(),
            expect,
            "{kind} past a prefix, short of memory"
        );
    }
}

/// n points, `distinct` over and over.
fn cycled<A: Copy>(distinct: &[A], n: usize) -> Vec<A> {
    (0..n).map(|i| distinct[i % distinct.len()]).collect()
}

/// Σ s_i·P_(i mod m) on the CPU, over the m distinct points: Σⱼ (Σ_(i ≡ j) sᵢ)·Pⱼ.
fn repeated_msm<A>(distinct: &[A], s: &[Scalar]) -> A::Projective
where
    A: MsmAffine + cuzk_math::msm::AffineCoordinates<Scalar = Scalar> + Send + Sync,
    A::Projective: From<A::Curve>,
{
    let mut folded = vec![Scalar::ZERO; distinct.len()];
    for (i, si) in s.iter().enumerate() {
        folded[i % distinct.len()] += si;
    }
    A::Projective::from(cuzk_math::msm(distinct, &folded))
}

/// The stored window multiples are 2^(c·w)·P for every window w, word for word as blst lays out
/// the affine points (the identity included).
fn check_window_multiples<P>(gpu: &Lane, rng: &mut impl RngCore, n: usize, bits: u32)
where
    P: Group + Curve + Send + Sync + From<P::AffineRepr>,
    P::AffineRepr: MsmAffine + PrimeCurveAffine + Send + Copy,
{
    let mut points = cuzk_testkit::distinct_points::<P>(rng, n);
    points[n / 2] = P::AffineRepr::identity();
    let bases = DeviceBases::upload_with_window_multiples(gpu, &points, bits).unwrap();
    assert_eq!(bases.multiple_window_bits(), Some(bits));
    assert_eq!(bases.len(), n);
    let words = gpu.stream().clone_dtoh(bases.words()).unwrap();
    let windows = 255u32.div_ceil(bits);
    let mut expect = Vec::with_capacity(n * windows as usize);
    let mut multiples: Vec<P> = points.iter().map(|&p| P::from(p)).collect();
    for _ in 0..windows {
        let mut affine = vec![P::AffineRepr::identity(); n];
        P::batch_normalize(&multiples, &mut affine);
        expect.extend(affine);
        for m in &mut multiples {
            for _ in 0..bits {
                *m = m.double();
            }
        }
    }
    assert_eq!(words, as_words(&expect), "n = {n}, {bits}-bit windows");
}

#[test]
fn window_multiples_match_cpu() {
    let Some(gpu) = common::gpu("window_multiples_match_cpu") else {
        return;
    };
    let mut rng = common::rng("window_multiples_match_cpu");
    for (n, bits) in [(1, 22), (2, 19), (257, 22), (257, 16), (100, 23)] {
        check_window_multiples::<G1Projective>(&gpu, &mut rng, n, bits);
        check_window_multiples::<G2Projective>(&gpu, &mut rng, n, bits);
    }
    assert!(DeviceBases::upload_with_window_multiples(&gpu, &[G1Affine::identity()], 24).is_err());
}

/// An upload with BITS-bit window multiples whose MSMs share SETS sets of buckets (0: the default
/// for their size, one at these sizes).
fn multiples<A: MsmAffine, const BITS: u32, const SETS: u32>(
    gpu: &Lane,
    points: &[A],
) -> Result<DeviceBases<A>, cuzk_gpu::GpuError> {
    Ok(
        DeviceBases::upload_with_window_multiples(gpu, points, BITS)?
            .with_bucket_sets((SETS != 0).then_some(SETS)),
    )
}

/// With window multiples the windows' digits go to shared sets of buckets (2^21 each for 22-bit
/// windows, 2^18 for 19): the same sums at edge sizes and scalars, with fewer scalars than bases
/// (entries then skip whole blocks of multiples), for one, two and five sets, and with pair rounds
/// over a shared set (2^19 points). (19 bits in five sets: 14 windows in sets of 3, 3, 3, 3, 2.)
#[test]
fn msm_with_window_multiples_matches_cpu() {
    let Some(gpu) = common::gpu("msm_with_window_multiples_matches_cpu") else {
        return;
    };
    let mut rng = common::rng("msm_with_window_multiples_matches_cpu");
    let mut g1 = cuzk_testkit::distinct_points::<G1Projective>(&mut rng, 4097);
    g1[5] = G1Affine::identity();
    let g1_uploads: [Upload<G1Affine>; 3] = [
        multiples::<_, 22, 0>,
        multiples::<_, 22, 2>,
        multiples::<_, 19, 5>,
    ];
    for upload in g1_uploads {
        check_uploaded(
            &gpu,
            &mut rng,
            &g1,
            &[0, 1, 2, 100, 4097],
            &EDGE_KINDS,
            upload,
        );
    }
    let g2 = cuzk_testkit::distinct_points::<G2Projective>(&mut rng, 1000);
    check_uploaded(
        &gpu,
        &mut rng,
        &g2,
        &[1, 1000],
        &["random", "equal", "boolean_mix"],
        multiples::<_, 20, 0>,
    );
    let distinct = cuzk_testkit::distinct_points::<G1Projective>(&mut rng, 1 << 10);
    let rounds_uploads: [Upload<G1Affine>; 3] = [
        multiples::<_, 22, 0>,
        multiples::<_, 20, 0>,
        multiples::<_, 19, 0>,
    ];
    for kind in ["random", "equal", "small", "boolean_mix"] {
        for upload in rounds_uploads {
            check_repeated_uploaded(&gpu, &mut rng, &distinct, 19, kind, upload);
        }
    }
}
