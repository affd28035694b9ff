//! Multi-scalar multiplication on the device (Pippenger, every stage on the GPU; see
//! `cuda/msm/pippenger.cuh`, and `pair_rounds` for the batch-affine bulk of the bucket sums) and
//! bitmap batch addition (`cuda/msm/batch_add.cuh`), for G1 and G2, with bases resident in device
//! memory or streamed from page-locked host memory.

use std::marker::PhantomData;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::{CudaSlice, CudaView, DeviceRepr, LaunchConfig, PushKernelArg};
use group::Group;

use crate::error::DriverContext;
use crate::layout::{as_words, DeviceWords, XyzzPoint, SCALAR_WORDS};
use crate::{DeviceScalars, Gpu, GpuError, Pinned, MEMORY_MARGIN};
use pair_rounds::PairPlan;

mod pair_rounds;

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
    ///
    /// 17 bits (15 windows instead of 16) pay from 2^23 points: 1/16 fewer additions against
    /// twice the buckets to reduce (H200: −3.6% at 2^24, −5% at 2^26, +4% at 2^22).
    fn new(n: usize) -> Self {
        let window_bits = match n {
            0..0x400 => 5,
            0x400..0x1_0000 => 8,
            0x1_0000..0x10_0000 => 15,
            0x10_0000..0x80_0000 => 16,
            _ => 17,
        };
        let buckets = 1u32 << (window_bits - 1);
        MsmParams {
            n: n as u32,
            window_bits,
            windows: 255u32.div_ceil(window_bits),
            buckets,
            segments: buckets
                .div_ceil(BUCKETS_PER_SEGMENT)
                .next_multiple_of(SEGMENTS_PER_PARTIAL),
        }
    }

    /// Partial sums per window the reduction leaves for the window-sum tree.
    fn partials(&self) -> u32 {
        self.segments / SEGMENTS_PER_PARTIAL
    }

    fn total_buckets(&self) -> usize {
        self.windows as usize * self.buckets as usize
    }
}

/// Buckets per running-sum thread of the reduction: a chain of 2·16 additions and a multiple of its
/// segment's sum. With 64 (an H200, 2^22 G1 points) its 8192 threads left half of the SMs'
/// schedulers without a warp: 2.3 ms of 32.
const BUCKETS_PER_SEGMENT: u32 = 16;
/// Segments the reduction sums into one partial, across a warp (as `msm_reduce` does).
const SEGMENTS_PER_PARTIAL: u32 = 32;

/// Windows of the Pippenger pass over n points: each point costs about this many additions.
pub fn windows(n: usize) -> u32 {
    MsmParams::new(n).windows
}

/// Device bytes an MSM over n resident points allocates beyond its bases and scalars (its largest
/// pass), for callers planning what else fits.
pub fn working_memory<A: MsmAffine>(n: usize) -> usize {
    working_bytes::<A>(&MsmParams::new(n.min(MAX_PASS)))
}

/// The names of one group's MSM kernels (`msm_<stage>_<group>`).
#[derive(Debug)]
pub struct MsmKernels {
    pub pair_prefix: &'static str,
    pub pair_invert: &'static str,
    pub pair_sums: &'static str,
    pub chunks_affine: &'static str,
    pub chunks_xyzz: &'static str,
    pub reduce: &'static str,
    pub window_sum: &'static str,
    pub batch_add: &'static str,
}

/// An affine point type the MSM kernels take as bases.
pub trait MsmAffine: DeviceWords {
    type Projective: XyzzPoint + Group + Send;
    const KERNELS: MsmKernels;
}

/// The kernel names of one group, by the suffix `cuda/msm/` gives them (`MSM_KERNELS(g1, …)`).
macro_rules! msm_kernels {
    ($group:literal) => {
        MsmKernels {
            pair_prefix: concat!("msm_pair_prefix_", $group),
            pair_invert: concat!("msm_pair_invert_", $group),
            pair_sums: concat!("msm_pair_sums_", $group),
            chunks_affine: concat!("msm_chunks_affine_", $group),
            chunks_xyzz: concat!("msm_chunks_xyzz_", $group),
            reduce: concat!("msm_reduce_", $group),
            window_sum: concat!("msm_window_sum_", $group),
            batch_add: concat!("batch_add_", $group),
        }
    };
}

impl MsmAffine for G1Affine {
    type Projective = G1Projective;
    const KERNELS: MsmKernels = msm_kernels!("g1");
}

impl MsmAffine for G2Affine {
    type Projective = G2Projective;
    const KERNELS: MsmKernels = msm_kernels!("g2");
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

/// counts[b] = ⌈(offsets[b + 1] − offsets[b]) / chunk⌉ for b < buckets (the chunks each bucket is
/// cut into), counts[buckets] = 0 (the slot a scan turns into the total).
fn chunk_counts(
    gpu: &Gpu,
    offsets: &CudaView<'_, u32>,
    buckets: u32,
    chunk: u32,
    counts: &mut CudaSlice<u32>,
) -> Result<(), GpuError> {
    let kernel = gpu.kernel("msm_chunk_counts")?;
    // SAFETY: `offsets` and `counts` hold buckets + 1 values; buckets + 1 threads.
    unsafe {
        gpu.stream()
            .launch_builder(&kernel)
            .arg(offsets)
            .arg(&buckets)
            .arg(&chunk)
            .arg(counts)
            .launch(grid(buckets as usize + 1, 256))
            .call("msm_chunk_counts")?;
    }
    Ok(())
}

/// Entries per thread at most at the first accumulation level (mixed additions) and at later levels
/// (full additions): small enough that every thread's work is bounded and a warp's threads do
/// near-equal work, large enough that the later levels are a small share.
const FIRST_CHUNK: u32 = 32;
const LEVEL_CHUNK: u32 = 32;

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
///
/// Runs as one Pippenger pass when its working memory fits the device's free memory, otherwise as
/// consecutive passes over slices of the points, summed on the host.
pub fn msm_device<A: MsmAffine>(
    gpu: &Gpu,
    bases: &DeviceBases<A>,
    scalars: &DeviceScalars,
) -> Result<A::Projective, GpuError> {
    let n = scalars_within("MSM", scalars, bases.len())?;
    let (free, _) = gpu.memory()?;
    let slice = fit_points(n.min(MAX_PASS), free, working_bytes::<A>)?;
    let mut total = A::Projective::identity();
    for (start, end) in ranges(n, slice) {
        total += pippenger::<A>(
            gpu,
            &bases.words.slice(start * A::WORDS..end * A::WORDS),
            &scalars
                .words
                .slice(start * SCALAR_WORDS..end * SCALAR_WORDS),
        )?;
    }
    Ok(total)
}

/// Σ scalars[i]·points[i] with the points streamed from page-locked host memory, for bases that
/// do not stay on the device: chunks of points are copied on the copy stream into two device
/// buffers in turn, each copy overlapping the Pippenger pass over the chunk before it.
pub fn msm_streamed<A: MsmAffine>(
    gpu: &Gpu,
    points: &Pinned<A>,
    scalars: &DeviceScalars,
) -> Result<A::Projective, GpuError> {
    let n = scalars_within("streamed MSM", scalars, points.len())?;
    if n == 0 {
        return Ok(A::Projective::identity());
    }
    // Quarters, but passes of at least 2^22 points: smaller passes cost more per point than the
    // copy they would hide (an H200 copies 2^22 G1 points in ~8 ms and sums them in ~58).
    let wanted = n.div_ceil(4).max(1 << 22).min(n).min(MAX_PASS);
    let (free, _) = gpu.memory()?;
    let chunk = fit_points(wanted, free, |p| {
        working_bytes::<A>(p) + 2 * p.n as usize * A::WORDS * 4
    })?;
    let copy = gpu.copy_stream();
    let alloc = || {
        gpu.stream()
            .alloc_zeros::<u32>(chunk * A::WORDS)
            .call("cuMemAlloc (MSM point chunk)")
    };
    let mut buffers = [alloc()?, alloc()?];
    let chunks = ranges(n, chunk);
    let upload = |(start, end): (usize, usize), buffer: &mut CudaSlice<u32>| {
        copy.memcpy_htod(
            points.words_of(start, end)?,
            &mut buffer.slice_mut(..(end - start) * A::WORDS),
        )
        .call("cuMemcpyHtoDAsync (MSM points)")?;
        copy.record_event(None)
            .call("cuEventRecord (points copied)")
    };
    let mut copied = upload(chunks[0], &mut buffers[0])?;
    let mut total = A::Projective::identity();
    for (k, &(start, end)) in chunks.iter().enumerate() {
        gpu.stream()
            .wait(&copied)
            .call("cuStreamWaitEvent (points copied)")?;
        let [even, odd] = &mut buffers;
        let (current, next) = if k % 2 == 0 { (even, odd) } else { (odd, even) };
        // The next buffer's last pass has finished (each pass ends by reading its result back),
        // so the next copy may start now and overlap this pass.
        if let Some(&following) = chunks.get(k + 1) {
            copied = upload(following, next)?;
        }
        total += pippenger::<A>(
            gpu,
            &current.slice(..(end - start) * A::WORDS),
            &scalars
                .words
                .slice(start * SCALAR_WORDS..end * SCALAR_WORDS),
        )?;
    }
    Ok(total)
}

/// The number of scalars, refused when there are more than the `points` they would multiply.
fn scalars_within(
    what: &'static str,
    scalars: &DeviceScalars,
    points: usize,
) -> Result<usize, GpuError> {
    let n = scalars.len();
    if n > points {
        return Err(GpuError::InvalidInput {
            what,
            reason: format!("{n} scalars but only {points} points"),
        });
    }
    Ok(n)
}

/// [start, end) ranges of at most `size` covering 0..n.
fn ranges(n: usize, size: usize) -> Vec<(usize, usize)> {
    (0..n)
        .step_by(size.max(1))
        .map(|start| (start, (start + size).min(n)))
        .collect()
}

/// The largest number of points, up to `wanted`, whose device bytes (`bytes` of their params)
/// fit in `free` less a margin; halving from `wanted` down to [`MIN_PASS`].
fn fit_points(
    wanted: usize,
    free: usize,
    bytes: impl Fn(&MsmParams) -> usize,
) -> Result<usize, GpuError> {
    let budget = free.saturating_sub(MEMORY_MARGIN);
    let mut points = wanted;
    loop {
        let needed = bytes(&MsmParams::new(points));
        if needed <= budget {
            return Ok(points);
        }
        if points <= MIN_PASS {
            return Err(GpuError::OutOfMemory {
                what: "MSM working memory",
                needed,
                free,
            });
        }
        points = points.div_ceil(2);
    }
}

/// The smallest slice of points a split MSM runs as one pass.
const MIN_PASS: usize = 1 << 12;
/// Points per pass at most: keeps n·windows (entry indices) inside u32.
const MAX_PASS: usize = 1 << 26;

/// Device bytes one Pippenger pass allocates.
fn working_bytes<A: MsmAffine>(p: &MsmParams) -> usize {
    let entries = p.n as usize * p.windows as usize;
    let buckets = p.total_buckets();
    let xyzz_bytes = 4 * <A::Projective as XyzzPoint>::XYZZ_WORDS;
    let (first, later) = level_bounds(p);
    4 * (2 * entries + 4 * (buckets + 1))
        + xyzz_bytes * (first + later + p.windows as usize * (p.partials() as usize + 1))
        + PairPlan::new::<A>(p).bytes::<A>(p)
}

/// Upper bounds on the chunks of the first level and of any later level: Σ⌈count/chunk⌉ over the
/// buckets is below Σcount/chunk + buckets.
fn level_bounds(p: &MsmParams) -> (usize, usize) {
    let buckets = p.total_buckets();
    let first = p.n as usize * p.windows as usize / FIRST_CHUNK as usize + buckets + 1;
    (first, first / LEVEL_CHUNK as usize + buckets + 1)
}

/// One Pippenger pass over `bases` (affine words) and `scalars` (Montgomery words) of equal count.
fn pippenger<A: MsmAffine>(
    gpu: &Gpu,
    bases: &CudaView<'_, u32>,
    scalars: &CudaView<'_, u32>,
) -> Result<A::Projective, GpuError> {
    let n = scalars.len() / SCALAR_WORDS;
    if n == 0 {
        return Ok(A::Projective::identity());
    }
    let p = MsmParams::new(n);
    let stream = gpu.stream();
    let buckets = p.total_buckets();
    let xyzz_words = <A::Projective as XyzzPoint>::XYZZ_WORDS;
    let entries_len = n * p.windows as usize;
    let (first_bound, later_bound) = level_bounds(&p);
    let partial_len = p.windows as usize * p.partials() as usize;
    let alloc = |len: usize| stream.alloc_zeros::<u32>(len).call("cuMemAlloc (MSM)");
    let mut codes = alloc(entries_len)?;
    let mut offsets = alloc(buckets + 1)?;
    let mut cursors = alloc(buckets)?;
    let mut entries = alloc(entries_len)?;
    let mut chunk_offsets = [alloc(buckets + 1)?, alloc(buckets + 1)?];
    let mut level_sums = [
        alloc(first_bound * xyzz_words)?,
        alloc(later_bound * xyzz_words)?,
    ];
    let mut partial = alloc(partial_len * xyzz_words)?;

    let (digits, scatter) = (gpu.kernel("msm_digits")?, gpu.kernel("msm_scatter")?);
    let (chunks_affine, chunks_xyzz, reduce) = (
        gpu.kernel(A::KERNELS.chunks_affine)?,
        gpu.kernel(A::KERNELS.chunks_xyzz)?,
        gpu.kernel(A::KERNELS.reduce)?,
    );
    let buckets32 = buckets as u32;
    // SAFETY: this and the launches below: buffers are sized above for the index ranges the kernels use
    // with these params: scalars n·8 words and bases n points (the views); codes and entries n·W
    // (one per (point, window), entries at distinct slots below the histogram's total); offsets,
    // chunk offsets W·K + 1 and cursors W·K; the first level writes at most `first_bound` sums
    // and later levels at most `later_bound` (Σ⌈count/chunk⌉ bounds, see `level_bounds`), each
    // kernel exiting past its level's total; partial W·S/32 points (one per warp of segments,
    // S a multiple of 32). The digit and scatter kernels run with blocks of 256 (a multiple of
    // 32, as their warp-wide atomics need).
    unsafe {
        stream
            .launch_builder(&digits)
            .arg(scalars)
            .arg(&p)
            .arg(&mut codes)
            .arg(&mut offsets)
            .launch(grid(n, 256))
            .call("msm_digits")?;
    }
    exclusive_scan(gpu, &mut offsets)?;
    // SAFETY: as above.
    unsafe {
        stream
            .launch_builder(&scatter)
            .arg(&codes)
            .arg(&p)
            .arg(&offsets)
            .arg(&mut cursors)
            .arg(&mut entries)
            .launch(LaunchConfig {
                grid_dim: (n.div_ceil(256) as u32, p.windows, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
            .call("msm_scatter")?;
    }
    drop(codes);

    // Pair rounds while buckets are large; then chunks of the points left (or of the sorted entries
    // when there were no rounds), and chunks of chunk sums until every bucket has one sum.
    let plan = PairPlan::new::<A>(&p);
    let (left, left_offsets);
    let (points, point_entries, point_offsets) = if plan.rounds > 0 {
        (left, left_offsets) = pair_rounds::run::<A>(gpu, &plan, &p, bases, &entries, &offsets)?;
        drop(entries);
        (left.slice(..), None, &left_offsets)
    } else {
        (bases.slice(..), Some(entries), &offsets)
    };
    chunk_counts(
        gpu,
        &point_offsets.slice(..),
        buckets32,
        FIRST_CHUNK,
        &mut chunk_offsets[0],
    )?;
    exclusive_scan(gpu, &mut chunk_offsets[0])?;
    // SAFETY: as above; `points` holds every position `point_offsets` names (the bases through
    // `entries`, or the rounds' packed points read directly when the entries pointer is null).
    unsafe {
        let mut launch = stream.launch_builder(&chunks_affine);
        launch.arg(&points);
        match &point_entries {
            Some(entries) => launch.arg(entries),
            None => launch.arg(&crate::NULL),
        };
        launch
            .arg(point_offsets)
            .arg(&chunk_offsets[0])
            .arg(&buckets32)
            .arg(&mut level_sums[0])
            .launch(grid(first_bound, 128))
            .call(A::KERNELS.chunks_affine)?;
    }
    drop(point_entries);
    let mut level = 0;
    // A bucket holds n points at most, ⌈n/2^rounds⌉ after the rounds.
    let mut largest = n.div_ceil(1 << plan.rounds).div_ceil(FIRST_CHUNK as usize);
    while largest > 1 {
        let [now, next] = &mut chunk_offsets;
        let [sums_now, sums_next] = &mut level_sums;
        let (now, next, sums_now, sums_next) = if level % 2 == 0 {
            (now, next, sums_now, sums_next)
        } else {
            (next, now, sums_next, sums_now)
        };
        chunk_counts(gpu, &now.slice(..), buckets32, LEVEL_CHUNK, next)?;
        exclusive_scan(gpu, next)?;
        // SAFETY: as above.
        unsafe {
            stream
                .launch_builder(&chunks_xyzz)
                .arg(&*sums_now)
                .arg(&*now)
                .arg(&*next)
                .arg(&buckets32)
                .arg(sums_next)
                .launch(grid(later_bound, 128))
                .call(A::KERNELS.chunks_xyzz)?;
        }
        largest = largest.div_ceil(LEVEL_CHUNK as usize);
        level += 1;
    }
    let (sums, sum_offsets) = (&level_sums[level % 2], &chunk_offsets[level % 2]);
    // SAFETY: as above.
    unsafe {
        stream
            .launch_builder(&reduce)
            .arg(sums)
            .arg(sum_offsets)
            .arg(&p)
            .arg(&mut partial)
            .launch(grid(p.windows as usize * p.segments as usize, 64))
            .call(A::KERNELS.reduce)?;
    }
    let words = tree_sums::<A>(gpu, &partial, p.windows, p.partials())?;
    // Horner over the windows, most significant first: (W − 1)·c doublings on the host.
    let mut acc = A::Projective::identity();
    for window in words.chunks_exact(xyzz_words).rev() {
        for _ in 0..p.window_bits {
            acc = acc.double();
        }
        acc += A::Projective::from_xyzz(window)?;
    }
    Ok(acc)
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
    let batch_add = gpu.kernel(A::KERNELS.batch_add)?;
    let (n32, per32, threads32) = (n as u32, WORDS_PER_THREAD as u32, threads as u32);
    // SAFETY: bases hold ≥ n points; `bits_dev` holds ⌈n/32⌉ words and the kernel reads only
    // those (bits past n masked); `partial` holds `threads` points, one per thread.
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
    }
    A::Projective::from_xyzz(&tree_sums::<A>(gpu, &partial, 1, threads32)?)
}

/// The XYZZ words of Σ partial[w·count + i] over i < `count`, for each of the `windows` windows,
/// copied to the host: the window-sum kernel's tree, one block per window.
fn tree_sums<A: MsmAffine>(
    gpu: &Gpu,
    partial: &CudaSlice<u32>,
    windows: u32,
    count: u32,
) -> Result<Vec<u32>, GpuError> {
    /// Threads per window: a power of two, as the tree's halving needs.
    const SUM_BLOCK: u32 = 64;
    let xyzz_words = <A::Projective as XyzzPoint>::XYZZ_WORDS;
    if partial.len() < windows as usize * count as usize * xyzz_words {
        return Err(GpuError::InvalidInput {
            what: "window sums",
            reason: format!(
                "{} partial words for {windows} windows of {count} points",
                partial.len(),
            ),
        });
    }
    let stream = gpu.stream();
    let mut sums = stream
        .alloc_zeros::<u32>(windows as usize * xyzz_words)
        .call("cuMemAlloc (window sums)")?;
    let kernel = gpu.kernel(A::KERNELS.window_sum)?;
    // SAFETY: `partial` holds windows·count points (checked above) and `sums` one per window;
    // one block of SUM_BLOCK threads (a power of two) per window with SUM_BLOCK points of shared
    // memory, as the kernel's tree needs.
    unsafe {
        stream
            .launch_builder(&kernel)
            .arg(partial)
            .arg(&count)
            .arg(&mut sums)
            .launch(LaunchConfig {
                grid_dim: (windows, 1, 1),
                block_dim: (SUM_BLOCK, 1, 1),
                shared_mem_bytes: SUM_BLOCK * 4 * xyzz_words as u32,
            })
            .call(A::KERNELS.window_sum)?;
    }
    stream.clone_dtoh(&sums).call("cuMemcpyDtoH (window sums)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_choice_stays_in_range() {
        for n in [0usize, 1, 2, 100, 1 << 16, 1 << 20, 1 << 22, 1 << 26] {
            let p = MsmParams::new(n);
            assert!((4..=17).contains(&p.window_bits));
            assert!(p.windows * p.window_bits >= 255);
            // The top window of a scalar below 2^254 keeps at least c − 2 bits.
            let top = 254 - (p.windows - 1) * p.window_bits;
            assert!(
                top + 2 >= p.window_bits && top < p.window_bits,
                "n = {n}: top {top}"
            );
            // Whole warps of segments that cover every bucket.
            assert!(p.segments.is_multiple_of(SEGMENTS_PER_PARTIAL) && p.partials() >= 1);
            assert!(p.segments * BUCKETS_PER_SEGMENT >= p.buckets);
        }
    }
}
