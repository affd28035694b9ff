//! The engine's bookkeeping, all under one lock and never across an `await`: jobs in submission
//! order, which partition a synthesis worker takes next, the GPU queue ordered by (job, partition),
//! and the proofs of each job until it is complete.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use cuzk_groth16::{Parameters, PreparedVerifyingKey, Proof};
use cuzk_math::Scalar;
use tokio::sync::watch;

use super::job::{
    JobError, JobOutput, JobRequest, JobResult, PartitionMemory, SynthesisPath, Synthesize,
    Synthesized,
};
use crate::budget::Reservation;

/// What every task working on a job shares; immutable but for the result.
pub(crate) struct JobInfo {
    /// Submission order: lower is older.
    pub seq: u64,
    pub id: String,
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

/// A synthesized partition waiting for a GPU worker.
pub(crate) struct Ready {
    pub job: Arc<JobInfo>,
    pub partition: usize,
    pub synthesized: Synthesized,
    pub reservation: Reservation,
    pub synth_ms: f64,
    pub synthesis: SynthesisPath,
    pub queued: Instant,
}

struct Job {
    info: Arc<JobInfo>,
    next_partition: usize,
    synthesized: usize,
    proofs: Vec<Option<(Proof, Vec<Scalar>)>>,
    proven: usize,
}

impl Job {
    /// Between its first synthesis start and its last synthesis end: holds a concurrency slot.
    fn synthesizing(&self) -> bool {
        self.next_partition > 0 && self.synthesized < self.info.partitions
    }
}

pub(crate) struct Scheduler {
    next_seq: u64,
    jobs: BTreeMap<u64, Job>,
    ids: HashMap<String, u64>,
    gpu_queue: BTreeMap<(u64, usize), Ready>,
    synthesis_concurrency: usize,
}

impl Scheduler {
    pub fn new(synthesis_concurrency: usize) -> Self {
        Scheduler {
            next_seq: 0,
            jobs: BTreeMap::new(),
            ids: HashMap::new(),
            gpu_queue: BTreeMap::new(),
            synthesis_concurrency,
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
        let seq = self.next_seq;
        self.next_seq += 1;
        let info = Arc::new(JobInfo {
            seq,
            pvk: PreparedVerifyingKey::new(&request.params.vk),
            id: request.id,
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
                synthesized: 0,
                proven: 0,
            },
        );
        receiver
    }

    /// The oldest job's lowest unsynthesized partition, among the jobs allowed to synthesize:
    /// those already synthesizing, and more only while fewer than the concurrency limit are.
    pub fn next_synthesis(&mut self) -> Option<(Arc<JobInfo>, usize)> {
        let active = self.jobs.values().filter(|j| j.synthesizing()).count();
        let job = self.jobs.values_mut().find(|job| {
            job.next_partition < job.info.partitions
                && (job.synthesizing() || active < self.synthesis_concurrency)
        })?;
        job.next_partition += 1;
        Some((Arc::clone(&job.info), job.next_partition - 1))
    }

    /// Queues a synthesized partition for the GPU; `false` (and the partition and its memory
    /// dropped) when its job has ended.
    pub fn enqueue(&mut self, ready: Ready) -> bool {
        let Some(job) = self.jobs.get_mut(&ready.job.seq) else {
            return false;
        };
        job.synthesized += 1;
        self.gpu_queue
            .insert((ready.job.seq, ready.partition), ready);
        true
    }

    /// The queued partition of the oldest job, lowest first.
    pub fn next_gpu(&mut self) -> Option<Ready> {
        self.gpu_queue.pop_first().map(|(_, ready)| ready)
    }

    /// Records a verified proof; when it is the job's last, ends the job with all its proofs in
    /// partition order and returns it.
    pub fn proved(
        &mut self,
        seq: u64,
        partition: usize,
        proof: Proof,
        public_inputs: Vec<Scalar>,
    ) -> Option<Arc<JobInfo>> {
        let job = self.jobs.get_mut(&seq)?;
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
        let (proofs, public_inputs) = job.proofs.into_iter().flatten().unzip();
        job.info.result.send_replace(Some(Ok(Arc::new(JobOutput {
            id: job.info.id.clone(),
            proofs,
            public_inputs,
        }))));
        Some(job.info)
    }

    /// Ends a job with `error`, dropping its queued partitions (and their memory); `None` when it
    /// had already ended.
    pub fn fail(&mut self, seq: u64, error: JobError) -> Option<Arc<JobInfo>> {
        let job = self.remove(seq)?;
        self.gpu_queue.retain(|&(s, _), _| s != seq);
        job.info.result.send_replace(Some(Err(error)));
        Some(job.info)
    }

    /// Cancels the job in flight with this id.
    pub fn cancel(&mut self, id: &str) -> Option<Arc<JobInfo>> {
        let seq = *self.ids.get(id)?;
        self.fail(seq, JobError::Cancelled)
    }

    /// Jobs in flight.
    pub fn jobs(&self) -> usize {
        self.jobs.len()
    }

    fn remove(&mut self, seq: u64) -> Option<Job> {
        let job = self.jobs.remove(&seq)?;
        self.ids.remove(&job.info.id);
        Some(job)
    }
}
