//! Multi-scalar multiplication on the device (Pippenger, every stage on the GPU; see
//! `cuda/msm/pippenger.cuh`) and bitmap batch addition (`cuda/msm/batch_add.cuh`), for G1 and G2,
//! with bases resident in device memory.

use std::marker::PhantomData;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};
use group::Group;

use crate::error::DriverContext;
use crate::layout::{as_words, DeviceWords, XyzzPoint, SCALAR_WORDS};
use crate::{DeviceScalars, Gpu, GpuError};

/// Launch parameters, mirrored by `msm_params` in `cuda/msm/pippenger.cuh`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MsmParams {
    n: u32,
    window_bits: u32,
    windows: u32,
    buckets: u32,
    segments: u32,
}

// SAFETY: #[repr(C)] of five u32 with no padding, passed by value, field for field as the kernels'
// `msm_params`.
unsafe impl DeviceRepr for MsmParams {}
const _: () = assert!(std::mem::size_of::<MsmParams>() == 20);

impl MsmParams {
    /// Window widths whose top window (of scalars below 2^254) still holds c − 2 or more bits, so
    /// its digits spread over many buckets: with others the top window has 1–4 bits and a few
    /// buckets get a large share of all points, one thread summing each.
    fn new(n: usize) -> Self {
        let window_bits = match n {
            0..0x400 => 5,
            0x400..0x1_0000 => 8,
            0x1_0000..0x10_0000 => 15,
            _ => 16,
        };
        let buckets = 1u32 << (window_bits - 1);
        MsmParams {
            n: n as u32,
            window_bits,
            windows: 255u32.div_ceil(window_bits),
            buckets,
            segments: buckets.min(512),
        }
    }

    fn total_buckets(&self) -> usize {
        self.windows as usize * self.buckets as usize
    }
}

/// The names of one group's MSM kernels (`msm_<stage>_<group>`).
#[derive(Debug)]
pub struct MsmKernels {
    pub buckets: &'static str,
    pub reduce: &'static str,
    pub window_sum: &'static str,
    pub combine: &'static str,
    pub batch_add: &'static str,
}

/// An affine point type the MSM kernels take as bases.
pub trait MsmAffine: DeviceWords {
    type Projective: XyzzPoint + Group + Send;
    const KERNELS: MsmKernels;
}

impl MsmAffine for G1Affine {
    type Projective = G1Projective;
    const KERNELS: MsmKernels = MsmKernels {
        buckets: "msm_buckets_g1",
        reduce: "msm_reduce_g1",
        window_sum: "msm_window_sum_g1",
        combine: "msm_combine_g1",
        batch_add: "batch_add_g1",
    };
}

impl MsmAffine for G2Affine {
    type Projective = G2Projective;
    const KERNELS: MsmKernels = MsmKernels {
        buckets: "msm_buckets_g2",
        reduce: "msm_reduce_g2",
        window_sum: "msm_window_sum_g2",
        combine: "msm_combine_g2",
        batch_add: "batch_add_g2",
    };
}

/// Bases uploaded once and reused by every MSM over them.
#[derive(Debug)]
pub struct DeviceBases<A> {
    words: CudaSlice<u32>,
    len: usize,
    _points: PhantomData<A>,
}

impl<A: MsmAffine> DeviceBases<A> {
    pub fn upload(gpu: &Gpu, points: &[A]) -> Result<Self, GpuError> {
        gpu.ensure_fits("MSM bases", points.len() * A::WORDS * 4)?;
        let words = gpu
            .stream()
            .clone_htod(as_words(points))
            .call("cuMemcpyHtoD (bases)")?;
        Ok(DeviceBases {
            words,
            len: points.len(),
            _points: PhantomData,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

fn grid(threads: usize, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (
            (threads as u64).div_ceil(u64::from(block)).max(1) as u32,
            1,
            1,
        ),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Exclusive prefix sum of `values` in place; `values` has one extra slot that receives the total.
fn exclusive_scan(gpu: &Gpu, values: &mut CudaSlice<u32>) -> Result<(), GpuError> {
    const BLOCK: usize = 1024;
    let n = values.len();
    let blocks = n.div_ceil(BLOCK);
    if blocks > BLOCK {
        return Err(GpuError::InvalidInput {
            what: "prefix sum",
            reason: format!(
                "{n} values exceed the two-level scan's {} limit",
                BLOCK * BLOCK
            ),
        });
    }
    let stream = gpu.stream();
    let mut totals = stream
        .alloc_zeros::<u32>(blocks + 1)
        .call("cuMemAlloc (scan)")?;
    let (scan_blocks, scan_totals, add) = (
        gpu.kernel("scan_blocks_u32")?,
        gpu.kernel("scan_totals_u32")?,
        gpu.kernel("scan_add_u32")?,
    );
    let (n32, blocks32) = (n as u32, blocks as u32);
    // SAFETY: `values` holds n u32 and `totals` blocks + 1; each kernel touches indices below
    // those bounds (checked against n inside, blockDim = 1024 = SCAN_BLOCK as they require).
    unsafe {
        stream
            .launch_builder(&scan_blocks)
            .arg(&mut *values)
            .arg(&n32)
            .arg(&mut totals)
            .launch(grid(n, BLOCK as u32))
            .call("scan_blocks_u32")?;
        stream
            .launch_builder(&scan_totals)
            .arg(&mut totals)
            .arg(&blocks32)
            .launch(grid(1, BLOCK as u32))
            .call("scan_totals_u32")?;
        stream
            .launch_builder(&add)
            .arg(&mut *values)
            .arg(&n32)
            .arg(&totals)
            .launch(grid(n, BLOCK as u32))
            .call("scan_add_u32")?;
    }
    Ok(())
}

/// Σ scalars[i]·bases[i] over the first `scalars.len()` bases, scalars from the host.
pub fn msm<A: MsmAffine>(
    gpu: &Gpu,
    bases: &DeviceBases<A>,
    scalars: &[Scalar],
) -> Result<A::Projective, GpuError> {
    if scalars.is_empty() {
        return Ok(A::Projective::identity());
    }
    msm_device(gpu, bases, &DeviceScalars::upload(gpu, scalars)?)
}

/// Σ scalars[i]·bases[i] over the first `scalars.len()` bases, scalars already on the device.
pub fn msm_device<A: MsmAffine>(
    gpu: &Gpu,
    bases: &DeviceBases<A>,
    scalars: &DeviceScalars,
) -> Result<A::Projective, GpuError> {
    let n = scalars.len();
    if n > bases.len() {
        return Err(GpuError::InvalidInput {
            what: "MSM",
            reason: format!("{n} scalars but only {} bases", bases.len()),
        });
    }
    if n >= 1 << 31 {
        return Err(GpuError::InvalidInput {
            what: "MSM",
            reason: format!("{n} points exceed the 2^31 a single MSM call takes"),
        });
    }
    if n == 0 {
        return Ok(A::Projective::identity());
    }
    let p = MsmParams::new(n);
    let stream = gpu.stream();
    let total_buckets = p.total_buckets();
    let xyzz_words = <A::Projective as XyzzPoint>::XYZZ_WORDS;
    let entries_len = n * p.windows as usize;
    gpu.ensure_fits(
        "MSM working memory",
        4 * (n * SCALAR_WORDS + entries_len + 3 * total_buckets)
            + 4 * xyzz_words * (total_buckets + p.windows as usize * p.segments as usize),
    )?;

    let raw = &scalars.words;
    let mut canonical = stream
        .alloc_zeros::<u32>(n * SCALAR_WORDS)
        .call("cuMemAlloc")?;
    let mut offsets = stream
        .alloc_zeros::<u32>(total_buckets + 1)
        .call("cuMemAlloc")?;
    let mut cursors = stream
        .alloc_zeros::<u32>(total_buckets)
        .call("cuMemAlloc")?;
    let mut entries = stream.alloc_zeros::<u32>(entries_len).call("cuMemAlloc")?;
    let mut buckets = stream
        .alloc_zeros::<u32>(total_buckets * xyzz_words)
        .call("cuMemAlloc")?;
    let partial_len = p.windows as usize * p.segments as usize;
    let mut partial = stream
        .alloc_zeros::<u32>(partial_len * xyzz_words)
        .call("cuMemAlloc")?;
    let mut sums = stream
        .alloc_zeros::<u32>(p.windows as usize * xyzz_words)
        .call("cuMemAlloc")?;
    let mut out = stream.alloc_zeros::<u32>(xyzz_words).call("cuMemAlloc")?;

    let n32 = n as u32;
    let canonical_kernel = gpu.kernel("msm_scalars_canonical")?;
    let histogram = gpu.kernel("msm_histogram")?;
    let scatter = gpu.kernel("msm_scatter")?;
    let (bucket_kernel, reduce, window_sum, combine) = (
        gpu.kernel(A::KERNELS.buckets)?,
        gpu.kernel(A::KERNELS.reduce)?,
        gpu.kernel(A::KERNELS.window_sum)?,
        gpu.kernel(A::KERNELS.combine)?,
    );
    const SUM_BLOCK: u32 = 64;
    // SAFETY: every buffer is sized above for the index ranges the kernels use with these params:
    // scalars n·8 words; offsets W·K + 1; cursors W·K; entries n·W (each (point, window) writes at
    // most one entry, at a distinct position below the total count); buckets W·K points; partial
    // W·S points; sums W points; out one point. Bases hold ≥ n points. The window-sum kernel gets
    // SUM_BLOCK threads (a power of two) and SUM_BLOCK points of shared memory.
    unsafe {
        stream
            .launch_builder(&canonical_kernel)
            .arg(raw)
            .arg(&mut canonical)
            .arg(&n32)
            .launch(grid(n, 256))
            .call("msm_scalars_canonical")?;
        stream
            .launch_builder(&histogram)
            .arg(&canonical)
            .arg(&p)
            .arg(&mut offsets)
            .launch(grid(entries_len, 256))
            .call("msm_histogram")?;
        exclusive_scan(gpu, &mut offsets)?;
        stream
            .launch_builder(&scatter)
            .arg(&canonical)
            .arg(&p)
            .arg(&offsets)
            .arg(&mut cursors)
            .arg(&mut entries)
            .launch(grid(entries_len, 256))
            .call("msm_scatter")?;
        stream
            .launch_builder(&bucket_kernel)
            .arg(&bases.words)
            .arg(&offsets)
            .arg(&entries)
            .arg(&p)
            .arg(&mut buckets)
            .launch(grid(total_buckets, 128))
            .call(A::KERNELS.buckets)?;
        stream
            .launch_builder(&reduce)
            .arg(&buckets)
            .arg(&p)
            .arg(&mut partial)
            .launch(grid(partial_len, 64))
            .call(A::KERNELS.reduce)?;
        stream
            .launch_builder(&window_sum)
            .arg(&partial)
            .arg(&p)
            .arg(&mut sums)
            .launch(LaunchConfig {
                grid_dim: (p.windows, 1, 1),
                block_dim: (SUM_BLOCK, 1, 1),
                shared_mem_bytes: SUM_BLOCK * 4 * xyzz_words as u32,
            })
            .call(A::KERNELS.window_sum)?;
        stream
            .launch_builder(&combine)
            .arg(&sums)
            .arg(&p)
            .arg(&mut out)
            .launch(grid(1, 1))
            .call(A::KERNELS.combine)?;
    }
    let words = stream.clone_dtoh(&out).call("cuMemcpyDtoH (MSM result)")?;
    A::Projective::from_xyzz(&words)
}

/// Σ bases[i] over the set bits i < n of a bitmap given as little-endian u64 words (the layout of
/// `cuzk_math::Bitmap::words`): the plain sum for scalars equal to 1.
pub fn bitmap_sum<A: MsmAffine>(
    gpu: &Gpu,
    bases: &DeviceBases<A>,
    bits: &[u64],
    n: usize,
) -> Result<A::Projective, GpuError> {
    if n > bases.len() || bits.len() * 64 < n || n >= 1 << 31 {
        return Err(GpuError::InvalidInput {
            what: "bitmap sum",
            reason: format!(
                "{n} bits over {} bases with {} bitmap bits (limit 2^31)",
                bases.len(),
                bits.len() * 64
            ),
        });
    }
    if n == 0 {
        return Ok(A::Projective::identity());
    }
    /// 256 bits per thread: enough work per thread, enough threads to fill the device.
    const WORDS_PER_THREAD: usize = 8;
    const SUM_BLOCK: u32 = 64;
    let words32 = n.div_ceil(32);
    let threads = words32.div_ceil(WORDS_PER_THREAD);
    let words: Vec<u32> = bits
        .iter()
        .flat_map(|w| [*w as u32, (*w >> 32) as u32])
        .take(words32)
        .collect();
    let xyzz_words = <A::Projective as XyzzPoint>::XYZZ_WORDS;
    let stream = gpu.stream();
    gpu.ensure_fits("bitmap sum", 4 * (words32 + (threads + 2) * xyzz_words))?;
    let bits_dev = stream.clone_htod(&words).call("cuMemcpyHtoD (bitmap)")?;
    let mut partial = stream
        .alloc_zeros::<u32>(threads * xyzz_words)
        .call("cuMemAlloc")?;
    let mut sum = stream.alloc_zeros::<u32>(xyzz_words).call("cuMemAlloc")?;
    let (batch_add, window_sum) = (
        gpu.kernel(A::KERNELS.batch_add)?,
        gpu.kernel(A::KERNELS.window_sum)?,
    );
    let (n32, per32, threads32) = (n as u32, WORDS_PER_THREAD as u32, threads as u32);
    // The tree kernel sums `segments` partials of "window" 0 into one point.
    let tree = MsmParams {
        n: n32,
        window_bits: 0,
        windows: 1,
        buckets: 0,
        segments: threads32,
    };
    // SAFETY: bases hold ≥ n points; `bits_dev` holds ⌈n/32⌉ words and the kernel reads only
    // those (bits past n masked); `partial` holds `threads` points, one per thread; the tree
    // kernel reads those `threads` partials and writes one point to `sum`, with SUM_BLOCK threads
    // (a power of two) and SUM_BLOCK points of shared memory.
    unsafe {
        stream
            .launch_builder(&batch_add)
            .arg(&bases.words)
            .arg(&bits_dev)
            .arg(&n32)
            .arg(&per32)
            .arg(&threads32)
            .arg(&mut partial)
            .launch(grid(threads, 128))
            .call(A::KERNELS.batch_add)?;
        stream
            .launch_builder(&window_sum)
            .arg(&partial)
            .arg(&tree)
            .arg(&mut sum)
            .launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (SUM_BLOCK, 1, 1),
                shared_mem_bytes: SUM_BLOCK * 4 * xyzz_words as u32,
            })
            .call(A::KERNELS.window_sum)?;
    }
    let words = stream.clone_dtoh(&sum).call("cuMemcpyDtoH (bitmap sum)")?;
    A::Projective::from_xyzz(&words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_choice_stays_in_range() {
        for n in [0usize, 1, 2, 100, 1 << 16, 1 << 20, 1 << 26] {
            let p = MsmParams::new(n);
            assert!((4..=16).contains(&p.window_bits));
            assert!(p.windows * p.window_bits >= 255);
            // The top window of a scalar below 2^254 keeps at least c − 2 bits.
            let top = 254 - (p.windows - 1) * p.window_bits;
            assert!(
                top + 2 >= p.window_bits && top < p.window_bits,
                "n = {n}: top {top}"
            );
            assert!(p.segments >= 1 && p.segments <= p.buckets);
        }
    }
}
