//! The PoRep types of filecoin's crates for one tree shape, named once.

use filecoin_proofs::parameters::public_params;
use filecoin_proofs::{DefaultPieceHasher, MerkleTreeTrait};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};

use crate::error::filecoin;
use crate::{FilecoinError, SealProof};

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
