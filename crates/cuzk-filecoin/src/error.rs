//! What can go wrong, naming the file and the field or quantity at fault.

use cuzk_groth16::{ParamsError, SetupError};
use cuzk_pipeline::JobError;

#[derive(Debug, thiserror::Error)]
pub enum FilecoinError {
    #[error("{0:?} is not a PoRep sector size (2KiB, 8MiB, 512MiB, 32GiB or 64GiB)")]
    UnknownSectorSize(String),
    #[error(
        "{0:?} is neither a sector size (2KiB … 64GiB) nor a registered seal proof (such as \
         StackedDrg2KiBV1_1)"
    )]
    UnknownSealProof(String),
    #[error(
        "{0:?} is not a registered PoSt proof (such as StackedDrgWinning2KiBV1 or \
         StackedDrgWindow32GiBV1_1)"
    )]
    UnknownPostProof(String),
    #[error(
        "{0:?} is neither a sector size (2KiB … 64GiB) nor a registered update proof (such as \
         StackedDrg32GiBV1)"
    )]
    UnknownUpdateProof(String),
    #[error("{file}: field {field}: {reason}")]
    RequestField {
        file: String,
        field: String,
        reason: String,
    },
    #[error("{proof}: {field}: {reason}")]
    ProofInput {
        proof: String,
        field: String,
        reason: String,
    },
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: not a C1 output: {reason}")]
    C1Syntax { file: String, reason: String },
    #[error("{file}: field {field}: {reason}")]
    C1Field {
        file: String,
        field: String,
        reason: String,
    },
    #[error(
        "{file}: a raw filecoin-proofs C1 output does not say which seal proof it is for; \
         name it (such as StackedDrg2KiBV1_1)"
    )]
    C1WithoutSealProof { file: String },
    #[error("{file}: the C1 output is for {in_file}, but {given} was asked for")]
    C1SealProofMismatch {
        file: String,
        in_file: String,
        given: String,
    },
    #[error(
        "{file}: the vanilla proofs do not verify against the C1 output's comm_r, comm_d, \
         replica_id and seed (a tampered or corrupted C1 output)"
    )]
    VanillaProofsInvalid { file: String },
    #[error(
        "{file}: missing parameters for {circuit} (looked for {name}); generate test parameters \
         with `{setup}` or point FIL_PROOFS_PARAMETER_CACHE / --params-dir at Filecoin's"
    )]
    ParamsMissing {
        file: String,
        name: String,
        circuit: String,
        setup: String,
    },
    #[error("{file}: these parameters are not for {proof}: {reason}")]
    WrongParams {
        file: String,
        proof: String,
        reason: String,
    },
    #[error(transparent)]
    Params(#[from] ParamsError),
    #[error("setup failed: {0}")]
    Setup(#[from] SetupError),
    #[error("proving failed: {0}")]
    Job(#[from] JobError),
    #[error(
        "filecoin-proofs reads parameters from {settings}, not {wanted}: set \
         FIL_PROOFS_PARAMETER_CACHE={wanted} before the first Filecoin call"
    )]
    ParameterCacheElsewhere { settings: String, wanted: String },
    #[error(
        "{proof} has no sample sector: its challenges are derived from comm_r, which sparse \
         trees would have to contain already; seal one instead (`cuzk seal-test-sector`)"
    )]
    NoSample { proof: String },
    #[error("filecoin-proofs: {what}: {reason}")]
    Filecoin { what: String, reason: String },
    #[error("{file}: not a parameter manifest in parameters.json's form: {reason}")]
    Manifest { file: String, reason: String },
}

/// Wraps an error of filecoin-proofs (anyhow) with what we were doing.
pub(crate) fn filecoin(what: impl Into<String>) -> impl FnOnce(anyhow::Error) -> FilecoinError {
    let what = what.into();
    move |e| FilecoinError::Filecoin {
        what,
        reason: format!("{e:#}"),
    }
}

pub(crate) fn io(file: &std::path::Path) -> impl FnOnce(std::io::Error) -> FilecoinError + '_ {
    move |source| FilecoinError::Io {
        file: file.display().to_string(),
        source,
    }
}
