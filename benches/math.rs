//! CPU NTT and G1 MSM throughput of `cuzk-math`.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use cuzk_math::{msm, EvaluationDomain, G1Affine, G1Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const LOGS: [u32; 2] = [14, 16];

fn ntt(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut group = c.benchmark_group("ntt");
    for log in LOGS {
        let Ok(domain) = EvaluationDomain::new(1 << log) else {
            continue;
        };
        let values: Vec<Scalar> = (0..domain.size())
            .map(|_| Scalar::random(&mut rng))
            .collect();
        group.bench_with_input(BenchmarkId::new("ntt", log), &values, |b, v| {
            b.iter_batched_ref(|| v.clone(), |v| domain.ntt(v), BatchSize::LargeInput)
        });
        group.bench_with_input(BenchmarkId::new("coset_intt", log), &values, |b, v| {
            b.iter_batched_ref(
                || v.clone(),
                |v| domain.coset_intt(v),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn g1_msm(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut group = c.benchmark_group("g1_msm");
    for log in LOGS {
        let n = 1usize << log;
        // Cheap distinct bases: a random walk from a random point.
        let step = G1Projective::random(&mut rng);
        let mut acc = G1Projective::random(&mut rng);
        let proj: Vec<G1Projective> = (0..n)
            .map(|_| {
                acc = acc.double() + step;
                acc
            })
            .collect();
        let mut bases = vec![G1Affine::default(); n];
        G1Projective::batch_normalize(&proj, &mut bases);

        let random: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        // A hash-circuit-like witness: mostly bits, a few field elements.
        let boolean: Vec<Scalar> = (0..n)
            .map(|_| match rng.gen_range(0..100) {
                0..=44 => Scalar::ZERO,
                45..=94 => Scalar::ONE,
                _ => Scalar::random(&mut rng),
            })
            .collect();
        group.bench_with_input(BenchmarkId::new("random", log), &random, |b, s| {
            b.iter(|| msm(&bases, s))
        });
        group.bench_with_input(BenchmarkId::new("boolean", log), &boolean, |b, s| {
            b.iter(|| msm(&bases, s))
        });
    }
    group.finish();
}

criterion_group!(benches, ntt, g1_msm);
criterion_main!(benches);
