//! The streamed MSMs that run beside H's, one step at a time: a streamed query whose scalars are
//! mostly 0 or 1 (L, A and B take the witness's bits) is bound by its points' copies, H's by its
//! sums, so the copies of one keep the copy engine busy while the other keeps the SMs busy.
//!
//! Their scalars are classified and the few others gathered while the witness is on the device,
//! before H's MSM sizes its passes; their points then stream on the side lane through two buffers
//! made beforehand, the ones summed and the others' points gathered, while H's MSM runs; the
//! others' Pippenger passes come after H's, when its memory is free. Measured against one after
//! another in `docs/perf-notes.md` (issue 36).

use cuzk_gpu::msm::{MsmAffine, MsmScalars, PointBuffers, SplitMsm};
use cuzk_gpu::{GpuError, Lane};
use cuzk_math::{G1Affine, G2Affine};

use super::circuit::WitnessScalars;
use super::residency::{Bases, DeviceSrs};
use super::stages::{msm_counted, Stages};
use crate::Parameters;

/// Bytes of each of the two buffers the queries beside H stream through: copies of ~5 ms on a
/// PCIe 5 host, long against the host's wait for each range's sum, small against H's passes.
const BUFFER_BYTES: usize = 256 << 20;

/// The queries streaming beside H's MSM and the two buffers they stream through.
pub(super) struct Beside {
    queries: BesideQueries,
    buffers: PointBuffers,
}

/// The queries beside H's MSM, by name; a query not here runs after it, alone.
#[derive(Default)]
pub(super) struct BesideQueries {
    pub(super) l: Option<Streamed<G1Affine>>,
    pub(super) a: Option<Streamed<G1Affine>>,
    pub(super) b_g1: Option<Streamed<G1Affine>>,
    pub(super) b_g2: Option<Streamed<G2Affine>>,
}

/// A query beside H's MSM: its split MSM, and the device time its points took to stream.
pub(super) struct Streamed<A: MsmAffine> {
    msm: SplitMsm<A>,
    ms: f32,
}

impl Beside {
    /// The split MSMs of `srs`'s streamed queries over the witness's scalars `s`, made on `gpu`
    /// (the main stream, after the witness), with their buffers on `side`; None when no query
    /// splits, or when they would leave less than `h_needs` bytes for H's MSM once `freed` bytes
    /// (the witness, if it goes) are given back.
    pub(super) fn of(
        gpu: &Lane,
        side: &Lane,
        srs: &DeviceSrs,
        s: WitnessScalars<'_>,
        h_needs: usize,
        freed: usize,
    ) -> Result<Option<Self>, GpuError> {
        let queries = match BesideQueries::of(gpu, srs, s) {
            Ok(queries) => queries,
            Err(GpuError::OutOfMemory { .. }) => return Ok(None),
            Err(error) => return Err(error),
        };
        if queries.count() == 0 {
            return Ok(None);
        }
        let (free, _) = gpu.settled_memory()?;
        let room = (free + freed).saturating_sub(2 * BUFFER_BYTES + cuzk_gpu::MEMORY_MARGIN);
        if room < h_needs {
            return Ok(None);
        }
        let buffers = PointBuffers::new(side, BUFFER_BYTES)?;
        // H's MSM sizes its passes from what is free: the buffers must count as taken by then.
        side.synchronize()?;
        // The side lane follows the classification, and nothing queued on `gpu` after it: were
        // it to wait from its own thread, H's passes queued meanwhile would hold it back.
        side.wait_for(gpu)?;
        Ok(Some(Beside { queries, buffers }))
    }

    /// Queries streaming beside H.
    pub(super) fn count(&self) -> usize {
        self.queries.count()
    }

    /// Whether every query that reads the witness streams beside H: the witness is not needed
    /// after H's MSM.
    pub(super) fn all(&self) -> bool {
        self.count() == 4
    }

    /// Streams every query's points on `side` (which follows their classification, see
    /// [`Beside::of`]), summing the ones' and gathering the others'.
    pub(super) fn stream(&mut self, side: &Lane, params: &Parameters) -> Result<(), GpuError> {
        let (q, buffers) = (&mut self.queries, &mut self.buffers);
        // The largest first: its copies take longest, and H's passes are longest at its start.
        stream_one(side, &mut q.b_g2, &params.b_g2, buffers)?;
        stream_one(side, &mut q.a, &params.a, buffers)?;
        stream_one(side, &mut q.l, &params.l, buffers)?;
        stream_one(side, &mut q.b_g1, &params.b_g1, buffers)
    }

    /// The queries, streamed (the buffers go).
    pub(super) fn into_queries(self) -> BesideQueries {
        self.queries
    }
}

impl BesideQueries {
    /// The split MSMs of `srs`'s streamed queries over `s`, made on `gpu`; B's in G1 and in G2
    /// share one classification of its scalars.
    fn of(gpu: &Lane, srs: &DeviceSrs, s: WitnessScalars<'_>) -> Result<Self, GpuError> {
        let b_g1 = split(gpu, &srs.b_g1, s.b)?;
        let b_g2 = match (&srs.b_g2, &srs.b_g1, &b_g1) {
            (Bases::Resident(_), ..) => None,
            (Bases::Streamed, _, Some(b_g1)) => Some(Streamed::new(b_g1.msm.over(gpu)?)),
            // B's scalars were classified, and do not split.
            (Bases::Streamed, Bases::Streamed, None) => None,
            (Bases::Streamed, Bases::Resident(_), None) => split(gpu, &srs.b_g2, s.b)?,
        };
        Ok(BesideQueries {
            l: split(gpu, &srs.l, s.l)?,
            a: split(gpu, &srs.a, s.a)?,
            b_g1,
            b_g2,
        })
    }

    fn count(&self) -> usize {
        let g1 = [&self.l, &self.a, &self.b_g1].into_iter().flatten().count();
        g1 + usize::from(self.b_g2.is_some())
    }
}

impl<A: MsmAffine> Streamed<A> {
    /// A query not streamed yet.
    fn new(msm: SplitMsm<A>) -> Self {
        Streamed { msm, ms: 0.0 }
    }
}

/// The split MSM of a streamed query over `scalars`, when they are mostly 0 or 1.
fn split<A: MsmAffine>(
    gpu: &Lane,
    bases: &Bases<A>,
    scalars: MsmScalars<'_>,
) -> Result<Option<Streamed<A>>, GpuError> {
    match bases {
        Bases::Streamed => Ok(SplitMsm::of(gpu, &scalars)?.map(Streamed::new)),
        Bases::Resident(_) => Ok(None),
    }
}

/// Streams one query's points if it is beside H, recording its device time.
fn stream_one<A: MsmAffine>(
    side: &Lane,
    query: &mut Option<Streamed<A>>,
    points: &[A],
    buffers: &mut PointBuffers,
) -> Result<(), GpuError> {
    if let Some(query) = query {
        query.ms = side.time(|| query.msm.stream(side, points, buffers))?.1;
    }
    Ok(())
}

/// What the queries read after H's MSM: the main lane, the side lane where the ones beside H
/// streamed, and the witness's scalars when the witness is on the device.
pub(super) struct After<'a> {
    pub(super) gpu: &'a Lane,
    pub(super) side: &'a Lane,
    pub(super) s: Option<WitnessScalars<'a>>,
}

impl After<'_> {
    /// A query's sum with its device time, its passes and room recorded under `keys`: the rest
    /// of its split MSM if it streamed beside H (`beside`, the streaming's time added), on the
    /// main lane once the side lane is done; else its whole MSM now, over `bases` (`host`: its
    /// points when streamed) and the scalars `pick` takes from the witness.
    pub(super) fn sum<A: MsmAffine>(
        &self,
        stages: &mut Stages,
        keys: [&'static str; 2],
        (bases, host): (&Bases<A>, &[A]),
        beside: Option<Streamed<A>>,
        pick: impl FnOnce(WitnessScalars<'_>) -> MsmScalars<'_>,
    ) -> Result<(A::Projective, f32), GpuError> {
        let gpu = self.gpu;
        if let Some(Streamed { msm, ms: streamed }) = beside {
            gpu.wait_for(self.side)?;
            let (sum, ms) = msm_counted(gpu, stages, keys, || msm.finish(gpu))?;
            return Ok((sum, ms + streamed));
        }
        let scalars = self.s.map(pick).ok_or(GpuError::InvalidInput {
            what: "witness",
            reason: "a query after H's MSM has no witness on the device to read".to_owned(),
        })?;
        msm_counted(gpu, stages, keys, || bases.msm(gpu, scalars, host))
    }
}
