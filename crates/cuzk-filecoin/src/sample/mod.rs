//! Sample sectors: the C1 output of a committed-capacity (all-zero) sector, made without
//! sealing it.
//!
//! Commit 1 opens only its challenged nodes: each one's data and replica nodes, its column of
//! labels and its 14 parents' columns, and the Merkle paths of those to comm_d, comm_c and
//! comm_r_last. A consistent output therefore needs only those columns: the parents' labels are
//! random, each challenged node's labels are computed layer by layer from its parents exactly
//! as the circuit checks them, and its replica node is its last label (the data is zero). Every
//! other leaf of tree_c and tree_r_last is zero, so their roots come from sparse trees in
//! seconds at 32 GiB, without the ~450 GB and hours a real seal takes.
//!
//! The sample's WinningPoSt and WindowPoSt come with it: their challenged leaves of tree_r_last
//! are zero or PoRep-challenged ones, which the sparse tree opens like any other. So does its
//! SnapDeals update with zero data (`update.rs`).
//!
//! Challenges must be known before the trees: true of the interactive revisions (V1, V1_1),
//! whose challenges come from the replica id and seed, but not of synthetic and non-interactive
//! PoRep, whose challenges are derived from comm_r itself.

mod post;
mod sparse_tree;
mod update;

pub(crate) use update::zero_replica_update;

use std::collections::BTreeMap;

use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::{
    with_shape, DefaultPieceHasher, MerkleTreeTrait, SealCommitPhase1Output, TreeRHasher,
};
use rand::RngCore;
use sha2::{Digest, Sha256};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    generate_replica_id, Challenges, Column, ColumnProof, EncodingProof, LabelingProof, Proof,
    PublicInputs, ReplicaColumnProof, StackedBucketGraph, Tau, TOTAL_PARENTS,
};
use typenum::{U0, U2};

use crate::error::filecoin;
use crate::filecoin_types::Drg;
use crate::sealer::{random_bytes, random_field_bytes};
use crate::{
    prover_id_of_miner, FilecoinError, PostRequest, RegisteredProof, Revision, SealProof,
    SealedSector, SectorIdentity, SnapRequest,
};
use post::Replica;
use sparse_tree::{arities_of, SparseTree};

/// A sample sector: its C1 output, a WinningPoSt and a WindowPoSt of it (random randomness), and
/// its SnapDeals update with zero data.
#[derive(Clone, Debug)]
pub struct SampledSector {
    pub sector: SealedSector,
    pub posts: Vec<PostRequest>,
    pub update: SnapRequest,
}

/// Makes a committed-capacity `proof` sector's C1 output (random sector id, ticket and seed;
/// the prover id is `miner_id`'s when given, else random) and its PoSt requests, and checks
/// their vanilla proofs as commit 1 and the PoSt verifier do.
pub fn sample_sector(
    proof: SealProof,
    miner_id: Option<u64>,
    rng: &mut impl RngCore,
) -> Result<SampledSector, FilecoinError> {
    if matches!(
        proof.revision,
        Revision::Synthetic | Revision::NonInteractive
    ) {
        return Err(FilecoinError::NoSample {
            proof: proof.name().to_owned(),
        });
    }
    with_shape!(proof.size.bytes(), sample, proof, miner_id, rng,)
}

/// The labels of one node in every layer (layer 1 first): a column of tree_c.
type Labels<Tree> = Vec<<<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain>;

/// A tree_c or tree_r_last inclusion proof.
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

fn sample<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: SealProof,
    miner_id: Option<u64>,
    rng: &mut impl RngCore,
) -> Result<SampledSector, FilecoinError> {
    let config = proof.porep_config()?;
    let params = public_params::<Tree>(&config)
        .map_err(filecoin(format!("the public parameters of {proof}")))?;
    let graph = &params.graph;
    let nodes = graph.size();
    let internal = |reason: String| FilecoinError::Filecoin {
        what: format!("a sample {proof} sector"),
        reason,
    };
    let Challenges::Interactive(challenges) = &params.challenges else {
        return Err(FilecoinError::NoSample {
            proof: proof.name().to_owned(),
        });
    };

    // The data is zero: every leaf of tree_d (binary SHA-256) is.
    let tree_d = SparseTree::<DefaultPieceHasher>::new(
        vec![2; nodes.trailing_zeros() as usize],
        BTreeMap::new(),
    );
    let comm_d = tree_d.root();
    let identity = SectorIdentity {
        prover_id: miner_id.map_or_else(|| random_field_bytes(rng), prover_id_of_miner),
        sector_id: rng.next_u64(),
    };
    let (ticket, seed) = (random_bytes(rng), random_bytes(rng));
    let replica_id = generate_replica_id::<Tree::Hasher, _>(
        &identity.prover_id,
        identity.sector_id,
        &ticket,
        comm_d,
        &config.porep_id,
    );
    let partitions: Vec<Vec<usize>> = (0..usize::from(config.partitions))
        .map(|k| challenges.derive(nodes, &replica_id, &seed, k as u8))
        .collect();

    let columns = label_columns(
        graph,
        params.num_layers,
        &replica_id,
        partitions.iter().flatten().copied(),
        rng,
    )
    .map_err(internal)?;
    let arities = arities_of::<Tree>(nodes).map_err(internal)?;
    let tree_c = SparseTree::<Tree::Hasher>::new(
        arities.clone(),
        columns
            .iter()
            .map(|(&node, labels)| {
                let column = Column::<Tree::Hasher>::new(node as u32, labels.clone())
                    .map_err(|e| internal(format!("column {node}: {e:#}")))?;
                Ok((node, column.hash().into()))
            })
            .collect::<Result<_, FilecoinError>>()?,
    );
    // A replica node is its last label plus its (zero) data.
    let tree_r_last = SparseTree::<Tree::Hasher>::new(
        arities,
        partitions
            .iter()
            .flatten()
            .map(|&node| (node, columns[&node][params.num_layers - 1]))
            .collect(),
    );
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&tree_c.root(), &tree_r_last.root());

    let opening = Opening {
        graph,
        columns: &columns,
        tree_d: &tree_d,
        tree_c: &tree_c,
        tree_r_last: &tree_r_last,
    };
    let vanilla_proofs = partitions
        .iter()
        .map(|challenges| challenges.iter().map(|&c| opening.proof(c)).collect())
        .collect::<Result<Vec<Vec<_>>, String>>()
        .map_err(internal)?;

    let inputs = PublicInputs {
        replica_id,
        seed: Some(seed),
        tau: Some(Tau { comm_d, comm_r }),
        k: None,
    };
    let valid = Drg::<Tree>::verify_all_partitions(&params, &inputs, &vanilla_proofs)
        .map_err(filecoin("verifying the sample's vanilla proofs"))?;
    if !valid {
        return Err(internal("its vanilla proofs do not verify".into()));
    }
    let output = SealCommitPhase1Output::<Tree> {
        vanilla_proofs,
        comm_r: bytes(&comm_r),
        comm_d: bytes(&comm_d),
        replica_id,
        seed,
        ticket,
    };
    let replica = Replica::<Tree> {
        identity,
        comm_c: tree_c.root(),
        comm_r,
        tree_r_last: &tree_r_last,
    };
    Ok(SampledSector {
        sector: SealedSector::from_output(&output, proof, identity, "sample")?,
        posts: replica.posts(proof.size, rng)?,
        update: update::zero_data_update::<Tree>(tree_c.root(), &tree_r_last, proof.size)?,
    })
}

fn bytes(domain: &impl Domain) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(domain.as_ref());
    out
}

/// Every column the challenges open, by node: each challenged node's labelled from its
/// parents, every other parent's at random. A node that is both a parent and a challenge has one
/// column, its labelled one.
fn label_columns<H: Hasher>(
    graph: &StackedBucketGraph<H>,
    layers: usize,
    replica_id: &H::Domain,
    challenges: impl Iterator<Item = usize>,
    rng: &mut impl RngCore,
) -> Result<BTreeMap<usize, Vec<H::Domain>>, String> {
    let mut columns: BTreeMap<usize, Vec<H::Domain>> = challenges
        .map(|node| (node, vec![H::Domain::default(); layers]))
        .collect();
    let mut challenged = Vec::with_capacity(columns.len());
    for &node in columns.keys() {
        let (base, expanded) = parents(graph, node)?;
        // A label depends on its base parents' labels in its own layer, so those must be
        // labelled first; in a DRG every base parent precedes its node.
        if let Some(late) = base.iter().find(|parent| **parent >= node) {
            return Err(format!("node {node} has base parent {late}, not before it"));
        }
        challenged.push((node, base, expanded));
    }
    for (_, base, expanded) in &challenged {
        for &parent in base.iter().chain(expanded) {
            columns
                .entry(parent)
                .or_insert_with(|| (0..layers).map(|_| H::Domain::random(rng)).collect());
        }
    }
    for layer in 1..=layers {
        for (node, base, expanded) in &challenged {
            let parents = parent_labels(&columns, layer, base, expanded);
            let label = label(replica_id, layer, *node, &parents);
            if let Some(labels) = columns.get_mut(node) {
                labels[layer - 1] = label;
            }
        }
    }
    Ok(columns)
}

/// The labels a node's label in `layer` hashes, as the labelling and encoding proofs carry
/// them: its base parents' in `layer` (and, past layer 1, its expander parents' in the layer
/// before), repeated to [`TOTAL_PARENTS`].
fn parent_labels<D: Domain>(
    columns: &BTreeMap<usize, Vec<D>>,
    layer: usize,
    base: &[usize],
    expanded: &[usize],
) -> Vec<D> {
    let at = |parent: &usize, layer: usize| columns[parent][layer - 1];
    let mut parents: Vec<D> = base.iter().map(|p| at(p, layer)).collect();
    if layer > 1 {
        parents.extend(expanded.iter().map(|p| at(p, layer - 1)));
    }
    parents
        .iter()
        .copied()
        .cycle()
        .take(TOTAL_PARENTS)
        .collect()
}

/// A node's base (DRG) and expander parents.
fn parents<H: Hasher>(
    graph: &StackedBucketGraph<H>,
    node: usize,
) -> Result<(Vec<usize>, Vec<usize>), String> {
    let mut base = vec![0u32; graph.base_graph().degree()];
    let mut expanded = vec![0u32; graph.expansion_degree()];
    graph
        .base_parents(node, &mut base)
        .and_then(|()| graph.expanded_parents(node, &mut expanded))
        .map_err(|e| format!("the parents of node {node}: {e:#}"))?;
    let widen = |ids: Vec<u32>| ids.into_iter().map(|p| p as usize).collect();
    Ok((widen(base), widen(expanded)))
}

/// SDR's label of `node` in `layer`: SHA-256 of the replica id, the layer (u32 big-endian), the
/// node (u64 big-endian), zeros to 64 bytes, then the parents' labels; its top two bits cleared
/// so it is a field element.
fn label<D: Domain>(replica_id: &D, layer: usize, node: usize, parents: &[D]) -> D {
    let mut prefix = [0u8; 64];
    prefix[..32].copy_from_slice(replica_id.as_ref());
    prefix[32..36].copy_from_slice(&(layer as u32).to_be_bytes());
    prefix[36..44].copy_from_slice(&(node as u64).to_be_bytes());
    let mut hasher = Sha256::new();
    hasher.update(prefix);
    for parent in parents {
        hasher.update(parent.as_ref());
    }
    let mut digest: [u8; 32] = hasher.finalize().into();
    digest[31] &= 0b0011_1111;
    D::from(digest)
}

/// What a challenge's vanilla proof is opened from.
struct Opening<'a, Tree: MerkleTreeTrait> {
    graph: &'a StackedBucketGraph<Tree::Hasher>,
    columns: &'a BTreeMap<usize, Labels<Tree>>,
    tree_d: &'a SparseTree<DefaultPieceHasher>,
    tree_c: &'a SparseTree<Tree::Hasher>,
    tree_r_last: &'a SparseTree<Tree::Hasher>,
}

impl<Tree: 'static + MerkleTreeTrait> Opening<'_, Tree> {
    fn column_proof(&self, node: usize) -> ColumnProof<TreeProof<Tree>> {
        ColumnProof::new(
            node as u32,
            self.columns[&node].clone(),
            self.tree_c.proof(node),
        )
    }

    /// Challenge `node`'s vanilla proof, as commit 1 makes it.
    fn proof(&self, node: usize) -> Result<Proof<Tree, DefaultPieceHasher>, String> {
        let (base, expanded) = parents(self.graph, node)?;
        let layers = self.columns[&node].len();
        let parents = |layer| parent_labels(self.columns, layer, &base, &expanded);
        Ok(Proof {
            comm_d_proofs: self.tree_d.proof::<U2, U0, U0>(node),
            comm_r_last_proof: self.tree_r_last.proof(node),
            replica_column_proofs: ReplicaColumnProof {
                c_x: self.column_proof(node),
                drg_parents: base.iter().map(|&p| self.column_proof(p)).collect(),
                exp_parents: expanded.iter().map(|&p| self.column_proof(p)).collect(),
            },
            labeling_proofs: (1..=layers)
                .map(|layer| LabelingProof::new(layer as u32, node as u64, parents(layer)))
                .collect(),
            encoding_proof: EncodingProof::new(layers as u32, node as u64, parents(layers)),
        })
    }
}
