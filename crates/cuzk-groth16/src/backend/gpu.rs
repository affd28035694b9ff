//! The GPU backend: H and every MSM of `prove_start` (B in G2 included) on one CUDA device.
//!
//! Per proof: the witness goes up first and the L, A and B queries' scalars are gathered from it on
//! the device by index lists made on the host; their four MSMs start at once, each on a stream of
//! its own, while a, b and c are uploaded and become H's coefficients (three inverse NTTs, three
//! coset NTTs, (a∘b − c)/Z on the coset, one coset inverse NTT, in orders that chain with no
//! permutation pass); then H's MSM. That chain runs on a stream the device schedules first, the
//! other MSMs filling the SMs it leaves; the uploads and NTTs thus hide behind the other MSMs
//! instead of preceding them. a, b and c are copied into page-locked memory before the device is
//! taken, with the witness: on a busy host that copy (400 MB at 2^22, memory-bound) took 30–40 ms
//! inside the device region, while the worker that is not on the device has the time.
//!
//! Scalars equal to 0 add nothing (their digits are all zero, so they reach no bucket) and scalars
//! equal to 1 cost one addition each in a single bucket summed in parallel chunks: the 0/1 split of
//! hash-heavy circuits happens inside the MSM's digit pass, on the device.
//!
//! The proving key's points go to the device once per parameter set (at its first proof, or ahead
//! of it by [`ProverBackend::preload`]) and stay while they fit beside a proof's working memory —
//! with their window multiples (`DeviceBases::upload_with_window_multiples`: fewer additions per
//! point) when those fit too; otherwise they are kept in page-locked host memory and streamed
//! through the MSMs in double-buffered chunks. The choice follows the memory the device reports
//! once the NTT tables of the proof's size are on it (up to as much as the data: 4 GiB at 2^27),
//! and is returned with every proof's stages (`srs_resident`, `srs_window_bits`).
//!
//! Several sets stay on the device side by side. A set that does not fit beside them takes the
//! place of the least recently used that no proof is using (never one in use); if even that is not
//! enough it is streamed and the others stay. A streamed set is kept too (pinning it again costs
//! as much as an upload), but only the latest: each holds its whole key in page-locked host memory.
//! The query positions and matrices of the last [`CACHED_CIRCUITS`] circuits stay too, so that a
//! PoSt proven between PoRep partitions uploads neither its own nor, after it, the PoRep's again.
//!
//! A proof whose parts are all on the device already may run beside the region in progress when
//! its caller allows it ([`DeviceLock::acquire_beside`]: a WinningPoSt on a device busy with
//! PoRep), on streams of its own that the device schedules first, if its buffers fit in the
//! memory free then; anything cached is complete before it enters a cache, so that any stream may
//! read it. If it fails there (the region may have taken the memory meanwhile), it takes its turn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use cuzk_gpu::fixed_base::{fixed_base_multiply_on_device, FixedBaseAffine};
use cuzk_gpu::msm::{
    msm_device, msm_streamed, multiple_window_bits, windows_of_width, working_memory, DeviceBases,
    MsmAffine,
};
use cuzk_gpu::ntt::{ab_minus_c, ntt, NttOrder, NttTables, Transform};
use cuzk_gpu::sparse::{DeviceSparse, SparseRows};
use cuzk_gpu::{DeviceIndex, DeviceScalars, Gpu, GpuError, Pinned, Timing};
use cuzk_math::{Bitmap, FixedBaseTable, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_synth::{CompiledR1cs, ProvingAssignment};
use ff::{Field, PrimeField};
use group::prime::PrimeCurve;
use rayon::prelude::*;

use crate::keys::QueryLengths;
use crate::prover::{checked_domain, DeviceLock, DeviceStatus, StageMetric, Started, Unshared};
use crate::{Parameters, ProveError, ProverBackend, QuerySums};

/// Proves on one device.
#[derive(Debug)]
pub struct GpuBackend {
    gpu: Arc<Gpu>,
    name: String,
    /// The proving keys placed for proving, several at a time.
    srs: Mutex<SrsCache>,
    /// Held through a proof's device region and a preload's placement: the caller's [`DeviceLock`]
    /// orders proofs, this also keeps a preload from measuring or taking memory that a proof is
    /// about to use (and two placements from counting the same free memory).
    region: Mutex<()>,
    tables: Mutex<HashMap<u32, Arc<NttTables>>>,
    /// The A and B queries' variable positions of the latest circuits proven, on the device, most
    /// recently used first (at most [`CACHED_CIRCUITS`]).
    index: Mutex<Vec<Arc<QueryIndex>>>,
    /// The matrices of the latest compiled R1CSs whose products proofs left to the device, there
    /// (the weak reference names the host copy without keeping it alive), most recently used
    /// first (at most [`CACHED_CIRCUITS`]).
    sparse: Mutex<Vec<(Weak<CompiledR1cs>, Arc<DeviceSparse>)>>,
    /// Page-locked staging buffers, one per proof in preparation, reused.
    staging: Mutex<Vec<Pinned<Scalar>>>,
    /// Threads that copy witnesses into staging buffers, apart from the rayon global pool: there
    /// the copy queued behind syntheses' sections (2.6–3.1 s for a 32 GiB partition's 4.2 GB,
    /// H200 host) and, with synthesis niced, would run at its priority. `None` if none could
    /// be started: the global pool copies then.
    copies: Option<rayon::ThreadPool>,
    /// Streams of this device for MSMs side by side: H's (scheduled first) and the other four.
    lanes: Mutex<Option<[Arc<Gpu>; 5]>>,
    /// The streams of a proof run beside the region in progress (see
    /// [`DeviceLock::acquire_beside`]), all scheduled first; held through such a proof, so that
    /// there is one at a time.
    beside: Mutex<Option<Streams>>,
    /// Bytes the device's memory pool was made to hold for MSMs side by side (see
    /// [`Gpu::reserve_pool`]).
    pool_reserved: AtomicUsize,
    /// Parameter sets whose longest query has this many points or more go to the device with their
    /// window multiples when those fit.
    multiples_from: usize,
}

/// The default of [`GpuBackend::window_multiples_from`]: at 2^20 G1 points 19-bit multiples took
/// 9.2 ms against 10.2 (H200); below, the shared 2^18 buckets weigh more against fewer entries.
const MULTIPLES_FROM: usize = 1 << 20;

/// Circuits whose query positions and matrices stay on the device: a PoRep's and the PoSts'
/// proven beside it, so that neither uploads its own again after the other's proof.
const CACHED_CIRCUITS: usize = 3;

/// Threads of a backend's staging copies: enough to outrun the upload that follows (a copy
/// thread moves several GB/s; the witness of a 32 GiB partition is 4.2 GB).
const COPY_THREADS: usize = 4;

/// Which variables the A and B queries take, as positions into inputs ++ aux: fixed by the
/// circuit's structure, so built and uploaded once and reused while the densities are the same.
#[derive(Debug)]
struct QueryIndex {
    densities: Densities,
    a: DeviceIndex,
    b: DeviceIndex,
}

#[derive(Debug, PartialEq)]
struct Densities {
    inputs: usize,
    a_aux: Bitmap,
    b_input: Bitmap,
    b_aux: Bitmap,
}

impl Densities {
    fn a_index(&self) -> Vec<u32> {
        let mut index: Vec<u32> = (0..self.inputs as u32).collect();
        index.extend(self.a_aux.iter_ones().map(|i| (self.inputs + i) as u32));
        index
    }

    fn b_index(&self) -> Vec<u32> {
        let mut index: Vec<u32> = self.b_input.iter_ones().map(|i| i as u32).collect();
        index.extend(self.b_aux.iter_ones().map(|i| (self.inputs + i) as u32));
        index
    }
}

/// Where one query's points live.
#[derive(Debug)]
enum Bases<A> {
    Resident(DeviceBases<A>),
    Streamed(Pinned<A>),
}

/// Where a parameter set's points go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// On the device with their window multiples of this width.
    Multiples(u32),
    Resident,
    Streamed,
}

impl<A: MsmAffine> Bases<A> {
    fn place(gpu: &Gpu, points: &[A], placement: Placement) -> Result<Self, GpuError> {
        Ok(match placement {
            Placement::Multiples(bits) => Bases::Resident(
                DeviceBases::upload_with_window_multiples(gpu, points, bits)?,
            ),
            Placement::Resident => Bases::Resident(DeviceBases::upload(gpu, points)?),
            Placement::Streamed => Bases::Streamed(Pinned::from_slice(gpu, points)?),
        })
    }

    /// Device bytes the points hold (0 when streamed from host memory).
    /// `scalars[i] · G` on the device, for the table's generator G.
    fn multiplied<G>(gpu: &Gpu, query: QueryScalars<'_, G>) -> Result<Self, GpuError>
    where
        G: PrimeCurve<Scalar = Scalar, Affine = A>,
        A: FixedBaseAffine + cuzk_math::msm::AffineCoordinates,
    {
        let table = query.table;
        Ok(Bases::Resident(fixed_base_multiply_on_device(
            gpu,
            &table.entries(),
            table.window_bits() as u32,
            table.windows() as u32,
            query.scalars,
        )?))
    }

    fn device_bytes(&self) -> usize {
        match self {
            Bases::Resident(bases) => bases.words().num_bytes(),
            Bases::Streamed(_) => 0,
        }
    }

    /// Device bytes an MSM over the first n points allocates beyond the points and scalars.
    fn working_memory(&self, n: usize) -> usize {
        match self {
            Bases::Resident(bases) => bases.working_memory(n),
            Bases::Streamed(_) => working_memory::<A>(n),
        }
    }

    fn msm(&self, gpu: &Gpu, scalars: &DeviceScalars) -> Result<A::Projective, GpuError> {
        match self {
            Bases::Resident(bases) => msm_device(gpu, bases, scalars),
            Bases::Streamed(points) => msm_streamed(gpu, points, scalars),
        }
    }
}

/// A proving key's queries made on a GPU and kept there, never on the host: what
/// [`Parameters::on_device`] holds (see [`crate::setup::parameters_on_device`]).
#[derive(Clone)]
pub struct DeviceQueries {
    ordinal: usize,
    /// The backend's name, for errors.
    device: String,
    lengths: QueryLengths,
    srs: Arc<DeviceSrs>,
}

impl DeviceQueries {
    pub fn lengths(&self) -> QueryLengths {
        self.lengths
    }

    /// The device they are on, by its backend's name.
    pub fn device(&self) -> &str {
        &self.device
    }
}

impl std::fmt::Debug for DeviceQueries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceQueries")
            .field("device", &self.device)
            .field("lengths", &self.lengths)
            .finish_non_exhaustive()
    }
}

/// The same points: the same device memory.
impl PartialEq for DeviceQueries {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.srs, &other.srs)
    }
}

impl Eq for DeviceQueries {}

/// A query's scalars and the table of the generator they multiply.
pub(crate) struct QueryScalars<'a, G: PrimeCurve> {
    pub table: &'a FixedBaseTable<G>,
    pub scalars: &'a [Scalar],
}

/// A parameter set's query points, placed for proving.
#[derive(Debug)]
struct DeviceSrs {
    key: SrsKey,
    placement: Placement,
    h: Bases<G1Affine>,
    l: Bases<G1Affine>,
    a: Bases<G1Affine>,
    b_g1: Bases<G1Affine>,
    b_g2: Bases<G2Affine>,
}

impl DeviceSrs {
    /// Device bytes its points hold, window multiples included (0 when streamed).
    fn device_bytes(&self) -> usize {
        self.h.device_bytes()
            + self.l.device_bytes()
            + self.a.device_bytes()
            + self.b_g1.device_bytes()
            + self.b_g2.device_bytes()
    }

    /// What [`ProverBackend::resident`] reports: its device bytes, `None` when streamed.
    fn resident_bytes(&self) -> Option<u64> {
        (self.placement != Placement::Streamed).then(|| self.device_bytes() as u64)
    }
}

/// The placed parameter sets, each with the stamp of its last use.
#[derive(Debug, Default)]
struct SrsCache {
    sets: Vec<(Arc<DeviceSrs>, u64)>,
    /// Advanced at every use: stamps order the sets by their last use.
    clock: u64,
}

impl SrsCache {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The set of `key`, stamped as used now.
    fn get(&mut self, key: &SrsKey) -> Option<Arc<DeviceSrs>> {
        let now = self.tick();
        let (srs, used) = self.sets.iter_mut().find(|(srs, _)| srs.key == *key)?;
        *used = now;
        Some(srs.clone())
    }

    fn find(&self, key: &SrsKey) -> Option<&Arc<DeviceSrs>> {
        self.sets
            .iter()
            .map(|(srs, _)| srs)
            .find(|srs| srs.key == *key)
    }

    fn remove(&mut self, key: &SrsKey) -> Option<Arc<DeviceSrs>> {
        let i = self.sets.iter().position(|(srs, _)| srs.key == *key)?;
        Some(self.sets.swap_remove(i).0)
    }

    /// Adds a newly placed set. A streamed one replaces the streamed sets no proof uses, so that
    /// page-locked host memory holds one key beside those in flight. Returns what it removed, to
    /// be dropped once the lock is released.
    fn insert(&mut self, srs: Arc<DeviceSrs>) -> Vec<Arc<DeviceSrs>> {
        let mut removed = Vec::new();
        if srs.placement == Placement::Streamed {
            let mut i = 0;
            while i < self.sets.len() {
                let (old, _) = &self.sets[i];
                if old.placement == Placement::Streamed && Arc::strong_count(old) == 1 {
                    removed.push(self.sets.swap_remove(i).0);
                } else {
                    i += 1;
                }
            }
        }
        let now = self.tick();
        self.sets.push((srs, now));
        removed
    }

    /// Removes the least recently used sets no proof uses until `needed` bytes fit in `free` and
    /// what they release (see [`evictions`]); removes none when that is not enough. Returns what
    /// it removed, to be dropped once the lock is released.
    fn evict_for(&mut self, free: usize, needed: usize) -> Vec<Arc<DeviceSrs>> {
        let occupants: Vec<Occupant> = self
            .sets
            .iter()
            .map(|(srs, used)| Occupant {
                bytes: srs.device_bytes(),
                last_used: *used,
                // Proofs take their clone under this cache's lock, which the caller holds.
                in_use: Arc::strong_count(srs) > 1,
            })
            .collect();
        let mut chosen = evictions(&occupants, free, needed).unwrap_or_default();
        // From the back, so that each swap_remove leaves the lower indices in place.
        chosen.sort_unstable_by(|a, b| b.cmp(a));
        chosen
            .into_iter()
            .map(|i| self.sets.swap_remove(i).0)
            .collect()
    }
}

/// A placed set as the choice of what to evict sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Occupant {
    /// Device bytes it would release.
    bytes: usize,
    /// The stamp of its last use: lower is older.
    last_used: u64,
    /// A proof holds it: never evicted.
    in_use: bool,
}

/// The sets to evict, by index, so that `needed` bytes fit in `free` plus what they release: the
/// least recently used first, among those no proof uses that hold device memory, and no more than
/// needed. `None` when evicting all of those is not enough: then none is worth evicting.
fn evictions(sets: &[Occupant], free: usize, needed: usize) -> Option<Vec<usize>> {
    let mut order: Vec<usize> = (0..sets.len())
        .filter(|&i| !sets[i].in_use && sets[i].bytes > 0)
        .collect();
    order.sort_by_key(|&i| sets[i].last_used);
    let mut available = free;
    let mut chosen = Vec::new();
    for i in order {
        if needed <= available {
            break;
        }
        available = available.saturating_add(sets[i].bytes);
        chosen.push(i);
    }
    (needed <= available).then_some(chosen)
}

/// What tells parameter sets apart cheaply: the query lengths, δ (random per setup) and the first
/// and last point of every query.
#[derive(Debug, PartialEq)]
struct SrsKey {
    lengths: [usize; 5],
    delta: (G1Affine, G2Affine),
    ends: Vec<Option<G1Affine>>,
    b_g2_ends: (Option<G2Affine>, Option<G2Affine>),
}

impl SrsKey {
    fn of(params: &Parameters) -> Self {
        let g1 = [&params.h, &params.l, &params.a, &params.b_g1];
        SrsKey {
            lengths: [
                params.h.len(),
                params.l.len(),
                params.a.len(),
                params.b_g1.len(),
                params.b_g2.len(),
            ],
            delta: (params.vk.delta_g1, params.vk.delta_g2),
            ends: g1
                .iter()
                .flat_map(|q| [q.first().copied(), q.last().copied()])
                .collect(),
            b_g2_ends: (params.b_g2.first().copied(), params.b_g2.last().copied()),
        }
    }
}

/// The host side of one proof, made before the device is taken.
struct Prepared {
    log_n: u32,
    /// 1/Z on the coset: Z(gX) = g^n − 1 there.
    z_inv: Scalar,
    /// a, b, c (n values each, zero-padded), then inputs ++ aux, all staged: one upload source;
    /// only inputs ++ aux when the products are left to the device.
    staging: Pinned<Scalar>,
    inputs: usize,
    witness: usize,
    /// The matrices whose products with the witness are a, b and c, when the device computes
    /// them (the assignment's [`ProvingAssignment::deferred`]).
    products: Option<Arc<CompiledR1cs>>,
}

impl Prepared {
    /// Where the witness starts in the staging buffer.
    fn witness_offset(&self) -> usize {
        match self.products {
            Some(_) => 0,
            None => 3 << self.log_n,
        }
    }
}

/// What a proof's device work reads besides its own data: made once per circuit (or parameter
/// set, or domain size) and kept on the device.
struct Placed {
    tables: Arc<NttTables>,
    srs: Arc<DeviceSrs>,
    /// The circuit's matrices, when the device computes a, b and c.
    sparse: Option<Arc<DeviceSparse>>,
    index: Arc<QueryIndex>,
}

/// Streams of one proof's device work: the main one (uploads, gathers) and five lanes, H's chain
/// first.
#[derive(Debug)]
struct Streams {
    main: Arc<Gpu>,
    lanes: [Arc<Gpu>; 5],
}

impl Streams {
    fn synchronize(&self) -> Result<(), GpuError> {
        std::iter::once(&self.main)
            .chain(&self.lanes)
            .try_for_each(|gpu| gpu.synchronize())
    }
}

/// The query positions of a proof: from the cache, or made now (uploaded and cached on the device).
enum IndexSource {
    Cached(Arc<QueryIndex>),
    Fresh(Densities),
}

/// Collects stage timings: host times as they happen, device times once the region is over.
#[derive(Default)]
struct Stages {
    metrics: Vec<StageMetric>,
    /// Device stages whose events are read at the end: waiting for each stage's end before the
    /// next was queued left H's lane idle while its thread woke (behind 16 syntheses, H200 host).
    pending: Vec<(&'static str, Timing)>,
}

impl Stages {
    fn push(&mut self, key: &'static str, value: f64) {
        self.metrics.push(StageMetric { key, value });
    }

    /// Runs `f` (device work on the GPU's stream) and keeps its device time for `key`, without
    /// waiting for the work.
    fn time<T>(
        &mut self,
        gpu: &Gpu,
        key: &'static str,
        f: impl FnOnce() -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        let (out, timing) = gpu.timed(f)?;
        self.pending.push((key, timing));
        Ok(out)
    }

    /// The value of a timed device call, its device time recorded under `key`.
    fn record<T>(
        &mut self,
        key: &'static str,
        timed: Result<(T, f32), GpuError>,
    ) -> Result<T, GpuError> {
        let (out, ms) = timed?;
        self.push(key, f64::from(ms));
        Ok(out)
    }

    /// Adds `other`'s metrics and pending device stages after these.
    fn extend(&mut self, other: Stages) {
        self.metrics.extend(other.metrics);
        self.pending.extend(other.pending);
    }

    /// Every metric, the device stages' read now (the device is idle; a stage whose events cannot
    /// be read, after a failure on the device, is left out).
    fn settle(mut self) -> Vec<StageMetric> {
        for (key, timing) in std::mem::take(&mut self.pending) {
            if let Ok(ms) = timing.ms() {
                self.push(key, f64::from(ms));
            }
        }
        self.metrics
    }
}

impl GpuBackend {
    /// The backend of device `ordinal`.
    pub fn new(ordinal: usize) -> Result<Self, GpuError> {
        Ok(Self::with_gpu(Gpu::new(ordinal)?))
    }

    /// A backend on an opened device (whose memory limit, if any, it plans with).
    pub fn with_gpu(gpu: Arc<Gpu>) -> Self {
        let name = format!("cuda:{} ({})", gpu.ordinal(), gpu.name());
        GpuBackend {
            gpu,
            name,
            srs: Mutex::default(),
            region: Mutex::new(()),
            tables: Mutex::new(HashMap::new()),
            index: Mutex::default(),
            sparse: Mutex::default(),
            staging: Mutex::new(Vec::new()),
            copies: staging_pool(COPY_THREADS),
            lanes: Mutex::new(None),
            beside: Mutex::new(None),
            pool_reserved: AtomicUsize::new(0),
            multiples_from: MULTIPLES_FROM,
        }
    }

    /// Its staging copies on `threads` threads instead of [`COPY_THREADS`] (`gpus.gpu_threads`
    /// of the daemon's configuration).
    pub fn with_staging_threads(mut self, threads: usize) -> Self {
        self.copies = staging_pool(threads);
        self
    }

    /// A proving key's queries multiplied out on this device and left there: `delta` is the
    /// verifying key's, which tells parameter sets apart.
    pub(crate) fn queries_on_device(
        &self,
        delta: (G1Affine, G2Affine),
        [h, l, a, b_g1]: [QueryScalars<'_, G1Projective>; 4],
        b_g2: QueryScalars<'_, G2Projective>,
    ) -> Result<DeviceQueries, GpuError> {
        // Not while a proof measures or takes the device's memory.
        let _region = self.region.lock().unwrap_or_else(PoisonError::into_inner);
        let lengths = QueryLengths {
            h: h.scalars.len(),
            l: l.scalars.len(),
            a: a.scalars.len(),
            b_g1: b_g1.scalars.len(),
            b_g2: b_g2.scalars.len(),
        };
        let gpu = &self.gpu;
        let srs = DeviceSrs {
            key: SrsKey {
                lengths: [lengths.h, lengths.l, lengths.a, lengths.b_g1, lengths.b_g2],
                delta,
                ends: Vec::new(),
                b_g2_ends: (None, None),
            },
            placement: Placement::Resident,
            h: Bases::multiplied(gpu, h)?,
            l: Bases::multiplied(gpu, l)?,
            a: Bases::multiplied(gpu, a)?,
            b_g1: Bases::multiplied(gpu, b_g1)?,
            b_g2: Bases::multiplied(gpu, b_g2)?,
        };
        Ok(DeviceQueries {
            ordinal: gpu.ordinal(),
            device: self.name.clone(),
            lengths,
            srs: Arc::new(srs),
        })
    }

    /// Places parameter sets whose longest query has at least `points` points with their window
    /// multiples when the device has room (fewer additions per MSM for ⌈255/c⌉ times the points'
    /// memory); `usize::MAX` never does.
    pub fn window_multiples_from(mut self, points: usize) -> Self {
        self.multiples_from = points;
        self
    }

    /// A staging buffer of at least `len` scalars: a returned one if large enough, else new.
    fn take_staging(&self, len: usize) -> Result<Pinned<Scalar>, GpuError> {
        let mut pool = self.staging.lock().unwrap_or_else(PoisonError::into_inner);
        match pool.iter().position(|b| b.len() >= len) {
            Some(i) => Ok(pool.swap_remove(i)),
            None => Pinned::zeroed(&self.gpu, len),
        }
    }

    fn return_staging(&self, buffer: Pinned<Scalar>) {
        self.staging
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(buffer);
    }

    /// Host work of one proof: checks, a staging copy of the witness (in parallel; the
    /// assignment's aux vector is freed here), the query positions.
    fn prepare(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        stages: &mut Stages,
    ) -> Result<(Prepared, IndexSource), ProveError> {
        let domain = checked_domain(params, &assignment)?;
        let n = domain.size();
        let ProvingAssignment {
            input_assignment: inputs,
            aux_assignment: aux,
            a,
            b,
            c,
            a_aux_density,
            b_input_density,
            b_aux_density,
            deferred: products,
        } = assignment;
        let witness = inputs.len() + aux.len();
        if witness > u32::MAX as usize {
            return Err(ProveError::Backend {
                backend: "gpu",
                reason: format!("{witness} variables exceed the 2^32 a gather index holds"),
            });
        }
        let start = std::time::Instant::now();
        let len = staging_len(n, witness, products.is_some());
        let abc_len = len - witness;
        let mut staging = self.take_staging(len)?;
        {
            let values = staging.as_mut_slice()?;
            let (abc, witness_part) = values.split_at_mut(abc_len);
            let (input_part, aux_part) = witness_part.split_at_mut(inputs.len());
            let mut copy = || {
                rayon::join(
                    || stage(input_part, &inputs),
                    || stage(&mut aux_part[..aux.len()], &aux),
                );
                for (part, values) in abc.chunks_mut(n).zip([&a, &b, &c]) {
                    stage(part, values);
                }
            };
            match &self.copies {
                Some(pool) => pool.install(copy),
                None => copy(),
            }
        }
        stages.push("prep_copy_ms", start.elapsed().as_secs_f64() * 1e3);
        release_in_background((aux, a, b, c));
        let densities = Densities {
            inputs: inputs.len(),
            a_aux: a_aux_density,
            b_input: b_input_density,
            b_aux: b_aux_density,
        };
        let cached = {
            let mut list = self.index.lock().unwrap_or_else(PoisonError::into_inner);
            let found = list.iter().position(|index| index.densities == densities);
            found.map(|i| most_recent(&mut list, i))
        };
        // g is no n-th root of unity, so Z(g) = g^n − 1 is never zero.
        let z_inv = Option::from(domain.z_at(&Scalar::MULTIPLICATIVE_GENERATOR).invert()).ok_or(
            ProveError::Backend {
                backend: "gpu",
                reason: "the coset's vanishing polynomial is zero".into(),
            },
        )?;
        let index = match cached {
            Some(index) => IndexSource::Cached(index),
            None => IndexSource::Fresh(densities),
        };
        let prepared = Prepared {
            log_n: n.trailing_zeros(),
            z_inv,
            staging,
            inputs: inputs.len(),
            witness,
            products,
        };
        Ok((prepared, index))
    }

    fn ntt_tables(&self, log_n: u32) -> Result<Arc<NttTables>, GpuError> {
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = tables.get(&log_n) {
            return Ok(t.clone());
        }
        let t = Arc::new(NttTables::new(&self.gpu, log_n)?);
        // Cached once made: a proof beside the region may read it from other streams.
        self.gpu.synchronize()?;
        tables.insert(log_n, t.clone());
        Ok(t)
    }

    fn cache(&self) -> MutexGuard<'_, SrsCache> {
        self.srs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The parameter set's points on this device, placing them on first use: resident when they
    /// fit beside `working` bytes of a proof's own buffers (after evicting the least recently used
    /// sets no proof holds, if that makes them fit), streamed from pinned memory otherwise. The
    /// caller holds `region`.
    fn srs(
        &self,
        params: &Parameters,
        working: usize,
        stages: &mut Stages,
    ) -> Result<Arc<DeviceSrs>, GpuError> {
        if let Some(queries) = &params.on_device {
            if queries.ordinal != self.gpu.ordinal() {
                return Err(GpuError::InvalidInput {
                    what: "parameters",
                    reason: format!(
                        "their queries were made on {} and stay there; this is {}",
                        queries.device, self.name
                    ),
                });
            }
            return Ok(Arc::clone(&queries.srs));
        }
        let key = SrsKey::of(params);
        if let Some(srs) = self.cache().get(&key) {
            return Ok(srs);
        }
        let g1 = params.h.len() + params.l.len() + params.a.len() + params.b_g1.len();
        let points = g1 * std::mem::size_of::<G1Affine>()
            + params.b_g2.len() * std::mem::size_of::<G2Affine>();
        let margin = working + cuzk_gpu::MEMORY_MARGIN;
        let evicted = {
            let (free, _) = self.gpu.memory()?;
            self.cache().evict_for(free, points + margin)
        };
        if !evicted.is_empty() {
            drop(evicted);
            // Their memory is freed in the device stream's order: measure once it is.
            self.gpu.synchronize()?;
        }
        let (free, _) = self.gpu.memory()?;
        let longest = [
            params.h.len(),
            params.l.len(),
            params.a.len(),
            params.b_g1.len(),
            params.b_g2.len(),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        let bits = multiple_window_bits(longest);
        // The multiples' memory, and the plain copy one query's upload holds while they are made
        // (at most `longest` of the larger points, G2's).
        let multiples =
            points * windows_of_width(bits) as usize + longest * std::mem::size_of::<G2Affine>();
        let fits = |bytes: usize| bytes + margin <= free;
        let placement = if longest >= self.multiples_from && fits(multiples) {
            Placement::Multiples(bits)
        } else if fits(points) {
            Placement::Resident
        } else {
            Placement::Streamed
        };
        let gpu = &self.gpu;
        let start = std::time::Instant::now();
        let srs = Arc::new(DeviceSrs {
            key,
            placement,
            h: Bases::place(gpu, &params.h, placement)?,
            l: Bases::place(gpu, &params.l, placement)?,
            a: Bases::place(gpu, &params.a, placement)?,
            b_g1: Bases::place(gpu, &params.b_g1, placement)?,
            b_g2: Bases::place(gpu, &params.b_g2, placement)?,
        });
        // Cached once placed: a proof beside the region may read it from other streams.
        gpu.synchronize()?;
        stages.push("srs_place_ms", start.elapsed().as_secs_f64() * 1e3);
        stages.push("srs_bytes", points as f64);
        let replaced = self.cache().insert(srs.clone());
        drop(replaced);
        Ok(srs)
    }

    /// Device bytes a proof over a domain of 2^`log_n` and `witness` variables needs besides the
    /// SRS: a, b, c; the witness and the gathered query scalars (L, A, B and B's copy, each at
    /// most the witness); the largest MSM's work buffers.
    fn working_bytes(log_n: u32, witness: usize) -> usize {
        let scalar = std::mem::size_of::<Scalar>();
        let n = 1usize << log_n;
        scalar * (3 * n + 5 * witness)
            + working_memory::<G1Affine>(n.max(witness)).max(working_memory::<G2Affine>(witness))
    }

    /// The A and B positions on the device: cached, or uploaded now and cached.
    fn query_index(&self, source: IndexSource) -> Result<Arc<QueryIndex>, GpuError> {
        Ok(match source {
            IndexSource::Cached(index) => index,
            IndexSource::Fresh(densities) => {
                let index = Arc::new(QueryIndex {
                    a: DeviceIndex::upload(&self.gpu, &densities.a_index())?,
                    b: DeviceIndex::upload(&self.gpu, &densities.b_index())?,
                    densities,
                });
                // Cached once made: a proof beside the region may read it from other streams.
                self.gpu.synchronize()?;
                let mut list = self.index.lock().unwrap_or_else(PoisonError::into_inner);
                list.insert(0, index.clone());
                list.truncate(CACHED_CIRCUITS);
                index
            }
        })
    }

    /// The device region of one proof, with whatever it reads placed first. The caller holds the
    /// device lock.
    fn on_device(
        &self,
        params: &Parameters,
        p: &mut Prepared,
        index: IndexSource,
        stages: &mut Stages,
    ) -> Result<QuerySums, GpuError> {
        let _region = self.region.lock().unwrap_or_else(PoisonError::into_inner);
        let placed = self.place(params, p, index, stages)?;
        let streams = Streams {
            main: Arc::clone(&self.gpu),
            lanes: self.lanes()?,
        };
        self.run(&streams, &placed, p, stages, true)
    }

    /// What a proof reads besides its own data, placed now where it is not yet. The caller holds
    /// `region`.
    fn place(
        &self,
        params: &Parameters,
        p: &Prepared,
        index: IndexSource,
        stages: &mut Stages,
    ) -> Result<Placed, GpuError> {
        // Before the SRS is placed, so that its placement sees the memory they hold (4 GiB at
        // 2^27 with the top pass's direct tables).
        let tables = self.ntt_tables(p.log_n)?;
        let srs = self.srs(params, Self::working_bytes(p.log_n, p.witness), stages)?;
        // After the SRS, which comes first: at 32 GiB the device holds both only with the SRS
        // resident and the working memory counted per phase, not all at once as `working_bytes`
        // does (7.3 GB of matrices against its 84 GB upper bound, within 139 GB).
        let sparse = p
            .products
            .as_ref()
            .map(|compiled| self.sparse(compiled))
            .transpose()?;
        let index = self.query_index(index)?;
        Ok(Placed {
            tables,
            srs,
            sparse,
            index,
        })
    }

    /// What a proof reads, if every part of it is on the device already (resident, not streamed)
    /// and the proof's own buffers fit in the memory free now: a proof that can run beside the
    /// region in progress without placing anything.
    fn placed(&self, params: &Parameters, p: &Prepared, index: &IndexSource) -> Option<Placed> {
        let IndexSource::Cached(index) = index else {
            return None;
        };
        let tables = self
            .tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&p.log_n)
            .cloned()?;
        let srs = match &params.on_device {
            Some(queries) if queries.ordinal == self.gpu.ordinal() => Arc::clone(&queries.srs),
            Some(_) => return None,
            None => self.cache().get(&SrsKey::of(params))?,
        };
        let sparse = match &p.products {
            Some(compiled) => Some(self.cached_sparse(compiled)?),
            None => None,
        };
        let free = self.gpu.memory().ok()?.0;
        let fits = Self::working_bytes(p.log_n, p.witness) + cuzk_gpu::MEMORY_MARGIN <= free;
        (srs.placement != Placement::Streamed && fits).then(|| Placed {
            tables,
            srs,
            sparse,
            index: Arc::clone(index),
        })
    }

    /// One proof's device work on `streams`: the witness and its four MSMs first, H beside them
    /// when their work buffers fit together, else everything one after another. `reserve`: grow
    /// the memory pool for the MSMs side by side first (see [`Gpu::reserve_pool`]).
    fn run(
        &self,
        streams: &Streams,
        placed: &Placed,
        p: &mut Prepared,
        stages: &mut Stages,
        reserve: bool,
    ) -> Result<QuerySums, GpuError> {
        let gpu = &*streams.main;
        let Placed {
            tables,
            srs,
            sparse,
            index,
        } = placed;
        let resident = srs.placement != Placement::Streamed;
        stages.push("srs_resident", if resident { 1.0 } else { 0.0 });
        let window_bits = match srs.placement {
            Placement::Multiples(bits) => f64::from(bits),
            _ => 0.0,
        };
        stages.push("srs_window_bits", window_bits);
        let n = 1usize << p.log_n;
        let offset = p.witness_offset();
        let witness = stages.time(gpu, "h2d_witness_ms", || {
            DeviceScalars::upload_pinned_range(gpu, &p.staging, offset, offset + p.witness)
        })?;
        let scalars = stages.time(gpu, "gather_ms", || {
            let b = witness.gather(gpu, &index.b)?;
            Ok(WitnessScalars {
                l: witness.copy_range(gpu, p.inputs, p.witness)?,
                a: witness.gather(gpu, &index.a)?,
                // Its own copy for B in G2, which runs beside B in G1.
                b_g2: b.copy_range(gpu, 0, b.len())?,
                b_g1: b,
            })
        })?;
        // Kept only when a, b and c are its products, until the region's end (the H lane reads it).
        let products = sparse.as_ref().map(|sparse| (Arc::clone(sparse), witness));
        let scalar_bytes = std::mem::size_of::<Scalar>();
        let uploaded = offset + p.witness;
        stages.push("h2d_bytes", (scalar_bytes * uploaded) as f64);
        // Side by side: every MSM's work buffers and H's three vectors at once.
        let together = srs.h.working_memory(n)
            + srs.l.working_memory(scalars.l.len())
            + srs.a.working_memory(scalars.a.len())
            + srs.b_g1.working_memory(scalars.b_g1.len())
            + srs.b_g2.working_memory(scalars.b_g2.len())
            + 3 * n * scalar_bytes;
        let free = gpu.memory()?.0;
        let side_by_side = resident && together + cuzk_gpu::MEMORY_MARGIN <= free;
        stages.push("msm_side_by_side", if side_by_side { 1.0 } else { 0.0 });
        if reserve && side_by_side && together > self.pool_reserved.load(Ordering::Relaxed) {
            // Once per size: the five lanes never reuse one another's freed memory (see `Gpu`), so
            // the pool must hold all their buffers at once, with room for how they interleave.
            // Grown in the middle of proofs instead, the first timed proofs at 2^22 (90% boolean,
            // H200) took 104–107 ms against 82–88; reserved, 10 of 10 took 79–89. Best effort:
            // `free` counts what the pool holds unused, which it cannot hand out as one block with
            // new memory (2^24 synthetic, H200: asking for nearly all of it failed every proof),
            // so a smaller block is tried, then none: the lanes then grow the pool as they go.
            let bytes = (2 * together).min(free - cuzk_gpu::MEMORY_MARGIN);
            let reserved = [bytes, together]
                .into_iter()
                .any(|bytes| gpu.reserve_pool(bytes).is_ok());
            stages.push("pool_reserved", if reserved { 1.0 } else { 0.0 });
            self.pool_reserved.fetch_max(together, Ordering::Relaxed);
        }
        let start = std::time::Instant::now();
        let sums = if side_by_side {
            // The lanes read what the main stream gathered.
            for lane in &streams.lanes {
                lane.wait_for(gpu)?;
            }
            let [h_lane, l, a, b_g1, b_g2] = &streams.lanes;
            let s = &scalars;
            std::thread::scope(|scope| {
                let l = scope.spawn(|| l.time(|| srs.l.msm(l, &s.l)));
                let a = scope.spawn(|| a.time(|| srs.a.msm(a, &s.a)));
                let b_g1 = scope.spawn(|| b_g1.time(|| srs.b_g1.msm(b_g1, &s.b_g1)));
                let b_g2 = scope.spawn(|| b_g2.time(|| srs.b_g2.msm(b_g2, &s.b_g2)));
                // H's chain is the longest: on the lane the device schedules first.
                let h = Self::h_coefficients(h_lane, tables, p, products.as_ref(), stages)
                    .and_then(|h| h_lane.time(|| srs.h.msm(h_lane, &h)));
                query_sums(stages, h, joined(l), joined(a), joined(b_g1), joined(b_g2))
            })
        } else {
            let h = Self::h_coefficients(gpu, tables, p, products.as_ref(), stages)?;
            let h = gpu.time(|| srs.h.msm(gpu, &h));
            let l = gpu.time(|| srs.l.msm(gpu, &scalars.l));
            let a = gpu.time(|| srs.a.msm(gpu, &scalars.a));
            let b_g1 = gpu.time(|| srs.b_g1.msm(gpu, &scalars.b_g1));
            let b_g2 = gpu.time(|| srs.b_g2.msm(gpu, &scalars.b_g2));
            query_sums(stages, h, l, a, b_g1, b_g2)
        };
        stages.push("msm_ms", start.elapsed().as_secs_f64() * 1e3);
        sums
    }

    /// H's n − 1 coefficients on the device: a, b and c uploaded from the staging buffer, or the
    /// matrices' products with the witness already there (`products`), then transformed.
    fn h_coefficients(
        gpu: &Gpu,
        tables: &NttTables,
        p: &Prepared,
        products: Option<&(Arc<DeviceSparse>, DeviceScalars)>,
        stages: &mut Stages,
    ) -> Result<DeviceScalars, GpuError> {
        let n = 1usize << p.log_n;
        let staging = &p.staging;
        let [mut h, mut db, mut dc] = match products {
            Some((sparse, z)) => stages.time(gpu, "products_ms", || {
                // Zero past the rows: the NTTs' padding.
                let product = |m| -> Result<DeviceScalars, GpuError> {
                    let mut out = DeviceScalars::zeros(gpu, n)?;
                    sparse.multiply(gpu, m, z, &mut out)?;
                    Ok(out)
                };
                Ok([product(0)?, product(1)?, product(2)?])
            })?,
            None => stages.time(gpu, "h2d_abc_ms", || {
                Ok([
                    DeviceScalars::upload_pinned_range(gpu, staging, 0, n)?,
                    DeviceScalars::upload_pinned_range(gpu, staging, n, 2 * n)?,
                    DeviceScalars::upload_pinned_range(gpu, staging, 2 * n, 3 * n)?,
                ])
            })?,
        };
        stages.time(gpu, "ntt_ms", || {
            for values in [&mut h, &mut db, &mut dc] {
                ntt(
                    gpu,
                    tables,
                    values,
                    Transform::intt(NttOrder::NaturalToBitReversed),
                )?;
                ntt(
                    gpu,
                    tables,
                    values,
                    Transform::coset_ntt(NttOrder::BitReversedToNatural),
                )?;
            }
            ab_minus_c(gpu, &mut h, &db, &dc, p.z_inv)?;
            ntt(
                gpu,
                tables,
                &mut h,
                Transform::coset_intt(NttOrder::NaturalToNatural),
            )
        })?;
        // H has n − 1 coefficients (the top one is zero).
        h.truncate(n - 1);
        Ok(h)
    }

    /// The cached device copy of `compiled`'s matrices, if any (the copies of circuits dropped
    /// on the host go).
    fn cached_sparse(&self, compiled: &Arc<CompiledR1cs>) -> Option<Arc<DeviceSparse>> {
        let mut list = self.sparse.lock().unwrap_or_else(PoisonError::into_inner);
        list.retain(|(host, _)| host.strong_count() > 0);
        let i = list
            .iter()
            .position(|(host, _)| std::ptr::eq(host.as_ptr(), Arc::as_ptr(compiled)))?;
        Some(most_recent(&mut list, i).1)
    }

    /// The device copy of `compiled`'s matrices: the cached one, or uploaded now, after the least
    /// recently used copies no proof reads if it would not fit beside them.
    fn sparse(&self, compiled: &Arc<CompiledR1cs>) -> Result<Arc<DeviceSparse>, GpuError> {
        if let Some(device) = self.cached_sparse(compiled) {
            return Ok(device);
        }
        let needed = DeviceSparse::bytes_of(compiled.coeffs(), &sparse_rows(compiled))
            + cuzk_gpu::MEMORY_MARGIN;
        let mut list = self.sparse.lock().unwrap_or_else(PoisonError::into_inner);
        while self.gpu.memory()?.0 < needed {
            let Some(i) = list.iter().rposition(|(_, d)| Arc::strong_count(d) == 1) else {
                break;
            };
            list.remove(i);
            // Freed in the stream's order: measure once it is.
            self.gpu.synchronize()?;
        }
        let device = Arc::new(upload_matrices(&self.gpu, compiled)?);
        // Cached once made: a proof beside the region may read it from other streams.
        self.gpu.synchronize()?;
        list.insert(0, (Arc::downgrade(compiled), Arc::clone(&device)));
        list.truncate(CACHED_CIRCUITS);
        Ok(device)
    }

    /// Five lanes of this backend's device, made on first use: H's chain (scheduled first) and
    /// the four MSMs that run beside it.
    fn lanes(&self) -> Result<[Arc<Gpu>; 5], GpuError> {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(made) = lanes.as_ref() {
            return Ok(made.clone());
        }
        let gpu = &self.gpu;
        let made = [
            gpu.priority_lane()?,
            gpu.lane()?,
            gpu.lane()?,
            gpu.lane()?,
            gpu.lane()?,
        ];
        *lanes = Some(made.clone());
        Ok(made)
    }

    /// The streams of proofs beside the region (made on first use, all scheduled first), held
    /// until the guard drops.
    fn beside_streams(&self) -> Result<MutexGuard<'_, Option<Streams>>, GpuError> {
        let mut beside = self.beside.lock().unwrap_or_else(PoisonError::into_inner);
        if beside.is_none() {
            let gpu = &self.gpu;
            *beside = Some(Streams {
                main: gpu.priority_lane()?,
                lanes: [
                    gpu.priority_lane()?,
                    gpu.priority_lane()?,
                    gpu.priority_lane()?,
                    gpu.priority_lane()?,
                    gpu.priority_lane()?,
                ],
            });
        }
        Ok(beside)
    }

    /// One proof on the streams beside the region in progress, if all it reads is placed and
    /// `device` allows it. `None` when it did not run, or failed there (the device may have run
    /// short of the memory the region in progress took meanwhile): then it takes its turn.
    fn prove_beside(
        &self,
        params: &Parameters,
        p: &mut Prepared,
        index: &IndexSource,
        device: &dyn DeviceLock,
    ) -> Option<(QuerySums, Stages)> {
        let placed = self.placed(params, p, index)?;
        let _hold = device.acquire_beside()?;
        let streams = self.beside_streams().ok()?;
        let streams = streams.as_ref()?;
        let mut stages = Stages::default();
        let sums = self.run(streams, &placed, p, &mut stages, false);
        // No copy from the staging buffer is in flight once the streams are idle.
        streams.synchronize().ok()?;
        Some((sums.ok()?, stages))
    }

    /// Waits for the device's stream and every lane's: then no upload still reads a staging
    /// buffer, whatever failed on the way.
    fn synchronize(&self) -> Result<(), GpuError> {
        let lanes = self
            .lanes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        std::iter::once(&self.gpu)
            .chain(lanes.iter().flatten())
            .try_for_each(|gpu| gpu.synchronize())
    }
}

/// `compiled`'s A, B and C on the device, for products with witnesses (inputs then aux).
pub fn upload_matrices(gpu: &Gpu, compiled: &CompiledR1cs) -> Result<DeviceSparse, GpuError> {
    let columns = compiled.num_inputs() + compiled.num_aux();
    DeviceSparse::upload(gpu, compiled.coeffs(), &sparse_rows(compiled), columns)
}

fn sparse_rows(compiled: &CompiledR1cs) -> [SparseRows<'_>; 3] {
    compiled
        .matrices()
        .map(|(starts, columns, coeffs)| SparseRows {
            starts,
            columns,
            coeffs,
        })
}

/// Moves entry `i` of a most-recently-used-first list to the front; returns a clone of it.
fn most_recent<T: Clone>(list: &mut Vec<T>, i: usize) -> T {
    let entry = list.remove(i);
    list.insert(0, entry.clone());
    entry
}

/// Scalars of a proof's page-locked staging buffer: a, b and c (the domain's n each), then the
/// witness; the witness alone when the device computes the products.
fn staging_len(n: usize, witness: usize, products_on_device: bool) -> usize {
    match products_on_device {
        true => witness,
        false => 3 * n + witness,
    }
}

/// The five MSMs' results (each with its device time, which overlap when side by side), recorded
/// as stages.
fn query_sums(
    stages: &mut Stages,
    h: Result<(G1Projective, f32), GpuError>,
    l: Result<(G1Projective, f32), GpuError>,
    a: Result<(G1Projective, f32), GpuError>,
    b_g1: Result<(G1Projective, f32), GpuError>,
    b_g2: Result<(G2Projective, f32), GpuError>,
) -> Result<QuerySums, GpuError> {
    Ok(QuerySums {
        h: stages.record("msm_h_ms", h)?,
        l: stages.record("msm_l_ms", l)?,
        a: stages.record("msm_a_ms", a)?,
        b_g1: stages.record("msm_b_g1_ms", b_g1)?,
        b_g2: stages.record("msm_b_g2_ms", b_g2)?,
    })
}

/// The scalars the witness gives four of a proof's MSMs, on the device.
struct WitnessScalars {
    l: DeviceScalars,
    a: DeviceScalars,
    b_g1: DeviceScalars,
    b_g2: DeviceScalars,
}

/// A scoped thread's result; its panic goes on in the joining thread.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The threads of a backend's staging copies; `None` if they could not be started.
fn staging_pool(threads: usize) -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("cuzk-staging-{i}"))
        .build()
        .ok()
}

/// Drops `value` on a thread of its own: freeing an assignment's vectors (hundreds of MB) unmaps
/// their pages, which took 16–38 ms of a proof's host preparation on an H200 host. If no thread
/// can be started, the value is dropped here, as the failed spawn drops its closure.
fn release_in_background<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("cuzk-release".into())
        .spawn(move || drop(value));
}

/// Copies `src` to the front of `dst` and zeroes the rest, in parallel chunks.
fn stage(dst: &mut [Scalar], src: &[Scalar]) {
    const CHUNK: usize = 1 << 16;
    let (copied, padding) = dst.split_at_mut(src.len());
    copied
        .par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
    padding
        .par_chunks_mut(CHUNK)
        .for_each(|d| d.fill(Scalar::ZERO));
}

impl ProverBackend for GpuBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
    ) -> Result<QuerySums, ProveError> {
        Ok(self.prove_start_shared(params, assignment, &Unshared)?.sums)
    }

    /// Host preparation (padding, index lists) runs before the device is taken; the device region
    /// is everything from the first upload to the last MSM.
    fn prove_start_shared(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        let mut stages = Stages::default();
        let start = std::time::Instant::now();
        let (prepared, index) = self.prepare(params, assignment, &mut stages)?;
        stages.push("prep_ms", start.elapsed().as_secs_f64() * 1e3);
        let mut prepared = prepared;
        if let Some((sums, beside)) = self.prove_beside(params, &mut prepared, &index, device) {
            self.return_staging(prepared.staging);
            stages.push("beside", 1.0);
            stages.extend(beside);
            return Ok(Started {
                sums,
                stages: stages.settle(),
            });
        }
        stages.push("beside", 0.0);
        let device_guard = device.acquire();
        let sums = self.on_device(params, &mut prepared, index, &mut stages);
        // Whatever happened, no copy from the staging buffer is still in flight once the streams
        // are idle; then the buffer can serve another proof.
        let idle = self.synchronize();
        drop(device_guard);
        if idle.is_ok() {
            self.return_staging(prepared.staging);
        }
        Ok(Started {
            sums: sums.map_err(ProveError::Gpu)?,
            stages: stages.settle(),
        })
    }

    /// Placed as a proof of `params` would place it (its NTT tables first, its working memory
    /// reserved beside it), after the proof on the device if there is one.
    fn preload(&self, params: &Parameters) -> Result<u64, ProveError> {
        // The domain the parameters were made for has n − 1 H points; the witness is the public
        // inputs (one IC point each) and the aux variables (one L point each).
        let lengths = params.lengths();
        let n = lengths.h + 1;
        if !n.is_power_of_two() {
            return Err(ProveError::Backend {
                backend: "gpu",
                reason: format!("{} H points are not a power-of-two domain less one", n - 1),
            });
        }
        let witness = params.vk.ic.len() + lengths.l;
        let _region = self.region.lock().unwrap_or_else(PoisonError::into_inner);
        let log_n = n.trailing_zeros();
        self.ntt_tables(log_n)?;
        let srs = self.srs(
            params,
            Self::working_bytes(log_n, witness),
            &mut Stages::default(),
        )?;
        Ok(srs.resident_bytes().unwrap_or(0))
    }

    /// Also drops a streamed set's page-locked host copy (reported as 0 bytes).
    fn evict(&self, params: &Parameters) -> u64 {
        let removed = self.cache().remove(&SrsKey::of(params));
        removed.and_then(|srs| srs.resident_bytes()).unwrap_or(0)
    }

    /// The staging buffer of a proof of `params`.
    fn host_bytes_per_proof(&self, params: &Parameters, products_deferred: bool) -> u64 {
        // The domain has n − 1 H points; the witness is one IC point per input, one L per aux.
        let lengths = params.lengths();
        let witness = params.vk.ic.len() + lengths.l;
        let len = staging_len(lengths.h + 1, witness, products_deferred);
        (len * std::mem::size_of::<Scalar>()) as u64
    }

    /// On the device, with the compiled matrices (uploaded once per circuit).
    fn computes_products(&self) -> bool {
        true
    }

    /// Window multiples included; `None` for a set streamed from host memory.
    fn resident(&self, params: &Parameters) -> Option<u64> {
        if let Some(queries) = &params.on_device {
            return (queries.ordinal == self.gpu.ordinal())
                .then(|| queries.srs.device_bytes() as u64);
        }
        self.cache()
            .find(&SrsKey::of(params))
            .and_then(|srs| srs.resident_bytes())
    }

    fn device(&self) -> Result<Option<DeviceStatus>, ProveError> {
        let (free, total) = self.gpu.memory()?;
        Ok(Some(DeviceStatus {
            ordinal: self.gpu.ordinal(),
            name: self.gpu.name().to_owned(),
            total_bytes: total as u64,
            free_bytes: free as u64,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::{evictions, Occupant};

    fn set(bytes: usize, last_used: u64, in_use: bool) -> Occupant {
        Occupant {
            bytes,
            last_used,
            in_use,
        }
    }

    #[test]
    fn evicts_nothing_when_the_set_fits() {
        let sets = [set(100, 1, false), set(100, 2, false)];
        assert_eq!(evictions(&sets, 50, 50), Some(vec![]));
        assert_eq!(evictions(&[], 50, 50), Some(vec![]));
    }

    #[test]
    fn evicts_the_least_recently_used_first_and_no_more_than_needed() {
        let sets = [set(100, 7, false), set(100, 3, false), set(100, 5, false)];
        assert_eq!(evictions(&sets, 50, 150), Some(vec![1]));
        assert_eq!(evictions(&sets, 50, 250), Some(vec![1, 2]));
        assert_eq!(evictions(&sets, 50, 350), Some(vec![1, 2, 0]));
    }

    #[test]
    fn never_evicts_a_set_in_use() {
        let sets = [set(100, 1, true), set(100, 2, false)];
        assert_eq!(evictions(&sets, 0, 100), Some(vec![1]));
        // The in-use set's memory would be needed too: evicting the other would not make room.
        assert_eq!(evictions(&sets, 0, 150), None);
    }

    #[test]
    fn skips_sets_that_hold_no_device_memory() {
        // A streamed set (0 device bytes) is older, but evicting it frees nothing.
        let sets = [set(0, 1, false), set(100, 2, false)];
        assert_eq!(evictions(&sets, 0, 100), Some(vec![1]));
    }

    #[test]
    fn evicts_nothing_when_even_all_idle_sets_are_not_enough() {
        let sets = [set(100, 1, false), set(100, 2, false)];
        assert_eq!(evictions(&sets, 10, 211), None);
        assert_eq!(evictions(&sets, 10, 210), Some(vec![0, 1]));
        assert_eq!(evictions(&sets, usize::MAX, usize::MAX), Some(vec![]));
    }
}
