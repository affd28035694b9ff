//! Test parameters made on the device (see [`crate::setup`]): their points multiplied out here,
//! either brought back to the host ([`Multiplier::gpu`]) or kept where they were made
//! ([`GpuBackend::parameters_on_device`]).

use std::sync::{Arc, PoisonError};

use cuzk_gpu::fixed_base::{fixed_base_multiply, FixedBaseAffine};
use cuzk_gpu::{GpuError, Lane};
use cuzk_math::msm::AffineCoordinates;
use cuzk_math::{FixedBaseTable, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_synth::CompiledR1cs;
use group::prime::PrimeCurve;

use crate::keys::PlacedPart;
use crate::setup::{with_points, DeviceMultiplier, KeyScalars, Multiplier, ToxicWaste};
use crate::{Parameters, SetupError};

use super::*;

impl Multiplier {
    /// Points multiplied out on `gpu`: the same as the CPU's, brought back to the host.
    pub fn gpu(gpu: Arc<Lane>) -> Self {
        Multiplier::Device(Arc::new(OnGpu(gpu)))
    }
}

/// Fixed-base multiplications on one device.
#[derive(Debug)]
struct OnGpu(Arc<Lane>);

impl DeviceMultiplier for OnGpu {
    fn g1(
        &self,
        table: &FixedBaseTable<G1Projective>,
        scalars: &[Scalar],
    ) -> Result<Vec<G1Affine>, SetupError> {
        multiply(&self.0, table, scalars)
    }

    fn g2(
        &self,
        table: &FixedBaseTable<G2Projective>,
        scalars: &[Scalar],
    ) -> Result<Vec<G2Affine>, SetupError> {
        multiply(&self.0, table, scalars)
    }
}

fn multiply<G>(
    gpu: &Lane,
    table: &FixedBaseTable<G>,
    scalars: &[Scalar],
) -> Result<Vec<G::Affine>, SetupError>
where
    G: PrimeCurve<Scalar = Scalar>,
    G::Affine: AffineCoordinates + FixedBaseAffine,
{
    Ok(fixed_base_multiply(
        gpu,
        &table.entries(),
        table.window_bits() as u32,
        table.windows() as u32,
        scalars,
    )?)
}

/// A proving key's queries kept on a GPU, never on the host (made there, or settled there from a
/// host set, see [`ProverBackend::settle`]): what this backend holds in [`Parameters::placed`].
pub(super) struct DeviceQueries {
    pub(super) ordinal: usize,
    pub(super) srs: Arc<DeviceSrs>,
}

impl GpuBackend {
    /// Test parameters for a compiled R1CS whose queries are multiplied out on this device and
    /// stay there: the same key as [`crate::setup::parameters_for_compiled`] with the same toxic
    /// waste, but only the verifying key ever reaches the host, so a 32 GiB PoRep set (47 GB) is
    /// neither written nor held in host memory. Only this backend proves with them.
    pub fn parameters_on_device(
        &self,
        compiled: &CompiledR1cs,
        toxic: &ToxicWaste,
    ) -> Result<Parameters, SetupError> {
        let key = KeyScalars::of_compiled(compiled, toxic)?;
        // Not while a proof measures or takes the device's memory.
        let _region = self.region.lock().unwrap_or_else(PoisonError::into_inner);
        self.kept_here(key)
    }

    /// Test parameters for a compiled R1CS multiplied out on this device (the same key as
    /// [`crate::setup::parameters_for_compiled`]): kept there, as
    /// [`GpuBackend::parameters_on_device`] keeps them, when a proof's most preferred plan in
    /// what is free now holds every query resident; else brought back to the host, from where
    /// proofs stream them as a file's. A set that must stream cannot be device-only.
    pub(super) fn test_key(
        &self,
        compiled: &CompiledR1cs,
        toxic: &ToxicWaste,
    ) -> Result<Parameters, SetupError> {
        let key = KeyScalars::of_compiled(compiled, toxic)?;
        let sizes = ProofSizes::ahead(key.vk.ic.len(), key.lengths(), Some(matrix_bytes(compiled)));
        // Not while a proof measures or takes the device's memory.
        let _region = self.region.lock().unwrap_or_else(PoisonError::into_inner);
        let (free, _) = self.gpu.memory_beside()?;
        let room = free.saturating_sub(cuzk_gpu::MEMORY_MARGIN);
        // Points made on the device have no window multiples.
        let plan = Plan::new(&sizes, room, None, self.resident_cap);
        match plan.is_ok_and(|plan| plan.all_resident()) {
            true => self.kept_here(key),
            false => with_points(key, &Multiplier::gpu(Arc::clone(&self.gpu))),
        }
    }

    /// `key`'s points multiplied out on this device and kept there; the caller holds `region`.
    fn kept_here(&self, key: KeyScalars) -> Result<Parameters, SetupError> {
        let lengths = key.lengths();
        let srs = {
            let gpu = &self.gpu;
            DeviceSrs {
                key: SrsKey {
                    lengths: [lengths.h, lengths.l, lengths.a, lengths.b_g1, lengths.b_g2],
                    // The verifying key's, which tells parameter sets apart.
                    delta: (key.vk.delta_g1, key.vk.delta_g2),
                    ends: Vec::new(),
                    b_g2_ends: (None, None),
                },
                queries: [Placement::Resident; 5],
                plan: None,
                h: Bases::multiplied(gpu, &key.g1, &key.h)?,
                l: Bases::multiplied(gpu, &key.g1, key.l())?,
                a: Bases::multiplied(gpu, &key.g1, &key.a)?,
                b_g1: Bases::multiplied(gpu, &key.g1, &key.b)?,
                b_g2: Bases::multiplied(gpu, &key.g2, &key.b)?,
            }
        };
        let queries = DeviceQueries {
            ordinal: self.gpu.ordinal(),
            srs: Arc::new(srs),
        };
        let part = PlacedPart::new(self.name.clone(), queries);
        Ok(Parameters::kept(key.vk, lengths, vec![part]))
    }

    /// The queries `params` keep on a device when it is this one; an error when they are on
    /// another, None when they are on the host.
    pub(super) fn placed_here<'p>(
        &self,
        params: &'p Parameters,
    ) -> Result<Option<&'p DeviceQueries>, GpuError> {
        let Some(placed) = &params.placed else {
            return Ok(None);
        };
        let ordinal = self.gpu.ordinal();
        match placed
            .held::<DeviceQueries>()
            .find(|q| q.ordinal == ordinal)
        {
            Some(queries) => Ok(Some(queries)),
            None => Err(GpuError::InvalidInput {
                what: "parameters",
                reason: format!(
                    "their queries are kept on {} only, without a host copy; this is {}",
                    placed.place(),
                    self.name
                ),
            }),
        }
    }
}
