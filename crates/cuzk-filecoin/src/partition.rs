//! One PoRep partition's circuit, the StackedDRG circuit filecoin-proofs builds, kept as its
//! commitments and its challenges' vanilla proofs so that the challenges can also be synthesized
//! apart: each is a section of the circuit ([`Sectioned`]) and the witness-only path runs them
//! side by side (18 per partition at 32 GiB).

use std::ops::Range;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_math::Scalar;
use cuzk_synth::Sectioned;
use filecoin_hashers::Hasher;
use filecoin_proofs::{DefaultPieceDomain, DefaultPieceHasher, MerkleTreeTrait};
use storage_proofs_porep::stacked;

use crate::shapes::Circuit as StackedCircuit;

pub(crate) type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// What `StackedCompound::circuit` puts in a partition's circuit, in a form whose challenges can
/// be taken one by one. Synthesized whole, it is filecoin's circuit itself (the same function
/// runs it).
pub struct PartitionCircuit<Tree: 'static + MerkleTreeTrait> {
    pub(crate) replica_id: TreeDomain<Tree>,
    pub(crate) comm_d: DefaultPieceDomain,
    pub(crate) comm_r: TreeDomain<Tree>,
    pub(crate) comm_r_last: TreeDomain<Tree>,
    pub(crate) comm_c: TreeDomain<Tree>,
    /// One vanilla proof per challenge, turned into the circuit's form when synthesized.
    pub(crate) challenges: Vec<stacked::Proof<Tree, DefaultPieceHasher>>,
}

// By hand: filecoin's tree types are not all Clone, their proofs are.
impl<Tree: 'static + MerkleTreeTrait> Clone for PartitionCircuit<Tree> {
    fn clone(&self) -> Self {
        PartitionCircuit {
            replica_id: self.replica_id,
            comm_d: self.comm_d,
            comm_r: self.comm_r,
            comm_r_last: self.comm_r_last,
            comm_c: self.comm_c,
            challenges: self.challenges.clone(),
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait> std::fmt::Debug for PartitionCircuit<Tree> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionCircuit")
            .field("challenges", &self.challenges.len())
            .finish_non_exhaustive()
    }
}

impl<Tree: 'static + MerkleTreeTrait> PartitionCircuit<Tree> {
    /// filecoin's circuit over `challenges`: the commitments, then each challenge in order.
    fn run<CS: ConstraintSystem<Scalar>>(
        &self,
        cs: &mut CS,
        challenges: Vec<stacked::Proof<Tree, DefaultPieceHasher>>,
    ) -> Result<(), SynthesisError> {
        StackedCircuit::<Tree>::synthesize(
            cs,
            Some(self.replica_id),
            Some(self.comm_d),
            Some(self.comm_r),
            Some(self.comm_r_last),
            Some(self.comm_c),
            challenges.into_iter().map(Into::into).collect(),
        )
    }
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for PartitionCircuit<Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(
        mut self,
        cs: &mut CS,
    ) -> Result<(), SynthesisError> {
        let challenges = std::mem::take(&mut self.challenges);
        self.run(cs, challenges)
    }
}

impl<Tree: 'static + MerkleTreeTrait> Sectioned for PartitionCircuit<Tree> {
    fn sections(&self) -> usize {
        self.challenges.len()
    }

    fn synthesize_sections<CS: ConstraintSystem<Scalar>>(
        &self,
        cs: &mut CS,
        range: Range<usize>,
    ) -> Result<(), SynthesisError> {
        let challenges = self
            .challenges
            .get(range)
            .ok_or(SynthesisError::Unsatisfiable)?;
        self.run(cs, challenges.to_vec())
    }
}
