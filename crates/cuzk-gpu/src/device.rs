//! One CUDA device: its context, the embedded kernel module, and its resources.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::{self, CUdevice_attribute};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr,
    DriverError, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;

use crate::error::{DriverContext, GpuError, MemoryAccount};
use crate::memory::{DevicePool, MemoryBudget};
use crate::timing::Timing;

/// One CUDA device as cuzk opened it: its context, the embedded kernels (looked up once), the
/// memory pool that keeps what cuzk holds there within its budget. Shared by its lanes.
#[derive(Debug)]
struct Device {
    ctx: Arc<CudaContext>,
    module: Arc<CudaModule>,
    kernels: Mutex<HashMap<&'static str, CudaFunction>>,
    ordinal: usize,
    name: String,
    multiprocessors: u32,
    /// Shared memory one multiprocessor has for its blocks, in bytes.
    shared_per_multiprocessor: u32,
    /// The pool every allocation comes from, capped at the device's budget.
    pool: Arc<DevicePool>,
    /// Bytes of the budget that only lanes made by [`Lane::beside_lane`] plan with (see
    /// [`Lane::hold_back`]).
    held_back: AtomicUsize,
}

/// A lane of work on a device: the stream its operations run on, a second stream for copies that
/// overlap them, and the device's kernels and memory, shared with its other lanes. Every
/// operation of this crate runs on the lane it is given; lanes of one device run side by side.
/// Cheap to share (`Arc`).
#[derive(Debug)]
pub struct Lane {
    device: Arc<Device>,
    stream: Arc<CudaStream>,
    /// The stream's priority (0 unless a priority lane), which the side lane shares.
    priority: i32,
    /// Whether it plans with the device's held-back bytes (a beside lane, and lanes made from it).
    beside: bool,
    copy_stream: Arc<CudaStream>,
    /// A lane for work inside one operation that may overlap the rest of it, made when first asked.
    side: OnceLock<Arc<Lane>>,
    /// Most free bytes `memory` reports (usize::MAX: no limit), for sharing a device between
    /// backends and for testing the paths taken when memory is short.
    memory_limit: AtomicUsize,
    /// Pippenger passes run on this lane: an MSM short of memory splits its points into many
    /// small passes, each costing more per point, and stage metrics show how many it took.
    msm_passes: AtomicU64,
    /// Streamed passes' events until read (see [`Lane::take_copy_wait_ms`]).
    copy_waits: Mutex<CopyWaits>,
}

/// Streamed passes kept for [`Lane::take_copy_wait_ms`] at most: ~4 a proof's streamed queries'
/// worth of 256 MiB ranges.
const COPY_WAITS_KEPT: usize = 1024;

/// Each streamed pass's (the stream ready for it, its points copied) events, oldest first, and
/// whether older ones were dropped unread.
#[derive(Debug, Default)]
struct CopyWaits {
    passes: VecDeque<(CudaEvent, CudaEvent)>,
    dropped: bool,
}

/// Makes the threads that wait for device `ordinal` (stream and event synchronisations, copies
/// back) sleep until it is done instead of spinning, before its primary context is first used.
/// CUDA's default with fewer contexts than cores is to spin: a proof's region thread and its four
/// MSM lanes then burn a core each for the whole device region, cores that synthesis needs
/// (measured: docs/performance.md, "Why the code is as it is"). Waking takes microseconds,
/// against regions of tens of milliseconds.
fn block_while_waiting(ordinal: usize) -> Result<(), GpuError> {
    cudarc::driver::result::init().call("cuInit")?;
    let ordinal = i32::try_from(ordinal).map_err(|_| GpuError::InvalidInput {
        what: "device ordinal",
        reason: format!("{ordinal} is not a CUDA device ordinal"),
    })?;
    let device = cudarc::driver::result::device::get(ordinal).call("cuDeviceGet")?;
    let flags = sys::CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC as u32;
    // SAFETY: `device` is a handle the driver just returned and `flags` a valid scheduling flag;
    // the call changes no memory of ours.
    unsafe { sys::cuDevicePrimaryCtxSetFlags_v2(device, flags) }
        .result()
        .call("cuDevicePrimaryCtxSetFlags")
}

/// Kernels with the largest stack frames: each group's pair-round inversion keeps its 64 running
/// products in local memory (G2: 6 KiB a thread; `ptxas --resource-usage`).
const LARGEST_FRAMES: [&str; 2] = [
    <blstrs::G1Affine as crate::msm::MsmAffine>::KERNELS.pair_invert,
    <blstrs::G2Affine as crate::msm::MsmAffine>::KERNELS.pair_invert,
];

/// Makes the driver reserve now the local memory the kernels' stack frames take, and returns how
/// much that is. The driver reserves a frame for every thread the device can hold, outside any
/// memory pool, when a kernel first needs it: a budget counted before then was that much short
/// (measured: docs/performance.md, "Why the code is as it is").
fn reserve_local_memory(ctx: &CudaContext, module: &Arc<CudaModule>) -> Result<usize, GpuError> {
    let mut frame = 0;
    for name in LARGEST_FRAMES {
        let function = module
            .load_function(name)
            .map_err(|source| GpuError::MissingKernel { name, source })?;
        let bytes = function
            .get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
            .call("cuFuncGetAttribute (local size)")?;
        frame = frame.max(usize::try_from(bytes).unwrap_or(0));
    }
    let (before, _) = ctx.mem_get_info().call("cuMemGetInfo")?;
    ctx.set_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE, frame)
        .call("cuCtxSetLimit (stack size)")?;
    let (after, _) = ctx.mem_get_info().call("cuMemGetInfo")?;
    Ok(before.saturating_sub(after))
}

impl Lane {
    /// Opens device `ordinal` and loads the kernels into it (see [`crate::KERNELS_FILE_ENV`]),
    /// with the budget of what the device has free now.
    pub fn new(ordinal: usize) -> Result<Arc<Self>, GpuError> {
        Self::open(ordinal, MemoryBudget::FreeAtStart)
    }

    /// Opens device `ordinal` with `budget` for everything cuzk holds on it: the first open of
    /// a device in the process sets its budget, later ones share it.
    pub fn open(ordinal: usize, budget: MemoryBudget) -> Result<Arc<Self>, GpuError> {
        crate::probe()?;
        let image = crate::kernel_image()?;
        // Best effort: a context that spins proves the same, only slower under host load.
        let _ = block_while_waiting(ordinal);
        let ctx = CudaContext::new(ordinal).call("cuCtxCreate")?;
        let module = ctx
            .load_module(Ptx::from_binary(image.to_vec()))
            .call("cuModuleLoadData")?;
        let stream = ctx.new_stream().call("cuStreamCreate")?;
        let copy_stream = ctx.new_stream().call("cuStreamCreate")?;
        let name = ctx.name().call("cuDeviceGetName")?;
        let multiprocessors = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .call("cuDeviceGetAttribute")? as u32;
        let shared_per_multiprocessor = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
            .call("cuDeviceGetAttribute")? as u32;
        let local = reserve_local_memory(&ctx, &module)?;
        let pool = DevicePool::of(&ctx, ordinal, budget, local)?;
        let device = Device {
            ctx,
            module,
            kernels: Mutex::default(),
            ordinal,
            name,
            multiprocessors,
            shared_per_multiprocessor,
            pool,
            held_back: AtomicUsize::new(0),
        };
        Ok(Arc::new(Lane {
            device: Arc::new(device),
            stream,
            priority: 0,
            beside: false,
            copy_stream,
            side: OnceLock::new(),
            memory_limit: AtomicUsize::new(usize::MAX),
            msm_passes: AtomicU64::new(0),
            copy_waits: Mutex::default(),
        }))
    }

    /// Another lane on the same device, context and kernels, with streams of its own: operations
    /// on different lanes may run at the same time (small MSMs side by side fill a device that
    /// one alone leaves part idle). It starts with this lane's memory limit; each lane plans
    /// with the free memory the device reports, so callers running lanes together make sure that
    /// the sum of what they need fits.
    pub fn lane(&self) -> Result<Arc<Self>, GpuError> {
        self.lane_with(
            self.device.ctx.new_stream().call("cuStreamCreate")?,
            0,
            self.beside,
        )
    }

    /// A [`lane`](Self::lane) whose kernels the device schedules first: when lanes share the
    /// device, its pending blocks start before theirs as SMs come free. For the chain that bounds
    /// a group of lanes' wall time.
    pub fn priority_lane(&self) -> Result<Arc<Self>, GpuError> {
        self.priority_lane_drawing(self.beside)
    }

    /// A [`priority_lane`](Self::priority_lane) for proofs that run beside a region in progress:
    /// it and the lanes made from it plan with the bytes held back for them
    /// ([`Lane::hold_back`]), which other lanes leave free.
    pub fn beside_lane(&self) -> Result<Arc<Self>, GpuError> {
        self.priority_lane_drawing(true)
    }

    fn priority_lane_drawing(&self, beside: bool) -> Result<Arc<Self>, GpuError> {
        self.device.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let (_, greatest) = cudarc::driver::result::stream::get_priority_range()
            .call("cuCtxGetStreamPriorityRange")?;
        self.lane_with(
            self.device
                .ctx
                .new_stream_with_priority(greatest)
                .call("cuStreamCreateWithPriority")?,
            greatest,
            beside,
        )
    }

    /// This lane's side lane: a lane of the same priority, made once and kept, for an operation
    /// that splits its own work over two streams (callers order it with [`Lane::wait_for`]).
    pub fn side_lane(&self) -> Result<&Arc<Self>, GpuError> {
        if let Some(side) = self.side.get() {
            return Ok(side);
        }
        self.device.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let stream = self
            .device
            .ctx
            .new_stream_with_priority(self.priority)
            .call("cuStreamCreateWithPriority")?;
        let side = self.lane_with(stream, self.priority, self.beside)?;
        // A lane is used by one thread at a time; were another to set it first, theirs is kept.
        Ok(self.side.get_or_init(|| side))
    }

    /// The side lane, if [`Lane::side_lane`] has made it.
    pub(crate) fn side_lane_if_made(&self) -> Option<&Arc<Self>> {
        self.side.get()
    }

    fn lane_with(
        &self,
        stream: Arc<CudaStream>,
        priority: i32,
        beside: bool,
    ) -> Result<Arc<Self>, GpuError> {
        Ok(Arc::new(Lane {
            device: Arc::clone(&self.device),
            stream,
            priority,
            beside,
            copy_stream: self.device.ctx.new_stream().call("cuStreamCreate")?,
            side: OnceLock::new(),
            memory_limit: AtomicUsize::new(self.memory_limit.load(Ordering::Relaxed)),
            msm_passes: AtomicU64::new(0),
            copy_waits: Mutex::default(),
        }))
    }

    /// The first device, or why there is none (for tests and simple callers).
    pub fn first() -> Result<Arc<Self>, GpuError> {
        Self::new(0)
    }

    /// The device's index among the driver's devices.
    pub fn ordinal(&self) -> usize {
        self.device.ordinal
    }

    pub fn name(&self) -> &str {
        &self.device.name
    }

    pub fn multiprocessors(&self) -> u32 {
        self.device.multiprocessors
    }

    /// Bytes of shared memory one multiprocessor has for the blocks it runs (228 KiB on sm_90).
    pub fn shared_per_multiprocessor(&self) -> u32 {
        self.device.shared_per_multiprocessor
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.device.ctx
    }

    /// Waits until everything queued on this lane's stream has run.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream.synchronize().call("cuStreamSynchronize")
    }

    /// Makes the device's memory pool hold `bytes` more or less at once (allocated on this stream
    /// and freed; the pool keeps what is freed), so that lanes allocating side by side later draw
    /// on memory already mapped instead of growing the pool in the middle of their work.
    pub fn reserve_pool(&self, bytes: usize) -> Result<(), GpuError> {
        // SAFETY: never read or written; freed at once.
        let buffer = unsafe { self.stream.alloc::<u8>(bytes) }.call("cuMemAllocAsync (pool)")?;
        drop(buffer);
        self.synchronize()
    }

    /// A device buffer of `len` zeros on this lane's stream (`what` names it in an error). See
    /// [`Lane::allocated`] for an allocation the driver refuses at first.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
        what: &'static str,
    ) -> Result<CudaSlice<T>, GpuError> {
        self.allocated(what, || self.stream.alloc_zeros::<T>(len))
    }

    /// A device buffer of `len` elements on this lane's stream, not initialised (`what` names
    /// it in an error). See [`Lane::allocated`] for an allocation the driver refuses at first.
    ///
    /// # Safety
    /// Every element is written (by a copy or a kernel on this stream) before it is read.
    pub unsafe fn uninitialised<T: DeviceRepr>(
        &self,
        len: usize,
        what: &'static str,
    ) -> Result<CudaSlice<T>, GpuError> {
        // SAFETY: the caller writes every element before reading it.
        self.allocated(what, || unsafe { self.stream.alloc::<T>(len) })
    }

    /// A device copy of `values`, made on this lane's stream (`what` names it in an error). See
    /// [`Lane::allocated`] for an allocation the driver refuses at first.
    pub fn upload<T: DeviceRepr>(
        &self,
        values: &[T],
        what: &'static str,
    ) -> Result<CudaSlice<T>, GpuError> {
        self.allocated(what, || self.stream.clone_htod(values))
    }

    /// Runs `alloc`; when the driver is out of memory, once this lane's queued frees have
    /// reached the pool and the pool has given back what it keeps unused, runs it again. A
    /// plan sized within the budget can still be refused: the pool's free blocks may lie in
    /// pieces none of which holds the buffer, while a pool at its budget maps no new one
    /// (seen on an H100 with 16 GiB free: one partition in 19, docs/perf-notes.md).
    fn allocated<T>(
        &self,
        what: &'static str,
        alloc: impl Fn() -> Result<T, DriverError>,
    ) -> Result<T, GpuError> {
        match alloc() {
            Err(error) if error.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                self.synchronize()?;
                self.device.pool.trim()?;
                alloc().call(what)
            }
            result => result.call(what),
        }
    }

    /// Once the device is idle, gives back what the memory pool keeps unused (see
    /// [`Lane::memory`]): after an allocation failed, the next attempt then maps what it needs
    /// anew instead of looking for it among the pieces earlier work left.
    pub fn release_unused(&self) -> Result<(), GpuError> {
        self.device.ctx.synchronize().call("cuCtxSynchronize")?;
        self.device.pool.trim()
    }

    /// The stream the layer's operations run on unless given another.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Orders the work enqueued on this stream from now on after everything enqueued on `other`'s
    /// stream so far (an event between the two; the host does not wait): a lane reading what
    /// another stream produced.
    pub fn wait_for(&self, other: &Lane) -> Result<(), GpuError> {
        self.stream.join(&other.stream).call("cuStreamWaitEvent")
    }

    /// A second stream for copies that overlap the kernels on [`Lane::stream`].
    pub fn copy_stream(&self) -> &Arc<CudaStream> {
        &self.copy_stream
    }

    /// A kernel of the embedded module by its `extern "C"` name.
    pub fn kernel(&self, name: &'static str) -> Result<CudaFunction, GpuError> {
        let mut kernels = self
            .device
            .kernels
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(function) = kernels.get(name) {
            return Ok(function.clone());
        }
        let function = self
            .device
            .module
            .load_function(name)
            .map_err(|source| GpuError::MissingKernel { name, source })?;
        kernels.insert(name, function.clone());
        Ok(function)
    }

    /// (free, total) bytes of device memory now: what cuzk may still allocate on the device —
    /// what the device has free plus what the pool holds unused (allocations take it first),
    /// within the device's budget less what is allocated — capped by [`Lane::limit_memory`], less
    /// the bytes held back for proofs beside a region unless this lane runs them.
    pub fn memory(&self) -> Result<(usize, usize), GpuError> {
        self.memory_drawing(self.beside)
    }

    /// As [`Lane::memory`] for a lane made by [`Lane::beside_lane`]: whether a proof beside the
    /// region in progress would fit.
    pub fn memory_beside(&self) -> Result<(usize, usize), GpuError> {
        self.memory_drawing(true)
    }

    /// [`Lane::memory`], with the held-back bytes when `beside` (a lane that may use them).
    fn memory_drawing(&self, beside: bool) -> Result<(usize, usize), GpuError> {
        let (free, total) = self.device.ctx.mem_get_info().call("cuMemGetInfo")?;
        let (reserved, used) = self.device.pool.usage()?;
        let others = if beside { 0 } else { self.held_back() };
        let available = free
            .saturating_add(reserved.saturating_sub(used))
            .min(self.device.pool.limit().saturating_sub(used))
            .min(self.memory_limit.load(Ordering::Relaxed))
            .saturating_sub(others);
        Ok((available, total))
    }

    /// Holds `bytes` of the device's budget back for proofs beside a region in progress (a
    /// WinningPoSt while a PoRep partition holds the device): lanes not made by
    /// [`Lane::beside_lane`] leave them out of [`Lane::memory`], so what sizes itself from it
    /// (MSM passes, chunks) leaves them free. Buffers of fixed size may still take them (see
    /// [`Lane::ensure_fits`]). Replaces what was held back before; 0 holds nothing back.
    pub fn hold_back(&self, bytes: usize) {
        self.device.held_back.store(bytes, Ordering::Relaxed);
    }

    /// The bytes [`Lane::hold_back`] holds back now.
    pub fn held_back(&self) -> usize {
        self.device.held_back.load(Ordering::Relaxed)
    }

    /// As [`Lane::memory`], once the work queued on this lane's stream has run: buffers freed
    /// in stream order go back to the pool only as the stream reaches their free, so right after
    /// dropping some (H's vectors, a proof's earlier MSM) `memory` can count them as still held.
    /// For sizing work that follows on the same stream, which would wait for that work anyway.
    pub fn settled_memory(&self) -> Result<(usize, usize), GpuError> {
        self.synchronize()?;
        self.memory()
    }

    /// Device bytes taken since the device was opened by anything but cuzk's buffers: the
    /// driver's local memory for kernels with stack frames (reserved for every thread the device
    /// can hold, outside the budget), other processes. What a plan that fitted the budget may
    /// find missing.
    pub fn memory_outside_pool(&self) -> Result<usize, GpuError> {
        let info = self.device.ctx.mem_get_info().call("cuMemGetInfo")?;
        self.device.pool.outside_since_start(info)
    }

    /// Bytes cuzk may hold on this device (its buffers, outside the context): the budget it was
    /// opened with.
    pub fn budget(&self) -> usize {
        self.device.pool.limit()
    }

    /// Whether the driver refuses allocations past [`Lane::budget`] (pools of a maximum size);
    /// otherwise plans alone keep to it.
    pub fn budget_enforced(&self) -> bool {
        self.device.pool.enforced()
    }

    /// (now, peak): bytes cuzk's buffers hold on this device, and the most they have held.
    pub fn held(&self) -> Result<(usize, usize), GpuError> {
        Ok((self.device.pool.usage()?.0, self.device.pool.peak()?))
    }

    /// Pippenger passes run on this lane so far (see the field).
    pub fn msm_passes(&self) -> u64 {
        self.msm_passes.load(Ordering::Relaxed)
    }

    pub(crate) fn count_msm_pass(&self) {
        self.msm_passes.fetch_add(1, Ordering::Relaxed);
    }

    /// A streamed pass on this lane: `ready`, recorded on its stream before the pass waited for
    /// its points; `copied`, recorded after their copy.
    pub(crate) fn note_copy_wait(&self, ready: CudaEvent, copied: CudaEvent) {
        let mut waits = self.copy_waits.lock().unwrap_or_else(|e| e.into_inner());
        waits.passes.push_back((ready, copied));
        if waits.passes.len() > COPY_WAITS_KEPT {
            waits.passes.pop_front();
            waits.dropped = true;
        }
    }

    /// The device time this lane's stream waited for streamed points since the last call: over
    /// each streamed pass, the time from the stream being ready for it to its points being
    /// copied, where positive. Long waits mean the copies bound the MSM, none that its sums do.
    /// Waits for the passes' copies; `None` when more passes ran than are kept.
    pub fn take_copy_wait_ms(&self) -> Result<Option<f64>, GpuError> {
        let CopyWaits { passes, dropped } =
            std::mem::take(&mut *self.copy_waits.lock().unwrap_or_else(|e| e.into_inner()));
        let mut waited = 0.0;
        for (ready, copied) in &passes {
            copied
                .synchronize()
                .call("cuEventSynchronize (points copied)")?;
            let ms = ready.elapsed_ms(copied).call("cuEventElapsedTime")?;
            waited += f64::from(ms.max(0.0));
        }
        Ok((!dropped).then_some(waited))
    }

    /// Caps the free memory this lane's operations plan with (`None`: what the device has).
    /// Operations that size themselves from [`Lane::memory`] then split or refuse their work.
    pub fn limit_memory(&self, bytes: Option<usize>) {
        self.memory_limit
            .store(bytes.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    /// Runs `f`, which enqueues work on this device's stream, and returns its result with the device
    /// time that work took in milliseconds (CUDA events around it; waits for the work to finish).
    /// For benchmarks: the clock covers the device, not host-side launch overhead before it.
    pub fn time<T>(&self, f: impl FnOnce() -> Result<T, GpuError>) -> Result<(T, f32), GpuError> {
        let (out, timing) = self.timed(f)?;
        Ok((out, timing.ms()?))
    }

    /// As [`Lane::time`], without waiting: the device time is read from the [`Timing`] later, so
    /// the host can queue what comes next while the device works.
    pub fn timed<T>(
        &self,
        f: impl FnOnce() -> Result<T, GpuError>,
    ) -> Result<(T, Timing), GpuError> {
        Timing::around(&self.stream, f)
    }

    /// Refuses an allocation of `needed` bytes that cannot fit, with a clear error instead of an
    /// out-of-memory failure half-way through a computation. The bytes held back for proofs
    /// beside a region count as free: they keep what sizes itself from [`Lane::memory`] small,
    /// but a buffer whose size is fixed may take them (a proof beside then waits its turn).
    pub fn ensure_fits(&self, what: &'static str, needed: usize) -> Result<(), GpuError> {
        let (free, _) = self.memory_beside()?;
        if needed > free {
            return Err(GpuError::OutOfMemory {
                what,
                needed,
                free,
                account: self.memory_account(),
            });
        }
        Ok(())
    }

    /// Where this device's memory is now, for an error's reader; None if the driver cannot say.
    pub fn memory_account(&self) -> Option<MemoryAccount> {
        let (pooled, held) = self.device.pool.usage().ok()?;
        Some(MemoryAccount {
            held,
            budget: self.device.pool.limit(),
            pooled,
            outside: self.memory_outside_pool().ok()?,
        })
    }
}
