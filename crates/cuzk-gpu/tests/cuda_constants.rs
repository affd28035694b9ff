//! `cuda/field/constants.cuh` is generated from blstrs' own field values, so the moduli and their
//! Montgomery constants are never typed by hand. This test regenerates the header and fails when
//! the checked-in file differs; `CUZK_BLESS=1 cargo test -p cuzk-gpu --test cuda_constants`
//! rewrites it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use std::fmt::Write;
use std::path::PathBuf;

use blstrs::{Fp, Scalar};
use common::{limbs, modulus};
use ff::Field;

/// −m⁻¹ mod 2³² by Newton's iteration (each step doubles the correct low bits).
fn neg_inverse(m0: u32) -> u32 {
    let mut inv: u32 = 1;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(m0.wrapping_mul(inv)));
    }
    assert_eq!(m0.wrapping_mul(inv), 1);
    inv.wrapping_neg()
}

fn array(out: &mut String, name: &str, limbs: &[u32]) {
    let body: Vec<String> = limbs.iter().map(|l| format!("0x{l:08x}")).collect();
    let _ = writeln!(
        out,
        "__device__ __constant__ __align__(16) const uint32_t {name}[{}] = {{{}}};",
        limbs.len(),
        body.join(", ")
    );
}

struct FieldConstants {
    prefix: &'static str,
    modulus: Vec<u32>,
    one: Vec<u32>,
    r2: Vec<u32>,
}

fn fp() -> FieldConstants {
    let two = Fp::from(2u64);
    FieldConstants {
        prefix: "FP",
        modulus: modulus(&(-Fp::ONE).to_bytes_le()),
        one: limbs(&two.pow_vartime([384]).to_bytes_le()),
        r2: limbs(&two.pow_vartime([768]).to_bytes_le()),
    }
}

fn fr() -> FieldConstants {
    let two = Scalar::from(2u64);
    FieldConstants {
        prefix: "FR",
        modulus: modulus(&(-Scalar::ONE).to_bytes_le()),
        one: limbs(&two.pow_vartime([256]).to_bytes_le()),
        r2: limbs(&two.pow_vartime([512]).to_bytes_le()),
    }
}

fn header() -> String {
    let mut out = String::from(
        "// GENERATED from blstrs by crates/cuzk-gpu/tests/cuda_constants.rs; do not edit.\n\
         // Regenerate with: CUZK_BLESS=1 cargo test -p cuzk-gpu --test cuda_constants\n\
         #pragma once\n\n#include <cstdint>\n\nnamespace cuzk {\nnamespace consts {\n\n",
    );
    for field in [fp(), fr()] {
        let p = field.prefix;
        let _ = writeln!(
            out,
            "// {p}: modulus m, R mod m (Montgomery one), R² mod m, −m⁻¹ mod 2³²."
        );
        array(&mut out, &format!("{p}_MODULUS"), &field.modulus);
        array(&mut out, &format!("{p}_ONE"), &field.one);
        array(&mut out, &format!("{p}_R2"), &field.r2);
        let _ = writeln!(
            out,
            "static constexpr uint32_t {p}_INV = 0x{:08x};\n",
            neg_inverse(field.modulus[0])
        );
    }
    out.push_str("}  // namespace consts\n}  // namespace cuzk\n");
    out
}

#[test]
fn cuda_field_constants_match_blstrs() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../cuda/field/constants.cuh");
    let expected = header();
    if std::env::var_os("CUZK_BLESS").is_some() {
        std::fs::write(&path, &expected).expect("write constants.cuh");
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "{} is stale; regenerate with CUZK_BLESS=1 cargo test -p cuzk-gpu --test cuda_constants",
        path.display()
    );
}

#[test]
fn known_moduli() {
    // Spot checks against the published values (most significant limbs).
    assert_eq!(fr().modulus[7], 0x73eda753);
    assert_eq!(fp().modulus[11], 0x1a0111ea);
    assert_eq!(fr().modulus[0], 0x00000001);
}
