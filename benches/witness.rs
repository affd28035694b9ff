//! Host cost of a sectioned witness apart from its gadgets: sections side by side, each pushing
//! its values into its own vector, then gathered into one (`CompiledR1cs::witness_sectioned`),
//! at the shape of a 32 GiB WindowPoSt partition (2,349 sectors of ~53,000 values: 4 GB) and a
//! PoRep one (18 challenges of ~7.3 million). The values are a constant: what is timed is the
//! allocation, page faults, copies and frees a real witness pays beside its hashing.
#![allow(clippy::expect_used)] // a failed bench should stop loudly

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bellpepper_core::{ConstraintSystem, SynthesisError};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use cuzk_math::Scalar;
use cuzk_synth::{CompiledR1cs, Sectioned};
use ff::Field;

/// `sections` sections of `values` aux values each, no rows.
struct Plain {
    sections: usize,
    values: usize,
}

impl Sectioned for Plain {
    fn sections(&self) -> usize {
        self.sections
    }

    fn synthesize_sections<CS: ConstraintSystem<Scalar> + 'static>(
        &self,
        cs: &mut CS,
        range: Range<usize>,
    ) -> Result<(), SynthesisError> {
        for _ in range.flat_map(|_| 0..self.values) {
            cs.alloc(|| "value", || Ok(Scalar::ONE))?;
        }
        Ok(())
    }
}

fn sectioned(c: &mut Criterion) {
    let mut group = c.benchmark_group("sectioned_witness");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    for (name, circuit) in [
        (
            "window_post_32g",
            Plain {
                sections: 2349,
                values: 53_000,
            },
        ),
        (
            "porep_32g",
            Plain {
                sections: 18,
                values: 7_300_000,
            },
        ),
    ] {
        let compiled = Arc::new(CompiledR1cs::record_sectioned(&circuit).expect("recorded"));
        group.throughput(Throughput::Bytes((compiled.num_aux() * 32) as u64));
        group.bench_function(BenchmarkId::new("witness", name), |b| {
            b.iter(|| compiled.witness_sectioned(&circuit).expect("witness"))
        });
    }
    group.finish();
}

criterion_group!(benches, sectioned);
criterion_main!(benches);
