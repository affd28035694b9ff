//! Verification by filecoin-proofs itself (`verify_seal`, `verify_winning_post`,
//! `verify_window_post`, `verify_empty_sector_update_proof`), so a cuzk proof is judged exactly as
//! the network's tools judge it.

use std::collections::BTreeMap;
use std::path::Path;

use filecoin_proofs::{with_shape, MerkleTreeTrait, PublicReplicaInfo, TreeRHasher};
use storage_proofs_core::sector::SectorId;

use crate::error::filecoin;
use crate::params::check_parameter_dir;
use crate::{
    CircuitId, FilecoinError, ParamFiles, PostKind, PostProof, Revision, SealCommitments,
    SealProof, SnapRequest,
};

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
    let files = verifying_key_files(params_dir, proof)?;
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

/// Checks a PoSt proof with filecoin-proofs' `verify_winning_post` or `verify_window_post`
/// (WindowPoSt: `sectors` are all of the proof's sectors, in one partition), reading the
/// verifying key from `params_dir` (filecoin-proofs' parameter directory). `sectors` are
/// (sector id, comm_r) pairs. `Ok(false)` is a proof that does not verify.
pub fn verify_post(
    proof: PostProof,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    sectors: &[(u64, [u8; 32])],
    proof_bytes: &[u8],
    params_dir: &Path,
) -> Result<bool, FilecoinError> {
    verifying_key_files(params_dir, proof)?;
    with_shape!(
        proof.size.bytes(),
        verify_post_of,
        proof,
        randomness,
        prover_id,
        sectors,
        proof_bytes,
    )
}

fn verify_post_of<Tree: 'static + MerkleTreeTrait>(
    proof: PostProof,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    sectors: &[(u64, [u8; 32])],
    proof_bytes: &[u8],
) -> Result<bool, FilecoinError> {
    let config = proof.post_config()?;
    let replica = |comm_r: [u8; 32]| {
        PublicReplicaInfo::new(comm_r).map_err(filecoin(format!("the comm_r of {proof}")))
    };
    match proof.kind {
        PostKind::Winning => {
            let replicas = sectors
                .iter()
                .map(|&(id, comm_r)| Ok((SectorId::from(id), replica(comm_r)?)))
                .collect::<Result<Vec<_>, FilecoinError>>()?;
            filecoin_proofs::verify_winning_post::<Tree>(
                &config,
                &randomness,
                &replicas,
                prover_id,
                proof_bytes,
            )
        }
        PostKind::WindowV1 | PostKind::Window => {
            let replicas = sectors
                .iter()
                .map(|&(id, comm_r)| Ok((SectorId::from(id), replica(comm_r)?)))
                .collect::<Result<BTreeMap<_, _>, FilecoinError>>()?;
            filecoin_proofs::verify_window_post::<Tree>(
                &config,
                &randomness,
                &replicas,
                prover_id,
                proof_bytes,
            )
        }
    }
    .map_err(filecoin(format!("verifying the {proof} proof")))
}

/// Checks a SnapDeals proof (the partitions' proofs in order) with filecoin-proofs'
/// `verify_empty_sector_update_proof` against `snap`'s commitments, reading the verifying key
/// from `params_dir` (filecoin-proofs' parameter directory). `Ok(false)` is a proof that does not
/// verify.
pub fn verify_snap(
    snap: &SnapRequest,
    proof_bytes: &[u8],
    params_dir: &Path,
) -> Result<bool, FilecoinError> {
    verifying_key_files(params_dir, snap.proof)?;
    with_shape!(snap.proof.size.bytes(), verify_snap_of, snap, proof_bytes)
}

fn verify_snap_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    snap: &SnapRequest,
    proof_bytes: &[u8],
) -> Result<bool, FilecoinError> {
    filecoin_proofs::verify_empty_sector_update_proof::<Tree>(
        &snap.proof.porep_config()?,
        proof_bytes,
        snap.comm_r_old,
        snap.comm_r_new,
        snap.comm_d_new,
    )
    .map_err(filecoin(format!("verifying the {} proof", snap.proof)))
}

/// `circuit`'s files in `params_dir`, which must be filecoin-proofs' parameter directory (its
/// verifiers read the verifying key from there) and must hold the verifying key.
fn verifying_key_files(
    params_dir: &Path,
    circuit: impl Into<CircuitId>,
) -> Result<ParamFiles, FilecoinError> {
    check_parameter_dir(params_dir)?;
    let files = ParamFiles::new(params_dir, circuit)?;
    files.require(&files.vk)?;
    Ok(files)
}
