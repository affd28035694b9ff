//! A Filecoin proof request of any kind, and the one job shape every kind is proven as.

use std::sync::Arc;

use cuzk_groth16::Parameters;
use cuzk_pipeline::{Engine, JobRequest};
use cuzk_synth::CompiledR1cs;

use crate::c2::ProofFinish;
use crate::{C1Output, CircuitId, FilecoinError, ParamFiles, PostRequest, SnapRequest};

/// One proof request: a sector's PoRep C2 (its C1 output), a WinningPoSt or WindowPoSt
/// partition, or a SnapDeals update. The CLI reads one from a file; every kind is proven the
/// same way ([`FilecoinRequest::job`]).
#[derive(Debug)]
pub enum FilecoinRequest {
    Porep(C1Output),
    Post(PostRequest),
    Snap(SnapRequest),
}

/// A request ready to be proven: one engine job of its partitions, and what turns their proofs
/// into the request's proof bytes.
#[derive(Debug)]
pub struct FilecoinJob {
    pub request: JobRequest,
    pub partitions: usize,
    pub finish: ProofFinish,
}

impl FilecoinRequest {
    /// The circuit whose parameters prove it.
    pub fn circuit(&self) -> CircuitId {
        match self {
            FilecoinRequest::Porep(c1) => c1.proof.into(),
            FilecoinRequest::Post(post) => post.proof.into(),
            FilecoinRequest::Snap(snap) => snap.proof.into(),
        }
    }

    /// The registered proof's name (`StackedDrg32GiBV1_1`, `StackedDrgWindow32GiBV1_1`, …).
    pub fn proof_name(&self) -> &'static str {
        self.circuit().name()
    }

    /// Partitions of its job: the sector's, the update's, or the one PoSt partition.
    pub fn partitions(&self) -> Result<usize, FilecoinError> {
        Ok(match self {
            FilecoinRequest::Porep(c1) => usize::from(c1.proof.porep_config()?.partitions),
            FilecoinRequest::Post(_) => 1,
            FilecoinRequest::Snap(snap) => snap.vanilla_proofs.len(),
        })
    }

    /// Checks its inputs and builds its circuits (as filecoin-proofs builds them) into engine
    /// job `id`, proven with `params`, read from `files`; with `compiled` (the circuit's R1CS,
    /// see [`crate::compiled_r1cs`]) the engine synthesizes by witness only.
    pub fn job(
        &self,
        id: impl Into<String>,
        params: Arc<Parameters>,
        files: &ParamFiles,
        compiled: Option<Arc<CompiledR1cs>>,
    ) -> Result<FilecoinJob, FilecoinError> {
        let id = id.into();
        match self {
            FilecoinRequest::Porep(c1) => crate::c2::job(id, c1, params, files, compiled),
            FilecoinRequest::Post(post) => crate::post::job(id, post, params, files, compiled),
            FilecoinRequest::Snap(snap) => crate::snap::job(id, snap, params, files, compiled),
        }
    }
}

impl FilecoinJob {
    /// A job whose partition proofs, concatenated, are the request's proof.
    pub(crate) fn concatenated(request: JobRequest, partitions: usize) -> Self {
        FilecoinJob {
            request,
            partitions,
            finish: ProofFinish::default(),
        }
    }

    /// Proves every partition through `engine` (each proof verified there) and returns the proof
    /// bytes as filecoin-proofs returns them: the partition proofs concatenated, 192 bytes each,
    /// or for a non-interactive PoRep their SnarkPack aggregate.
    pub async fn prove(self, engine: &Engine) -> Result<Vec<u8>, FilecoinError> {
        let proofs = engine.submit(self.request).wait().await?.proof_bytes();
        self.finish.finish(proofs)
    }
}
