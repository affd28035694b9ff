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
use cuzk_gpu::{Gpu, GpuError};
use cuzk_math::{G1Affine, G2Affine};

use super::program::{msm_counted, Stages, WitnessScalars};
use super::residency::{Bases, DeviceSrs};
use crate::Parameters;

/// Bytes of each of the two buffers the queries beside H stream through: copies of ~5 ms on a
/// PCIe 5 host, long against the host's wait for each range's sum, small against H's passes.
const BUFFER_BYTES: usize = 256 << 20;

/// The queries streaming beside H's MSM, by name; a query not here runs after it, alone.
pub(super) struct Beside {
    pub(super) l: Option<SplitMsm<G1Affine>>,
    pub(super) a: Option<SplitMsm<G1Affine>>,
    pub(super) b_g1: Option<SplitMsm<G1Affine>>,
    pub(super) b_g2: Option<SplitMsm<G2Affine>>,
    buffers: PointBuffers,
}

/// The split MSMs of [`Beside`] by query, taken from it after streaming.
pub(super) type BesideParts = (
    Option<SplitMsm<G1Affine>>,
    Option<SplitMsm<G1Affine>>,
    Option<SplitMsm<G1Affine>>,
    Option<SplitMsm<G2Affine>>,
);

/// The device time each query beside H took to stream, in milliseconds.
#[derive(Clone, Copy, Default)]
pub(super) struct Streamed {
    pub(super) l: f32,
    pub(super) a: f32,
    pub(super) b_g1: f32,
    pub(super) b_g2: f32,
}

impl Beside {
    /// The split MSMs of `srs`'s streamed queries over the witness's scalars `s`, made on `gpu`
    /// (the main stream, after the witness), with their buffers on `side`; None when no query
    /// splits, or when they would leave less than `h_needs` bytes for H's MSM once `freed` bytes
    /// (the witness, if it goes) are given back.
    pub(super) fn of(
        gpu: &Gpu,
        side: &Gpu,
        srs: &DeviceSrs,
        s: WitnessScalars<'_>,
        h_needs: usize,
        freed: usize,
    ) -> Result<Option<Self>, GpuError> {
        let made = (|| -> Result<_, GpuError> {
            Ok((
                split(gpu, &srs.l, s.l)?,
                split(gpu, &srs.a, s.a)?,
                split(gpu, &srs.b_g1, s.b)?,
                split(gpu, &srs.b_g2, s.b)?,
            ))
        })();
        let (l, a, b_g1, b_g2) = match made {
            Ok(made) => made,
            Err(GpuError::OutOfMemory { .. }) => return Ok(None),
            Err(error) => return Err(error),
        };
        if l.is_none() && a.is_none() && b_g1.is_none() && b_g2.is_none() {
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
        Ok(Some(Beside {
            l,
            a,
            b_g1,
            b_g2,
            buffers,
        }))
    }

    /// Queries streaming beside H.
    pub(super) fn count(&self) -> usize {
        [self.l.is_some(), self.a.is_some(), self.b_g1.is_some()]
            .into_iter()
            .chain([self.b_g2.is_some()])
            .filter(|&some| some)
            .count()
    }

    /// Whether every query that reads the witness streams beside H: the witness is not needed
    /// after H's MSM.
    pub(super) fn all(&self) -> bool {
        self.count() == 4
    }

    /// The split MSMs by query: L, A, B in G1, B in G2 (the buffers go).
    pub(super) fn into_parts(self) -> BesideParts {
        (self.l, self.a, self.b_g1, self.b_g2)
    }

    /// Streams every query's points on `side` (which follows their classification, see
    /// [`Beside::of`]), summing the ones' and gathering the others'.
    pub(super) fn stream(&mut self, side: &Gpu, params: &Parameters) -> Result<Streamed, GpuError> {
        let buffers = &mut self.buffers;
        // The largest first (fields are evaluated in the order written): its copies take
        // longest, and H's passes are longest at its start.
        Ok(Streamed {
            b_g2: stream_one(side, &mut self.b_g2, &params.b_g2, buffers)?,
            a: stream_one(side, &mut self.a, &params.a, buffers)?,
            l: stream_one(side, &mut self.l, &params.l, buffers)?,
            b_g1: stream_one(side, &mut self.b_g1, &params.b_g1, buffers)?,
        })
    }
}

/// The split MSM of a streamed query over `scalars`, when they are mostly 0 or 1.
fn split<A: MsmAffine>(
    gpu: &Gpu,
    bases: &Bases<A>,
    scalars: MsmScalars<'_>,
) -> Result<Option<SplitMsm<A>>, GpuError> {
    match bases {
        Bases::Streamed => SplitMsm::of(gpu, &scalars),
        Bases::Resident(_) => Ok(None),
    }
}

/// Streams one query's points if it is beside H, with its device time (0 if it is not).
fn stream_one<A: MsmAffine>(
    side: &Gpu,
    msm: &mut Option<SplitMsm<A>>,
    points: &[A],
    buffers: &mut PointBuffers,
) -> Result<f32, GpuError> {
    match msm {
        Some(msm) => Ok(side.time(|| msm.stream(side, points, buffers))?.1),
        None => Ok(0.0),
    }
}

/// What the queries read after H's MSM: the main lane, the side lane where the ones beside H
/// streamed, and the witness's scalars when the witness is on the device.
pub(super) struct After<'a> {
    pub(super) gpu: &'a Gpu,
    pub(super) side: &'a Gpu,
    pub(super) s: Option<WitnessScalars<'a>>,
}

impl After<'_> {
    /// A query's sum with its device time, its passes and room recorded under `keys`: the rest
    /// of its split MSM if it streamed beside H (`split`, with the streaming's time), on the
    /// main lane once the side lane is done; else its whole MSM now, over `bases` (`host`: its
    /// points when streamed) and the scalars `pick` takes from the witness.
    pub(super) fn sum<A: MsmAffine>(
        &self,
        stages: &mut Stages,
        keys: [&'static str; 2],
        (bases, host): (&Bases<A>, &[A]),
        split: (Option<SplitMsm<A>>, f32),
        pick: impl FnOnce(WitnessScalars<'_>) -> MsmScalars<'_>,
    ) -> Result<(A::Projective, f32), GpuError> {
        let gpu = self.gpu;
        if let (Some(msm), streamed_ms) = split {
            gpu.wait_for(self.side)?;
            let (sum, ms) = msm_counted(gpu, stages, keys, || msm.finish(gpu))?;
            return Ok((sum, ms + streamed_ms));
        }
        let scalars = self.s.map(pick).ok_or(GpuError::InvalidInput {
            what: "witness",
            reason: "a query after H's MSM has no witness on the device to read".to_owned(),
        })?;
        msm_counted(gpu, stages, keys, || bases.msm(gpu, scalars, host))
    }
}
