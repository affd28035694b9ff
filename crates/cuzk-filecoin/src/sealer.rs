//! A sealer for tests and benches: a sector of random data sealed by filecoin-proofs itself
//! (add piece, precommit 1 and 2, the synthetic proofs for synthetic PoRep, commit 1), so C1
//! outputs need no external data; the PoSt vanilla proofs of sealed sectors, and a sealed
//! sector updated with new data (SnapDeals), with the vanilla proofs the FFI hands Curio.
//!
//! Commit 1 needs no Groth16 parameters, only the SDR parent cache (made on demand where
//! filecoin-proofs' settings say, `FIL_PROOFS_PARENT_CACHE`).

use std::fs::File;
use std::path::Path;

use filecoin_proofs::{
    add_piece, encode_into, generate_fallback_sector_challenges, generate_partition_proofs,
    generate_single_vanilla_proof, generate_synth_proofs, seal_commit_phase1,
    seal_pre_commit_phase1, seal_pre_commit_phase2, with_shape, MerkleTreeTrait, PieceInfo,
    PrivateReplicaInfo, SealCommitPhase1Output, TreeRHasher, UnpaddedBytesAmount,
};
use rand::RngCore;
use storage_proofs_core::sector::SectorId;

use crate::error::{filecoin, io};
use crate::{
    C1Output, FilecoinError, PostProof, Revision, SealProof, SectorIdentity, SnapRequest,
    UpdateProof,
};

/// A freshly sealed sector: its C1 output and who sealed it.
#[derive(Clone, Debug)]
pub struct SealedSector {
    pub c1: C1Output,
    pub identity: SectorIdentity,
}

impl SealedSector {
    /// Wraps commit 1's output for `identity`'s sector; `how` ("sealed", "sample") names it in
    /// errors.
    pub(crate) fn from_output<Tree: MerkleTreeTrait>(
        output: &SealCommitPhase1Output<Tree>,
        proof: SealProof,
        identity: SectorIdentity,
        how: &str,
    ) -> Result<Self, FilecoinError> {
        let source = format!(
            "the C1 output of {how} {proof} sector {}",
            identity.sector_id
        );
        Ok(SealedSector {
            c1: C1Output::from_output(output, proof, &source)?,
            identity,
        })
    }
}

/// Seals a sector of random data for `proof` in `work_dir` (staged and sealed files, cache),
/// with a random sector id, ticket and seed; the prover id is `miner_id`'s
/// ([`prover_id_of_miner`]) when given, else random.
pub fn seal_random_sector(
    proof: SealProof,
    work_dir: &Path,
    miner_id: Option<u64>,
    rng: &mut impl RngCore,
) -> Result<SealedSector, FilecoinError> {
    with_shape!(proof.size.bytes(), seal, proof, work_dir, miner_id, rng,)
}

/// The prover id of miner `f0<miner_id>`: its ID address payload, `miner_id` as an unsigned
/// LEB128 varint, left-aligned in 32 zero bytes (how Curio and the FFI form it).
pub fn prover_id_of_miner(miner_id: u64) -> [u8; 32] {
    let mut id = [0u8; 32];
    let mut rest = miner_id;
    for byte in id.iter_mut() {
        // The low seven bits, with the high bit set while more follow.
        *byte = (rest & 0x7f) as u8;
        rest >>= 7;
        if rest == 0 {
            break;
        }
        *byte |= 0x80;
    }
    id
}

/// The vanilla proofs of `sectors` (each sealed by [`seal_random_sector`] into its work
/// directory) for `proof` and `randomness`, as the FFI makes them for Curio: the sectors'
/// challenges derived together, then one bincode-serialized fallback-PoSt sector proof each.
pub fn post_vanilla_proofs(
    proof: PostProof,
    sectors: &[(&SealedSector, &Path)],
    randomness: [u8; 32],
) -> Result<Vec<Vec<u8>>, FilecoinError> {
    with_shape!(
        proof.size.bytes(),
        vanilla_proofs,
        proof,
        sectors,
        randomness,
    )
}

fn vanilla_proofs<Tree: 'static + MerkleTreeTrait>(
    proof: PostProof,
    sectors: &[(&SealedSector, &Path)],
    randomness: [u8; 32],
) -> Result<Vec<Vec<u8>>, FilecoinError> {
    let config = proof.post_config()?;
    let Some((first, _)) = sectors.first() else {
        return Ok(Vec::new());
    };
    let ids: Vec<SectorId> = sectors
        .iter()
        .map(|(sector, _)| SectorId::from(sector.identity.sector_id))
        .collect();
    let challenges = generate_fallback_sector_challenges::<Tree>(
        &config,
        &randomness,
        &ids,
        first.identity.prover_id,
    )
    .map_err(filecoin("generate_fallback_sector_challenges"))?;
    sectors
        .iter()
        .zip(&ids)
        .map(|((sector, work_dir), id)| {
            let comm_r = sector.c1.commitments()?.comm_r;
            let replica = PrivateReplicaInfo::<Tree>::new(
                work_dir.join("sealed"),
                comm_r,
                work_dir.join("cache"),
            )
            .map_err(filecoin(format!(
                "the replica of sector {}",
                u64::from(*id)
            )))?;
            let sector_challenges = challenges.get(id).map(Vec::as_slice).unwrap_or_default();
            let vanilla =
                generate_single_vanilla_proof::<Tree>(&config, *id, &replica, sector_challenges)
                    .map_err(filecoin("generate_single_vanilla_proof"))?;
            bincode::serialize(&vanilla).map_err(|e| FilecoinError::Filecoin {
                what: "serializing a vanilla proof".into(),
                reason: e.to_string(),
            })
        })
        .collect()
}

/// Updates `sector` (sealed by [`seal_random_sector`] into `work_dir`) with a piece of new random
/// data as a SnapDeals update does (`encode_into`, the new replica and its cache under
/// `work_dir/update`), and returns the request Curio would send for it: the FFI's partition
/// proofs (bincode) and the old and new commitments.
pub fn snap_update(
    sector: &SealedSector,
    work_dir: &Path,
    rng: &mut impl RngCore,
) -> Result<SnapRequest, FilecoinError> {
    let proof = UpdateProof {
        size: sector.c1.proof.size,
    };
    with_shape!(proof.size.bytes(), update, proof, sector, work_dir, rng,)
}

fn update<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: UpdateProof,
    sector: &SealedSector,
    work_dir: &Path,
    rng: &mut impl RngCore,
) -> Result<SnapRequest, FilecoinError> {
    let config = proof.update_config()?;
    let (sector_key, sector_key_cache) = (work_dir.join("sealed"), work_dir.join("cache"));
    let dir = work_dir.join("update");
    let (staged, replica, cache) = (dir.join("staged"), dir.join("sealed"), dir.join("cache"));
    std::fs::create_dir_all(&cache).map_err(io(&cache))?;
    let piece = staged_piece(&proof.porep_config()?, &staged, rng)?;
    // The new replica must have its length before it is mapped.
    let length = std::fs::metadata(&sector_key)
        .map_err(io(&sector_key))?
        .len();
    File::create(&replica)
        .and_then(|file| file.set_len(length))
        .map_err(io(&replica))?;
    let encoded = encode_into::<Tree>(
        &config,
        &replica,
        &cache,
        &sector_key,
        &sector_key_cache,
        &staged,
        &[piece],
    )
    .map_err(filecoin("encode_into"))?;
    let comm_r_old = sector.c1.commitments()?.comm_r;
    let proofs = generate_partition_proofs::<Tree>(
        config,
        comm_r_old,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &sector_key,
        &sector_key_cache,
        &replica,
        &cache,
    )
    .map_err(filecoin("generate_partition_proofs"))?;
    let vanilla_proofs = proofs
        .iter()
        .map(|partition| {
            bincode::serialize(partition).map_err(|e| FilecoinError::Filecoin {
                what: "serializing an update partition proof".into(),
                reason: e.to_string(),
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(SnapRequest {
        proof,
        vanilla_proofs,
        comm_r_old,
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
    })
}

/// A sector's worth of random data as one piece, fr32-padded into `staged`.
fn staged_piece(
    config: &filecoin_proofs::PoRepConfig,
    staged: &Path,
    rng: &mut impl RngCore,
) -> Result<PieceInfo, FilecoinError> {
    let unpadded = UnpaddedBytesAmount::from(config.padded_bytes_amount());
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut data);
    let staged_file = File::create(staged).map_err(io(staged))?;
    let (piece, _) =
        add_piece(data.as_slice(), staged_file, unpadded, &[]).map_err(filecoin("add_piece"))?;
    Ok(piece)
}

/// A random prover id that is a field element, as every real one (an ID address payload of at
/// most 10 bytes) is: PoSt takes it into its circuit as one.
/// 32 random bytes that are a field element (the top two bits clear), as prover ids and the
/// chain's randomness are.
pub fn random_field_bytes(rng: &mut impl RngCore) -> [u8; 32] {
    let mut id = random_bytes(rng);
    id[31] &= 0x3f;
    id
}

pub(crate) fn random_bytes(rng: &mut impl RngCore) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    rng.fill_bytes(&mut bytes);
    bytes
}

fn seal<Tree: 'static + MerkleTreeTrait>(
    proof: SealProof,
    work_dir: &Path,
    miner_id: Option<u64>,
    rng: &mut impl RngCore,
) -> Result<SealedSector, FilecoinError> {
    let config = proof.porep_config()?;
    let (staged, sealed, cache) = (
        work_dir.join("staged"),
        work_dir.join("sealed"),
        work_dir.join("cache"),
    );
    std::fs::create_dir_all(&cache).map_err(io(&cache))?;
    let piece = staged_piece(&config, &staged, rng)?;
    File::create(&sealed).map_err(io(&sealed))?;

    let identity = SectorIdentity {
        prover_id: miner_id.map_or_else(|| random_field_bytes(rng), prover_id_of_miner),
        sector_id: rng.next_u64(),
    };
    let sector_id = SectorId::from(identity.sector_id);
    let (ticket, seed) = (random_bytes(rng), random_bytes(rng));
    let pieces = [piece];
    let phase1 = seal_pre_commit_phase1::<_, _, _, Tree>(
        &config,
        &cache,
        &staged,
        &sealed,
        identity.prover_id,
        sector_id,
        ticket,
        &pieces,
    )
    .map_err(filecoin("seal_pre_commit_phase1"))?;
    let precommit = seal_pre_commit_phase2(&config, phase1, &cache, &sealed)
        .map_err(filecoin("seal_pre_commit_phase2"))?;
    if proof.revision == Revision::Synthetic {
        // Synthetic PoRep proves its challenges once, between precommit 2 and commit 1.
        generate_synth_proofs::<_, Tree>(
            &config,
            cache.as_path(),
            sealed.as_path(),
            identity.prover_id,
            sector_id,
            ticket,
            precommit.clone(),
            &pieces,
        )
        .map_err(filecoin("generate_synth_proofs"))?;
    }
    let output = seal_commit_phase1::<_, Tree>(
        &config,
        cache.as_path(),
        sealed.as_path(),
        identity.prover_id,
        sector_id,
        ticket,
        seed,
        precommit,
        &pieces,
    )
    .map_err(filecoin("seal_commit_phase1"))?;
    SealedSector::from_output(&output, proof, identity, "sealed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_ids_are_leb128_id_address_payloads() {
        assert_eq!(prover_id_of_miner(0)[..2], [0, 0]);
        assert_eq!(prover_id_of_miner(127)[..2], [0x7f, 0]);
        assert_eq!(prover_id_of_miner(128)[..3], [0x80, 0x01, 0]);
        assert_eq!(prover_id_of_miner(1000)[..3], [0xe8, 0x07, 0]);
        let max = prover_id_of_miner(u64::MAX);
        assert_eq!(max[..9], [0xff; 9]);
        assert_eq!(max[9], 0x01);
        assert!(max[10..].iter().all(|b| *b == 0));
    }
}
