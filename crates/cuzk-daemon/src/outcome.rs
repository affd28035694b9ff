//! How a job ended: completed with its proof, or failed or cancelled with the reason, and the
//! time each stage took. The daemon's core files it, `AwaitProof` answers with it and the live
//! page's feed lists it, so it sits below all three.

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

/// Milliseconds spent in each stage of a job, as `AwaitProofResponse` reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Timings {
    /// From submission until its first partition's synthesis started.
    pub queue_wait_ms: u64,
    /// Waiting for its parameters to load (0 when they were ready).
    pub srs_load_ms: u64,
    /// Synthesis, summed over partitions.
    pub synthesis_ms: u64,
    /// Device regions, summed over partitions.
    pub gpu_compute_ms: u64,
    pub total_ms: u64,
}

/// A finished job's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    pub status: Status,
    pub proof: Vec<u8>,
    pub error: String,
    pub timings: Timings,
}
