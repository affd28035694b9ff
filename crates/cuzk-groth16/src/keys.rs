//! Parameters and verifying key: the group elements, named for what they hold.

use std::any::Any;
use std::sync::Arc;

use cuzk_math::{G1Affine, G2Affine};
use cuzk_synth::Attachment;

/// What a verifier needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    /// α·G1
    pub alpha_g1: G1Affine,
    /// β·G1
    pub beta_g1: G1Affine,
    /// β·G2
    pub beta_g2: G2Affine,
    /// γ·G2
    pub gamma_g2: G2Affine,
    /// δ·G1
    pub delta_g1: G1Affine,
    /// δ·G2
    pub delta_g2: G2Affine,
    /// (β·A_j(τ) + α·B_j(τ) + C_j(τ))/γ · G1 for each public input j, the constant one first.
    pub ic: Vec<G1Affine>,
}

/// The proving key (bellperson's `Parameters`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parameters {
    /// What a backend ties to the query vectors (a GPU's page-locks on them, to stream them from
    /// where they are); first, so that it is dropped first: unlocked before they are freed.
    pub(crate) attached: Attachment,
    pub vk: VerifyingKey,
    /// τ^i·Z(τ)/δ · G1 for i in 0..n−1, n the domain size.
    pub h: Vec<G1Affine>,
    /// (β·A_j(τ) + α·B_j(τ) + C_j(τ))/δ · G1 for each aux variable j.
    pub l: Vec<G1Affine>,
    /// A_j(τ)·G1 for the inputs, then for the aux variables with a non-zero A_j(τ).
    pub a: Vec<G1Affine>,
    /// B_j(τ)·G1 for the inputs and aux variables with a non-zero B_j(τ).
    pub b_g1: Vec<G1Affine>,
    /// B_j(τ)·G2, same selection as `b_g1`.
    pub b_g2: Vec<G2Affine>,
    /// The queries when backends keep them where they prove (a GPU's memory), never on the
    /// host: the vectors above are empty then, and only those backends prove with them.
    pub placed: Option<PlacedQueries>,
}

/// Queries kept where backends prove, never on the host: made there
/// ([`GpuBackend::parameters_on_device`](crate::backend::GpuBackend::parameters_on_device)), or
/// a host set's placed points kept once its host copy went ([`Parameters::settled`]). The rest
/// of the crate sees their lengths and where they are; only the backend that holds a part reads
/// it.
#[derive(Clone)]
pub struct PlacedQueries {
    lengths: QueryLengths,
    parts: Vec<PlacedPart>,
}

/// What one backend holds of a set's queries where it proves.
#[derive(Clone)]
pub struct PlacedPart {
    /// Where they are (the backend's name), for errors and status.
    place: String,
    held: Arc<dyn Any + Send + Sync>,
}

impl PlacedPart {
    pub fn new<T: Any + Send + Sync>(place: String, held: T) -> Self {
        PlacedPart {
            place,
            held: Arc::new(held),
        }
    }

    /// Where they are, by the name of the backend that keeps them.
    pub fn place(&self) -> &str {
        &self.place
    }
}

impl std::fmt::Debug for PlacedPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlacedPart")
            .field("place", &self.place)
            .finish_non_exhaustive()
    }
}

impl PlacedQueries {
    pub fn lengths(&self) -> QueryLengths {
        self.lengths
    }

    /// Where they are, by the names of the backends that keep them ("cuda:0, cuda:1").
    pub fn place(&self) -> String {
        let places: Vec<&str> = self.parts.iter().map(PlacedPart::place).collect();
        places.join(", ")
    }

    /// Whether the backend named `place` keeps a part of them.
    pub fn kept_on(&self, place: &str) -> bool {
        self.parts.iter().any(|part| part.place == place)
    }

    /// What the backends hold, those parts that are `T`s.
    pub(crate) fn held<T: Any>(&self) -> impl Iterator<Item = &T> {
        self.parts
            .iter()
            .filter_map(|part| part.held.downcast_ref())
    }
}

impl std::fmt::Debug for PlacedQueries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlacedQueries")
            .field("place", &self.place())
            .field("lengths", &self.lengths)
            .finish_non_exhaustive()
    }
}

/// The same points: the same memory where they are kept.
impl PartialEq for PlacedQueries {
    fn eq(&self, other: &Self) -> bool {
        let same = |a: &PlacedPart, b: &PlacedPart| Arc::ptr_eq(&a.held, &b.held);
        self.parts.len() == other.parts.len()
            && self.parts.iter().zip(&other.parts).all(|(a, b)| same(a, b))
    }
}

impl Eq for PlacedQueries {}

/// How many points each query holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryLengths {
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
}

impl Parameters {
    /// The value a backend tied to the query vectors, made by `make` on the first call; `None`
    /// if an earlier call attached a value of another type.
    pub(crate) fn attachment<T: std::any::Any + Send + Sync>(
        &self,
        make: impl FnOnce() -> T,
    ) -> Option<&T> {
        self.attached.get_or_make(make)
    }

    /// The same key with its queries kept only where `parts` hold them (each backend's
    /// [`ProverBackend::settle`](crate::ProverBackend::settle)): its host vectors are not
    /// copied, so they are freed when `self` goes. Only those backends prove with it.
    pub fn settled(&self, parts: Vec<PlacedPart>) -> Parameters {
        Parameters::kept(self.vk.clone(), self.lengths(), parts)
    }

    /// A key whose queries of `lengths` only `parts` hold, where their backends prove.
    pub(crate) fn kept(vk: VerifyingKey, lengths: QueryLengths, parts: Vec<PlacedPart>) -> Self {
        Parameters {
            attached: Default::default(),
            vk,
            h: Vec::new(),
            l: Vec::new(),
            a: Vec::new(),
            b_g1: Vec::new(),
            b_g2: Vec::new(),
            placed: Some(PlacedQueries { lengths, parts }),
        }
    }

    /// The queries' lengths, wherever the points are.
    pub fn lengths(&self) -> QueryLengths {
        match &self.placed {
            Some(queries) => queries.lengths(),
            None => QueryLengths {
                h: self.h.len(),
                l: self.l.len(),
                a: self.a.len(),
                b_g1: self.b_g1.len(),
                b_g2: self.b_g2.len(),
            },
        }
    }
}
