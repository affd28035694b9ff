//! The engine's bookkeeping, all under one lock and never across an `await`: jobs in submission
//! order, which partition a synthesis worker takes next, the GPU queue ordered by (priority, job,
//! partition), where each job's partitions are, and the proofs of each job until it is complete.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use cuzk_groth16::{Parameters, PreparedVerifyingKey, Proof};
use cuzk_math::Scalar;
use tokio::sync::watch;

use super::device::Coming;
use super::job::{
    JobError, JobOutput, JobProgress, JobRequest, JobResult, JobTimings, PartitionMemory, Place,
    Priority, SynthesisPath, Synthesize, Synthesized,
};
use crate::budget::Reservation;
use crate::sink::ms;

/// What every task working on a job shares; immutable but for the result.
pub(crate) struct JobInfo {
    /// Submission order: lower is older (a withdrawn job submitted again keeps its first).
    pub seq: u64,
    pub id: String,
    pub priority: Priority,
    pub partitions: usize,
    pub params: Arc<Parameters>,
    pub pvk: PreparedVerifyingKey,
    pub circuit: Arc<dyn Synthesize>,
    pub memory: PartitionMemory,
    /// The circuit's shape key ([`super::PartitionedCircuit::shape`]).
    pub shape: Option<String>,
    /// Set once, when the job ends in any way; every submitter of the id watches it.
    pub result: watch::Sender<Option<JobResult>>,
}

impl JobInfo {
    /// Whether the job already ended (failed or cancelled), so its remaining work is moot.
    pub fn finished(&self) -> bool {
        self.result.borrow().is_some()
    }
}

/// A job taken out of the scheduler with its result, not yet sent: the engine logs its JOB_DONE
/// first, so that a waiter who reads the log on waking finds it there.
pub(crate) struct Ended {
    pub info: Arc<JobInfo>,
    result: JobResult,
}

impl Ended {
    /// Hands the result to every submitter of the job.
    pub fn send(self) {
        self.info.result.send_replace(Some(self.result));
    }
}

/// A partition a synthesis worker takes.
pub(crate) struct Taken {
    pub job: Arc<JobInfo>,
    pub partition: usize,
    /// The device where its first attempt failed (a device fault): the retry goes elsewhere.
    pub failed_on: Option<usize>,
}

/// A synthesized partition waiting for a GPU worker.
pub(crate) struct Ready {
    pub job: Arc<JobInfo>,
    pub partition: usize,
    /// [`Taken::failed_on`].
    pub failed_on: Option<usize>,
    pub synthesized: Synthesized,
    pub reservation: Reservation,
    pub synth_ms: f64,
    pub synthesis: SynthesisPath,
    pub queued: Instant,
    /// A CRITICAL partition's hold on the devices' regions, kept through its `prove_start`.
    pub coming: Option<Coming>,
}

/// A job in flight. Its partitions move through the stages in one direction, so each stage is
/// counted by how many partitions reached it: those between two counts are in a stage. A
/// partition retried after a device fault goes back from the GPU to synthesis, both counts
/// taking it back.
struct Job {
    info: Arc<JobInfo>,
    /// Taken by a synthesis worker (partitions are taken in order, so also the next one to take).
    next_partition: usize,
    /// Partitions to synthesize again after a device fault, with the device that failed.
    retries: Vec<(usize, usize)>,
    /// Queued for the GPU.
    synthesized: usize,
    /// Taken by a GPU worker.
    picked: usize,
    /// Out of `prove_start`, being finalized.
    started: usize,
    proofs: Vec<Option<(Proof, Vec<Scalar>)>>,
    proven: usize,
    submitted: Instant,
    first_synthesis: Option<Instant>,
    /// Its partitions' times so far (`queue_wait_ms` set when it ends).
    timings: JobTimings,
    /// Younger jobs of other circuits that started before it (grouping by circuit).
    passed_over: u32,
}

impl Job {
    /// Between its first synthesis start and its last synthesis end: holds a concurrency slot.
    fn synthesizing(&self) -> bool {
        self.next_partition > 0 && self.synthesized < self.info.partitions
    }

    /// Whether a partition of it waits for a synthesis worker.
    fn to_synthesize(&self) -> bool {
        self.next_partition < self.info.partitions || !self.retries.is_empty()
    }

    fn progress(&self) -> JobProgress {
        JobProgress {
            priority: self.info.priority,
            partitions: self.info.partitions,
            waiting: self.info.partitions - self.next_partition,
            synthesizing: self.next_partition - self.synthesized,
            queued_for_gpu: self.synthesized - self.picked,
            on_gpu: self.picked - self.started,
            finalizing: self.started - self.proven,
            proven: self.proven,
        }
    }
}

/// How often a NORMAL job waiting to start may see a younger job of another circuit start first,
/// when jobs are grouped by circuit ([`super::EngineConfig::group_by_circuit`]); then it goes in
/// its turn.
pub const MAX_PASSED_OVER: u32 = 4;

/// The GPU queue's order: highest priority first, then the oldest job, then the lowest partition.
type GpuKey = (Reverse<Priority>, u64, usize);

pub(crate) struct Scheduler {
    next_seq: u64,
    jobs: BTreeMap<u64, Job>,
    ids: HashMap<String, u64>,
    gpu_queue: BTreeMap<GpuKey, Ready>,
    synthesis_concurrency: usize,
    group_by_circuit: bool,
}

impl Scheduler {
    pub fn new(synthesis_concurrency: usize, group_by_circuit: bool) -> Self {
        Scheduler {
            next_seq: 0,
            jobs: BTreeMap::new(),
            ids: HashMap::new(),
            gpu_queue: BTreeMap::new(),
            synthesis_concurrency,
            group_by_circuit,
        }
    }

    /// Adds a job, or joins the one in flight with the same id.
    pub fn submit(&mut self, request: JobRequest) -> watch::Receiver<Option<JobResult>> {
        if let Some(job) = self.ids.get(&request.id).and_then(|seq| self.jobs.get(seq)) {
            return job.info.result.subscribe();
        }
        if request.partitions == 0 {
            return watch::Sender::new(Some(Err(JobError::NoPartitions))).subscribe();
        }
        let seq = match request.place {
            Some(Place(seq)) if seq < self.next_seq && !self.jobs.contains_key(&seq) => seq,
            _ => {
                self.next_seq += 1;
                self.next_seq - 1
            }
        };
        let info = Arc::new(JobInfo {
            seq,
            pvk: PreparedVerifyingKey::new(&request.params.vk),
            id: request.id,
            priority: request.priority,
            partitions: request.partitions,
            params: request.params,
            circuit: request.circuit,
            memory: request.memory,
            shape: request.shape,
            result: watch::Sender::new(None),
        });
        let receiver = info.result.subscribe();
        self.ids.insert(info.id.clone(), seq);
        self.jobs.insert(
            seq,
            Job {
                proofs: vec![None; info.partitions],
                info,
                next_partition: 0,
                retries: Vec::new(),
                synthesized: 0,
                picked: 0,
                started: 0,
                proven: 0,
                submitted: Instant::now(),
                first_synthesis: None,
                timings: JobTimings::default(),
                passed_over: 0,
            },
        );
        receiver
    }

    /// The lowest unsynthesized partition (a retry first) of the highest-priority job, the
    /// oldest among equals, among the jobs allowed to synthesize: those already synthesizing,
    /// more while fewer than the concurrency limit are, and one above the priority of all that
    /// are even past the limit, so that the limit never makes an urgent job wait for less urgent
    /// ones. Grouping by circuit, a NORMAL job of a circuit in flight starts before older NORMAL
    /// ones of other circuits, each passed over at most [`MAX_PASSED_OVER`] times.
    pub fn next_synthesis(&mut self) -> Option<Taken> {
        let active = self.jobs.values().filter(|j| j.synthesizing());
        let (count, top) = active.fold((0, None), |(n, top), j| {
            (n + 1, top.max(Some(j.info.priority)))
        });
        let room = count < self.synthesis_concurrency;
        let in_flight: Vec<&Arc<Parameters>> = self
            .jobs
            .values()
            .filter(|job| self.group_by_circuit && job.next_partition > 0)
            .map(|job| &job.info.params)
            .collect();
        // (priority, tier, age): tier 2 for a job that goes on or was passed over too often,
        // 1 for one of a circuit in flight, 0 for the rest (every job when not grouping).
        let rank = |job: &Job| {
            let grouped = self.group_by_circuit && job.info.priority == Priority::Normal;
            let tier = if !grouped {
                0
            } else if job.next_partition > 0 || job.passed_over >= MAX_PASSED_OVER {
                2
            } else if in_flight.iter().any(|p| Arc::ptr_eq(p, &job.info.params)) {
                1
            } else {
                0
            };
            (job.info.priority, tier, Reverse(job.info.seq))
        };
        let candidates: Vec<(u64, _)> = self
            .jobs
            .values()
            .filter(|job| {
                job.to_synthesize() && (job.synthesizing() || room || Some(job.info.priority) > top)
            })
            .map(|job| (job.info.seq, rank(job)))
            .collect();
        let &(seq, chosen) = candidates.iter().max_by_key(|(_, rank)| *rank)?;
        drop(in_flight);
        let starts = self.jobs.get(&seq)?.next_partition == 0;
        if starts && chosen.1 == 1 {
            let params = Arc::clone(&self.jobs.get(&seq)?.info.params);
            for (older, _) in candidates
                .iter()
                .filter(|(s, r)| *s < seq && r.0 == chosen.0)
            {
                if let Some(job) = self.jobs.get_mut(older) {
                    if job.next_partition == 0 && !Arc::ptr_eq(&job.info.params, &params) {
                        job.passed_over += 1;
                    }
                }
            }
        }
        let job = self.jobs.get_mut(&seq)?;
        let (partition, failed_on) = match job.retries.pop() {
            Some((partition, device)) => (partition, Some(device)),
            None => {
                job.next_partition += 1;
                (job.next_partition - 1, None)
            }
        };
        Some(Taken {
            job: Arc::clone(&job.info),
            partition,
            failed_on,
        })
    }

    /// Notes that a partition of the job started its synthesis (its memory reserved).
    pub fn synthesis_started(&mut self, seq: u64, at: Instant) {
        if let Some(job) = self.jobs.get_mut(&seq) {
            job.first_synthesis.get_or_insert(at);
        }
    }

    /// Queues a synthesized partition for the GPU; `false` (and the partition and its memory
    /// dropped) when its job has ended.
    pub fn enqueue(&mut self, ready: Ready) -> bool {
        let Some(job) = self.jobs.get_mut(&ready.job.seq) else {
            return false;
        };
        job.synthesized += 1;
        job.timings.synthesis_ms += ready.synth_ms;
        let key = (Reverse(ready.job.priority), ready.job.seq, ready.partition);
        self.gpu_queue.insert(key, ready);
        true
    }

    /// The queued partition of the highest-priority job, the oldest among equals, lowest first,
    /// for a worker of `device`; none below `at_least`. While `elsewhere` (another device is in
    /// service) it passes over retries of partitions that failed on `device`.
    pub fn next_gpu(
        &mut self,
        at_least: Priority,
        device: usize,
        elsewhere: bool,
    ) -> Option<Ready> {
        let key = self
            .gpu_queue
            .iter()
            .take_while(|(&(Reverse(priority), _, _), _)| priority >= at_least)
            .find(|(_, ready)| !elsewhere || ready.failed_on != Some(device))
            .map(|(&key, _)| key)?;
        let ready = self.gpu_queue.remove(&key)?;
        // Queued partitions of an ended job are dropped with it, so the job is in flight.
        if let Some(job) = self.jobs.get_mut(&ready.job.seq) {
            job.picked += 1;
        }
        Some(ready)
    }

    /// Notes that a partition of the job came out of `prove_start` after `gpu_ms` in its device
    /// region and `gpu_wait_ms` around it (see [`JobTimings`]), and goes to be finalized.
    pub fn started(&mut self, seq: u64, gpu_ms: f64, gpu_wait_ms: f64) {
        if let Some(job) = self.jobs.get_mut(&seq) {
            job.started += 1;
            job.timings.gpu_ms += gpu_ms;
            job.timings.gpu_wait_ms += gpu_wait_ms;
        }
    }

    /// Sends a partition whose `prove_start` failed on `device` back to synthesis, for another
    /// device; `false` when its job has ended.
    pub fn retry(&mut self, seq: u64, partition: usize, device: usize) -> bool {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return false;
        };
        job.picked -= 1;
        job.synthesized -= 1;
        job.retries.push((partition, device));
        true
    }

    /// Records a verified proof, finalized in `finalize_ms`; when it is the job's last, takes the
    /// job out with all its proofs in partition order.
    pub fn proved(
        &mut self,
        seq: u64,
        partition: usize,
        proof: Proof,
        public_inputs: Vec<Scalar>,
        finalize_ms: f64,
    ) -> Option<Ended> {
        let job = self.jobs.get_mut(&seq)?;
        job.timings.finalize_ms += finalize_ms;
        if job.proofs[partition]
            .replace((proof, public_inputs))
            .is_none()
        {
            job.proven += 1;
        }
        if job.proven < job.info.partitions {
            return None;
        }
        let job = self.remove(seq)?;
        let timings = JobTimings {
            queue_wait_ms: job
                .first_synthesis
                .map_or(0.0, |at| ms(at.saturating_duration_since(job.submitted))),
            ..job.timings
        };
        let (proofs, public_inputs) = job.proofs.into_iter().flatten().unzip();
        let output = JobOutput {
            id: job.info.id.clone(),
            proofs,
            public_inputs,
            timings,
        };
        Some(Ended {
            info: job.info,
            result: Ok(Arc::new(output)),
        })
    }

    /// Takes a job out to end with `error`, dropping its queued partitions (and their memory);
    /// `None` when it had already ended.
    pub fn fail(&mut self, seq: u64, error: JobError) -> Option<Ended> {
        let job = self.remove(seq)?;
        self.gpu_queue.retain(|&(_, s, _), _| s != seq);
        Some(Ended {
            info: job.info,
            result: Err(error),
        })
    }

    /// Cancels the job in flight with this id.
    pub fn cancel(&mut self, id: &str) -> Option<Ended> {
        let seq = *self.ids.get(id)?;
        self.fail(seq, JobError::Cancelled)
    }

    /// Takes out the job in flight with this id if none of its partitions has started (so it
    /// holds nothing but its place), to end with [`JobError::Withdrawn`].
    pub fn withdraw(&mut self, id: &str) -> Option<Ended> {
        let seq = *self.ids.get(id)?;
        let job = self.jobs.get(&seq)?;
        if job.next_partition > 0 {
            return None;
        }
        self.fail(seq, JobError::Withdrawn)
    }

    /// Jobs in flight.
    pub fn jobs(&self) -> usize {
        self.jobs.len()
    }

    /// Where the partitions of the job in flight with this id are.
    pub fn progress(&self, id: &str) -> Option<JobProgress> {
        let seq = self.ids.get(id)?;
        self.jobs.get(seq).map(Job::progress)
    }

    /// Every job in flight with its progress, oldest first.
    pub fn all_progress(&self) -> Vec<(String, JobProgress)> {
        let jobs = self.jobs.values();
        jobs.map(|job| (job.info.id.clone(), job.progress()))
            .collect()
    }

    fn remove(&mut self, seq: u64) -> Option<Job> {
        let job = self.jobs.remove(&seq)?;
        self.ids.remove(&job.info.id);
        Some(job)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use cuzk_groth16::setup::generate_random_parameters;
    use cuzk_synth::circuits::SyntheticCircuit;

    use super::*;
    use crate::engine::Partition;

    fn circuit() -> SyntheticCircuit {
        SyntheticCircuit {
            constraints: 4,
            boolean_fraction: 0.0,
            public_inputs: 1,
            seed: 1,
        }
    }

    fn request(id: &str, partitions: usize, priority: Priority) -> JobRequest {
        let mut rng = cuzk_testkit::rng("scheduler params");
        let params = Arc::new(generate_random_parameters(circuit(), &mut rng).unwrap());
        JobRequest::new(id, params, partitions, |_| Partition {
            circuit: circuit(),
            public_inputs: Vec::new(),
        })
        .with_priority(priority)
    }

    fn next(scheduler: &mut Scheduler) -> Option<(String, usize)> {
        let taken = scheduler.next_synthesis()?;
        Some((taken.job.id.clone(), taken.partition))
    }

    fn taken(id: &str, k: usize) -> Option<(String, usize)> {
        Some((id.to_owned(), k))
    }

    /// Grouped by circuit, NORMAL jobs of the circuit in flight start before an older one of
    /// another circuit until it has been passed over [`MAX_PASSED_OVER`] times; other priorities
    /// keep their order; not grouped, the oldest goes first.
    #[test]
    fn grouping_by_circuit_starts_jobs_of_the_circuit_in_flight_first_within_a_bound() {
        let mut rng = cuzk_testkit::rng("grouping params");
        let mut params = || Arc::new(generate_random_parameters(circuit(), &mut rng).unwrap());
        let (x, y) = (params(), params());
        let job = |id: &str, params: &Arc<Parameters>, priority| {
            JobRequest::new(id, Arc::clone(params), 1, |_| Partition {
                circuit: circuit(),
                public_inputs: Vec::new(),
            })
            .with_priority(priority)
        };
        let order = |group: bool| {
            let mut scheduler = Scheduler::new(100, group);
            scheduler.submit(job("x1", &x, Priority::Normal));
            scheduler.submit(job("y1", &y, Priority::Normal));
            for i in 2..=7 {
                scheduler.submit(job(&format!("x{i}"), &x, Priority::Normal));
            }
            scheduler.submit(job("x-high", &x, Priority::High));
            std::iter::from_fn(|| next(&mut scheduler))
                .map(|(id, _)| id)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            order(true),
            ["x-high", "x1", "x2", "x3", "x4", "x5", "y1", "x6", "x7"]
        );
        assert_eq!(
            order(false),
            ["x-high", "x1", "y1", "x2", "x3", "x4", "x5", "x6", "x7"]
        );
    }

    /// Highest priority first, the oldest among equals; a job more urgent than every job
    /// synthesizing starts past the concurrency limit, one that is not waits for a slot.
    #[test]
    fn synthesis_takes_the_most_urgent_then_oldest_job() {
        let mut scheduler = Scheduler::new(1, false);
        scheduler.submit(request("normal", 2, Priority::Normal));
        assert_eq!(next(&mut scheduler), taken("normal", 0));
        for (id, priority) in [
            ("low", Priority::Low),
            ("high", Priority::High),
            ("critical", Priority::Critical),
            ("high-later", Priority::High),
        ] {
            scheduler.submit(request(id, 2, priority));
        }
        assert_eq!(next(&mut scheduler), taken("critical", 0));
        assert_eq!(next(&mut scheduler), taken("critical", 1));
        // Two jobs synthesize, past the limit of one; nothing is above Critical, so only the
        // jobs already synthesizing go on.
        assert_eq!(next(&mut scheduler), taken("normal", 1));
        assert_eq!(next(&mut scheduler), None);
        let progress = scheduler.progress("critical").unwrap();
        assert_eq!((progress.waiting, progress.synthesizing), (0, 2));
        let waiting: Vec<_> = scheduler
            .all_progress()
            .into_iter()
            .map(|(id, p)| (id, p.waiting))
            .collect();
        let expected = [
            ("normal", 0),
            ("low", 2),
            ("high", 2),
            ("critical", 0),
            ("high-later", 2),
        ];
        assert_eq!(waiting, expected.map(|(id, n)| (id.to_owned(), n)));
    }

    /// Only a job none of whose partitions has started can be withdrawn; it ends with
    /// `Withdrawn`, and the others are taken as before.
    #[test]
    fn a_job_is_withdrawn_only_before_its_first_partition_starts() {
        let mut scheduler = Scheduler::new(2, false);
        scheduler.submit(request("started", 2, Priority::Normal));
        let queued = scheduler.submit(request("queued", 1, Priority::Normal));
        scheduler.submit(request("after", 1, Priority::Normal));
        assert_eq!(next(&mut scheduler), taken("started", 0));
        assert!(scheduler.withdraw("started").is_none());
        let ended = scheduler.withdraw("queued").unwrap();
        ended.send();
        assert_eq!(*queued.borrow(), Some(Err(JobError::Withdrawn)));
        assert!(scheduler.withdraw("queued").is_none(), "gone");
        assert!(scheduler.withdraw("unknown").is_none());
        assert_eq!(next(&mut scheduler), taken("started", 1));
        assert_eq!(next(&mut scheduler), taken("after", 0));
        assert_eq!(scheduler.jobs(), 2);
    }

    /// A withdrawn job submitted again in its place goes before the jobs submitted after it
    /// first was; a place another job holds, or one never handed out, gets a new one at the back.
    #[test]
    fn a_withdrawn_job_submitted_in_its_place_keeps_its_turn() {
        let mut scheduler = Scheduler::new(8, false);
        scheduler.submit(request("first", 1, Priority::Normal));
        scheduler.submit(request("second", 1, Priority::Normal));
        let place = Place(scheduler.withdraw("first").unwrap().info.seq);
        let second = Place(scheduler.ids["second"]);
        scheduler.submit(request("third", 1, Priority::Normal));
        scheduler.submit(request("first", 1, Priority::Normal).in_place(place));
        scheduler.submit(request("taken", 1, Priority::Normal).in_place(second));
        scheduler.submit(request("stray", 1, Priority::Normal).in_place(Place(99)));
        let order: Vec<_> = std::iter::from_fn(|| next(&mut scheduler)).collect();
        let expected = ["first", "second", "third", "taken", "stray"];
        assert_eq!(order, expected.map(|id| (id.to_owned(), 0)));
    }
}
