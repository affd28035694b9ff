//! Parameters and verifying key: the group elements, named for what they hold.

use std::sync::OnceLock;

use cuzk_gpu::{Gpu, HostLocked};
use cuzk_math::{G1Affine, G2Affine};

use crate::backend::DeviceQueries;

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
    /// First, so that it is dropped first: the vectors are unlocked before they are freed.
    pub(crate) host_lock: HostLock,
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
    /// The queries when they were made on a GPU and stay there
    /// ([`parameters_on_device`](crate::setup::parameters_on_device)): the vectors above are
    /// empty then, and only that device's backend proves with them.
    pub on_device: Option<DeviceQueries>,
}

/// How many points each query holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryLengths {
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
}

/// The page-locks of a parameter set's query vectors, made once, when a device first streams
/// them ([`Parameters::lock_in_host`]). A clone starts unlocked: its vectors are other memory.
#[derive(Default)]
pub(crate) struct HostLock(OnceLock<Option<Vec<HostLocked>>>);

impl Clone for HostLock {
    fn clone(&self) -> Self {
        HostLock::default()
    }
}

/// Locks say nothing of the points: any two are equal.
impl PartialEq for HostLock {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for HostLock {}

impl std::fmt::Debug for HostLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.0.get() {
            None => "not tried",
            Some(None) => "failed",
            Some(Some(_)) => "locked",
        };
        f.write_str(state)
    }
}

impl Parameters {
    /// Page-locks the query vectors where they are, once, for devices that stream them: their
    /// copies then overlap the MSMs, and no second copy of the set is made (47 GB at 32 GiB).
    /// Whether they are locked; if the driver refuses (e.g. small vectors sharing pages with
    /// other locked memory), they stream from pageable memory, correctly but slower.
    pub fn lock_in_host(&self, gpu: &Gpu) -> bool {
        let locks = self.host_lock.0.get_or_init(|| {
            let mut locks = Vec::new();
            for query in [&self.h, &self.l, &self.a, &self.b_g1] {
                if !query.is_empty() {
                    locks.push(HostLocked::new(gpu, query).ok()?);
                }
            }
            if !self.b_g2.is_empty() {
                locks.push(HostLocked::new(gpu, &self.b_g2).ok()?);
            }
            Some(locks)
        });
        locks.is_some()
    }

    /// The queries' lengths, wherever the points are.
    pub fn lengths(&self) -> QueryLengths {
        match &self.on_device {
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
