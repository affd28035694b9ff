//! The device work of one proof.

use cuzk_gpu::ntt::{ab_minus_c, minus_scaled, mul_assign, ntt, NttOrder, NttTables, Transform};
use cuzk_gpu::{DeviceScalars, GpuError, Lane};
use cuzk_math::{G1Projective, G2Projective, Scalar};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::QuerySums;

use super::beside::{After, Beside};
use super::stages::{msm_counted, push_copy_wait, Stages};
use super::*;

/// What a proof's device work reads besides its own data: made once per circuit (or parameter
/// set, or domain size) and kept on the device.
pub(super) struct Placed {
    pub(super) tables: Arc<NttTables>,
    pub(super) srs: Arc<DeviceSrs>,
    /// The circuit's matrices, when the device computes a, b and c.
    pub(super) matrices: Option<Matrices>,
    pub(super) index: Arc<QueryIndex>,
}

/// Streams of one proof's device work: the main one (uploads, gathers) and five lanes, H's chain
/// first.
#[derive(Debug)]
pub(super) struct Streams {
    pub(super) main: Arc<Lane>,
    pub(super) lanes: [Arc<Lane>; 5],
}

impl Streams {
    pub(super) fn synchronize(&self) -> Result<(), GpuError> {
        std::iter::once(&self.main)
            .chain(&self.lanes)
            .try_for_each(|gpu| gpu.synchronize())
    }
}

impl GpuBackend {
    /// One proof's device work on `streams`: the witness and its four MSMs first, H beside them
    /// when every query is resident and their work buffers fit together, else one step at a time
    /// ([`Self::one_at_a_time`]). `reserve`: grow the memory pool for the MSMs side by side first
    /// (see [`Lane::reserve_pool`]).
    pub(super) fn run(
        &self,
        streams: &Streams,
        placed: &Placed,
        params: &Parameters,
        p: &mut Prepared,
        stages: &mut Stages,
        reserve: bool,
    ) -> Result<QuerySums, GpuError> {
        let gpu = &*streams.main;
        let Placed {
            tables,
            srs,
            matrices,
            index,
        } = placed;
        let resident = srs.all_resident();
        stages.push("srs_resident", if resident { 1.0 } else { 0.0 });
        let streamed = srs.queries.iter().filter(|q| **q == Placement::Streamed);
        stages.push("srs_streamed_queries", streamed.count() as f64);
        let window_bits = match srs.queries[0] {
            Placement::Multiples(bits) => f64::from(bits),
            _ => 0.0,
        };
        stages.push("srs_window_bits", window_bits);
        if !resident {
            stages.push("msm_side_by_side", 0.0);
            return Self::one_at_a_time(gpu, placed, params, p, stages);
        }
        let n = 1usize << p.log_n;
        let witness = stages.time(gpu, "h2d_witness_ms", || p.upload_witness(gpu))?;
        let scalars = WitnessScalars::of(&witness, index, p.inputs)?;
        let scalar_bytes = std::mem::size_of::<Scalar>();
        let uploaded = p.witness_offset() + p.staged_witness();
        stages.push("h2d_bytes", (scalar_bytes * uploaded) as f64);
        // Side by side: every MSM's work buffers and H's three vectors at once.
        let together = srs.h.working_memory(n)
            + srs.l.working_memory(scalars.l.len())
            + srs.a.working_memory(scalars.a.len())
            + srs.b_g1.working_memory(scalars.b.len())
            + srs.b_g2.working_memory(scalars.b.len())
            + 3 * n * scalar_bytes;
        let free = gpu.memory()?.0;
        let side_by_side = resident && together + cuzk_gpu::MEMORY_MARGIN <= free;
        stages.push("msm_side_by_side", if side_by_side { 1.0 } else { 0.0 });
        if reserve && side_by_side && together > self.pool_reserved.load(Ordering::Relaxed) {
            // Once per size: the five lanes never reuse one another's freed memory (see `Lane`), so
            // the pool must hold all their buffers at once, with room for how they interleave;
            // grown in the middle of proofs instead, it slows the first proofs. Best effort:
            // `free` counts what the pool holds unused, which it cannot hand out as one block with
            // new memory (asking for nearly all of it fails), so a smaller block is tried, then
            // none: the lanes then grow the pool as they go
            // (measured: docs/performance.md, "Why the code is as it is").
            let bytes = (2 * together).min(free - cuzk_gpu::MEMORY_MARGIN);
            let reserved = [bytes, together]
                .into_iter()
                .any(|bytes| gpu.reserve_pool(bytes).is_ok());
            stages.push("pool_reserved", if reserved { 1.0 } else { 0.0 });
            self.pool_reserved.fetch_max(together, Ordering::Relaxed);
        }
        let start = std::time::Instant::now();
        let sums = if side_by_side {
            // The lanes read what the main stream gathered.
            for lane in &streams.lanes {
                lane.wait_for(gpu)?;
            }
            let [h_lane, l, a, b_g1, b_g2] = &streams.lanes;
            let s = scalars;
            // The H lane reads the witness when a, b and c are its products.
            let products = matrices.as_ref().map(|matrices| (matrices, &witness));
            std::thread::scope(|scope| {
                let l = scope.spawn(|| l.time(|| srs.l.msm(l, s.l, &params.l)));
                let a = scope.spawn(|| a.time(|| srs.a.msm(a, s.a, &params.a)));
                let b_g1 = scope.spawn(|| b_g1.time(|| srs.b_g1.msm(b_g1, s.b, &params.b_g1)));
                let b_g2 = scope.spawn(|| b_g2.time(|| srs.b_g2.msm(b_g2, s.b, &params.b_g2)));
                // H's chain is the longest: on the lane the device schedules first.
                let h = Self::h_coefficients(h_lane, tables, p, products, stages)
                    .and_then(|h| h_lane.time(|| srs.h.msm(h_lane, &h, &params.h)));
                query_sums(stages, h, joined(l), joined(a), joined(b_g1), joined(b_g2))
            })
        } else {
            drop(witness);
            Self::one_at_a_time(gpu, placed, params, p, stages)
        };
        stages.push("msm_ms", start.elapsed().as_secs_f64() * 1e3);
        sums
    }

    /// H's n − 1 coefficients on the device: a, b and c uploaded from the staging buffer, or the
    /// matrices' products with the witness already there (`products`), then transformed.
    pub(super) fn h_coefficients(
        gpu: &Lane,
        tables: &NttTables,
        p: &Prepared,
        products: Option<(&Matrices, &DeviceScalars)>,
        stages: &mut Stages,
    ) -> Result<DeviceScalars, GpuError> {
        let [mut h, mut db, mut dc] = stages.time(gpu, vectors_key(products), || {
            Ok([
                h_vector(gpu, p, products, 0)?,
                h_vector(gpu, p, products, 1)?,
                h_vector(gpu, p, products, 2)?,
            ])
        })?;
        stages.time(gpu, "ntt_ms", || {
            for values in [&mut h, &mut db, &mut dc] {
                to_coset(gpu, tables, values)?;
            }
            ab_minus_c(gpu, &mut h, &db, &dc, p.z_inv)?;
            from_coset(gpu, tables, h)
        })
    }

    /// As [`Self::h_coefficients`] with two vectors of the domain on the device at a time:
    /// a∘b, then c in b's place — or, from the host, in a third vector when one fits beside
    /// them. From the host, each vector's copy is queued on the copy stream before the transforms
    /// ahead of it, which it overlaps (one after another they left the device idle for each copy);
    /// made on the device, b's product runs on the side lane beside a's transforms (streamed
    /// matrices' copies bound it).
    fn h_from_two_vectors(
        gpu: &Lane,
        tables: &NttTables,
        p: &Prepared,
        products: Option<(&Matrices, &DeviceScalars)>,
        stages: &mut Stages,
    ) -> Result<DeviceScalars, GpuError> {
        let n = 1usize << p.log_n;
        // Vector m of a, b, c, and when it is there: copied on the copy stream, or the matrix's
        // product made on the main stream now.
        let vector = |m: usize| match products {
            None => DeviceScalars::upload_pinned_range_ahead(gpu, &p.staging, m * n, (m + 1) * n),
            Some(_) => {
                let (values, timing) = gpu.timed(|| h_vector(gpu, p, products, m))?;
                Ok((values, timing.into()))
            }
        };
        let mut made = Vec::with_capacity(3);
        let h = stages.time(gpu, "h_two_vectors_ms", || {
            let (mut h, h_made) = vector(0)?;
            made.push(h_made.wait(gpu)?);
            let (mut b, b_made) = match products {
                None => {
                    let ahead = vector(1)?;
                    to_coset(gpu, tables, &mut h)?;
                    ahead
                }
                Some((matrices, z)) => {
                    // b's memory from the main stream, which reads and frees it (freed on the
                    // lane, it could be reused before the main stream has read it); the side
                    // lane waits for that and the witness, not for a's transforms, queued next
                    // so that they run while the host drives b's product.
                    let side = gpu.side_lane()?;
                    let mut values = DeviceScalars::zeros(gpu, n)?;
                    side.wait_for(gpu)?;
                    to_coset(gpu, tables, &mut h)?;
                    let timing = side.timed(|| matrices.multiply(side, 1, z, &mut values))?.1;
                    (values, timing.into())
                }
            };
            let room = gpu.memory()?.0;
            let third = n * std::mem::size_of::<Scalar>() + cuzk_gpu::MEMORY_MARGIN <= room;
            let c_ahead = match products.is_none() && third {
                true => Some(vector(2)?),
                false => None,
            };
            made.push(b_made.wait(gpu)?);
            to_coset(gpu, tables, &mut b)?;
            mul_assign(gpu, &mut h, &b)?;
            let (mut c, c_made) = match (c_ahead, products) {
                (Some(ahead), _) => {
                    drop(b);
                    ahead
                }
                (None, None) => {
                    let copied = b.refill_pinned_ahead(gpu, &p.staging, 2 * n)?;
                    (b, copied)
                }
                (None, Some(_)) => {
                    drop(b);
                    vector(2)?
                }
            };
            made.push(c_made.wait(gpu)?);
            to_coset(gpu, tables, &mut c)?;
            minus_scaled(gpu, &mut h, &c, p.z_inv)?;
            drop(c);
            from_coset(gpu, tables, h)
        })?;
        let key = vectors_key(products);
        stages
            .pending
            .extend(made.into_iter().map(|timing| (key, timing)));
        Ok(h)
    }

    /// The device work of a proof short of memory: H first, from two vectors at a time, and its
    /// MSM; then the witness, each gather and its MSMs in turn, L's scalars last (the witness
    /// itself, its inputs dropped). The streamed queries whose scalars are mostly 0 or 1 copy
    /// their points beside H's MSM when the witness is on the device before it ([`Beside`]);
    /// otherwise nothing overlaps but each streamed MSM's copies and sums (and streamed
    /// matrices' copies and products).
    fn one_at_a_time(
        gpu: &Lane,
        placed: &Placed,
        params: &Parameters,
        p: &mut Prepared,
        stages: &mut Stages,
    ) -> Result<QuerySums, GpuError> {
        let Placed {
            tables,
            srs,
            matrices,
            index,
        } = placed;
        let start = std::time::Instant::now();
        let upload_witness =
            |stages: &mut Stages| stages.time(gpu, "h2d_witness_ms", || p.upload_witness(gpu));
        // With the matrices, the witness goes up first for the products.
        let mut witness = match matrices {
            Some(_) => Some(upload_witness(stages)?),
            None => None,
        };
        let mut uploads = usize::from(witness.is_some());
        let side = gpu.side_lane()?;
        // H's coefficients freed once summed: the steps after it have their room. Where it is not
        // needed for the products, the witness comes after: beside H's MSM it would take room
        // from a streamed MSM's passes, and its copy could not start before H's transforms end
        // (it joins the main stream). After the products it stays only where that costs nothing
        // or its upload is dear: H's points resident, or the witness dense (a packed one goes up
        // again in milliseconds). With it there, the streamed queries of mostly 0/1 scalars
        // stream beside H's MSM ([`Beside`]).
        let (h, beside) = {
            let products = matrices.as_ref().zip(witness.as_ref());
            let coefficients = Self::h_from_two_vectors(gpu, tables, p, products, stages)?;
            let keep = keeps_witness_through_h(placed, p);
            let beside = match &witness {
                Some(witness) => {
                    let s = WitnessScalars::of(witness, index, p.inputs)?;
                    let freed = match keep {
                        true => 0,
                        false => witness.len() * std::mem::size_of::<Scalar>(),
                    };
                    let h_needs = srs.h.working_memory(coefficients.len());
                    Beside::of(gpu, side, srs, s, h_needs, freed)?
                }
                None => None,
            };
            if !keep {
                witness = None;
            }
            stages.push(
                "msm_beside_queries",
                beside.as_ref().map_or(0, Beside::count) as f64,
            );
            // What each lane's streamed passes wait for their points (earlier proofs' cleared).
            gpu.take_copy_wait_ms()?;
            let h_msm = |stages: &mut Stages| {
                let h = msm_counted(gpu, stages, ["msm_h_passes", "msm_h_room_bytes"], || {
                    srs.h.msm(gpu, &coefficients, &params.h)
                });
                push_copy_wait(stages, "msm_h_copy_wait_ms", gpu)?;
                h
            };
            match beside {
                Some(mut beside) => {
                    side.take_copy_wait_ms()?;
                    let (h, streamed) = std::thread::scope(|scope| {
                        let streaming = scope.spawn(|| beside.stream(side, params));
                        let h = h_msm(stages);
                        (h, joined(streaming))
                    });
                    streamed?;
                    push_copy_wait(stages, "msm_beside_copy_wait_ms", side)?;
                    (h, Some(beside))
                }
                None => (h_msm(stages), None),
            }
        };
        let all_beside = beside.as_ref().is_some_and(Beside::all);
        let witness = match witness {
            Some(witness) => Some(witness),
            None if all_beside => None,
            None => {
                uploads += 1;
                Some(upload_witness(stages)?)
            }
        };
        // A and B read the witness through their positions, L its tail: no gathered copies.
        let s = witness
            .as_ref()
            .map(|witness| WitnessScalars::of(witness, index, p.inputs))
            .transpose()?;
        let beside = beside.map(Beside::into_queries).unwrap_or_default();
        let after = After { gpu, side, s };
        let a = after.sum(
            stages,
            ["msm_a_passes", "msm_a_room_bytes"],
            (&srs.a, &params.a),
            beside.a,
            |s| s.a,
        );
        let b_g1 = after.sum(
            stages,
            ["msm_b_g1_passes", "msm_b_g1_room_bytes"],
            (&srs.b_g1, &params.b_g1),
            beside.b_g1,
            |s| s.b,
        );
        let b_g2 = after.sum(
            stages,
            ["msm_b_g2_passes", "msm_b_g2_room_bytes"],
            (&srs.b_g2, &params.b_g2),
            beside.b_g2,
            |s| s.b,
        );
        let l = after.sum(
            stages,
            ["msm_l_passes", "msm_l_room_bytes"],
            (&srs.l, &params.l),
            beside.l,
            |s| s.l,
        );
        stages.push(
            "h2d_bytes",
            (std::mem::size_of::<Scalar>() * (p.witness_offset() + uploads * p.staged_witness()))
                as f64,
        );
        let sums = query_sums(stages, h, l, a, b_g1, b_g2);
        stages.push("msm_ms", start.elapsed().as_secs_f64() * 1e3);
        sums
    }
}

/// Whether a proof run one step at a time keeps the witness it uploaded for the products through
/// H's MSM (see [`GpuBackend::one_at_a_time`]): with the matrices resident (streamed ones' room
/// goes to H's passes as it is), where H's points are resident too or the witness is dense. The
/// plans count it as kept ([`Plan::of`]), the larger need.
fn keeps_witness_through_h(placed: &Placed, p: &Prepared) -> bool {
    let resident_matrices =
        placed.matrices.as_ref().map(Matrices::products) == Some(Products::ResidentMatrices);
    let [h, ..] = placed.srs.queries;
    resident_matrices && !(h == Placement::Streamed && p.packed.is_some())
}

/// The five MSMs' results (each with its device time, which overlap when side by side), recorded
/// as stages.
pub(super) fn query_sums(
    stages: &mut Stages,
    h: Result<(G1Projective, f32), GpuError>,
    l: Result<(G1Projective, f32), GpuError>,
    a: Result<(G1Projective, f32), GpuError>,
    b_g1: Result<(G1Projective, f32), GpuError>,
    b_g2: Result<(G2Projective, f32), GpuError>,
) -> Result<QuerySums, GpuError> {
    Ok(QuerySums {
        h: stages.record("msm_h_ms", h)?,
        l: stages.record("msm_l_ms", l)?,
        a: stages.record("msm_a_ms", a)?,
        b_g1: stages.record("msm_b_g1_ms", b_g1)?,
        b_g2: stages.record("msm_b_g2_ms", b_g2)?,
    })
}

/// A scoped thread's result; its panic goes on in the joining thread.
pub(super) fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The stage a, b and c are timed under: made on the device, or uploaded.
fn vectors_key(products: Option<(&Matrices, &DeviceScalars)>) -> &'static str {
    match products {
        Some(_) => "products_ms",
        None => "h2d_abc_ms",
    }
}

/// Vector `m` of a, b, c (n values): from the staging buffer, or the product of matrix `m` with
/// the witness on the device (zero past the rows: the NTTs' padding).
fn h_vector(
    gpu: &Lane,
    p: &Prepared,
    products: Option<(&Matrices, &DeviceScalars)>,
    m: usize,
) -> Result<DeviceScalars, GpuError> {
    let n = 1usize << p.log_n;
    match products {
        Some((matrices, z)) => {
            let mut out = DeviceScalars::zeros(gpu, n)?;
            matrices.multiply(gpu, m, z, &mut out)?;
            Ok(out)
        }
        None => DeviceScalars::upload_pinned_range(gpu, &p.staging, m * n, (m + 1) * n),
    }
}

/// Values of a polynomial (natural order) → its evaluations on the coset (natural order).
fn to_coset(gpu: &Lane, tables: &NttTables, values: &mut DeviceScalars) -> Result<(), GpuError> {
    ntt(
        gpu,
        tables,
        values,
        Transform::intt(NttOrder::NaturalToBitReversed),
    )?;
    ntt(
        gpu,
        tables,
        values,
        Transform::coset_ntt(NttOrder::BitReversedToNatural),
    )
}

/// The quotient's evaluations on the coset → H's n − 1 coefficients (the top one is zero).
fn from_coset(
    gpu: &Lane,
    tables: &NttTables,
    mut h: DeviceScalars,
) -> Result<DeviceScalars, GpuError> {
    ntt(
        gpu,
        tables,
        &mut h,
        Transform::coset_intt(NttOrder::NaturalToNatural),
    )?;
    h.truncate(h.len() - 1);
    Ok(h)
}
