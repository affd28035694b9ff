//! MSMs over scalars that are mostly 0 or 1 (`cuda/msm/split.cuh`). A circuit's witness is mostly
//! bits: in a 32 GiB PoRep partition all but ~0.3% of L's and A's scalars and ~3% of B's. Pippenger
//! gives each such point a bucket entry, a sort and its share of every pass's fixed costs; summing
//! the points of the ones directly (`batch_add`, a mixed addition each) and running Pippenger over
//! the few others' points, gathered, costs a fraction of that.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaView, LaunchArgs, LaunchConfig, PushKernelArg};

use super::{
    exclusive_scan, grid, ranges, resident_passes, stream_points, window_sums, MsmAffine,
    MsmScalars, PointBuffers, WindowSums,
};
use crate::error::DriverContext;
use crate::layout::{XyzzPoint, SCALAR_WORDS};
use crate::{DeviceScalars, GpuError, Lane};

/// Scalars per block of the classifying kernels: the others' offsets are kept per block, so
/// ranges of points split at multiples of it.
pub(super) const SPLIT_BLOCK: usize = 256;
/// MSMs over fewer scalars are not split: the classification's round trip would cost more than
/// it saves.
const SPLIT_MIN: usize = 1 << 16;
/// Split only when at most one scalar in this many is neither 0 nor 1: dense scalars (H's) keep
/// the Pippenger passes, which a compaction of most points would only delay.
const SPLIT_SHARE: usize = 4;
/// Words of a bitmap (32 bits each) per thread of `batch_add`, whose warps each sum the points of
/// 32 times as many: enough work per thread, enough threads to fill the device.
const WORDS_PER_THREAD: usize = 8;
/// Threads per block of `batch_add` (`BATCH_ADD_THREADS` in `cuda/msm/batch_add.cuh`).
const BATCH_ADD_THREADS: u32 = 128;
/// Threads' sums of `batch_add` one block of the window-sum kernel adds up: a few additions per
/// thread. One block over all of them would be one SM adding, for tens of ms at 2^27 (measured:
/// docs/performance.md, "Why the code is as it is").
const PARTIALS_PER_SEGMENT: usize = 1024;

/// An MSM over scalars mostly 0 or 1 in three steps, so that its points can arrive in pieces,
/// streamed beside other work on another lane: [`SplitMsm::of`] finds the ones and gathers the
/// others' scalars (the scalars are not read after it), [`SplitMsm::stream`] (or `add`, for
/// points already on the device) takes the points range by range, summing the ones' and
/// gathering the others', and [`SplitMsm::finish`] sums the others' in Pippenger passes as large
/// as the memory free then allows.
pub struct SplitMsm<A: MsmAffine> {
    /// Where the ones and others are, and the others' scalars: shared by the MSMs of the same
    /// scalars over other points ([`SplitMsm::over`]).
    classified: Arc<Classified>,
    /// The others' points, in order, placed as their ranges are added.
    gathered: CudaSlice<u32>,
    /// The sum of the ones' points added so far, on the device.
    ones: OnesSum<A>,
    /// Points added so far (ranges come in order).
    added: usize,
}

/// A split of scalars and the others' scalars, in order.
struct Classified {
    split: Split,
    scalars: DeviceScalars,
}

impl<A: MsmAffine> std::fmt::Debug for SplitMsm<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitMsm")
            .field("scalars", &self.classified.split.n)
            .field("others", &self.classified.scalars.len)
            .field("added", &self.added)
            .finish_non_exhaustive()
    }
}

impl<A: MsmAffine> SplitMsm<A> {
    /// The split MSM of `scalars`, when they are many and mostly 0 or 1; None for an MSM that
    /// Pippenger should take whole.
    pub fn of(gpu: &Lane, scalars: &MsmScalars<'_>) -> Result<Option<Self>, GpuError> {
        let Some(split) = Split::of(gpu, scalars)? else {
            return Ok(None);
        };
        let words = split.gather_scalars(gpu, scalars)?;
        let m = split.others();
        let classified = Classified {
            split,
            scalars: DeviceScalars { words, len: m },
        };
        Ok(Some(Self::of_classified(gpu, Arc::new(classified))?))
    }

    /// The MSM of the same scalars over points of another group (B's in G1 and in G2), sharing
    /// their classification and gathered scalars: made with none of its points taken.
    pub fn over<B: MsmAffine>(&self, gpu: &Lane) -> Result<SplitMsm<B>, GpuError> {
        SplitMsm::of_classified(gpu, Arc::clone(&self.classified))
    }

    /// An MSM over `classified`'s scalars with room for its others' points.
    fn of_classified(gpu: &Lane, classified: Arc<Classified>) -> Result<Self, GpuError> {
        let gathered_words = classified.split.others().max(1) * A::WORDS;
        gpu.ensure_fits("gathered points", 4 * gathered_words)?;
        let gathered = gpu.zeros::<u32>(gathered_words, "cuMemAlloc (gathered points)")?;
        Ok(SplitMsm {
            classified,
            gathered,
            ones: OnesSum::new(gpu)?,
            added: 0,
        })
    }

    /// Takes the points [start, end) (device words of A, `points` holding them): the next range,
    /// `start` a multiple of [`SPLIT_BLOCK`].
    pub(super) fn add(
        &mut self,
        gpu: &Lane,
        points: &CudaView<'_, u32>,
        (start, end): (usize, usize),
    ) -> Result<(), GpuError> {
        if start != self.added {
            return Err(GpuError::InvalidInput {
                what: "split MSM range",
                reason: format!("{start}..{end} after {} points", self.added),
            });
        }
        let split = &self.classified.split;
        split.gather_others::<A>(gpu, points, (start, end), &mut self.gathered)?;
        split.sum_ones::<A>(gpu, points, (start, end), &mut self.ones)?;
        self.added = end;
        Ok(())
    }

    /// Takes every point from `points` (host memory, page-locked for the copies to overlap),
    /// copied on `gpu`'s copy stream through `buffers` in ranges as large as they hold.
    pub fn stream(
        &mut self,
        gpu: &Lane,
        points: &[A],
        buffers: &mut PointBuffers,
    ) -> Result<(), GpuError> {
        let n = self.classified.split.n;
        let fits = buffers.points::<A>();
        if fits < SPLIT_BLOCK || points.len() < n {
            return Err(GpuError::InvalidInput {
                what: "streamed split MSM",
                reason: format!(
                    "{n} scalars over {} points through buffers of {fits} points",
                    points.len()
                ),
            });
        }
        // A power of two, so that every range starts a block.
        let chunk = (1usize << fits.ilog2()).min(n.next_power_of_two());
        stream_points(
            gpu,
            points,
            &ranges(n, chunk),
            buffers,
            |_, range, chunk, _| self.add(gpu, chunk, range),
        )
    }

    /// The sum: the ones' and, in Pippenger passes as large as fit the memory free now, the
    /// others'. Refused before every point was taken.
    pub fn finish(self, gpu: &Lane) -> Result<A::Projective, GpuError> {
        let SplitMsm {
            classified,
            gathered,
            ones,
            added,
        } = self;
        let n = classified.split.n;
        if added != n {
            return Err(GpuError::InvalidInput {
                what: "split MSM",
                reason: format!("{added} of {n} points taken"),
            });
        }
        // The classification's buffers go before the passes size themselves, unless an MSM of
        // the same scalars over other points still reads them.
        let (owned, shared);
        let scalars: &DeviceScalars = match Arc::try_unwrap(classified) {
            Ok(Classified { split, scalars }) => {
                drop(split);
                owned = scalars;
                &owned
            }
            Err(classified) => {
                shared = classified;
                &shared.scalars
            }
        };
        let ones = ones.read(gpu)?;
        let m = scalars.len;
        if m == 0 {
            return Ok(ones);
        }
        let others = resident_passes::<A>(gpu, &gathered.slice(..), &MsmScalars::all(scalars), m)?;
        Ok(ones + others)
    }
}

/// Where the ones and the others are among an MSM's scalars.
struct Split {
    /// Bit i % 32 of word i / 32 set where scalar i is one.
    ones: CudaSlice<u32>,
    /// Positions of the other scalars (neither 0 nor 1), in order.
    others: CudaSlice<u32>,
    /// Others before each block of [`SPLIT_BLOCK`] scalars, and their total last.
    offsets: Vec<u32>,
    n: usize,
}

impl Split {
    /// The split of `scalars`, when they are many and mostly 0 or 1; None for an MSM that
    /// Pippenger should take whole.
    fn of(gpu: &Lane, scalars: &MsmScalars<'_>) -> Result<Option<Split>, GpuError> {
        let n = scalars.len();
        if n < SPLIT_MIN {
            return Ok(None);
        }
        let (values, index) = (scalars.values(), scalars.index());
        let n32 = u32::try_from(n).map_err(|_| GpuError::InvalidInput {
            what: "MSM split",
            reason: format!("{n} scalars exceed 2^32"),
        })?;
        let blocks = n.div_ceil(SPLIT_BLOCK);
        gpu.ensure_fits("MSM split", 4 * (n.div_ceil(32) + blocks + 1))?;
        let stream = gpu.stream();
        let mut ones = gpu.zeros::<u32>(n.div_ceil(32), "cuMemAlloc (MSM ones)")?;
        let mut counts = gpu.zeros::<u32>(blocks + 1, "cuMemAlloc (MSM split counts)")?;
        let config = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (SPLIT_BLOCK as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let classify = gpu.kernel("msm_split_classify")?;
        // SAFETY: `values` holds n scalars, or the values every position of `index` (n of them)
        // names (`MsmScalars` checked both); one thread per scalar in blocks of SPLIT_BLOCK (a
        // multiple of 32, as the ballots need), threads past n read nothing; `ones` holds
        // ⌈n/32⌉ words, written by the first lane of each warp with a scalar below n; `counts`
        // holds one slot per block and the scan's extra one.
        unsafe {
            let mut launch = stream.launch_builder(&classify);
            scalar_args(&mut launch, &values, index.as_ref(), &n32)
                .arg(&mut ones)
                .arg(&mut counts)
                .launch(config)
                .call("msm_split_classify")?;
        }
        exclusive_scan(gpu, &mut counts)?;
        let offsets = stream
            .clone_dtoh(&counts)
            .call("cuMemcpyDtoH (MSM split offsets)")?;
        let others_len = offsets[blocks] as usize;
        if others_len * SPLIT_SHARE > n {
            return Ok(None);
        }
        gpu.ensure_fits("MSM split positions", 4 * others_len)?;
        let mut others = gpu.zeros::<u32>(others_len.max(1), "cuMemAlloc (MSM split positions)")?;
        let place = gpu.kernel("msm_split_others")?;
        // SAFETY: as above, with the same blocks (SPLIT_BLOCK / 32 ≤ 32 warps); `counts` now
        // holds each block's offset among the others, whose total is `others_len`, the length
        // of `others`.
        unsafe {
            let mut launch = stream.launch_builder(&place);
            scalar_args(&mut launch, &values, index.as_ref(), &n32)
                .arg(&counts)
                .arg(&mut others)
                .launch(config)
                .call("msm_split_others")?;
        }
        Ok(Some(Split {
            ones,
            others,
            offsets,
            n,
        }))
    }

    /// Scalars neither 0 nor 1.
    fn others(&self) -> usize {
        self.offsets[self.offsets.len() - 1] as usize
    }

    /// [first, end) of the others among the scalars [start, end); `start` a multiple of
    /// [`SPLIT_BLOCK`], `end` too or n.
    fn others_within(&self, start: usize, end: usize) -> (usize, usize) {
        let at = |i: usize| match i >= self.n {
            true => self.others(),
            false => self.offsets[i / SPLIT_BLOCK] as usize,
        };
        (at(start), at(end))
    }

    /// Adds Σ points[i − start] over the ones i in [start, end) to `into`, `points` holding those
    /// points (device words of A); `start` a multiple of [`SPLIT_BLOCK`].
    fn sum_ones<A: MsmAffine>(
        &self,
        gpu: &Lane,
        points: &CudaView<'_, u32>,
        (start, end): (usize, usize),
        into: &mut OnesSum<A>,
    ) -> Result<(), GpuError> {
        check_range(self, points, (start, end), A::WORDS)?;
        into.add(gpu, points, &self.ones.slice(start / 32..), end - start)
    }

    /// Copies the points of the others in [start, end) from `points` (those of [start, end)) to
    /// their places in `gathered` (one per other, in order).
    fn gather_others<A: MsmAffine>(
        &self,
        gpu: &Lane,
        points: &CudaView<'_, u32>,
        (start, end): (usize, usize),
        gathered: &mut CudaSlice<u32>,
    ) -> Result<(), GpuError> {
        check_range(self, points, (start, end), A::WORDS)?;
        let (first, last) = self.others_within(start, end);
        if gathered.len() < self.others() * A::WORDS {
            return Err(GpuError::InvalidInput {
                what: "gathered points",
                reason: format!("{} words for {} points", gathered.len(), self.others()),
            });
        }
        gather_words(
            gpu,
            points,
            &self.others.slice(first..last),
            start,
            A::WORDS,
            &mut gathered.slice_mut(first * A::WORDS..last * A::WORDS),
        )
    }

    /// The scalars of the others, in order, gathered from `scalars` (the ones split): through
    /// their positions when they have them.
    fn gather_scalars(
        &self,
        gpu: &Lane,
        scalars: &MsmScalars<'_>,
    ) -> Result<CudaSlice<u32>, GpuError> {
        let count = self.others();
        gpu.ensure_fits("gathered scalars", 4 * count * (SCALAR_WORDS + 1))?;
        let alloc = |words: usize| gpu.zeros::<u32>(words.max(1), "cuMemAlloc (gathered scalars)");
        let mut out = alloc(count * SCALAR_WORDS)?;
        // With positions, the others' entries among the values: positions[others[k]].
        let positions = match scalars.index() {
            Some(index) => {
                let mut positions = alloc(count)?;
                gather_words(
                    gpu,
                    &index,
                    &self.others.slice(..count),
                    0,
                    1,
                    &mut positions.slice_mut(..count),
                )?;
                Some(positions)
            }
            None => None,
        };
        let others = match &positions {
            Some(positions) => positions.slice(..count),
            None => self.others.slice(..count),
        };
        gather_words(
            gpu,
            &scalars.values(),
            &others,
            0,
            SCALAR_WORDS,
            &mut out.slice_mut(..count * SCALAR_WORDS),
        )?;
        Ok(out)
    }
}

/// A sum of points on the device that bitmaps' ones add to, read once at the end: the ranges of a
/// streamed MSM add theirs without the host waiting for each.
pub(super) struct OnesSum<A: MsmAffine> {
    /// One XYZZ point (all zero words: the identity).
    sum: CudaSlice<u32>,
    group: std::marker::PhantomData<A>,
}

impl<A: MsmAffine> OnesSum<A> {
    pub(super) fn new(gpu: &Lane) -> Result<Self, GpuError> {
        let words = <A::Projective as XyzzPoint>::XYZZ_WORDS;
        Ok(OnesSum {
            sum: gpu.zeros::<u32>(words, "cuMemAlloc (sum of the ones)")?,
            group: std::marker::PhantomData,
        })
    }

    /// Adds Σ points[i] over the set bits i < len of `bits` (u32 words, bit i % 32 of word
    /// i / 32), both on the device: each warp of `batch_add` sums the points of 32 ×
    /// [`WORDS_PER_THREAD`] words into a sum per thread, then window sums add those up in
    /// segments of at most [`PARTIALS_PER_SEGMENT`], and the segments' sums to the total.
    pub(super) fn add(
        &mut self,
        gpu: &Lane,
        points: &CudaView<'_, u32>,
        bits: &CudaView<'_, u32>,
        len: usize,
    ) -> Result<(), GpuError> {
        let words32 = len.div_ceil(32);
        if points.len() < len * A::WORDS || bits.len() < words32 || len >= 1 << 31 {
            return Err(GpuError::InvalidInput {
                what: "sum of the ones",
                reason: format!(
                    "{len} bits over {} point words and {} bitmap words (limit 2^31)",
                    points.len(),
                    bits.len()
                ),
            });
        }
        if len == 0 {
            return Ok(());
        }
        // Whole warps: the kernel's shuffles take every lane.
        let threads = 32 * words32.div_ceil(32 * WORDS_PER_THREAD);
        let segments = threads.div_ceil(PARTIALS_PER_SEGMENT);
        let per_segment = threads.div_ceil(segments);
        let xyzz_words = <A::Projective as XyzzPoint>::XYZZ_WORDS;
        // Zeroed: the slots past the threads are the identity.
        let slots = segments * per_segment;
        gpu.ensure_fits("sum of the ones", 4 * (slots + segments) * xyzz_words)?;
        let mut partial = gpu.zeros::<u32>(slots * xyzz_words, "cuMemAlloc (sum of the ones)")?;
        let batch_add = gpu.kernel(A::KERNELS.batch_add)?;
        let (len32, per32, threads32) = (len as u32, WORDS_PER_THREAD as u32, threads as u32);
        // SAFETY: `points` holds ≥ len points and `bits` ⌈len/32⌉ words (checked), the kernel
        // masking the bits past len and reading no word past them; `partial` holds one point per
        // thread (and more), the kernel writing none past `threads`, whole warps; blocks of the
        // kernel's BATCH_ADD_THREADS, for its shared queues.
        unsafe {
            gpu.stream()
                .launch_builder(&batch_add)
                .arg(points)
                .arg(bits)
                .arg(&len32)
                .arg(&per32)
                .arg(&threads32)
                .arg(&mut partial)
                .launch(grid(threads, BATCH_ADD_THREADS))
                .call(A::KERNELS.batch_add)?;
        }
        // Each segment's sum, then theirs added to the total (one segment: a one-point sum).
        let level = (segments as u32, per_segment as u32);
        let mut sums = gpu.zeros::<u32>(segments * xyzz_words, "cuMemAlloc (sum of the ones)")?;
        window_sums::<A>(gpu, &partial, level, WindowSums::Set, &mut sums)?;
        window_sums::<A>(gpu, &sums, (1, level.0), WindowSums::AddTo, &mut self.sum)
    }

    /// The sum, once the device has added everything queued.
    pub(super) fn read(&self, gpu: &Lane) -> Result<A::Projective, GpuError> {
        let words = gpu
            .stream()
            .clone_dtoh(&self.sum)
            .call("cuMemcpyDtoH (sum of the ones)")?;
        A::Projective::from_xyzz(&words)
    }
}

/// The arguments both split kernels begin with: the values, their positions (a null pointer
/// without), the scalar count.
fn scalar_args<'a, 'l>(
    launch: &'l mut LaunchArgs<'a>,
    values: &'a CudaView<'_, u32>,
    index: Option<&'a CudaView<'_, u32>>,
    n: &'a u32,
) -> &'l mut LaunchArgs<'a> {
    launch.arg(values);
    match index {
        Some(index) => launch.arg(index),
        None => launch.arg(&crate::NULL),
    };
    launch.arg(n)
}

/// Refuses a range outside the split's scalars, not starting a block, or past `points`.
fn check_range(
    split: &Split,
    points: &CudaView<'_, u32>,
    (start, end): (usize, usize),
    words: usize,
) -> Result<(), GpuError> {
    let aligned = start % SPLIT_BLOCK == 0 && (end % SPLIT_BLOCK == 0 || end == split.n);
    if start > end || end > split.n || !aligned || points.len() < (end - start) * words {
        return Err(GpuError::InvalidInput {
            what: "MSM split range",
            reason: format!(
                "{start}..{end} of {} scalars over {} point words",
                split.n,
                points.len()
            ),
        });
    }
    Ok(())
}

/// out[k] = src[index[k] − base] for each k, items of `words` words; every index − base is
/// below the items `src` holds (the callers' ranges).
pub(super) fn gather_words(
    gpu: &Lane,
    src: &CudaView<'_, u32>,
    index: &CudaView<'_, u32>,
    base: usize,
    words: usize,
    out: &mut cudarc::driver::CudaViewMut<'_, u32>,
) -> Result<(), GpuError> {
    let count = index.len();
    if count == 0 {
        return Ok(());
    }
    let kernel = gpu.kernel("gather_words")?;
    let (count32, base32, words32) = (count as u32, base as u32, words as u32);
    // Enough blocks to fill the device; the kernel strides over the rest.
    let threads = (count * words).min(1 << 22);
    // SAFETY: `index` holds `count` positions, each in [base, base + src items) by the callers'
    // ranges (the others of the range src holds); `out` holds count·words words (the callers'
    // slices); the kernel's threads stride over count·words words.
    unsafe {
        gpu.stream()
            .launch_builder(&kernel)
            .arg(src)
            .arg(index)
            .arg(&count32)
            .arg(&base32)
            .arg(&words32)
            .arg(out)
            .launch(grid(threads, 256))
            .call("gather_words")?;
    }
    Ok(())
}
