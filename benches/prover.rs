//! cuzk's CPU prover against bellperson's CPU prover on the same bellpepper circuit and parameters.
//!
//! `cargo bench -p cuzk-groth16 --bench prover`; sizes (log2 of the rows) from
//! `CUZK_BENCH_LOG_SIZES`, default "14,16". Both timings include synthesis.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test or bench should stop loudly

use bellperson::groth16 as bp;
use blstrs::Bls12;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use cuzk_groth16::backend::CpuBackend;
use cuzk_groth16::params_file::PointCheck;
use cuzk_groth16::setup::generate_random_parameters;
use cuzk_groth16::{prove, Parameters};
use cuzk_synth::circuits::SyntheticCircuit;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const PUBLIC_INPUTS: usize = 2;

fn log_sizes() -> Vec<u32> {
    std::env::var("CUZK_BENCH_LOG_SIZES")
        .unwrap_or_else(|_| "14,16".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

/// A circuit whose rows (constraints plus input rows) fill a domain of 2^log exactly.
fn circuit(log: u32, boolean_fraction: f64) -> SyntheticCircuit {
    SyntheticCircuit {
        constraints: (1 << log) - PUBLIC_INPUTS - 1,
        boolean_fraction,
        public_inputs: PUBLIC_INPUTS,
        seed: 42,
    }
}

fn prover(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for log in log_sizes() {
        for fraction in [0.5, 0.9] {
            let make = || circuit(log, fraction);
            let params = generate_random_parameters(make(), &mut rng).expect("setup");
            let bytes = params.to_bytes();
            let bp_params =
                bp::Parameters::<Bls12>::read(&bytes[..], false).expect("bellperson reads");
            let params =
                Parameters::from_bytes(&bytes, PointCheck::Unchecked, "bench").expect("read");

            let mut group =
                c.benchmark_group(format!("prove_2^{log}_{}pct_boolean", fraction * 100.0));
            group.sample_size(10);
            group.bench_function(BenchmarkId::new("cuzk_cpu", log), |b| {
                b.iter(|| prove(&CpuBackend, &params, make(), &mut rng).expect("prove"))
            });
            group.bench_function(BenchmarkId::new("bellperson_cpu", log), |b| {
                b.iter(|| bp::create_random_proof(make(), &bp_params, &mut rng).expect("prove"))
            });
            group.finish();
        }
    }
}

criterion_group!(benches, prover);
criterion_main!(benches);
