//! Inclusion in filecoin's trees (storage-proofs-core's `PoRCircuit` and
//! `por_no_challenge_input`) re-implemented for the circuits cuzk re-implements (the PoRep
//! partition, the PoSt sectors, the update's partition), so that each hash (Poseidon or SHA-256)
//! goes through [`cuzk_synth::gadgets`] on the root constraint system, native in a
//! [`cuzk_synth::Witness`]. It allocates and constrains exactly what filecoin's gadgets do, in the
//! same order.

use std::any::TypeId;

use bellpepper_core::{ConstraintSystem, SynthesisError};
use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use cuzk_math::Scalar;
use cuzk_synth::gadgets;
use ff::PrimeField;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_hashers::{Hasher, PoseidonArity};
use filecoin_proofs::MerkleTreeTrait;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::gadgets::insertion::insert;
use storage_proofs_core::merkle::BinaryMerkleTree;
use storage_proofs_core::util::reverse_bit_numbering;
use typenum::Unsigned;

/// One level of a tree path as filecoin's proofs give it (`as_options`): the siblings, and the
/// node's index among them and it.
pub(crate) type TreePathLevel = (Vec<Option<Scalar>>, Option<usize>);

/// PoRep's tree D (and the update's): binary, SHA-256.
pub(crate) type TreeD = BinaryMerkleTree<Sha256Hasher>;

/// Which part of a tree a path level is in: the base tree's, the sub-tree's or the top tree's
/// (each with its own arity).
#[derive(Clone, Copy)]
enum Level {
    Base,
    Sub,
    Top,
}

/// The levels of a path of `len` levels in a tree of `Tree`'s shape: the base tree's, then one
/// for the sub-tree and one for the top tree where the shape has them.
fn levels<Tree: MerkleTreeTrait>(len: usize) -> Result<Vec<Level>, SynthesisError> {
    let (sub, top) = (
        Tree::SubTreeArity::to_usize() > 0,
        Tree::TopTreeArity::to_usize() > 0,
    );
    if top && !sub {
        return Err(malformed(
            "a tree with a top level and no sub-tree level".into(),
        ));
    }
    let upper = usize::from(sub) + usize::from(top);
    let base = len
        .checked_sub(upper)
        .ok_or_else(|| malformed(format!("a tree path of {len} levels")))?;
    let mut levels = vec![Level::Base; base];
    levels.extend(sub.then_some(Level::Sub));
    levels.extend(top.then_some(Level::Top));
    Ok(levels)
}

/// The arity of a level of `Tree`.
fn arity<Tree: MerkleTreeTrait>(level: Level) -> usize {
    match level {
        Level::Base => Tree::Arity::to_usize(),
        Level::Sub => Tree::SubTreeArity::to_usize(),
        Level::Top => Tree::TopTreeArity::to_usize(),
    }
}

/// filecoin's `PoRCircuit` for `leaf` under `root` in a tree of `Tree`'s shape, root not exposed:
/// per level its index bits, its siblings, the node inserted among them and their hash (the base
/// levels, then the sub-tree's and the top tree's where the shape has them), then the index bits
/// packed into public inputs and the root equated to `root`.
pub(crate) fn tree_inclusion<
    Tree: 'static + MerkleTreeTrait,
    CS: ConstraintSystem<Scalar> + 'static,
>(
    cs: &mut CS,
    path: Vec<TreePathLevel>,
    root: &AllocatedNum<Scalar>,
    leaf: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError> {
    let mut node = leaf.clone();
    let mut bits = Vec::new();
    for (level, (siblings, index)) in levels::<Tree>(path.len())?.into_iter().zip(&path) {
        let index_bits = (0..arity::<Tree>(level).trailing_zeros())
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
        node = hashed_level::<Tree, _>(cs, level, &node, &index_bits, &siblings)?;
    }
    multipack::pack_into_inputs(&mut *cs, &bits)?;
    constraint::equal(cs, || "tree root", &node, root);
    Ok(())
}

/// storage-proofs-core's `por_no_challenge_input`: `leaf` under `root` in a tree of `Tree`'s shape
/// along a path whose index bits (`bits`, least significant first) and siblings the caller
/// allocated; the root equated in a row of its own.
pub(crate) fn inclusion_of_allocated<Tree, CS>(
    cs: &mut CS,
    bits: &[AllocatedBit],
    leaf: &AllocatedNum<Scalar>,
    path: &[Vec<AllocatedNum<Scalar>>],
    root: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError>
where
    Tree: 'static + MerkleTreeTrait,
    CS: ConstraintSystem<Scalar> + 'static,
{
    let mut bits = bits.iter().cloned().map(Boolean::from);
    let mut node = leaf.clone();
    for (level, siblings) in levels::<Tree>(path.len())?.into_iter().zip(path) {
        let width = arity::<Tree>(level).trailing_zeros() as usize;
        let index_bits: Vec<Boolean> = bits.by_ref().take(width).collect();
        if index_bits.len() != width {
            return Err(malformed(
                "fewer challenge bits than the tree's levels".into(),
            ));
        }
        node = hashed_level::<Tree, _>(cs, level, &node, &index_bits, siblings)?;
    }
    if bits.next().is_some() {
        return Err(malformed(
            "more challenge bits than the tree's levels".into(),
        ));
    }
    cs.enforce(
        || "calculated root == provided root",
        |lc| lc + node.get_variable(),
        |lc| lc + CS::one(),
        |lc| lc + root.get_variable(),
    );
    Ok(())
}

/// One level of a path: `node` inserted among `siblings` at `index_bits`, their hash.
fn hashed_level<Tree, CS>(
    cs: &mut CS,
    level: Level,
    node: &AllocatedNum<Scalar>,
    index_bits: &[Boolean],
    siblings: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError>
where
    Tree: 'static + MerkleTreeTrait,
    CS: ConstraintSystem<Scalar> + 'static,
{
    let arity = arity::<Tree>(level);
    if !arity.is_power_of_two() || siblings.len() + 1 != arity {
        return Err(malformed(format!(
            "a tree path level of {} siblings at arity {arity}",
            siblings.len()
        )));
    }
    let children = insert(cs, node, index_bits, siblings)?;
    match level {
        Level::Base => tree_hash::<Tree, Tree::Arity, _>(cs, &children),
        Level::Sub => tree_hash::<Tree, Tree::SubTreeArity, _>(cs, &children),
        Level::Top => tree_hash::<Tree, Tree::TopTreeArity, _>(cs, &children),
    }
}

/// The hash of `preimage` (arity `A`) as `Tree`'s hasher computes it in a circuit: Poseidon
/// through [`gadgets::poseidon_hash`] (neptune's gadget, filecoin's constants), SHA-256 over the
/// children's [`preimage_bits`] through [`sha256_num`]; native in a witness either way. Trees of
/// another hasher are refused (no registered proof has them).
pub(crate) fn tree_hash<Tree, A, CS>(
    cs: &mut CS,
    preimage: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError>
where
    Tree: 'static + MerkleTreeTrait,
    A: 'static + PoseidonArity,
    CS: ConstraintSystem<Scalar> + 'static,
{
    let hasher = TypeId::of::<Tree::Hasher>();
    if hasher == TypeId::of::<PoseidonHasher>() {
        gadgets::poseidon_hash(cs, preimage, A::PARAMETERS())
    } else if hasher == TypeId::of::<Sha256Hasher>() {
        let mut bits = Vec::with_capacity(256 * preimage.len());
        for child in preimage {
            bits.extend(preimage_bits(cs, child)?);
        }
        sha256_num(cs, &bits)
    } else {
        Err(malformed(format!(
            "trees hashed with {}",
            <Tree::Hasher as Hasher>::name()
        )))
    }
}

/// SHA-256 of `preimage` as filecoin makes a field element of it: each byte's bits reversed, the
/// first 254 bits packed.
pub(crate) fn sha256_num<CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    preimage: &[Boolean],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let digest = reverse_bit_numbering(gadgets::sha256(cs, preimage)?);
    gadgets::pack_bits(cs, &digest[..Scalar::CAPACITY as usize])
}

/// `num`'s bits as filecoin hashes a field element with SHA-256: little-endian, padded to 256
/// bits, each byte's bits reversed.
pub(crate) fn preimage_bits<CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    num: &AllocatedNum<Scalar>,
) -> Result<Vec<Boolean>, SynthesisError> {
    Ok(reverse_bit_numbering(gadgets::to_bits_le(cs, num)?))
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
