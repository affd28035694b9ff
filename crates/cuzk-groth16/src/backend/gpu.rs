//! The GPU backend: H and every MSM of `prove_start` (B in G2 included) on one CUDA device.
//!
//! Per proof: a, b and c go up and become H's coefficients on the device (three inverse NTTs, three
//! coset NTTs, (a∘b − c)/Z on the coset, one coset inverse NTT, in orders that chain with no
//! permutation pass); the witness goes up once and the L, A and B queries' scalars are gathered
//! from it on the device by index lists made on the host; then five MSMs. Scalars equal to 0 add
//! nothing (their digits are all zero, so they reach no bucket) and scalars equal to 1 cost one
//! addition each in a single bucket summed in parallel chunks: the 0/1 split of hash-heavy circuits
//! happens inside the MSM's digit pass, on the device.
//!
//! The proving key's points go to the device once per parameter set and stay while they fit beside
//! a proof's working memory; otherwise they are kept in page-locked host memory and streamed
//! through the MSMs in double-buffered chunks. The choice follows the memory the device reports and
//! is returned with every proof's stages (`srs_resident`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use cuzk_gpu::msm::{msm_device, msm_streamed, working_memory, DeviceBases, MsmAffine};
use cuzk_gpu::ntt::{ab_minus_c, ntt, NttOrder, NttTables, Transform};
use cuzk_gpu::{DeviceScalars, Gpu, GpuError, Pinned};
use cuzk_math::{EvaluationDomain, G1Affine, G2Affine, Scalar};
use cuzk_synth::ProvingAssignment;
use ff::{Field, PrimeField};

use crate::prover::{check_params_fit, DeviceLock, StageMetric, Started, Unshared};
use crate::{Parameters, ProveError, ProverBackend, QuerySums};

/// Proves on one device.
#[derive(Debug)]
pub struct GpuBackend {
    gpu: Arc<Gpu>,
    name: String,
    /// The proving key of the last parameter set proven with (one set at a time: a new one
    /// replaces it).
    srs: Mutex<Option<Arc<DeviceSrs>>>,
    tables: Mutex<HashMap<u32, Arc<NttTables>>>,
}

/// Where one query's points live.
#[derive(Debug)]
enum Bases<A> {
    Resident(DeviceBases<A>),
    Streamed(Pinned<A>),
}

impl<A: MsmAffine> Bases<A> {
    fn place(gpu: &Gpu, points: &[A], resident: bool) -> Result<Self, GpuError> {
        Ok(if resident {
            Bases::Resident(DeviceBases::upload(gpu, points)?)
        } else {
            Bases::Streamed(Pinned::from_slice(gpu, points)?)
        })
    }

    fn msm(&self, gpu: &Gpu, scalars: &DeviceScalars) -> Result<A::Projective, GpuError> {
        match self {
            Bases::Resident(bases) => msm_device(gpu, bases, scalars),
            Bases::Streamed(points) => msm_streamed(gpu, points, scalars),
        }
    }
}

/// A parameter set's query points, placed for proving.
#[derive(Debug)]
struct DeviceSrs {
    key: SrsKey,
    resident: bool,
    h: Bases<G1Affine>,
    l: Bases<G1Affine>,
    a: Bases<G1Affine>,
    b_g1: Bases<G1Affine>,
    b_g2: Bases<G2Affine>,
}

/// What tells parameter sets apart cheaply: the query lengths, δ (random per setup) and the first
/// and last point of every query.
#[derive(Debug, PartialEq)]
struct SrsKey {
    lengths: [usize; 5],
    delta: (G1Affine, G2Affine),
    ends: Vec<Option<G1Affine>>,
    b_g2_ends: (Option<G2Affine>, Option<G2Affine>),
}

impl SrsKey {
    fn of(params: &Parameters) -> Self {
        let g1 = [&params.h, &params.l, &params.a, &params.b_g1];
        SrsKey {
            lengths: [
                params.h.len(),
                params.l.len(),
                params.a.len(),
                params.b_g1.len(),
                params.b_g2.len(),
            ],
            delta: (params.vk.delta_g1, params.vk.delta_g2),
            ends: g1
                .iter()
                .flat_map(|q| [q.first().copied(), q.last().copied()])
                .collect(),
            b_g2_ends: (params.b_g2.first().copied(), params.b_g2.last().copied()),
        }
    }
}

/// The host side of one proof, made before the device is taken.
struct Prepared {
    log_n: u32,
    /// 1/Z on the coset: Z(gX) = g^n − 1 there.
    z_inv: Scalar,
    abc: [Vec<Scalar>; 3],
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
    /// Indices into inputs ++ aux of the scalars of L, A and B.
    l_index: Vec<u32>,
    a_index: Vec<u32>,
    b_index: Vec<u32>,
}

/// Collects stage timings as they happen.
#[derive(Default)]
struct Stages(Vec<StageMetric>);

impl Stages {
    fn push(&mut self, key: &'static str, value: f64) {
        self.0.push(StageMetric { key, value });
    }

    /// Runs `f` (device work on the GPU's stream) and records its device time under `key`.
    fn time<T>(
        &mut self,
        gpu: &Gpu,
        key: &'static str,
        f: impl FnOnce() -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        let (out, ms) = gpu.time(f)?;
        self.push(key, f64::from(ms));
        Ok(out)
    }
}

impl GpuBackend {
    /// The backend of device `ordinal`.
    pub fn new(ordinal: usize) -> Result<Self, GpuError> {
        Ok(Self::with_gpu(Gpu::new(ordinal)?))
    }

    /// One backend per usable device, for spreading partitions over them.
    pub fn all() -> Result<Vec<Self>, GpuError> {
        let devices = cuzk_gpu::probe()?;
        (0..devices.len()).map(Self::new).collect()
    }

    /// A backend on an opened device (whose memory limit, if any, it plans with).
    pub fn with_gpu(gpu: Arc<Gpu>) -> Self {
        let name = format!("cuda:{} ({})", gpu.ordinal(), gpu.name());
        GpuBackend {
            gpu,
            name,
            srs: Mutex::new(None),
            tables: Mutex::new(HashMap::new()),
        }
    }

    fn prepare(params: &Parameters, assignment: ProvingAssignment) -> Result<Prepared, ProveError> {
        let domain = EvaluationDomain::new(assignment.num_rows())?;
        let n = domain.size();
        check_params_fit(params, &assignment, n)?;
        let ProvingAssignment {
            input_assignment: inputs,
            aux_assignment: aux,
            mut a,
            mut b,
            mut c,
            a_aux_density,
            b_input_density,
            b_aux_density,
        } = assignment;
        for values in [&mut a, &mut b, &mut c] {
            values.resize(n, Scalar::ZERO);
        }
        let n_in = inputs.len();
        let witness = n_in + aux.len();
        if witness > u32::MAX as usize {
            return Err(ProveError::Backend {
                backend: "gpu",
                reason: format!("{witness} variables exceed the 2^32 a gather index holds"),
            });
        }
        let aux_index = |density: &cuzk_math::Bitmap| -> Vec<u32> {
            density.iter_ones().map(|i| (n_in + i) as u32).collect()
        };
        let mut a_index: Vec<u32> = (0..n_in as u32).collect();
        a_index.extend(aux_index(&a_aux_density));
        let mut b_index: Vec<u32> = b_input_density.iter_ones().map(|i| i as u32).collect();
        b_index.extend(aux_index(&b_aux_density));
        // g is no n-th root of unity, so Z(g) = g^n − 1 is never zero.
        let z_inv = Option::from(domain.z_at(&Scalar::MULTIPLICATIVE_GENERATOR).invert()).ok_or(
            ProveError::Backend {
                backend: "gpu",
                reason: "the coset's vanishing polynomial is zero".into(),
            },
        )?;
        Ok(Prepared {
            log_n: n.trailing_zeros(),
            z_inv,
            abc: [a, b, c],
            inputs,
            aux,
            l_index: (n_in as u32..witness as u32).collect(),
            a_index,
            b_index,
        })
    }

    fn ntt_tables(&self, log_n: u32) -> Result<Arc<NttTables>, GpuError> {
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = tables.get(&log_n) {
            return Ok(t.clone());
        }
        let t = Arc::new(NttTables::new(&self.gpu, log_n)?);
        tables.insert(log_n, t.clone());
        Ok(t)
    }

    /// The parameter set's points on this device, placing them on first use: resident when they
    /// fit beside `working` bytes of a proof's own buffers, streamed from pinned memory otherwise.
    fn srs(
        &self,
        params: &Parameters,
        working: usize,
        stages: &mut Stages,
    ) -> Result<Arc<DeviceSrs>, GpuError> {
        let key = SrsKey::of(params);
        let mut cached = self.srs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(srs) = cached.as_ref().filter(|s| s.key == key) {
            return Ok(srs.clone());
        }
        // Free the previous set before measuring what is free.
        *cached = None;
        let g1 = params.h.len() + params.l.len() + params.a.len() + params.b_g1.len();
        let points = g1 * std::mem::size_of::<G1Affine>()
            + params.b_g2.len() * std::mem::size_of::<G2Affine>();
        let (free, _) = self.gpu.memory()?;
        let resident = points + working + cuzk_gpu::MEMORY_MARGIN <= free;
        let gpu = &self.gpu;
        let start = std::time::Instant::now();
        let srs = Arc::new(DeviceSrs {
            key,
            resident,
            h: Bases::place(gpu, &params.h, resident)?,
            l: Bases::place(gpu, &params.l, resident)?,
            a: Bases::place(gpu, &params.a, resident)?,
            b_g1: Bases::place(gpu, &params.b_g1, resident)?,
            b_g2: Bases::place(gpu, &params.b_g2, resident)?,
        });
        stages.push("srs_place_ms", start.elapsed().as_secs_f64() * 1e3);
        stages.push("srs_bytes", points as f64);
        *cached = Some(srs.clone());
        Ok(srs)
    }

    /// Device bytes a proof needs besides the SRS: a, b, c; the witness and the gathered query
    /// scalars; the largest MSM's work buffers.
    fn working_bytes(p: &Prepared) -> usize {
        let scalar = std::mem::size_of::<Scalar>();
        let n = 1usize << p.log_n;
        let witness = p.inputs.len() + p.aux.len();
        let gathered = p.l_index.len() + p.a_index.len() + p.b_index.len();
        let largest_g1 = n.max(witness);
        scalar * (3 * n + witness + gathered)
            + working_memory::<G1Affine>(largest_g1)
                .max(working_memory::<G2Affine>(p.b_index.len()))
    }

    /// The device region of one proof.
    fn on_device(
        &self,
        params: &Parameters,
        p: Prepared,
        stages: &mut Stages,
    ) -> Result<QuerySums, GpuError> {
        let gpu = &*self.gpu;
        let srs = self.srs(params, Self::working_bytes(&p), stages)?;
        stages.push("srs_resident", if srs.resident { 1.0 } else { 0.0 });
        let tables = self.ntt_tables(p.log_n)?;
        let scalar_bytes = std::mem::size_of::<Scalar>();
        let [a, b, c] = &p.abc;
        let (mut h, db, dc) = stages.time(gpu, "h2d_abc_ms", || {
            Ok((
                DeviceScalars::upload(gpu, a)?,
                DeviceScalars::upload(gpu, b)?,
                DeviceScalars::upload(gpu, c)?,
            ))
        })?;
        stages.time(gpu, "ntt_ms", || {
            let (mut db, mut dc) = (db, dc);
            for values in [&mut h, &mut db, &mut dc] {
                ntt(
                    gpu,
                    &tables,
                    values,
                    Transform::intt(NttOrder::NaturalToBitReversed),
                )?;
                ntt(
                    gpu,
                    &tables,
                    values,
                    Transform::coset_ntt(NttOrder::BitReversedToNatural),
                )?;
            }
            ab_minus_c(gpu, &mut h, &db, &dc, p.z_inv)?;
            ntt(
                gpu,
                &tables,
                &mut h,
                Transform::coset_intt(NttOrder::NaturalToNatural),
            )
        })?;
        // H has n − 1 coefficients (the top one is zero).
        h.truncate((1 << p.log_n) - 1);
        let sum_h = stages.time(gpu, "msm_h_ms", || srs.h.msm(gpu, &h))?;
        drop(h);

        let witness = stages.time(gpu, "h2d_witness_ms", || {
            DeviceScalars::upload_concat(gpu, &[&p.inputs, &p.aux])
        })?;
        let (l, a, b) = stages.time(gpu, "gather_ms", || {
            Ok((
                witness.gather(gpu, &p.l_index)?,
                witness.gather(gpu, &p.a_index)?,
                witness.gather(gpu, &p.b_index)?,
            ))
        })?;
        drop(witness);
        let index_bytes = 4 * (p.l_index.len() + p.a_index.len() + p.b_index.len());
        let h2d = scalar_bytes * (3 * (1 << p.log_n) + p.inputs.len() + p.aux.len()) + index_bytes;
        stages.push("h2d_bytes", h2d as f64);
        let sums = QuerySums {
            h: sum_h,
            l: stages.time(gpu, "msm_l_ms", || srs.l.msm(gpu, &l))?,
            a: stages.time(gpu, "msm_a_ms", || srs.a.msm(gpu, &a))?,
            b_g1: stages.time(gpu, "msm_b_g1_ms", || srs.b_g1.msm(gpu, &b))?,
            b_g2: stages.time(gpu, "msm_b_g2_ms", || srs.b_g2.msm(gpu, &b))?,
        };
        Ok(sums)
    }
}

impl ProverBackend for GpuBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
    ) -> Result<QuerySums, ProveError> {
        Ok(self.prove_start_shared(params, assignment, &Unshared)?.sums)
    }

    /// Host preparation (padding, index lists) runs before the device is taken; the device region
    /// is everything from the first upload to the last MSM.
    fn prove_start_shared(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        let mut stages = Stages::default();
        let start = std::time::Instant::now();
        let prepared = Self::prepare(params, assignment)?;
        stages.push("prep_ms", start.elapsed().as_secs_f64() * 1e3);
        let _device = device.acquire();
        let sums = self
            .on_device(params, prepared, &mut stages)
            .map_err(ProveError::Gpu)?;
        Ok(Started {
            sums,
            stages: stages.0,
        })
    }
}
