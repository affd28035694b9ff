//! cuzk's test-parameter generator against bellperson's, on the same circuit.
//!
//! `cargo bench -p cuzk-groth16 --bench setup`; sizes (log2 of the rows) from
//! `CUZK_BENCH_LOG_SIZES`, default "14".

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed bench should stop loudly

use bellperson::groth16 as bp;
use blstrs::Bls12;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use cuzk_groth16::setup::generate_random_parameters;
use cuzk_synth::circuits::SyntheticCircuit;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn setup(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let sizes = std::env::var("CUZK_BENCH_LOG_SIZES").unwrap_or_else(|_| "14".into());
    for log in sizes
        .split(',')
        .filter_map(|s| s.trim().parse::<u32>().ok())
    {
        let circuit = SyntheticCircuit {
            constraints: (1 << log) - 3,
            boolean_fraction: 0.5,
            public_inputs: 2,
            seed: 42,
        };
        let mut group = c.benchmark_group(format!("setup_2^{log}"));
        group.sample_size(10);
        group.bench_function(BenchmarkId::new("cuzk", log), |b| {
            b.iter(|| generate_random_parameters(circuit.clone(), &mut rng).expect("setup"))
        });
        group.bench_function(BenchmarkId::new("bellperson", log), |b| {
            b.iter(|| {
                bp::generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng)
                    .expect("setup")
            })
        });
        group.finish();
    }
}

criterion_group!(benches, setup);
criterion_main!(benches);
