//! What the engine's tasks share — the scheduler, the wake-ups, the memory budget, the devices,
//! the clock — and how they run work off the async runtime (blocking threads, the synthesis
//! threads' nice value, the critical pool of [`urgent`](super::urgent), panics turned into
//! messages).

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use tokio::sync::Notify;

use super::compiled::CompiledCache;
use super::device::Device;
use super::job::{JobError, Priority};
use super::nice;
use super::scheduler::{Ended, JobInfo, Scheduler};
use super::urgent;
use crate::budget::MemoryBudget;
use crate::sink::{kv, Clock};
use crate::timeline::{key, Event};

/// What every worker task shares.
pub(super) struct Shared {
    pub(super) scheduler: Mutex<Scheduler>,
    /// Woken when a synthesis may have become possible (a job came, a slot or memory freed).
    pub(super) synthesis_wake: Notify,
    /// Woken when the GPU queue got a partition.
    pub(super) gpu_wake: Notify,
    pub(super) budget: MemoryBudget,
    /// The compiled R1CS of the circuit shapes seen.
    pub(super) compiled: CompiledCache,
    /// [`EngineConfig::synthesis_nice`].
    pub(super) synthesis_nice: i32,
    /// Threads of their own for CRITICAL jobs' syntheses ([`urgent::critical_pool`]), started on
    /// first use (`None` if they could not be).
    pub(super) critical_pool: OnceLock<Option<Arc<rayon::ThreadPool>>>,
    /// In backend-list order.
    pub(super) devices: Vec<Arc<Device>>,
    pub(super) clock: Clock,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub(super) fn scheduler(&self) -> MutexGuard<'_, Scheduler> {
        // The bookkeeping stays consistent across a panic elsewhere: each method completes or
        // changes nothing.
        self.scheduler
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until `take` finds something in the scheduler, re-checking whenever `wake` fires.
    pub(super) async fn wait_for<T>(
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
    /// others pause ([`urgent`]), the others with the configured nice value (and the rayon
    /// global pool).
    pub(super) async fn synthesize<T: Send + 'static>(
        &self,
        priority: Priority,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        let pool = match priority {
            Priority::Critical => self
                .critical_pool
                .get_or_init(urgent::critical_pool)
                .clone(),
            _ => None,
        };
        match pool {
            Some(pool) => {
                blocking(move || {
                    let _first = urgent::overtaking();
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
    pub(super) fn defers_products(&self, job: &JobInfo) -> bool {
        let Some(compiled) = job.circuit.own_compiled() else {
            return false;
        };
        let computes = |d: &Arc<Device>| d.backend().computes_products(&job.params, compiled);
        self.devices.iter().all(computes)
    }

    /// Whether a device other than `device` is in service.
    pub(super) fn in_service_besides(&self, device: &Device) -> bool {
        let others = self.devices.iter().filter(|d| d.index() != device.index());
        others.into_iter().any(|d| d.in_service())
    }

    /// Logs that `device` went out of service and wakes the GPU workers: the others may now take
    /// the retries they passed over for it.
    pub(super) fn out_of_service(&self, device: &Device) {
        let detail = vec![kv(key::DEVICE, device.index())];
        self.clock.emit(Event::DeviceOut, "-", detail);
        self.gpu_wake.notify_waiters();
    }

    /// Ends `job` with `error`, unless it already ended.
    pub(super) fn fail(&self, job: &JobInfo, error: JobError) {
        let failed = self.scheduler().fail(job.seq, error);
        if let Some(ended) = failed {
            self.ended(ended, "failed");
        }
    }

    /// Logs a job's end, then gives its waiters the result and synthesis workers the slot it held.
    pub(super) fn ended(&self, ended: Ended, status: &str) {
        let job = &ended.info;
        self.clock.emit(
            Event::JobDone,
            &job.id,
            vec![kv(key::PARTITIONS, job.partitions), kv(key::STATUS, status)],
        );
        ended.send();
        self.synthesis_wake.notify_waiters();
    }
}

/// Runs `work` on a blocking thread, turning a panic into its message.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| match error.try_into_panic() {
            Ok(payload) => panic_message(payload),
            Err(error) => error.to_string(),
        })
}

/// Runs `work` on a thread started for it with its nice value raised by `nice` (see the
/// [`nice`](super::nice) module), turning a panic into its message. A blocking thread of the runtime would keep
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
            let _ = nice::lower_current_thread(nice);
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
pub(super) async fn unless_ended<T>(job: &JobInfo, work: impl Future<Output = T>) -> Option<T> {
    let mut ended = job.result.subscribe();
    tokio::select! {
        value = work => Some(value),
        _ = ended.wait_for(Option::is_some) => None,
    }
}
