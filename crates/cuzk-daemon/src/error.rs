//! The daemon's errors: what an rpc can fail with (and the one place that turns it into a gRPC
//! status), and why the daemon could not start or serve.
//!
//! A proof that fails is not an rpc error: it is an OK reply with status `FAILED` (see
//! [`crate::jobs`]). [`DaemonError`]s are the whole-call failures.

use cuzk_pipeline::engine::MemoryError;
use tonic::{Code, Status};

use crate::transport::TransportError;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DaemonError {
    /// A malformed request, naming the field at fault.
    #[error("{field}: {reason}")]
    InvalidArgument { field: String, reason: String },
    #[error("no job {0:?} (never submitted, or its result expired)")]
    NotFound(String),
    #[error("circuit {circuit}: {reason}")]
    Parameters { circuit: String, reason: String },
    /// Proving with the circuit's set cannot fit the host's memory, checked before it loads.
    #[error("circuit {circuit}: {source}")]
    Memory {
        circuit: String,
        source: MemoryError,
    },
    #[error("circuit {circuit}: in use by {users} proof(s) in flight; evict it when they end")]
    InUse { circuit: String, users: usize },
    #[error("the daemon is shutting down and takes no new proofs")]
    ShuttingDown,
    #[error("internal error: {0}")]
    Internal(String),
}

impl DaemonError {
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        DaemonError::InvalidArgument {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub fn code(&self) -> Code {
        match self {
            DaemonError::InvalidArgument { .. } => Code::InvalidArgument,
            DaemonError::NotFound(_) => Code::NotFound,
            DaemonError::Parameters { .. } | DaemonError::InUse { .. } => Code::FailedPrecondition,
            DaemonError::Memory { .. } => Code::ResourceExhausted,
            DaemonError::ShuttingDown => Code::Unavailable,
            DaemonError::Internal(_) => Code::Internal,
        }
    }
}

impl From<DaemonError> for Status {
    fn from(error: DaemonError) -> Self {
        Status::new(error.code(), error.to_string())
    }
}

/// Why the daemon could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error("the gRPC server failed: {0}")]
    Server(#[from] tonic::transport::Error),
}
