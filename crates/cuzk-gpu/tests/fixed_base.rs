//! The device's fixed-base multiplication agrees with cuzk-math's tables on the CPU, for random
//! scalars and edge cases, in G1 and G2, at several window widths.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use blstrs::{G1Affine, G1Projective, G2Projective, Scalar};
use cuzk_gpu::fixed_base::{fixed_base_multiply, fixed_base_multiply_on_device, FixedBaseAffine};
use cuzk_gpu::layout::as_words;
use cuzk_gpu::msm::MsmAffine;
use cuzk_gpu::GpuError;
use cuzk_math::FixedBaseTable;
use ff::Field;
use group::prime::PrimeCurve;
use group::Group;

/// Random scalars, then the edges: 0, ±1, 2, (r − 1)/2 and its neighbours (where signed digits
/// turn), r − 1, and 2^k for k around the top window.
fn scalars(n: usize, seed: &str) -> Vec<Scalar> {
    let mut rng = common::rng(seed);
    let half = -Scalar::ONE * Scalar::from(2).invert().unwrap();
    let mut out: Vec<Scalar> = vec![
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        Scalar::from(2),
        half,
        half + Scalar::ONE,
        half - Scalar::ONE,
    ];
    out.extend([250u32, 251, 252, 253, 254].map(|k| Scalar::from(2).pow_vartime([u64::from(k)])));
    out.extend((out.len()..n).map(|_| Scalar::random(&mut rng)));
    out.truncate(n);
    out
}

fn agrees<G>(generator: G, window_bits: usize, n: usize)
where
    G: PrimeCurve<Scalar = Scalar>,
    G::Affine: cuzk_math::msm::AffineCoordinates + FixedBaseAffine + MsmAffine + PartialEq,
    G: Group,
{
    let Some(gpu) = common::gpu("fixed_base agrees") else {
        return;
    };
    let table = FixedBaseTable::new(generator, window_bits);
    let scalars = scalars(n, &format!("fixed base {window_bits} {n}"));
    let ours = fixed_base_multiply(
        &gpu,
        &table.entries(),
        table.window_bits() as u32,
        table.windows() as u32,
        &scalars,
    )
    .unwrap();
    let expected = table.mul_many(&scalars);
    assert_eq!(ours.len(), expected.len());
    for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
        assert!(a == b, "point {i} of {n} (c = {window_bits})");
    }
    // The same points left on the device, word for word.
    let on_device = fixed_base_multiply_on_device(
        &gpu,
        &table.entries(),
        table.window_bits() as u32,
        table.windows() as u32,
        &scalars,
    )
    .unwrap();
    assert_eq!(on_device.len(), n);
    let words = gpu.stream().clone_dtoh(on_device.words()).unwrap();
    let host = as_words(&expected);
    assert_eq!(
        &words[..host.len()],
        host,
        "on the device, {n} points (c = {window_bits})"
    );
}

#[test]
fn g1_multiples_equal_the_cpu_tables() {
    for (bits, n) in [
        (12, 4099),
        (8, 300),
        (16, 1000),
        (2, 20),
        (20, 17),
        (12, 0),
        (12, 1),
    ] {
        agrees(G1Projective::generator(), bits, n);
    }
}

#[test]
fn g2_multiples_equal_the_cpu_tables() {
    for (bits, n) in [(12, 2050), (9, 100), (16, 300), (2, 40)] {
        agrees(G2Projective::generator(), bits, n);
    }
}

#[test]
fn a_table_of_the_wrong_shape_is_refused() {
    let Some(gpu) = common::gpu("a_table_of_the_wrong_shape_is_refused") else {
        return;
    };
    let table = FixedBaseTable::new(G1Projective::generator(), 12);
    let entries: Vec<G1Affine> = table.entries();
    let scalars = [Scalar::ONE];
    for (entries, bits, windows) in [
        (&entries[1..], 12, table.windows() as u32),
        (&entries[..], 12, 20),
        (&entries[..], 21, table.windows() as u32),
    ] {
        let error = fixed_base_multiply(&gpu, entries, bits, windows, &scalars).unwrap_err();
        assert!(matches!(error, GpuError::InvalidInput { .. }), "{error}");
    }
}
