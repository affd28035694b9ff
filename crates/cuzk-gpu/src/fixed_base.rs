//! Fixed-base multiplication on the device: `s_i · G` for one generator `G` and many scalars,
//! which is every query point of a Groth16 key (`cuda/setup/fixed_base.cuh`).
//!
//! The caller builds the window table on the host (`cuzk_math::FixedBaseTable::entries`, a few
//! thousand points); each scalar then costs one mixed addition per window and one inversion.

use blstrs::{G1Affine, G2Affine, Scalar};
use cudarc::driver::{CudaView, PushKernelArg};

use crate::error::DriverContext;
use crate::layout::{as_words, as_words_mut, DeviceWords, SCALAR_WORDS};
use crate::msm::{grid, DeviceBases, MsmAffine};
use crate::{GpuError, Lane};

/// An affine point type the fixed-base kernel makes.
pub trait FixedBaseAffine: DeviceWords + Default {
    const KERNEL: &'static str;
}

impl FixedBaseAffine for G1Affine {
    const KERNEL: &'static str = "fixed_base_g1";
}

impl FixedBaseAffine for G2Affine {
    const KERNEL: &'static str = "fixed_base_g2";
}

/// Scalars per launch: bounds the device memory a call holds (2^24: 0.5 GB of scalars beside
/// 1.6 GB of G1 or 3.2 GB of G2 points).
const CHUNK: usize = 1 << 24;

/// `scalars[i] · G` for every scalar, in order, where `table` holds `G`'s window multiples of
/// width `window_bits` as `cuzk_math::FixedBaseTable::entries` lays them out (`windows` windows
/// of `2^(window_bits − 1)` entries).
pub fn fixed_base_multiply<A: FixedBaseAffine>(
    gpu: &Lane,
    table: &[A],
    window_bits: u32,
    windows: u32,
    scalars: &[Scalar],
) -> Result<Vec<A>, GpuError> {
    let mut out = vec![A::default(); scalars.len()];
    multiply_chunks(
        gpu,
        table,
        window_bits,
        windows,
        scalars,
        |start, points| {
            let out = &mut out[start..start + points.len() / A::WORDS];
            // SAFETY: the kernel writes affine points in blst's layout: reduced Montgomery
            // coordinates of a point of the group, or (0, 0) for the identity.
            let host = unsafe { as_words_mut(out) };
            gpu.stream()
                .memcpy_dtoh(&points, host)
                .call("cuMemcpyDtoH (points)")
        },
    )?;
    Ok(out)
}

/// [`fixed_base_multiply`]'s points left on the device, as MSM bases: a proving key's queries
/// made where they are used, never copied to the host.
pub fn fixed_base_multiply_on_device<A: FixedBaseAffine + MsmAffine>(
    gpu: &Lane,
    table: &[A],
    window_bits: u32,
    windows: u32,
    scalars: &[Scalar],
) -> Result<DeviceBases<A>, GpuError> {
    let bytes = scalars.len() * A::WORDS * 4;
    gpu.ensure_fits("fixed-base points", bytes)?;
    // SAFETY: uninitialised; every chunk's points are copied in below before the bases are used.
    // At least one point's room: the driver refuses empty allocations.
    let mut words = unsafe {
        gpu.uninitialised::<u32>(
            scalars.len().max(1) * A::WORDS,
            "cuMemAlloc (fixed-base points)",
        )
    }?;
    multiply_chunks(
        gpu,
        table,
        window_bits,
        windows,
        scalars,
        |start, points| {
            let end = start + points.len() / A::WORDS;
            gpu.stream()
                .memcpy_dtod(
                    &points,
                    &mut words.slice_mut(start * A::WORDS..end * A::WORDS),
                )
                .call("cuMemcpyDtoD (points)")
        },
    )?;
    Ok(DeviceBases::from_words(words, scalars.len()))
}

/// Multiplies `scalars` in chunks, handing each chunk's points (a device view, valid until the
/// next chunk) to `take` with the index of its first scalar. Its check of free memory sees what
/// the caller allocated before (an output on the device) as taken already.
fn multiply_chunks<A: FixedBaseAffine>(
    gpu: &Lane,
    table: &[A],
    window_bits: u32,
    windows: u32,
    scalars: &[Scalar],
    mut take: impl FnMut(usize, CudaView<'_, u32>) -> Result<(), GpuError>,
) -> Result<(), GpuError> {
    let what = "fixed-base table";
    let invalid = |reason: String| GpuError::InvalidInput { what, reason };
    if !(2..=20).contains(&window_bits) {
        return Err(invalid(format!(
            "window width {window_bits} outside 2..=20"
        )));
    }
    // Signed digits of a scalar below 2^255 need 255/c + 1 windows (the top one takes the carry).
    if windows < 255 / window_bits + 1 {
        return Err(invalid(format!(
            "{windows} windows of {window_bits} bits do not cover 255-bit scalars"
        )));
    }
    let half = 1usize << (window_bits - 1);
    if table.len() != windows as usize * half {
        return Err(invalid(format!(
            "{} entries, {windows} windows of {half} expected",
            table.len()
        )));
    }
    if scalars.is_empty() {
        return Ok(());
    }
    let chunk = CHUNK.min(scalars.len());
    gpu.ensure_fits(
        "fixed-base multiplication",
        (table.len() + chunk) * A::WORDS * 4 + chunk * SCALAR_WORDS * 4,
    )?;
    let stream = gpu.stream();
    let kernel = gpu.kernel(A::KERNEL)?;
    let table_words = gpu.upload(as_words(table), "cuMemcpyHtoD (fixed-base table)")?;
    // SAFETY: uninitialised; each chunk's upload writes the scalars its launch reads.
    let mut scalar_words =
        unsafe { gpu.uninitialised::<u32>(chunk * SCALAR_WORDS, "cuMemAlloc (scalars)") }?;
    // SAFETY: uninitialised; each launch writes the points of its chunk before they are read.
    let mut point_words =
        unsafe { gpu.uninitialised::<u32>(chunk * A::WORDS, "cuMemAlloc (points)") }?;
    for (k, scalars) in scalars.chunks(chunk).enumerate() {
        let n = scalars.len();
        stream
            .memcpy_htod(
                as_words(scalars),
                &mut scalar_words.slice_mut(..n * SCALAR_WORDS),
            )
            .call("cuMemcpyHtoD (scalars)")?;
        let n32 = n as u32;
        // SAFETY: `scalar_words` holds n scalars, `table_words` windows·half points as checked
        // above, `point_words` room for n points; thread i < n reads scalar i and table entries
        // below windows·half (digit magnitudes are at most half) and writes point i.
        unsafe {
            stream
                .launch_builder(&kernel)
                .arg(&scalar_words)
                .arg(&n32)
                .arg(&table_words)
                .arg(&window_bits)
                .arg(&windows)
                .arg(&mut point_words)
                .launch(grid(n, 128))
                .call(A::KERNEL)?;
        }
        take(k * chunk, point_words.slice(..n * A::WORDS))?;
    }
    stream.synchronize().call("cuStreamSynchronize")
}
