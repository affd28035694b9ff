//! The host side of a proof: its witness staged in page-locked memory before the device is taken.

use cuzk_gpu::{DeviceScalars, GpuError, Lane, PackedLayout, PackedScalars, Pinned};
use cuzk_math::Scalar;
use cuzk_synth::{CompiledR1cs, ProvingAssignment};
use ff::{Field, PrimeField};
use rayon::prelude::*;
use std::sync::{Arc, PoisonError};

use crate::prover::checked_domain;
use crate::{DeviceLock, Parameters, ProveError};

use super::*;

/// Threads of a backend's staging copies: enough to outrun the upload that follows (a copy
/// thread moves several GB/s; the witness of a 32 GiB partition is 4.2 GB).
pub(super) const COPY_THREADS: usize = 4;

/// Staging buffers are made in multiples of this many scalars (32 MiB).
const STAGING_GRAIN: usize = 1 << 20;

/// The scalars of the staging buffer that holds `len`: rounded up to [`STAGING_GRAIN`], so that
/// partitions whose packed witnesses differ a little share their buffers.
pub(super) fn staging_capacity(len: usize) -> usize {
    len.next_multiple_of(STAGING_GRAIN)
}

impl reuse::Len for Pinned<Scalar> {
    fn len(&self) -> usize {
        Pinned::len(self)
    }
}

/// The host side of one proof, made before the device is taken.
pub(super) struct Prepared {
    pub(super) log_n: u32,
    /// 1/Z on the coset: Z(gX) = g^n − 1 there.
    pub(super) z_inv: Scalar,
    /// a, b, c (n values each, zero-padded), then inputs ++ aux, all staged: one upload source;
    /// only inputs ++ aux when the products are left to the device.
    pub(super) staging: Pinned<Scalar>,
    pub(super) inputs: usize,
    pub(super) witness: usize,
    /// The witness's packed form in the staging buffer (mostly 0 and 1: see [`PackedScalars`]);
    /// None when it is staged whole.
    pub(super) packed: Option<PackedLayout>,
    /// The matrices whose products with the witness are a, b and c, when the device computes
    /// them (the assignment's [`ProvingAssignment::deferred`]).
    pub(super) products: Option<Arc<CompiledR1cs>>,
}

impl Prepared {
    /// Where the witness starts in the staging buffer.
    pub(super) fn witness_offset(&self) -> usize {
        match self.products {
            Some(_) => 0,
            None => 3 << self.log_n,
        }
    }

    /// Scalars the staged witness takes: fewer than it has when packed.
    pub(super) fn staged_witness(&self) -> usize {
        self.packed.map_or(self.witness, |layout| layout.scalars())
    }

    /// The witness on the device: uploaded whole, or packed and unpacked there.
    pub(super) fn upload_witness(&self, gpu: &Lane) -> Result<DeviceScalars, GpuError> {
        let offset = self.witness_offset();
        match self.packed {
            Some(layout) => DeviceScalars::upload_packed(gpu, &self.staging, offset, layout),
            None => DeviceScalars::upload_pinned_range(
                gpu,
                &self.staging,
                offset,
                offset + self.witness,
            ),
        }
    }
}

impl GpuBackend {
    /// A staging buffer of at least `len` scalars ([`staging_capacity`]).
    pub(super) fn take_staging(&self, len: usize) -> Result<Pinned<Scalar>, GpuError> {
        let len = staging_capacity(len);
        self.staging.take(len, |len| Pinned::zeroed(&self.gpu, len))
    }

    pub(super) fn return_staging(&self, buffer: Pinned<Scalar>) {
        self.staging.give_back(buffer);
    }

    /// Host work of one proof: checks, a staging copy of the witness and of a, b and c (in
    /// parallel), the query positions; the assignment's vectors come back spent, for the caller
    /// to free.
    pub(super) fn prepare(
        &self,
        params: &Parameters,
        mut assignment: ProvingAssignment,
        stages: &mut Stages,
    ) -> Result<(Prepared, IndexSource, Spent), ProveError> {
        let domain = checked_domain(params, &assignment)?;
        let n = domain.size();
        if let Some(compiled) = &assignment.deferred {
            let witness = assignment.input_assignment.len() + assignment.aux_assignment.len();
            let made = self.device_products(params, compiled, n.trailing_zeros(), witness);
            if made.is_none() {
                let start = std::time::Instant::now();
                assignment.complete();
                stages.push("host_products_ms", start.elapsed().as_secs_f64() * 1e3);
            }
        }
        let ProvingAssignment {
            input_assignment: inputs,
            aux_assignment: aux,
            a,
            b,
            c,
            a_aux_density,
            b_input_density,
            b_aux_density,
            deferred: products,
        } = assignment;
        let witness = inputs.len() + aux.len();
        if witness > u32::MAX as usize {
            return Err(ProveError::Backend {
                backend: "gpu",
                reason: format!("{witness} variables exceed the 2^32 a gather index holds"),
            });
        }
        let start = std::time::Instant::now();
        let on_copy_threads = |work: &mut (dyn FnMut() + Send)| match &self.copies {
            Some(pool) => pool.install(work),
            None => work(),
        };
        let mut packed = None;
        on_copy_threads(&mut || packed = PackedScalars::of(&[&inputs, &aux]));
        let layout = packed.as_ref().map(PackedScalars::layout);
        let staged = layout.map_or(witness, |layout| layout.scalars());
        let len = staging_len(n, staged, products.is_some());
        let abc_len = len - staged;
        let mut staging = self.take_staging(len)?;
        if let Some(packed) = &packed {
            packed.write(staging.words_mut(abc_len, len)?)?;
        }
        {
            let values = staging.as_mut_slice()?;
            let (abc, witness_part) = values.split_at_mut(abc_len);
            let dense = packed.is_none();
            on_copy_threads(&mut || {
                if dense {
                    let (input_part, aux_part) = witness_part.split_at_mut(inputs.len());
                    rayon::join(
                        || stage(input_part, &inputs),
                        || stage(&mut aux_part[..aux.len()], &aux),
                    );
                }
                for (part, values) in abc.chunks_mut(n).zip([&a, &b, &c]) {
                    stage(part, values);
                }
            });
        }
        stages.push("prep_copy_ms", start.elapsed().as_secs_f64() * 1e3);
        stages.push("witness_packed", if packed.is_some() { 1.0 } else { 0.0 });
        let spent = Spent {
            _vectors: [aux, a, b, c],
        };
        let densities = Densities {
            inputs: inputs.len(),
            a_aux: a_aux_density,
            b_input: b_input_density,
            b_aux: b_aux_density,
        };
        let cached = {
            let mut list = self.index.lock().unwrap_or_else(PoisonError::into_inner);
            let found = list.iter().position(|index| index.densities == densities);
            found.map(|i| most_recent(&mut list, i))
        };
        // g is no n-th root of unity, so Z(g) = g^n − 1 is never zero.
        let z_inv = Option::from(domain.z_at(&Scalar::MULTIPLICATIVE_GENERATOR).invert()).ok_or(
            ProveError::Backend {
                backend: "gpu",
                reason: "the coset's vanishing polynomial is zero".into(),
            },
        )?;
        let index = match cached {
            Some(index) => IndexSource::Cached(index),
            None => IndexSource::Fresh(densities),
        };
        let prepared = Prepared {
            log_n: n.trailing_zeros(),
            z_inv,
            staging,
            inputs: inputs.len(),
            witness,
            packed: layout,
            products,
        };
        Ok((prepared, index, spent))
    }
}

/// Scalars of a proof's page-locked staging buffer: a, b and c (the domain's n each), then the
/// witness's `witness` scalars (whole or packed); the witness alone when the device computes the
/// products.
pub(super) fn staging_len(n: usize, witness: usize, products_on_device: bool) -> usize {
    match products_on_device {
        true => witness,
        false => 3 * n + witness,
    }
}

/// The threads of a backend's staging copies; `None` if they could not be started.
pub(super) fn staging_pool(threads: usize) -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("cuzk-staging-{i}"))
        .build()
        .ok()
}

/// An assignment's vectors once copied into the staging buffer, to be freed off the proof's path:
/// freeing them unmaps their pages (hundreds of MB; 17 GB at 32 GiB), which takes time from a
/// proof's host preparation (measured: docs/performance.md, "Why the code is as it is").
pub(super) struct Spent {
    _vectors: [Vec<Scalar>; 4],
}

/// Runs `work` while `spent` is freed on a thread beside it, and says the partition is staged
/// ([`DeviceLock::staged`]) once the vectors are gone: not before, or the caller would count as
/// free memory still being unmapped.
pub(super) fn freed_beside<T>(
    spent: Spent,
    device: &dyn DeviceLock,
    work: impl FnOnce() -> T,
) -> T {
    std::thread::scope(|scope| {
        let freeing = std::thread::Builder::new()
            .name("cuzk-release".into())
            .spawn_scoped(scope, move || {
                drop(spent);
                device.staged();
            });
        if freeing.is_err() {
            // No thread: the failed spawn dropped its closure, and the vectors with it.
            device.staged();
        }
        work()
    })
}

/// Copies `src` to the front of `dst` and zeroes the rest, in parallel chunks.
pub(super) fn stage(dst: &mut [Scalar], src: &[Scalar]) {
    const CHUNK: usize = 1 << 16;
    let (copied, padding) = dst.split_at_mut(src.len());
    copied
        .par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
    padding
        .par_chunks_mut(CHUNK)
        .for_each(|d| d.fill(Scalar::ZERO));
}
