//! The PoRep, PoSt and SnapDeals types of filecoin's crates for one tree shape, named once.

use filecoin_proofs::parameters::{
    public_params, window_post_public_params, winning_post_public_params,
};
use filecoin_proofs::{DefaultPieceHasher, MerkleTreeTrait, TreeRHasher};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicParams,
};

use crate::error::filecoin;
use crate::{FilecoinError, PostKind, PostProof, SealProof, UpdateProof};

pub(crate) type Drg<'a, Tree> = StackedDrg<'a, Tree, DefaultPieceHasher>;
pub(crate) type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
pub(crate) type Circuit<Tree> = StackedCircuit<Tree, DefaultPieceHasher>;

/// The circuit of `proof` without a witness, as parameter generation and R1CS recording need it.
pub(crate) fn blank_circuit<Tree: 'static + MerkleTreeTrait>(
    proof: SealProof,
) -> Result<Circuit<Tree>, FilecoinError> {
    let vanilla = public_params::<Tree>(&proof.porep_config()?)
        .map_err(filecoin(format!("the public parameters of {proof}")))?;
    Ok(<Compound<Tree> as CompoundProof<
        '_,
        Drg<'_, Tree>,
        Circuit<Tree>,
    >>::blank_circuit(&vanilla))
}

/// The fallback PoSt public parameters of `proof` (WinningPoSt's or WindowPoSt's).
pub(crate) fn post_public_params<Tree: 'static + MerkleTreeTrait>(
    proof: PostProof,
) -> Result<storage_proofs_post::fallback::PublicParams, FilecoinError> {
    let config = proof.post_config()?;
    match proof.kind {
        PostKind::Winning => winning_post_public_params::<Tree>(&config),
        PostKind::WindowV1 | PostKind::Window => window_post_public_params::<Tree>(&config),
    }
    .map_err(filecoin(format!("the public parameters of {proof}")))
}

/// The PoSt circuit of `proof` without a witness.
pub(crate) fn blank_post_circuit<Tree: 'static + MerkleTreeTrait>(
    proof: PostProof,
) -> Result<FallbackPoStCircuit<Tree>, FilecoinError> {
    let vanilla = post_public_params::<Tree>(proof)?;
    Ok(<FallbackPoStCompound<Tree> as CompoundProof<
        '_,
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::blank_circuit(&vanilla))
}

/// The empty-sector-update circuit of `proof` (one partition's) without a witness.
pub(crate) fn blank_update_circuit<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: UpdateProof,
) -> EmptySectorUpdateCircuit<Tree> {
    let vanilla = PublicParams::from_sector_size(proof.size.bytes());
    <EmptySectorUpdateCompound<Tree> as CompoundProof<
        '_,
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::blank_circuit(&vanilla)
}
