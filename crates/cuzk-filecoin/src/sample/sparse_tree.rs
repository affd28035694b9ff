//! Merkle trees of a whole sector in which almost every leaf is zero.
//!
//! A sample sector sets only the leaves its challenges open (a few thousand of 2^30 at 32 GiB).
//! Every subtree without a set leaf has the same root per level, computed once; so the root and
//! each set leaf's path cost one hash per level per set leaf, not a hash per node.

use std::collections::{BTreeMap, BTreeSet};

use filecoin_hashers::{Hasher, PoseidonArity};
use merkletree::hash::Algorithm;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use typenum::Unsigned;

/// A tree of mixed arities (leaf level first, as filecoin's compound trees are: the base tree's
/// levels, then the sub-tree and top-tree levels) whose unset leaves are zero.
#[derive(Clone, Debug)]
pub(crate) struct SparseTree<H: Hasher> {
    arities: Vec<usize>,
    /// `levels[l]`: the nodes of level `l` that have a set leaf below them (level 0: the set
    /// leaves themselves); the last level holds the root.
    levels: Vec<BTreeMap<usize, H::Domain>>,
    /// `empty[l]`: any node of level `l` with no set leaf below it.
    empty: Vec<H::Domain>,
}

/// The arities of `Tree`'s levels (leaf level first) for `leaves` leaves, or why it has no such
/// shape.
pub(crate) fn arities_of<Tree: MerkleTreeTrait>(leaves: usize) -> Result<Vec<usize>, String> {
    let base = Tree::Arity::to_usize();
    let sub = Tree::SubTreeArity::to_usize();
    let top = Tree::TopTreeArity::to_usize();
    let base_trees = sub.max(1) * top.max(1);
    let mut base_leaves = leaves / base_trees;
    if base_leaves * base_trees != leaves {
        return Err(format!(
            "{leaves} leaves do not split into {base_trees} base trees"
        ));
    }
    let mut arities = Vec::new();
    while base_leaves > 1 {
        if !base_leaves.is_multiple_of(base) {
            return Err(format!(
                "{} leaves per base tree are not a power of {base}",
                leaves / base_trees
            ));
        }
        base_leaves /= base;
        arities.push(base);
    }
    arities.extend([sub, top].into_iter().filter(|arity| *arity > 0));
    Ok(arities)
}

fn hash_children<H: Hasher>(children: &[H::Domain], height: usize) -> H::Domain {
    H::Function::default().multi_node(children, height)
}

impl<H: Hasher> SparseTree<H> {
    /// The tree of `arities` over `set` (leaf index to value; every other leaf is zero). Leaf
    /// indices must lie below the product of the arities.
    pub(crate) fn new(arities: Vec<usize>, set: BTreeMap<usize, H::Domain>) -> Self {
        let mut empty = vec![H::Domain::default()];
        let mut levels = vec![set];
        for (height, &arity) in arities.iter().enumerate() {
            let below = &levels[height];
            let empty_below = empty[height];
            let parents: BTreeSet<usize> = below.keys().map(|index| index / arity).collect();
            let level = parents
                .into_iter()
                .map(|parent| {
                    let children: Vec<H::Domain> = (0..arity)
                        .map(|i| {
                            below
                                .get(&(parent * arity + i))
                                .copied()
                                .unwrap_or(empty_below)
                        })
                        .collect();
                    (parent, hash_children::<H>(&children, height))
                })
                .collect();
            empty.push(hash_children::<H>(&vec![empty_below; arity], height));
            levels.push(level);
        }
        SparseTree {
            arities,
            levels,
            empty,
        }
    }

    /// Node `index` of level `height` (the leaves are level 0).
    pub(crate) fn node(&self, height: usize, index: usize) -> H::Domain {
        self.levels[height]
            .get(&index)
            .copied()
            .unwrap_or(self.empty[height])
    }

    pub(crate) fn root(&self) -> H::Domain {
        self.node(self.arities.len(), 0)
    }

    /// The inclusion proof of leaf `leaf` as filecoin's tree of arities `A`, `B`, `C` (which
    /// must be this tree's: base, sub, top) would give it.
    pub(crate) fn proof<A: PoseidonArity, B: PoseidonArity, C: PoseidonArity>(
        &self,
        leaf: usize,
    ) -> MerkleProof<H, A, B, C> {
        let mut index = leaf;
        let path = self
            .arities
            .iter()
            .enumerate()
            .map(|(height, &arity)| {
                let first = index - index % arity;
                let siblings = (first..first + arity)
                    .filter(|sibling| *sibling != index)
                    .map(|sibling| self.node(height, sibling))
                    .collect();
                let position = index % arity;
                index /= arity;
                (siblings, position)
            })
            .collect();
        MerkleProof::from_parts(self.node(0, leaf), self.root(), path)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use filecoin_hashers::poseidon::PoseidonHasher;
    use filecoin_hashers::sha256::Sha256Hasher;
    use filecoin_hashers::Domain;
    use merkletree::store::VecStore;
    use rand::{Rng, SeedableRng};
    use storage_proofs_core::merkle::MerkleTreeWrapper;
    use typenum::{U0, U2, U8};

    use super::*;

    type Wrapper<H, A, B, C> = MerkleTreeWrapper<H, VecStore<<H as Hasher>::Domain>, A, B, C>;

    /// Zero-filled leaves with a few random ones set, as a map and in full.
    fn leaves<H: Hasher>(
        count: usize,
        set: usize,
        seed: u64,
    ) -> (BTreeMap<usize, H::Domain>, Vec<H::Domain>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let map: BTreeMap<usize, H::Domain> = (0..set)
            .map(|_| (rng.gen_range(0..count), H::Domain::random(&mut rng)))
            .collect();
        let full = (0..count)
            .map(|i| map.get(&i).copied().unwrap_or_default())
            .collect();
        (map, full)
    }

    /// The sparse tree equals filecoin's tree built over the same zero-filled leaves: the root,
    /// and every set leaf's and some unset leaves' proofs, serialised.
    fn agrees<Tree: MerkleTreeTrait>(
        tree: &Tree,
        set: &BTreeMap<usize, <Tree::Hasher as Hasher>::Domain>,
        count: usize,
    ) {
        let sparse =
            SparseTree::<Tree::Hasher>::new(arities_of::<Tree>(count).unwrap(), set.clone());
        assert_eq!(sparse.root(), tree.root());
        let unset = [0, 1, count / 2, count - 1];
        for leaf in set.keys().copied().chain(unset) {
            let ours: MerkleProof<
                Tree::Hasher,
                Tree::Arity,
                Tree::SubTreeArity,
                Tree::TopTreeArity,
            > = sparse.proof(leaf);
            let theirs = tree.gen_proof(leaf).unwrap();
            assert_eq!(
                serde_json::to_string(&ours).unwrap(),
                serde_json::to_string(&theirs).unwrap(),
                "leaf {leaf} of {count}"
            );
        }
    }

    #[test]
    fn a_sparse_binary_sha256_tree_equals_filecoins() {
        let count = 1 << 10;
        let (set, full) = leaves::<Sha256Hasher>(count, 9, 1);
        let tree = Wrapper::<Sha256Hasher, U2, U0, U0>::new(full).unwrap();
        agrees(&tree, &set, count);
    }

    #[test]
    fn a_sparse_poseidon_base_tree_equals_filecoins() {
        let count = 512;
        let (set, full) = leaves::<PoseidonHasher>(count, 7, 2);
        let tree = Wrapper::<PoseidonHasher, U8, U0, U0>::new(full).unwrap();
        agrees(&tree, &set, count);
    }

    #[test]
    fn a_sparse_poseidon_tree_with_sub_trees_equals_filecoins() {
        let count = 8 * 64;
        let (set, full) = leaves::<PoseidonHasher>(count, 11, 3);
        let bases = full
            .chunks(64)
            .map(|chunk| Wrapper::<PoseidonHasher, U8, U0, U0>::new(chunk.to_vec()).unwrap())
            .collect();
        let tree = Wrapper::<PoseidonHasher, U8, U8, U0>::from_trees(bases).unwrap();
        agrees(&tree, &set, count);
    }

    #[test]
    fn a_sparse_poseidon_tree_with_a_top_tree_equals_filecoins() {
        let count = 2 * 8 * 64;
        let (set, full) = leaves::<PoseidonHasher>(count, 13, 4);
        let subs = full
            .chunks(8 * 64)
            .map(|sub| {
                let bases = sub
                    .chunks(64)
                    .map(|chunk| {
                        Wrapper::<PoseidonHasher, U8, U0, U0>::new(chunk.to_vec()).unwrap()
                    })
                    .collect();
                Wrapper::<PoseidonHasher, U8, U8, U0>::from_trees(bases).unwrap()
            })
            .collect();
        let tree = Wrapper::<PoseidonHasher, U8, U8, U2>::from_sub_trees(subs).unwrap();
        agrees(&tree, &set, count);
    }

    #[test]
    fn an_empty_tree_has_the_empty_root_and_bad_shapes_are_named() {
        let count = 64;
        let tree =
            Wrapper::<PoseidonHasher, U8, U0, U0>::new(vec![Default::default(); count]).unwrap();
        agrees(&tree, &BTreeMap::new(), count);
        let err = arities_of::<Wrapper<PoseidonHasher, U8, U0, U0>>(96).unwrap_err();
        assert!(err.contains("not a power of 8"), "{err}");
        let err = arities_of::<Wrapper<PoseidonHasher, U8, U8, U0>>(100).unwrap_err();
        assert!(err.contains("8 base trees"), "{err}");
    }
}
