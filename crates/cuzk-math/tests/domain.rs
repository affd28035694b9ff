#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use cuzk_math::{DomainError, EvaluationDomain, Scalar};
use ff::{Field, PrimeField};
use rand::Rng;

fn random_vec(rng: &mut impl rand::RngCore, n: usize) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

/// Horner evaluation of the polynomial with these coefficients.
fn eval(coeffs: &[Scalar], x: &Scalar) -> Scalar {
    coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
}

fn domain_points(d: &EvaluationDomain, shift: Scalar) -> Vec<Scalar> {
    let mut x = shift;
    (0..d.size())
        .map(|_| {
            let cur = x;
            x *= d.omega();
            cur
        })
        .collect()
}

#[test]
fn sizes_and_errors() {
    for (min, size) in [
        (0, 1),
        (1, 1),
        (2, 2),
        (3, 4),
        (5, 8),
        (1024, 1024),
        (1025, 2048),
    ] {
        let d = EvaluationDomain::new(min).unwrap();
        assert_eq!(d.size(), size);
        assert_eq!(1usize << d.log_size(), size);
    }
    assert_eq!(EvaluationDomain::new(1 << 31).unwrap().log_size(), 31);
    for too_big in [(1usize << 31) + 1, 1 << 32, usize::MAX] {
        match EvaluationDomain::new(too_big) {
            Err(DomainError::TooLarge { requested, max_log }) => {
                assert_eq!(requested, too_big);
                assert_eq!(max_log, 31);
            }
            Ok(d) => panic!("size {too_big} gave a domain of {}", d.size()),
        }
    }
    let msg = EvaluationDomain::new(usize::MAX).unwrap_err().to_string();
    assert!(msg.contains("2^31"), "{msg}");
}

#[test]
fn omega_is_primitive_and_bellperson_compatible() {
    for log in 0..=31u32 {
        let d = EvaluationDomain::new(1 << log).unwrap();
        let mut expected = Scalar::ROOT_OF_UNITY;
        for _ in log..Scalar::S {
            expected = expected.square();
        }
        assert_eq!(d.omega(), expected);
        // omega^(2^log) == 1 but omega^(2^(log-1)) != 1.
        let mut x = d.omega();
        for _ in 1..log {
            x = x.square();
        }
        if log > 0 {
            assert_eq!(x, -Scalar::ONE, "log {log}");
            x = x.square();
        }
        assert_eq!(x, Scalar::ONE, "log {log}");
    }
}

#[test]
fn transforms_match_naive_evaluation() {
    let (seed, mut rng) = common::rng();
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    for log in 0..=10 {
        let d = EvaluationDomain::new(1 << log).unwrap();
        let coeffs = random_vec(&mut rng, d.size());

        let mut v = coeffs.clone();
        d.ntt(&mut v);
        let expected: Vec<Scalar> = domain_points(&d, Scalar::ONE)
            .iter()
            .map(|x| eval(&coeffs, x))
            .collect();
        assert_eq!(v, expected, "ntt, log {log}, seed {seed}");
        d.intt(&mut v);
        assert_eq!(v, coeffs, "intt, log {log}, seed {seed}");

        let mut v = coeffs.clone();
        d.coset_ntt(&mut v);
        let expected: Vec<Scalar> = domain_points(&d, g)
            .iter()
            .map(|x| eval(&coeffs, x))
            .collect();
        assert_eq!(v, expected, "coset_ntt, log {log}, seed {seed}");
        d.coset_intt(&mut v);
        assert_eq!(v, coeffs, "coset_intt, log {log}, seed {seed}");

        // intt alone against naive interpolation: evaluating its output
        // must reproduce the input values.
        let values = random_vec(&mut rng, d.size());
        let mut c = values.clone();
        d.intt(&mut c);
        for (x, y) in domain_points(&d, Scalar::ONE).iter().zip(&values) {
            assert_eq!(
                eval(&c, x),
                *y,
                "intt interpolation, log {log}, seed {seed}"
            );
        }
        let mut c = values.clone();
        d.coset_intt(&mut c);
        for (x, y) in domain_points(&d, g).iter().zip(&values) {
            assert_eq!(
                eval(&c, x),
                *y,
                "coset_intt interpolation, log {log}, seed {seed}"
            );
        }
    }
}

/// Sizes above the serial leaf take the parallel recursive path: spot-check
/// evaluations there and check the round trips.
#[test]
fn large_transforms() {
    let (seed, mut rng) = common::rng();
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    for log in 12..=16 {
        let d = EvaluationDomain::new(1 << log).unwrap();
        let coeffs = random_vec(&mut rng, d.size());

        let mut v = coeffs.clone();
        d.ntt(&mut v);
        let mut c = coeffs.clone();
        d.coset_ntt(&mut c);
        for _ in 0..8 {
            let i = rng.gen_range(0..d.size());
            let x = d.omega().pow_vartime([i as u64]);
            assert_eq!(v[i], eval(&coeffs, &x), "ntt[{i}], log {log}, seed {seed}");
            assert_eq!(
                c[i],
                eval(&coeffs, &(g * x)),
                "coset_ntt[{i}], log {log}, seed {seed}"
            );
        }
        d.intt(&mut v);
        assert_eq!(v, coeffs, "ntt round trip, log {log}, seed {seed}");
        d.coset_intt(&mut c);
        assert_eq!(c, coeffs, "coset round trip, log {log}, seed {seed}");
    }
}

#[test]
#[should_panic]
fn wrong_length_panics() {
    let d = EvaluationDomain::new(8).unwrap();
    d.ntt(&mut [Scalar::ONE; 4]);
}

#[test]
fn vanishing_polynomial() {
    let (seed, mut rng) = common::rng();
    for log in [0, 1, 5, 13] {
        let d = EvaluationDomain::new(1 << log).unwrap();
        for x in domain_points(&d, Scalar::ONE).iter().step_by(97) {
            assert_eq!(d.z_at(x), Scalar::ZERO);
        }
        let x = Scalar::random(&mut rng);
        assert_eq!(
            d.z_at(&x),
            x.pow_vartime([d.size() as u64]) - Scalar::ONE,
            "seed {seed}"
        );

        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let zg = d.z_at(&g);
        assert_ne!(zg, Scalar::ZERO);
        let original = random_vec(&mut rng, d.size());
        let mut v = original.clone();
        d.divide_by_z_on_coset(&mut v);
        for (q, o) in v.iter().zip(&original) {
            assert_eq!(*q * zg, *o, "log {log}, seed {seed}");
        }
    }
}

#[test]
fn lagrange_coefficients() {
    let (seed, mut rng) = common::rng();
    for log in [0, 1, 2, 3, 7, 10, 13] {
        let d = EvaluationDomain::new(1 << log).unwrap();
        let n = d.size();
        let coeffs = random_vec(&mut rng, n);
        let mut evals = coeffs.clone();
        d.ntt(&mut evals);

        let k = rng.gen_range(0..n);
        let taus = [
            Scalar::random(&mut rng),
            Scalar::ZERO,
            d.omega().pow_vartime([k as u64]),
            Scalar::ONE,
        ];
        for tau in taus {
            let l = d.lagrange_coefficients_at(&tau);
            assert_eq!(l.len(), n);
            let combined = l
                .iter()
                .zip(&evals)
                .fold(Scalar::ZERO, |acc, (l, e)| acc + *l * e);
            assert_eq!(
                combined,
                eval(&coeffs, &tau),
                "log {log}, tau {tau:?}, seed {seed}"
            );
        }
        // Inside the domain the basis is an indicator vector.
        let l = d.lagrange_coefficients_at(&taus[2]);
        for (i, li) in l.iter().enumerate() {
            let expected = if i == k { Scalar::ONE } else { Scalar::ZERO };
            assert_eq!(*li, expected, "log {log}, i {i}, seed {seed}");
        }
    }
}
