//! Error types: each names the file, field or quantity that is wrong.

use std::io;

use bellpepper_core::SynthesisError;
use cuzk_math::DomainError;

/// A parameters file (or byte stream) that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ParamsError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "{file}: truncated: {field} needs {needed} bytes at offset {offset}, only {available} left"
    )]
    Truncated {
        file: String,
        field: String,
        offset: usize,
        needed: usize,
        available: usize,
    },
    #[error("{file}: {field} (at byte {offset}) is not a usable {group} point: {reason}")]
    InvalidPoint {
        file: String,
        field: String,
        offset: usize,
        group: &'static str,
        reason: &'static str,
    },
    #[error("{file}: {extra} unexpected bytes after the last field (b_g2)")]
    TrailingBytes { file: String, extra: usize },
}

/// Proof bytes that are not a proof.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProofError {
    #[error("a proof is {expected} bytes, got {got}")]
    Length { expected: usize, got: usize },
    #[error("proofs are 192 bytes each; {got} bytes is not a whole number (>0) of proofs")]
    NotWholeProofs { got: usize },
    #[error("proof field {field} is not a valid compressed {group} point (or is the identity)")]
    InvalidPoint {
        field: &'static str,
        group: &'static str,
    },
}

/// Why parameters could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("circuit synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),
    #[error(transparent)]
    Domain(#[from] DomainError),
    #[error("toxic waste {0} is zero")]
    ZeroSecret(&'static str),
    #[error(
        "aux variable {0} occurs in no constraint, so its L query point would be the identity"
    )]
    UnconstrainedVariable(usize),
    #[error("the GPU's fixed-base multiplication failed: {0}")]
    Gpu(#[from] cuzk_gpu::GpuError),
}

/// Why a proof could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("circuit synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// The parameters were made for another circuit.
    #[error("parameters do not fit the circuit: {query} has {params} points, the circuit needs {circuit}")]
    ParamsMismatch {
        query: &'static str,
        params: usize,
        circuit: usize,
    },
    #[error("GPU: {0}")]
    Gpu(#[from] cuzk_gpu::GpuError),
    #[error("{backend} backend: {reason}")]
    Backend {
        backend: &'static str,
        reason: String,
    },
    /// A fault of the device itself, not of the proof asked of it: what
    /// [`FaultyBackend`](crate::backend::FaultyBackend) injects in place of a real one.
    #[error("device fault on {device}: {reason}")]
    DeviceFault { device: String, reason: String },
}

impl ProveError {
    /// When the device failed rather than the proof, what kind of fault it was (`driver`,
    /// `out_of_memory`, `unavailable`, `injected`): the same proof may succeed on another device,
    /// and a device that keeps failing should stop taking work. `None` for the proof's own errors.
    pub fn device_fault(&self) -> Option<&'static str> {
        match self {
            ProveError::Gpu(e) => e.device_fault(),
            ProveError::DeviceFault { .. } => Some("injected"),
            ProveError::Synthesis(_)
            | ProveError::Domain(_)
            | ProveError::ParamsMismatch { .. }
            | ProveError::Backend { .. } => None,
        }
    }
}

/// Why a verification could not be carried out (an invalid proof is `Ok(false)`, not an error).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("the verifying key takes {expected} public inputs, got {got}")]
    InputCount { expected: usize, got: usize },
}
