//! Device scalar vectors: dropping a prefix in place keeps exactly the suffix, at sizes that take
//! one bounce chunk, several, and a partial last one.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use blstrs::Scalar;
use cuzk_gpu::{DeviceScalars, GpuError};
use ff::Field;

#[test]
fn removing_a_prefix_keeps_the_suffix() {
    let Some(gpu) = common::gpu("removing_a_prefix_keeps_the_suffix") else {
        return;
    };
    let mut rng = common::rng("removing_a_prefix_keeps_the_suffix");
    // The bounce chunk is 2^21 scalars: one, several with a partial last, and an empty suffix.
    for (len, count) in [
        (10, 3),
        (5 << 20, 7),
        ((1 << 22) + 5, 1 << 21),
        (8, 8),
        (8, 0),
    ] {
        let values: Vec<Scalar> = (0..len).map(|_| Scalar::random(&mut rng)).collect();
        let mut device = DeviceScalars::upload(&gpu, &values).unwrap();
        device.remove_front(&gpu, count).unwrap();
        assert_eq!(device.len(), len - count);
        assert!(
            device.to_vec(&gpu).unwrap() == values[count..],
            "{len} scalars less {count}"
        );
    }
    let mut four = DeviceScalars::upload(&gpu, &[Scalar::ONE; 4]).unwrap();
    assert!(matches!(
        four.remove_front(&gpu, 5),
        Err(GpuError::InvalidInput { .. })
    ));
    assert_eq!(four.len(), 4);
}
