//! The engine: jobs → partitions → synthesis workers → GPU queue → GPU workers (two per device,
//! sharing the device's lock around the device region only) → finalizers (epilogue, verification).
//!
//! Every partition reserves its estimated host memory from one [`MemoryBudget`] before its
//! synthesis starts and gives it back in two steps, so the budget bounds what is in flight whatever
//! the worker counts say; what the run holds beside its partitions, and the host memory it may
//! use at all, are planned before anything loads ([`memory`]). A failing partition (error or panic, in any stage) ends its own job with
//! the reason; the workers go on with the other jobs; but a device fault costs only an attempt:
//! the partition is retried once on another device, and a device that keeps failing is taken
//! out of service (`device`, `prove`). A job's [`Priority`] orders its partitions
//! against other jobs' at every partition boundary; [`Engine::progress`] says where they are.
//! Circuits with a shape key have their R1CS recorded by the engine once and their later
//! partitions synthesized by witness only (`shapes`).

mod compiled;
mod config;
mod device;
mod finalize;
mod job;
pub mod memory;
pub mod nice;
mod prove;
mod scheduler;
mod shared;
mod synthesis;
mod urgent;

use std::sync::{Arc, Mutex, OnceLock};

use cuzk_groth16::ProverBackend;
use tokio::runtime::Handle;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

pub use config::{ConfigError, EngineConfig, SYNTHESIS_NICE};
pub use device::{DeviceActivity, Devices, FAULTS_IN_A_ROW};
pub use job::{
    JobError, JobOutput, JobProgress, JobRequest, JobResult, JobTimings, Partition,
    PartitionMemory, PartitionedCircuit, Place, Priority,
};
pub use memory::{
    auto_memory_budget, machine_memory, own_memory_cgroups, HostMemory, HostPlan, MemoryError,
    OwnCgroup, PlanPart,
};
pub use scheduler::MAX_PASSED_OVER;
pub use shared::unpanicked;

use crate::budget::MemoryBudget;
use crate::sink::{Clock, TimelineSink};
use compiled::CompiledCache;
use scheduler::Scheduler;
use shared::Shared;

/// A running engine. Dropping it stops its workers; jobs still in flight then end with
/// [`JobError::ShutDown`].
#[derive(Debug)]
pub struct Engine {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
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
        nice::lower_rayon_pool_once(config.synthesis_nice);
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
            compiled: CompiledCache::new(config.compiled_synthesis),
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
        self.end(cancelled, "cancelled")
    }

    /// Takes back the job in flight with this id if none of its partitions has started (it
    /// holds no memory and no worker yet): its waiters get [`JobError::Withdrawn`]. So a job
    /// queued behind others can let go of its parameters for more urgent work and be submitted
    /// again, in the place it had ([`JobRequest::in_place`]). `None` when it has started or is
    /// not in flight.
    pub fn withdraw(&self, id: &str) -> Option<Place> {
        let withdrawn = self.shared.scheduler().withdraw(id)?;
        let place = Place(withdrawn.info.seq);
        self.end(Some(withdrawn), "withdrawn");
        Some(place)
    }

    /// Logs and sends the end of a job taken out of the scheduler (its lock released by then);
    /// whether there was one.
    fn end(&self, ended: Option<scheduler::Ended>, status: &str) -> bool {
        ended
            .map(|ended| self.shared.ended(ended, status))
            .is_some()
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
        self.lend_devices().activity()
    }

    /// The devices, for what uses them beside the engine: their backends in its order, and
    /// which are in service.
    pub fn lend_devices(&self) -> Devices {
        Devices::of(&self.shared.devices)
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
