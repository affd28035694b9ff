//! The daemon's core, apart from the gRPC service: request ids, the life of a job, await, cancel
//! and status. It takes requests as prost decoded them from the wire (`SubmitProofRequest`), never
//! tonic's types, so the service stays a thin layer over it.
//!
//! A job is one attempt at a request id, registered once its request is checked. What a request
//! does with the attempt already under its id is [`crate::ids`]'s decision: it joins it (one
//! proof however many ask), retries a failed or cancelled one, or supersedes one for other
//! content. Each job runs in a task of its own: parameters, circuits, the engine, the last step.
//! So it goes on when the client that asked for it disconnects, and its result waits for an
//! `AwaitProof` or a retry for the retention time.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use cuzk_groth16::ProverBackend;
use cuzk_pipeline::{Devices, Engine, JobError, Priority};
use rand::RngCore;
use tokio::sync::{watch, Notify};

use crate::circuits::{BuildJob, Circuits, Work};
use crate::error::DaemonError;
use crate::feed::{Feed, JobName};
use crate::ids::{Content, Decision, Standing};
use crate::kinds::{priority_from_wire, Kind, KINDS};
use crate::live::{Live, PartitionView, WorkerView};
use crate::metrics::{Gauges, Metrics};
use crate::outcome::{Ended, Status, Timings};
use crate::proto::SubmitProofRequest;
use crate::srs::{SetStatus, SrsManager};

/// What an `AwaitProof` gets: the job's end, or nothing yet when its timeout passed first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Awaited {
    Ended(Arc<Ended>),
    TimedOut,
}

#[derive(Clone, Debug)]
enum State {
    /// Checked; loading parameters or building circuits.
    Preparing,
    /// In the engine.
    Proving,
    Done {
        ended: Arc<Ended>,
        at: Instant,
    },
}

/// One attempt at a request id, shared by its task and every request that joined it.
#[derive(Debug)]
pub struct Job {
    pub id: String,
    pub kind: Kind,
    pub priority: Priority,
    /// What it proves: a request joins it only with the same.
    content: Content,
    /// 1 for the first attempt under its id; each retry or supersession counts one more.
    pub attempt: u32,
    /// The attempt that superseded it (same id, other content): its waiters get that one's end.
    successor: OnceLock<Arc<Job>>,
    seq: u64,
    submitted: Instant,
    state: watch::Sender<State>,
    cancelled: AtomicBool,
    cancel: Notify,
    /// Why it was cancelled, for the result.
    cancel_reason: Mutex<Option<String>>,
}

impl Job {
    fn done(&self) -> bool {
        matches!(*self.state.borrow(), State::Done { .. })
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    fn standing(&self) -> Standing {
        match &*self.state.borrow() {
            State::Done { ended, .. } => match ended.status {
                Status::Completed => Standing::Completed,
                Status::Failed => Standing::Failed,
                Status::Cancelled => Standing::Cancelled,
            },
            _ if self.is_cancelled() => Standing::Cancelled,
            _ => Standing::Running,
        }
    }

    /// What the live page's feed tags its records and lists its end by.
    fn name(&self) -> JobName<'_> {
        JobName {
            id: &self.id,
            kind: self.kind,
            priority: self.priority,
            attempt: self.attempt,
        }
    }

    /// What a request for `content` does with this attempt.
    fn decide(&self, content: Content) -> Decision {
        Decision::of(Some((self.standing(), self.content)), content)
    }

    /// Waits until it has ended.
    async fn wait_done(&self) -> Result<Arc<Ended>, DaemonError> {
        let mut state = self.state.subscribe();
        match state
            .wait_for(|s| matches!(s, State::Done { .. }))
            .await
            .map(|s| s.clone())
        {
            Ok(State::Done { ended, .. }) => Ok(ended),
            _ => Err(DaemonError::Internal(format!("job {} vanished", self.id))),
        }
    }
}

/// The answer to a submission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    pub job_id: String,
    /// Unfinished jobs ahead of it (higher priority, or the same and older).
    pub queue_position: u32,
    pub assigned_gpu: String,
    /// Whether it joined a job already registered under its id.
    pub joined: bool,
}

/// One GPU as a status shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuReport {
    pub ordinal: u32,
    pub name: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
    /// Device memory cuzk may hold there, and the most it has held.
    pub budget_bytes: u64,
    pub peak_bytes: u64,
    pub job: Option<(String, Kind)>,
    /// Partitions proven on it, and attempts failed by its faults.
    pub partitions: u64,
    pub faults: u64,
    /// Why it was taken out of service; `None` while in service.
    pub out_of_service: Option<String>,
}

/// One of the engine's devices, as the live page lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceReport {
    /// The engine's index (TIMELINE's `device=`).
    pub index: usize,
    /// The backend's name (`cpu`, `cuda:0 (…)`).
    pub name: String,
    /// What the driver says; `None` for a backend without a device (the CPU's).
    pub gpu: Option<GpuReport>,
}

/// One proof kind's queue (at one priority, where split by priority).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueReport {
    pub kind: Kind,
    /// Jobs none of whose work runs yet.
    pub pending: u32,
    /// Jobs preparing (parameters, circuits) or with a partition in synthesis, on a GPU or
    /// finalizing.
    pub in_progress: u32,
}

impl QueueReport {
    fn empty(kind: Kind) -> Self {
        QueueReport {
            kind,
            pending: 0,
            in_progress: 0,
        }
    }
}

/// Everything `GetStatus` and `/status` report.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusReport {
    pub gpus: Vec<GpuReport>,
    pub sets: Vec<SetStatus>,
    pub queues: Vec<QueueReport>,
    pub completed: u64,
    pub failed: u64,
    pub uptime_seconds: u64,
    pub pinned_bytes: u64,
    pub pinned_limit_bytes: u64,
}

/// One job in flight as Curio's daemon's `/status` lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineReport {
    pub job_id: String,
    pub kind: Kind,
    pub started_ago: Duration,
    /// Each partition, pending ones included.
    pub partitions: Vec<PartitionView>,
    pub proven: usize,
}

/// What Curio's daemon's `/status` shows beyond [`StatusReport`].
#[derive(Clone, Debug, PartialEq)]
pub struct ActivityReport {
    pub uptime: Duration,
    /// Host bytes partitions in flight may hold (the engine's budget), and hold now.
    pub partitions_bytes: u64,
    pub partitions_used: u64,
    /// Host bytes parameter sets may hold, and hold now.
    pub sets_bytes: u64,
    pub sets_used: u64,
    pub synthesis_limit: usize,
    pub synthesizing: usize,
    pub pipelines: Vec<PipelineReport>,
    pub workers: Vec<WorkerView>,
    /// Completed and failed proofs of each kind.
    pub by_kind: Vec<(Kind, u64, u64)>,
    /// Jobs none of whose work runs yet.
    pub queue_depth: u64,
    /// Partitions queued for or on a GPU, and those finalizing.
    pub on_gpu: usize,
    pub finalizing: usize,
    /// Jobs not finished, those preparing (parameters, circuits) included.
    pub unfinished: usize,
}

/// What the daemon is built from.
pub struct Parts {
    pub engine: Engine,
    pub circuits: Arc<dyn Circuits>,
    pub srs: SrsManager,
    /// The engine's devices, lent.
    pub devices: Devices,
    pub metrics: Arc<Metrics>,
    /// Partitions and GPU workers now, from the engine's records.
    pub live: Arc<Live>,
    /// What the live page follows: the same records, and jobs' ends.
    pub feed: Arc<Feed>,
    /// How long a finished job's result stays retrievable.
    pub retention: Duration,
    /// GPU workers the engine runs (for the metrics).
    pub gpu_workers: usize,
    /// Synthesis tasks the engine runs: partitions synthesizing at once, at most.
    pub partition_workers: usize,
    /// Host bytes parameter sets may hold (beside the engine's budget).
    pub srs_budget: u64,
    /// Page-locked host bytes allowed (reported beside what is held).
    pub pinned_limit: u64,
}

impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parts")
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

/// The proving daemon behind the rpcs.
pub struct Daemon {
    parts: Parts,
    jobs: Mutex<HashMap<String, Arc<Job>>>,
    next_seq: AtomicU64,
    started: Instant,
    draining: AtomicBool,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon").finish_non_exhaustive()
    }
}

/// A job's own host work (checking the request, building its circuits, its last step) on a
/// blocking thread, its time logged at debug level: the daemon's cost beside the engine's.
async fn host_step<T: Send + 'static>(
    job: &str,
    step: &'static str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    let start = Instant::now();
    let done = tokio::task::spawn_blocking(work).await;
    tracing::debug!(
        job,
        step,
        ms = start.elapsed().as_secs_f64() * 1e3,
        "host step"
    );
    done
}

/// A fresh job id for a request without one.
fn fresh_id() -> String {
    let mut bytes = [0u8; 12];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("job-{hex}")
}

impl Daemon {
    /// The daemon, and its janitor task that forgets results older than the retention time.
    pub fn start(parts: Parts) -> Arc<Self> {
        let daemon = Arc::new(Daemon {
            parts,
            jobs: Mutex::new(HashMap::new()),
            next_seq: AtomicU64::new(0),
            started: Instant::now(),
            draining: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&daemon);
        let period =
            (daemon.parts.retention / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                match weak.upgrade() {
                    Some(daemon) => daemon.forget_expired(),
                    None => return,
                }
            }
        });
        daemon
    }

    fn jobs(&self) -> MutexGuard<'_, HashMap<String, Arc<Job>>> {
        // Inserts and removes complete or change nothing.
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn srs(&self) -> &SrsManager {
        &self.parts.srs
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.parts.metrics
    }

    pub fn feed(&self) -> &Feed {
        &self.parts.feed
    }

    /// Checks and registers a request, or joins the job registered under its id.
    pub async fn submit(
        self: &Arc<Self>,
        request: SubmitProofRequest,
    ) -> Result<Submitted, DaemonError> {
        let (job, decision) = self.register(request).await?;
        Ok(self.submitted(&job, decision == Decision::Join))
    }

    /// Submits a request and waits for the end of its attempt, or of the attempt that
    /// superseded it (`Prove`).
    pub async fn prove(
        self: &Arc<Self>,
        request: SubmitProofRequest,
    ) -> Result<(String, Arc<Ended>), DaemonError> {
        let (job, _) = self.register(request).await?;
        let id = job.id.clone();
        Ok((id, self.outcome(job).await?))
    }

    /// The attempt a request joins, or the new one it starts (see [`crate::ids`]).
    async fn register(
        self: &Arc<Self>,
        mut request: SubmitProofRequest,
    ) -> Result<(Arc<Job>, Decision), DaemonError> {
        if self.draining.load(Ordering::SeqCst) {
            return Err(DaemonError::ShuttingDown);
        }
        let kind = Kind::from_wire(request.proof_kind).ok_or_else(|| {
            DaemonError::invalid(
                "proof_kind",
                format!(
                    "{} is not a proof kind (1 PoRep C2, 2 SnapDeals, 3 WindowPoSt, 4 WinningPoSt)",
                    request.proof_kind
                ),
            )
        })?;
        if request.request_id.is_empty() {
            request.request_id = fresh_id();
        }
        let id = request.request_id.clone();
        // As Curio's daemon: a priority a newer API may add is no reason to refuse a proof.
        let priority = priority_from_wire(request.priority)
            .unwrap_or_else(|number| {
                let default = kind.default_priority();
                tracing::warn!(job = %id, number, ?default, "unknown priority; the kind's default");
                None
            })
            .unwrap_or_else(|| kind.default_priority());
        // A 32 GiB C1 output is ~50 MB: hashed off the runtime's threads.
        let (content, request) = host_step(&id, "digest", move || (Content::of(&request), request))
            .await
            .map_err(|e| DaemonError::Internal(format!("hashing the request: {e}")))?;
        // Bound first: `decide` reads the job's state, not the map.
        let registered = self.jobs().get(&id).cloned();
        if let Some(job) = registered.filter(|job| job.decide(content) == Decision::Join) {
            tracing::info!(job = %id, attempt = job.attempt, "{}", Decision::Join.describe());
            return Ok((job, Decision::Join));
        }
        let circuits = Arc::clone(&self.parts.circuits);
        let work = host_step(&id, "check", move || circuits.check(request, kind))
            .await
            .map_err(|e| DaemonError::Internal(format!("checking the request: {e}")))??;
        // Decided again under the lock: another request with this id may have been registered
        // while this one was checked.
        let (job, decision, previous) = {
            let mut jobs = self.jobs();
            let previous = jobs.get(&id).cloned();
            let decision = previous
                .as_ref()
                .map_or(Decision::First, |job| job.decide(content));
            if let (Decision::Join, Some(job)) = (decision, &previous) {
                let job = Arc::clone(job);
                drop(jobs);
                tracing::info!(job = %id, attempt = job.attempt, "{}", decision.describe());
                return Ok((job, decision));
            }
            let job = Arc::new(Job {
                id: id.clone(),
                kind,
                priority,
                content,
                attempt: previous.as_ref().map_or(1, |job| job.attempt + 1),
                successor: OnceLock::new(),
                seq: self.next_seq.fetch_add(1, Ordering::Relaxed),
                submitted: Instant::now(),
                state: watch::Sender::new(State::Preparing),
                cancelled: AtomicBool::new(false),
                cancel: Notify::new(),
                cancel_reason: Mutex::new(None),
            });
            if let (Decision::Supersede { .. }, Some(old)) = (decision, &previous) {
                let _ = old.successor.set(Arc::clone(&job));
            }
            jobs.insert(id, Arc::clone(&job));
            (job, decision, previous)
        };
        self.parts.feed.started(job.name());
        if let (Decision::Supersede { running: true }, Some(old)) = (decision, &previous) {
            self.cancel_job(
                old,
                "cancelled: superseded by a request with the same id and other content",
            );
        }
        tracing::info!(
            job = %job.id,
            attempt = job.attempt,
            kind = kind.queue_name(),
            ?priority,
            content = ?content,
            "{}",
            decision.describe()
        );
        tokio::spawn(Arc::clone(self).run(Arc::clone(&job), previous, work));
        Ok((job, decision))
    }

    fn submitted(&self, job: &Job, joined: bool) -> Submitted {
        let ahead = self
            .jobs()
            .values()
            .filter(|other| {
                !other.done()
                    && other.seq != job.seq
                    && (other.priority > job.priority
                        || (other.priority == job.priority && other.seq < job.seq))
            })
            .count();
        // Its partitions go to whichever device in service is free first.
        let names: Vec<String> = self
            .parts
            .engine
            .devices()
            .into_iter()
            .filter(|d| d.out_of_service.is_none())
            .map(|d| d.backend)
            .collect();
        Submitted {
            job_id: job.id.clone(),
            queue_position: u32::try_from(ahead).unwrap_or(u32::MAX),
            assigned_gpu: names.join(", "),
            joined,
        }
    }

    /// Waits until the latest attempt under `id` ends, or `timeout` passes (`None`: no limit).
    pub async fn await_job(
        &self,
        id: &str,
        timeout: Option<Duration>,
    ) -> Result<Awaited, DaemonError> {
        let job = self
            .jobs()
            .get(id)
            .cloned()
            .ok_or_else(|| DaemonError::NotFound(id.to_owned()))?;
        match timeout {
            None => self.outcome(job).await.map(Awaited::Ended),
            Some(limit) => match tokio::time::timeout(limit, self.outcome(job)).await {
                Ok(ended) => ended.map(Awaited::Ended),
                Err(_) => Ok(Awaited::TimedOut),
            },
        }
    }

    /// The end of `job`, or of the attempt that superseded it (and so on).
    async fn outcome(&self, mut job: Arc<Job>) -> Result<Arc<Ended>, DaemonError> {
        loop {
            let ended = job.wait_done().await?;
            match job.successor.get() {
                Some(next) => job = Arc::clone(next),
                None => return Ok(ended),
            }
        }
    }

    /// Cancels a queued or running job; `true` when a partition of it was in synthesis, on a GPU
    /// or finalizing. A finished job stays as it ended.
    pub fn cancel(&self, id: &str, reason: &str) -> Result<bool, DaemonError> {
        let job = self
            .jobs()
            .get(id)
            .cloned()
            .ok_or_else(|| DaemonError::NotFound(id.to_owned()))?;
        if job.done() {
            return Ok(false);
        }
        let was_running = self
            .parts
            .engine
            .progress(id)
            .is_some_and(|progress| progress.running());
        self.cancel_job(&job, reason);
        Ok(was_running)
    }

    /// Marks the job cancelled, wakes its task, and cancels it in the engine. The task checks
    /// the mark after it submits to the engine, so a cancel racing the submission is not lost.
    fn cancel_job(&self, job: &Job, reason: &str) {
        job.cancel_reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(|| reason.to_owned());
        job.cancelled.store(true, Ordering::SeqCst);
        job.cancel.notify_one();
        self.parts.engine.cancel(&job.id);
        tracing::info!(job = %job.id, reason, "job cancelled");
    }

    /// Stops taking new proofs (submissions get `UNAVAILABLE`); the rest goes on.
    pub fn begin_drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether it is shutting down (and takes no new proofs).
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// The jobs not finished yet.
    fn pending(&self) -> Vec<Arc<Job>> {
        self.jobs()
            .values()
            .filter(|j| !j.done())
            .cloned()
            .collect()
    }

    /// How many jobs are not finished yet.
    pub fn unfinished(&self) -> usize {
        self.pending().len()
    }

    /// Cancels every unfinished job with `reason`.
    pub fn cancel_all(&self, reason: &str) {
        for job in self.pending() {
            self.cancel_job(&job, reason);
        }
    }

    /// Waits until no job is unfinished.
    pub async fn idle(&self) {
        loop {
            let Some(job) = self.pending().into_iter().next() else {
                return;
            };
            let _ = job.wait_done().await;
        }
    }

    fn forget_expired(&self) {
        let retention = self.parts.retention;
        self.jobs().retain(|_, job| match &*job.state.borrow() {
            State::Done { at, .. } => at.elapsed() < retention,
            _ => true,
        });
    }

    /// The job's whole life, in its own task; `previous` is the attempt it replaced.
    async fn run(self: Arc<Self>, job: Arc<Job>, previous: Option<Arc<Job>>, work: Work) {
        let ended = match work {
            Work::Unsupported(reason) => {
                self.ended(&job, Status::Failed, Vec::new(), reason, Timings::default())
            }
            Work::Prove {
                circuit,
                job: build,
            } => {
                tokio::select! {
                    ended = self.prove_attempt(&job, previous, &circuit, build) => ended,
                    () = job.cancel.notified() => self.cancelled(&job, Timings::default()),
                }
            }
        };
        match ended.status {
            Status::Completed => self
                .parts
                .metrics
                .completed(job.kind, ended.timings.total_ms as f64 / 1e3),
            Status::Failed => {
                tracing::warn!(job = %job.id, "proof failed: {}", ended.error);
                self.parts.metrics.failed(job.kind);
            }
            Status::Cancelled => self.parts.metrics.cancelled(job.kind),
        }
        self.parts.feed.ended(job.name(), &ended);
        tracing::info!(job = %job.id, status = ?ended.status, total_ms = ended.timings.total_ms, "job ended");
        job.state.send_replace(State::Done {
            ended: Arc::new(ended),
            at: Instant::now(),
        });
    }

    fn ended(
        &self,
        job: &Job,
        status: Status,
        proof: Vec<u8>,
        error: String,
        mut timings: Timings,
    ) -> Ended {
        timings.total_ms = job.submitted.elapsed().as_millis() as u64;
        Ended {
            status,
            proof,
            error,
            timings,
        }
    }

    fn cancelled(&self, job: &Job, timings: Timings) -> Ended {
        let reason = job
            .cancel_reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| "cancelled".to_owned());
        self.ended(job, Status::Cancelled, Vec::new(), reason, timings)
    }

    /// Parameters, circuits, the engine, the last step. The engine holds one job per id, so
    /// this attempt enters it only once `previous` (the attempt it replaced) has ended.
    ///
    /// A job whose set a more urgent load of another set waits for steps back while none of
    /// its partitions has started: it leaves the engine, gives its set back and takes it (or a
    /// new load of it) again behind that load, so the set it held goes idle as soon as the
    /// proofs already started end.
    async fn prove_attempt(
        &self,
        job: &Arc<Job>,
        mut previous: Option<Arc<Job>>,
        circuit: &str,
        build: Arc<dyn BuildJob>,
    ) -> Ended {
        let mut timings = Timings::default();
        let failed = |timings: Timings, error: String| {
            self.ended(job, Status::Failed, Vec::new(), error, timings)
        };
        let srs = &self.parts.srs;
        // Where the job stood in the engine before it stepped back: it comes back there.
        let mut place = None;
        let (lease, output, finish) = loop {
            let (lease, srs_load_ms) = match srs.acquire(circuit, job.priority).await {
                Ok(acquired) => acquired,
                Err(e) => return failed(timings, format!("parameters: {e}")),
            };
            timings.srs_load_ms += srs_load_ms;
            let (set, id, build) = (Arc::clone(&lease.set), job.id.clone(), Arc::clone(&build));
            let built = host_step(&job.id, "build", move || build.build(&id, &set)).await;
            let prepared = match built {
                Ok(Ok(prepared)) => prepared,
                Ok(Err(e)) => return failed(timings, e),
                Err(e) => return failed(timings, format!("building the circuits panicked: {e}")),
            };
            if let Some(previous) = previous.take() {
                // A cancelled attempt ends at once (its task stops waiting on anything).
                let _ = previous.wait_done().await;
            }
            if job.is_cancelled() {
                return self.cancelled(job, timings);
            }
            job.state.send_replace(State::Proving);
            self.parts.live.entering(&job.id);
            let engine = &self.parts.engine;
            let mut request = prepared.request.with_priority(job.priority);
            if let Some(place) = place.take() {
                request = request.in_place(place);
            }
            let waiting = engine.submit(request).wait();
            tokio::pin!(waiting);
            if job.is_cancelled() {
                engine.cancel(&job.id);
            }
            let output = tokio::select! {
                output = &mut waiting => output,
                () = srs.outranked(circuit, job.priority) => {
                    place = engine.withdraw(&job.id);
                    if place.is_some() {
                        tracing::info!(job = %job.id, circuit, "stepped back for a more urgent load");
                        self.parts.metrics.stepped_back(job.kind);
                    }
                    // Withdrawn, or started already: then it keeps its set to the end.
                    waiting.await
                }
            };
            match output {
                Ok(output) => break (lease, output, prepared.finish),
                Err(JobError::Withdrawn) => job.state.send_replace(State::Preparing),
                Err(JobError::Cancelled) => return self.cancelled(job, timings),
                Err(e) => return failed(timings, e.to_string()),
            };
        };
        timings.queue_wait_ms = output.timings.queue_wait_ms as u64;
        timings.synthesis_ms = output.timings.synthesis_ms as u64;
        timings.gpu_compute_ms = output.timings.gpu_ms as u64;
        let finished = host_step(&job.id, "finish", move || finish(&output)).await;
        drop(lease);
        match finished {
            Ok(Ok(proof)) => self.ended(job, Status::Completed, proof, String::new(), timings),
            Ok(Err(e)) => failed(timings, e),
            Err(e) => failed(timings, format!("the last step panicked: {e}")),
        }
    }

    /// What `GetStatus` reports.
    pub fn status(&self) -> StatusReport {
        self.status_with(self.devices())
    }

    /// What `GetStatus` reports, from device reports the caller has already read from the
    /// driver (the live page shows them too, and asks once a poll).
    pub fn status_with(&self, devices: Vec<DeviceReport>) -> StatusReport {
        let jobs: Vec<Arc<Job>> = self.jobs().values().cloned().collect();
        let gpus = devices
            .into_iter()
            .filter_map(|device| device.gpu)
            .collect();
        let queues = self.queues(&jobs);
        let (completed, failed) = self.parts.metrics.totals();
        StatusReport {
            gpus,
            sets: self.parts.srs.status(),
            queues,
            completed,
            failed,
            uptime_seconds: self.started.elapsed().as_secs(),
            pinned_bytes: cuzk_groth16::backend::pinned_host_bytes(),
            pinned_limit_bytes: self.parts.pinned_limit,
        }
    }

    /// Every device of the engine, the driver's figures for those that have any.
    pub fn devices(&self) -> Vec<DeviceReport> {
        let jobs: Vec<Arc<Job>> = self.jobs().values().cloned().collect();
        self.device_reports(&jobs)
    }

    fn device_reports(&self, jobs: &[Arc<Job>]) -> Vec<DeviceReport> {
        let kind_of = |id: &str| jobs.iter().find(|j| j.id == id).map(|j| j.kind);
        let activity = self.parts.devices.activity();
        let gpu = |index: usize, backend: &dyn ProverBackend| {
            let device = match backend.device() {
                Ok(device) => device?,
                // Still listed, saying why its figures are missing.
                Err(e) => cuzk_groth16::DeviceStatus {
                    ordinal: index,
                    name: format!("{} (status unavailable: {e})", backend.name()),
                    total_bytes: 0,
                    free_bytes: 0,
                    budget_bytes: 0,
                    peak_bytes: 0,
                },
            };
            let engine = activity.iter().find(|a| a.index == index);
            let job = engine
                .and_then(|a| a.job.clone())
                .and_then(|id| kind_of(&id).map(|kind| (id, kind)));
            Some(GpuReport {
                ordinal: u32::try_from(device.ordinal).unwrap_or(u32::MAX),
                name: device.name,
                total_bytes: device.total_bytes,
                free_bytes: device.free_bytes,
                budget_bytes: device.budget_bytes,
                peak_bytes: device.peak_bytes,
                job,
                partitions: engine.map_or(0, |a| a.partitions),
                faults: engine.map_or(0, |a| a.faults),
                out_of_service: engine.and_then(|a| a.out_of_service.clone()),
            })
        };
        self.parts
            .devices
            .backends()
            .enumerate()
            .map(|(index, backend)| DeviceReport {
                index,
                name: backend.name().to_owned(),
                gpu: gpu(index, backend.as_ref()),
            })
            .collect()
    }

    /// Unfinished jobs by kind and priority (most urgent first within a kind), those with any:
    /// in progress (preparing, or with a partition in synthesis, on a GPU or finalizing) or
    /// pending. The engine's progress is read once, under one lock.
    fn queue_counts(&self, jobs: &[Arc<Job>]) -> BTreeMap<(Kind, Reverse<Priority>), QueueReport> {
        let running: HashSet<String> = self
            .parts
            .engine
            .jobs()
            .into_iter()
            .filter(|(_, progress)| progress.running())
            .map(|(id, _)| id)
            .collect();
        let mut counts = BTreeMap::new();
        for job in jobs.iter().filter(|j| !j.done()) {
            let queue = counts
                .entry((job.kind, Reverse(job.priority)))
                .or_insert_with(|| QueueReport::empty(job.kind));
            let preparing = matches!(*job.state.borrow(), State::Preparing);
            if preparing || running.contains(&job.id) {
                queue.in_progress += 1;
            } else {
                queue.pending += 1;
            }
        }
        counts
    }

    /// Each kind's unfinished jobs, every kind listed.
    fn queues(&self, jobs: &[Arc<Job>]) -> Vec<QueueReport> {
        let counts = self.queue_counts(jobs);
        KINDS
            .into_iter()
            .map(|kind| {
                let mut queue = QueueReport::empty(kind);
                for at in counts.values().filter(|q| q.kind == kind) {
                    queue.pending += at.pending;
                    queue.in_progress += at.in_progress;
                }
                queue
            })
            .collect()
    }

    /// Each kind's unfinished jobs at each priority, those with any, most urgent first within
    /// a kind.
    pub fn queues_by_priority(&self) -> Vec<(Priority, QueueReport)> {
        let jobs: Vec<Arc<Job>> = self.jobs().values().cloned().collect();
        self.queue_counts(&jobs)
            .into_iter()
            .map(|((_, Reverse(priority)), queue)| (priority, queue))
            .collect()
    }

    /// What Curio's daemon's `/status` shows beyond [`Daemon::status`]: memory, synthesis,
    /// each job's partitions, the GPU workers, counters by kind.
    pub fn activity(&self) -> ActivityReport {
        let jobs: Vec<Arc<Job>> = self.jobs().values().cloned().collect();
        let in_flight = self.parts.engine.jobs();
        let live = &self.parts.live;
        let pipelines = in_flight
            .iter()
            .filter_map(|(id, progress)| {
                let job = jobs.iter().find(|j| j.id == *id)?;
                let (seen, _) = live.job(id).unwrap_or_default();
                let partitions = (0..progress.partitions)
                    .map(|p| {
                        let p = u32::try_from(p).unwrap_or(u32::MAX);
                        seen.get(&p).copied().unwrap_or_default()
                    })
                    .collect();
                Some(PipelineReport {
                    job_id: id.clone(),
                    kind: job.kind,
                    started_ago: job.submitted.elapsed(),
                    partitions,
                    proven: progress.proven,
                })
            })
            .collect();
        let sum = |f: fn(&cuzk_pipeline::JobProgress) -> usize| {
            in_flight.iter().map(|(_, p)| f(p)).sum::<usize>()
        };
        let budget = self.parts.engine.memory();
        let queues = self.queues(&jobs);
        ActivityReport {
            uptime: self.started.elapsed(),
            partitions_bytes: budget.bytes(),
            partitions_used: budget.in_use(),
            sets_bytes: self.parts.srs_budget,
            sets_used: self.parts.srs.warm_bytes(),
            synthesis_limit: self.parts.partition_workers,
            synthesizing: sum(|p| p.synthesizing),
            pipelines,
            workers: live.workers(),
            by_kind: KINDS
                .into_iter()
                .map(|kind| {
                    let (completed, failed) = self.parts.metrics.by_kind(kind);
                    (kind, completed, failed)
                })
                .collect(),
            queue_depth: queues.iter().map(|q| u64::from(q.pending)).sum(),
            on_gpu: sum(|p| p.queued_for_gpu + p.on_gpu),
            finalizing: sum(|p| p.finalizing),
            unfinished: jobs.iter().filter(|j| !j.done()).count(),
        }
    }

    /// The Prometheus text, gauges read now.
    pub fn metrics_text(&self) -> String {
        let jobs: Vec<Arc<Job>> = self.jobs().values().cloned().collect();
        let (pending, running) = self.queues(&jobs).iter().fold((0, 0), |(p, r), q| {
            (p + u64::from(q.pending), r + u64::from(q.in_progress))
        });
        let budget = self.parts.engine.memory();
        self.parts.metrics.render(Gauges {
            queue_depth: pending,
            running_jobs: running,
            gpu_workers: self.parts.gpu_workers as u64,
            devices: self.parts.devices.len() as u64,
            devices_in_service: self
                .parts
                .engine
                .devices()
                .iter()
                .filter(|d| d.out_of_service.is_none())
                .count() as u64,
            uptime_seconds: self.started.elapsed().as_secs_f64(),
            budget_bytes: budget.bytes(),
            budget_in_use: budget.in_use(),
            warm_bytes: self.parts.srs.warm_bytes(),
            pinned_bytes: cuzk_groth16::backend::pinned_host_bytes(),
        })
    }
}
