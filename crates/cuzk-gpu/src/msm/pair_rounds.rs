//! Batch-affine pair rounds of the bucket accumulation (`cuda/msm/affine_rounds.cuh`): while the
//! buckets hold many points, each round halves them with affine additions that share their
//! inversions; the chunked XYZZ accumulation then sums the few points left per bucket.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, CudaView, LaunchArgs, PushKernelArg};

use super::{chunk_counts, exclusive_scan, grid, MsmAffine, MsmParams};
use crate::error::DriverContext;
use crate::{GpuError, Lane, NULL};

/// Output slots per prefix/sums thread, and per warp of them (as in the kernels).
const PAIRS_PER_THREAD: usize = 16;
const WARP_SLOTS: usize = 32 * PAIRS_PER_THREAD;
/// Rounds with fewer pairs are left to the XYZZ accumulation: a round's inversion pass is a chain
/// of ~190 dependent products and an inversion per thread, which a smaller round cannot hide
/// behind its additions.
const MIN_ROUND_PAIRS: usize = 1 << 20;
/// Device bytes one group of windows' rounds may use; the windows run in as many groups as that
/// takes, two at a time on two lanes (at 2^24 G1 points: three groups of five windows). Half as
/// much (2^24: eight groups of two) is no better: faster at 2^22, slower at 2^24
/// (measured: docs/performance.md, "Why the code is as it is").
const GROUP_BYTES: usize = 8 << 30;
/// Groups in flight at once (the handle's stream and its side lane), each with its own buffers.
const LANES: usize = 2;

/// The pair rounds of one Pippenger pass: `rounds` rounds over each group of `group_windows`
/// bucket sets — a window's own, or one that several windows share (no rounds: the XYZZ
/// accumulation reads the sorted entries directly) — with up to `lanes` groups in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PairPlan {
    pub rounds: u32,
    pub group_windows: u32,
    pub lanes: u32,
}

/// At most this many points after a round over `inputs` points in `buckets` buckets: a bucket of
/// m points leaves ⌈m/2⌉.
fn halved(inputs: usize, buckets: usize) -> usize {
    (inputs + buckets) / 2
}

impl PairPlan {
    /// The plan where memory is plentiful: groups as large as [`GROUP_BYTES`] allows, [`LANES`]
    /// of them in flight.
    pub fn new<A: MsmAffine>(p: &MsmParams) -> Self {
        let group_windows = (1..=p.sets())
            .rev()
            .find(|&g| Self::group_bytes_of::<A>(p, g) <= GROUP_BYTES)
            .unwrap_or(1);
        Self::of_groups(p, group_windows, LANES as u32)
    }

    /// The plans with rounds a pass may take, from the most memory to the least: [`Self::new`]'s,
    /// then one group in flight at a time, groups shrinking to one window. A second lane gains
    /// 3–5% and a group twice as large ~1%, while a pass twice as large halves its fixed costs
    /// per point: short of memory, a pass keeps its points and gives up these first.
    pub fn choices<A: MsmAffine>(p: &MsmParams) -> impl Iterator<Item = Self> + '_ {
        let full = Self::new::<A>(p);
        let one_lane = (1..=full.group_windows)
            .rev()
            .map(move |g| Self::of_groups(p, g, 1))
            .filter(move |plan| full.rounds > 0 && plan.rounds > 0);
        std::iter::once(full).chain(one_lane)
    }

    /// No rounds: the XYZZ accumulation reads the sorted entries, no buffers of its own. A pass
    /// with rounds is faster than one without at the same size, so halving a pass to keep them
    /// costs little (measured: docs/performance.md, "Why the code is as it is").
    pub const NONE: PairPlan = PairPlan {
        rounds: 0,
        group_windows: 1,
        lanes: 1,
    };

    /// Rounds while an average bucket still holds two points or more and a round over a group of
    /// `group_windows` still has [`MIN_ROUND_PAIRS`] pairs.
    fn of_groups(p: &MsmParams, group_windows: u32, lanes: u32) -> Self {
        let (n, buckets) = (p.entries_per_set(), p.buckets as usize);
        let inputs = n * group_windows as usize;
        let mut rounds = 0;
        while (n >> rounds) >= 2 * buckets && (inputs >> (rounds + 1)) >= MIN_ROUND_PAIRS {
            rounds += 1;
        }
        PairPlan {
            rounds,
            group_windows,
            lanes,
        }
    }

    fn group_bytes_of<A: MsmAffine>(p: &MsmParams, group_windows: u32) -> usize {
        let g = group_windows as usize;
        group_bytes::<A>(p.entries_per_set() * g, p.buckets as usize * g)
    }

    /// Device bytes the rounds allocate: the buffers of the groups in flight and the points they
    /// leave.
    pub fn bytes<A: MsmAffine>(&self, p: &MsmParams) -> usize {
        if self.rounds == 0 {
            return 0;
        }
        let in_flight = self.groups(p).count().min(self.lanes as usize);
        in_flight * Self::group_bytes_of::<A>(p, self.group_windows)
            + 4 * (A::WORDS * self.left_bound(p) + p.total_buckets() + 1)
    }

    /// The bucket sets (windows) [start, end) of each group.
    fn groups(&self, p: &MsmParams) -> impl Iterator<Item = (usize, usize)> {
        let (windows, g) = (p.sets() as usize, self.group_windows as usize);
        (0..windows)
            .step_by(g)
            .map(move |start| (start, (start + g).min(windows)))
    }

    /// At most this many points left by the rounds over all groups.
    pub fn left_bound(&self, p: &MsmParams) -> usize {
        self.groups(p)
            .map(|(start, end)| {
                let buckets = (end - start) * p.buckets as usize;
                (0..self.rounds).fold(p.entries_per_set() * (end - start), |points, _| {
                    halved(points, buckets)
                })
            })
            .sum()
    }
}

/// Device bytes of one group's rounds over `inputs` points in `buckets` buckets: the first two
/// rounds' outputs (later rounds reuse them in turn), the first round's prefix products and
/// thread totals (the largest), and two offset arrays.
fn group_bytes<A: MsmAffine>(inputs: usize, buckets: usize) -> usize {
    let field_words = A::WORDS / 2;
    let first = halved(inputs, buckets);
    let second = halved(first, buckets);
    4 * (A::WORDS * (first + second)
        + field_words * (prefix_len(first) + round_threads(first))
        + 2 * (buckets + 1))
}

/// Prefix/sums threads with a slot among `outputs`: a warp's 32 threads take WARP_SLOTS
/// consecutive slots interleaved (thread t: slots ⌊t/32⌋·WARP_SLOTS + t mod 32 + 32i), so the
/// last warp has a thread for each of its slots up to 32 (as `round_threads` in the kernels).
fn round_threads(outputs: usize) -> usize {
    outputs / WARP_SLOTS * 32 + (outputs % WARP_SLOTS).min(32)
}

/// Prefix products a round of `outputs` slots stores: PAIRS_PER_THREAD per thread, at
/// prefix[i·stride + t] with stride = the thread count, so the last index is below
/// PAIRS_PER_THREAD·stride.
fn prefix_len(outputs: usize) -> usize {
    round_threads(outputs) * PAIRS_PER_THREAD
}

/// The arguments the prefix and sums kernels of a round begin with: where the points are (the
/// sorted entries of the bases in round 0, a null pointer after it), the round's input and output
/// offsets, the bucket count and the prefix stride.
struct SlotArgs<'a> {
    source: &'a CudaView<'a, u32>,
    entries: Option<&'a CudaSlice<u32>>,
    from: &'a CudaView<'a, u32>,
    to: &'a CudaSlice<u32>,
    buckets: &'a u32,
    stride: &'a u32,
}

impl<'a> SlotArgs<'a> {
    fn launch(&self, stream: &'a Arc<CudaStream>, kernel: &'a CudaFunction) -> LaunchArgs<'a> {
        let mut launch = stream.launch_builder(kernel);
        launch.arg(self.source);
        match self.entries {
            Some(entries) => launch.arg(entries),
            None => launch.arg(&NULL),
        };
        launch
            .arg(self.from)
            .arg(self.to)
            .arg(self.buckets)
            .arg(self.stride);
        launch
    }
}

/// One lane's buffers for its groups' rounds: two round outputs used in turn, the prefix products
/// and the thread totals.
struct GroupBuffers {
    points: [CudaSlice<u32>; 2],
    prefix: CudaSlice<u32>,
    totals: CudaSlice<u32>,
}

impl GroupBuffers {
    /// Buffers for groups of `group_buckets` buckets over `inputs` points at most, allocated on
    /// `lane`'s stream (the one that uses them).
    fn new<A: MsmAffine>(
        lane: &Lane,
        inputs: usize,
        group_buckets: usize,
    ) -> Result<Self, GpuError> {
        let field_words = A::WORDS / 2;
        let first = halved(inputs, group_buckets);
        let alloc = |len| uninitialised(lane, len);
        Ok(GroupBuffers {
            points: [
                alloc(first * A::WORDS)?,
                alloc(halved(first, group_buckets) * A::WORDS)?,
            ],
            prefix: alloc(prefix_len(first) * field_words)?,
            totals: alloc(round_threads(first) * field_words)?,
        })
    }
}

/// A buffer of `len` words on `lane`'s stream, not initialised.
fn uninitialised(lane: &Lane, len: usize) -> Result<CudaSlice<u32>, GpuError> {
    // SAFETY: every element a kernel of the rounds reads was written first by an earlier kernel on
    // the same lane: round outputs and left points below their round's scanned total, offsets by
    // the round's count and scan, prefix products and totals by the prefix kernel of the same
    // round and thread.
    unsafe { lane.uninitialised::<u32>(len, "cuMemAlloc (MSM pair rounds)") }
}

/// The kernels of the rounds.
struct RoundKernels {
    prefix: CudaFunction,
    invert: CudaFunction,
    sums: CudaFunction,
    shift: CudaFunction,
}

/// Runs the plan's rounds over every group of windows, starting from the sorted `entries` of
/// `bases` with their per-bucket `offsets`. Returns the points left, packed in bucket order over
/// all buckets, and their per-bucket offsets (W·K + 1).
///
/// Groups alternate between `gpu`'s stream and its side lane, each with its own buffers, so that
/// one group's memory-bound prefix passes and latency-bound inversions can overlap the other's
/// sums (measured: docs/performance.md, "Why the code is as it is"). Only the last round of
/// a group waits for the group before it (its points go after that group's in `left`).
pub(super) fn run<A: MsmAffine>(
    gpu: &Lane,
    plan: &PairPlan,
    p: &MsmParams,
    bases: &CudaView<'_, u32>,
    entries: &CudaSlice<u32>,
    offsets: &CudaSlice<u32>,
) -> Result<(CudaSlice<u32>, CudaSlice<u32>), GpuError> {
    let g = plan.group_windows as usize;
    let group_buckets = g * p.buckets as usize;
    let inputs = p.entries_per_set() * g;
    let mut left = uninitialised(gpu, plan.left_bound(p) * A::WORDS)?;
    let mut left_offsets =
        gpu.zeros::<u32>(p.total_buckets() + 1, "cuMemAlloc (MSM pair rounds)")?;
    let kernels = RoundKernels {
        prefix: gpu.kernel(A::KERNELS.pair_prefix)?,
        invert: gpu.kernel(A::KERNELS.pair_invert)?,
        sums: gpu.kernel(A::KERNELS.pair_sums)?,
        shift: gpu.kernel("msm_offsets_shift")?,
    };
    let groups: Vec<_> = plan.groups(p).collect();
    let mut lanes = vec![gpu];
    if groups.len() > 1 && plan.lanes > 1 {
        let side = gpu.side_lane()?;
        side.wait_for(gpu)?;
        lanes.push(side);
    }
    let mut buffers: Vec<Option<GroupBuffers>> = lanes.iter().map(|_| None).collect();
    let mut previous: Option<&Lane> = None;
    for (k, &(start, end)) in groups.iter().enumerate() {
        let lane = lanes[k % lanes.len()];
        let group = match &mut buffers[k % lanes.len()] {
            Some(group) => group,
            empty => empty.insert(GroupBuffers::new::<A>(lane, inputs, group_buckets)?),
        };
        run_group::<A>(
            (lane, previous),
            &kernels,
            plan,
            p,
            (start, end),
            (bases, entries, offsets),
            group,
            (&mut left, &mut left_offsets),
        )?;
        previous = Some(lane);
    }
    for side in &lanes[1..] {
        gpu.wait_for(side)?;
    }
    Ok((left, left_offsets))
}

/// The plan's rounds over the windows [start, end) on `lane`, the last round's points written to
/// `left` after the previous groups' and their offsets to `left_offsets`: that round waits for
/// the lane of the group before (`previous`), whose last kernel wrote where this group's go.
#[allow(clippy::too_many_arguments)]
fn run_group<A: MsmAffine>(
    (lane, previous): (&Lane, Option<&Lane>),
    kernels: &RoundKernels,
    plan: &PairPlan,
    p: &MsmParams,
    (start, end): (usize, usize),
    (bases, entries, offsets): (&CudaView<'_, u32>, &CudaSlice<u32>, &CudaSlice<u32>),
    group: &mut GroupBuffers,
    (left, left_offsets): (&mut CudaSlice<u32>, &mut CudaSlice<u32>),
) -> Result<(), GpuError> {
    let stream = lane.stream();
    let (b0, b1) = (start * p.buckets as usize, end * p.buckets as usize);
    let buckets = b1 - b0;
    let buckets32 = buckets as u32;
    let mut inputs = p.entries_per_set() * (end - start);
    let mut round_offsets = [
        uninitialised(lane, buckets + 1)?,
        uninitialised(lane, buckets + 1)?,
    ];
    for round in 0..plan.rounds as usize {
        let last = round + 1 == plan.rounds as usize;
        let outputs = halved(inputs, buckets);
        let threads = round_threads(outputs);
        let stride = threads as u32;
        let [even, odd] = &mut round_offsets;
        let (from_offsets, to_offsets) = if round % 2 == 0 {
            (odd, even)
        } else {
            (even, odd)
        };
        let [even, odd] = &mut group.points;
        let (from_points, to_points) = if round % 2 == 0 {
            (odd, even)
        } else {
            (even, odd)
        };
        let (source, source_offsets) = if round == 0 {
            (bases.slice(..), offsets.slice(b0..=b1))
        } else {
            (from_points.slice(..), from_offsets.slice(..))
        };
        chunk_counts(lane, &source_offsets, buckets32, 2, to_offsets)?;
        exclusive_scan(lane, to_offsets)?;
        let left_base = left_offsets.slice(b0..);
        let slot_args = SlotArgs {
            source: &source,
            entries: (round == 0).then_some(entries),
            from: &source_offsets,
            to: &*to_offsets,
            buckets: &buckets32,
            stride: &stride,
        };
        // SAFETY: the source holds the points the offsets name (bases by sorted entries in
        // round 0, the previous round's outputs after it); the prefix and sums kernels run one
        // thread per PAIRS_PER_THREAD output slots below the scanned total ≤ `outputs`, and
        // touch prefix[i·stride + t] (i < PAIRS_PER_THREAD, t < stride = round_threads(outputs):
        // below prefix_len(first)) and totals[t]; the inversion kernel (as many threads, each
        // taking a share of the totals) reads and writes the totals of those threads. Outputs
        // go to `to_points` (≥ `outputs` points), or in the last round to `left` after the
        // previous groups' points (≤ the plan's left bound).
        unsafe {
            slot_args
                .launch(stream, &kernels.prefix)
                .arg(&mut group.prefix)
                .arg(&mut group.totals)
                .launch(grid(threads, 128))
                .call(A::KERNELS.pair_prefix)?;
            stream
                .launch_builder(&kernels.invert)
                .arg(&mut group.totals)
                .arg(&*to_offsets)
                .arg(&buckets32)
                .launch(grid(threads, 64))
                .call(A::KERNELS.pair_invert)?;
        }
        if let (true, Some(previous)) = (last, previous) {
            lane.wait_for(previous)?;
        }
        // SAFETY: as above.
        unsafe {
            let mut launch = slot_args.launch(stream, &kernels.sums);
            launch.arg(&group.prefix).arg(&group.totals);
            if last {
                launch.arg(&left_base).arg(&mut *left);
            } else {
                launch.arg(&NULL).arg(&mut *to_points);
            }
            launch
                .launch(grid(threads, 128))
                .call(A::KERNELS.pair_sums)?;
        }
        inputs = outputs;
    }
    // The last round's offsets, moved after the previous groups' points.
    let last_offsets = &round_offsets[(plan.rounds as usize - 1) % 2];
    // SAFETY: `last_offsets` holds buckets + 1 values and `left_offsets` W·K + 1 ≥ b0 +
    // buckets + 1; threads i ≤ buckets only.
    unsafe {
        stream
            .launch_builder(&kernels.shift)
            .arg(last_offsets)
            .arg(&buckets32)
            .arg(&mut left_offsets.slice_mut(b0..))
            .launch(grid(buckets + 1, 256))
            .call("msm_offsets_shift")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use blstrs::{G1Affine, G2Affine};
    use rand_chacha::rand_core::{RngCore, SeedableRng};

    use super::*;

    /// The rounds' index arithmetic on the host, for bucket sizes the device would see: every
    /// round's slots stay within its output bound, each slot has one thread, every prefix index
    /// is within the prefix buffer and every thread total within the totals buffer (what the
    /// kernels index by).
    #[test]
    fn round_indices_stay_within_their_buffers() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for buckets in [1usize, 3, 16, 1000] {
            for shape in ["uniform", "one large", "all odd"] {
                let inputs_bound = 40 * buckets + 17;
                let mut counts: Vec<usize> = (0..buckets)
                    .map(|b| match shape {
                        "uniform" => (rng.next_u32() % 41) as usize,
                        "one large" => usize::from(b == 0) * inputs_bound,
                        _ => 2 * (rng.next_u32() % 20) as usize + 1,
                    })
                    .collect();
                let total: usize = counts.iter().sum();
                assert!(total <= inputs_bound);
                let first_bound = halved(inputs_bound, buckets);
                let mut bound = inputs_bound;
                for _ in 0..6 {
                    counts = counts.iter().map(|m| m.div_ceil(2)).collect();
                    let outputs: usize = counts.iter().sum();
                    bound = halved(bound, buckets);
                    assert!(
                        outputs <= bound && bound <= first_bound,
                        "{shape}: {outputs} > {bound}"
                    );
                    let stride = round_threads(bound);
                    let mut covered = vec![false; outputs];
                    for t in 0..round_threads(outputs) {
                        let first = t / 32 * WARP_SLOTS + t % 32;
                        assert!(first < outputs, "{shape}: thread {t} has no slot");
                        for i in (0..PAIRS_PER_THREAD).take_while(|i| first + 32 * i < outputs) {
                            assert!(!std::mem::replace(&mut covered[first + 32 * i], true));
                            assert!(i * stride + t < prefix_len(first_bound), "{shape}: {t}");
                        }
                        assert!(t < round_threads(first_bound));
                    }
                    assert!(covered.iter().all(|&c| c), "{shape}: a slot with no thread");
                }
            }
        }
    }

    #[test]
    fn plans_stay_within_their_bounds() {
        for log in 10..=26 {
            let p = MsmParams::new(1 << log);
            for (plan, name) in [
                (PairPlan::new::<G1Affine>(&p), "G1"),
                (PairPlan::new::<G2Affine>(&p), "G2"),
            ] {
                assert!(plan.group_windows >= 1 && plan.group_windows <= p.windows);
                let covered: usize = plan.groups(&p).map(|(start, end)| end - start).sum();
                assert_eq!(covered, p.windows as usize, "{name} 2^{log}");
                // Every round halves buckets that average two points or more.
                assert!(p.n >> plan.rounds.saturating_sub(1) >= 2 * p.buckets || plan.rounds == 0);
                if plan.rounds > 0 {
                    assert!(plan.left_bound(&p) < p.n as usize * p.windows as usize);
                }
            }
        }
        // Small MSMs have no rounds; large ones several.
        assert_eq!(
            PairPlan::new::<G1Affine>(&MsmParams::new(1 << 14)).rounds,
            0
        );
        assert!(PairPlan::new::<G1Affine>(&MsmParams::new(1 << 20)).rounds >= 3);
        assert!(PairPlan::new::<G1Affine>(&MsmParams::new(1 << 24)).rounds >= 5);
    }

    #[test]
    fn groups_fit_their_byte_budget() {
        for log in [20, 22, 24, 26] {
            let p = MsmParams::new(1 << log);
            let plan = PairPlan::new::<G1Affine>(&p);
            let g = plan.group_windows as usize;
            let bytes = group_bytes::<G1Affine>(p.n as usize * g, p.buckets as usize * g);
            assert!(bytes <= GROUP_BYTES || g == 1, "2^{log}: {bytes} bytes");
            // Two groups in flight when there are two or more, each with its own buffers.
            let in_flight = plan.groups(&p).count().min(LANES);
            assert!(plan.bytes::<G1Affine>(&p) >= in_flight * bytes, "2^{log}");
        }
    }

    /// The choices after the first keep one group in flight, in groups as large as the first's
    /// down to the smallest that still has rounds, and take less memory than the first.
    #[test]
    fn choices_take_less_memory_than_the_full_plan() {
        for log in [20, 22, 24, 26] {
            let p = MsmParams::new(1 << log);
            let choices: Vec<_> = PairPlan::choices::<G1Affine>(&p).collect();
            let full = PairPlan::new::<G1Affine>(&p);
            assert_eq!(choices[0], full);
            assert!(choices.len() > 1, "2^{log}");
            for choice in &choices[1..] {
                assert_eq!(choice.lanes, 1, "2^{log}");
                assert!(choice.rounds > 0, "2^{log}");
                assert!(choice.bytes::<G1Affine>(&p) <= full.bytes::<G1Affine>(&p));
            }
        }
        // Without rounds at full size, there is nothing to give up.
        let small = MsmParams::new(1 << 14);
        assert_eq!(PairPlan::choices::<G1Affine>(&small).count(), 1);
        assert_eq!(
            PairPlan::NONE.bytes::<G1Affine>(&MsmParams::new(1 << 24)),
            0
        );
    }
}
