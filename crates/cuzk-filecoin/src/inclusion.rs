//! Inclusion in filecoin's Poseidon trees (storage-proofs-core's `PoRCircuit`) re-implemented for
//! the circuits cuzk re-implements (the PoRep partition, the PoSt sectors), so that each hash
//! goes through [`gadgets::poseidon_hash`] on the root constraint system, native in a
//! [`cuzk_synth::Witness`]. It allocates and constrains exactly what filecoin's gadget does, in
//! the same order.

use std::any::TypeId;

use bellpepper_core::{ConstraintSystem, SynthesisError};
use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use cuzk_math::Scalar;
use cuzk_synth::gadgets;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::{Hasher, PoseidonArity};
use filecoin_proofs::MerkleTreeTrait;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::gadgets::insertion::insert;
use typenum::Unsigned;

/// One level of a tree path as filecoin's proofs give it (`as_options`): the siblings, and the
/// node's index among them and it.
pub(crate) type TreePathLevel = (Vec<Option<Scalar>>, Option<usize>);

/// filecoin's `PoRCircuit` for `leaf` under `root` in a tree of `Tree`'s shape, root not exposed:
/// per level its index bits, its siblings, the node inserted among them and their hash (the base
/// levels, then the sub-tree's and the top tree's where the shape has them), then the index bits
/// packed into public inputs and the root equated to `root`.
pub(crate) fn tree_inclusion<Tree: 'static + MerkleTreeTrait, CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    path: Vec<TreePathLevel>,
    root: &AllocatedNum<Scalar>,
    leaf: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError> {
    let (sub, top) = (
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    );
    if top > 0 && sub == 0 {
        return Err(malformed(
            "a tree with a top level and no sub-tree level".into(),
        ));
    }
    let mut base = path;
    let upper = usize::from(sub > 0) + usize::from(top > 0);
    let upper = base
        .len()
        .checked_sub(upper)
        .map(|at| base.split_off(at))
        .ok_or_else(|| malformed(format!("a tree path of {} levels", base.len())))?;
    let mut node = leaf.clone();
    let mut bits = Vec::new();
    for level in &base {
        node = path_level::<Tree, Tree::Arity, _>(cs, level, &node, &mut bits)?;
    }
    let mut upper = upper.iter();
    if let Some(level) = upper.next() {
        node = path_level::<Tree, Tree::SubTreeArity, _>(cs, level, &node, &mut bits)?;
    }
    if let Some(level) = upper.next() {
        node = path_level::<Tree, Tree::TopTreeArity, _>(cs, level, &node, &mut bits)?;
    }
    multipack::pack_into_inputs(&mut *cs, &bits)?;
    constraint::equal(cs, || "tree root", &node, root);
    Ok(())
}

/// One level of a tree path over `node` (arity `A`): its index bits (appended to `bits`), its
/// siblings, `node` inserted among them, their hash.
fn path_level<Tree, A, CS>(
    cs: &mut CS,
    (siblings, index): &TreePathLevel,
    node: &AllocatedNum<Scalar>,
    bits: &mut Vec<Boolean>,
) -> Result<AllocatedNum<Scalar>, SynthesisError>
where
    Tree: 'static + MerkleTreeTrait,
    A: 'static + PoseidonArity,
    CS: ConstraintSystem<Scalar> + 'static,
{
    let arity = A::to_usize();
    if !arity.is_power_of_two() || siblings.len() + 1 != arity {
        return Err(malformed(format!(
            "a tree path level of {} siblings at arity {arity}",
            siblings.len()
        )));
    }
    let index_bits = (0..arity.trailing_zeros())
        .map(|b| {
            let bit = index.map(|index| (index >> b) & 1 == 1);
            AllocatedBit::alloc(&mut *cs, bit).map(Boolean::from)
        })
        .collect::<Result<Vec<_>, _>>()?;
    bits.extend_from_slice(&index_bits);
    let siblings = siblings
        .iter()
        .map(|s| AllocatedNum::alloc(&mut *cs, || s.ok_or(SynthesisError::AssignmentMissing)))
        .collect::<Result<Vec<_>, _>>()?;
    let children = insert(cs, node, &index_bits, &siblings)?;
    tree_hash::<Tree, A, _>(cs, &children)
}

/// Poseidon of `preimage` (arity `A`) as `Tree`'s hasher computes it in a circuit (neptune's
/// gadget with filecoin's constants), through [`gadgets::poseidon_hash`]: natively in a witness.
/// Every registered PoRep's trees C and R hash with Poseidon; a tree of another hasher is refused.
pub(crate) fn tree_hash<Tree, A, CS>(
    cs: &mut CS,
    preimage: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError>
where
    Tree: 'static + MerkleTreeTrait,
    A: 'static + PoseidonArity,
    CS: ConstraintSystem<Scalar> + 'static,
{
    if TypeId::of::<Tree::Hasher>() != TypeId::of::<PoseidonHasher>() {
        return Err(malformed(format!(
            "trees hashed with {}, not Poseidon",
            <Tree::Hasher as Hasher>::name()
        )));
    }
    gadgets::poseidon_hash(cs, preimage, A::PARAMETERS())
}

pub(crate) fn private<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    value: Scalar,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    AllocatedNum::alloc(&mut *cs, || Ok(value))
}

/// A vanilla proof whose shape filecoin's circuit would refuse (with a panic).
pub(crate) fn malformed(what: String) -> SynthesisError {
    SynthesisError::IncompatibleLengthVector(what)
}
