//! Field and curve kernels agree with blstrs element by element, which also pins down the
//! host↔device layout (uploads are byte copies of blstrs values).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use cuzk_gpu::layout::{as_words, shoup_factor_words, XyzzPoint, FP_WORDS, SCALAR_WORDS};
use cuzk_gpu::rate::{product_rate, ProductField};
use cuzk_gpu::Lane;
use ff::{Field, PrimeField};
use group::{Curve, Group};
use rand_core::RngCore;

/// 128 threads per block: the curve kernels use too many registers for 1024.
fn blocks_of_128(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(128) as u32, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn words_of<T: Copy>(values: &[T]) -> Vec<u32> {
    let bytes = std::mem::size_of_val(values);
    // Test-only reinterpretation of blstrs field values (u64 limbs) as u32 words.
    let ptr = values.as_ptr().cast::<u32>();
    // SAFETY: T is a blstrs field type: plain u64 limbs, no padding, alignment ≥ 4.
    unsafe { std::slice::from_raw_parts(ptr, bytes / 4) }.to_vec()
}

/// Runs `kernel(a, b, out, n)` and returns `out` (`out_words` u32 per element).
fn launch(
    gpu: &Lane,
    kernel: &'static str,
    a: &[u32],
    b: &[u32],
    n: usize,
    out_words: usize,
) -> Vec<u32> {
    let stream = gpu.stream();
    let (da, db) = (stream.clone_htod(a).unwrap(), stream.clone_htod(b).unwrap());
    // Poison the output so an unwritten element cannot pass.
    let mut out = stream
        .clone_htod(&vec![0xdeadbeefu32; n * out_words])
        .unwrap();
    let f = gpu.kernel(kernel).unwrap();
    let n32 = n as u32;
    // SAFETY: a and b hold n elements, out n·out_words words, as the kernel expects.
    unsafe {
        stream
            .launch_builder(&f)
            .arg(&da)
            .arg(&db)
            .arg(&mut out)
            .arg(&n32)
            .launch(blocks_of_128(n))
            .unwrap();
    }
    stream.clone_dtoh(&out).unwrap()
}

fn edge_and_random<F: Field>(rng: &mut impl RngCore, n: usize) -> Vec<F> {
    let mut v = vec![F::ZERO, F::ONE, -F::ONE, F::ONE.double(), -F::ONE.double()];
    v.extend((v.len()..n).map(|_| F::random(&mut *rng)));
    v
}

/// Values whose stored (Montgomery) integer is small or just below the modulus: k·R⁻¹ and −k·R⁻¹
/// for R = 2^`stored_bits`. The inversion works on the stored integer, and such values take its
/// shortest and longest paths.
fn small_stored<F: Field>(stored_bits: u64) -> Vec<F> {
    let pow2 = |e: u64| F::ONE.double().pow_vartime([e]);
    let r_inv = pow2(stored_bits).invert().unwrap();
    // 1, 2, 3, 2^31, 2^32, 2^62, 2^64 − 1
    [
        F::ONE,
        pow2(1),
        pow2(1) + F::ONE,
        pow2(31),
        pow2(32),
        pow2(62),
        pow2(64) - F::ONE,
    ]
    .into_iter()
    .flat_map(|k| [k * r_inv, -(k * r_inv)])
    .collect()
}

fn check_field<F: Field>(
    gpu: &Lane,
    kernel: &'static str,
    words: usize,
    stored_bits: u64,
    rng: &mut impl RngCore,
) {
    let n = 4099;
    let mut a: Vec<F> = edge_and_random(rng, n);
    let small = small_stored::<F>(stored_bits);
    a[n - small.len()..].copy_from_slice(&small);
    let mut b: Vec<F> = edge_and_random(rng, n);
    b.rotate_left(2);
    let out = launch(gpu, kernel, &words_of(&a), &words_of(&b), n, 5 * words);
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let expect = [
            x + y,
            x - y,
            x * y,
            x.square(),
            x.invert().unwrap_or(F::ZERO),
        ];
        assert_eq!(
            &out[5 * i * words..5 * (i + 1) * words],
            &words_of(&expect)[..],
            "{kernel} element {i}"
        );
    }
}

#[test]
fn field_arithmetic_matches_blstrs() {
    let Some(gpu) = common::gpu("field_arithmetic_matches_blstrs") else {
        return;
    };
    let mut rng = common::rng("field_arithmetic_matches_blstrs");
    check_field::<Scalar>(&gpu, "arith_field_fr", SCALAR_WORDS, 256, &mut rng);
    check_field::<Fp>(&gpu, "arith_field_fp", FP_WORDS, 384, &mut rng);
    check_field::<Fp2>(&gpu, "arith_field_fp2", 2 * FP_WORDS, 384, &mut rng);
}

#[test]
fn scalars_convert_between_montgomery_and_canonical_form() {
    let Some(gpu) = common::gpu("scalars_convert") else {
        return;
    };
    let mut rng = common::rng("scalars_convert");
    let n = 1000;
    let scalars: Vec<Scalar> = edge_and_random(&mut rng, n);
    let stream = gpu.stream();
    let input = stream.clone_htod(as_words(&scalars)).unwrap();
    let mut canonical = stream.alloc_zeros::<u32>(n * SCALAR_WORDS).unwrap();
    let mut back = stream.alloc_zeros::<u32>(n * SCALAR_WORDS).unwrap();
    let f = gpu.kernel("arith_fr_canonical").unwrap();
    let n32 = n as u32;
    // SAFETY: three buffers of n scalars each.
    unsafe {
        stream
            .launch_builder(&f)
            .arg(&input)
            .arg(&mut canonical)
            .arg(&mut back)
            .arg(&n32)
            .launch(blocks_of_128(n))
            .unwrap();
    }
    let canonical = stream.clone_dtoh(&canonical).unwrap();
    let back = stream.clone_dtoh(&back).unwrap();
    for (i, s) in scalars.iter().enumerate() {
        let expect = common::limbs(s.to_repr().as_ref());
        assert_eq!(&canonical[i * 8..(i + 1) * 8], &expect[..], "canonical {i}");
    }
    assert_eq!(back, as_words(&scalars), "round trip");
}

/// a < b, both little-endian limbs of one length.
fn below(a: &[u32], b: &[u32]) -> bool {
    a.iter().rev().cmp(b.iter().rev()) == std::cmp::Ordering::Less
}

/// a + b, or a − b, over the limbs' width (the caller keeps the result in range).
fn add_words(a: &[u32], b: &[u32], subtract: bool) -> Vec<u32> {
    let mut carry = 0i64;
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let t = i64::from(x)
                + carry
                + if subtract {
                    -i64::from(y)
                } else {
                    i64::from(y)
                };
            carry = t >> 32;
            t as u32
        })
        .collect()
}

#[test]
fn lazy_range_matches_blstrs() {
    let Some(gpu) = common::gpu("lazy_range_matches_blstrs") else {
        return;
    };
    let mut rng = common::rng("lazy_range_matches_blstrs");
    let r = common::modulus(&(-Scalar::ONE).to_bytes_le());
    let two_r = add_words(&r, &r, false);
    // A value below 2r stands for its field element either as the stored integer x < r or as
    // x + r. Every pair of edge values (with stored integers 0, 1, r − 1, …) both ways each, then
    // random ones.
    let mut edges: Vec<Scalar> = edge_and_random(&mut rng, 5);
    edges.extend(small_stored::<Scalar>(256));
    let mut cases = Vec::new();
    for &x in &edges {
        for &y in &edges {
            cases.extend((0..4).map(|lift| (x, lift & 1 != 0, y, lift & 2 != 0)));
        }
    }
    while cases.len() < 4099 {
        let lift = rng.next_u32();
        cases.push((
            Scalar::random(&mut rng),
            lift & 1 != 0,
            Scalar::random(&mut rng),
            lift & 2 != 0,
        ));
    }
    let raw = |v: Scalar, lift: bool| {
        let w = words_of(&[v]);
        if lift {
            add_words(&w, &r, false)
        } else {
            w
        }
    };
    let a: Vec<u32> = cases.iter().flat_map(|&(x, lx, _, _)| raw(x, lx)).collect();
    let b: Vec<u32> = cases.iter().flat_map(|&(_, _, y, ly)| raw(y, ly)).collect();
    let n = cases.len();
    // A lazy-range result: below 2r, and `want` once r is subtracted where it is not below r.
    let check_lazy = |value: &[u32], want: Scalar, what: &str| {
        assert!(below(value, &two_r), "{what} is not below 2r");
        let reduced = if below(value, &r) {
            value.to_vec()
        } else {
            add_words(value, &r, true)
        };
        assert_eq!(reduced, words_of(&[want]), "{what}");
    };
    let out = launch(&gpu, "arith_fr_lazy", &a, &b, n, 4 * SCALAR_WORDS);
    for (i, &(x, lx, y, ly)) in cases.iter().enumerate() {
        let what = |op: &str| format!("element {i} ({op}, lifted {lx}, {ly})");
        let got = |k: usize| &out[(4 * i + k) * SCALAR_WORDS..(4 * i + k + 1) * SCALAR_WORDS];
        for (k, op, want) in [(0, "a + b", x + y), (1, "a − b", x - y), (2, "a·b", x * y)] {
            check_lazy(got(k), want, &what(op));
        }
        assert_eq!(got(3), &words_of(&[x])[..], "{}", what("reduced"));
    }
    // The Shoup product by b as a fixed factor (plain integer and quotient).
    let factors: Vec<u32> = cases
        .iter()
        .flat_map(|(_, _, y, _)| shoup_factor_words(y))
        .collect();
    let out = launch(&gpu, "arith_fr_shoup", &a, &factors, n, SCALAR_WORDS);
    for (i, (value, &(x, lx, y, _))) in out.chunks_exact(SCALAR_WORDS).zip(&cases).enumerate() {
        check_lazy(
            value,
            x * y,
            &format!("element {i} (Shoup a·b, lifted {lx})"),
        );
    }
}

fn check_curve<A, P>(gpu: &Lane, kernel: &'static str, rng: &mut impl RngCore)
where
    A: cuzk_gpu::layout::DeviceWords + Into<P> + Copy,
    P: Group + Curve<AffineRepr = A> + XyzzPoint + std::fmt::Debug,
{
    let n = 300;
    let mut a: Vec<P> = (0..n).map(|_| P::random(&mut *rng)).collect();
    let mut b: Vec<P> = (0..n).map(|_| P::random(&mut *rng)).collect();
    // Edge cases: identities, equal points (doubling), opposite points (cancel).
    a[0] = P::identity();
    b[1] = P::identity();
    (a[2], b[2]) = (P::identity(), P::identity());
    b[3] = a[3];
    b[4] = -a[4];
    let to_affine = |v: &[P]| v.iter().map(|p| p.to_affine()).collect::<Vec<A>>();
    let (aa, ba) = (to_affine(&a), to_affine(&b));
    let words = P::XYZZ_WORDS;
    let out = launch(gpu, kernel, as_words(&aa), as_words(&ba), n, 3 * words);
    for i in 0..n {
        let got =
            |k: usize| P::from_xyzz(&out[(3 * i + k) * words..(3 * i + k + 1) * words]).unwrap();
        assert_eq!(got(0), a[i] + b[i], "{kernel} mixed add {i}");
        assert_eq!(got(1), a[i] + b[i], "{kernel} add {i}");
        assert_eq!(got(2), a[i].double(), "{kernel} double {i}");
    }
}

#[test]
fn curve_arithmetic_matches_blstrs() {
    let Some(gpu) = common::gpu("curve_arithmetic_matches_blstrs") else {
        return;
    };
    let mut rng = common::rng("curve_arithmetic_matches_blstrs");
    check_curve::<G1Affine, G1Projective>(&gpu, "arith_curve_g1", &mut rng);
    check_curve::<G2Affine, G2Projective>(&gpu, "arith_curve_g2", &mut rng);
}

#[test]
fn product_rate_is_measured_on_right_products() {
    let Some(gpu) = common::gpu("product_rate_is_measured_on_right_products") else {
        return;
    };
    for field in [
        ProductField::Fr,
        ProductField::FrFixedFactor,
        ProductField::Fp,
    ] {
        let rate = product_rate(&gpu, field).unwrap();
        assert!(rate.is_finite() && rate > 0.0, "{field:?}: {rate}");
    }
}
