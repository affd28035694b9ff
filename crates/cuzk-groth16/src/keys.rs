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
    /// The queries when a backend made them where it proves and keeps them there (a GPU's memory:
    /// [`GpuBackend::parameters_on_device`](crate::backend::GpuBackend::parameters_on_device)):
    /// the vectors above are empty then, and only that backend proves with them.
    pub placed: Option<PlacedQueries>,
}

/// Queries a backend made and keeps where it proves, never on the host: the rest of the crate sees
/// their lengths and where they are; only the backend that made them reads what it holds.
#[derive(Clone)]
pub struct PlacedQueries {
    lengths: QueryLengths,
    /// Where they are (a backend's name), for errors.
    place: String,
    held: Arc<dyn Any + Send + Sync>,
}

impl PlacedQueries {
    pub(crate) fn new<T: Any + Send + Sync>(lengths: QueryLengths, place: String, held: T) -> Self {
        PlacedQueries {
            lengths,
            place,
            held: Arc::new(held),
        }
    }

    pub fn lengths(&self) -> QueryLengths {
        self.lengths
    }

    /// Where they are, by the name of the backend that keeps them.
    pub fn place(&self) -> &str {
        &self.place
    }

    /// What the backend that made them holds, if it is a `T`.
    pub(crate) fn held<T: Any>(&self) -> Option<&T> {
        self.held.downcast_ref()
    }
}

impl std::fmt::Debug for PlacedQueries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlacedQueries")
            .field("place", &self.place)
            .field("lengths", &self.lengths)
            .finish_non_exhaustive()
    }
}

/// The same points: the same memory where they are kept.
impl PartialEq for PlacedQueries {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.held, &other.held)
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
