//! The engine: jobs → partitions → synthesis workers → GPU queue → GPU workers (two per device,
//! sharing the device's lock around the device region only) → finalizers (epilogue, verification).
//!
//! Every partition reserves its estimated host memory from one [`MemoryBudget`] before its
//! synthesis starts and gives it back in two steps, so the budget bounds what is in flight whatever
//! the worker counts say; what the run holds beside its partitions, and the host memory it may
//! use at all, are planned before anything loads ([`memory`]). A failing partition (error or panic, in any stage) ends its own job with
//! the reason; the workers go on with the other jobs; but a device fault costs only an attempt:
//! the partition is retried once on another device, and a device that keeps failing is taken
//! out of service (`gpu`). A job's [`Priority`] orders its partitions
//! against other jobs' at every partition boundary; [`Engine::progress`] says where they are.
//! Circuits with a shape key have their R1CS recorded by the engine once and their later
//! partitions synthesized by witness only (`shapes`).

mod config;
mod device;
mod finalize;
mod job;
pub mod memory;
pub mod priority;
mod prove;
mod scheduler;
mod shapes;
mod synthesis;

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use cuzk_groth16::ProverBackend;
use tokio::runtime::Handle;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

pub use config::{ConfigError, EngineConfig, SYNTHESIS_NICE};
pub use device::{DeviceActivity, DeviceHealth, FAULTS_IN_A_ROW};
pub use job::{
    JobError, JobOutput, JobProgress, JobRequest, JobResult, JobTimings, Partition,
    PartitionMemory, PartitionedCircuit, Priority,
};
pub use memory::{
    auto_memory_budget, machine_memory, own_memory_cgroups, HostMemory, HostPlan, MemoryError,
    OwnCgroup, PlanPart,
};
pub use scheduler::MAX_PASSED_OVER;

use crate::budget::MemoryBudget;
use crate::sink::{kv, Clock, Event, TimelineSink};
use scheduler::{Ended, JobInfo, Scheduler};
use shapes::ShapeCache;

/// A running engine. Dropping it stops its workers; jobs still in flight then end with
/// [`JobError::ShutDown`].
#[derive(Debug)]
pub struct Engine {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

/// What every worker task shares.
struct Shared {
    scheduler: Mutex<Scheduler>,
    /// Woken when a synthesis may have become possible (a job came, a slot or memory freed).
    synthesis_wake: Notify,
    /// Woken when the GPU queue got a partition.
    gpu_wake: Notify,
    budget: MemoryBudget,
    /// The compiled R1CS of the circuit shapes seen.
    shapes: ShapeCache,
    /// [`EngineConfig::synthesis_nice`].
    synthesis_nice: i32,
    /// Threads of their own for CRITICAL jobs' syntheses, started on first use (`None` if they
    /// could not be): on the rayon global pool a WinningPoSt's sections queued behind every
    /// other synthesis's (14 ms alone, 52 median and 606 p90 under a 2 KiB PoRep load, H200
    /// host).
    critical_pool: OnceLock<Option<Arc<rayon::ThreadPool>>>,
    /// In backend-list order.
    devices: Vec<Arc<device::Device>>,
    clock: Clock,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

/// Awaits the result of a submitted job.
#[derive(Debug)]
pub struct JobHandle {
    id: String,
    result: watch::Receiver<Option<JobResult>>,
}

impl JobHandle {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The job's proofs, all verified, in partition order; or why it failed.
    pub async fn wait(mut self) -> JobResult {
        match self.result.wait_for(Option::is_some).await {
            Ok(result) => result.clone().unwrap_or(Err(JobError::ShutDown)),
            Err(_) => Err(JobError::ShutDown),
        }
    }
}

impl Engine {
    /// Starts the workers on the current tokio runtime: `config.partition_workers` synthesis
    /// tasks and `config.gpu_workers_per_device` GPU workers for each backend in `devices`.
    pub fn start(
        config: EngineConfig,
        devices: Vec<Arc<dyn ProverBackend>>,
        sink: Arc<dyn TimelineSink>,
    ) -> Result<Self, ConfigError> {
        config.check(devices.len())?;
        let runtime = Handle::try_current().map_err(|_| ConfigError::NoRuntime)?;
        priority::lower_rayon_pool_once(config.synthesis_nice);
        let devices: Vec<_> = devices
            .into_iter()
            .enumerate()
            .map(|(index, backend)| Arc::new(device::Device::new(index, backend)))
            .collect();
        let shared = Arc::new(Shared {
            scheduler: Mutex::new(Scheduler::new(
                config.synthesis_concurrency,
                config.group_by_circuit,
            )),
            synthesis_wake: Notify::new(),
            gpu_wake: Notify::new(),
            budget: MemoryBudget::new(config.memory_budget),
            shapes: ShapeCache::new(config.compiled_synthesis),
            synthesis_nice: config.synthesis_nice,
            critical_pool: OnceLock::new(),
            devices: devices.clone(),
            clock: Clock::new(sink),
        });
        let mut tasks: Vec<JoinHandle<()>> = (0..config.partition_workers)
            .map(|w| runtime.spawn(synthesis::worker(Arc::clone(&shared), w)))
            .collect();
        // Each device's workers, numbered across devices, then each device's lane for CRITICAL
        // partitions (see `gpu`).
        let workers = devices
            .iter()
            .flat_map(|device| {
                (0..config.gpu_workers_per_device).map(move |_| (Arc::clone(device), Priority::Low))
            })
            .chain(
                devices
                    .iter()
                    .map(|device| (Arc::clone(device), Priority::Critical)),
            );
        for (w, (device, at_least)) in workers.enumerate() {
            tasks.push(runtime.spawn(prove::worker(Arc::clone(&shared), device, w, at_least)));
        }
        Ok(Engine { shared, tasks })
    }

    /// Submits a job; a job with the same id already in flight is joined, not started again.
    pub fn submit(&self, request: JobRequest) -> JobHandle {
        let id = request.id.clone();
        let result = self.shared.scheduler().submit(request);
        self.shared.synthesis_wake.notify_waiters();
        JobHandle { id, result }
    }

    /// Cancels the job in flight with this id: its waiters get [`JobError::Cancelled`], its queued
    /// partitions and their memory are dropped, work already running on it is discarded.
    /// `false` when no such job is in flight.
    pub fn cancel(&self, id: &str) -> bool {
        let cancelled = self.shared.scheduler().cancel(id);
        match cancelled {
            Some(ended) => {
                self.shared.ended(ended, "cancelled");
                true
            }
            None => false,
        }
    }

    /// Jobs submitted and not yet ended.
    pub fn jobs_in_flight(&self) -> usize {
        self.shared.scheduler().jobs()
    }

    /// Where the partitions of the job in flight with this id are; `None` once it ended (proven,
    /// failed or cancelled) or if it never was.
    pub fn progress(&self, id: &str) -> Option<JobProgress> {
        self.shared.scheduler().progress(id)
    }

    /// Every job in flight with its progress, in submission order.
    pub fn jobs(&self) -> Vec<(String, JobProgress)> {
        self.shared.scheduler().all_progress()
    }

    /// What each device is doing, in backend-list order.
    pub fn devices(&self) -> Vec<DeviceActivity> {
        self.shared.devices.iter().map(|d| d.activity()).collect()
    }

    /// Which devices are in service, readable apart from the engine.
    pub fn health(&self) -> DeviceHealth {
        DeviceHealth::of(&self.shared.devices)
    }

    /// The memory budget, for its in-use and peak figures.
    pub fn memory(&self) -> &MemoryBudget {
        &self.shared.budget
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Shared {
    fn scheduler(&self) -> MutexGuard<'_, Scheduler> {
        // The bookkeeping stays consistent across a panic elsewhere: each method completes or
        // changes nothing.
        self.scheduler
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until `take` finds something in the scheduler, re-checking whenever `wake` fires.
    async fn wait_for<T>(
        &self,
        wake: &Notify,
        mut take: impl FnMut(&mut Scheduler) -> Option<T>,
    ) -> T {
        loop {
            let notified = wake.notified();
            tokio::pin!(notified);
            // Registered before the check, so a wake between the check and the await is not lost.
            notified.as_mut().enable();
            let taken = take(&mut self.scheduler());
            if let Some(value) = taken {
                return value;
            }
            notified.await;
        }
    }

    /// Runs a synthesis of a job of `priority`: a CRITICAL one on the critical pool while the
    /// others pause, the others with the configured nice value (and the rayon global pool).
    async fn synthesize<T: Send + 'static>(
        &self,
        priority: Priority,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        let pool = match priority {
            Priority::Critical => self.critical_pool.get_or_init(critical_pool).clone(),
            _ => None,
        };
        match pool {
            Some(pool) => {
                blocking(move || {
                    // The others pause until this one is done (see `cuzk_synth::precedence`).
                    let _first = cuzk_synth::take_precedence();
                    pool.install(work)
                })
                .await
            }
            None => lowered(self.synthesis_nice, work).await,
        }
    }

    /// Whether `job`'s partitions leave a, b and c to the devices: it brings its compiled R1CS
    /// and every device computes them for its set (a GPU whose memory cannot hold the matrices
    /// beside the set does not, and the host computes them in full, as the budget then plans).
    fn defers_products(&self, job: &JobInfo) -> bool {
        let Some(compiled) = job.circuit.own_compiled() else {
            return false;
        };
        let computes =
            |d: &Arc<device::Device>| d.backend().computes_products(&job.params, compiled);
        self.devices.iter().all(computes)
    }

    /// Whether a device other than `device` is in service.
    fn in_service_besides(&self, device: &device::Device) -> bool {
        let others = self.devices.iter().filter(|d| d.index() != device.index());
        others.into_iter().any(|d| d.in_service())
    }

    /// Logs that `device` went out of service and wakes the GPU workers: the others may now take
    /// the retries they passed over for it.
    fn out_of_service(&self, device: &device::Device) {
        let detail = vec![kv("device", device.index())];
        self.clock.emit(Event::DeviceOut, "-", detail);
        self.gpu_wake.notify_waiters();
    }

    /// Ends `job` with `error`, unless it already ended.
    fn fail(&self, job: &JobInfo, error: JobError) {
        let failed = self.scheduler().fail(job.seq, error);
        if let Some(ended) = failed {
            self.ended(ended, "failed");
        }
    }

    /// Logs a job's end, then gives its waiters the result and synthesis workers the slot it held.
    fn ended(&self, ended: Ended, status: &str) {
        let job = &ended.info;
        self.clock.emit(
            Event::JobDone,
            &job.id,
            vec![kv("partitions", job.partitions), kv("status", status)],
        );
        ended.send();
        self.synthesis_wake.notify_waiters();
    }
}

/// Runs `work` on a blocking thread, turning a panic into its message.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| match error.try_into_panic() {
            Ok(payload) => panic_message(payload),
            Err(error) => error.to_string(),
        })
}

/// As many threads as the rayon global pool, at the process's own priority, exempt from the
/// pauses a critical synthesis imposes on the others.
fn critical_pool() -> Option<Arc<rayon::ThreadPool>> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .thread_name(|i| format!("cuzk-critical-{i}"))
        .start_handler(|_| cuzk_synth::exempt_current_thread())
        .build()
        .ok()
        .map(Arc::new)
}

/// Runs `work` on a thread started for it with its nice value raised by `nice` (see
/// [`priority`]), turning a panic into its message. A blocking thread of the runtime would keep
/// the raised value for the GPU work it runs next.
async fn lowered<T: Send + 'static>(
    nice: i32,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    if nice == 0 {
        return blocking(work).await;
    }
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("cuzk-synthesis".into())
        .spawn(move || {
            // Not lowered, it still computes the same result (see `lower_rayon_pool_once`).
            let _ = priority::lower_current_thread(nice);
            let _ = sender.send(unpanicked(work));
        })
        .map_err(|e| format!("starting a synthesis thread: {e}"))?;
    receiver
        .await
        .unwrap_or_else(|_| Err("the synthesis thread ended without a result".into()))
}

/// `work`'s value, or the message of its panic. For code that may panic on input it did not
/// expect (filecoin's verifiers on a malformed vanilla proof, a circuit's synthesis): the caller
/// turns the message into its own error, and the process goes on.
pub fn unpanicked<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(work)).map_err(panic_message)
}

fn panic_message(payload: Box<dyn Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// `work`'s value, or `None` when the job ends (fails, is cancelled) first.
async fn unless_ended<T>(job: &JobInfo, work: impl Future<Output = T>) -> Option<T> {
    let mut ended = job.result.subscribe();
    tokio::select! {
        value = work => Some(value),
        _ = ended.wait_for(Option::is_some) => None,
    }
}
