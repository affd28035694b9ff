//! One PoRep partition's circuit, the StackedDRG circuit filecoin-proofs builds, kept as its
//! commitments and its challenges' vanilla proofs so that the challenges can also be synthesized
//! apart: each is a section of the circuit ([`Sectioned`]) and the witness-only path runs them
//! side by side (18 per partition at 32 GiB), through [`circuit`], filecoin's circuit
//! re-implemented so that its SHA-256 witness is computed natively.

use std::ops::Range;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_math::Scalar;
use cuzk_synth::{Sectioned, Witness};
use filecoin_hashers::Hasher;
use filecoin_proofs::{DefaultPieceDomain, DefaultPieceHasher, MerkleTreeTrait};
use storage_proofs_porep::stacked;

use crate::filecoin_types::Circuit as StackedCircuit;

mod circuit;

pub(crate) type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// What `StackedCompound::circuit` puts in a partition's circuit, in a form whose challenges can
/// be taken one by one. Synthesized whole or by sections, it is filecoin's circuit itself (the
/// same function runs it); its witness alone ([`Sectioned::witness_sections`]) comes from the
/// re-implementation.
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

    /// The vanilla proofs of sections `range`.
    fn challenges_in(
        &self,
        range: Range<usize>,
    ) -> Result<&[stacked::Proof<Tree, DefaultPieceHasher>], SynthesisError> {
        self.challenges
            .get(range)
            .ok_or(SynthesisError::Unsatisfiable)
    }

    /// [`Sectioned::synthesize_sections`] through cuzk's re-implementation of filecoin's circuit:
    /// the same rows and values in the same order, its SHA-256s computed natively when `cs` is a
    /// [`Witness`] (which is why `cs` must be a root, never a namespace). Public so that tests can
    /// hold its rows against filecoin's.
    pub fn synthesize_reimplemented<CS: ConstraintSystem<Scalar> + 'static>(
        &self,
        cs: &mut CS,
        range: Range<usize>,
    ) -> Result<(), SynthesisError> {
        let challenges = self.challenges_in(range)?;
        let commitments = circuit::prologue(cs, self)?;
        for proof in challenges {
            circuit::challenge(cs, &commitments, proof)?;
        }
        Ok(())
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

    fn synthesize_sections<CS: ConstraintSystem<Scalar> + 'static>(
        &self,
        cs: &mut CS,
        range: Range<usize>,
    ) -> Result<(), SynthesisError> {
        self.run(cs, self.challenges_in(range)?.to_vec())
    }

    fn witness_sections(&self, w: &mut Witness, range: Range<usize>) -> Result<(), SynthesisError> {
        self.synthesize_reimplemented(w, range)
    }
}
