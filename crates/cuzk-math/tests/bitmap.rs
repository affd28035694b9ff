#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use cuzk_math::{bitmap_sum, Bitmap, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::Rng;

#[test]
fn bitmap_behaviour() {
    let (seed, mut rng) = common::rng();
    let mut b = Bitmap::new();
    assert!(b.is_empty());
    assert_eq!(b, Bitmap::default());
    let mut reference = Vec::new();
    for _ in 0..1000 {
        let bit = rng.gen_bool(0.3);
        b.push(bit);
        reference.push(bit);
    }
    assert_eq!(b.len(), 1000);
    assert!(!b.is_empty());
    assert_eq!(b.words().len(), 16);
    for (i, &bit) in reference.iter().enumerate() {
        assert_eq!(b.get(i), bit, "seed {seed}");
    }
    assert!(!b.get(1000) && !b.get(usize::MAX));
    let ones: Vec<usize> = (0..1000).filter(|&i| reference[i]).collect();
    assert_eq!(b.iter_ones().collect::<Vec<_>>(), ones, "seed {seed}");
    assert_eq!(b.count_ones(), ones.len());

    let mut c = Bitmap::with_len(1000);
    assert_eq!(c.len(), 1000);
    assert_eq!(c.count_ones(), 0);
    for &i in &ones {
        c.set(i);
        c.set(i);
    }
    assert_eq!(c, b, "seed {seed}");
    let mut d = b.clone();
    d.push(true);
    assert_ne!(d, b);
    assert_eq!(d.iter_ones().last(), Some(1000));

    let mut e = Bitmap::with_len(64);
    e.set(63);
    e.push(true);
    assert_eq!(e.words(), &[1 << 63, 1]);
    assert_eq!(e.iter_ones().collect::<Vec<_>>(), vec![63, 64]);
    assert_eq!(Bitmap::with_len(0), Bitmap::new());
}

#[test]
#[should_panic]
fn set_out_of_range_panics() {
    Bitmap::with_len(10).set(10);
}

fn check_bitmap_sum<A: PrimeCurveAffine>(rng: &mut impl Rng, seed: u64) {
    for (n_bases, n_bits) in [
        (0, 0),
        (0, 100),
        (1, 1),
        (5, 3),
        (100, 100),
        (300, 5000),
        (9000, 9000),
    ] {
        let bases: Vec<A> = (0..n_bases)
            .map(|i| {
                if i % 17 == 3 {
                    A::Curve::identity()
                } else {
                    A::Curve::random(&mut *rng)
                }
                .to_affine()
            })
            .collect();
        for density in [0.0, 0.1, 0.5, 1.0] {
            let mut bits = Bitmap::new();
            for _ in 0..n_bits {
                bits.push(rng.gen_bool(density));
            }
            let expected = bits
                .iter_ones()
                .filter(|&i| i < n_bases)
                .fold(A::Curve::identity(), |acc, i| acc + bases[i]);
            assert_eq!(
                bitmap_sum(&bases, &bits),
                expected,
                "{n_bases} bases, {n_bits} bits, density {density}, seed {seed}"
            );
        }
    }
}

#[test]
fn bitmap_sum_matches_naive() {
    let (seed, mut rng) = common::rng();
    check_bitmap_sum::<G1Affine>(&mut rng, seed);
    check_bitmap_sum::<G2Affine>(&mut rng, seed);
}
