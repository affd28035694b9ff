//! What a circuit leaves on the device for its proofs: the query positions and the matrices (or
//! what streams them from host memory).

use cuzk_gpu::msm::MsmScalars;
use cuzk_gpu::ntt::NttTables;
use cuzk_gpu::sparse::{self, ChunkLimit, DeviceSparse, SparseRows, StreamedSparse};
use cuzk_gpu::{DeviceIndex, DeviceScalars, GpuError, Lane};
use cuzk_math::Bitmap;
use cuzk_synth::CompiledR1cs;
use std::sync::{Arc, PoisonError};

use super::*;

/// Circuits whose query positions and matrices stay on the device: a PoRep's and the PoSts'
/// proven beside it, so that neither uploads its own again after the other's proof.
pub(super) const CACHED_CIRCUITS: usize = 3;

/// Which variables the A and B queries take, as positions into inputs ++ aux: fixed by the
/// circuit's structure, so built and uploaded once and reused while the densities are the same.
#[derive(Debug)]
pub(super) struct QueryIndex {
    pub(super) densities: Densities,
    pub(super) a: DeviceIndex,
    pub(super) b: DeviceIndex,
}

/// The scalars the witness gives four of a proof's MSMs, read from it in place: L's after the
/// public inputs, A's and B's (both groups) through their variables' positions.
#[derive(Clone, Copy)]
pub(super) struct WitnessScalars<'w> {
    pub(super) l: MsmScalars<'w>,
    pub(super) a: MsmScalars<'w>,
    pub(super) b: MsmScalars<'w>,
}

impl<'w> WitnessScalars<'w> {
    pub(super) fn of(
        witness: &'w DeviceScalars,
        index: &'w QueryIndex,
        inputs: usize,
    ) -> Result<Self, GpuError> {
        Ok(WitnessScalars {
            l: MsmScalars::after(witness, inputs)?,
            a: MsmScalars::indexed(witness, &index.a)?,
            b: MsmScalars::indexed(witness, &index.b)?,
        })
    }
}

#[derive(Debug, PartialEq)]
pub(super) struct Densities {
    pub(super) inputs: usize,
    pub(super) a_aux: Bitmap,
    pub(super) b_input: Bitmap,
    pub(super) b_aux: Bitmap,
}

impl Densities {
    pub(super) fn a_index(&self) -> Vec<u32> {
        let mut index: Vec<u32> = (0..self.inputs as u32).collect();
        index.extend(self.a_aux.iter_ones().map(|i| (self.inputs + i) as u32));
        index
    }

    pub(super) fn b_index(&self) -> Vec<u32> {
        let mut index: Vec<u32> = self.b_input.iter_ones().map(|i| i as u32).collect();
        index.extend(self.b_aux.iter_ones().map(|i| (self.inputs + i) as u32));
        index
    }
}

/// The query positions of a proof: from the cache, or made now (uploaded and cached on the device).
pub(super) enum IndexSource {
    Cached(Arc<QueryIndex>),
    Fresh(Densities),
}

impl GpuBackend {
    pub(super) fn ntt_tables(&self, log_n: u32) -> Result<Arc<NttTables>, GpuError> {
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = tables.get(&log_n) {
            return Ok(t.clone());
        }
        let t = Arc::new(NttTables::new(&self.gpu, log_n)?);
        // Cached once made: a proof beside the region may read it from other streams.
        self.gpu.synchronize()?;
        tables.insert(log_n, t.clone());
        Ok(t)
    }

    /// The A and B positions on the device: cached, or uploaded now and cached.
    pub(super) fn query_index(&self, source: IndexSource) -> Result<Arc<QueryIndex>, GpuError> {
        Ok(match source {
            IndexSource::Cached(index) => index,
            IndexSource::Fresh(densities) => {
                let index = Arc::new(QueryIndex {
                    a: DeviceIndex::upload(&self.gpu, &densities.a_index())?,
                    b: DeviceIndex::upload(&self.gpu, &densities.b_index())?,
                    densities,
                });
                // Cached once made: a proof beside the region may read it from other streams.
                self.gpu.synchronize()?;
                let mut list = self.index.lock().unwrap_or_else(PoisonError::into_inner);
                list.insert(0, index.clone());
                list.truncate(CACHED_CIRCUITS);
                index
            }
        })
    }

    /// `compiled`'s matrices as the device last used them, if it did (the entries of circuits
    /// dropped on the host go).
    pub(super) fn cached_matrices(&self, compiled: &Arc<CompiledR1cs>) -> Option<Matrices> {
        let mut list = self.matrices.lock().unwrap_or_else(PoisonError::into_inner);
        list.retain(|(host, _)| host.strong_count() > 0);
        let i = list
            .iter()
            .position(|(host, _)| std::ptr::eq(host.as_ptr(), Arc::as_ptr(compiled)))?;
        let (_, kept) = most_recent(&mut list, i);
        Some(Matrices {
            kept,
            compiled: Arc::clone(compiled),
        })
    }

    /// `compiled`'s matrices for the device's products: as cached, whatever `products` says, or
    /// made now as it says — uploaded (after the least recently used copies no proof reads, if
    /// it would not fit beside them) or prepared for streaming from host memory, which is
    /// page-locked in place for the R1CS's lifetime.
    pub(super) fn matrices(
        &self,
        compiled: &Arc<CompiledR1cs>,
        products: Products,
    ) -> Result<Matrices, GpuError> {
        if let Some(matrices) = self.cached_matrices(compiled) {
            return Ok(matrices);
        }
        let rows = sparse_rows(compiled);
        let mut list = self.matrices.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = if products == Products::StreamedMatrices {
            // Refused (the page-lock limit, say), they stream from pageable memory: correct,
            // each copy staged by the driver.
            compiled.attachment(|| sparse::lock_in_host(&self.gpu, &rows).ok());
            let columns = compiled.num_inputs() + compiled.num_aux();
            Kept::Streamed(Arc::new(StreamedSparse::new(
                &self.gpu,
                compiled.coeffs(),
                &rows,
                columns,
                ChunkLimit::DEFAULT,
            )?))
        } else {
            let needed = DeviceSparse::bytes_of(compiled.coeffs(), &rows) + cuzk_gpu::MEMORY_MARGIN;
            while self.gpu.memory()?.0 < needed {
                let Some(i) = list.iter().rposition(|(_, kept)| kept.unused()) else {
                    break;
                };
                list.remove(i);
                // Freed in the stream's order: measure once it is.
                self.gpu.synchronize()?;
            }
            Kept::Resident(Arc::new(upload_matrices(&self.gpu, compiled)?))
        };
        // Cached once made: a proof beside the region may read it from other streams.
        self.gpu.synchronize()?;
        list.insert(0, (Arc::downgrade(compiled), kept.clone()));
        list.truncate(CACHED_CIRCUITS);
        Ok(Matrices {
            kept,
            compiled: Arc::clone(compiled),
        })
    }

    /// `compiled`'s matrices stream from now on: a resident copy gives its room back (once no
    /// proof reads it).
    pub(super) fn stream_matrices(&self, compiled: &Arc<CompiledR1cs>) -> Result<(), GpuError> {
        let kept = self.cached_matrices(compiled).map(|m| m.products());
        if kept == Some(Products::StreamedMatrices) {
            return Ok(());
        }
        self.matrices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(host, _)| !std::ptr::eq(host.as_ptr(), Arc::as_ptr(compiled)));
        self.matrices(compiled, Products::StreamedMatrices)
            .map(drop)
    }
}

/// A circuit's matrices as the device keeps them between proofs.
#[derive(Clone, Debug)]
pub(super) enum Kept {
    Resident(Arc<DeviceSparse>),
    /// The table and the chunks; the matrices stay in the R1CS's host memory.
    Streamed(Arc<StreamedSparse>),
}

impl Kept {
    /// Whether no proof reads it (only the cache holds it).
    fn unused(&self) -> bool {
        match self {
            Kept::Resident(device) => Arc::strong_count(device) == 1,
            Kept::Streamed(streamed) => Arc::strong_count(streamed) == 1,
        }
    }
}

/// A circuit's matrices for one proof's products on the device.
pub(super) struct Matrices {
    kept: Kept,
    /// Whose host memory streamed matrices are read from.
    compiled: Arc<CompiledR1cs>,
}

impl Matrices {
    /// `out[..rows] = M·z` for matrix `m` (0, 1, 2: A, B, C) on `gpu`'s stream.
    pub(super) fn multiply(
        &self,
        gpu: &Lane,
        m: usize,
        z: &DeviceScalars,
        out: &mut DeviceScalars,
    ) -> Result<(), GpuError> {
        match &self.kept {
            Kept::Resident(device) => device.multiply(gpu, m, z, out),
            Kept::Streamed(streamed) => {
                let rows = sparse_rows(&self.compiled)[m];
                streamed.multiply(gpu, m, rows, z, out)
            }
        }
    }

    pub(super) fn products(&self) -> Products {
        match self.kept {
            Kept::Resident(_) => Products::ResidentMatrices,
            Kept::Streamed(_) => Products::StreamedMatrices,
        }
    }
}

/// `compiled`'s A, B and C on the device, for products with witnesses (inputs then aux).
pub fn upload_matrices(gpu: &Lane, compiled: &CompiledR1cs) -> Result<DeviceSparse, GpuError> {
    let columns = compiled.num_inputs() + compiled.num_aux();
    DeviceSparse::upload(gpu, compiled.coeffs(), &sparse_rows(compiled), columns)
}

pub(super) fn sparse_rows(compiled: &CompiledR1cs) -> [SparseRows<'_>; 3] {
    compiled
        .matrices()
        .map(|(starts, columns, coeffs)| SparseRows {
            starts,
            columns,
            coeffs,
        })
}

/// Moves entry `i` of a most-recently-used-first list to the front; returns a clone of it.
pub(super) fn most_recent<T: Clone>(list: &mut Vec<T>, i: usize) -> T {
    let entry = list.remove(i);
    list.insert(0, entry.clone());
    entry
}
