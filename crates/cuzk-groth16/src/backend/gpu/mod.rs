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
//! of it by [`ProverBackend::preload`]) as a [`plan`] for the circuit and the device's memory
//! chooses: all resident (with window multiples when they fit) and the MSMs side by side; or, on
//! a device short of memory, one step at a time with H from two vectors, the queries that do not
//! fit streamed from the parameters' own host vectors, page-locked in place
//! (`residency::lock_in_host`: no second copy), through double-buffered chunks; a, b and c
//! come from the circuit's matrices streamed the same way from the compiled R1CS's host memory
//! when they do not fit, and from the host only when not even the witness fits beside H's two
//! vectors. The plan is returned with every proof's
//! stages (`srs_resident`, `srs_streamed_queries`, `srs_window_bits`) and by
//! [`ProverBackend::plan`]; a device too small for any plan refuses the proof, naming the bytes.
//!
//! Several sets stay on the device side by side. A set that does not fit beside them takes the
//! place of the least recently used that no proof is using (never one in use); the plan counts
//! what those would release.
//! The query positions and matrices of the last [`CACHED_CIRCUITS`] circuits stay too, so that a
//! PoSt proven between PoRep partitions uploads neither its own nor, after it, the PoRep's again.
//!
//! A proof whose parts are all on the device already may run beside the region in progress when
//! its caller allows it ([`DeviceLock::acquire_beside`]: a WinningPoSt on a device busy with
//! PoRep), on streams of its own that the device schedules first, if its buffers fit in the
//! memory free then; anything cached is complete before it enters a cache, so that any stream may
//! read it. If it fails there (the region may have taken the memory meanwhile), it takes its turn.

mod beside;
mod circuit;
mod plan;
mod program;
mod residency;
mod reuse;
mod setup;
mod stages;
mod staging;

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use cuzk_gpu::ntt::NttTables;
use cuzk_gpu::sparse::{ChunkLimit, DeviceSparse, StreamedSparse};
use cuzk_gpu::{GpuError, Lane, Pinned};
use cuzk_math::Scalar;
use cuzk_synth::{CompiledR1cs, ProvingAssignment};

use crate::keys::{PlacedPart, QueryLengths};
use crate::prover::{DeviceLock, DeviceStatus, Started};
use crate::setup::ToxicWaste;
use crate::{Parameters, ProveError, ProverBackend, QuerySums, SetupError};

pub use circuit::upload_matrices;

use circuit::*;
use plan::{MatrixBytes, Placement, Plan, Products, Program, ProofSizes};
use program::*;
use residency::*;
use reuse::Reusable;
use setup::DeviceQueries;
use stages::Stages;
use staging::*;

/// Proves on one device.
#[derive(Debug)]
pub struct GpuBackend {
    gpu: Arc<Lane>,
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
    /// The matrices of the latest compiled R1CSs whose products proofs left to the device, as the
    /// device keeps them (the weak reference names the host copy without keeping it alive), most
    /// recently used first (at most [`CACHED_CIRCUITS`]).
    matrices: Mutex<Vec<(Weak<CompiledR1cs>, Kept)>>,
    /// Page-locked staging buffers, one per proof in preparation, reused.
    staging: Reusable<Pinned<Scalar>>,
    /// Threads that copy witnesses into staging buffers, apart from the rayon global pool: there
    /// the copy queued behind syntheses' sections and, with synthesis niced, would run at its
    /// priority. `None` if none could be started: the global pool copies then
    /// (measured: docs/performance.md, "Why the code is as it is").
    copies: Option<rayon::ThreadPool>,
    /// Streams of this device for MSMs side by side: H's (scheduled first) and the other four.
    lanes: Mutex<Option<[Arc<Lane>; 5]>>,
    /// The streams of a proof run beside the region in progress (see
    /// [`DeviceLock::acquire_beside`]), all scheduled first; held through such a proof, so that
    /// there is one at a time.
    beside: Mutex<Option<Streams>>,
    /// Bytes the device's memory pool was made to hold for MSMs side by side (see
    /// [`Lane::reserve_pool`]).
    pool_reserved: AtomicUsize,
    /// Parameter sets whose longest query has this many points or more go to the device with their
    /// window multiples when those fit.
    multiples_from: usize,
    /// Device bytes of points and matrices the plans keep resident at most (see
    /// [`GpuBackend::resident_points_up_to`]).
    resident_cap: usize,
}

/// The default of [`GpuBackend::window_multiples_from`]: from 2^20 G1 points multiples pay; below,
/// the shared 2^18 buckets weigh more against fewer entries
/// (measured: docs/performance.md, "Why the code is as it is").
const MULTIPLES_FROM: usize = 1 << 20;

impl GpuBackend {
    /// The backend of device `ordinal`.
    pub fn new(ordinal: usize) -> Result<Self, GpuError> {
        Ok(Self::with_gpu(Lane::new(ordinal)?))
    }

    /// A backend on an opened device (whose memory limit, if any, it plans with).
    pub fn with_gpu(gpu: Arc<Lane>) -> Self {
        let name = format!("cuda:{} ({})", gpu.ordinal(), gpu.name());
        GpuBackend {
            gpu,
            name,
            srs: Mutex::default(),
            region: Mutex::new(()),
            tables: Mutex::new(HashMap::new()),
            index: Mutex::default(),
            matrices: Mutex::default(),
            staging: Reusable::default(),
            copies: staging_pool(COPY_THREADS),
            lanes: Mutex::new(None),
            beside: Mutex::new(None),
            pool_reserved: AtomicUsize::new(0),
            multiples_from: MULTIPLES_FROM,
            resident_cap: usize::MAX,
        }
    }

    /// Its staging copies on `threads` threads instead of [`COPY_THREADS`] (`gpus.gpu_threads`
    /// of the daemon's configuration).
    pub fn with_staging_threads(mut self, threads: usize) -> Self {
        self.copies = staging_pool(threads);
        self
    }

    /// Places parameter sets whose longest query has at least `points` points with their window
    /// multiples when the device has room (fewer additions per MSM for ⌈255/c⌉ times the points'
    /// memory); `usize::MAX` never does.
    pub fn window_multiples_from(mut self, points: usize) -> Self {
        self.multiples_from = points;
        self
    }

    /// Keeps at most `bytes` of parameter points and R1CS matrices resident on the device,
    /// streaming the rest from host memory: room left for other work on the device, or streaming
    /// tried on a large one.
    pub fn resident_points_up_to(mut self, bytes: usize) -> Self {
        self.resident_cap = bytes;
        self
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
        // `placed` goes with its arm: the matrices it held are no longer read below.
        let sums = match self.place(params, p, index, stages) {
            Ok(placed) => self.lanes().and_then(|lanes| {
                let streams = Streams {
                    main: Arc::clone(&self.gpu),
                    lanes,
                };
                self.run(&streams, &placed, params, p, stages, true)
            }),
            Err(e) => Err(e),
        };
        if let Ok(bytes) = self.gpu.memory_outside_pool() {
            stages.push("device_outside_pool_bytes", bytes as f64);
        }
        if sums.as_ref().is_err_and(GpuError::is_out_of_memory) {
            // Plans count what cuzk allocates, not what the device takes besides within the
            // budget, so a plan that fitted may still run short: a circuit whose proof ran short,
            // in placing or in running, streams its matrices from now on
            // (measured: docs/performance.md, "Why the code is as it is"). Best effort: the
            // proof's own error is what its caller needs.
            if let Some(compiled) = &p.products {
                let _ = self.stream_matrices(compiled);
            }
            // The proof's buffers are gone: what the pool keeps of them goes back, so that the
            // retry does not look for its buffers among those pieces again. Pieces are the
            // suspect where a buffer was refused though its plan fitted, not yet confirmed
            // (measured: docs/performance.md, "Why the code is as it is").
            let _ = self.gpu.release_unused();
        }
        sums
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
        let sizes = proof_sizes(params, p.log_n, p.witness, p.products.as_deref());
        let srs = self.srs(params, &sizes, stages)?;
        // After the SRS, whose plan counts them. Deferred by the host, they are made on the device
        // even if memory has shrunk since: streamed, which takes least.
        let matrices = match &p.products {
            Some(compiled) => {
                let matrices = match self.cached_matrices(compiled) {
                    Some(cached) => cached,
                    None => {
                        let start = std::time::Instant::now();
                        let products = self
                            .device_products(params, compiled, p.log_n, p.witness)
                            .unwrap_or(Products::StreamedMatrices);
                        let made = self.matrices(compiled, products)?;
                        stages.push("matrices_place_ms", start.elapsed().as_secs_f64() * 1e3);
                        made
                    }
                };
                let streamed = matrices.products() == Products::StreamedMatrices;
                stages.push("matrices_streamed", f64::from(u8::from(streamed)));
                Some(matrices)
            }
            None => None,
        };
        let index = self.query_index(index)?;
        Ok(Placed {
            tables,
            srs,
            matrices,
            index,
        })
    }

    /// All a proof beside the region in progress reads, if it is on the device and its
    /// working memory fits what the region leaves; else what is missing.
    fn placed(
        &self,
        params: &Parameters,
        p: &Prepared,
        index: &IndexSource,
    ) -> Result<Placed, Missing> {
        let IndexSource::Cached(index) = index else {
            return Err(Missing::Index);
        };
        let tables = self
            .tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&p.log_n)
            .cloned()
            .ok_or(Missing::Tables)?;
        let srs = match self.placed_here(params).map_err(|_| Missing::Set)? {
            Some(queries) => Arc::clone(&queries.srs),
            None => self.cache().get(&SrsKey::of(params)).ok_or(Missing::Set)?,
        };
        if !srs.all_resident() {
            return Err(Missing::StreamedQueries);
        }
        // Beside the region, with resident matrices only: streaming them would take the copy
        // engine from the region's streamed MSMs.
        let matrices = match &p.products {
            Some(compiled) => Some(self.cached_matrices(compiled).ok_or(Missing::Matrices)?),
            None => None,
        };
        let products = match &matrices {
            Some(matrices) if matrices.products() == Products::StreamedMatrices => {
                return Err(Missing::Matrices)
            }
            Some(_) => Products::ResidentMatrices,
            None => Products::Host,
        };
        let held_back = self.gpu.held_back();
        let free = self
            .gpu
            .memory_beside()
            .map_err(|_| Missing::Room(0, 0, held_back))?
            .0;
        let sizes = proof_sizes(params, p.log_n, p.witness, p.products.as_deref());
        let side_by_side = Plan::of(&sizes, srs.queries, Program::SideBySide, products);
        let needed = side_by_side.working_bytes + cuzk_gpu::MEMORY_MARGIN;
        if needed > free {
            return Err(Missing::Room(free, needed, held_back));
        }
        Ok(Placed {
            tables,
            srs,
            matrices,
            index: Arc::clone(index),
        })
    }

    /// How the device makes a proof's a, b and c from its witness with `compiled`'s matrices:
    /// from resident ones if they are there already or fit beside the set's plan within the
    /// device's budget, else from streamed ones if the witness fits beside H's two vectors.
    /// `None`: the host computes them before the device is taken.
    fn device_products(
        &self,
        params: &Parameters,
        compiled: &Arc<CompiledR1cs>,
        log_n: u32,
        witness: usize,
    ) -> Option<Products> {
        // As they are kept: streamed ones stay so (see `stream_matrices`).
        if let Some(cached) = self.cached_matrices(compiled) {
            return Some(cached.products());
        }
        let sizes = proof_sizes(params, log_n, witness, Some(compiled));
        let capacity = self.gpu.budget().saturating_sub(cuzk_gpu::MEMORY_MARGIN);
        let cached = match self.placed_here(params) {
            Ok(Some(queries)) => Some(queries.srs.queries),
            Err(_) => None,
            Ok(None) => self
                .cache()
                .find(&SrsKey::of(params))
                .map(|srs| srs.queries),
        };
        let queries = match cached {
            Some(queries) => queries,
            None => {
                Plan::new(
                    &sizes,
                    capacity,
                    self.multiples_for(params),
                    self.resident_cap,
                )
                .ok()?
                .queries
            }
        };
        let fits = |program, products| {
            let plan = Plan::of(&sizes, queries, program, products);
            plan.peak_bytes <= capacity && plan.kept_bytes() <= self.resident_cap
        };
        let all_resident = !queries.contains(&Placement::Streamed);
        let resident = (all_resident && fits(Program::SideBySide, Products::ResidentMatrices))
            || fits(Program::OneAtATime, Products::ResidentMatrices);
        if resident {
            return Some(Products::ResidentMatrices);
        }
        fits(Program::OneAtATime, Products::StreamedMatrices).then_some(Products::StreamedMatrices)
    }

    /// Five lanes of this backend's device, made on first use: H's chain (scheduled first) and
    /// the four MSMs that run beside it.
    fn lanes(&self) -> Result<[Arc<Lane>; 5], GpuError> {
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
                main: gpu.beside_lane()?,
                lanes: [
                    gpu.beside_lane()?,
                    gpu.beside_lane()?,
                    gpu.beside_lane()?,
                    gpu.beside_lane()?,
                    gpu.beside_lane()?,
                ],
            });
        }
        Ok(beside)
    }

    /// A prepared proof's device work: beside the region in progress when it may, else in its
    /// turn, holding `device` for the region only.
    fn prove_prepared(
        &self,
        params: &Parameters,
        mut prepared: Prepared,
        index: IndexSource,
        device: &dyn DeviceLock,
        mut stages: Stages,
    ) -> Result<Started, ProveError> {
        if let Some((sums, beside)) =
            self.prove_beside(params, &mut prepared, &index, device, &mut stages)
        {
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

    /// One proof on the streams beside the region in progress, if `device` allows it and all it
    /// reads is placed (what is missing goes into `stages`). `None` when it did not run, or
    /// failed there (the device may have run short of the memory the region in progress took
    /// meanwhile): then it takes its turn.
    fn prove_beside(
        &self,
        params: &Parameters,
        p: &mut Prepared,
        index: &IndexSource,
        device: &dyn DeviceLock,
        stages: &mut Stages,
    ) -> Option<(QuerySums, Stages)> {
        if !device.may_go_beside() {
            return None;
        }
        let placed = self
            .placed(params, p, index)
            .inspect_err(|missing| missing.record(stages))
            .ok()?;
        let _hold = device.acquire_beside()?;
        let streams = self.beside_streams().ok()?;
        let streams = streams.as_ref()?;
        let mut stages = Stages::default();
        let sums = self.run(streams, &placed, params, p, &mut stages, false);
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

impl ProverBackend for GpuBackend {
    fn name(&self) -> &str {
        &self.name
    }

    /// Host preparation (padding, index lists) runs before the device is taken; the device region
    /// is everything from the first upload to the last MSM.
    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        let mut stages = Stages::default();
        let start = std::time::Instant::now();
        let (prepared, index, spent) = self.prepare(params, assignment, &mut stages)?;
        stages.push("prep_ms", start.elapsed().as_secs_f64() * 1e3);
        freed_beside(spent, device, || {
            self.prove_prepared(params, prepared, index, device, stages)
        })
    }

    /// Placed as a proof of `params` would place it (its NTT tables first, its working memory
    /// reserved beside it, the matrices of `compiled` after it, resident or ready to stream),
    /// after the proof on the device if there is one.
    fn preload(
        &self,
        params: &Parameters,
        compiled: Option<&Arc<CompiledR1cs>>,
    ) -> Result<u64, ProveError> {
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
            &proof_sizes(params, log_n, witness, compiled.map(|c| &**c)),
            &mut Stages::default(),
        )?;
        if let Some(compiled) = compiled {
            if let Some(products) = self.device_products(params, compiled, log_n, witness) {
                self.matrices(compiled, products)?;
            }
        }
        Ok(srs.resident_bytes().unwrap_or(0))
    }

    /// A set kept on the device without a host copy ([`ProverBackend::settle`]) leaves the cache
    /// here; its memory goes with the last [`Parameters`] that hold it.
    fn evict(&self, params: &Parameters) -> u64 {
        let Ok(kept) = self.placed_here(params) else {
            return 0;
        };
        let key = match kept {
            Some(queries) => &queries.srs.key,
            None => &SrsKey::of(params),
        };
        let mut cache = self.cache();
        let removed = cache.remove(key);
        self.gpu.hold_back(cache.held_back());
        drop(cache);
        match kept {
            Some(queries) => queries.srs.device_bytes() as u64,
            None => removed.and_then(|srs| srs.resident_bytes()).unwrap_or(0),
        }
    }

    fn test_parameters(
        &self,
        compiled: &CompiledR1cs,
        toxic: &ToxicWaste,
    ) -> Option<Result<Parameters, SetupError>> {
        Some(self.test_key(compiled, toxic))
    }

    /// The cached set itself, shared: the cache then counts it as in use for as long as the
    /// part lives, so it is never evicted for room (there would be no host copy to place it
    /// from again).
    fn settle(&self, params: &Parameters) -> Option<PlacedPart> {
        if params.placed.is_some() {
            return None;
        }
        let srs = Arc::clone(self.cache().find(&SrsKey::of(params))?);
        let ordinal = self.gpu.ordinal();
        let all_resident = srs.all_resident();
        all_resident.then(|| PlacedPart::new(self.name.clone(), DeviceQueries { ordinal, srs }))
    }

    /// The staging buffer of a proof of `params`.
    fn host_bytes_per_proof(&self, params: &Parameters, products_deferred: bool) -> u64 {
        // The domain has n − 1 H points; the witness is one IC point per input, one L per aux.
        let lengths = params.lengths();
        let witness = params.vk.ic.len() + lengths.l;
        let len = staging_len(lengths.h + 1, witness, products_deferred);
        (staging_capacity(len) * std::mem::size_of::<Scalar>()) as u64
    }

    /// On the device, with the compiled matrices (uploaded once per circuit) when they fit, else
    /// streamed from host memory where the witness fits beside H's two vectors.
    fn computes_products(&self, params: &Parameters, compiled: &Arc<CompiledR1cs>) -> bool {
        let lengths = params.lengths();
        let log_n = (lengths.h + 1).trailing_zeros();
        self.device_products(params, compiled, log_n, params.vk.ic.len() + lengths.l)
            .is_some()
    }

    /// Window multiples included; `None` for a set streamed from host memory.
    fn resident(&self, params: &Parameters) -> Option<u64> {
        if let Some(queries) = self.placed_here(params).ok()? {
            return Some(queries.srs.device_bytes() as u64);
        }
        self.cache()
            .find(&SrsKey::of(params))
            .and_then(|srs| srs.resident_bytes())
    }

    fn plan(&self, params: &Parameters) -> Option<String> {
        let placed = match self.placed_here(params).ok()? {
            Some(queries) => queries.srs.plan,
            None => self.cache().find(&SrsKey::of(params))?.plan,
        };
        Some(match placed {
            Some(plan) => plan.summary(),
            None => "queries made on this device, resident".to_owned(),
        })
    }

    fn plan_ahead(
        &self,
        inputs: usize,
        lengths: QueryLengths,
        r1cs_bytes: Option<u64>,
    ) -> Option<Result<String, String>> {
        let sizes = ProofSizes::ahead(inputs, lengths, r1cs_bytes.map(MatrixBytes::of_file));
        // As a set is placed: in what is free now (what is held back for proofs beside a region
        // included), less the margin left to the driver.
        let (free, _) = self.gpu.memory_beside().ok()?;
        let room = free.saturating_sub(cuzk_gpu::MEMORY_MARGIN);
        let multiples = self.multiples_for_lengths(lengths);
        Some(
            Plan::new(&sizes, room, multiples, self.resident_cap)
                .map(|plan| plan.summary())
                .map_err(|refused| refused.to_string()),
        )
    }

    fn device(&self) -> Result<Option<DeviceStatus>, ProveError> {
        let (free, total) = self.gpu.memory()?;
        Ok(Some(DeviceStatus {
            ordinal: self.gpu.ordinal(),
            name: self.gpu.name().to_owned(),
            total_bytes: total as u64,
            free_bytes: free as u64,
            budget_bytes: self.gpu.budget() as u64,
            peak_bytes: self.gpu.held()?.1 as u64,
        }))
    }
}

/// What a proof of `params` over 2^`log_n` rows and `witness` variables is planned from;
/// `compiled`: the matrices the device would compute a, b and c with.
fn proof_sizes(
    params: &Parameters,
    log_n: u32,
    witness: usize,
    compiled: Option<&CompiledR1cs>,
) -> ProofSizes {
    ProofSizes {
        log_n,
        witness,
        inputs: params.vk.ic.len(),
        lengths: params.lengths(),
        matrices: compiled.map(matrix_bytes),
    }
}

/// Device bytes of `compiled`'s matrices, resident or streamed.
fn matrix_bytes(compiled: &CompiledR1cs) -> MatrixBytes {
    let rows = sparse_rows(compiled);
    MatrixBytes {
        resident: DeviceSparse::bytes_of(compiled.coeffs(), &rows),
        streamed: StreamedSparse::device_bytes(compiled.coeffs(), &rows, ChunkLimit::DEFAULT),
    }
}

/// What a proof beside the region in progress lacked ([`GpuBackend::placed`]), kept with its
/// stages so that a device run says why a CRITICAL proof took its turn: `beside_missing` is the
/// code in brackets, and for room `beside_free_bytes`, `beside_needed_bytes` and
/// `beside_held_back_bytes` (0: the set was not kept for such proofs, nothing is held back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Missing {
    /// The circuit's query index lists are not cached (1).
    Index,
    /// No NTT tables of its domain on the device (2).
    Tables,
    /// Its parameter set is not on the device (3).
    Set,
    /// A query of its set is streamed (4).
    StreamedQueries,
    /// Its matrices are not on the device (5).
    Matrices,
    /// Its working memory (the second figure) does not fit what the region leaves (the first),
    /// of which the third was held back for such proofs (6).
    Room(usize, usize, usize),
}

impl Missing {
    fn record(&self, stages: &mut Stages) {
        let code = match self {
            Missing::Index => 1.0,
            Missing::Tables => 2.0,
            Missing::Set => 3.0,
            Missing::StreamedQueries => 4.0,
            Missing::Matrices => 5.0,
            Missing::Room(..) => 6.0,
        };
        stages.push("beside_missing", code);
        if let Missing::Room(free, needed, held_back) = *self {
            stages.push("beside_free_bytes", free as f64);
            stages.push("beside_needed_bytes", needed as f64);
            stages.push("beside_held_back_bytes", held_back as f64);
        }
    }
}
