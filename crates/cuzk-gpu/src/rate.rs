//! The field product rate this device reaches with our field code: a dependent chain of products
//! per thread, enough threads to fill every SM. Kernel timings read against it show how far they
//! are from the arithmetic they cannot avoid, on whatever GPU runs them. The chains' results are
//! checked against blstrs, so a rate is never reported for wrong products.

use blstrs::{Fp, G1Affine, Scalar};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use ff::Field;
use group::prime::PrimeCurveAffine;

use crate::error::DriverContext;
use crate::layout::{as_words, fp_from_words, shoup_factor_words, FP_WORDS, SCALAR_WORDS};
use crate::{GpuError, Lane};

/// The products the kernels spend their time on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProductField {
    /// The scalar field (scalar arithmetic, NTT scaling).
    Fr,
    /// Scalar-field products by a fixed factor in Shoup's form (the NTT's twiddles).
    FrFixedFactor,
    /// The base field (curve arithmetic: MSMs, batch additions).
    Fp,
}

/// Field products per second on this device, timed with CUDA events after one warm-up launch;
/// an error if the products disagree with the CPU's.
pub fn product_rate(gpu: &Lane, field: ProductField) -> Result<f64, GpuError> {
    const BLOCK: u32 = 128;
    const ITERS: u32 = 1000;
    // Two full waves of the most threads an SM can hold, so occupancy is what the kernel allows.
    let threads = gpu.multiprocessors() * 2048 * 2;
    let (kernel, a, b) = match field {
        ProductField::Fr => {
            let words = as_words(&[Scalar::from(7u64), Scalar::from(11u64)]).to_vec();
            ("product_chain_fr", words[..8].to_vec(), words[8..].to_vec())
        }
        ProductField::FrFixedFactor => {
            let x = as_words(&[Scalar::from(7u64)]).to_vec();
            let factor = shoup_factor_words(&Scalar::from(11u64)).to_vec();
            ("product_chain_fr_fixed", x, factor)
        }
        ProductField::Fp => {
            // A point's coordinates: two reduced Fp elements in the device layout.
            let words = as_words(&[G1Affine::generator()]).to_vec();
            (
                "product_chain_fp",
                words[..12].to_vec(),
                words[12..].to_vec(),
            )
        }
    };
    let n = threads as usize;
    let stream = gpu.stream();
    let mut x = stream.clone_htod(&a.repeat(n)).call("upload")?;
    let y = stream.clone_htod(&b.repeat(n)).call("upload")?;
    let f = gpu.kernel(kernel)?;
    let config = LaunchConfig {
        grid_dim: (threads.div_ceil(BLOCK), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = || {
        // SAFETY: x and y hold `threads` elements each of the kernel's field (y: factors, two
        // elements each, for the fixed-factor chain); it reads both and writes x, each thread its
        // own element.
        unsafe {
            stream
                .launch_builder(&f)
                .arg(&mut x)
                .arg(&y)
                .arg(&threads)
                .arg(&ITERS)
                .launch(config)
        }
        .call(kernel)
        .map(|_| ())
    };
    launch()?;
    let ((), ms) = gpu.time(launch)?;
    // Every thread's element is a·b^(2·ITERS) after the two launches; check one.
    let words = stream.clone_dtoh(&x.slice(..a.len())).call("download")?;
    let exponent = [2 * u64::from(ITERS)];
    let right = match field {
        ProductField::Fr | ProductField::FrFixedFactor => {
            let expected = Scalar::from(7u64) * Scalar::from(11u64).pow_vartime(exponent);
            words == as_words(&[expected])[..SCALAR_WORDS]
        }
        ProductField::Fp => {
            let g = G1Affine::generator();
            let expected: Fp = g.x() * g.y().pow_vartime(exponent);
            fp_from_words(&words[..FP_WORDS]) == expected
        }
    };
    if !right {
        return Err(GpuError::InvalidInput {
            what: "device result",
            reason: format!("{kernel}: the device's products disagree with blstrs'"),
        });
    }
    Ok(f64::from(threads) * f64::from(ITERS) / (f64::from(ms) / 1e3))
}
