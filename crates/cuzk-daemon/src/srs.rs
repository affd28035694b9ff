//! Parameter sets in tiers, per circuit id: **cold** (its files on disk), **warm** (read into
//! host memory), **hot** (ready for proving: placed on every GPU; with the CPU backend, which
//! proves from host memory, a warm set is as hot as it gets).
//!
//! A set loads on first use or on `PreloadSRS` / `[srs] preload`, once however many ask at the
//! same time (single flight, outside the map's lock). Users hold a [`Lease`]; a set with a lease
//! out is never evicted. When a new set does not fit the host budget, idle sets go least
//! recently used first, but only those idle for at least `eviction_min_idle` (so two circuits
//! in turn do not thrash): until one qualifies the load waits. Before a set loads, what proving
//! with it takes is checked against the host's memory ([`HostBudgets::check`]): one that can
//! never fit fails at once, naming memory. Device memory is the backends'
//! to manage (they evict their least recently used idle sets when a new one does not fit).
//!
//! A load that waits for room is not starved by less urgent work: while it waits, less urgent
//! jobs take no new use of any other set (they wait with it), and those holding one whose
//! proof has not started give it back and wait too ([`SrsManager::outranked`]). So the sets in
//! use go idle as the proofs already started end, and a HIGH or CRITICAL load evicts them
//! without waiting for `eviction_min_idle` — a WindowPoSt meeting a host full of PoRep and
//! SnapDeals sets in use loads its own once the partitions under way end, evicting none in use.
//!
//! Before any set is evicted or waited for, room is made by **settling**: a set every device in
//! service holds wholly resident (no query streamed) keeps its points there and lets its host
//! copy go, in use or not ([`ProverBackend::settle`](cuzk_groth16::ProverBackend::settle)). Its
//! new uses prove from the devices alone; the copy is freed once the proofs that already hold it
//! end, and counts against the budget until then. So on an H200 beside a 128 GiB host the 32 GiB
//! PoRep and WindowPoSt sets can stay on the device while SnapDeals' streams from the host. A
//! settled set is never pushed off a device for room (there is no copy to place it from again):
//! evicting it here frees it, and when a device in service lacks it (one added since) it is read
//! from disk again at its next use that finds it idle.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use cuzk_groth16::Parameters;
use cuzk_pipeline::{Devices, Priority};
use tokio::sync::{watch, Notify};

use crate::circuits::{Circuits, ParamSet};
use crate::error::DaemonError;
use crate::kinds::priority_name;
use crate::memory::HostBudgets;
use crate::metrics::Metrics;

/// A set's tier, as `GetStatus` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    Hot,
    Warm,
    Cold,
}

/// One line of the status: a circuit's set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetStatus {
    pub circuit: String,
    pub tier: Tier,
    pub bytes: u64,
    pub users: usize,
    /// Since its last use, for a set in host memory (or loading).
    pub idle: Option<Duration>,
    /// Whether it would be evicted to make room now: loaded, unused, idle long enough.
    pub evictable: bool,
    /// How each device in service proves with it, where it is placed ("NAME: plan").
    pub plans: Vec<String>,
    /// Where its compiled R1CS came from, for a loaded set that has one.
    pub r1cs: Option<String>,
    /// A load of it waiting for room: for whose work, and for how long.
    pub waiting: Option<String>,
    /// Its points are kept on the devices only, with no host copy: settled to make room, or test
    /// parameters made there.
    pub settled: bool,
}

/// What a load ends with, shared by everyone who waited for it.
type Loaded = Option<Result<Arc<ParamSet>, String>>;

enum Slot {
    Loading(watch::Receiver<Loaded>),
    Ready(Arc<ParamSet>),
}

struct Entry {
    slot: Slot,
    /// The set's size on disk, when known: what a load in flight will hold.
    expected: u64,
    users: usize,
    last_used: Instant,
}

struct Inner {
    circuits: Arc<dyn Circuits>,
    /// The engine's, of which sets go to those in service only.
    devices: Devices,
    /// Host bytes the warm sets may hold together.
    budget: u64,
    /// The host's memory, for the plan a set is checked against before it loads.
    memory: HostBudgets,
    min_idle: Duration,
    sets: Mutex<HashMap<String, Entry>>,
    /// Loads waiting for room; locked only inside `sets`, so the two never deadlock.
    waiting: Mutex<Vec<Waiter>>,
    /// Host copies of settled sets that proofs submitted before the settling still hold;
    /// locked only inside `sets`.
    draining: Mutex<Vec<Draining>>,
    next_waiter: AtomicU64,
    /// Fired when a lease ends, a set goes or a waiting load stops waiting: a waiting load may
    /// now fit, a held-back use may now go ahead.
    released: Notify,
    /// Fired when a load starts waiting for room: uses of other sets not yet started may step
    /// back ([`SrsManager::outranked`]).
    room_wanted: Notify,
    metrics: Arc<Metrics>,
}

/// The parameter manager.
#[derive(Clone)]
pub struct SrsManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SrsManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SrsManager")
            .field("budget", &self.inner.budget)
            .finish_non_exhaustive()
    }
}

/// One counted use of a set, from the moment a caller asks for it: dropping it (with its
/// [`Lease`], or early, when the caller goes away while the set loads) gives the use back.
struct Use {
    inner: Arc<Inner>,
    circuit: String,
}

impl Drop for Use {
    fn drop(&mut self) {
        let mut sets = self.inner.sets();
        if let Some(entry) = sets.get_mut(&self.circuit) {
            entry.users = entry.users.saturating_sub(1);
            entry.last_used = Instant::now();
        }
        drop(sets);
        self.inner.released.notify_waiters();
    }
}

/// A settled set's host copy, counted until the last proof holding it lets it go.
struct Draining {
    params: Weak<Parameters>,
    bytes: u64,
}

/// How often a load waiting only for settled sets' host copies to drain looks again (their last
/// holders are proofs ending, which do not all say so).
const DRAIN_POLL: Duration = Duration::from_millis(200);

/// A load waiting for room, and how urgent the work that wants it is.
struct Waiter {
    id: u64,
    circuit: String,
    priority: Priority,
    since: Instant,
}

/// A load's place among the waiters, while it waits; dropping it (the load fits, fails, or its
/// caller goes away) lets the uses it held back go ahead.
struct WaitingLoad {
    inner: Arc<Inner>,
    id: u64,
}

impl Drop for WaitingLoad {
    fn drop(&mut self) {
        self.inner.waiters().retain(|w| w.id != self.id);
        self.inner.released.notify_waiters();
    }
}

/// A set in use: while it lives the set is not evicted.
pub struct Lease {
    _use: Use,
    pub set: Arc<ParamSet>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("circuit", &self._use.circuit)
            .finish_non_exhaustive()
    }
}

/// The answer to a preload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preloaded {
    pub already_loaded: bool,
    pub load_ms: u64,
}

/// The answer to an eviction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evicted {
    pub was_loaded: bool,
    pub freed_bytes: u64,
}

impl Inner {
    fn sets(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // Every change under this lock completes or changes nothing.
        self.sets.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Taken only while `sets` is held, or alone (never the other way round).
    fn waiters(&self) -> MutexGuard<'_, Vec<Waiter>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a load of another set, for work more urgent than `priority`, waits for room: a
    /// new use of `circuit` would keep a set in use (or take budget) that it needs.
    fn outranked(&self, circuit: &str, priority: Priority) -> bool {
        self.waiters()
            .iter()
            .any(|w| w.priority > priority && w.circuit != circuit)
    }

    /// Warm bytes held now, sets being loaded counted at their size on disk, settled sets' host
    /// copies until they are freed; the caller holds `sets`.
    fn held(&self, sets: &HashMap<String, Entry>) -> u64 {
        Self::entry_bytes(sets) + self.draining_bytes()
    }

    /// What the entries hold: ready sets their bytes, sets being loaded their size on disk.
    fn entry_bytes(sets: &HashMap<String, Entry>) -> u64 {
        sets.values()
            .map(|e| match &e.slot {
                Slot::Ready(set) => set.bytes,
                Slot::Loading(_) => e.expected,
            })
            .sum()
    }

    /// Settled sets' host copies still held by proofs; the caller holds `sets`.
    fn draining_bytes(&self) -> u64 {
        let mut draining = self.draining.lock().unwrap_or_else(PoisonError::into_inner);
        draining.retain(|d| d.params.strong_count() > 0);
        draining.iter().map(|d| d.bytes).sum()
    }

    /// Settles every loaded set that every device in service holds wholly resident and that
    /// still has its host copy: its entry takes the settled set (new uses prove from the
    /// devices alone) and the copy drains. Returns the host bytes that go.
    fn settle_resident(&self, sets: &mut HashMap<String, Entry>) -> u64 {
        let mut settled = 0;
        for (circuit, entry) in sets.iter_mut() {
            let Slot::Ready(set) = &entry.slot else {
                continue;
            };
            if set.key_bytes == 0 || set.params.placed.is_some() {
                continue;
            }
            let parts: Option<Vec<_>> = self
                .devices
                .in_service()
                .map(|d| d.settle(&set.params))
                .collect();
            let Some(parts) = parts.filter(|parts| !parts.is_empty()) else {
                continue;
            };
            let places: Vec<&str> = parts.iter().map(|p| p.place()).collect();
            tracing::info!(
                %circuit,
                bytes = set.key_bytes,
                devices = %places.join(", "),
                "parameter set settled on its devices: its host copy goes once the proofs \
                 holding it end"
            );
            let lighter = ParamSet {
                params: Arc::new(set.params.settled(parts)),
                compiled: set.compiled.clone(),
                bytes: set.bytes - set.key_bytes,
                key_bytes: 0,
                r1cs_origin: set.r1cs_origin.clone(),
            };
            self.draining
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Draining {
                    params: Arc::downgrade(&set.params),
                    bytes: set.key_bytes,
                });
            settled += set.key_bytes;
            entry.slot = Slot::Ready(Arc::new(lighter));
        }
        settled
    }

    /// Drops `circuit`'s set when it is settled, idle, and some device in service cannot prove
    /// with it (one added since it settled, or a CPU): its next use reads it from disk again.
    fn drop_orphaned(&self, sets: &mut HashMap<String, Entry>, circuit: &str) {
        let Some(Entry {
            slot: Slot::Ready(set),
            users: 0,
            ..
        }) = sets.get(circuit)
        else {
            return;
        };
        let mut devices = self.devices.in_service();
        if set.params.placed.is_none() || devices.all(|d| d.resident(&set.params).is_some()) {
            return;
        }
        let freed = self.evict_entry(set);
        sets.remove(circuit);
        tracing::info!(
            circuit,
            freed,
            "settled parameter set dropped: a device in service does not hold it"
        );
    }

    /// Places a warm set on every device in service; its tier is then hot. A device that fails
    /// it is passed over (the set goes to it at its first proof, if it is still in service then):
    /// only when every device fails is the set unusable.
    fn place(&self, set: &ParamSet) -> Result<(), String> {
        let mut failures = Vec::new();
        let mut placed = false;
        for device in self.devices.in_service() {
            match device.preload(&set.params, set.compiled.as_ref()) {
                Ok(_) => placed = true,
                Err(e) => {
                    tracing::warn!(device = device.name(), "placing a parameter set: {e}");
                    failures.push(format!("placing on {}: {e}", device.name()));
                }
            }
        }
        match (placed, failures.is_empty()) {
            (false, false) => Err(failures.join("; ")),
            _ => Ok(()),
        }
    }

    /// Each device in service's plan for the set, where it is placed.
    fn plans(&self, set: &ParamSet) -> Vec<String> {
        self.devices
            .in_service()
            .filter_map(|d| Some(format!("{}: {}", d.name(), d.plan(&set.params)?)))
            .collect()
    }

    fn tier(&self, set: &ParamSet) -> Tier {
        if self
            .devices
            .in_service()
            .all(|d| d.resident(&set.params).is_some() || matches!(d.device(), Ok(None)))
        {
            Tier::Hot
        } else {
            Tier::Warm
        }
    }

    /// Evicts idle sets, least recently used first and only those idle for `min_idle` (any
    /// idle set for work of HIGH priority or above), until `needed` more bytes fit the budget;
    /// `Fits` when they do, else how long to wait.
    fn evict_idle(
        &self,
        sets: &mut HashMap<String, Entry>,
        needed: u64,
        for_whom: &str,
        priority: Priority,
    ) -> Room {
        let min_idle = match priority >= Priority::High {
            true => Duration::ZERO,
            false => self.min_idle,
        };
        loop {
            if self.held(sets) + needed <= self.budget {
                return Room::Fits;
            }
            if self.settle_resident(sets) > 0 {
                continue;
            }
            if self.draining_bytes() > 0 && Self::entry_bytes(sets) + needed <= self.budget {
                // The host copies of settled sets make room once the proofs holding them end.
                return Room::Wait(Some(DRAIN_POLL));
            }
            let now = Instant::now();
            let idle = sets
                .iter()
                .filter(|(_, e)| e.users == 0 && matches!(e.slot, Slot::Ready(_)))
                .min_by_key(|(_, e)| e.last_used)
                .map(|(name, e)| (name.clone(), now.duration_since(e.last_used)));
            match idle {
                Some((name, idle)) if idle >= min_idle => {
                    if let Some(Entry {
                        slot: Slot::Ready(set),
                        ..
                    }) = sets.remove(&name)
                    {
                        let freed = self.evict_entry(&set);
                        tracing::info!(
                            circuit = %name,
                            freed,
                            "parameter set evicted to make room for {for_whom}"
                        );
                    }
                }
                Some((_, idle)) => return Room::Wait(Some(min_idle - idle)),
                None => return Room::Wait(None),
            }
        }
    }

    fn evict_entry(&self, set: &ParamSet) -> u64 {
        let device: u64 = self.devices.backends().map(|d| d.evict(&set.params)).sum();
        device + set.bytes
    }
}

/// What `make_room` decided.
enum Room {
    /// The set fits (after evicting what had to go).
    Fits,
    /// Nothing can go yet: wait for a release, or until the oldest idle set is old enough.
    Wait(Option<Duration>),
}

impl SrsManager {
    /// Over `devices`, the engine's (lent, so that sets go only where it still proves); warm
    /// sets hold at most `memory.sets`.
    pub fn new(
        circuits: Arc<dyn Circuits>,
        devices: Devices,
        memory: HostBudgets,
        min_idle: Duration,
        metrics: Arc<Metrics>,
    ) -> Self {
        SrsManager {
            inner: Arc::new(Inner {
                circuits,
                devices,
                budget: memory.sets,
                memory,
                min_idle,
                sets: Mutex::new(HashMap::new()),
                waiting: Mutex::new(Vec::new()),
                draining: Mutex::new(Vec::new()),
                next_waiter: AtomicU64::new(0),
                released: Notify::new(),
                room_wanted: Notify::new(),
                metrics,
            }),
        }
    }

    /// The circuit's set for work of `priority`, loading it (and placing it on the GPUs) if
    /// needed; also returns how long this call waited, 0 when the set was ready.
    pub async fn acquire(
        &self,
        circuit: &str,
        priority: Priority,
    ) -> Result<(Lease, u64), DaemonError> {
        let start = Instant::now();
        let lease = self.ready(circuit, priority).await?;
        Ok((lease, start.elapsed().as_millis() as u64))
    }

    /// Loads a set and places it on the GPUs without holding it (as work of NORMAL priority).
    pub async fn preload(&self, circuit: &str) -> Result<Preloaded, DaemonError> {
        self.inner.circuits.describe(circuit)?;
        let already_loaded = matches!(
            self.inner.sets().get(circuit).map(|e| &e.slot),
            Some(Slot::Ready(_))
        );
        let (lease, load_ms) = self.acquire(circuit, Priority::Normal).await?;
        if already_loaded {
            // Placed when it loaded, but the backend may have pushed it off a device since.
            let inner = Arc::clone(&self.inner);
            let set = Arc::clone(&lease.set);
            let placed = tokio::task::spawn_blocking(move || inner.place(&set))
                .await
                .map_err(|e| DaemonError::Internal(e.to_string()))?;
            placed.map_err(|reason| DaemonError::Parameters {
                circuit: circuit.to_owned(),
                reason,
            })?;
        }
        Ok(Preloaded {
            already_loaded,
            load_ms: if already_loaded { 0 } else { load_ms },
        })
    }

    /// Drops an idle set from the GPUs and host memory.
    pub fn evict(&self, circuit: &str) -> Result<Evicted, DaemonError> {
        self.inner.circuits.describe(circuit)?;
        let mut sets = self.inner.sets();
        let Some(entry) = sets.get(circuit) else {
            return Ok(Evicted {
                was_loaded: false,
                freed_bytes: 0,
            });
        };
        if entry.users > 0 || matches!(entry.slot, Slot::Loading(_)) {
            return Err(DaemonError::InUse {
                circuit: circuit.to_owned(),
                users: entry.users.max(1),
            });
        }
        let Some(Entry {
            slot: Slot::Ready(set),
            ..
        }) = sets.remove(circuit)
        else {
            return Ok(Evicted {
                was_loaded: false,
                freed_bytes: 0,
            });
        };
        drop(sets);
        let freed_bytes = self.inner.evict_entry(&set);
        self.inner.released.notify_waiters();
        tracing::info!(circuit, freed_bytes, "parameter set evicted");
        Ok(Evicted {
            was_loaded: true,
            freed_bytes,
        })
    }

    /// Every set known: loaded ones with their tier, and the others on disk as cold.
    pub fn status(&self) -> Vec<SetStatus> {
        let sets = self.inner.sets();
        let mut status: Vec<SetStatus> = sets
            .iter()
            .map(|(circuit, entry)| {
                let idle = entry.last_used.elapsed();
                match &entry.slot {
                    Slot::Ready(set) => SetStatus {
                        circuit: circuit.clone(),
                        tier: self.inner.tier(set),
                        bytes: set.bytes,
                        users: entry.users,
                        idle: Some(idle),
                        evictable: entry.users == 0 && idle >= self.inner.min_idle,
                        plans: self.inner.plans(set),
                        r1cs: set.r1cs_origin.clone(),
                        waiting: None,
                        settled: set.params.placed.is_some(),
                    },
                    Slot::Loading(_) => SetStatus {
                        circuit: circuit.clone(),
                        tier: Tier::Cold,
                        bytes: self.cold_bytes(circuit),
                        users: entry.users,
                        idle: Some(idle),
                        evictable: false,
                        plans: Vec::new(),
                        r1cs: None,
                        waiting: None,
                        settled: false,
                    },
                }
            })
            .collect();
        drop(sets);
        // The loads waiting for room, the most urgent first: each set shows its first.
        let mut waiting: Vec<(String, Priority, String)> = self
            .inner
            .waiters()
            .iter()
            .map(|w| {
                let (name, secs) = (priority_name(w.priority), w.since.elapsed().as_secs_f64());
                let says =
                    format!("for {name} work for {secs:.1} s; less urgent work waits with it");
                (w.circuit.clone(), w.priority, says)
            })
            .collect();
        waiting.sort_by_key(|w| std::cmp::Reverse(w.1));
        let waited_for = waiting.iter().map(|w| w.0.clone());
        for circuit in self.inner.circuits.on_disk().into_iter().chain(waited_for) {
            if !status.iter().any(|s| s.circuit == circuit) {
                status.push(SetStatus {
                    bytes: self.cold_bytes(&circuit),
                    circuit,
                    tier: Tier::Cold,
                    users: 0,
                    idle: None,
                    evictable: false,
                    plans: Vec::new(),
                    r1cs: None,
                    waiting: None,
                    settled: false,
                });
            }
        }
        for (circuit, _, says) in waiting {
            if let Some(set) = status.iter_mut().find(|s| s.circuit == circuit) {
                set.waiting.get_or_insert(says);
            }
        }
        status.sort_by(|a, b| a.circuit.cmp(&b.circuit));
        status
    }

    /// Resolves once a load of another set waits for room for work more urgent than
    /// `priority`: a lease of `circuit`'s set taken for such work, whose proof has not started,
    /// had better be given back (the job waits again behind that load), so that the sets in
    /// use go idle as soon as the proofs already started end.
    pub async fn outranked(&self, circuit: &str, priority: Priority) {
        loop {
            let wanted = self.inner.room_wanted.notified();
            tokio::pin!(wanted);
            wanted.as_mut().enable();
            if self.inner.outranked(circuit, priority) {
                return;
            }
            wanted.await;
        }
    }

    /// Host bytes the warm sets hold.
    pub fn warm_bytes(&self) -> u64 {
        let sets = self.inner.sets();
        self.inner.held(&sets)
    }

    fn cold_bytes(&self, circuit: &str) -> u64 {
        self.inner
            .circuits
            .describe(circuit)
            .ok()
            .and_then(|files| files.bytes)
            .unwrap_or(0)
    }

    /// One use of the set, counted under the lock that found or created its entry.
    fn counted(&self, circuit: &str) -> Use {
        Use {
            inner: Arc::clone(&self.inner),
            circuit: circuit.to_owned(),
        }
    }

    /// The set, ready: joins a load in flight, or starts one once there is room and no more
    /// urgent load waits for it.
    async fn ready(&self, circuit: &str, priority: Priority) -> Result<Lease, DaemonError> {
        let mut waiting_load: Option<WaitingLoad> = None;
        loop {
            let released = self.inner.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            let waiting = {
                let mut sets = self.inner.sets();
                self.inner.drop_orphaned(&mut sets, circuit);
                let loading = matches!(sets.get(circuit).map(|e| &e.slot), Some(Slot::Loading(_)));
                match sets.get_mut(circuit) {
                    // Held back (a load already under way is joined: its room is taken).
                    _ if !loading && self.inner.outranked(circuit, priority) => Err(None),
                    Some(entry) => {
                        entry.users += 1;
                        entry.last_used = Instant::now();
                        let counted = self.counted(circuit);
                        match &entry.slot {
                            Slot::Ready(set) => {
                                let set = Arc::clone(set);
                                drop(sets);
                                return Ok(Lease { _use: counted, set });
                            }
                            Slot::Loading(receiver) => Ok((counted, receiver.clone())),
                        }
                    }
                    None => {
                        let needed = self.cold_bytes(circuit);
                        match self.make_room(&mut sets, circuit, needed, priority)? {
                            Room::Fits => {
                                let receiver = self.start_load(&mut sets, circuit, needed);
                                // Its room is taken: the uses it held back go ahead.
                                waiting_load = None;
                                Ok((self.counted(circuit), receiver))
                            }
                            Room::Wait(until) => {
                                waiting_load
                                    .get_or_insert_with(|| self.wait_for_room(circuit, priority));
                                Err(until)
                            }
                        }
                    }
                }
            };
            match waiting {
                Ok((counted, mut receiver)) => {
                    let set = self.join(circuit, &mut receiver).await?;
                    return Ok(Lease { _use: counted, set });
                }
                Err(until) => match until {
                    Some(delay) => {
                        let _ = tokio::time::timeout(delay, released).await;
                    }
                    None => released.await,
                },
            }
        }
    }

    /// Counts a load as waiting for room, for the uses it holds back; the caller holds `sets`.
    fn wait_for_room(&self, circuit: &str, priority: Priority) -> WaitingLoad {
        let id = self.inner.next_waiter.fetch_add(1, Ordering::Relaxed);
        self.inner.waiters().push(Waiter {
            id,
            circuit: circuit.to_owned(),
            priority,
            since: Instant::now(),
        });
        self.inner.room_wanted.notify_waiters();
        WaitingLoad {
            inner: Arc::clone(&self.inner),
            id,
        }
    }

    /// Waits for a load in flight; the caller's use was counted already (and goes back with its
    /// [`Use`] if the load fails).
    async fn join(
        &self,
        circuit: &str,
        receiver: &mut watch::Receiver<Loaded>,
    ) -> Result<Arc<ParamSet>, DaemonError> {
        let loaded = match receiver.wait_for(Option::is_some).await {
            Ok(loaded) => loaded.clone(),
            Err(_) => None,
        };
        match loaded {
            Some(Ok(set)) => Ok(set),
            failed => {
                let reason = match failed {
                    Some(Err(reason)) => reason,
                    _ => "the load was abandoned".to_owned(),
                };
                Err(DaemonError::Parameters {
                    circuit: circuit.to_owned(),
                    reason,
                })
            }
        }
    }

    /// Evicts idle sets, least recently used first, until `circuit`'s set (`needed`: its size on
    /// disk, when known) fits the budget.
    fn make_room(
        &self,
        sets: &mut HashMap<String, Entry>,
        circuit: &str,
        needed: u64,
        priority: Priority,
    ) -> Result<Room, DaemonError> {
        if let Some(files) = self.inner.circuits.set_files(circuit) {
            let check = self.inner.memory.check(&files);
            check.map_err(|source| DaemonError::Memory {
                circuit: circuit.to_owned(),
                source,
            })?;
        }
        let budget = self.inner.budget;
        if needed > budget {
            return Err(DaemonError::Parameters {
                circuit: circuit.to_owned(),
                reason: format!(
                    "its {needed} bytes exceed the parameter budget of {budget} bytes \
                     ([memory] srs_budget)"
                ),
            });
        }
        Ok(self.inner.evict_idle(sets, needed, circuit, priority))
    }

    /// Starts loading a set nobody else is loading, counting the caller as its first user. The
    /// load runs in a task of its own, so a caller that goes away cannot strand it; its outcome
    /// is shared through the entry's channel. Errors are not kept: the next caller tries again.
    fn start_load(
        &self,
        sets: &mut HashMap<String, Entry>,
        circuit: &str,
        expected: u64,
    ) -> watch::Receiver<Loaded> {
        let (sender, receiver) = watch::channel(None);
        sets.insert(
            circuit.to_owned(),
            Entry {
                slot: Slot::Loading(receiver.clone()),
                expected,
                users: 1,
                last_used: Instant::now(),
            },
        );
        let inner = Arc::clone(&self.inner);
        let circuit = circuit.to_owned();
        tokio::spawn(async move {
            let start = Instant::now();
            let loading = Arc::clone(&inner);
            let name = circuit.clone();
            let loaded = tokio::task::spawn_blocking(move || {
                let set = Arc::new(loading.circuits.load(&name, &loading.devices)?);
                loading.place(&set)?;
                Ok::<_, String>(set)
            })
            .await
            .unwrap_or_else(|e| Err(format!("the load panicked: {e}")));
            let seconds = start.elapsed().as_secs_f64();
            let mut sets = inner.sets();
            match &loaded {
                Ok(set) => {
                    if let Some(entry) = sets.get_mut(&circuit) {
                        entry.slot = Slot::Ready(Arc::clone(set));
                    }
                    // Its size may not have been known before it loaded.
                    if let Room::Wait(_) =
                        inner.evict_idle(&mut sets, 0, &circuit, Priority::Normal)
                    {
                        tracing::warn!(
                            %circuit,
                            held = inner.held(&sets),
                            budget = inner.budget,
                            "parameter sets over budget until the ones in use are idle"
                        );
                    }
                    drop(sets);
                    inner.metrics.srs_loaded(&circuit, seconds);
                    tracing::info!(%circuit, bytes = set.bytes, seconds, "parameter set loaded");
                }
                Err(reason) => {
                    sets.remove(&circuit);
                    drop(sets);
                    tracing::warn!(%circuit, "parameter set failed to load: {reason}");
                }
            }
            sender.send_replace(Some(loaded));
            inner.released.notify_waiters();
        });
        receiver
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use cuzk_groth16::keys::PlacedPart;
    use cuzk_groth16::ProverBackend;
    use rand::SeedableRng;

    use super::*;
    use crate::circuits::{CircuitFiles, Work};
    use crate::kinds::Kind;
    use crate::proto::SubmitProofRequest;

    /// Circuits "a" … of 100 bytes each (one small real parameter set behind them all); "bad"
    /// fails its first load.
    struct Fake {
        params: Arc<Parameters>,
        loads: AtomicUsize,
        bad_failed: std::sync::atomic::AtomicBool,
    }

    impl Fake {
        fn new() -> Arc<Self> {
            let circuit = cuzk_synth::circuits::SyntheticCircuit {
                constraints: 16,
                boolean_fraction: 0.5,
                public_inputs: 1,
                seed: 1,
            };
            let mut rng = rand::rngs::StdRng::seed_from_u64(1);
            let params =
                cuzk_groth16::setup::generate_random_parameters(circuit, &mut rng).unwrap();
            Arc::new(Fake {
                params: Arc::new(params),
                loads: AtomicUsize::new(0),
                bad_failed: std::sync::atomic::AtomicBool::new(false),
            })
        }
    }

    impl Circuits for Fake {
        fn check(&self, _: SubmitProofRequest, _: Kind) -> Result<Work, DaemonError> {
            Ok(Work::Unsupported("fake".into()))
        }

        fn on_disk(&self) -> Vec<String> {
            vec!["a".into()]
        }

        fn describe(&self, circuit: &str) -> Result<CircuitFiles, DaemonError> {
            Ok(CircuitFiles {
                location: circuit.into(),
                bytes: Some(100),
            })
        }

        fn load(&self, circuit: &str, _: &Devices) -> Result<ParamSet, String> {
            self.loads.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            if circuit == "bad" && !self.bad_failed.swap(true, Ordering::SeqCst) {
                return Err("the disk said no".into());
            }
            // A copy per load, as from a file: each set's host copy is its own.
            Ok(ParamSet {
                params: Arc::new(Parameters::clone(&self.params)),
                compiled: None,
                bytes: 100,
                key_bytes: 90,
                r1cs_origin: None,
            })
        }
    }

    fn manager(fake: &Arc<Fake>, budget: u64, min_idle: Duration) -> SrsManager {
        on_devices(
            fake,
            budget,
            min_idle,
            Arc::new(cuzk_groth16::backend::CpuBackend),
        )
    }

    fn on_devices(
        fake: &Arc<Fake>,
        budget: u64,
        min_idle: Duration,
        device: Arc<dyn ProverBackend>,
    ) -> SrsManager {
        let memory = HostBudgets {
            total: cuzk_pipeline::engine::HostMemory::new(2 * budget, "test"),
            sets: budget,
            partitions: budget,
        };
        SrsManager::new(
            Arc::clone(fake) as Arc<dyn Circuits>,
            Devices::unmanaged(vec![device]),
            memory,
            min_idle,
            Arc::new(Metrics::new().unwrap()),
        )
    }

    fn loaded(srs: &SrsManager) -> Vec<(String, Tier, usize)> {
        srs.status()
            .into_iter()
            .filter(|s| s.tier != Tier::Cold)
            .map(|s| (s.circuit, s.tier, s.users))
            .collect()
    }

    #[tokio::test]
    async fn one_load_however_many_ask_and_errors_are_not_kept() {
        let fake = Fake::new();
        let srs = manager(&fake, 1000, Duration::ZERO);
        let leases = futures_join(&srs, "a", 5).await;
        assert_eq!(fake.loads.load(Ordering::SeqCst), 1);
        assert_eq!(loaded(&srs), vec![("a".into(), Tier::Hot, 5)]);
        drop(leases);
        assert_eq!(loaded(&srs), vec![("a".into(), Tier::Hot, 0)]);

        let failed = srs.acquire("bad", Priority::Normal).await.unwrap_err();
        assert!(failed.to_string().contains("the disk said no"), "{failed}");
        let (_lease, waited) = srs.acquire("bad", Priority::Normal).await.unwrap();
        assert!(waited > 0);
        assert_eq!(fake.loads.load(Ordering::SeqCst), 3);
    }

    async fn futures_join(srs: &SrsManager, circuit: &str, n: usize) -> Vec<Lease> {
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let srs = srs.clone();
                let circuit = circuit.to_owned();
                tokio::spawn(
                    async move { srs.acquire(&circuit, Priority::Normal).await.unwrap().0 },
                )
            })
            .collect();
        let mut leases = Vec::new();
        for task in tasks {
            leases.push(task.await.unwrap());
        }
        leases
    }

    #[tokio::test]
    async fn the_least_recently_used_idle_set_makes_room() {
        let fake = Fake::new();
        let srs = manager(&fake, 250, Duration::ZERO);
        drop(srs.acquire("a", Priority::Normal).await.unwrap());
        drop(srs.acquire("b", Priority::Normal).await.unwrap());
        drop(srs.acquire("a", Priority::Normal).await.unwrap());
        drop(srs.acquire("c", Priority::Normal).await.unwrap());
        let names: Vec<String> = loaded(&srs).into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["a", "c"], "b was the least recently used");
        assert_eq!(srs.warm_bytes(), 200);
        // Cold: on disk, not loaded.
        assert!(srs.status().iter().all(|s| s.circuit != "b"));
        let big = manager(&fake, 50, Duration::ZERO)
            .acquire("a", Priority::Normal)
            .await
            .unwrap_err();
        assert!(big.to_string().contains("budget"), "{big}");
    }

    #[tokio::test]
    async fn a_set_in_use_is_never_evicted_and_a_load_waits_for_room() {
        let fake = Fake::new();
        let srs = manager(&fake, 150, Duration::ZERO);
        let (held, _) = srs.acquire("a", Priority::Normal).await.unwrap();
        let waiting = {
            let srs = srs.clone();
            tokio::spawn(async move { srs.acquire("b", Priority::Normal).await.unwrap() })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished(), "b must wait while a is in use");
        assert!(matches!(srs.evict("a"), Err(DaemonError::InUse { .. })));
        drop(held);
        let (_b, waited) = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        assert!(waited >= 100, "{waited}");
        let names: Vec<String> = loaded(&srs).into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["b"]);
        assert_eq!(
            srs.evict("a").unwrap(),
            Evicted {
                was_loaded: false,
                freed_bytes: 0
            }
        );
    }

    #[tokio::test]
    async fn a_set_goes_only_after_eviction_min_idle() {
        let fake = Fake::new();
        let srs = manager(&fake, 150, Duration::from_millis(300));
        drop(srs.acquire("a", Priority::Normal).await.unwrap());
        let start = Instant::now();
        let (_b, _) = srs.acquire("b", Priority::Normal).await.unwrap();
        assert!(
            start.elapsed() >= Duration::from_millis(250),
            "{:?}",
            start.elapsed()
        );
        let names: Vec<String> = loaded(&srs).into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["b"]);
    }

    /// Acquires `circuit` at `priority` in a task of its own.
    fn spawn_acquire(
        srs: &SrsManager,
        circuit: &'static str,
        priority: Priority,
    ) -> tokio::task::JoinHandle<Lease> {
        let srs = srs.clone();
        tokio::spawn(async move { srs.acquire(circuit, priority).await.unwrap().0 })
    }

    async fn finishes(task: tokio::task::JoinHandle<Lease>) -> Lease {
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap()
    }

    #[tokio::test]
    async fn a_more_urgent_load_waiting_for_room_holds_back_new_uses_of_other_sets() {
        // Two sets fill the budget, both in use by NORMAL work; a HIGH one (a WindowPoSt) waits.
        let fake = Fake::new();
        let srs = manager(&fake, 200, Duration::ZERO);
        let (a, _) = srs.acquire("a", Priority::Normal).await.unwrap();
        let (b, _) = srs.acquire("b", Priority::Normal).await.unwrap();
        let urgent = spawn_acquire(&srs, "c", Priority::High);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !urgent.is_finished(),
            "c must wait while a and b are in use"
        );
        let waiting = |srs: &SrsManager| {
            let status = srs.status().into_iter().find(|s| s.circuit == "c");
            status.and_then(|s| s.waiting)
        };
        let shown = waiting(&srs).unwrap_or_default();
        assert!(shown.starts_with("for HIGH work for "), "{shown}");
        // New NORMAL work on a loaded set waits with it; as urgent work does not.
        let held_back = spawn_acquire(&srs, "a", Priority::Normal);
        let as_urgent = finishes(spawn_acquire(&srs, "a", Priority::High)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !held_back.is_finished(),
            "a NORMAL use of a must wait for c"
        );
        drop(as_urgent);
        // b's last proof ends: c evicts it (never a set in use) and loads; a's use goes ahead.
        drop(b);
        let c = finishes(urgent).await;
        let names: Vec<String> = loaded(&srs).into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(waiting(&srs), None);
        let a_again = finishes(held_back).await;
        drop((a, a_again, c));
        // Without the urgent load, a NORMAL use of a loaded set never waits.
        let (_a, waited) = srs.acquire("a", Priority::Normal).await.unwrap();
        assert_eq!(waited, 0);
    }

    #[tokio::test]
    async fn urgent_loads_evict_idle_sets_without_waiting_for_min_idle() {
        let fake = Fake::new();
        let srs = manager(&fake, 100, Duration::from_secs(3600));
        drop(srs.acquire("a", Priority::Normal).await.unwrap());
        // NORMAL work would wait an hour for a to be idle long enough; HIGH work does not.
        let normal = spawn_acquire(&srs, "b", Priority::Normal);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!normal.is_finished());
        normal.abort();
        let (_c, _) = srs.acquire("c", Priority::High).await.unwrap();
        let names: Vec<String> = loaded(&srs).into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["c"]);
    }

    /// A device that holds every set it is given wholly resident, and settles them; until
    /// `holds_settled` is cleared (as a device added since would not hold them).
    struct Resident {
        holds_settled: std::sync::atomic::AtomicBool,
    }

    impl ProverBackend for Resident {
        fn name(&self) -> &str {
            "fake:0"
        }

        fn prove_start(
            &self,
            _: &Parameters,
            _: cuzk_synth::ProvingAssignment,
            _: &dyn cuzk_groth16::DeviceLock,
        ) -> Result<cuzk_groth16::Started, cuzk_groth16::ProveError> {
            Err(cuzk_groth16::ProveError::Backend {
                backend: "fake",
                reason: "proves nothing".into(),
            })
        }

        fn resident(&self, params: &Parameters) -> Option<u64> {
            let held = match &params.placed {
                Some(placed) => placed.kept_on(self.name()),
                None => true,
            };
            (held && self.holds_settled.load(Ordering::SeqCst)).then_some(1)
        }

        fn settle(&self, params: &Parameters) -> Option<PlacedPart> {
            params
                .placed
                .is_none()
                .then(|| PlacedPart::new(self.name().to_owned(), ()))
        }
    }

    #[tokio::test]
    async fn sets_resident_on_every_device_let_their_host_copies_go_to_make_room() {
        let fake = Fake::new();
        let device = Arc::new(Resident {
            holds_settled: true.into(),
        });
        let srs = on_devices(&fake, 250, Duration::from_secs(3600), device.clone());
        let (a, _) = srs.acquire("a", Priority::Normal).await.unwrap();
        let (b, _) = srs.acquire("b", Priority::Normal).await.unwrap();
        // Both in use, idle for an hour before they could go: without settling c would wait.
        let c = spawn_acquire(&srs, "c", Priority::Normal);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !c.is_finished(),
            "a's and b's host copies are held by their proofs"
        );
        let status = srs.status();
        let settled: Vec<&str> = status
            .iter()
            .filter(|s| s.settled)
            .map(|s| s.circuit.as_str())
            .collect();
        assert_eq!(settled, ["a", "b"]);
        // A new use of a proves from the device; the host copy counts until its proof ends.
        let (a_again, _) = srs.acquire("a", Priority::Normal).await.unwrap();
        assert!(a_again.set.params.placed.is_some() && a_again.set.bytes == 10);
        assert!(a.set.params.placed.is_none());
        assert_eq!(srs.warm_bytes(), 10 + 10 + 2 * 90);
        drop(a);
        let c = finishes(c).await;
        assert_eq!(srs.warm_bytes(), 10 + 10 + 90 + 100);
        assert_eq!(
            fake.loads.load(Ordering::SeqCst),
            3,
            "none evicted, none read again"
        );

        // A device in service without a's points: a's next idle use reads it from disk again.
        device.holds_settled.store(false, Ordering::SeqCst);
        drop((a_again, b, c));
        let (a_read, _) = srs.acquire("a", Priority::Normal).await.unwrap();
        assert!(a_read.set.params.placed.is_none(), "a host copy again");
        assert_eq!(fake.loads.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn preload_and_evict_report_what_they_did() {
        let fake = Fake::new();
        let srs = manager(&fake, 1000, Duration::ZERO);
        let first = srs.preload("a").await.unwrap();
        assert!(!first.already_loaded);
        let again = srs.preload("a").await.unwrap();
        assert_eq!(
            again,
            Preloaded {
                already_loaded: true,
                load_ms: 0
            }
        );
        assert_eq!(
            srs.evict("a").unwrap(),
            Evicted {
                was_loaded: true,
                freed_bytes: 100
            }
        );
        assert_eq!(srs.status()[0].tier, Tier::Cold);
    }
}
