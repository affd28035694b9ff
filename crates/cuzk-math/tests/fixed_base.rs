#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use cuzk_math::msm::AffineCoordinates;
use cuzk_math::{FixedBaseTable, G1Projective, G2Projective, Scalar};
use ff::Field;
use group::prime::{PrimeCurve, PrimeCurveAffine};
use group::Group;
use rand_chacha::ChaCha8Rng;

fn scalars(rng: &mut ChaCha8Rng, n: usize) -> Vec<Scalar> {
    let mut out = vec![
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        Scalar::from(2),
        Scalar::from(u64::MAX),
        Scalar::from(2).pow_vartime([254]) - Scalar::ONE,
    ];
    out.extend((out.len()..n).map(|_| Scalar::random(&mut *rng)));
    out.truncate(n);
    out
}

fn check<G>(window_bits: &[usize])
where
    G: PrimeCurve<Scalar = Scalar>,
    G::Affine: AffineCoordinates,
{
    let (seed, mut rng) = common::rng();
    let base = G::random(&mut rng);
    for &w in window_bits {
        let table = FixedBaseTable::new(base, w);
        for s in scalars(&mut rng, 40) {
            assert_eq!(table.mul(&s), base * s, "w {w}, scalar {s:?}, seed {seed}");
        }
        for n in [0, 1, 7, 2500] {
            let s = scalars(&mut rng, n);
            let got = table.mul_many(&s);
            assert_eq!(got.len(), n);
            for (i, (p, s)) in got.iter().zip(&s).enumerate() {
                // Checking every point of the big batch naively is slow; a
                // stride still covers every chunk.
                if n < 100 || i % 7 == 0 || i < 8 {
                    assert_eq!(
                        *p,
                        (base * s).to_affine(),
                        "w {w}, n {n}, i {i}, seed {seed}"
                    );
                }
            }
        }
    }
}

#[test]
fn identity_base() {
    let (seed, mut rng) = common::rng();
    let table = FixedBaseTable::new(G1Projective::identity(), 4);
    let s = scalars(&mut rng, 20);
    assert!(
        table
            .mul_many(&s)
            .iter()
            .all(|p| bool::from(p.is_identity())),
        "seed {seed}"
    );
    assert_eq!(table.mul(&s[10]), G1Projective::identity());
}

#[test]
fn g1_table_matches_scalar_mul() {
    check::<G1Projective>(&[0, 1, 2, 5, 8, 12, 16]);
}

#[test]
fn g2_table_matches_scalar_mul() {
    check::<G2Projective>(&[1, 4, 9]);
}
