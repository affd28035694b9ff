//! What a request proves: its fields checked, the parameter set (circuit id) it needs, and the
//! engine job built once those parameters are loaded.
//!
//! [`Circuits`] is the seam between the daemon's generic machinery (ids, tiers, priorities,
//! transport) and the circuits: [`filecoin::FilecoinCircuits`] serves Curio;
//! [`synthetic::SyntheticCircuits`] serves small circuits of any size, so the daemon itself can
//! be tested and benchmarked over real sockets in seconds.

pub mod filecoin;
pub mod synthetic;

use std::sync::Arc;

use cuzk_groth16::params_file::ParamsHeader;
use cuzk_groth16::Parameters;
use cuzk_pipeline::{Devices, JobOutput, JobRequest};
use cuzk_synth::CompiledR1cs;

use crate::error::DaemonError;
use crate::kinds::Kind;
use crate::proto::SubmitProofRequest;

/// A circuit's parameters in host memory: what its proofs need beside the request.
#[derive(Debug)]
pub struct ParamSet {
    pub params: Arc<Parameters>,
    /// The circuit's R1CS, for synthesis by witness only, when there is one.
    pub compiled: Option<Arc<CompiledR1cs>>,
    /// Host bytes the set holds.
    pub bytes: u64,
    /// Of `bytes`, those the proving key's query vectors hold: what goes when the set settles
    /// on the devices that prove with it (0 once it has, see [`crate::srs`]).
    pub key_bytes: u64,
    /// Where its compiled R1CS came from when it loaded, for status and logs ("read from the
    /// cache in 812 ms", "recorded in 31.4 s and cached"); None without one.
    pub r1cs_origin: Option<String>,
}

/// The circuits a daemon serves.
pub trait Circuits: Send + Sync + 'static {
    /// Checks `request` (a `kind` proof) as far as it can without its parameters, and says what
    /// proving it takes. Runs on a blocking thread: decoding a 32 GiB C1 output takes a while.
    fn check(&self, request: SubmitProofRequest, kind: Kind) -> Result<Work, DaemonError>;

    /// The circuit ids whose parameters are on disk now: the cold tier a status lists.
    fn on_disk(&self) -> Vec<String>;

    /// The parameter file of a circuit id, its size when it exists (the cold tier).
    fn describe(&self, circuit: &str) -> Result<CircuitFiles, DaemonError>;

    /// Reads a circuit's parameters into host memory (or makes test parameters, on one of
    /// `devices`, the engine's). Blocking, and slow for large circuits.
    fn load(&self, circuit: &str, devices: &Devices) -> Result<ParamSet, String>;

    /// What a circuit's files say of proving with it, for the memory plan checked before it
    /// loads (a few pages read); `None` when there are no files to ask (parameters made in
    /// memory, or missing: the load then says what is wrong).
    fn set_files(&self, _circuit: &str) -> Option<SetFiles> {
        None
    }
}

/// A parameter set's files, before they are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetFiles {
    pub header: ParamsHeader,
    /// The compiled R1CS's bytes when synthesis uses one (0 until it is recorded).
    pub r1cs_bytes: Option<u64>,
}

/// Where a circuit's parameters live on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitFiles {
    /// What a status shows of it (a path).
    pub location: String,
    /// Bytes on disk, `None` when the files are not there.
    pub bytes: Option<u64>,
}

/// What proving a checked request takes.
pub enum Work {
    /// Load `circuit`'s parameters, then build and run `job`.
    Prove {
        circuit: String,
        job: Arc<dyn BuildJob>,
    },
    /// A kind this daemon cannot prove yet: the job fails with this reason.
    Unsupported(String),
}

impl std::fmt::Debug for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Work::Prove { circuit, .. } => write!(f, "Prove({circuit})"),
            Work::Unsupported(reason) => write!(f, "Unsupported({reason})"),
        }
    }
}

/// Builds a checked request's engine job: again for each set it is given, when a job steps
/// back for more urgent work before it starts and takes its set again later.
pub trait BuildJob: Send + Sync {
    /// Blocking: builds the partitions' circuits (for PoRep: verifies the vanilla proofs too).
    fn build(self: Arc<Self>, id: &str, params: &ParamSet) -> Result<PreparedJob, String>;
}

/// Turns the engine's verified partition proofs into the bytes the client gets.
pub type Finish = Box<dyn FnOnce(&JobOutput) -> Result<Vec<u8>, String> + Send>;

/// An engine job and its last step.
pub struct PreparedJob {
    pub request: JobRequest,
    pub finish: Finish,
}

impl std::fmt::Debug for PreparedJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedJob")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}
