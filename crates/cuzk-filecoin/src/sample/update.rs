//! SnapDeals updates with zero data: the sample sector's (its committed-capacity replica), and a
//! zero replica's (for the shape alone: recording the update's R1CS), every partition proof
//! opened from sparse trees, so that a 32 GiB update needs no sector files either.
//!
//! With zero data the new replica is the old one (new = old + data·rho), so tree_r_new is
//! tree_r_last and comm_r_new = comm_r_old; the challenges, which hash comm_r_new, are therefore
//! known before any tree is opened. tree_d_new is the all-zero tree.

use std::collections::BTreeMap;

use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::{MerkleTreeTrait, TreeRHasher};
use storage_proofs_core::util::NODE_SIZE;
use storage_proofs_update::constants::TreeRDomain;
use storage_proofs_update::{ChallengeProof, Challenges, PartitionProof, PublicParams};

use super::bytes;
use super::sparse_tree::{arities_of, SparseTree};
use crate::{FilecoinError, SectorSize, SnapCircuits, SnapRequest, UpdateProof};

/// The update with zero data of a replica opened by `tree_r_last` (its comm_r is H(comm_c, its
/// root)), as Curio would send it (the FFI's partition proofs), checked as the engine checks a
/// request.
pub(super) fn zero_data_update<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    comm_c: TreeRDomain,
    tree_r_last: &SparseTree<TreeRHasher>,
    size: SectorSize,
) -> Result<SnapRequest, FilecoinError> {
    let comm_r = <TreeRHasher as Hasher>::Function::hash2(&comm_c, &tree_r_last.root());
    let proof = UpdateProof { size };
    let nodes = size.bytes() as usize / NODE_SIZE;
    let params = PublicParams::from_sector_size(size.bytes());
    let tree_d =
        SparseTree::<Sha256Hasher>::new(vec![2; nodes.trailing_zeros() as usize], BTreeMap::new());
    // The apex leaves: the row of tree_d_new with apex_leaf_count nodes per partition.
    let apex_row = (params.partition_count * params.apex_leaf_count).trailing_zeros();
    let apex_height = nodes.trailing_zeros().saturating_sub(apex_row) as usize;
    let vanilla_proofs = (0..params.partition_count)
        .map(|k| {
            let challenge_proofs = Challenges::new(nodes, comm_r, k)
                .map(|c| {
                    let opened = tree_r_last.proof(c as usize);
                    ChallengeProof::<Tree> {
                        proof_r_old: opened.clone(),
                        proof_d_new: tree_d.proof(c as usize),
                        proof_r_new: opened,
                    }
                })
                .collect();
            let first = k * params.apex_leaf_count;
            let partition = PartitionProof::<Tree> {
                comm_c,
                apex_leafs: (first..first + params.apex_leaf_count)
                    .map(|i| tree_d.node(apex_height, i))
                    .collect(),
                challenge_proofs,
            };
            bincode::serialize(&partition).map_err(|e| FilecoinError::Filecoin {
                what: "serializing a sample update's partition proof".into(),
                reason: e.to_string(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let request = SnapRequest {
        proof,
        comm_r_old: bytes(&comm_r),
        comm_r_new: bytes(&comm_r),
        comm_d_new: bytes(&tree_d.root()),
        vanilla_proofs,
    };
    // Decoded and verified by filecoin's vanilla verifier on the way.
    SnapCircuits::<Tree>::new(&request)?;
    Ok(request)
}

/// The zero-data update of a replica whose every leaf is zero (random comm_c): `size`'s update
/// partitions' shape, for recording their R1CS, without a sample sector's PoRep columns.
pub(crate) fn zero_replica_update<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    size: SectorSize,
) -> Result<SnapRequest, FilecoinError> {
    let nodes = size.bytes() as usize / NODE_SIZE;
    let arities = arities_of::<Tree>(nodes).map_err(|reason| FilecoinError::Filecoin {
        what: format!("a zero replica of {size}"),
        reason,
    })?;
    let tree_r_last = SparseTree::<TreeRHasher>::new(arities, BTreeMap::new());
    let comm_c = TreeRDomain::random(&mut rand::rngs::OsRng);
    zero_data_update::<Tree>(comm_c, &tree_r_last, size)
}
