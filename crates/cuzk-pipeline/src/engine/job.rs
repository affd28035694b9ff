//! What a job is (a request id, N partitions of one circuit, one set of parameters), what it gives
//! back, and why it can fail.

use std::sync::Arc;

use bellpepper_core::Circuit;
use cuzk_groth16::params_file::ParamsHeader;
use cuzk_groth16::{Parameters, Proof};
use cuzk_math::Scalar;
use cuzk_synth::{CompiledError, CompiledR1cs, ProvingAssignment, Recorded};

use crate::budget::OverBudget;

/// One partition's circuit, with its witness, and the public inputs its proof must verify against.
#[derive(Clone, Debug)]
pub struct Partition<C> {
    pub circuit: C,
    pub public_inputs: Vec<Scalar>,
}

/// Builds partition k of a job on demand, so only the partitions in flight exist at once. Any
/// `Fn(usize) -> Partition<C>` is one.
pub trait PartitionedCircuit: Send + Sync + 'static {
    type Circuit: Circuit<Scalar>;

    fn partition(&self, k: usize) -> Partition<Self::Circuit>;

    /// The circuit's R1CS, compiled once, when the job knows it: each partition is then
    /// synthesized by its witness alone and sparse products (same result, less work). The job
    /// chose it, so it is used whatever [`EngineConfig`](super::EngineConfig)'s
    /// `compiled_synthesis` says.
    fn compiled(&self) -> Option<&Arc<CompiledR1cs>> {
        None
    }

    /// A key naming the R1CS structure of the partitions, so that the engine can compile it
    /// itself: it records the first partition of an unseen key while synthesizing it, and
    /// synthesizes the later partitions of every job with that key by witness only.
    ///
    /// The contract: every partition of every job that returns the same key has the same
    /// variables, constraints and coefficients; only the witness may differ. A partition that
    /// breaks it with other counts of variables or constraints fails its job
    /// ([`JobError::Synthesis`]); one that keeps the counts is evaluated with the recorded
    /// matrices, so its proof verifies only if its witness satisfies them
    /// ([`JobError::Verify`] otherwise). A proof that does not verify is never returned.
    fn shape(&self) -> Option<String> {
        None
    }

    /// `circuit`'s witness against `compiled`, its products deferred
    /// ([`ProvingAssignment::deferred`]): on one thread unless the circuit is
    /// [`Sectioned`](cuzk_synth::Sectioned) and its job says so here, with
    /// [`CompiledR1cs::witness_sectioned`].
    fn witness_compiled(
        &self,
        circuit: Self::Circuit,
        compiled: &Arc<CompiledR1cs>,
    ) -> Result<ProvingAssignment, CompiledError> {
        compiled.witness(circuit)
    }
}

impl<C, F> PartitionedCircuit for F
where
    C: Circuit<Scalar>,
    F: Fn(usize) -> Partition<C> + Send + Sync + 'static,
{
    type Circuit = C;

    fn partition(&self, k: usize) -> Partition<C> {
        self(k)
    }
}

/// A partition after synthesis: what the GPU stage takes.
pub(crate) struct Synthesized {
    pub assignment: ProvingAssignment,
    pub public_inputs: Vec<Scalar>,
}

/// How the engine asks for a partition to be synthesized (a job's own compiled R1CS, when it
/// has one, serves any of them).
pub(crate) enum Method {
    Direct,
    /// Directly, recording the R1CS in the same run.
    Record,
    /// By witness only, with the R1CS the engine recorded for the job's shape.
    Compiled(Arc<CompiledR1cs>),
}

impl Method {
    pub fn compiled(&self) -> Option<&Arc<CompiledR1cs>> {
        match self {
            Method::Compiled(compiled) => Some(compiled),
            Method::Direct | Method::Record => None,
        }
    }
}

/// How a partition was synthesized, as its PARTITION_STATS line says (`synthesis=…`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SynthesisPath {
    Direct,
    Recorded,
    Compiled,
}

impl SynthesisPath {
    pub fn as_str(self) -> &'static str {
        match self {
            SynthesisPath::Direct => "direct",
            SynthesisPath::Recorded => "recorded",
            SynthesisPath::Compiled => "compiled",
        }
    }
}

/// What one synthesis gives: the partition, how it was made, and the R1CS if it was recorded.
pub(crate) struct Synthesis {
    pub synthesized: Synthesized,
    pub path: SynthesisPath,
    pub recorded: Option<CompiledR1cs>,
}

/// [`PartitionedCircuit`] with its circuit type erased, so one engine runs jobs of any circuits.
pub(crate) trait Synthesize: Send + Sync {
    /// The job's own compiled R1CS, if it brings one.
    fn own_compiled(&self) -> Option<&Arc<CompiledR1cs>>;

    /// Synthesizes partition `k`; by witness only, `defer_products` leaves a, b and c to the
    /// backend ([`ProverBackend::computes_products`](cuzk_groth16::ProverBackend)).
    fn synthesize(
        &self,
        k: usize,
        method: &Method,
        defer_products: bool,
    ) -> Result<Synthesis, CompiledError>;
}

impl<P: PartitionedCircuit> Synthesize for P {
    fn own_compiled(&self) -> Option<&Arc<CompiledR1cs>> {
        self.compiled()
    }

    fn synthesize(
        &self,
        k: usize,
        method: &Method,
        defer_products: bool,
    ) -> Result<Synthesis, CompiledError> {
        let Partition {
            circuit,
            public_inputs,
        } = self.partition(k);
        let (assignment, path, recorded) = match (self.compiled().or(method.compiled()), method) {
            (Some(compiled), _) => {
                let mut assignment = self.witness_compiled(circuit, compiled)?;
                if !defer_products {
                    assignment.complete();
                }
                (assignment, SynthesisPath::Compiled, None)
            }
            (None, Method::Record) => {
                let Recorded {
                    assignment,
                    compiled,
                } = CompiledR1cs::synthesize_recording(circuit)?;
                (assignment, SynthesisPath::Recorded, Some(compiled))
            }
            (None, _) => (
                ProvingAssignment::synthesize(circuit)?,
                SynthesisPath::Direct,
                None,
            ),
        };
        Ok(Synthesis {
            synthesized: Synthesized {
                assignment,
                public_inputs,
            },
            path,
            recorded,
        })
    }
}

/// Host bytes one partition holds from the start of its synthesis: `abc` until `prove_start`
/// returns, `rest` until its proof is finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionMemory {
    pub abc: u64,
    pub rest: u64,
}

impl PartitionMemory {
    /// From the parameters' sizes ([`PartitionMemory::of_header`]).
    pub fn estimate(params: &Parameters) -> Self {
        Self::of_header(&ParamsHeader::of(params))
    }

    /// From a parameters file's lengths alone, before its points are read; 32 bytes a scalar:
    /// a, b and c of the domain's size each (the prover pads them to it) and the witness (one
    /// scalar per input and aux variable).
    pub fn of_header(header: &ParamsHeader) -> Self {
        const SCALAR: u64 = 32;
        let domain = header.lengths.h as u64 + 1;
        PartitionMemory {
            abc: 3 * domain * SCALAR,
            rest: (header.inputs + header.lengths.l) as u64 * SCALAR,
        }
    }

    pub fn total(&self) -> u64 {
        self.abc + self.rest
    }

    /// What a partition reserves from the budget when its synthesis starts. With deferred
    /// products (witness-only synthesis, a, b and c left to the device) the host never holds
    /// a, b and c, only the witness, and while a sectioned circuit's groups are joined one group
    /// more (each freed once appended): twice the witness bounds that whatever the sections.
    pub fn reserved(&self, products_deferred: bool) -> u64 {
        match products_deferred {
            true => 2 * self.rest,
            false => self.total(),
        }
    }
}

/// How urgently a job is wanted. A higher one's partitions go ahead of lower ones' at the next
/// partition boundary, in synthesis and in the GPU queue; within one priority, the oldest job
/// first. Work already started is never interrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Priority {
    Low,
    #[default]
    Normal,
    High,
    Critical,
}

/// One proof request.
pub struct JobRequest {
    pub(crate) id: String,
    pub(crate) priority: Priority,
    pub(crate) partitions: usize,
    pub(crate) params: Arc<Parameters>,
    pub(crate) circuit: Arc<dyn Synthesize>,
    pub(crate) memory: PartitionMemory,
    pub(crate) shape: Option<String>,
    /// The queue place of a withdrawn attempt of this job, kept when it comes back.
    pub(crate) place: Option<Place>,
}

/// Where a withdrawn job stood among the engine's jobs of its priority ([`super::Engine::withdraw`]):
/// submitted again with [`JobRequest::in_place`], it goes before the jobs submitted after it
/// first was, not behind them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place(pub(crate) u64);

impl JobRequest {
    /// `partitions` partitions of `circuit`, all proven with `params`; memory estimated from them.
    pub fn new(
        id: impl Into<String>,
        params: Arc<Parameters>,
        partitions: usize,
        circuit: impl PartitionedCircuit,
    ) -> Self {
        JobRequest {
            id: id.into(),
            priority: Priority::default(),
            partitions,
            memory: PartitionMemory::estimate(&params),
            params,
            shape: circuit.shape(),
            circuit: Arc::new(circuit),
            place: None,
        }
    }

    /// Overrides the estimated host memory of one partition.
    pub fn with_memory(mut self, memory: PartitionMemory) -> Self {
        self.memory = memory;
        self
    }

    /// Overrides the circuit's shape key ([`PartitionedCircuit::shape`], same contract): how a
    /// job of closures gets one.
    pub fn with_shape(mut self, shape: impl Into<String>) -> Self {
        self.shape = Some(shape.into());
        self
    }

    /// Sets the job's priority ([`Priority::Normal`] unless set). A request joining a job already
    /// in flight with its id leaves that job's priority as it is.
    pub fn with_priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// Submits the job where a withdrawn attempt of it stood.
    pub fn in_place(mut self, place: Place) -> Self {
        self.place = Some(place);
        self
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn priority(&self) -> Priority {
        self.priority
    }
}

impl std::fmt::Debug for JobRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobRequest")
            .field("id", &self.id)
            .field("priority", &self.priority)
            .field("partitions", &self.partitions)
            .field("memory", &self.memory)
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

/// A finished job: one verified proof per partition, in partition order.
#[derive(Clone, Debug, PartialEq)]
pub struct JobOutput {
    pub id: String,
    pub proofs: Vec<Proof>,
    /// Partition k's public inputs, which `proofs[k]` was verified against.
    pub public_inputs: Vec<Vec<Scalar>>,
    pub timings: JobTimings,
}

/// Where a finished job's time went, from what the engine measures for its TIMELINE anyway.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct JobTimings {
    /// From submission to its first SYNTH_START (waiting for a worker, a slot and memory).
    pub queue_wait_ms: f64,
    /// SYNTH_START to SYNTH_END, summed over its partitions.
    pub synthesis_ms: f64,
    /// From GPU_QUEUE to the end of `prove_start`, less the device region, summed over its
    /// partitions: waiting for a GPU worker, host preparation, waiting for the device.
    pub gpu_wait_ms: f64,
    /// Device-region time (GPU_START to GPU_END), summed over its partitions.
    pub gpu_ms: f64,
    /// The epilogue and the proof's check, summed over its partitions.
    pub finalize_ms: f64,
}

/// Where the partitions of a job in flight are, one count per stage; they add up to
/// `partitions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobProgress {
    pub priority: Priority,
    pub partitions: usize,
    /// Not taken by a synthesis worker yet.
    pub waiting: usize,
    /// Taken by a synthesis worker and not yet queued for the GPU. This includes a partition
    /// whose worker still waits for its memory reservation: a worker holds it, so it no longer
    /// waits for one, and its memory is what the job is waiting for.
    pub synthesizing: usize,
    /// Synthesized, waiting in the GPU queue.
    pub queued_for_gpu: usize,
    /// In `prove_start`, including the wait for its device's lock.
    pub on_gpu: usize,
    /// In `prove_finish` and verification.
    pub finalizing: usize,
    pub proven: usize,
}

impl JobProgress {
    /// Whether any of its partitions is being worked on (not just waiting in a queue).
    pub fn running(&self) -> bool {
        self.synthesizing + self.on_gpu + self.finalizing > 0
    }
}

impl JobOutput {
    /// The proofs concatenated, 192 bytes each (the multi-partition proof format).
    pub fn proof_bytes(&self) -> Vec<u8> {
        self.proofs.iter().flat_map(|p| p.to_bytes()).collect()
    }
}

/// Why a job failed. Cloneable: every submitter of the same request id gets it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    #[error("a job needs at least one partition")]
    NoPartitions,
    #[error("partition {partition}: synthesis failed: {reason}")]
    Synthesis { partition: usize, reason: String },
    #[error("partition {partition}: proving failed: {reason}")]
    Prove { partition: usize, reason: String },
    #[error("partition {partition}: panic in {stage}: {message}")]
    Panicked {
        partition: usize,
        stage: &'static str,
        message: String,
    },
    #[error("partition {partition}: {reason}")]
    Verify { partition: usize, reason: String },
    #[error("partition {partition}: {source}")]
    OverBudget {
        partition: usize,
        source: OverBudget,
    },
    #[error("cancelled")]
    Cancelled,
    /// Taken back before any partition started ([`super::Engine::withdraw`]), to be submitted
    /// again later.
    #[error("withdrawn before it started")]
    Withdrawn,
    #[error("the engine shut down before the job finished")]
    ShutDown,
}

/// What a job ends with.
pub type JobResult = Result<Arc<JobOutput>, JobError>;
