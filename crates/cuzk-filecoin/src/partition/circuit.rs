//! filecoin's StackedDRG partition circuit (storage-proofs-porep 19.1.0's `StackedCircuit`)
//! re-implemented, so that every SHA-256 — and every number unpacked into its bits or packed from
//! a digest's — goes through [`cuzk_synth::gadgets`] on the root constraint system, where a
//! [`cuzk_synth::Witness`] computes it natively: the labels (20 compressions each) and the tree D
//! (comm_d) paths (2 per level) are over 95% of the rows.
//! filecoin's circuit calls bellperson's gadget itself, from types private to its crate.
//!
//! It must allocate and constrain exactly what filecoin's circuit does, in the same order
//! (tests/filecoin/porep.rs holds its rows and witness against filecoin's). The Poseidon parts (the
//! comm_r check, column hashes, the tree C and R paths: `PoRCircuit` re-implemented too) go
//! through [`cuzk_synth::gadgets::poseidon_hash`], native in a witness as well.

use bellpepper_core::{ConstraintSystem, SynthesisError};
use bellperson::gadgets::boolean::Boolean;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::gadgets::uint32::UInt32;
use cuzk_math::Scalar;
use filecoin_proofs::{DefaultPieceHasher, MerkleTreeTrait};
use serde::de::DeserializeOwned;
use serde::Serialize;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::gadgets::encode::encode;
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};
use storage_proofs_porep::stacked::{self, Column, ColumnProof, TOTAL_PARENTS};
use typenum::{U11, U2};

use super::{PartitionCircuit, TreeDomain};
use crate::inclusion::{
    malformed, preimage_bits, private, sha256_num, tree_hash, tree_inclusion, TreeD,
};

/// An inclusion proof in a tree of `Tree`'s shape (trees C and R).
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// A column proof's column and inclusion proof.
type OpenedColumn<Tree> = (Column<<Tree as MerkleTreeTrait>::Hasher>, TreeProof<Tree>);

/// What the prologue allocated that every challenge reads.
pub(super) struct Commitments {
    /// replica_id's bits as a label's preimage takes them ([`preimage_bits`]).
    replica_id: Vec<Boolean>,
    comm_d: AllocatedNum<Scalar>,
    comm_c: AllocatedNum<Scalar>,
    comm_r_last: AllocatedNum<Scalar>,
}

/// The commitments: replica_id, comm_d and comm_r public, comm_r_last and comm_c private, and
/// comm_r = H(comm_c, comm_r_last).
pub(super) fn prologue<Tree: 'static + MerkleTreeTrait, CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    circuit: &PartitionCircuit<Tree>,
) -> Result<Commitments, SynthesisError> {
    let replica_id = public(cs, circuit.replica_id.into())?;
    let replica_id = preimage_bits(cs, &replica_id)?;
    let comm_d = public(cs, circuit.comm_d.into())?;
    let comm_r = public(cs, circuit.comm_r.into())?;
    let comm_r_last = private(cs, circuit.comm_r_last.into())?;
    let comm_c = private(cs, circuit.comm_c.into())?;
    let hashed = tree_hash::<Tree, U2, _>(cs, &[comm_c.clone(), comm_r_last.clone()])?;
    constraint::equal(cs, || "comm_r = H(comm_c, comm_r_last)", &comm_r, &hashed);
    Ok(Commitments {
        replica_id,
        comm_d,
        comm_c,
        comm_r_last,
    })
}

/// One challenge, from its vanilla proof: the data node in tree D, the parents' columns opened in
/// tree C, the challenged node's label in every layer recomputed from them, the last one's
/// encoding of the data node opened in tree R, and the labels' column opened in tree C.
pub(super) fn challenge<Tree: 'static + MerkleTreeTrait, CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    commitments: &Commitments,
    proof: &stacked::Proof<Tree, DefaultPieceHasher>,
) -> Result<(), SynthesisError> {
    let columns = &proof.replica_column_proofs;
    let drg_parents = opened::<Tree>(&columns.drg_parents)?;
    let exp_parents = opened::<Tree>(&columns.exp_parents)?;
    let (_, labels_path) = open::<Tree>(&columns.c_x)?;
    let first_labeling = proof
        .labeling_proofs
        .first()
        .ok_or_else(|| malformed("no labeling proof".into()))?;
    let (_, _, node): (Vec<TreeDomain<Tree>>, u32, u64) = fields(first_labeling)?;
    let num_layers = match (drg_parents.first(), exp_parents.is_empty()) {
        (Some((column, _)), false) => column.rows().len(),
        _ => return Err(malformed("no DRG or no expander parents".into())),
    };

    let data_leaf = private(cs, proof.comm_d_proofs.leaf().into())?;
    tree_inclusion::<TreeD, _>(
        cs,
        proof.comm_d_proofs.as_options(),
        &commitments.comm_d,
        &data_leaf,
    )?;
    let drg_columns = parent_columns::<Tree, _>(cs, drg_parents, num_layers, &commitments.comm_c)?;
    let exp_columns = parent_columns::<Tree, _>(cs, exp_parents, num_layers, &commitments.comm_c)?;

    let node = UInt64::alloc(&mut *cs, Some(node))?;
    node.pack_into_input(&mut *cs)?;
    let mut labels = Vec::with_capacity(num_layers);
    for layer in 1..=num_layers {
        // The expander parents' labels are in the previous layer, so layer 1 has none.
        let mut parents = Vec::with_capacity(drg_columns.len() + exp_columns.len());
        for column in &drg_columns {
            parents.push(preimage_bits(cs, &column[layer - 1])?);
        }
        if layer > 1 {
            for column in &exp_columns {
                parents.push(preimage_bits(cs, &column[layer - 2])?);
            }
        }
        // Parent columns are hashed first, so num_layers is 2 or 11 here.
        labels.push(label(
            cs,
            &commitments.replica_id,
            layer as u32,
            &node,
            &parents,
        )?);
    }

    let key = labels.last().ok_or_else(|| malformed("no layers".into()))?;
    let encoded = encode(&mut *cs, key, &data_leaf)?;
    tree_inclusion::<Tree, _>(
        cs,
        proof.comm_r_last_proof.as_options(),
        &commitments.comm_r_last,
        &encoded,
    )?;
    let labels_hash = column_hash::<Tree, _>(cs, &labels)?;
    tree_inclusion::<Tree, _>(
        cs,
        labels_path.as_options(),
        &commitments.comm_c,
        &labels_hash,
    )
}

/// The parents' columns allocated, column by column: its rows, its hash, the hash's inclusion in
/// tree C.
fn parent_columns<Tree: 'static + MerkleTreeTrait, CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    parents: Vec<OpenedColumn<Tree>>,
    num_layers: usize,
    comm_c: &AllocatedNum<Scalar>,
) -> Result<Vec<Vec<AllocatedNum<Scalar>>>, SynthesisError> {
    let mut columns = Vec::with_capacity(parents.len());
    for (column, path) in parents {
        let rows = column
            .rows()
            .iter()
            .map(|&row| private(cs, row.into()))
            .collect::<Result<Vec<_>, _>>()?;
        if rows.len() != num_layers {
            return Err(malformed(format!(
                "a parent column of {} rows, another of {num_layers}",
                rows.len()
            )));
        }
        let hash = column_hash::<Tree, _>(cs, &rows)?;
        tree_inclusion::<Tree, _>(cs, path.as_options(), comm_c, &hash)?;
        columns.push(rows);
    }
    Ok(columns)
}

/// The label of `node` in `layer`: SHA-256 of replica_id, then the layer and the node, then
/// [`TOTAL_PARENTS`] parent labels (`parents` repeated in order), each in a 32-byte slot.
/// (filecoin spells the repetition out for the only counts it accepts, 6 DRG parents in layer 1
/// and 6 + 8 after; cycling repeats them the same way.)
fn label<CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    replica_id: &[Boolean],
    layer: u32,
    node: &UInt64,
    parents: &[Vec<Boolean>],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    const SLOT: usize = 256;
    let pad = |bits: &mut Vec<Boolean>| {
        bits.resize(bits.len().next_multiple_of(SLOT), Boolean::Constant(false));
    };
    let mut preimage = Vec::with_capacity((2 + TOTAL_PARENTS) * SLOT);
    preimage.extend_from_slice(replica_id);
    pad(&mut preimage);
    preimage.extend(UInt32::constant(layer).into_bits_be());
    preimage.extend(node.to_bits_be());
    pad(&mut preimage);
    for parent in parents.iter().cycle().take(TOTAL_PARENTS) {
        preimage.extend_from_slice(parent);
        pad(&mut preimage);
    }
    sha256_num(cs, &preimage)
}

/// A column's hash as filecoin's `hash_single_column` computes it: Poseidon of its 2 or 11 rows
/// (with filecoin's constants, as `hash_multi_leaf_circuit` takes them).
fn column_hash<Tree: 'static + MerkleTreeTrait, CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    rows: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    match rows.len() {
        2 => tree_hash::<Tree, U2, _>(cs, rows),
        11 => tree_hash::<Tree, U11, _>(cs, rows),
        n => Err(malformed(format!("a column of {n} rows, not 2 or 11"))),
    }
}

fn public<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    value: Scalar,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let num = private(cs, value)?;
    num.inputize(&mut *cs)?;
    Ok(num)
}

fn opened<Tree: 'static + MerkleTreeTrait>(
    proofs: &[ColumnProof<TreeProof<Tree>>],
) -> Result<Vec<OpenedColumn<Tree>>, SynthesisError> {
    proofs.iter().map(open::<Tree>).collect()
}

fn open<Tree: 'static + MerkleTreeTrait>(
    proof: &ColumnProof<TreeProof<Tree>>,
) -> Result<OpenedColumn<Tree>, SynthesisError> {
    fields(proof)
}

/// `value`'s fields, read back as `T`, the tuple of their types (bincode writes a struct as its
/// fields in order): how the vanilla proof's fields that storage-proofs-porep keeps to itself (a
/// column proof's column and path, a labeling proof's node) are read.
fn fields<T: DeserializeOwned>(value: &impl Serialize) -> Result<T, SynthesisError> {
    let bytes = bincode::serialize(value).map_err(std::io::Error::other)?;
    Ok(bincode::deserialize(&bytes).map_err(std::io::Error::other)?)
}
