//! The PoSt requests of a sample sector: WinningPoSt and WindowPoSt challenge leaves of
//! tree_r_last, which the sample's sparse tree opens like any other (a leaf no PoRep challenge
//! set is zero), so a 32 GiB PoSt needs no sector files either.

use filecoin_hashers::Hasher;
use filecoin_proofs::{generate_fallback_sector_challenges, MerkleTreeTrait};
use rand::RngCore;
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{Proof, SectorProof};

use super::sparse_tree::SparseTree;
use super::TreeProof;
use crate::error::filecoin;
use crate::sealer::random_field_bytes;
use crate::{FilecoinError, PostCircuits, PostKind, PostProof, PostRequest, SectorIdentity};

/// What a sample sector's PoSt vanilla proofs open.
pub(super) struct Replica<'a, Tree: MerkleTreeTrait> {
    pub identity: SectorIdentity,
    pub comm_c: <Tree::Hasher as Hasher>::Domain,
    pub comm_r: <Tree::Hasher as Hasher>::Domain,
    pub tree_r_last: &'a SparseTree<Tree::Hasher>,
}

impl<Tree: 'static + MerkleTreeTrait> Replica<'_, Tree> {
    /// A `kind` PoSt of this one sector for random randomness, as Curio would send it (the
    /// FFI's single-sector vanilla proof), checked as the engine checks a request.
    pub fn post(
        &self,
        proof: PostProof,
        rng: &mut impl RngCore,
    ) -> Result<PostRequest, FilecoinError> {
        let config = proof.post_config()?;
        let randomness = random_field_bytes(rng);
        let id = SectorId::from(self.identity.sector_id);
        let challenges = generate_fallback_sector_challenges::<Tree>(
            &config,
            &randomness,
            &[id],
            self.identity.prover_id,
        )
        .map_err(filecoin("generate_fallback_sector_challenges"))?;
        let leaves = challenges.get(&id).map(Vec::as_slice).unwrap_or_default();
        let sector = SectorProof::<TreeProof<Tree>> {
            inclusion_proofs: leaves
                .iter()
                .map(|&leaf| self.tree_r_last.proof(leaf as usize))
                .collect(),
            comm_c: self.comm_c,
            comm_r_last: self.tree_r_last.root(),
        };
        // The fields of filecoin-proofs' FallbackPoStSectorProof in order: bincode writes a struct
        // as its fields.
        let vanilla = bincode::serialize(&(
            id,
            self.comm_r,
            Proof {
                sectors: vec![sector],
            },
        ))
        .map_err(|e| FilecoinError::Filecoin {
            what: "serializing a sample vanilla proof".into(),
            reason: e.to_string(),
        })?;
        let request = PostRequest {
            proof,
            randomness,
            prover_id: self.identity.prover_id,
            partition: 0,
            vanilla_proofs: vec![vanilla],
        };
        // Decoded and verified by filecoin-proofs' vanilla verifier on the way.
        PostCircuits::<Tree>::new(&request)?;
        Ok(request)
    }

    /// The sector's WinningPoSt and WindowPoSt.
    pub fn posts(
        &self,
        size: crate::SectorSize,
        rng: &mut impl RngCore,
    ) -> Result<Vec<PostRequest>, FilecoinError> {
        [PostKind::Winning, PostKind::Window]
            .into_iter()
            .map(|kind| self.post(PostProof { kind, size }, rng))
            .collect()
    }
}
