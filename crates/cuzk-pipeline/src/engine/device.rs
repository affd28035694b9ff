//! The devices of an engine: each one's backend, health and activity, and the lock its GPU
//! workers share around their device regions.
//!
//! Latency-critical work overtakes at the lock (the whole policy: [`urgent`](super::urgent)):
//! while a CRITICAL partition synthesizes, the others start no new region (for at most
//! [`HOLD_BACK`]), so that it mostly finds the device free; the lock goes to it before the others
//! that wait with it.
//!
//! A device with [`FAULTS_IN_A_ROW`] faults and no proof between them is taken out of service: its
//! workers stop and the others take its share. The last device in service stays: an out-of-memory
//! may be the work's (a proof too large for the device), and taking it out would fail every later
//! job, of any size, until a restart.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cuzk_groth16::{ProveError, ProverBackend};

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

/// An engine's devices as it lends them to what uses them beside it (a parameter manager placing
/// sets, the daemon's status): each one's backend in the engine's order, which `device=` in the
/// TIMELINE and every per-device figure follow, and whether it is still in service. One list, so
/// that no user keeps an order of its own.
#[derive(Clone, Debug)]
pub struct Devices(Vec<Arc<Device>>);

impl Devices {
    pub(super) fn of(devices: &[Arc<Device>]) -> Self {
        Devices(devices.to_vec())
    }

    /// Devices no engine proves on, all in service: for parts used without an engine (tests of
    /// a parameter manager).
    pub fn unmanaged(backends: Vec<Arc<dyn ProverBackend>>) -> Self {
        let devices = backends.into_iter().enumerate();
        Devices(devices.map(|(i, b)| Arc::new(Device::new(i, b))).collect())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every device's backend, in the engine's order.
    pub fn backends(&self) -> impl Iterator<Item = &Arc<dyn ProverBackend>> {
        self.0.iter().map(|d| d.backend())
    }

    /// The backends of the devices still in service.
    pub fn in_service(&self) -> impl Iterator<Item = &Arc<dyn ProverBackend>> {
        self.0
            .iter()
            .filter(|d| d.in_service())
            .map(|d| d.backend())
    }

    /// What each device is doing, in the engine's order.
    pub fn activity(&self) -> Vec<DeviceActivity> {
        self.0.iter().map(|d| d.activity()).collect()
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
    pub(super) lock: RegionLock,
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
pub(super) struct Activity {
    /// The job whose partition holds the lock.
    pub(super) holder: Option<String>,
    /// (GPU worker, job) for each partition in `prove_start`, in pickup order.
    pub(super) running: Vec<(usize, String)>,
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

    pub(super) fn proved(&self) {
        let mut health = self.health();
        health.partitions += 1;
        health.in_a_row = 0;
    }

    /// Counts a fault; `true` when it takes the device out of service, which only a device with
    /// another in service `elsewhere` may be.
    pub(super) fn fault(&self, error: &ProveError, elsewhere: bool) -> bool {
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

    pub(super) fn activity_mut(&self) -> MutexGuard<'_, Activity> {
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
pub(super) struct RegionLock {
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
pub(super) struct LockState {
    pub(super) held: bool,
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
pub(super) struct RegionGuard<'a>(&'a RegionLock);

impl RegionLock {
    fn holding_back(hold_back: Duration) -> Self {
        RegionLock {
            state: Mutex::default(),
            freed: Condvar::new(),
            hold_back,
        }
    }

    pub(super) fn state(&self) -> MutexGuard<'_, LockState> {
        // Each change is one assignment or count: a panic cannot leave it half-made.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn acquire(&self, critical: bool) -> RegionGuard<'_> {
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
pub(super) struct Busy<'a> {
    device: &'a Device,
    worker: usize,
}

impl<'a> Busy<'a> {
    pub(super) fn new(device: &'a Device, worker: usize, job: &str) -> Self {
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
