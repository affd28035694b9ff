//! Signed base-2^c recoding of scalars, shared by Pippenger and the
//! fixed-base tables: digits lie in `[-2^(c-1), 2^(c-1)]`, so only half as
//! many buckets (or table entries) are needed, negatives costing a point
//! negation.

use ff::PrimeField;

use crate::Scalar;

/// A canonical scalar as little-endian 64-bit limbs.
pub(crate) type Limbs = [u64; 4];

/// The little-endian limbs of `s` (via the canonical `to_repr`).
pub(crate) fn limbs(s: &Scalar) -> Limbs {
    let repr = s.to_repr();
    let mut out = [0u64; 4];
    for (limb, bytes) in out.iter_mut().zip(repr.as_ref().chunks_exact(8)) {
        let mut word = [0u8; 8];
        word.copy_from_slice(bytes);
        *limb = u64::from_le_bytes(word);
    }
    out
}

/// Windows needed for width `c`. Scalars are below 2^255, so the top window
/// holds at most `c - 1` bits and absorbs the last carry without overflowing
/// `2^(c-1)`; it is never made negative.
pub(crate) fn num_windows(c: usize) -> usize {
    Scalar::NUM_BITS as usize / c + 1
}

/// Raw bits `[start, start + c)` of `s`, for `c < 64`.
fn bits(s: &Limbs, start: usize, c: usize) -> u64 {
    let limb = start / 64;
    if limb >= s.len() {
        return 0;
    }
    let offset = start % 64;
    let mut v = s[limb] >> offset;
    if offset + c > 64 && limb + 1 < s.len() {
        v |= s[limb + 1] << (64 - offset);
    }
    v & ((1 << c) - 1)
}

/// The signed digit of window `w` (of `num_windows(c)`).
///
/// The carry into a window is found by walking down from the window below: a
/// window of `2^(c-1) - 1` only forwards the carry it receives, and any other
/// value decides it, so this rarely looks at more than one window and needs no
/// precomputed digit storage.
pub(crate) fn signed_digit(s: &Limbs, w: usize, c: usize) -> i64 {
    let half = 1u64 << (c - 1);
    let mut carry = 0;
    let mut k = w;
    while k > 0 {
        k -= 1;
        let b = bits(s, k * c, c);
        if b >= half {
            carry = 1;
            break;
        }
        if b + 1 < half {
            break;
        }
    }
    let d = (bits(s, w * c, c) + carry) as i64;
    if w + 1 < num_windows(c) && d >= half as i64 {
        d - (1 << c)
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::SeedableRng;

    /// The digits must reassemble the scalar: sum d_w * 2^(c*w) == s.
    #[test]
    fn digits_reassemble() {
        let seed: u64 = rand::random();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        for c in 1..=20 {
            for trial in 0..20 {
                let s = match trial {
                    0 => Scalar::ZERO,
                    1 => -Scalar::ONE,
                    2 => Scalar::from(u64::MAX),
                    _ => <Scalar as ff::Field>::random(&mut rng),
                };
                let l = limbs(&s);
                let mut acc = Scalar::ZERO;
                let radix = Scalar::from(1u64 << c);
                for w in (0..num_windows(c)).rev() {
                    let d = signed_digit(&l, w, c);
                    assert!(d.unsigned_abs() <= 1 << (c - 1), "seed {seed} c {c}");
                    let dv = Scalar::from(d.unsigned_abs());
                    acc = acc * radix + if d < 0 { -dv } else { dv };
                }
                assert_eq!(acc, s, "seed {seed} c {c} trial {trial}");
            }
        }
    }
}
