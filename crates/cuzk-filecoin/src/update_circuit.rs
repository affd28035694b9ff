//! filecoin's empty-sector-update partition circuit (storage-proofs-update 19.1.0's
//! `EmptySectorUpdateCircuit`) re-implemented, so that its hashes — Poseidon for phi, the
//! challenges' digests and rho and the trees R; SHA-256 for tree D's apex tree and paths — go
//! through [`cuzk_synth::gadgets`] on the root constraint system (native in a witness), and so
//! that its challenges are sections, synthesized side by side.
//!
//! It must allocate and constrain exactly what filecoin's circuit does, in the same order
//! (tests/filecoin/snap.rs holds its witness against filecoin's). Where filecoin's circuit asserts
//! on a malformed proof, this one returns an error.

use std::ops::Range;

use bellpepper_core::{ConstraintSystem, LinearCombination, SynthesisError};
use bellperson::gadgets::boolean::{field_into_allocated_bits_le, AllocatedBit, Boolean};
use bellperson::gadgets::num::AllocatedNum;
use cuzk_math::Scalar;
use cuzk_synth::gadgets;
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_proofs::{MerkleTreeTrait, TreeRHasher};
use storage_proofs_core::gadgets::insertion::select;
use storage_proofs_update::circuit::ChallengeProof;
use storage_proofs_update::constants::{hs, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::EmptySectorUpdateCircuit;
use typenum::U2;

use crate::inclusion::{inclusion_of_allocated, malformed, tree_hash, TreeD};

/// What the prologue allocated that every challenge reads.
struct Prologue {
    partition_bits: Vec<AllocatedBit>,
    h_select_bits: Vec<AllocatedBit>,
    /// H(comm_d_new, comm_r_old), rho's first input.
    phi: AllocatedNum<Scalar>,
    root_r_old: AllocatedNum<Scalar>,
    root_r_new: AllocatedNum<Scalar>,
    apex_leafs: Vec<AllocatedNum<Scalar>>,
    /// Each challenge's bits below the partition's.
    generated: Vec<Vec<AllocatedBit>>,
}

/// The prologue, then the challenges `range`: with every challenge, the whole circuit.
pub(crate) fn synthesize<Tree, CS>(
    cs: &mut CS,
    circuit: &EmptySectorUpdateCircuit<Tree>,
    range: Range<usize>,
) -> Result<(), SynthesisError>
where
    Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>,
    CS: ConstraintSystem<Scalar> + 'static,
{
    let p = prologue(cs, circuit)?;
    let proofs = &circuit.priv_inputs.challenge_proofs;
    let chosen = proofs
        .get(range.clone())
        .ok_or(SynthesisError::Unsatisfiable)?;
    for (c_index, proof) in range.zip(chosen) {
        challenge(cs, circuit, &p, c_index, proof)?;
    }
    Ok(())
}

/// The public inputs (k and h_select packed, comm_r_old, comm_d_new, comm_r_new), phi, the roots
/// of both trees R checked against comm_c, the apex tree checked against comm_d_new, and every
/// challenge's bits.
fn prologue<Tree, CS>(
    cs: &mut CS,
    circuit: &EmptySectorUpdateCircuit<Tree>,
) -> Result<Prologue, SynthesisError>
where
    Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>,
    CS: ConstraintSystem<Scalar> + 'static,
{
    let params = &circuit.pub_params;
    let (inputs, private) = (&circuit.pub_inputs, &circuit.priv_inputs);
    let value = |v: Option<Scalar>| v.ok_or(SynthesisError::AssignmentMissing);
    let alloc = |cs: &mut CS, v: Option<Scalar>| AllocatedNum::alloc(&mut *cs, || value(v));
    let partition_path = checked_partition_path(circuit)?;

    let k_and_h_select = alloc(cs, inputs.k_and_h_select)?;
    k_and_h_select.inputize(&mut *cs)?;
    let bit_len = params.partition_bit_len + hs(params.sector_nodes).len();
    // Without values (a recording) the bits have none either.
    let bit_values: Vec<Option<bool>> = match k_and_h_select.get_value() {
        Some(k) => k.to_le_bits().into_iter().take(bit_len).map(Some).collect(),
        None => vec![None; bit_len],
    };
    let bits = bit_values
        .into_iter()
        .map(|bit| AllocatedBit::alloc(&mut *cs, bit))
        .collect::<Result<Vec<_>, _>>()?;
    packs_into(cs, &bits, &k_and_h_select);
    let (partition_bits, h_select_bits) = bits.split_at(params.partition_bit_len);
    let partition_booleans: Vec<Boolean> = partition_bits.iter().cloned().map(Into::into).collect();
    let partition = gadgets::pack_bits(cs, &partition_booleans)?;

    let mut public = |v: Option<Scalar>| {
        let num = alloc(cs, v)?;
        num.inputize(&mut *cs)?;
        Ok::<_, SynthesisError>(num)
    };
    let comm_r_old = public(inputs.comm_r_old)?;
    let comm_d_new = public(inputs.comm_d_new)?;
    let comm_r_new = public(inputs.comm_r_new)?;
    let randomness = &*POSEIDON_CONSTANTS_GEN_RANDOMNESS;
    let phi = gadgets::poseidon_hash(cs, &[comm_d_new.clone(), comm_r_old.clone()], randomness)?;

    let comm_c = alloc(cs, private.comm_c)?;
    let root_r_old = alloc(cs, private.root_r_old)?;
    let root_r_new = alloc(cs, private.root_r_new)?;
    let apex_leafs = private
        .apex_leafs
        .iter()
        .map(|leaf| alloc(cs, *leaf))
        .collect::<Result<Vec<_>, _>>()?;
    let partition_path = partition_path
        .iter()
        .map(|siblings| Ok(vec![alloc(cs, siblings[0])?]))
        .collect::<Result<Vec<_>, SynthesisError>>()?;

    // comm_r = H(comm_c, root_r), old and new.
    for (root, comm_r) in [(&root_r_old, &comm_r_old), (&root_r_new, &comm_r_new)] {
        let calculated = tree_hash::<Tree, U2, _>(cs, &[comm_c.clone(), root.clone()])?;
        cs.enforce(
            || "comm_r calculated == comm_r",
            |lc| lc + calculated.get_variable(),
            |lc| lc + CS::one(),
            |lc| lc + comm_r.get_variable(),
        );
    }

    // The apex tree over this partition's apex leaves, its root under comm_d_new.
    let mut row = apex_leafs.clone();
    while row.len() > 1 {
        row = row
            .chunks(2)
            .map(|pair| tree_hash::<TreeD, U2, _>(cs, pair))
            .collect::<Result<Vec<_>, _>>()?;
    }
    let apex_root = row
        .pop()
        .ok_or_else(|| malformed("no apex leaves".into()))?;
    inclusion_of_allocated::<TreeD, _>(
        cs,
        partition_bits,
        &apex_root,
        &partition_path,
        &comm_d_new,
    )?;

    let generated = challenge_bits(cs, circuit, &comm_r_new, &partition)?;
    Ok(Prologue {
        partition_bits: partition_bits.to_vec(),
        h_select_bits: h_select_bits.to_vec(),
        phi,
        root_r_old,
        root_r_new,
        apex_leafs,
        generated,
    })
}

/// The partition's path from its apex root to comm_d_new, which every challenge's tree D path
/// ends with: the shapes filecoin's circuit asserts, checked.
fn checked_partition_path<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    circuit: &EmptySectorUpdateCircuit<Tree>,
) -> Result<&[Vec<Option<Scalar>>], SynthesisError> {
    let params = &circuit.pub_params;
    let private = &circuit.priv_inputs;
    let proofs = &private.challenge_proofs;
    let below = params
        .challenge_bit_len
        .checked_sub(params.partition_bit_len);
    let path_of = |proof| partition_path_of::<Tree>(proof, below);
    let partition_path = proofs
        .first()
        .and_then(path_of)
        .ok_or_else(|| malformed("no challenge proof with a partition path".into()))?;
    let well_formed = private.apex_leafs.len() == params.apex_leaf_count
        && partition_path.len() == params.partition_bit_len
        && partition_path.iter().all(|siblings| siblings.len() == 1)
        && proofs.len() == params.challenge_count
        && proofs
            .iter()
            .all(|proof| path_of(proof) == Some(partition_path));
    match well_formed {
        true => Ok(partition_path),
        false => Err(malformed(format!(
            "an update partition of {} challenges, {} apex leaves and a partition path of {} \
             levels (expected {}, {} and {}, one path for all)",
            proofs.len(),
            private.apex_leafs.len(),
            partition_path.len(),
            params.challenge_count,
            params.apex_leaf_count,
            params.partition_bit_len
        ))),
    }
}

/// The end of a challenge's tree D path from `below` levels up: its partition's path.
fn partition_path_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: &ChallengeProof<Tree>,
    below: Option<usize>,
) -> Option<&[Vec<Option<Scalar>>]> {
    proof.path_d_new.get(below?..)
}

/// filecoin's `gen_challenge_bits`: digests H(comm_r_new, k·digests + j), each cut into the
/// bits of as many challenges as it holds.
fn challenge_bits<Tree, CS>(
    cs: &mut CS,
    circuit: &EmptySectorUpdateCircuit<Tree>,
    comm_r_new: &AllocatedNum<Scalar>,
    partition: &AllocatedNum<Scalar>,
) -> Result<Vec<Vec<AllocatedBit>>, SynthesisError>
where
    Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>,
    CS: ConstraintSystem<Scalar> + 'static,
{
    let params = &circuit.pub_params;
    let bits_per_challenge = params.challenge_bit_len - params.partition_bit_len;
    let per_digest = Scalar::CAPACITY as usize / bits_per_challenge.max(1);
    let digests = params.challenge_count.div_ceil(per_digest.max(1)) as u64;
    let mut generated = Vec::with_capacity(params.challenge_count);
    for j in 0..digests {
        let index = AllocatedNum::alloc(&mut *cs, || {
            let k = partition
                .get_value()
                .ok_or(SynthesisError::AssignmentMissing)?;
            Ok(k * Scalar::from(digests) + Scalar::from(j))
        })?;
        cs.enforce(
            || "digest_index == k * digests_per_partition + j",
            |lc| {
                lc + (Scalar::from(digests), partition.get_variable())
                    + (Scalar::from(j), CS::one())
            },
            |lc| lc + CS::one(),
            |lc| lc + index.get_variable(),
        );
        let randomness = &*POSEIDON_CONSTANTS_GEN_RANDOMNESS;
        let digest = gadgets::poseidon_hash(cs, &[comm_r_new.clone(), index], randomness)?;
        let bits = bits_of(cs, &digest)?;
        let take = match j + 1 == digests {
            true => params.challenge_count - generated.len(),
            false => per_digest,
        };
        generated.extend(
            bits.chunks(bits_per_challenge)
                .take(take)
                .map(<[_]>::to_vec),
        );
    }
    Ok(generated)
}

/// One challenge: its rho, the old and new replica leaves opened in trees R (the new one the
/// old plus the new data times rho), the data leaf opened in tree D up to its apex leaf.
fn challenge<Tree, CS>(
    cs: &mut CS,
    circuit: &EmptySectorUpdateCircuit<Tree>,
    p: &Prologue,
    c_index: usize,
    proof: &ChallengeProof<Tree>,
) -> Result<(), SynthesisError>
where
    Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>,
    CS: ConstraintSystem<Scalar> + 'static,
{
    let params = &circuit.pub_params;
    let value = |v: Option<Scalar>| v.ok_or(SynthesisError::AssignmentMissing);
    let generated = p
        .generated
        .get(c_index)
        .ok_or(SynthesisError::Unsatisfiable)?;
    let c_bits: Vec<AllocatedBit> = generated.iter().chain(&p.partition_bits).cloned().collect();
    let hs = hs(params.sector_nodes);
    let c_high = high_bits(cs, &c_bits, &p.h_select_bits, &hs)?;
    let randomness = &*POSEIDON_CONSTANTS_GEN_RANDOMNESS;
    let rho = gadgets::poseidon_hash(cs, &[p.phi.clone(), c_high], randomness)?;

    let leaf_r_old = AllocatedNum::alloc(&mut *cs, || value(proof.leaf_r_old))?;
    let leaf_d_new = AllocatedNum::alloc(&mut *cs, || value(proof.leaf_d_new))?;
    let leaf_r_new = encoded(cs, &leaf_r_old, &leaf_d_new, &rho)?;
    if let Some(got) = leaf_r_new.get_value() {
        if Some(got) != proof.leaf_r_new {
            return Err(malformed(format!(
                "challenge {c_index}: the new replica leaf is not the old one plus the data \
                 times rho"
            )));
        }
    }
    let path_r_old = allocated_path(cs, &proof.path_r_old)?;
    inclusion_of_allocated::<Tree, _>(cs, &c_bits, &leaf_r_old, &path_r_old, &p.root_r_old)?;
    let path_r_new = allocated_path(cs, &proof.path_r_new)?;
    inclusion_of_allocated::<Tree, _>(cs, &c_bits, &leaf_r_new, &path_r_new, &p.root_r_new)?;

    let to_apex = params.challenge_bit_len - params.partition_bit_len - params.apex_leaf_bit_len;
    let apex_bits: Vec<Boolean> = c_bits[to_apex..to_apex + params.apex_leaf_bit_len]
        .iter()
        .cloned()
        .map(Into::into)
        .collect();
    let apex_leaf = select(&mut *cs, &p.apex_leafs, &apex_bits)?;
    let path_to_apex = proof
        .path_d_new
        .iter()
        .take(to_apex)
        .map(|siblings| {
            let sibling = siblings.first().copied().flatten();
            Ok(vec![AllocatedNum::alloc(&mut *cs, || value(sibling))?])
        })
        .collect::<Result<Vec<_>, SynthesisError>>()?;
    inclusion_of_allocated::<TreeD, _>(
        cs,
        &c_bits[..to_apex],
        &leaf_d_new,
        &path_to_apex,
        &apex_leaf,
    )
}

/// A path's siblings, level by level, each allocated.
fn allocated_path<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    path: &[Vec<Option<Scalar>>],
) -> Result<Vec<Vec<AllocatedNum<Scalar>>>, SynthesisError> {
    path.iter()
        .map(|siblings| {
            (siblings.iter())
                .map(|s| {
                    AllocatedNum::alloc(&mut *cs, || s.ok_or(SynthesisError::AssignmentMissing))
                })
                .collect()
        })
        .collect()
}

/// `num` as its `Scalar::NUM_BITS` bits (little-endian), and the row that packs them back.
fn bits_of<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    num: &AllocatedNum<Scalar>,
) -> Result<Vec<AllocatedBit>, SynthesisError> {
    let bits = field_into_allocated_bits_le(&mut *cs, num.get_value())?;
    packs_into(cs, &bits, num);
    Ok(bits)
}

/// The row Σ 2^i·bits[i] = num.
fn packs_into<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    bits: &[AllocatedBit],
    num: &AllocatedNum<Scalar>,
) {
    let mut packed = LinearCombination::zero();
    let mut power = Scalar::ONE;
    for bit in bits {
        packed = packed + (power, bit.get_variable());
        power = power.double();
    }
    cs.enforce(
        || "binary decomp",
        |_| packed,
        |lc| lc + CS::one(),
        |lc| lc + num.get_variable(),
    );
}

/// The challenge's `h` high bits as a number, `h` the entry of `hs` that `h_select_bits` (one
/// bit set) selects: for each entry its high bits packed and times its select bit, then their
/// sum.
fn high_bits<CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    c_bits: &[AllocatedBit],
    h_select_bits: &[AllocatedBit],
    hs: &[usize],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    if h_select_bits.len() != hs.len() || hs.iter().any(|&h| h > c_bits.len()) {
        return Err(malformed(
            "h_select bits that do not match the sector's hs".into(),
        ));
    }
    let booleans: Vec<Boolean> = c_bits.iter().cloned().map(Into::into).collect();
    let mut selected = Vec::with_capacity(hs.len());
    for (&h, select) in hs.iter().zip(h_select_bits) {
        let high = gadgets::pack_bits(cs, &booleans[c_bits.len() - h..])?;
        let chosen = AllocatedNum::alloc(&mut *cs, || {
            let on = select
                .get_value()
                .ok_or(SynthesisError::AssignmentMissing)?;
            match on {
                true => high.get_value().ok_or(SynthesisError::AssignmentMissing),
                false => Ok(Scalar::ZERO),
            }
        })?;
        cs.enforce(
            || "c_high_or_zero == c_high * h_select_bit",
            |lc| lc + high.get_variable(),
            |lc| lc + select.get_variable(),
            |lc| lc + chosen.get_variable(),
        );
        selected.push(chosen);
    }
    let sum = AllocatedNum::alloc(&mut *cs, || {
        selected.iter().try_fold(Scalar::ZERO, |sum, n| {
            Ok(sum + n.get_value().ok_or(SynthesisError::AssignmentMissing)?)
        })
    })?;
    cs.enforce(
        || "c_high_selected == dot(c_highs, h_select_bits)",
        |lc| selected.iter().fold(lc, |lc, n| lc + n.get_variable()),
        |lc| lc + CS::one(),
        |lc| lc + sum.get_variable(),
    );
    Ok(sum)
}

/// A new replica leaf: the old one plus the new data times rho.
fn encoded<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    old: &AllocatedNum<Scalar>,
    data: &AllocatedNum<Scalar>,
    rho: &AllocatedNum<Scalar>,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let data_rho = data.mul(&mut *cs, rho)?;
    let new = AllocatedNum::alloc(&mut *cs, || {
        let value =
            |n: &AllocatedNum<Scalar>| n.get_value().ok_or(SynthesisError::AssignmentMissing);
        Ok(value(old)? + value(&data_rho)?)
    })?;
    cs.enforce(
        || "label_r_new == label_r_old + label_d_new * rho",
        |lc| lc + old.get_variable() + data_rho.get_variable(),
        |lc| lc + CS::one(),
        |lc| lc + new.get_variable(),
    );
    Ok(new)
}
