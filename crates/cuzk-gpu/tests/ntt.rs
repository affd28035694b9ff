//! GPU NTTs agree bit for bit with `cuzk_math::EvaluationDomain` at every size, for every
//! transform and order, round-trip with no permutation, and chain into the coset quotient
//! (a∘b − c)/Z the way a Groth16 prover computes H.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use blstrs::Scalar;
use cuzk_gpu::ntt::{
    ab_minus_c, bit_reverse, minus_scaled, mul_assign, ntt, ntt_host, Coset, Direction, NttOrder,
    NttTables, Transform,
};
use cuzk_gpu::{DeviceScalars, GpuError, Lane, Pinned};
use cuzk_math::EvaluationDomain;
use ff::{Field, PrimeField};
use rand_core::RngCore;

const ORDERS: [NttOrder; 3] = [
    NttOrder::NaturalToBitReversed,
    NttOrder::BitReversedToNatural,
    NttOrder::NaturalToNatural,
];

const KINDS: [fn(NttOrder) -> Transform; 4] = [
    Transform::ntt,
    Transform::intt,
    Transform::coset_ntt,
    Transform::coset_intt,
];

fn random(rng: &mut impl RngCore, n: usize) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

/// The CPU result of `transform`, natural order in and out.
fn cpu(domain: &EvaluationDomain, transform: Transform, values: &[Scalar]) -> Vec<Scalar> {
    let mut v = values.to_vec();
    match (transform.direction, transform.coset) {
        (Direction::Forward, Coset::None) => domain.ntt(&mut v),
        (Direction::Forward, Coset::Shifted) => domain.coset_ntt(&mut v),
        (Direction::Inverse, Coset::None) => domain.intt(&mut v),
        (Direction::Inverse, Coset::Shifted) => domain.coset_intt(&mut v),
    }
    v
}

/// Position p gets the value of index rev(p).
fn bit_reversed(values: &[Scalar]) -> Vec<Scalar> {
    let n = values.len();
    if n <= 1 {
        return values.to_vec();
    }
    let shift = usize::BITS - n.trailing_zeros();
    (0..n).map(|p| values[p.reverse_bits() >> shift]).collect()
}

fn assert_same(got: &[Scalar], want: &[Scalar], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let wrong: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
    if let Some(&first) = wrong.first() {
        panic!(
            "{what}: {} of {} values differ; first at {first}: got {:?}, want {:?}",
            wrong.len(),
            got.len(),
            got[first],
            want[first]
        );
    }
}

/// Runs `transform` on the device on natural-order `values` (bit-reversed first if the order
/// takes them so) and compares with the CPU's natural-order result `want` in the output order.
fn check(
    gpu: &Lane,
    tables: &NttTables,
    values: &[Scalar],
    want: &[Scalar],
    transform: Transform,
    what: &str,
) {
    let input = match transform.order {
        NttOrder::BitReversedToNatural => bit_reversed(values),
        _ => values.to_vec(),
    };
    let expect = match transform.order {
        NttOrder::NaturalToBitReversed => bit_reversed(want),
        _ => want.to_vec(),
    };
    let mut data = DeviceScalars::upload(gpu, &input).unwrap();
    ntt(gpu, tables, &mut data, transform).unwrap();
    assert_same(&data.to_vec(gpu).unwrap(), &expect, what);
}

/// log2 sizes 0..=max_log.
fn all_logs() -> impl Iterator<Item = u32> {
    0..=common::max_log()
}

/// Sizes around the pass boundaries (one pass up to 2^10, two up to 2^20, three beyond) and the
/// largest tested.
fn boundary_logs() -> Vec<u32> {
    let max = common::max_log();
    let mut logs: Vec<u32> = [0, 1, 2, 3, 4, 9, 10, 11, 12, 19, 20, 21, max]
        .into_iter()
        .filter(|&l| l <= max)
        .collect();
    logs.dedup();
    logs
}

#[test]
fn every_transform_and_order_matches_the_cpu() {
    let Some(gpu) = common::gpu("every_transform_and_order_matches_the_cpu") else {
        return;
    };
    let mut rng = common::rng("every_transform_and_order_matches_the_cpu");
    for log in all_logs() {
        let n = 1usize << log;
        let domain = EvaluationDomain::new(n).unwrap();
        let tables = NttTables::new(&gpu, log).unwrap();
        for kind in KINDS {
            let values = random(&mut rng, n);
            let want = cpu(&domain, kind(NttOrder::NaturalToNatural), &values);
            for order in ORDERS {
                let transform = kind(order);
                check(
                    &gpu,
                    &tables,
                    &values,
                    &want,
                    transform,
                    &format!("2^{log} {transform:?}"),
                );
            }
        }
    }
}

#[test]
fn round_trips_need_no_permutation() {
    let Some(gpu) = common::gpu("round_trips_need_no_permutation") else {
        return;
    };
    let mut rng = common::rng("round_trips_need_no_permutation");
    type Kind = fn(NttOrder) -> Transform;
    let there_and_back: [(Kind, Kind); 4] = [
        (Transform::ntt, Transform::intt),
        (Transform::coset_ntt, Transform::coset_intt),
        (Transform::intt, Transform::ntt),
        (Transform::coset_intt, Transform::coset_ntt),
    ];
    for log in all_logs() {
        let tables = NttTables::new(&gpu, log).unwrap();
        let values = random(&mut rng, 1 << log);
        for (there, back) in there_and_back {
            let (there, back) = (
                there(NttOrder::NaturalToBitReversed),
                back(NttOrder::BitReversedToNatural),
            );
            let mut data = DeviceScalars::upload(&gpu, &values).unwrap();
            ntt(&gpu, &tables, &mut data, there).unwrap();
            ntt(&gpu, &tables, &mut data, back).unwrap();
            assert_same(
                &data.to_vec(&gpu).unwrap(),
                &values,
                &format!("2^{log} {there:?} then {back:?}"),
            );
        }
    }
}

#[test]
fn edge_inputs_match_the_cpu() {
    let Some(gpu) = common::gpu("edge_inputs_match_the_cpu") else {
        return;
    };
    for log in boundary_logs() {
        let n = 1usize << log;
        let domain = EvaluationDomain::new(n).unwrap();
        let tables = NttTables::new(&gpu, log).unwrap();
        let mut first = vec![Scalar::ZERO; n];
        first[0] = Scalar::ONE;
        let mut last = vec![Scalar::ZERO; n];
        last[n - 1] = Scalar::ONE;
        let inputs = [
            ("zero", vec![Scalar::ZERO; n]),
            ("one", vec![Scalar::ONE; n]),
            ("delta_0", first),
            ("delta_n-1", last),
        ];
        for (name, values) in &inputs {
            for kind in KINDS {
                let want = cpu(&domain, kind(NttOrder::NaturalToNatural), values);
                for order in ORDERS {
                    let transform = kind(order);
                    let what = format!("2^{log} {name} {transform:?}");
                    check(&gpu, &tables, values, &want, transform, &what);
                }
                // The host convenience: upload, transform, download into the same slice.
                let mut host = values.clone();
                ntt_host(&gpu, &tables, &mut host, kind(NttOrder::NaturalToNatural)).unwrap();
                assert_same(&host, &want, &format!("2^{log} {name} ntt_host"));
            }
        }
    }
}

/// H as a Groth16 prover computes it: a, b, c are evaluations on H; interpolate each, evaluate
/// on the coset g·H, take (a∘b − c)/Z there, interpolate back from the coset. On the device every
/// step chains with no permutation; h comes out bit-reversed (or natural with one permutation).
#[test]
fn quotient_chain_matches_the_cpu() {
    let Some(gpu) = common::gpu("quotient_chain_matches_the_cpu") else {
        return;
    };
    let mut rng = common::rng("quotient_chain_matches_the_cpu");
    for log in boundary_logs() {
        let n = 1usize << log;
        let domain = EvaluationDomain::new(n).unwrap();
        let (a, b, c) = (
            random(&mut rng, n),
            random(&mut rng, n),
            random(&mut rng, n),
        );

        let to_coset = |v: &[Scalar]| {
            let mut v = v.to_vec();
            domain.intt(&mut v);
            domain.coset_ntt(&mut v);
            v
        };
        let (ca, cb, cc) = (to_coset(&a), to_coset(&b), to_coset(&c));
        let mut want: Vec<Scalar> = (0..n).map(|i| ca[i] * cb[i] - cc[i]).collect();
        domain.divide_by_z_on_coset(&mut want);
        domain.coset_intt(&mut want);

        let tables = NttTables::new(&gpu, log).unwrap();
        let z = domain.z_at(&Scalar::MULTIPLICATIVE_GENERATOR);
        let z_inv = z.invert().unwrap();
        let on_coset = |v: &[Scalar]| {
            let mut d = DeviceScalars::upload(&gpu, v).unwrap();
            let interpolate = Transform::intt(NttOrder::NaturalToBitReversed);
            ntt(&gpu, &tables, &mut d, interpolate).unwrap();
            let evaluate = Transform::coset_ntt(NttOrder::BitReversedToNatural);
            ntt(&gpu, &tables, &mut d, evaluate).unwrap();
            d
        };
        for last_order in [NttOrder::NaturalToBitReversed, NttOrder::NaturalToNatural] {
            let (mut h, db, dc) = (on_coset(&a), on_coset(&b), on_coset(&c));
            ab_minus_c(&gpu, &mut h, &db, &dc, z_inv).unwrap();
            ntt(&gpu, &tables, &mut h, Transform::coset_intt(last_order)).unwrap();
            let expect = match last_order {
                NttOrder::NaturalToBitReversed => bit_reversed(&want),
                _ => want.clone(),
            };
            assert_same(
                &h.to_vec(&gpu).unwrap(),
                &expect,
                &format!("2^{log} quotient, last step {last_order:?}"),
            );
            // In two steps with two vectors at a time, as a device short of memory computes it.
            let (mut h, db) = (on_coset(&a), on_coset(&b));
            mul_assign(&gpu, &mut h, &db).unwrap();
            drop(db);
            minus_scaled(&gpu, &mut h, &on_coset(&c), z_inv).unwrap();
            ntt(&gpu, &tables, &mut h, Transform::coset_intt(last_order)).unwrap();
            assert_same(
                &h.to_vec(&gpu).unwrap(),
                &expect,
                &format!("2^{log} quotient in two steps, last step {last_order:?}"),
            );
        }
    }
}

#[test]
fn bit_reverse_matches_the_host_permutation() {
    let Some(gpu) = common::gpu("bit_reverse_matches_the_host_permutation") else {
        return;
    };
    let mut rng = common::rng("bit_reverse_matches_the_host_permutation");
    for log in boundary_logs() {
        let values = random(&mut rng, 1 << log);
        let mut data = DeviceScalars::upload(&gpu, &values).unwrap();
        bit_reverse(&gpu, &mut data).unwrap();
        assert_same(
            &data.to_vec(&gpu).unwrap(),
            &bit_reversed(&values),
            &format!("2^{log} once"),
        );
        bit_reverse(&gpu, &mut data).unwrap();
        assert_same(
            &data.to_vec(&gpu).unwrap(),
            &values,
            &format!("2^{log} twice"),
        );
    }
}

#[test]
fn bad_sizes_are_refused() {
    let Some(gpu) = common::gpu("bad_sizes_are_refused") else {
        return;
    };
    let invalid = |r: Result<(), GpuError>, what: &str| {
        assert!(
            matches!(r, Err(GpuError::InvalidInput { .. })),
            "{what}: {r:?}"
        );
    };
    invalid(NttTables::new(&gpu, 29).map(drop), "2^29 tables");
    invalid(NttTables::for_len(&gpu, 0).map(drop), "0 points");
    invalid(NttTables::for_len(&gpu, 3).map(drop), "3 points");
    invalid(NttTables::for_len(&gpu, 1 << 29).map(drop), "2^29 points");
    assert_eq!(NttTables::for_len(&gpu, 1 << 4).unwrap().log_n(), 4);

    let tables = NttTables::new(&gpu, 3).unwrap();
    let mut seven = DeviceScalars::upload(&gpu, &[Scalar::ONE; 7]).unwrap();
    let mut sixteen = DeviceScalars::upload(&gpu, &[Scalar::ONE; 16]).unwrap();
    let transform = Transform::ntt(NttOrder::NaturalToNatural);
    invalid(
        ntt(&gpu, &tables, &mut seven, transform),
        "7 points, 2^3 tables",
    );
    invalid(
        ntt(&gpu, &tables, &mut sixteen, transform),
        "16 points, 2^3 tables",
    );
    invalid(
        ntt_host(&gpu, &tables, &mut [Scalar::ONE; 4], transform),
        "host 4 points, 2^3 tables",
    );
    invalid(bit_reverse(&gpu, &mut seven), "bit reversal of 7");
    invalid(
        seven.download(&gpu, &mut [Scalar::ZERO; 8]),
        "download 7 into 8",
    );
    let eight = DeviceScalars::upload(&gpu, &[Scalar::ONE; 8]).unwrap();
    invalid(
        ab_minus_c(&gpu, &mut sixteen, &eight, &eight, Scalar::ONE),
        "a∘b − c of 16, 8, 8",
    );
    invalid(mul_assign(&gpu, &mut sixteen, &eight), "a∘b of 16, 8");
    invalid(
        minus_scaled(&gpu, &mut sixteen, &eight, Scalar::ONE),
        "a − c of 16, 8",
    );
    // The refused calls left the data alone.
    assert_same(
        &seven.to_vec(&gpu).unwrap(),
        &[Scalar::ONE; 7],
        "7 points after refusals",
    );
}

/// Device time of each transform at 2^CUZK_NTT_TIME_LOG (default: the largest tested size), data
/// resident; printed, not checked.
#[test]
fn reports_device_time() {
    let Some(gpu) = common::gpu("reports_device_time") else {
        return;
    };
    let log = std::env::var("CUZK_NTT_TIME_LOG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(common::max_log);
    let tables = NttTables::new(&gpu, log).unwrap();
    // The arithmetic has no data-dependent branches: any values time the same.
    let mut data = DeviceScalars::upload(&gpu, &vec![Scalar::ONE; 1 << log]).unwrap();
    for kind in KINDS {
        for order in ORDERS {
            let transform = kind(order);
            ntt(&gpu, &tables, &mut data, transform).unwrap(); // warm-up
            let ((), ms) = gpu
                .time(|| ntt(&gpu, &tables, &mut data, transform))
                .unwrap();
            eprintln!("NTT 2^{log} on {}: {transform:?}: {ms:.3} ms", gpu.name());
        }
    }
}

/// One forward NTT and one coset inverse NTT at the largest size alone (run with
/// CUZK_GPU_TEST_MAX_LOG=27 for the 2^27 check).
#[test]
fn largest_ntt_matches_the_cpu() {
    let Some(gpu) = common::gpu("largest_ntt_matches_the_cpu") else {
        return;
    };
    let mut rng = common::rng("largest_ntt_matches_the_cpu");
    let log = common::max_log();
    let tables = NttTables::new(&gpu, log).unwrap();
    check_forward_and_coset_inverse(&gpu, &tables, &mut rng, &format!("2^{log}"));
}

/// A forward NTT (natural → bit-reversed) and a coset inverse one (back) of fresh random values
/// against the CPU.
fn check_forward_and_coset_inverse(
    gpu: &Lane,
    tables: &NttTables,
    rng: &mut impl RngCore,
    what: &str,
) {
    let n = tables.size();
    let domain = EvaluationDomain::new(n).unwrap();
    let values = random(rng, n);
    for transform in [
        Transform::ntt(NttOrder::NaturalToBitReversed),
        Transform::coset_intt(NttOrder::BitReversedToNatural),
    ] {
        let want = cpu(&domain, transform, &values);
        check(
            gpu,
            tables,
            &values,
            &want,
            transform,
            &format!("{what} {transform:?}"),
        );
    }
}

/// Where the top passes' direct tables do not fit (memory capped just below their share), the
/// tables fall back to two-level twiddles for the top pass, and the transforms still match the
/// CPU; with the memory, the same size gets the direct tables.
#[test]
fn tables_without_direct_top_twiddles_match_the_cpu() {
    let Some(gpu) = common::gpu("tables_without_direct_top_twiddles_match_the_cpu") else {
        return;
    };
    let mut rng = common::rng("tables_without_direct_top_twiddles_match_the_cpu");
    let log = 14;
    let n = 1usize << log;
    // Both directions' tables hold n/2 scalars each: n·32 bytes, built within 1/16 of the free.
    let limit = Some(n * 32 * 16 - 1);
    let tables = common::with_memory_limit(&gpu, limit, || NttTables::new(&gpu, log)).unwrap();
    assert!(tables.two_level_top());
    if gpu.shared_per_multiprocessor() >= 3 * 64 * 1024 {
        assert!(!NttTables::new(&gpu, log).unwrap().two_level_top());
    }
    check_forward_and_coset_inverse(
        &gpu,
        &tables,
        &mut rng,
        &format!("2^{log}, two-level top twiddles"),
    );
}

/// Host → device → host through page-locked buffers, around a transform.
#[test]
fn pinned_round_trip_matches_the_cpu() {
    let Some(gpu) = common::gpu("pinned_round_trip_matches_the_cpu") else {
        return;
    };
    let mut rng = common::rng("pinned_round_trip_matches_the_cpu");
    let log = 12;
    let domain = EvaluationDomain::new(1 << log).unwrap();
    let tables = NttTables::new(&gpu, log).unwrap();
    let values = random(&mut rng, 1 << log);
    let transform = Transform::ntt(NttOrder::NaturalToNatural);
    let pinned = Pinned::from_slice(&gpu, &values).unwrap();
    let mut data = DeviceScalars::upload_pinned(&gpu, &pinned).unwrap();
    ntt(&gpu, &tables, &mut data, transform).unwrap();
    let mut out = Pinned::from_slice(&gpu, &vec![Scalar::ZERO; 1 << log]).unwrap();
    data.download_pinned(&gpu, &mut out).unwrap();
    assert_same(
        out.as_slice().unwrap(),
        &cpu(&domain, transform, &values),
        "pinned NTT",
    );
}
