//! GPU workers and finalizers.
//!
//! A GPU worker takes the queued partition of the most urgent (then oldest) job, runs the
//! backend's `prove_start_shared` on a blocking thread with a [`DeviceLock`] that the workers of
//! one device share (the dual-worker interlock: the backend holds it only around its device
//! region, so one worker's host-side work overlaps the other's kernels), releases the partition's
//! a/b/c memory, hands the rest to a finalizer task and loops at once. The finalizer runs
//! `prove_finish`, verifies the proof and files it with its job.
//!
//! Latency-critical work has a lane of its own on each device: one more worker that takes only
//! CRITICAL partitions, so that a WinningPoSt never waits for a worker to come free behind
//! partitions already picked. While a CRITICAL partition synthesizes, the others start no new
//! region (for at most [`HOLD_BACK`]), so that it mostly finds the device free; the lock goes to
//! it before the others that wait with it. If a region is still in progress, its backend may run
//! it beside that region, on streams of its own that the device schedules first
//! (`acquire_beside`: when all it reads is on the device and its buffers fit, GPU_START says
//! `beside=1`).
//!
//! A device fault (a CUDA error, device memory exhausted: [`ProveError::device_fault`]) fails
//! only the partition's attempt: the partition is synthesized again (its witness went to the
//! backend) and proven on another device in service, or on the same one when it is the only one;
//! a second fault fails its job. A device with [`FAULTS_IN_A_ROW`] faults and no proof between
//! them is taken out of service: its workers stop and the others take its share. The last device
//! in service stays: an out-of-memory may be the work's (a proof too large for the device), and
//! taking it out would fail every later job, of any size, until a restart.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cuzk_groth16::{
    prove_finish, verify_proof, DeviceGuard, DeviceLock, ProveError, ProverBackend, Randomness,
    Started,
};
use cuzk_math::Scalar;
use rand::rngs::OsRng;

use super::job::{JobError, Priority, SynthesisPath, Synthesized};
use super::scheduler::{JobInfo, Ready, Scheduler};
use super::{blocking, Shared};
use crate::budget::Reservation;
use crate::sink::{kv, ms, Event};

/// What one device of an engine is doing, for a status view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceActivity {
    /// Its place in the engine's backend list (`device=` in the TIMELINE).
    pub index: usize,
    /// Its backend's [`ProverBackend::name`].
    pub backend: String,
    /// The job whose partition holds the device's lock now, else one whose partition is in
    /// `prove_start` on it (preparing, or waiting for the lock); `None` when idle. Device work is
    /// never interrupted, so this may name a job that was cancelled meanwhile.
    pub job: Option<String>,
    /// Partitions it proved (their `prove_start` succeeded on it).
    pub partitions: u64,
    /// Device faults it had, retried elsewhere or not, and the last one's error.
    pub faults: u64,
    pub last_fault: Option<String>,
    /// Why it was taken out of service (its last fault), `None` while it is in service.
    pub out_of_service: Option<String>,
}

/// Which of an engine's devices are in service, for those that use the devices beside the engine
/// (a parameter manager placing sets skips the others).
#[derive(Clone, Debug)]
pub struct DeviceHealth(Vec<Arc<Device>>);

impl DeviceHealth {
    pub(super) fn of(devices: &[Arc<Device>]) -> Self {
        DeviceHealth(devices.to_vec())
    }

    /// Whether device `index` (its place in the engine's backend list) is in service.
    pub fn in_service(&self, index: usize) -> bool {
        self.0.get(index).is_some_and(|d| d.in_service())
    }
}

/// Device faults in a row, with no proof between them, that take a device out of service: one
/// is a partition the device could not fit, a second may be another; a third says the device
/// fails whatever it is given (a CUDA error that sticks to its context does so at once).
pub const FAULTS_IN_A_ROW: usize = 3;

/// One device: its backend, the lock its workers share, and who is using it.
pub(super) struct Device {
    /// Its place in the engine's backend list, logged as `device=` so a TIMELINE tells the
    /// devices of a multi-GPU run apart.
    index: usize,
    backend: Arc<dyn ProverBackend>,
    lock: RegionLock,
    /// Kept apart from `lock`, so that reading it never waits for a device region.
    activity: Mutex<Activity>,
    health: Mutex<Health>,
}

/// How a device has fared.
#[derive(Default)]
struct Health {
    partitions: u64,
    faults: u64,
    last_fault: Option<String>,
    in_a_row: usize,
    out_of_service: Option<String>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("index", &self.index)
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}

/// Which jobs' partitions are on a device.
#[derive(Default)]
struct Activity {
    /// The job whose partition holds the lock.
    holder: Option<String>,
    /// (GPU worker, job) for each partition in `prove_start`, in pickup order.
    running: Vec<(usize, String)>,
}

impl Device {
    pub(super) fn new(index: usize, backend: Arc<dyn ProverBackend>) -> Self {
        Device {
            index,
            backend,
            lock: RegionLock::default(),
            activity: Mutex::default(),
            health: Mutex::default(),
        }
    }

    pub(super) fn index(&self) -> usize {
        self.index
    }

    pub(super) fn backend(&self) -> &Arc<dyn ProverBackend> {
        &self.backend
    }

    fn health(&self) -> MutexGuard<'_, Health> {
        // Each change is a count or an assignment: a panic cannot leave it half-made.
        self.health.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn in_service(&self) -> bool {
        self.health().out_of_service.is_none()
    }

    fn proved(&self) {
        let mut health = self.health();
        health.partitions += 1;
        health.in_a_row = 0;
    }

    /// Counts a fault; `true` when it takes the device out of service, which only a device with
    /// another in service `elsewhere` may be.
    fn fault(&self, error: &ProveError, elsewhere: bool) -> bool {
        let mut health = self.health();
        health.faults += 1;
        health.in_a_row += 1;
        health.last_fault = Some(error.to_string());
        let out =
            elsewhere && health.in_a_row >= FAULTS_IN_A_ROW && health.out_of_service.is_none();
        if out {
            let reason = format!("{} faults in a row, the last: {error}", health.in_a_row);
            health.out_of_service = Some(reason);
        }
        out
    }

    fn activity_mut(&self) -> MutexGuard<'_, Activity> {
        // Each change is one assignment or push or removal: a panic cannot leave it half-made.
        self.activity.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn activity(&self) -> DeviceActivity {
        let activity = self.activity_mut();
        let running = activity.running.first().map(|(_, job)| job);
        let health = self.health();
        DeviceActivity {
            index: self.index,
            backend: self.backend.name().to_owned(),
            job: activity.holder.as_ref().or(running).cloned(),
            partitions: health.partitions,
            faults: health.faults,
            last_fault: health.last_fault.clone(),
            out_of_service: health.out_of_service.clone(),
        }
    }
}

/// The lock of a device's region, which a CRITICAL partition takes before any other waiting for
/// it then. While a CRITICAL partition is being synthesized (coming), other partitions start no
/// new region for up to [`HOLD_BACK`]: the region in progress ends meanwhile, and the CRITICAL
/// one finds the device free instead of waiting for a region that began while it synthesized.
struct RegionLock {
    state: Mutex<LockState>,
    freed: Condvar,
    /// [`HOLD_BACK`] but in tests.
    hold_back: Duration,
}

impl Default for RegionLock {
    fn default() -> Self {
        RegionLock::holding_back(HOLD_BACK)
    }
}

/// The longest a coming CRITICAL partition holds the others back: a 2 KiB WinningPoSt
/// synthesizes in ~15 ms, a 32 GiB one in ~65; a longer synthesis costs the others no more.
const HOLD_BACK: Duration = Duration::from_millis(100);

#[derive(Default)]
struct LockState {
    held: bool,
    critical_waiting: usize,
    /// CRITICAL partitions in synthesis, and since when there have been some.
    critical_coming: usize,
    coming_since: Option<Instant>,
}

impl LockState {
    /// How long a partition that is not CRITICAL still stays back for a coming one.
    fn held_back_for(&self, hold_back: Duration) -> Option<Duration> {
        let left = hold_back.checked_sub(self.coming_since?.elapsed())?;
        (!left.is_zero()).then_some(left)
    }
}

/// The device's region, held until dropped.
struct RegionGuard<'a>(&'a RegionLock);

impl RegionLock {
    fn holding_back(hold_back: Duration) -> Self {
        RegionLock {
            state: Mutex::default(),
            freed: Condvar::new(),
            hold_back,
        }
    }

    fn state(&self) -> MutexGuard<'_, LockState> {
        // Each change is one assignment or count: a panic cannot leave it half-made.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn acquire(&self, critical: bool) -> RegionGuard<'_> {
        let mut state = self.state();
        state.critical_waiting += usize::from(critical);
        loop {
            let blocked = state.held || (!critical && state.critical_waiting > 0);
            let held_back = match critical {
                true => None,
                false => state.held_back_for(self.hold_back),
            };
            state = match (blocked, held_back) {
                (false, None) => break,
                (true, _) => self
                    .freed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
                (false, Some(left)) => {
                    let (state, _) = self
                        .freed
                        .wait_timeout(state, left)
                        .unwrap_or_else(PoisonError::into_inner);
                    state
                }
            };
        }
        state.critical_waiting -= usize::from(critical);
        state.held = true;
        RegionGuard(self)
    }

    fn coming(&self) {
        let mut state = self.state();
        state.critical_coming += 1;
        state.coming_since.get_or_insert_with(Instant::now);
    }

    fn came(&self) {
        let mut state = self.state();
        state.critical_coming -= 1;
        if state.critical_coming == 0 {
            state.coming_since = None;
        }
        drop(state);
        self.freed.notify_all();
    }
}

/// A CRITICAL partition from the start of its synthesis to the end of its `prove_start`, counted
/// as coming by every device's lock (any of their lanes may take it) while this lives.
pub(super) struct Coming(Vec<Arc<Device>>);

impl Coming {
    pub(super) fn to(devices: &[Arc<Device>]) -> Self {
        devices.iter().for_each(|device| device.lock.coming());
        Coming(devices.to_vec())
    }
}

impl Drop for Coming {
    fn drop(&mut self) {
        self.0.iter().for_each(|device| device.lock.came());
    }
}

impl std::fmt::Debug for Coming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Coming").field(&self.0.len()).finish()
    }
}

impl Drop for RegionGuard<'_> {
    fn drop(&mut self) {
        self.0.state().held = false;
        self.0.freed.notify_all();
    }
}

/// A GPU worker's partition in `prove_start` on a device, listed there while this lives (a panic
/// or an abort included).
struct Busy<'a> {
    device: &'a Device,
    worker: usize,
}

impl<'a> Busy<'a> {
    fn new(device: &'a Device, worker: usize, job: &str) -> Self {
        device.activity_mut().running.push((worker, job.to_owned()));
        Busy { device, worker }
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.device
            .activity_mut()
            .running
            .retain(|&(w, _)| w != self.worker);
    }
}

/// The device lock as one worker holds it for one partition: logs GPU_START when the backend
/// takes it and GPU_END (with gpu_ms) when it lets go, so the TIMELINE's GPU intervals are the
/// device regions and never overlap on one device.
struct Region {
    shared: Arc<Shared>,
    device: Arc<Device>,
    job_id: String,
    partition: usize,
    worker: usize,
    /// A CRITICAL job's partition, which takes the lock first.
    critical: bool,
    held: Mutex<Held>,
    /// The partition's host memory, as reserved for its synthesis; given back down to what
    /// the backend still holds once it says its vectors are staged ([`DeviceLock::staged`]).
    reservation: Mutex<Reservation>,
}

/// Totals over the holds of one partition (a backend may hold the lock more than once).
#[derive(Clone, Copy, Default)]
struct Held {
    count: usize,
    wait_ms: f64,
    gpu_ms: f64,
}

/// One hold: the region's guard (none beside it), released after `drop` has logged GPU_END.
struct Hold<'a> {
    region: &'a Region,
    since: Instant,
    guard: Option<RegionGuard<'a>>,
}

impl Region {
    fn detail(&self) -> Vec<(String, String)> {
        vec![
            kv("partition", self.partition),
            kv("worker", self.worker),
            kv("device", self.device.index),
        ]
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs `start..now` as the device region of a backend that never took the lock, so that
    /// every partition has a GPU interval.
    fn finish(&self, start: Instant) -> Held {
        let held = *self.held();
        if held.count > 0 {
            return held;
        }
        let clock = &self.shared.clock;
        clock.emit_at(start, Event::GpuStart, &self.job_id, self.detail());
        let gpu_ms = ms(start.elapsed());
        let mut end = self.detail();
        end.push(kv("gpu_ms", gpu_ms));
        clock.emit(Event::GpuEnd, &self.job_id, end);
        Held {
            count: 1,
            wait_ms: 0.0,
            gpu_ms,
        }
    }
}

impl Region {
    fn hold<'a>(&'a self, guard: Option<RegionGuard<'a>>) -> DeviceGuard<'a> {
        let since = Instant::now();
        let mut detail = self.detail();
        match guard {
            Some(_) => self.device.activity_mut().holder = Some(self.job_id.clone()),
            None => detail.push(kv("beside", 1)),
        }
        self.shared
            .clock
            .emit_at(since, Event::GpuStart, &self.job_id, detail);
        DeviceGuard::new(Hold {
            region: self,
            since,
            guard,
        })
    }
}

impl DeviceLock for Region {
    fn acquire(&self) -> DeviceGuard<'_> {
        let asked = Instant::now();
        let guard = self.device.lock.acquire(self.critical);
        self.held().wait_ms += ms(asked.elapsed());
        self.hold(Some(guard))
    }

    /// For CRITICAL partitions only, and only while another partition's region is in progress:
    /// a WinningPoSt runs beside a 32 GiB PoRep region (1.4 s) instead of waiting for its end.
    /// A free device is taken as usual: beside a region, both slow down (a 2 KiB WinningPoSt's
    /// region took 62 ms beside PoRep regions, 19 alone).
    fn acquire_beside(&self) -> Option<DeviceGuard<'_>> {
        let in_progress = self.device.lock.state().held;
        (self.critical && in_progress).then(|| self.hold(None))
    }

    /// Nothing of the partition is left in host memory but its public inputs: its whole
    /// reservation goes back, and the next synthesis may start beside this region (at 32 GiB
    /// with 16 GiB of device memory, one partition fitted the host plan: each synthesis waited
    /// for the region before it, 9.3 s a partition instead of ~6).
    fn staged(&self) {
        self.reservation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keep(0);
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        if self.guard.is_some() {
            // Still inside the lock: the next holder cannot have set its own name yet.
            self.region.device.activity_mut().holder = None;
        }
        let gpu_ms = ms(self.since.elapsed());
        let mut end = self.region.detail();
        end.push(kv("gpu_ms", gpu_ms));
        self.region
            .shared
            .clock
            .emit(Event::GpuEnd, &self.region.job_id, end);
        let mut held = self.region.held();
        held.count += 1;
        held.gpu_ms += gpu_ms;
    }
}

/// What the finalizer logs in the partition's PARTITION_STATS line.
struct Timings {
    worker: usize,
    synth_ms: f64,
    synthesis: SynthesisPath,
    queue_ms: f64,
    prove_start_ms: f64,
    held: Held,
}

/// A GPU worker of `device`, taking queued partitions of priority `at_least` or above until the
/// device is taken out of service.
pub(super) async fn worker(
    shared: Arc<Shared>,
    device: Arc<Device>,
    worker: usize,
    at_least: Priority,
) {
    loop {
        let take = |scheduler: &mut Scheduler| match device.in_service() {
            true => {
                let elsewhere = shared.in_service_besides(&device);
                scheduler
                    .next_gpu(at_least, device.index, elsewhere)
                    .map(Some)
            }
            false => Some(None),
        };
        let Some(ready) = shared.wait_for(&shared.gpu_wake, take).await else {
            return;
        };
        prove_start(&shared, &device, ready, worker).await;
    }
}

async fn prove_start(shared: &Arc<Shared>, device: &Arc<Device>, ready: Ready, worker: usize) {
    let Ready {
        job,
        partition,
        synthesized: Synthesized {
            assignment,
            public_inputs,
        },
        reservation,
        synth_ms,
        synthesis,
        queued,
        coming,
        failed_on,
    } = ready;
    let pickup = Instant::now();
    let region = Region {
        shared: Arc::clone(shared),
        device: Arc::clone(device),
        job_id: job.id.clone(),
        partition,
        worker,
        critical: job.priority == Priority::Critical,
        held: Mutex::default(),
        reservation: Mutex::new(reservation),
    };
    shared
        .clock
        .emit_at(pickup, Event::GpuPickup, &job.id, region.detail());
    let busy = Busy::new(device, worker, &job.id);
    let params = Arc::clone(&job.params);
    let outcome = blocking(move || {
        let started = region
            .device
            .backend
            .prove_start_shared(&params, assignment, &region);
        drop(coming);
        let held = region.finish(pickup);
        let reservation = region.reservation.into_inner();
        (
            started,
            held,
            reservation.unwrap_or_else(PoisonError::into_inner),
        )
    })
    .await;
    drop(busy);
    let prove_start_ms = ms(pickup.elapsed());
    // The device's health counts whatever became of the job.
    let fault = match &outcome {
        Ok((Ok(_), _, _)) => {
            device.proved();
            None
        }
        Ok((Err(e), _, _)) => e.device_fault(),
        Err(_) => None,
    };
    match (outcome, fault) {
        (Ok((Err(e), _, _)), Some(kind)) => {
            let fault = Fault {
                partition,
                worker,
                failed_on,
                kind,
            };
            device_fault(shared, device, &job, fault, &e);
        }
        // Ended (cancelled, another partition failed) while this one was proven: moot.
        _ if job.finished() => {}
        (Ok((Ok(started), held, mut reservation)), _) => {
            // a, b and c are on the device (or were never on the host).
            reservation.keep(job.memory.rest);
            let timings = Timings {
                worker,
                synth_ms,
                synthesis,
                queue_ms: ms(pickup - queued),
                prove_start_ms,
                held,
            };
            let gpu_wait_ms = timings.queue_ms + timings.prove_start_ms - held.gpu_ms;
            shared
                .scheduler()
                .started(job.seq, held.gpu_ms, gpu_wait_ms);
            tokio::spawn(finalize(
                Arc::clone(shared),
                job,
                partition,
                started,
                public_inputs,
                reservation,
                timings,
            ));
        }
        (Ok((Err(e), _, _)), None) => shared.fail(
            &job,
            JobError::Prove {
                partition,
                reason: e.to_string(),
            },
        ),
        (Err(message), _) => shared.fail(
            &job,
            JobError::Panicked {
                partition,
                stage: "prove_start",
                message,
            },
        ),
    }
}

/// A partition's attempt that failed by a device fault.
struct Fault {
    partition: usize,
    worker: usize,
    /// Where its previous attempt failed, if this was its retry.
    failed_on: Option<usize>,
    /// [`ProveError::device_fault`].
    kind: &'static str,
}

/// Counts the fault against `device` (taking it out of service after [`FAULTS_IN_A_ROW`], unless
/// it is the last in service) and sends the partition back to synthesis for another attempt, or
/// fails its job if this was the retry (a job that ended meanwhile stays as it ended).
fn device_fault(shared: &Shared, device: &Device, job: &JobInfo, fault: Fault, error: &ProveError) {
    let Fault {
        partition,
        worker,
        failed_on,
        kind,
    } = fault;
    let (out, retried) = {
        // Under the scheduler's lock, so that two devices failing at once cannot both go.
        let mut scheduler = shared.scheduler();
        let out = device.fault(error, shared.in_service_besides(device));
        let retried = failed_on.is_none() && scheduler.retry(job.seq, partition, device.index);
        (out, retried)
    };
    let detail = vec![
        kv("partition", partition),
        kv("worker", worker),
        kv("device", device.index),
        kv("retry", u8::from(retried)),
        kv("fault", kind),
    ];
    shared.clock.emit(Event::DeviceFault, &job.id, detail);
    if out {
        shared.out_of_service(device);
    }
    match retried {
        true => shared.synthesis_wake.notify_waiters(),
        false => {
            let earlier = failed_on.map_or(String::new(), |d| format!(", after one on device {d}"));
            let reason = format!("{error} (on device {}{earlier})", device.index);
            shared.fail(job, JobError::Prove { partition, reason });
        }
    }
}

/// The epilogue and the check of one partition's proof; files it, and ends the job with its last.
async fn finalize(
    shared: Arc<Shared>,
    job: Arc<JobInfo>,
    partition: usize,
    started: Started,
    public_inputs: Vec<Scalar>,
    reservation: Reservation,
    timings: Timings,
) {
    let begin = Instant::now();
    let Started { sums, stages } = started;
    let checked = Arc::clone(&job);
    let outcome = blocking(move || {
        let proof = prove_finish(&checked.params.vk, &sums, Randomness::random(&mut OsRng));
        let valid = verify_proof(&checked.pvk, &proof, &public_inputs);
        (proof, valid, public_inputs)
    })
    .await;
    let finalize_ms = ms(begin.elapsed());
    let (proof, valid, public_inputs) = match outcome {
        Ok(done) => done,
        Err(message) => {
            let stage = "prove_finish";
            return shared.fail(
                &job,
                JobError::Panicked {
                    partition,
                    stage,
                    message,
                },
            );
        }
    };
    let detail = || vec![kv("partition", partition), kv("worker", timings.worker)];
    shared.clock.emit(Event::FinalizeEnd, &job.id, detail());
    let reason = match valid {
        Ok(true) => None,
        Ok(false) => Some("the proof does not verify against its public inputs".to_owned()),
        Err(e) => Some(e.to_string()),
    };
    if let Some(reason) = reason {
        return shared.fail(&job, JobError::Verify { partition, reason });
    }
    let mut stats = detail();
    stats.extend([
        kv("synth_ms", timings.synth_ms),
        kv("synthesis", timings.synthesis.as_str()),
        kv("queue_ms", timings.queue_ms),
        kv("prove_start_ms", timings.prove_start_ms),
        kv("device_wait_ms", timings.held.wait_ms),
        kv("gpu_ms", timings.held.gpu_ms),
        kv("finalize_ms", finalize_ms),
    ]);
    stats.extend(stages.iter().map(|s| kv(s.key, s.value)));
    shared.clock.emit(Event::PartitionStats, &job.id, stats);
    // Logged before the memory goes back, so the log never shows more in flight than the budget.
    drop(reservation);
    let completed =
        shared
            .scheduler()
            .proved(job.seq, partition, proof, public_inputs, finalize_ms);
    if let Some(ended) = completed {
        shared.ended(ended, "ok");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;

    /// When the region is freed, a CRITICAL waiter takes it before one that waited longer.
    #[test]
    fn a_critical_waiter_takes_the_region_first() {
        let lock = Arc::new(RegionLock::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = lock.acquire(false);
        let waiter = |critical: bool, name: &'static str| {
            let (lock, order) = (Arc::clone(&lock), Arc::clone(&order));
            std::thread::spawn(move || {
                let _region = lock.acquire(critical);
                order.lock().unwrap().push(name);
            })
        };
        let normal = waiter(false, "normal");
        std::thread::sleep(Duration::from_millis(20));
        let critical = waiter(true, "critical");
        while lock.state().critical_waiting == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(held);
        normal.join().unwrap();
        critical.join().unwrap();
        assert_eq!(*order.lock().unwrap(), ["critical", "normal"]);
        let state = lock.state();
        assert!(!state.held && state.critical_waiting == 0);
    }

    /// A regular partition starts no region while a CRITICAL one synthesizes, for at most the
    /// hold-back; the CRITICAL one itself is never held back.
    #[test]
    fn a_coming_critical_partition_holds_the_others_back() {
        let lock = Arc::new(RegionLock::holding_back(Duration::from_secs(600)));
        let order = Arc::new(Mutex::new(Vec::new()));
        lock.coming();
        let normal = {
            let (lock, order) = (Arc::clone(&lock), Arc::clone(&order));
            std::thread::spawn(move || {
                let _region = lock.acquire(false);
                order.lock().unwrap().push("normal");
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        drop(lock.acquire(true));
        order.lock().unwrap().push("came");
        lock.came();
        normal.join().unwrap();
        assert_eq!(*order.lock().unwrap(), ["came", "normal"]);
        let state = lock.state();
        assert!(state.critical_coming == 0 && state.coming_since.is_none());
        drop(state);

        let lock = RegionLock::holding_back(Duration::from_millis(10));
        lock.coming();
        drop(lock.acquire(false));
        lock.came();
    }
}
