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
use crate::timing::TIMED_EVENT;
use crate::{DeviceScalars, GpuError, Lane, MEMORY_MARGIN};
use pair_rounds::PairPlan;
pub use source::MsmScalars;
pub use split::SplitMsm;
use split::SPLIT_BLOCK;
use trace::PassTrace;
pub use trace::MSM_TRACE_ENV;

mod pair_rounds;
mod source;
mod split;
mod trace;

/// Launch parameters, mirrored by `msm_params` in `cuda/msm/pippenger.cuh`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MsmParams {
    n: u32,
    window_bits: u32,
    windows: u32,
    buckets: u32,
    segments: u32,
    /// 0: a set of buckets per window. Otherwise the bases come with their window multiples,
    /// this many points per window, so that windows can share buckets.
    shared_stride: u32,
    /// Consecutive windows that share one set of buckets (1 without window multiples).
    set_windows: u32,
}

// SAFETY: #[repr(C)] of seven u32 with no padding, passed by value, field for field as the
// kernels' `msm_params`.
unsafe impl DeviceRepr for MsmParams {}
const _: () = assert!(std::mem::size_of::<MsmParams>() == 28);

impl MsmParams {
    /// Window widths whose top window (of scalars below 2^254) still holds c − 2 or more bits, so
    /// its digits spread over many buckets: with others the top window has 1–4 bits and a few
    /// buckets get a large share of all points, one thread summing each.
    ///
    /// 17 bits (15 windows instead of 16) pay from 2^23 points: 1/16 fewer additions against
    /// twice the buckets to reduce (measured: docs/performance.md, "Why the code is as it is").
    fn new(n: usize) -> Self {
        let window_bits = match n {
            0..0x400 => 5,
            0x400..0x1_0000 => 8,
            0x1_0000..0x10_0000 => 15,
            0x10_0000..0x80_0000 => 16,
            _ => 17,
        };
        Self::of_width(n, window_bits, 0)
    }

    /// For bases stored with their window multiples of width `window_bits`, `stride` points per
    /// window (see [`DeviceBases::upload_with_window_multiples`]): the windows share `sets` sets of
    /// buckets (about; consecutive windows, as many in each set as the largest set needs).
    fn with_window_multiples(n: usize, stride: usize, window_bits: u32, sets: u32) -> Self {
        let mut p = Self::of_width(n, window_bits, stride as u32);
        p.set_windows = p.windows.div_ceil(sets.clamp(1, p.windows));
        p
    }

    fn of_width(n: usize, window_bits: u32, shared_stride: u32) -> Self {
        let buckets = 1u32 << (window_bits - 1);
        MsmParams {
            n: n as u32,
            window_bits,
            windows: windows_of_width(window_bits),
            buckets,
            segments: buckets
                .div_ceil(BUCKETS_PER_SEGMENT)
                .next_multiple_of(SEGMENTS_PER_PARTIAL),
            shared_stride,
            set_windows: 1,
        }
    }

    /// Sets of buckets: one per window, or one per `set_windows` windows sharing them.
    fn sets(&self) -> u32 {
        self.windows.div_ceil(self.set_windows)
    }

    /// Entries (point, window) that land in each set of buckets at most.
    fn entries_per_set(&self) -> usize {
        self.n as usize * self.set_windows as usize
    }

    /// Partial sums per set the reduction leaves for the window-sum tree.
    fn partials(&self) -> u32 {
        self.segments / SEGMENTS_PER_PARTIAL
    }

    fn total_buckets(&self) -> usize {
        self.sets() as usize * self.buckets as usize
    }
}

/// Buckets per running-sum thread of the reduction: a chain of 2·16 additions and a multiple of its
/// segment's sum. Many more buckets per thread leave too few threads to give every SM scheduler a
/// warp (measured: docs/performance.md, "Why the code is as it is").
const BUCKETS_PER_SEGMENT: u32 = 16;
/// Segments the reduction sums into one partial, across a warp (as `msm_reduce` does).
const SEGMENTS_PER_PARTIAL: u32 = 32;

/// Windows of the Pippenger pass over n points: each point costs about this many additions.
pub fn windows(n: usize) -> u32 {
    MsmParams::new(n).windows
}

/// Windows of width c that cover a scalar: ⌈255/c⌉ (a signed-digit scalar below 2^254 never
/// carries out of the top one). With window multiples, also the points stored per base.
pub fn windows_of_width(window_bits: u32) -> u32 {
    255u32.div_ceil(window_bits)
}

/// Device bytes an MSM over n resident points allocates beyond its bases and scalars (its largest
/// pass), for callers planning what else fits.
pub fn working_memory<A: MsmAffine>(n: usize) -> usize {
    working_bytes::<A>(&MsmParams::new(n.min(MAX_PASS)))
}

/// Device bytes an MSM over the first n of `len` resident bases with window multiples of width
/// `bits` allocates beyond them and its scalars (the pass with the fewest sets of buckets, as
/// [`DeviceBases::working_memory`] counts it).
pub fn multiples_working_memory<A: MsmAffine>(n: usize, len: usize, bits: u32) -> usize {
    match n <= MAX_PASS.min(len) {
        true => shared_params::<A>(n, len, bits, None, usize::MAX)
            .map_or_else(|| working_memory::<A>(n), |p| working_bytes::<A>(&p)),
        false => working_memory::<A>(n),
    }
}

/// Points per pass of a streamed MSM over n points when memory allows ([`msm_streamed`] takes
/// fewer only when it must).
fn streamed_pass(n: usize) -> usize {
    n.div_ceil(4).max(STREAMED_MIN_PASS).min(n).min(MAX_PASS)
}

/// The fewest device bytes an MSM over n points runs in without passes so small that their
/// fixed costs dominate (passes of at most [`LEAST_PASS`] points): one pass's working memory and,
/// when `streamed`, its two point buffers. [`msm_device`] and [`msm_streamed`] take larger
/// passes when more is free, so this is what a plan must leave, not what the MSM will use.
pub fn least_working_memory<A: MsmAffine>(n: usize, streamed: bool) -> usize {
    let pass = n.min(LEAST_PASS);
    let buffers = match streamed {
        true => pass * streamed_point_bytes::<A>(),
        false => 0,
    };
    let params = MsmParams::new(pass);
    let least = PairPlan::choices::<A>(&params)
        .map(|pairs| Pass { params, pairs }.bytes::<A>())
        .min();
    least.unwrap_or_else(|| working_bytes::<A>(&params)) + buffers
}

/// See [`least_working_memory`]: at 2^20 G1 points a pass needs ~0.45 GB (no pair rounds; 2.3 GB
/// with two groups of windows in flight) and sums a point in about as much time as at 2^24.
const LEAST_PASS: usize = 1 << 20;

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
    pub window_multiples: &'static str,
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
            window_multiples: concat!("msm_window_multiples_", $group),
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

/// Window widths bases may be stored with multiples for (see
/// [`DeviceBases::upload_with_window_multiples`]).
pub const MULTIPLE_WINDOW_BITS: std::ops::RangeInclusive<u32> = 16..=23;

/// The window width for multiples of bases whose MSMs have about n points: fewer windows (entries
/// per point) against more buckets, each of which costs its share of the reduction and chunk
/// levels (measured: docs/performance.md, "Why the code is as it is").
pub fn multiple_window_bits(n: usize) -> u32 {
    if n < 1 << 23 {
        19
    } else {
        20
    }
}

/// The params of the pass with shared buckets an MSM over n points takes within `budget` device
/// bytes, over `stride` bases with window multiples of width `bits`: with the sets of buckets
/// asked for, or else the fewest from [`multiple_bucket_sets`]' choice on whose pass fits. None for no points
/// or when no pass fits.
fn shared_params<A: MsmAffine>(
    n: usize,
    stride: usize,
    bits: u32,
    asked: Option<u32>,
    budget: usize,
) -> Option<MsmParams> {
    if n == 0 {
        return None;
    }
    let counts = match asked {
        None => multiple_bucket_sets(n, bits)..=windows_of_width(bits),
        Some(sets) => sets..=sets,
    };
    counts
        .map(|sets| MsmParams::with_window_multiples(n, stride, bits, sets))
        .find(|p| working_bytes::<A>(p) <= budget)
}

/// Sets of buckets the windows of an MSM over n points with window multiples of width c share by
/// default: one, or more where a set would take more than [`MAX_SET_ENTRIES`] entries (its
/// rounds' buffers grow with it). Every set costs its buckets' reduction and chunk levels: a
/// second set's overlap on a second lane does not pay for its buckets
/// (measured: docs/performance.md, "Why the code is as it is").
pub fn multiple_bucket_sets(n: usize, window_bits: u32) -> u32 {
    let entries = n * windows_of_width(window_bits) as usize;
    entries.div_ceil(MAX_SET_ENTRIES).max(1) as u32
}

/// Entries one set of shared buckets takes at most by default: its first round's buffers are
/// then ~27 GB for G1 points.
const MAX_SET_ENTRIES: usize = 1 << 28;

/// Bases uploaded once and reused by every MSM over them.
#[derive(Debug)]
pub struct DeviceBases<A> {
    /// The bases; with window multiples, then 2^(c·w)·bases for each window w ≥ 1 in turn.
    words: CudaSlice<u32>,
    len: usize,
    /// Window width of the stored multiples, if any.
    multiple_bits: Option<u32>,
    /// Sets of buckets MSMs over the multiples use, if not [`multiple_bucket_sets`]' choice.
    bucket_sets: Option<u32>,
    _points: PhantomData<A>,
}

impl<A: MsmAffine> DeviceBases<A> {
    /// Bases already on the device: `len` points as `words`, in the layout [`Self::upload`]
    /// gives them.
    pub(crate) fn from_words(words: CudaSlice<u32>, len: usize) -> Self {
        DeviceBases {
            words,
            len,
            multiple_bits: None,
            bucket_sets: None,
            _points: PhantomData,
        }
    }

    pub fn upload(gpu: &Lane, points: &[A]) -> Result<Self, GpuError> {
        gpu.ensure_fits("MSM bases", points.len() * A::WORDS * 4)?;
        let words = gpu.upload(as_words(points), "cuMemcpyHtoD (bases)")?;
        Ok(Self::from_words(words, points.len()))
    }

    /// The bases and their window multiples 2^(c·w)·P for c = `window_bits` (in
    /// [`MULTIPLE_WINDOW_BITS`]; [`multiple_window_bits`] picks one for a size) and every window
    /// w < ⌈255/c⌉, computed on the device: ⌈255/c⌉ times the memory, for MSMs whose windows share
    /// buckets (see [`multiple_bucket_sets`]).
    pub fn upload_with_window_multiples(
        gpu: &Lane,
        points: &[A],
        window_bits: u32,
    ) -> Result<Self, GpuError> {
        let what = "MSM bases with window multiples";
        if !MULTIPLE_WINDOW_BITS.contains(&window_bits) {
            return Err(GpuError::InvalidInput {
                what,
                reason: format!("window width {window_bits} outside {MULTIPLE_WINDOW_BITS:?}"),
            });
        }
        let len = points.len();
        let blocks = windows_of_width(window_bits);
        // Entries name a stored point by a 31-bit index (the top bit is the sign).
        if len * blocks as usize >= 1 << 31 {
            return Err(GpuError::InvalidInput {
                what,
                reason: format!("{len} bases × {blocks} windows exceed 2^31 points"),
            });
        }
        gpu.ensure_fits(what, (blocks as usize + 1) * len * A::WORDS * 4)?;
        let stream = gpu.stream();
        let plain = gpu.upload(as_words(points), "cuMemcpyHtoD (bases)")?;
        // SAFETY: uninitialised; the kernel below writes every one of its blocks·len points.
        let mut words = unsafe {
            gpu.uninitialised::<u32>(
                blocks as usize * len * A::WORDS,
                "cuMemAlloc (window multiples)",
            )
        }?;
        if len > 0 {
            let kernel = gpu.kernel(A::KERNELS.window_multiples)?;
            let len32 = len as u32;
            // SAFETY: `plain` holds len points and `words` blocks·len; one thread per base i < len
            // reads plain[i] and writes words[w·len + i] for w < blocks.
            unsafe {
                stream
                    .launch_builder(&kernel)
                    .arg(&plain)
                    .arg(&len32)
                    .arg(&window_bits)
                    .arg(&blocks)
                    .arg(&mut words)
                    .launch(grid(len, 128))
                    .call(A::KERNELS.window_multiples)?;
            }
        }
        Ok(DeviceBases {
            words,
            len,
            multiple_bits: Some(window_bits),
            bucket_sets: None,
            _points: PhantomData,
        })
    }

    /// The device words of every stored point: the bases, then (with window multiples) each
    /// window's multiples of them in turn, `len` points per block.
    pub fn words(&self) -> &CudaSlice<u32> {
        &self.words
    }

    /// The window width of the stored multiples, if the bases have them.
    pub fn multiple_window_bits(&self) -> Option<u32> {
        self.multiple_bits
    }

    /// MSMs over these bases' window multiples share this many sets of buckets instead of
    /// [`multiple_bucket_sets`]' choice (for benchmarks; None restores it).
    pub fn with_bucket_sets(mut self, sets: Option<u32>) -> Self {
        self.bucket_sets = sets;
        self
    }

    /// Device bytes an MSM over the first n of these bases allocates beyond them and its scalars
    /// at most: with shared buckets over the window multiples (the fewest sets: the most memory),
    /// or as [`working_memory`] says.
    pub fn working_memory(&self, n: usize) -> usize {
        match self.shared_params(n, usize::MAX) {
            Some(p) => working_bytes::<A>(&p),
            None => working_memory::<A>(n),
        }
    }

    /// See [`shared_params`].
    fn shared_params(&self, n: usize, budget: usize) -> Option<MsmParams> {
        let bits = self.multiple_window_bits()?;
        if n > MAX_PASS.min(self.len) {
            return None;
        }
        shared_params::<A>(n, self.len, bits, self.bucket_sets, budget)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

pub(crate) fn grid(threads: usize, block: u32) -> LaunchConfig {
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
/// Blocks of 1024 are scanned, then their totals (in one block, or by this scan again when there
/// are more than 1024 of them: a shared set of 2^21 buckets has 2049), then added back.
fn exclusive_scan(gpu: &Lane, values: &mut CudaSlice<u32>) -> Result<(), GpuError> {
    const BLOCK: usize = 1024;
    let n = values.len();
    let Ok(n32) = u32::try_from(n) else {
        return Err(GpuError::InvalidInput {
            what: "prefix sum",
            reason: format!("{n} values exceed 2^32"),
        });
    };
    let blocks = n.div_ceil(BLOCK);
    let stream = gpu.stream();
    let mut totals = gpu.zeros::<u32>(blocks + 1, "cuMemAlloc (scan)")?;
    let (scan_blocks, scan_totals, add) = (
        gpu.kernel("scan_blocks_u32")?,
        gpu.kernel("scan_totals_u32")?,
        gpu.kernel("scan_add_u32")?,
    );
    let blocks32 = blocks as u32;
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
    }
    if blocks > BLOCK {
        // The totals with their own extra slot (zero) are a scan of the same kind.
        exclusive_scan(gpu, &mut totals)?;
    } else {
        // SAFETY: as above; one block scans the `blocks` ≤ 1024 totals and writes totals[blocks].
        unsafe {
            stream
                .launch_builder(&scan_totals)
                .arg(&mut totals)
                .arg(&blocks32)
                .launch(grid(1, BLOCK as u32))
                .call("scan_totals_u32")?;
        }
    }
    // SAFETY: as above.
    unsafe {
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
    gpu: &Lane,
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
    gpu: &Lane,
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
/// consecutive passes over slices of the points, summed on the host; scalars mostly 0 or 1 as
/// split ([`ZeroOneScalars::Split`]).
pub fn msm_device<'s, A: MsmAffine>(
    gpu: &Lane,
    bases: &DeviceBases<A>,
    scalars: impl Into<MsmScalars<'s>>,
) -> Result<A::Projective, GpuError> {
    msm_device_with(gpu, bases, scalars, ZeroOneScalars::Split)
}

/// How an MSM sums scalars mostly 0 or 1 (a witness's bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZeroOneScalars {
    /// One Pippenger over every scalar.
    Pippenger,
    /// The ones' points summed directly, the others' gathered for one Pippenger (for scalars
    /// that are not mostly 0 or 1: Pippenger). The default, resident and streamed: faster than
    /// Pippenger's pair rounds (measured: docs/performance.md, "Why the code is as it is"), and
    /// no bucket memory for the ones.
    Split,
}

/// [`msm_device`] with the way scalars mostly 0 or 1 are summed chosen: for benchmarks and tests
/// of each.
pub fn msm_device_with<'s, A: MsmAffine>(
    gpu: &Lane,
    bases: &DeviceBases<A>,
    scalars: impl Into<MsmScalars<'s>>,
    zero_one: ZeroOneScalars,
) -> Result<A::Projective, GpuError> {
    let scalars = scalars.into();
    let n = scalars_within("MSM", &scalars, bases.len())?;
    let points = bases.words.slice(..n * A::WORDS);
    let split = match zero_one {
        ZeroOneScalars::Pippenger => None,
        ZeroOneScalars::Split => SplitMsm::<A>::of(gpu, &scalars)?,
    };
    if let Some(mut split) = split {
        split.add(gpu, &points, (0, n))?;
        return split.finish(gpu);
    }
    let (free, _) = gpu.settled_memory()?;
    if let Some(p) = bases.shared_params(n, free.saturating_sub(MEMORY_MARGIN)) {
        return pippenger::<A>(
            gpu,
            &bases.words.slice(..),
            &scalars.range(gpu, 0, n)?.view(),
            &Pass::full::<A>(p),
            None,
        );
    }
    resident_passes::<A>(gpu, &points, &scalars, n)
}

/// The sets of buckets an MSM over the first n of `bases` now has its windows share, if it can:
/// the bases have their window multiples and the pass fits the free memory in one piece (else it
/// runs over the plain bases, split as memory requires).
pub fn shared_bucket_sets<A: MsmAffine>(
    gpu: &Lane,
    bases: &DeviceBases<A>,
    n: usize,
) -> Result<Option<u32>, GpuError> {
    let (free, _) = gpu.memory()?;
    Ok(bases
        .shared_params(n, free.saturating_sub(MEMORY_MARGIN))
        .map(|p| p.sets()))
}

/// Σ scalars[i]·points[i] with the points streamed from host memory, for bases that do not stay
/// on the device: chunks of points are copied on the copy stream into two device buffers in turn,
/// each copy overlapping the Pippenger pass over the chunk before it. The copies overlap only from
/// page-locked memory ([`Pinned`](crate::Pinned), or memory locked in place by [`HostLocked`](crate::HostLocked));
/// from pageable memory the driver stages each one and the host waits for it.
///
/// Scalars mostly 0 or 1 are split ([`ZeroOneScalars::Split`]).
pub fn msm_streamed<'s, A: MsmAffine>(
    gpu: &Lane,
    points: &[A],
    scalars: impl Into<MsmScalars<'s>>,
) -> Result<A::Projective, GpuError> {
    msm_streamed_with(gpu, points, scalars, ZeroOneScalars::Split)
}

/// [`msm_streamed`] with the way scalars mostly 0 or 1 are summed chosen: for benchmarks and
/// tests of each.
pub fn msm_streamed_with<'s, A: MsmAffine>(
    gpu: &Lane,
    points: &[A],
    scalars: impl Into<MsmScalars<'s>>,
    zero_one: ZeroOneScalars,
) -> Result<A::Projective, GpuError> {
    let scalars = scalars.into();
    let n = scalars_within("streamed MSM", &scalars, points.len())?;
    if n == 0 {
        return Ok(A::Projective::identity());
    }
    let split = match zero_one {
        ZeroOneScalars::Pippenger => None,
        ZeroOneScalars::Split => SplitMsm::<A>::of(gpu, &scalars)?,
    };
    if let Some(mut split) = split {
        let (free, _) = gpu.settled_memory()?;
        let chunk = split_chunk::<A>(n, free)?;
        let mut buffers = PointBuffers::new(gpu, chunk * A::WORDS * 4)?;
        split.stream(gpu, points, &mut buffers)?;
        drop(buffers);
        return split.finish(gpu);
    }
    let (free, _) = gpu.settled_memory()?;
    let passes = passes::<A>(n, free, streamed_point_bytes::<A>())?;
    let ranges: Vec<_> = passes.iter().map(|&(start, end, _)| (start, end)).collect();
    let most = ranges.iter().map(|(start, end)| end - start).max();
    let mut buffers = PointBuffers::new(gpu, most.unwrap_or(1) * A::WORDS * 4)?;
    let mut total = A::Projective::identity();
    stream_points(
        gpu,
        points,
        &ranges,
        &mut buffers,
        |k, (start, end), chunk, copy_wait_ms| {
            total += pippenger::<A>(
                gpu,
                chunk,
                &scalars.range(gpu, start, end)?.view(),
                &passes[k].2,
                copy_wait_ms,
            )?;
            Ok(())
        },
    )?;
    Ok(total)
}

/// Two device buffers that points are copied into in turn (see [`stream_points`]), made before
/// the copies so that work beside them on other lanes can be sized knowing they are taken. Any
/// group's points fit: they are words.
pub struct PointBuffers {
    buffers: [CudaSlice<u32>; 2],
    /// Events recorded where each buffer's last reader is in its stream: a copy into the buffer
    /// waits for it.
    released: [cudarc::driver::CudaEvent; 2],
}

impl PointBuffers {
    /// Two buffers of `bytes` each (rounded down to words) on `gpu`'s stream, which the streams
    /// that use them must follow (they are free there at once).
    pub fn new(gpu: &Lane, bytes: usize) -> Result<Self, GpuError> {
        let words = (bytes / 4).max(1);
        gpu.ensure_fits("MSM point buffers", 2 * 4 * words)?;
        let alloc = || gpu.zeros::<u32>(words, "cuMemAlloc (MSM point chunk)");
        let buffers = [alloc()?, alloc()?];
        let made = || {
            gpu.stream()
                .record_event(None)
                .call("cuEventRecord (point buffers)")
        };
        Ok(PointBuffers {
            buffers,
            released: [made()?, made()?],
        })
    }

    /// Bytes of one buffer.
    pub fn bytes(&self) -> usize {
        self.buffers[0].num_bytes()
    }

    /// Points of `A` one buffer holds.
    fn points<A: MsmAffine>(&self) -> usize {
        self.buffers[0].len() / A::WORDS
    }
}

impl std::fmt::Debug for PointBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PointBuffers")
            .field("bytes", &self.bytes())
            .finish_non_exhaustive()
    }
}

/// Copies `points` to the device range by range through `buffers` in turn, each copy on the copy
/// stream overlapping `work` on the range before it, which runs on `gpu`'s stream with the
/// range's index, bounds and points (and, when traced, how long the stream waited for their
/// copy). A buffer is copied into again only once the work queued on it has run.
fn stream_points<A: MsmAffine>(
    gpu: &Lane,
    points: &[A],
    ranges: &[(usize, usize)],
    buffers: &mut PointBuffers,
    mut work: impl FnMut(usize, (usize, usize), &CudaView<'_, u32>, Option<f64>) -> Result<(), GpuError>,
) -> Result<(), GpuError> {
    let Some(chunk) = ranges.iter().map(|(start, end)| end - start).max() else {
        return Ok(());
    };
    if chunk > buffers.points::<A>() || ranges.last().is_some_and(|r| r.1 > points.len()) {
        return Err(GpuError::InvalidInput {
            what: "streamed points",
            reason: format!(
                "ranges of up to {chunk} points through buffers of {} over {} points",
                buffers.points::<A>(),
                points.len()
            ),
        });
    }
    let copy = gpu.copy_stream();
    let PointBuffers { buffers, released } = buffers;
    let upload = |(start, end): (usize, usize),
                  buffer: &mut CudaSlice<u32>,
                  released: &cudarc::driver::CudaEvent| {
        copy.wait(released)
            .call("cuStreamWaitEvent (point buffer free)")?;
        copy.memcpy_htod(
            as_words(&points[start..end]),
            &mut buffer.slice_mut(..(end - start) * A::WORDS),
        )
        .call("cuMemcpyHtoDAsync (MSM points)")?;
        copy.record_event(TIMED_EVENT)
            .call("cuEventRecord (points copied)")
    };
    let mut coming = Some(upload(ranges[0], &mut buffers[0], &released[0])?);
    for (k, &(start, end)) in ranges.iter().enumerate() {
        let Some(copied) = coming.take() else {
            break;
        };
        let copy_wait_ms = trace::copy_wait_ms(&copied)?;
        let ready = gpu
            .stream()
            .record_event(TIMED_EVENT)
            .call("cuEventRecord (pass ready)")?;
        gpu.stream()
            .wait(&copied)
            .call("cuStreamWaitEvent (points copied)")?;
        gpu.note_copy_wait(ready, copied);
        let (current, next) = (k % 2, (k + 1) % 2);
        if let Some(&following) = ranges.get(k + 1) {
            coming = Some(upload(following, &mut buffers[next], &released[next])?);
        }
        work(
            k,
            (start, end),
            &buffers[current].slice(..(end - start) * A::WORDS),
            copy_wait_ms,
        )?;
        released[current] = gpu
            .stream()
            .record_event(None)
            .call("cuEventRecord (point buffer used)")?;
    }
    Ok(())
}

/// Points per range of a split streamed MSM over n points: each copy of [`SPLIT_CHUNK_BYTES`]
/// or less (the sums of its ones take a fraction of its copy), halved while two buffers of it do
/// not fit in `free`.
fn split_chunk<A: MsmAffine>(n: usize, free: usize) -> Result<usize, GpuError> {
    let point_bytes = A::WORDS * 4;
    // The largest power of two within SPLIT_CHUNK_BYTES, no larger than n needs.
    let largest = 1usize << (SPLIT_CHUNK_BYTES / point_bytes).ilog2();
    let mut chunk = largest.min(n.next_power_of_two()).max(SPLIT_BLOCK);
    while chunk > SPLIT_BLOCK && 2 * chunk * point_bytes + MEMORY_MARGIN > free {
        chunk /= 2;
    }
    match 2 * chunk * point_bytes + MEMORY_MARGIN <= free {
        true => Ok(chunk),
        false => Err(GpuError::OutOfMemory {
            what: "MSM point chunks",
            needed: 2 * chunk * point_bytes,
            free,
            account: None,
        }),
    }
}

/// A split streamed MSM copies its points in ranges of at most this many bytes.
const SPLIT_CHUNK_BYTES: usize = 512 << 20;

/// Σ scalars[i]·bases[i] over i < n, both on the device, in Pippenger passes as large as fit
/// the memory free now.
pub(super) fn resident_passes<A: MsmAffine>(
    gpu: &Lane,
    bases: &CudaView<'_, u32>,
    scalars: &MsmScalars<'_>,
    n: usize,
) -> Result<A::Projective, GpuError> {
    let (free, _) = gpu.settled_memory()?;
    let mut total = A::Projective::identity();
    for (start, end, pass) in passes::<A>(n, free, 0)? {
        total += pippenger::<A>(
            gpu,
            &bases.slice(start * A::WORDS..end * A::WORDS),
            &scalars.range(gpu, start, end)?.view(),
            &pass,
            None,
        )?;
    }
    Ok(total)
}

/// Device bytes per point of a streamed pass beside its working memory: its two point buffers.
fn streamed_point_bytes<A: MsmAffine>() -> usize {
    2 * A::WORDS * 4
}

/// The number of scalars, refused when there are more than the `points` they would multiply.
fn scalars_within(
    what: &'static str,
    scalars: &MsmScalars<'_>,
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

/// The passes over n points, [start, end) each with its shape: as many points each as fit in
/// `free` (see [`fit_points`]; a streamed MSM's first pass only up to a quarter, see
/// [`streamed_pass`]), the last, shorter one fitted anew.
fn passes<A: MsmAffine>(
    n: usize,
    free: usize,
    extra_per_point: usize,
) -> Result<Vec<(usize, usize, Pass)>, GpuError> {
    let wanted = match extra_per_point {
        0 => n.min(MAX_PASS),
        _ => streamed_pass(n),
    };
    let fitted = fit_points::<A>(wanted, free, extra_per_point)?;
    let budget = free.saturating_sub(MEMORY_MARGIN);
    ranges(n, fitted.params.n as usize)
        .into_iter()
        .map(|(start, end)| {
            let points = end - start;
            let extra = points * extra_per_point;
            let shorter = |rounds| Pass::within::<A>(MsmParams::new(points), budget, extra, rounds);
            let pass = match points == fitted.params.n as usize {
                true => Some(fitted),
                false => shorter(true).or_else(|| shorter(false)),
            };
            pass.map(|pass| (start, end, pass))
                .ok_or(GpuError::OutOfMemory {
                    what: "MSM working memory",
                    needed: working_bytes::<A>(&MsmParams::new(points)),
                    free,
                    account: None,
                })
        })
        .collect()
}

/// [start, end) ranges of at most `size` covering 0..n.
fn ranges(n: usize, size: usize) -> Vec<(usize, usize)> {
    (0..n)
        .step_by(size.max(1))
        .map(|start| (start, (start + size).min(n)))
        .collect()
}

/// The pass over the most points, up to `wanted`, whose device bytes (with `extra` bytes per
/// point: a streamed pass's point buffers) fit in `free` less a margin; halving from `wanted`
/// down to [`MIN_PASS`]. A pass short of memory gives up its pair rounds' lanes and groups before
/// its points (see [`Pass::within`]), and its rounds only where no pass with them fits.
fn fit_points<A: MsmAffine>(
    wanted: usize,
    free: usize,
    extra_per_point: usize,
) -> Result<Pass, GpuError> {
    let budget = free.saturating_sub(MEMORY_MARGIN);
    let sizes = || std::iter::successors(Some(wanted), |&n| (n > MIN_PASS).then(|| n.div_ceil(2)));
    [true, false]
        .into_iter()
        .flat_map(|rounds| sizes().map(move |points| (rounds, points)))
        .find_map(|(rounds, points)| {
            Pass::within::<A>(
                MsmParams::new(points),
                budget,
                points * extra_per_point,
                rounds,
            )
        })
        .ok_or_else(|| {
            let points = wanted.min(MIN_PASS);
            let least = Pass {
                params: MsmParams::new(points),
                pairs: PairPlan::NONE,
            };
            GpuError::OutOfMemory {
                what: "MSM working memory",
                needed: least.bytes::<A>() + points * extra_per_point,
                free,
                account: None,
            }
        })
}

/// Quarters, but passes of at least 2^22 points: smaller passes cost more per point than the
/// copy they would hide (measured: docs/performance.md, "Why the code is as it is").
const STREAMED_MIN_PASS: usize = 1 << 22;
/// The smallest slice of points a split MSM runs as one pass.
const MIN_PASS: usize = 1 << 12;
/// Points per pass at most: keeps n·windows (entry indices) inside u32.
const MAX_PASS: usize = 1 << 26;

/// Device bytes one Pippenger pass allocates, with the pair rounds memory is plentiful for.
fn working_bytes<A: MsmAffine>(p: &MsmParams) -> usize {
    Pass::full::<A>(*p).bytes::<A>()
}

/// One Pippenger pass: its launch params and its pair rounds.
#[derive(Clone, Copy, Debug)]
struct Pass {
    params: MsmParams,
    pairs: PairPlan,
}

impl Pass {
    /// With the pair rounds memory is plentiful for.
    fn full<A: MsmAffine>(params: MsmParams) -> Self {
        Pass {
            pairs: PairPlan::new::<A>(&params),
            params,
        }
    }

    /// With the pair rounds of the most memory (see [`PairPlan::choices`]; some rounds), or
    /// none when `rounds` is false, whose pass takes at most `budget` device bytes besides
    /// `extra`; None when none fits.
    fn within<A: MsmAffine>(
        params: MsmParams,
        budget: usize,
        extra: usize,
        rounds: bool,
    ) -> Option<Self> {
        let choices: Vec<PairPlan> = match rounds {
            true => PairPlan::choices::<A>(&params)
                .filter(|pairs| pairs.rounds > 0)
                .collect(),
            false => vec![PairPlan::NONE],
        };
        choices
            .into_iter()
            .map(|pairs| Pass { params, pairs })
            .find(|pass| pass.bytes::<A>() + extra <= budget)
    }

    /// Device bytes the pass allocates.
    fn bytes<A: MsmAffine>(&self) -> usize {
        let p = &self.params;
        let entries = p.n as usize * p.windows as usize;
        let buckets = p.total_buckets();
        let xyzz_bytes = 4 * <A::Projective as XyzzPoint>::XYZZ_WORDS;
        let (first, later) = self.level_bounds();
        4 * (2 * entries + 4 * (buckets + 1))
            + xyzz_bytes * (first + later + p.sets() as usize * (p.partials() as usize + 1))
            + self.pairs.bytes::<A>(p)
    }

    /// Upper bounds on the chunks of the first level and of any later level: Σ⌈count/chunk⌉ over
    /// the buckets is below Σcount/chunk + buckets, the count being the points the pair rounds
    /// leave (or every entry without rounds).
    fn level_bounds(&self) -> (usize, usize) {
        let p = &self.params;
        let buckets = p.total_buckets();
        let points = match self.pairs.rounds {
            0 => p.n as usize * p.windows as usize,
            _ => self.pairs.left_bound(p),
        };
        let first = points / FIRST_CHUNK as usize + buckets + 1;
        (first, first / LEVEL_CHUNK as usize + buckets + 1)
    }
}

/// Bytes of partly written entry sectors one scatter pass may keep in L2: a window's entries land
/// in every bucket of its set, each bucket's next slot in a sector of its own until the sector
/// fills, so 2^(c−1) buckets keep 32·2^(c−1) bytes of sectors open. Beyond a few MiB they are
/// evicted half written and the scatter pays DRAM read-modify-writes; passes over disjoint ranges
/// of digit magnitudes keep fewer open, for one more read of the codes each
/// (measured: docs/performance.md, "Why the code is as it is").
const SCATTER_OPEN_BYTES: u64 = 2 << 20;
/// The passes stop paying where reading the codes again costs what they save (2^26 over 20-bit
/// multiples: two and four passes within 0.1 ms).
const MAX_SCATTER_PASSES: u64 = 4;

/// Scatter passes over the digit magnitudes for `p`'s buckets (see [`SCATTER_OPEN_BYTES`]).
fn scatter_passes(p: &MsmParams) -> u32 {
    (32 * u64::from(p.buckets))
        .div_ceil(SCATTER_OPEN_BYTES)
        .clamp(1, MAX_SCATTER_PASSES) as u32
}

/// Pass k of P takes the digit magnitudes [bound(k), bound(k + 1)) of K buckets:
/// bound(k) = 1 + ⌊K·k/P⌋, from 1 to K + 1.
fn magnitude_bound(buckets: u32, passes: u32, k: u32) -> u32 {
    1 + (u64::from(buckets) * u64::from(k) / u64::from(passes)) as u32
}

/// One Pippenger pass with params `p` over `scalars` (Montgomery words, p.n of them) and `bases`
/// (affine words: as many points, or with p.shared_stride the stored window multiples).
fn pippenger<A: MsmAffine>(
    gpu: &Lane,
    bases: &CudaView<'_, u32>,
    scalars: &CudaView<'_, u32>,
    pass: &Pass,
    copy_wait_ms: Option<f64>,
) -> Result<A::Projective, GpuError> {
    let p = &pass.params;
    let n = scalars.len() / SCALAR_WORDS;
    if n == 0 {
        return Ok(A::Projective::identity());
    }
    gpu.count_msm_pass();
    let mut trace = PassTrace::start(gpu, p, copy_wait_ms)?;
    let stream = gpu.stream();
    let buckets = p.total_buckets();
    let xyzz_words = <A::Projective as XyzzPoint>::XYZZ_WORDS;
    let entries_len = n * p.windows as usize;
    let (first_bound, later_bound) = pass.level_bounds();
    let partial_len = p.sets() as usize * p.partials() as usize;
    let alloc = |len: usize| gpu.zeros::<u32>(len, "cuMemAlloc (MSM)");
    let mut codes = alloc(entries_len)?;
    let mut offsets = alloc(buckets + 1)?;
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
            .arg(p)
            .arg(&mut codes)
            .arg(&mut offsets)
            .launch(grid(n, 256))
            .call("msm_digits")?;
    }
    exclusive_scan(gpu, &mut offsets)?;
    if let Some(trace) = &mut trace {
        trace.stage("digits")?;
        trace.occupancy(p, &offsets)?;
    }
    // The scatter's cursors start at the buckets' offsets.
    let mut cursors = stream
        .clone_dtod(&offsets.slice(..buckets))
        .call("cuMemcpyDtoD (MSM)")?;
    let passes = scatter_passes(p);
    for pass in 0..passes {
        let (from, to) = (
            magnitude_bound(p.buckets, passes, pass),
            magnitude_bound(p.buckets, passes, pass + 1),
        );
        // SAFETY: as above.
        unsafe {
            stream
                .launch_builder(&scatter)
                .arg(&codes)
                .arg(p)
                .arg(&from)
                .arg(&to)
                .arg(&mut cursors)
                .arg(&mut entries)
                .launch(LaunchConfig {
                    grid_dim: (n.div_ceil(256) as u32, p.windows, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                })
                .call("msm_scatter")?;
        }
    }
    drop(codes);
    if let Some(trace) = &mut trace {
        trace.stage("scatter")?;
    }

    // Pair rounds while buckets are large; then chunks of the points left (or of the sorted entries
    // when there were no rounds), and chunks of chunk sums until every bucket has one sum.
    let plan = pass.pairs;
    let (left, left_offsets);
    let (points, point_entries, point_offsets) = if plan.rounds > 0 {
        (left, left_offsets) = pair_rounds::run::<A>(gpu, &plan, p, bases, &entries, &offsets)?;
        drop(entries);
        (left.slice(..), None, &left_offsets)
    } else {
        (bases.slice(..), Some(entries), &offsets)
    };
    if let Some(trace) = &mut trace {
        trace.stage("rounds")?;
    }
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
    // A bucket holds every entry of its set at most, ⌈that/2^rounds⌉ after the rounds.
    let mut largest = p
        .entries_per_set()
        .div_ceil(1 << plan.rounds)
        .div_ceil(FIRST_CHUNK as usize);
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
    if let Some(trace) = &mut trace {
        trace.stage("chunks")?;
    }
    let (sums, sum_offsets) = (&level_sums[level % 2], &chunk_offsets[level % 2]);
    // SAFETY: as above.
    unsafe {
        stream
            .launch_builder(&reduce)
            .arg(sums)
            .arg(sum_offsets)
            .arg(p)
            .arg(&mut partial)
            .launch(grid(p.sets() as usize * p.segments as usize, 64))
            .call(A::KERNELS.reduce)?;
    }
    let words = tree_sums::<A>(gpu, &partial, p.sets(), p.partials())?;
    if let Some(mut trace) = trace {
        trace.stage("reduce")?;
        trace.finish(plan.rounds);
    }
    // Horner over the windows, most significant first: (W − 1)·c doublings on the host; sets of
    // shared buckets are summed as they are (their points carry their windows' weights).
    let doublings = if p.shared_stride != 0 {
        0
    } else {
        p.window_bits
    };
    let mut acc = A::Projective::identity();
    for window in words.chunks_exact(xyzz_words).rev() {
        for _ in 0..doublings {
            acc = acc.double();
        }
        acc += A::Projective::from_xyzz(window)?;
    }
    Ok(acc)
}

/// Σ bases[i] over the set bits i < n of a bitmap given as little-endian u64 words (the layout of
/// `cuzk_math::Bitmap::words`): the plain sum for scalars equal to 1.
pub fn bitmap_sum<A: MsmAffine>(
    gpu: &Lane,
    bases: &DeviceBases<A>,
    bits: &[u64],
    n: usize,
) -> Result<A::Projective, GpuError> {
    // Bits past the bitmap or the bases are refused by `sum_bits`, which checks both.
    if n == 0 {
        return Ok(A::Projective::identity());
    }
    let words: Vec<u32> = bits
        .iter()
        .flat_map(|w| [*w as u32, (*w >> 32) as u32])
        .take(n.div_ceil(32))
        .collect();
    gpu.ensure_fits("bitmap", 4 * words.len())?;
    let bits = gpu.upload(&words, "cuMemcpyHtoD (bitmap)")?;
    let points = bases.words.slice(..bases.len * A::WORDS);
    let mut sum = split::OnesSum::<A>::new(gpu)?;
    sum.add(gpu, &points, &bits.slice(..), n)?;
    sum.read(gpu)
}

/// The XYZZ words of Σ partial[w·count + i] over i < `count`, for each of the `windows` windows,
/// copied to the host.
fn tree_sums<A: MsmAffine>(
    gpu: &Lane,
    partial: &CudaSlice<u32>,
    windows: u32,
    count: u32,
) -> Result<Vec<u32>, GpuError> {
    let xyzz_words = <A::Projective as XyzzPoint>::XYZZ_WORDS;
    let mut sums = gpu.zeros::<u32>(windows as usize * xyzz_words, "cuMemAlloc (window sums)")?;
    window_sums::<A>(gpu, partial, (windows, count), WindowSums::Set, &mut sums)?;
    gpu.stream()
        .clone_dtoh(&sums)
        .call("cuMemcpyDtoH (window sums)")
}

/// What [`window_sums`] does with the sums already in its output.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WindowSums {
    Set,
    AddTo,
}

/// sums[w] = Σ partial[w·count + i] over i < `count` (or sums[w] += it, by `into`), XYZZ points,
/// for each of the `windows` windows, on the device: the window-sum kernel's tree, one block per
/// window.
fn window_sums<A: MsmAffine>(
    gpu: &Lane,
    partial: &CudaSlice<u32>,
    (windows, count): (u32, u32),
    into: WindowSums,
    sums: &mut CudaSlice<u32>,
) -> Result<(), GpuError> {
    /// Threads per window: a power of two, as the tree's halving needs.
    const SUM_BLOCK: u32 = 64;
    let xyzz_words = <A::Projective as XyzzPoint>::XYZZ_WORDS;
    if partial.len() < windows as usize * count as usize * xyzz_words
        || sums.len() < windows as usize * xyzz_words
    {
        return Err(GpuError::InvalidInput {
            what: "window sums",
            reason: format!(
                "{} partial words and {} sum words for {windows} windows of {count} points",
                partial.len(),
                sums.len(),
            ),
        });
    }
    let kernel = gpu.kernel(A::KERNELS.window_sum)?;
    let accumulate = u32::from(into == WindowSums::AddTo);
    // SAFETY: `partial` holds windows·count points and `sums` one per window (checked above); one
    // block of SUM_BLOCK threads (a power of two) per window with SUM_BLOCK points of shared
    // memory, as the kernel's tree needs.
    unsafe {
        gpu.stream()
            .launch_builder(&kernel)
            .arg(partial)
            .arg(&count)
            .arg(&accumulate)
            .arg(sums)
            .launch(LaunchConfig {
                grid_dim: (windows, 1, 1),
                block_dim: (SUM_BLOCK, 1, 1),
                shared_mem_bytes: SUM_BLOCK * 4 * xyzz_words as u32,
            })
            .call(A::KERNELS.window_sum)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_passes_shrink_with_the_free_memory() {
        let extra = streamed_point_bytes::<G1Affine>();
        let streamed_pass =
            |n: usize, free: usize| fit_points::<G1Affine>(streamed_pass(n), free, extra).ok();
        // 2^27 points (a 32 GiB partition's H): quarters where memory allows, capped at 2^26.
        let n = 1 << 27;
        let roomy = streamed_pass(n, 1 << 40).map(|pass| pass.params.n);
        assert_eq!(roomy, Some(1 << 25));
        let mut previous = roomy;
        for gib in [64, 16, 8, 4] {
            let pass = streamed_pass(n, gib << 30);
            let points = pass.map(|pass| pass.params.n);
            assert!(
                points.is_some() && points <= previous,
                "{gib} GiB: {points:?}"
            );
            let needed = pass.map(|pass| pass.bytes::<G1Affine>() + pass.params.n as usize * extra);
            assert!(
                needed <= Some((gib << 30) - MEMORY_MARGIN),
                "{gib} GiB: {needed:?}"
            );
            previous = points;
        }
        // 16 GiB hold passes of 2^25 points, their pair rounds one window at a time, where a
        // pass with two groups of windows in flight would have had to shrink to 2^22.
        let pass = streamed_pass(n, 16 << 30);
        assert_eq!(pass.map(|pass| pass.params.n), Some(1 << 25));
        assert_eq!(pass.map(|pass| pass.pairs.lanes), Some(1));
        // Not even its smallest pass.
        assert!(streamed_pass(n, 1 << 20).is_none());
    }

    #[test]
    fn window_multiples_share_sets_of_buckets() {
        // 2^24 points with 22-bit multiples: one set of 2^21 buckets for all 12 windows.
        let sets = multiple_bucket_sets(1 << 24, 22);
        let p = MsmParams::with_window_multiples(1 << 24, 1 << 25, 22, sets);
        assert_eq!((p.windows, p.set_windows, p.sets()), (12, 12, 1));
        assert!(p.windows * p.window_bits >= 255);
        assert_eq!(p.total_buckets(), 1 << 21);
        assert_eq!(p.entries_per_set(), 12 << 24);
        // The entry of (window, point) is w·stride + i, below the sign bit.
        assert!((p.windows as usize) * (p.shared_stride as usize) < 1 << 31);
        // Halved while its buckets hold two or more points (96 on average).
        assert_eq!(PairPlan::new::<G1Affine>(&p).rounds, 6);
        // Two sets asked: a group each (two lanes), one round fewer.
        let two = MsmParams::with_window_multiples(1 << 24, 1 << 24, 22, 2);
        assert_eq!((two.set_windows, two.total_buckets()), (6, 2 << 21));
        let plan = PairPlan::new::<G1Affine>(&two);
        assert_eq!((plan.group_windows, plan.rounds), (1, 5));
        // Sets never outnumber windows; five asked of 12 windows: three windows each, four sets.
        let many = MsmParams::with_window_multiples(1 << 24, 1 << 24, 22, 99);
        assert_eq!((many.sets(), many.set_windows), (12, 1));
        let five = MsmParams::with_window_multiples(1 << 24, 1 << 24, 22, 5);
        assert_eq!((five.set_windows, five.sets()), (3, 4));
        // At 2^26 one set would take 2^29.6 entries: three sets of four windows.
        assert_eq!(multiple_bucket_sets(1 << 26, 22), 3);
        // The default sets are the fewest whose pass fits: at 2^26 with 20-bit multiples, four
        // sets of four windows given room (a 66 GB pass); in the 45 GB an H200 has left beside the
        // multiples, seven sets of two windows (41 GB; five sets of three would take 54).
        let sets = |budget| shared_params::<G1Affine>(1 << 26, 1 << 26, 20, None, budget);
        assert_eq!(sets(usize::MAX).map(|p| p.sets()), Some(4));
        let fitted = sets(45 << 30).map(|p| (p.set_windows, p.sets()));
        assert_eq!(fitted, Some((2, 7)));
        // Sets asked for are kept, or nothing fits; no points take no pass.
        assert_eq!(
            shared_params::<G1Affine>(1 << 26, 1 << 26, 20, Some(4), 40 << 30),
            None
        );
        assert_eq!(
            shared_params::<G1Affine>(0, 1 << 26, 20, None, usize::MAX),
            None
        );
        // Per-window buckets are unchanged.
        let plain = MsmParams::new(1 << 24);
        assert_eq!((plain.sets(), plain.set_windows), (15, 1));
    }

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

    #[test]
    fn scatter_passes_follow_the_buckets() {
        // Plain 17-bit windows scatter in one pass, shared sets of 2^18 and 2^19 buckets in four.
        let plain = MsmParams::new(1 << 24);
        assert_eq!((plain.buckets, scatter_passes(&plain)), (1 << 16, 1));
        for (bits, passes) in [(18, 2), (19, 4), (20, 4), (22, 4)] {
            let p = MsmParams::with_window_multiples(1 << 24, 1 << 24, bits, 1);
            assert_eq!(scatter_passes(&p), passes, "{bits}-bit multiples");
        }
        // The passes' magnitude ranges tile [1, K] for any K.
        for (buckets, passes) in [(1u32 << 19, 4u32), (3, 4), (1, 1)] {
            let bound = |k| magnitude_bound(buckets, passes, k);
            assert_eq!((bound(0), bound(passes)), (1, buckets + 1));
            assert!((0..passes).all(|k| bound(k) <= bound(k + 1)));
        }
    }
}
