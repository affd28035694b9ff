//! Host↔device layout of blstrs values.
//!
//! The kernels keep values exactly as blst does in memory: field elements in Montgomery form as
//! little-endian limbs (read as 32-bit words on the device), affine points as (x, y) with (0, 0)
//! for the identity. So uploads are plain byte copies of the caller's slices, with no per-element
//! conversion on the CPU. Results come back as XYZZ points and are made affine here.

use std::mem::{align_of, size_of};
use std::sync::LazyLock;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};

use crate::GpuError;

/// 32-bit words of one scalar.
pub const SCALAR_WORDS: usize = 8;
/// 32-bit words of one base-field element.
pub const FP_WORDS: usize = 12;

// blstrs documents `Scalar` as `#[repr(transparent)]` over blst_fr ([u64; 4], Montgomery form) and
// the affine points as `#[repr(transparent)]` over blst's `#[repr(C)]` {x, y} structs; these
// checks catch a future layout change at compile time.
const _: () = assert!(size_of::<Scalar>() == 4 * SCALAR_WORDS);
const _: () = assert!(size_of::<Fp>() == 4 * FP_WORDS);
const _: () = assert!(size_of::<G1Affine>() == 2 * 4 * FP_WORDS);
const _: () = assert!(size_of::<G2Affine>() == 4 * 4 * FP_WORDS);
const _: () = assert!(align_of::<Scalar>() >= align_of::<u32>());
const _: () = assert!(align_of::<G1Affine>() >= align_of::<u32>());
const _: () = assert!(align_of::<G2Affine>() >= align_of::<u32>());

/// Plain-old-data types the device reads as words: blstrs values (fixed-size arrays of u64 limbs
/// with no padding) and u32 (index lists, sparse matrices).
///
/// # Safety
/// Implementors must be `#[repr(transparent)]`/`#[repr(C)]` over u64 limbs or u32 words only (no
/// padding, no pointers), with the size asserted above.
pub unsafe trait DeviceWords: Copy + Sized {
    /// 32-bit words per value.
    const WORDS: usize;
}

// SAFETY: one word, any value valid.
unsafe impl DeviceWords for u32 {
    const WORDS: usize = 1;
}
// SAFETY: Scalar is repr(transparent) over blst_fr { l: [u64; 4] } (size asserted above).
unsafe impl DeviceWords for Scalar {
    const WORDS: usize = SCALAR_WORDS;
}
// SAFETY: G1Affine is repr(transparent) over blst_p1_affine { x: [u64; 6], y: [u64; 6] }, repr(C).
unsafe impl DeviceWords for G1Affine {
    const WORDS: usize = 2 * FP_WORDS;
}
// SAFETY: G2Affine is repr(transparent) over blst_p2_affine of two blst_fp2 ([[u64; 6]; 2]), repr(C).
unsafe impl DeviceWords for G2Affine {
    const WORDS: usize = 4 * FP_WORDS;
}

/// The values as the 32-bit words the device reads.
pub fn as_words<T: DeviceWords>(values: &[T]) -> &[u32] {
    // SAFETY: `T: DeviceWords` is padding-free u64 limbs of size WORDS·4 and alignment ≥ 4, so the
    // same memory is `len·WORDS` initialised u32s, little-endian as on every CUDA host.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u32>(), values.len() * T::WORDS) }
}

/// Writable words over values, for results the device computed in the same layout.
///
/// # Safety
/// Every word pattern written through them must leave valid values of `T`: reduced Montgomery
/// elements, and for points the coordinates of a point of the group or (0, 0).
pub unsafe fn as_words_mut<T: DeviceWords>(values: &mut [T]) -> &mut [u32] {
    // SAFETY: as in `as_words` (padding-free u64 limbs, alignment ≥ 4); the caller keeps the
    // values valid.
    unsafe {
        std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u32>(), values.len() * T::WORDS)
    }
}

/// Writable words over scalars, for results the device computed in the same layout.
pub fn scalars_as_words_mut(values: &mut [Scalar]) -> &mut [u32] {
    // SAFETY: every word pattern the kernels write is a reduced Montgomery element (< r), which
    // is exactly the invariant blstrs keeps for `Scalar`.
    unsafe { as_words_mut(values) }
}

/// 32-bit words of a fixed factor for `mont::mul_shoup` (cuda/field/mont.cuh).
pub const FACTOR_WORDS: usize = 2 * SCALAR_WORDS;

/// A fixed factor w as `mont::mul_shoup` takes it: w as a plain integer (not in Montgomery form),
/// then its Shoup quotient ⌊w·2^256/r⌋. blstrs stores s = w·2^256 mod r, so the quotient is
/// exactly (w·2^256 − s)/r, which is −s·r⁻¹ mod 2^256 (it is below 2^256 as w < r).
pub fn shoup_factor_words(w: &Scalar) -> [u32; FACTOR_WORDS] {
    let stored = u64_limbs(as_words(std::slice::from_ref(w)));
    let quotient = low_product(&negated(&stored), &MODULUS_INVERSE);
    let mut words = [0u32; FACTOR_WORDS];
    for (pair, limb) in words
        .chunks_exact_mut(2)
        .zip(canonical(w).iter().chain(&quotient))
    {
        pair[0] = *limb as u32;
        pair[1] = (*limb >> 32) as u32;
    }
    words
}

/// A 256-bit integer as little-endian u64 limbs.
type Limbs = [u64; 4];

fn u64_limbs(words: &[u32]) -> Limbs {
    std::array::from_fn(|i| u64::from(words[2 * i]) | (u64::from(words[2 * i + 1]) << 32))
}

/// The scalar's canonical integer (not its Montgomery form).
fn canonical(w: &Scalar) -> Limbs {
    let repr = w.to_repr();
    std::array::from_fn(|i| {
        let mut le = [0u8; 8];
        le.copy_from_slice(&repr.as_ref()[8 * i..8 * i + 8]);
        u64::from_le_bytes(le)
    })
}

/// r, from its canonical r − 1 (= −1, whose lowest limb is even, so adding 1 carries nowhere).
fn modulus() -> Limbs {
    let mut r = canonical(&-Scalar::ONE);
    r[0] += 1;
    r
}

/// r⁻¹ mod 2^256, made once: by Newton's iteration x ← x·(2 − r·x), which doubles the correct
/// low bits; r ≡ 1 (mod 2^32), so x = 1 starts with 32 of them.
static MODULUS_INVERSE: LazyLock<Limbs> = LazyLock::new(|| {
    let r = modulus();
    let mut x: Limbs = [1, 0, 0, 0];
    for _ in 0..3 {
        x = low_product(&x, &sum(&negated(&low_product(&r, &x)), &[2, 0, 0, 0]));
    }
    x
});

/// a + b mod 2^256.
fn sum(a: &Limbs, b: &Limbs) -> Limbs {
    let mut r = [0u64; 4];
    let mut carry = false;
    for ((out, x), y) in r.iter_mut().zip(a).zip(b) {
        let (s, c1) = x.overflowing_add(*y);
        let (s, c2) = s.overflowing_add(u64::from(carry));
        *out = s;
        carry = c1 || c2;
    }
    r
}

/// −a mod 2^256.
fn negated(a: &Limbs) -> Limbs {
    sum(&a.map(|limb| !limb), &[1, 0, 0, 0])
}

/// a·b mod 2^256.
fn low_product(a: &Limbs, b: &Limbs) -> Limbs {
    let mut r = [0u64; 4];
    for i in 0..4 {
        let mut carry = 0u128;
        for j in 0..4 - i {
            let t = u128::from(a[i]) * u128::from(b[j]) + u128::from(r[i + j]) + carry;
            r[i + j] = t as u64;
            carry = t >> 64;
        }
    }
    r
}

pub(crate) fn fp_from_words(words: &[u32]) -> Fp {
    let mut limbs = [0u64; 6];
    for (i, limb) in limbs.iter_mut().enumerate() {
        *limb = u64::from(words[2 * i]) | (u64::from(words[2 * i + 1]) << 32);
    }
    Fp::from_raw_unchecked(limbs)
}

fn fp2_from_words(words: &[u32]) -> Fp2 {
    Fp2::new(
        fp_from_words(&words[..FP_WORDS]),
        fp_from_words(&words[FP_WORDS..]),
    )
}

/// A group whose points the kernels return in XYZZ form.
pub trait XyzzPoint: Sized {
    /// 32-bit words of one XYZZ point.
    const XYZZ_WORDS: usize;
    /// The point (X, Y, ZZ, ZZZ) = (x·ZZ, y·ZZZ, ZZ, ZZZ); checked to be on the curve, so a kernel
    /// bug surfaces as an error rather than a wrong proof.
    fn from_xyzz(words: &[u32]) -> Result<Self, GpuError>;
}

fn off_curve() -> GpuError {
    GpuError::InvalidInput {
        what: "device result",
        reason: "the kernel returned a point that is not on the curve".into(),
    }
}

macro_rules! xyzz_point {
    ($projective:ty, $affine:ty, $field:ty, $coord:ident, $coord_words:expr) => {
        impl XyzzPoint for $projective {
            const XYZZ_WORDS: usize = 4 * $coord_words;

            fn from_xyzz(words: &[u32]) -> Result<Self, GpuError> {
                let w = $coord_words;
                let (x, y) = ($coord(&words[..w]), $coord(&words[w..2 * w]));
                let (zz, zzz) = ($coord(&words[2 * w..3 * w]), $coord(&words[3 * w..4 * w]));
                if bool::from(zz.is_zero()) {
                    return Ok(<$projective as group::Group>::identity());
                }
                let (Some(zz_inv), Some(zzz_inv)) = (
                    Option::<$field>::from(zz.invert()),
                    Option::<$field>::from(zzz.invert()),
                ) else {
                    return Err(off_curve());
                };
                let affine = <$affine>::from_raw_unchecked(x * zz_inv, y * zzz_inv, false);
                if !bool::from(affine.is_on_curve()) {
                    return Err(off_curve());
                }
                Ok(affine.into())
            }
        }
    };
}

xyzz_point!(G1Projective, G1Affine, Fp, fp_from_words, FP_WORDS);
xyzz_point!(G2Projective, G2Affine, Fp2, fp2_from_words, 2 * FP_WORDS);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// a·b as eight limbs.
    fn full_product(a: &Limbs, b: &Limbs) -> [u64; 8] {
        let mut r = [0u64; 8];
        for i in 0..4 {
            let mut carry = 0u128;
            for j in 0..4 {
                let t = u128::from(a[i]) * u128::from(b[j]) + u128::from(r[i + j]) + carry;
                r[i + j] = t as u64;
                carry = t >> 64;
            }
            r[i + 4] = carry as u64;
        }
        r
    }

    /// wq·r + s = w·2^256 with s = w·2^256 mod r below r: wq is the floor of w·2^256/r.
    #[test]
    fn shoup_quotients_are_exact_floors() {
        let r = modulus();
        assert_eq!(low_product(&r, &MODULUS_INVERSE), [1, 0, 0, 0]);
        let mut rng = cuzk_testkit::rng("shoup quotients");
        let mut values = vec![
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::ROOT_OF_UNITY,
        ];
        values.extend((0..200).map(|_| Scalar::random(&mut rng)));
        for w in &values {
            let words = shoup_factor_words(w);
            let (plain, quotient) = (
                u64_limbs(&words[..SCALAR_WORDS]),
                u64_limbs(&words[SCALAR_WORDS..]),
            );
            let stored = u64_limbs(as_words(std::slice::from_ref(w)));
            let mut lhs = full_product(&quotient, &r);
            let mut carry = false;
            for (limb, add) in lhs.iter_mut().zip(stored.iter().chain([0u64; 4].iter())) {
                let (s, c1) = limb.overflowing_add(*add);
                let (s, c2) = s.overflowing_add(u64::from(carry));
                *limb = s;
                carry = c1 || c2;
            }
            assert!(!carry);
            assert_eq!(lhs[..4], [0; 4], "{w:?}");
            assert_eq!(lhs[4..], plain, "{w:?}");
        }
    }
}
