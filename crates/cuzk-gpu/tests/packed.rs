//! Scalars packed on the host and unpacked on the device equal the scalars packed, on fresh
//! random witnesses (mostly 0 and 1, others among them, across the packing's chunks) and on the
//! edge cases: none, one, no others, no ones, a length off the bitmap's words, a staging buffer
//! holding other values before and after.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use blstrs::Scalar;
use cuzk_gpu::{DeviceScalars, PackedLayout, PackedScalars, Pinned};
use ff::Field;
use rand_core::RngCore;

/// Packs `values` (split in two parts at `split`, as inputs ++ aux), writes the packed form into
/// a staging buffer between other values, unpacks it on the device and reads it back.
fn round_trip(
    gpu: &cuzk_gpu::Lane,
    values: &[Scalar],
    split: usize,
) -> (PackedLayout, Vec<Scalar>) {
    let (inputs, aux) = values.split_at(split);
    let packed = PackedScalars::of(&[inputs, aux]).expect("mostly 0 and 1: packs");
    let layout = packed.layout();
    let start = 3;
    let mut staging = Pinned::<Scalar>::zeroed(gpu, start + layout.scalars() + 2).unwrap();
    staging.as_mut_slice().unwrap().fill(Scalar::from(77u64));
    packed
        .write(staging.words_mut(start, start + layout.scalars()).unwrap())
        .unwrap();
    let device = DeviceScalars::upload_packed(gpu, &staging, start, layout).unwrap();
    (layout, device.to_vec(gpu).unwrap())
}

#[test]
fn packed_witnesses_unpack_to_their_values() {
    let Some(gpu) = common::gpu("packed_witnesses_unpack_to_their_values") else {
        return;
    };
    let mut rng = common::rng("packed witnesses");
    let large = 1usize << common::max_log();
    for len in [1, 31, 33, 1000, (1 << 16) + 5, large + 17] {
        let values: Vec<Scalar> = (0..len)
            .map(|_| match rng.next_u32() % 100 {
                0..=2 => Scalar::random(&mut rng),
                3 => -Scalar::ONE,
                4..=50 => Scalar::ONE,
                _ => Scalar::ZERO,
            })
            .collect();
        let split = (rng.next_u32() as usize) % len;
        let (layout, back) = round_trip(&gpu, &values, split);
        assert_eq!(back, values, "length {len}, inputs {split}");
        assert!(
            len < 1000 || layout.others > 0,
            "others planted at length {len}"
        );
    }
}

#[test]
fn packed_edge_cases_unpack() {
    let Some(gpu) = common::gpu("packed_edge_cases_unpack") else {
        return;
    };
    let cases: Vec<(&str, Vec<Scalar>)> = vec![
        ("empty", Vec::new()),
        ("all zero", vec![Scalar::ZERO; 100]),
        ("all one", vec![Scalar::ONE; 97]),
        ("no ones", {
            let mut v = vec![Scalar::ZERO; 64];
            v[63] = Scalar::from(5u64);
            v[0] = -Scalar::ONE;
            v
        }),
        ("one other last", {
            let mut v = vec![Scalar::ONE; 65];
            v[64] = Scalar::from(2u64);
            v
        }),
    ];
    for (name, values) in cases {
        let (layout, back) = round_trip(&gpu, &values, 0);
        assert_eq!(back, values, "{name}");
        assert_eq!(layout.len, values.len(), "{name}");
    }
}
