//! Groth16 over BLS12-381, in the shapes bellperson uses on disk and on the wire.
//!
//! - [`keys`]: the proving parameters and the verifying key, as group elements.
//! - [`params_file`]: bellperson's parameter file layout, read fully or through mmap, checked or not.
//! - [`proof`]: the 192-byte compressed proof.
//! - [`setup`]: random parameters for tests and benchmarks (not a trusted setup).
//! - [`prover`]: the prover split as `prove_start` (H and the MSMs, behind a [`ProverBackend`]) and
//!   `prove_finish` (the epilogue with r and s); [`backend`] holds the backends. A backend on a
//!   shared device holds a [`DeviceLock`] around its device region only.
//! - [`verifier`]: single and batch verification.
//!
//! This crate owns Groth16 and nothing about scheduling: it must not spawn engines, queue jobs or
//! decide which device runs what; it knows the GPU only through a backend object.
#![deny(unsafe_code)]

pub mod backend;
mod error;
pub mod keys;
pub mod params_file;
mod point_bytes;
pub mod proof;
pub mod prover;
pub mod setup;
pub mod verifier;

pub use error::{ParamsError, ProofError, ProveError, SetupError, VerifyError};
pub use keys::{Parameters, VerifyingKey};
pub use proof::Proof;
pub use prover::{
    prove, prove_finish, DeviceGuard, DeviceLock, DeviceStatus, ProverBackend, QuerySums,
    Randomness, StageMetric, Started, Unshared,
};
pub use verifier::{verify_proof, verify_proofs_batch, PreparedVerifyingKey};
