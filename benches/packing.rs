//! Host cost of staging a witness: packing it (a bitmap of the ones, the others listed; what
//! the GPU backend stages for its upload) against copying it whole, on a PoRep-shaped witness
//! (half ones, 3% other values); and what trying to pack a dense one (a WindowPoSt's Poseidon
//! state) costs before it goes up whole.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use cuzk_gpu::PackedScalars;
use cuzk_math::Scalar;
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const LOGS: [u32; 2] = [20, 22];

fn staging(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut group = c.benchmark_group("witness_staging");
    for log in LOGS {
        let witness: Vec<Scalar> = (0..1usize << log)
            .map(|_| match rng.gen_range(0..100) {
                0..3 => Scalar::random(&mut rng),
                3..50 => Scalar::ONE,
                _ => Scalar::ZERO,
            })
            .collect();
        group.throughput(Throughput::Elements(witness.len() as u64));
        group.bench_with_input(BenchmarkId::new("pack", log), &witness, |b, w| {
            b.iter(|| PackedScalars::of(&[&w[..1], &w[1..]]))
        });
        let dense: Vec<Scalar> = (0..1usize << log)
            .map(|_| Scalar::random(&mut rng))
            .collect();
        group.bench_with_input(BenchmarkId::new("pack_dense", log), &dense, |b, w| {
            b.iter(|| PackedScalars::of(&[&w[..1], &w[1..]]))
        });
        let mut out = vec![Scalar::ZERO; witness.len()];
        group.bench_with_input(BenchmarkId::new("copy", log), &witness, |b, w| {
            b.iter(|| out.copy_from_slice(w))
        });
    }
    group.finish();
}

criterion_group!(benches, staging);
criterion_main!(benches);
