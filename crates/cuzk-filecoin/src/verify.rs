//! Verification by filecoin-proofs itself (`verify_seal`), so a cuzk proof is judged exactly as
//! the network's tools judge it.

use std::path::Path;

use filecoin_proofs::{with_shape, MerkleTreeTrait};
use storage_proofs_core::sector::SectorId;

use crate::error::filecoin;
use crate::params::check_parameter_dir;
use crate::{FilecoinError, ParamFiles, Revision, SealCommitments, SealProof};

/// Who sealed which sector: with a C1 output's commitments, what `verify_seal` needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectorIdentity {
    pub prover_id: [u8; 32],
    pub sector_id: u64,
}

/// Checks `proof_bytes` with `filecoin_proofs::verify_seal`, reading the verifying key from
/// `params_dir` (which must be filecoin-proofs' parameter directory: see
/// [`crate::use_parameter_dir`]). `Ok(false)` is a proof that does not verify.
pub fn verify_seal(
    proof: SealProof,
    commitments: &SealCommitments,
    sector: SectorIdentity,
    proof_bytes: &[u8],
    params_dir: &Path,
) -> Result<bool, FilecoinError> {
    check_parameter_dir(params_dir)?;
    let files = ParamFiles::new(params_dir, proof)?;
    files.require(&files.vk)?;
    if proof.revision == Revision::NonInteractive {
        files.require_srs()?;
    }
    with_shape!(
        proof.size.bytes(),
        verify,
        proof,
        commitments,
        sector,
        proof_bytes,
    )
}

fn verify<Tree: 'static + MerkleTreeTrait>(
    proof: SealProof,
    commitments: &SealCommitments,
    sector: SectorIdentity,
    proof_bytes: &[u8],
) -> Result<bool, FilecoinError> {
    let config = proof.porep_config()?;
    filecoin_proofs::verify_seal::<Tree>(
        &config,
        commitments.comm_r,
        commitments.comm_d,
        sector.prover_id,
        SectorId::from(sector.sector_id),
        commitments.ticket,
        commitments.seed,
        proof_bytes,
    )
    .map_err(filecoin(format!("verify_seal ({proof})")))
}
