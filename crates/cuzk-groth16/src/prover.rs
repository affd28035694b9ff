//! The prover, split where the GPU's work ends.
//!
//! `prove_start` (a [`ProverBackend`]) computes H = (a∘b − c)/Z and the query sums Σ_H, Σ_L, Σ_A,
//! Σ_B in G1 and G2; `prove_finish` is the small CPU epilogue that adds the randomness:
//!
//! ```text
//! A = α + Σ_A + r·δ        B = β + Σ_B + s·δ (in G2)
//! C = s·A + r·B₁ − r·s·δ + Σ_H + Σ_L   where B₁ = β + Σ_B + s·δ in G1
//! ```

use std::sync::Arc;

use bellpepper_core::Circuit;
use cuzk_math::{EvaluationDomain, G1Projective, G2Projective, Scalar};
use cuzk_synth::{CompiledR1cs, ProvingAssignment};
use ff::Field;
use group::Curve;
use rand_core::RngCore;

use crate::keys::{PlacedPart, QueryLengths};
use crate::setup::ToxicWaste;
use crate::{Parameters, Proof, ProveError, SetupError, VerifyingKey};

/// The query sums: everything of a proof that depends on the witness but not on r and s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuerySums {
    /// Σ hᵢ·Hᵢ over the quotient's coefficients.
    pub h: G1Projective,
    /// Σ wⱼ·Lⱼ over the aux witness.
    pub l: G1Projective,
    /// Σ zⱼ·Aⱼ over inputs and A-dense aux.
    pub a: G1Projective,
    /// Σ zⱼ·Bⱼ in G1 over B-dense inputs and aux.
    pub b_g1: G1Projective,
    /// Σ zⱼ·Bⱼ in G2, same selection.
    pub b_g2: G2Projective,
}

/// The zero-knowledge randomness of one proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Randomness {
    pub r: Scalar,
    pub s: Scalar,
}

impl Randomness {
    pub fn random(rng: &mut impl RngCore) -> Self {
        Randomness {
            r: Scalar::random(&mut *rng),
            s: Scalar::random(&mut *rng),
        }
    }
}

/// The part of the prover a device can take: H and the MSMs of one synthesized circuit.
pub trait ProverBackend: Send + Sync {
    /// A short name for logs ("cpu", "cuda:0").
    fn name(&self) -> &str;

    /// Computes the query sums, and reports what it measured of its stages. Takes the assignment
    /// by value so a/b/c can be transformed in place. Holds `device` around the work that needs
    /// the device to itself, and only that: the engine runs two callers per device so that one's
    /// host work overlaps the other's kernels ([`Unshared`] where the caller has it alone; a
    /// backend whose whole call is device work holds it throughout, [`Started::holding`]).
    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError>;

    /// Places `params`' proving key on the device ahead of its first proof, so that proof pays no
    /// upload; with the circuit's `compiled` R1CS, whose products the device may make, planned
    /// and placed as those proofs will be (the matrices too). Returns the device bytes the set
    /// holds: 0 for a backend with no device memory (the CPU's), and 0 when the set did not fit
    /// and is kept in host memory to be streamed instead.
    fn preload(
        &self,
        _params: &Parameters,
        _compiled: Option<&Arc<CompiledR1cs>>,
    ) -> Result<u64, ProveError> {
        Ok(0)
    }

    /// Drops `params`' proving key from the device; its memory is freed once no proof in flight
    /// still uses it. Returns the device bytes released (0 when it was not resident).
    fn evict(&self, _params: &Parameters) -> u64 {
        0
    }

    /// The device bytes `params`' proving key holds now, `None` when it is not resident.
    fn resident(&self, _params: &Parameters) -> Option<u64> {
        None
    }

    /// Random test parameters for `compiled` (NOT a trusted setup;
    /// [`crate::setup::parameters_for_compiled`]'s key) made where this backend proves, for a
    /// daemon that serves them: kept there when proofs would hold them wholly resident, else
    /// brought to the host. `None` for a backend that makes none (the CPU: the caller multiplies
    /// them out on the host).
    fn test_parameters(
        &self,
        _compiled: &CompiledR1cs,
        _toxic: &ToxicWaste,
    ) -> Option<Result<Parameters, SetupError>> {
        None
    }

    /// This backend's part of `params` when every query is resident on its device, so that the
    /// set's host copy can go ([`Parameters::settled`]); `None` when any query is read from the
    /// host (streamed, or a CPU's). The part keeps the points where they are until it is
    /// dropped: this backend no longer evicts them to make room.
    fn settle(&self, _params: &Parameters) -> Option<PlacedPart> {
        None
    }

    /// Host bytes a proof of `params` holds in this backend beyond its assignment, from its
    /// preparation to the end of its device region (the GPU's page-locked staging of a, b, c and
    /// the witness: 17 GB at 32 GiB, 4.2 GB of witness alone when `products_deferred` left a, b
    /// and c to it, see [`ProverBackend::computes_products`]), kept once per engine worker: what
    /// a host memory budget must leave aside.
    fn host_bytes_per_proof(&self, _params: &Parameters, _products_deferred: bool) -> u64 {
        0
    }

    /// Whether it computes a, b and c itself, for proofs of `params` with `compiled`'s matrices,
    /// from a witness whose products were deferred ([`ProvingAssignment::deferred`]): then the
    /// engine leaves them to it and the host never holds them. Any backend proves deferred
    /// assignments, by computing them on the host first (what a GPU does when the matrices do
    /// not fit its memory), so a `false` here is what lets the host plan for them.
    fn computes_products(&self, _params: &Parameters, _compiled: &Arc<CompiledR1cs>) -> bool {
        false
    }

    /// How proofs of `params` use the device, in one line (what stays resident, what streams,
    /// the order of the work), once a proof or preload has placed them; `None` otherwise and on
    /// the CPU.
    fn plan(&self, _params: &Parameters) -> Option<String> {
        None
    }

    /// How proofs of a set with `inputs` public inputs and `lengths` would use the device were
    /// it placed now, from its sizes alone (a parameter file's header, before the set is read):
    /// the plan in one line, or why none fits; `None` on the CPU. `r1cs_bytes`: the size of the
    /// compiled R1CS file, when the device may make a, b and c from its matrices.
    fn plan_ahead(
        &self,
        _inputs: usize,
        _lengths: QueryLengths,
        _r1cs_bytes: Option<u64>,
    ) -> Option<Result<String, String>> {
        None
    }

    /// The device this backend proves on, `None` for the CPU; an error when the driver cannot
    /// say how much memory it has.
    fn device(&self) -> Result<Option<DeviceStatus>, ProveError> {
        Ok(None)
    }
}

/// A device's identity and memory, for a caller deciding which parameter sets it keeps there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceStatus {
    /// The device's index among the driver's devices.
    pub ordinal: usize,
    pub name: String,
    pub total_bytes: u64,
    /// What allocations can still take: the driver's free memory plus what the backend's memory
    /// pool holds unused (capped by a limit set on the device handle, if any).
    pub free_bytes: u64,
    /// Bytes cuzk may hold on the device (its memory budget, `--gpu-memory`); 0 if unknown.
    pub budget_bytes: u64,
    /// The most bytes cuzk's buffers have held on it.
    pub peak_bytes: u64,
}

/// What [`ProverBackend::prove_start`] produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Started {
    pub sums: QuerySums,
    /// What the backend measured of its stages, in the order they ran.
    pub stages: Vec<StageMetric>,
}

impl Started {
    /// The sums `prove` computes with `device` held throughout: for a backend whose whole call
    /// is device work, measuring no stages.
    pub fn holding(
        device: &dyn DeviceLock,
        prove: impl FnOnce() -> Result<QuerySums, ProveError>,
    ) -> Result<Started, ProveError> {
        let _device = device.acquire();
        Ok(Started {
            sums: prove()?,
            stages: Vec::new(),
        })
    }
}

/// One measurement of a `prove_start` stage.
#[derive(Clone, Debug, PartialEq)]
pub struct StageMetric {
    /// A short key for logs, its unit as suffix: `ntt_ms`, `msm_h_ms`, `b_g2_ms`, `h2d_bytes` ….
    pub key: &'static str,
    pub value: f64,
}

/// Exclusive use of one device, shared by the provers that run on it.
///
/// The caller supplies it (and may record when it is held); the backend decides where its device
/// region begins and ends by holding the guard.
pub trait DeviceLock: Sync {
    /// Waits until no other holder has the device, and holds it until the guard drops.
    fn acquire(&self) -> DeviceGuard<'_>;

    /// A hold for device work that runs beside the region in progress, on streams of its own,
    /// without waiting for it (latency-critical work on a busy device); `None`, the default,
    /// when this holder's work must take its turn.
    fn acquire_beside(&self) -> Option<DeviceGuard<'_>> {
        None
    }

    /// Whether [`DeviceLock::acquire_beside`] would hold now: a backend weighs whether a proof
    /// could run beside the region only for such a holder. `false`, the default.
    fn may_go_beside(&self) -> bool {
        false
    }

    /// Says that the backend no longer holds the partition's host vectors (the witness and a, b
    /// and c, copied to buffers of its own and freed): the caller may give their memory back
    /// during the device region, so that the next partition's synthesis overlaps it. Called at
    /// most once, from any thread, possibly while the region runs. By default nothing.
    fn staged(&self) {}
}

/// Anything whose drop ends a hold (a mutex guard, a timer that logs); it is only ever dropped.
trait Held {}
impl<T> Held for T {}

/// Holds a [`DeviceLock`] until dropped.
pub struct DeviceGuard<'a> {
    _held: Box<dyn Held + 'a>,
}

impl<'a> DeviceGuard<'a> {
    /// A guard that ends the hold by dropping `held`.
    pub fn new<T: 'a>(held: T) -> Self {
        DeviceGuard {
            _held: Box::new(held),
        }
    }
}

impl std::fmt::Debug for DeviceGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceGuard")
    }
}

/// A device nobody else uses: acquiring never waits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unshared;

impl DeviceLock for Unshared {
    fn acquire(&self) -> DeviceGuard<'_> {
        DeviceGuard::new(())
    }
}

/// Adds the randomness to the query sums.
pub fn prove_finish(vk: &VerifyingKey, sums: &QuerySums, randomness: Randomness) -> Proof {
    let Randomness { r, s } = randomness;
    let a = sums.a + vk.alpha_g1 + vk.delta_g1 * r;
    let b_g2 = sums.b_g2 + vk.beta_g2 + vk.delta_g2 * s;
    let b_g1 = sums.b_g1 + vk.beta_g1 + vk.delta_g1 * s;
    let c = a * s + b_g1 * r - vk.delta_g1 * (r * s) + sums.h + sums.l;
    Proof {
        a: a.to_affine(),
        b: b_g2.to_affine(),
        c: c.to_affine(),
    }
}

/// Synthesizes `circuit` and proves it with `backend` and fresh randomness.
pub fn prove<C: Circuit<Scalar>>(
    backend: &dyn ProverBackend,
    params: &Parameters,
    circuit: C,
    rng: &mut impl RngCore,
) -> Result<Proof, ProveError> {
    let assignment = ProvingAssignment::synthesize(circuit)?;
    let sums = backend.prove_start(params, assignment, &Unshared)?.sums;
    Ok(prove_finish(&params.vk, &sums, Randomness::random(rng)))
}

/// The evaluation domain of `assignment`, once `params` are checked to fit it.
pub fn checked_domain(
    params: &Parameters,
    assignment: &ProvingAssignment,
) -> Result<EvaluationDomain, ProveError> {
    let domain = EvaluationDomain::new(assignment.num_rows())?;
    check_params_fit(params, assignment, domain.size())?;
    Ok(domain)
}

/// Checks that `params` were made for the circuit behind `assignment`, before any heavy work.
pub fn check_params_fit(
    params: &Parameters,
    assignment: &ProvingAssignment,
    domain_size: usize,
) -> Result<(), ProveError> {
    let inputs = assignment.input_assignment.len();
    let b_dense = assignment.b_input_density.count_ones() + assignment.b_aux_density.count_ones();
    let lengths = params.lengths();
    let checks = [
        ("vk.ic", params.vk.ic.len(), inputs),
        ("h", lengths.h, domain_size - 1),
        ("l", lengths.l, assignment.aux_assignment.len()),
        (
            "a",
            lengths.a,
            inputs + assignment.a_aux_density.count_ones(),
        ),
        ("b_g1", lengths.b_g1, b_dense),
        ("b_g2", lengths.b_g2, b_dense),
    ];
    for (query, params, circuit) in checks {
        if params != circuit {
            return Err(ProveError::ParamsMismatch {
                query,
                params,
                circuit,
            });
        }
    }
    Ok(())
}
