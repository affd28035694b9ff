//! Parameter sets in tiers, per circuit id: **cold** (its files on disk), **warm** (read into
//! host memory), **hot** (ready for proving: placed on every GPU; with the CPU backend, which
//! proves from host memory, a warm set is as hot as it gets).
//!
//! A set loads on first use or on `PreloadSRS` / `[srs] preload`, once however many ask at the
//! same time (single flight, outside the map's lock). Users hold a [`Lease`]; a set with a lease
//! out is never evicted. When a new set does not fit the host budget, idle sets go least
//! recently used first, but only those idle for at least `eviction_min_idle` (so two circuits
//! in turn do not thrash): until one qualifies the load waits. Device memory is the backends'
//! to manage (they evict their least recently used idle sets when a new one does not fit).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cuzk_groth16::ProverBackend;
use tokio::sync::{watch, Notify};

use crate::circuits::{Circuits, ParamSet};
use crate::metrics::Metrics;
use crate::DaemonError;

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
}

/// What a load ends with, shared by everyone who waited for it.
type Loaded = Option<Result<Arc<ParamSet>, String>>;

enum Slot {
    Loading(watch::Receiver<Loaded>),
    Ready(Arc<ParamSet>),
}

struct Entry {
    slot: Slot,
    users: usize,
    last_used: Instant,
}

struct Inner {
    circuits: Arc<dyn Circuits>,
    devices: Vec<Arc<dyn ProverBackend>>,
    /// Host bytes the warm sets may hold together.
    budget: u64,
    min_idle: Duration,
    sets: Mutex<HashMap<String, Entry>>,
    /// Fired when a lease ends or a set goes: a waiting load may now fit.
    released: Notify,
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

    /// Warm bytes held now.
    fn held(sets: &HashMap<String, Entry>) -> u64 {
        sets.values()
            .map(|e| match &e.slot {
                Slot::Ready(set) => set.bytes,
                Slot::Loading(_) => 0,
            })
            .sum()
    }

    /// Places a warm set on every device; its tier is then hot.
    fn place(&self, set: &ParamSet) -> Result<(), String> {
        for device in &self.devices {
            device
                .preload(&set.params)
                .map_err(|e| format!("placing on {}: {e}", device.name()))?;
        }
        Ok(())
    }

    fn tier(&self, set: &ParamSet) -> Tier {
        if self
            .devices
            .iter()
            .all(|d| matches!(d.device(), Ok(None)) || d.resident(&set.params).is_some())
        {
            Tier::Hot
        } else {
            Tier::Warm
        }
    }

    fn evict_entry(&self, set: &ParamSet) -> u64 {
        let device: u64 = self.devices.iter().map(|d| d.evict(&set.params)).sum();
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
    pub fn new(
        circuits: Arc<dyn Circuits>,
        devices: Vec<Arc<dyn ProverBackend>>,
        budget: u64,
        min_idle: Duration,
        metrics: Arc<Metrics>,
    ) -> Self {
        SrsManager {
            inner: Arc::new(Inner {
                circuits,
                devices,
                budget,
                min_idle,
                sets: Mutex::new(HashMap::new()),
                released: Notify::new(),
                metrics,
            }),
        }
    }

    /// The circuit's set, loading it (and placing it on the GPUs) if needed; also returns how
    /// long this call waited for loading, 0 when the set was ready.
    pub async fn acquire(&self, circuit: &str) -> Result<(Lease, u64), DaemonError> {
        let start = Instant::now();
        let lease = self.ready(circuit).await?;
        Ok((lease, start.elapsed().as_millis() as u64))
    }

    /// Loads a set and places it on the GPUs without holding it.
    pub async fn preload(&self, circuit: &str) -> Result<Preloaded, DaemonError> {
        self.inner.circuits.describe(circuit)?;
        let already_loaded = matches!(
            self.inner.sets().get(circuit).map(|e| &e.slot),
            Some(Slot::Ready(_))
        );
        let start = Instant::now();
        let (lease, _) = self.acquire(circuit).await?;
        // A ready set may have been pushed off a device since (by the backend's own eviction).
        let inner = Arc::clone(&self.inner);
        let set = Arc::clone(&lease.set);
        let placed = tokio::task::spawn_blocking(move || inner.place(&set))
            .await
            .map_err(|e| DaemonError::Internal(e.to_string()))?;
        placed.map_err(|reason| DaemonError::Parameters {
            circuit: circuit.to_owned(),
            reason,
        })?;
        Ok(Preloaded {
            already_loaded,
            load_ms: if already_loaded {
                0
            } else {
                start.elapsed().as_millis() as u64
            },
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
            .map(|(circuit, entry)| match &entry.slot {
                Slot::Ready(set) => SetStatus {
                    circuit: circuit.clone(),
                    tier: self.inner.tier(set),
                    bytes: set.bytes,
                    users: entry.users,
                },
                Slot::Loading(_) => SetStatus {
                    circuit: circuit.clone(),
                    tier: Tier::Cold,
                    bytes: self.cold_bytes(circuit),
                    users: entry.users,
                },
            })
            .collect();
        drop(sets);
        for circuit in self.inner.circuits.on_disk() {
            if !status.iter().any(|s| s.circuit == circuit) {
                status.push(SetStatus {
                    bytes: self.cold_bytes(&circuit),
                    circuit,
                    tier: Tier::Cold,
                    users: 0,
                });
            }
        }
        status.sort_by(|a, b| a.circuit.cmp(&b.circuit));
        status
    }

    /// Host bytes the warm sets hold.
    pub fn warm_bytes(&self) -> u64 {
        Inner::held(&self.inner.sets())
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

    /// The set, ready: joins a load in flight, or starts one once there is room.
    async fn ready(&self, circuit: &str) -> Result<Lease, DaemonError> {
        loop {
            let released = self.inner.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            let waiting = {
                let mut sets = self.inner.sets();
                match sets.get_mut(circuit) {
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
                    None => match self.make_room(&mut sets, circuit)? {
                        Room::Fits => {
                            let receiver = self.start_load(&mut sets, circuit);
                            Ok((self.counted(circuit), receiver))
                        }
                        Room::Wait(until) => Err(until),
                    },
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

    /// Evicts idle sets, least recently used first, until `circuit`'s set fits the budget.
    fn make_room(
        &self,
        sets: &mut HashMap<String, Entry>,
        circuit: &str,
    ) -> Result<Room, DaemonError> {
        let needed = self.cold_bytes(circuit);
        let budget = self.inner.budget;
        if needed > budget {
            return Err(DaemonError::Parameters {
                circuit: circuit.to_owned(),
                reason: format!(
                    "its {needed} bytes exceed the parameter budget of {budget} bytes \
                     ([memory] total_budget less the partitions' share)"
                ),
            });
        }
        loop {
            if Inner::held(sets) + needed <= budget {
                return Ok(Room::Fits);
            }
            let now = Instant::now();
            let idle = sets
                .iter()
                .filter(|(_, e)| e.users == 0 && matches!(e.slot, Slot::Ready(_)))
                .min_by_key(|(_, e)| e.last_used)
                .map(|(name, e)| (name.clone(), now.duration_since(e.last_used)));
            match idle {
                Some((name, idle)) if idle >= self.inner.min_idle => {
                    if let Some(Entry {
                        slot: Slot::Ready(set),
                        ..
                    }) = sets.remove(&name)
                    {
                        let freed = self.inner.evict_entry(&set);
                        tracing::info!(
                            circuit = %name,
                            freed,
                            "parameter set evicted to make room for {circuit}"
                        );
                    }
                }
                Some((_, idle)) => return Ok(Room::Wait(Some(self.inner.min_idle - idle))),
                None => return Ok(Room::Wait(None)),
            }
        }
    }

    /// Starts loading a set nobody else is loading, counting the caller as its first user. The
    /// load runs in a task of its own, so a caller that goes away cannot strand it; its outcome
    /// is shared through the entry's channel. Errors are not kept: the next caller tries again.
    fn start_load(
        &self,
        sets: &mut HashMap<String, Entry>,
        circuit: &str,
    ) -> watch::Receiver<Loaded> {
        let (sender, receiver) = watch::channel(None);
        sets.insert(
            circuit.to_owned(),
            Entry {
                slot: Slot::Loading(receiver.clone()),
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
                let set = Arc::new(loading.circuits.load(&name)?);
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
