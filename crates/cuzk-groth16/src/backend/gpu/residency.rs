//! Where parameter sets' points live on a device, and which go when another needs the room.

use cuzk_gpu::fixed_base::{fixed_base_multiply_on_device, FixedBaseAffine};
use cuzk_gpu::msm::{
    least_working_memory, msm_device, msm_streamed, multiple_window_bits, DeviceBases, MsmAffine,
    MsmScalars,
};
use cuzk_gpu::{GpuError, HostLocked, Lane};
use cuzk_math::{FixedBaseTable, G1Affine, G2Affine, Scalar};
use group::prime::PrimeCurve;
use std::sync::{Arc, MutexGuard, PoisonError};

use crate::keys::QueryLengths;
use crate::Parameters;

use super::*;

/// Where one query's points live.
#[derive(Debug)]
pub(super) enum Bases<A> {
    Resident(DeviceBases<A>),
    /// In the parameters' own host vector (page-locked in place, see [`lock_in_host`]),
    /// copied through each MSM.
    Streamed,
}

impl<A: MsmAffine> Bases<A> {
    pub(super) fn place(gpu: &Lane, points: &[A], placement: Placement) -> Result<Self, GpuError> {
        Ok(match placement {
            Placement::Multiples(bits) => Bases::Resident(
                DeviceBases::upload_with_window_multiples(gpu, points, bits)?,
            ),
            Placement::Resident => Bases::Resident(DeviceBases::upload(gpu, points)?),
            Placement::Streamed => Bases::Streamed,
        })
    }

    /// `scalars[i] · G` on the device, for `table`'s generator G.
    pub(super) fn multiplied<G>(
        gpu: &Lane,
        table: &FixedBaseTable<G>,
        scalars: &[Scalar],
    ) -> Result<Self, GpuError>
    where
        G: PrimeCurve<Scalar = Scalar, Affine = A>,
        A: FixedBaseAffine + cuzk_math::msm::AffineCoordinates,
    {
        Ok(Bases::Resident(fixed_base_multiply_on_device(
            gpu,
            &table.entries(),
            table.window_bits() as u32,
            table.windows() as u32,
            scalars,
        )?))
    }

    pub(super) fn device_bytes(&self) -> usize {
        match self {
            Bases::Resident(bases) => bases.words().num_bytes(),
            Bases::Streamed => 0,
        }
    }

    /// Device bytes an MSM over the first n points allocates beyond the points and scalars.
    pub(super) fn working_memory(&self, n: usize) -> usize {
        match self {
            Bases::Resident(bases) => bases.working_memory(n),
            Bases::Streamed => least_working_memory::<A>(n, true),
        }
    }

    /// Σ scalars[i]·points[i]; `host` is the query's vector, read when the points are streamed.
    pub(super) fn msm<'s>(
        &self,
        gpu: &Lane,
        scalars: impl Into<MsmScalars<'s>>,
        host: &[A],
    ) -> Result<A::Projective, GpuError> {
        match self {
            Bases::Resident(bases) => msm_device(gpu, bases, scalars),
            Bases::Streamed => msm_streamed(gpu, host, scalars),
        }
    }
}

/// A parameter set's query points, placed for proving.
#[derive(Debug)]
pub(super) struct DeviceSrs {
    pub(super) key: SrsKey,
    /// Where each query is, by [`QUERIES`](super::plan::QUERIES).
    pub(super) queries: [Placement; 5],
    /// The plan it was placed by; `None` for queries made on the device (all resident).
    pub(super) plan: Option<Plan>,
    pub(super) h: Bases<G1Affine>,
    pub(super) l: Bases<G1Affine>,
    pub(super) a: Bases<G1Affine>,
    pub(super) b_g1: Bases<G1Affine>,
    pub(super) b_g2: Bases<G2Affine>,
}

impl DeviceSrs {
    /// Device bytes its points hold, window multiples included (0 when streamed).
    pub(super) fn device_bytes(&self) -> usize {
        self.h.device_bytes()
            + self.l.device_bytes()
            + self.a.device_bytes()
            + self.b_g1.device_bytes()
            + self.b_g2.device_bytes()
    }

    /// What [`ProverBackend::resident`] reports: its device bytes, `None` when every query is
    /// streamed.
    pub(super) fn resident_bytes(&self) -> Option<u64> {
        let any = self.queries.iter().any(|q| *q != Placement::Streamed);
        any.then(|| self.device_bytes() as u64)
    }

    pub(super) fn all_resident(&self) -> bool {
        !self.queries.contains(&Placement::Streamed)
    }
}

/// A set is kept on the device for proofs beside a region in progress (a WinningPoSt while a
/// PoRep partition holds the device) when its points and the working memory of such a proof take
/// at most this share of the device's budget together: 1/16, ~0.9 GiB of a 16 GiB card, where a
/// 32 GiB WinningPoSt's set and proof take ~0.5 GiB.
pub(super) const BESIDE_SHARE: usize = 16;

/// A placed set, the stamp of its last use, and, for a set kept for proofs beside a region, the
/// device bytes such a proof allocates.
#[derive(Debug)]
pub(super) struct CachedSet {
    pub(super) srs: Arc<DeviceSrs>,
    used: u64,
    beside: Option<usize>,
}

/// The placed parameter sets.
#[derive(Debug, Default)]
pub(super) struct SrsCache {
    pub(super) sets: Vec<CachedSet>,
    /// Advanced at every use: stamps order the sets by their last use.
    pub(super) clock: u64,
}

impl SrsCache {
    pub(super) fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The set of `key`, stamped as used now.
    pub(super) fn get(&mut self, key: &SrsKey) -> Option<Arc<DeviceSrs>> {
        let now = self.tick();
        let set = self.sets.iter_mut().find(|set| set.srs.key == *key)?;
        set.used = now;
        Some(set.srs.clone())
    }

    pub(super) fn find(&self, key: &SrsKey) -> Option<&Arc<DeviceSrs>> {
        self.sets
            .iter()
            .map(|set| &set.srs)
            .find(|srs| srs.key == *key)
    }

    pub(super) fn remove(&mut self, key: &SrsKey) -> Option<Arc<DeviceSrs>> {
        let i = self.sets.iter().position(|set| set.srs.key == *key)?;
        Some(self.sets.swap_remove(i).srs)
    }

    /// Adds a newly placed set; `beside`: the device bytes a proof with it beside a region
    /// allocates, when it is kept for such proofs.
    pub(super) fn insert(&mut self, srs: Arc<DeviceSrs>, beside: Option<usize>) {
        let used = self.tick();
        self.sets.push(CachedSet { srs, used, beside });
    }

    /// What the device holds back for proofs beside a region (see [`Lane::hold_back`]): the
    /// largest working memory of a kept set's proof, with its margin; 0 when none is kept.
    pub(super) fn held_back(&self) -> usize {
        self.sets
            .iter()
            .filter_map(|set| set.beside)
            .max()
            .map_or(0, |bytes| bytes + cuzk_gpu::MEMORY_MARGIN)
    }

    /// Device bytes the sets no proof uses hold, those kept for proofs beside a region with
    /// them: what evictions could release, the kept sets last (see [`SrsCache::stop_keeping`]).
    pub(super) fn evictable_bytes(&self) -> usize {
        self.sets
            .iter()
            .filter(|set| Arc::strong_count(&set.srs) == 1)
            .map(|set| set.srs.device_bytes())
            .sum()
    }

    /// Removes the least recently used sets no proof uses, those kept for proofs beside a
    /// region apart, until `needed` bytes fit in `free` and what they release (see
    /// [`evictions`]); removes none when that is not enough. Returns what it removed, to be
    /// dropped once the lock is released.
    pub(super) fn evict_for(&mut self, free: usize, needed: usize) -> Vec<Arc<DeviceSrs>> {
        let mut chosen = evictions(&self.occupants(), free, needed).unwrap_or_default();
        // From the back, so that each swap_remove leaves the lower indices in place.
        chosen.sort_unstable_by(|a, b| b.cmp(a));
        chosen
            .into_iter()
            .map(|i| self.sets.swap_remove(i).srs)
            .collect()
    }

    /// The sets as the choice of what to evict sees them: one kept for proofs beside a region
    /// as one in use.
    fn occupants(&self) -> Vec<Occupant> {
        self.sets
            .iter()
            .map(|set| Occupant {
                bytes: set.srs.device_bytes(),
                last_used: set.used,
                // Proofs take their clone under this cache's lock, which the caller holds.
                in_use: set.beside.is_some() || Arc::strong_count(&set.srs) > 1,
            })
            .collect()
    }

    /// No set is kept for proofs beside a region any more: those no proof uses go (returned, to
    /// be dropped once the lock is released), the others stay as ordinary sets. For a proof
    /// that fits the device only without them.
    pub(super) fn stop_keeping(&mut self) -> Vec<Arc<DeviceSrs>> {
        let mut released = Vec::new();
        let mut i = 0;
        while i < self.sets.len() {
            let set = &mut self.sets[i];
            if set.beside.take().is_some() && Arc::strong_count(&set.srs) == 1 {
                released.push(self.sets.swap_remove(i).srs);
            } else {
                i += 1;
            }
        }
        released
    }
}

/// A placed set as the choice of what to evict sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Occupant {
    /// Device bytes it would release.
    pub(super) bytes: usize,
    /// The stamp of its last use: lower is older.
    pub(super) last_used: u64,
    /// A proof holds it: never evicted.
    pub(super) in_use: bool,
}

/// The sets to evict, by index, so that `needed` bytes fit in `free` plus what they release: the
/// least recently used first, among those no proof uses that hold device memory, and no more than
/// needed. `None` when evicting all of those is not enough: then none is worth evicting.
pub(super) fn evictions(sets: &[Occupant], free: usize, needed: usize) -> Option<Vec<usize>> {
    let mut order: Vec<usize> = (0..sets.len())
        .filter(|&i| !sets[i].in_use && sets[i].bytes > 0)
        .collect();
    order.sort_by_key(|&i| sets[i].last_used);
    let mut available = free;
    let mut chosen = Vec::new();
    for i in order {
        if needed <= available {
            break;
        }
        available = available.saturating_add(sets[i].bytes);
        chosen.push(i);
    }
    (needed <= available).then_some(chosen)
}

/// What tells parameter sets apart cheaply: the query lengths, δ (random per setup) and the first
/// and last point of every query.
#[derive(Debug, PartialEq)]
pub(super) struct SrsKey {
    pub(super) lengths: [usize; 5],
    pub(super) delta: (G1Affine, G2Affine),
    pub(super) ends: Vec<Option<G1Affine>>,
    pub(super) b_g2_ends: (Option<G2Affine>, Option<G2Affine>),
}

impl SrsKey {
    pub(super) fn of(params: &Parameters) -> Self {
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

impl GpuBackend {
    pub(super) fn cache(&self) -> MutexGuard<'_, SrsCache> {
        self.srs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The parameter set's points on this device, placing them on first use as the most
    /// preferred [`Plan`] for `sizes` that fits what is free and what the least recently used
    /// sets no proof holds would release (evicted if it needs them). The caller holds `region`.
    pub(super) fn srs(
        &self,
        params: &Parameters,
        sizes: &ProofSizes,
        stages: &mut Stages,
    ) -> Result<Arc<DeviceSrs>, GpuError> {
        if let Some(queries) = self.placed_here(params)? {
            return Ok(Arc::clone(&queries.srs));
        }
        let key = SrsKey::of(params);
        if let Some(srs) = self.cache().get(&key) {
            return Ok(srs);
        }
        let multiples = self.multiples_for(params);
        // The plan as if nothing were kept for proofs beside a region: those give way to a
        // set's preferred plan (the memory held back sizes passes, not plans).
        let (free, _) = self.gpu.memory_beside()?;
        let room = (free + self.cache().evictable_bytes()).saturating_sub(cuzk_gpu::MEMORY_MARGIN);
        let plan = Plan::new(sizes, room, multiples, self.resident_cap).map_err(|refused| {
            GpuError::OutOfMemory {
                what: "a proof of this circuit (its smallest plan)",
                needed: refused.needed,
                free: refused.room,
                account: None,
            }
        })?;
        let needed = plan.peak_bytes + cuzk_gpu::MEMORY_MARGIN;
        let mut evicted = self.cache().evict_for(free, needed);
        if evicted.is_empty() && free < needed {
            // Not enough without the sets kept for proofs beside a region: they go first.
            let mut cache = self.cache();
            let kept = cache.stop_keeping();
            let freed: usize = kept.iter().map(|srs| srs.device_bytes()).sum();
            evicted.extend(cache.evict_for(free + freed, needed));
            evicted.extend(kept);
            self.gpu.hold_back(cache.held_back());
        }
        if !evicted.is_empty() {
            drop(evicted);
            // Their memory is freed in the device stream's order: measure once it is.
            self.gpu.synchronize()?;
        }
        if !plan.all_resident() {
            let locked = lock_in_host(params, &self.gpu);
            stages.push("srs_host_locked", if locked { 1.0 } else { 0.0 });
        }
        let gpu = &self.gpu;
        let start = std::time::Instant::now();
        let [h, l, a, b_g1, b_g2] = plan.queries;
        let srs = Arc::new(DeviceSrs {
            key,
            queries: plan.queries,
            plan: Some(plan),
            h: Bases::place(gpu, &params.h, h)?,
            l: Bases::place(gpu, &params.l, l)?,
            a: Bases::place(gpu, &params.a, a)?,
            b_g1: Bases::place(gpu, &params.b_g1, b_g1)?,
            b_g2: Bases::place(gpu, &params.b_g2, b_g2)?,
        });
        // Cached once placed: a proof beside the region may read it from other streams.
        gpu.synchronize()?;
        stages.push("srs_place_ms", start.elapsed().as_secs_f64() * 1e3);
        stages.push("srs_bytes", plan.resident_bytes as f64);
        let beside = self.beside_bytes(sizes, &srs);
        let mut cache = self.cache();
        cache.insert(srs.clone(), beside);
        self.gpu.hold_back(cache.held_back());
        Ok(srs)
    }

    /// The device bytes a proof with `srs` allocates beside a region in progress, when the set
    /// is worth keeping for such proofs: every query resident, and the set and that proof
    /// within [`BESIDE_SHARE`] of the device's budget.
    fn beside_bytes(&self, sizes: &ProofSizes, srs: &DeviceSrs) -> Option<usize> {
        if !srs.all_resident() {
            return None;
        }
        let working = [Products::ResidentMatrices, Products::Host]
            .into_iter()
            .map(|products| {
                Plan::of(sizes, srs.queries, Program::SideBySide, products).working_bytes
            })
            .max()?;
        let whole = srs.device_bytes() + working + cuzk_gpu::MEMORY_MARGIN;
        (whole <= self.gpu.budget() / BESIDE_SHARE).then_some(working)
    }

    /// The window width `params`' queries may be stored with multiples of: sets whose longest
    /// query has at least [`GpuBackend::window_multiples_from`] points.
    pub(super) fn multiples_for(&self, params: &Parameters) -> Option<u32> {
        self.multiples_for_lengths(params.lengths())
    }

    /// As [`GpuBackend::multiples_for`], from the queries' lengths.
    pub(super) fn multiples_for_lengths(&self, l: QueryLengths) -> Option<u32> {
        let longest = [l.h, l.l, l.a, l.b_g1, l.b_g2]
            .into_iter()
            .max()
            .unwrap_or(0);
        (longest >= self.multiples_from).then(|| multiple_window_bits(longest))
    }
}

/// Page-locks `params`' query vectors where they are, once, for devices that stream them: their
/// copies then overlap the MSMs, and no second copy of the set is made (47 GB at 32 GiB). Whether
/// they are locked; if the driver refuses (e.g. small vectors sharing pages with other locked
/// memory), they stream from pageable memory, correctly but slower. The locks live as the
/// parameters' attachment, released before their vectors are freed.
fn lock_in_host(params: &Parameters, gpu: &Lane) -> bool {
    let locks = params.attachment(|| -> Option<Vec<HostLocked>> {
        let mut locks = Vec::new();
        for query in [&params.h, &params.l, &params.a, &params.b_g1] {
            if !query.is_empty() {
                locks.push(HostLocked::new(gpu, query).ok()?);
            }
        }
        if !params.b_g2.is_empty() {
            locks.push(HostLocked::new(gpu, &params.b_g2).ok()?);
        }
        Some(locks)
    });
    matches!(locks, Some(Some(_)))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use cuzk_math::{G1Affine, G2Affine};
    use group::prime::PrimeCurveAffine;

    use super::{evictions, Bases, DeviceSrs, Occupant, Placement, SrsCache, SrsKey};

    fn key(n: usize) -> SrsKey {
        SrsKey {
            lengths: [n; 5],
            delta: (G1Affine::generator(), G2Affine::generator()),
            ends: Vec::new(),
            b_g2_ends: (None, None),
        }
    }

    /// A set of `n` points per query, every query streamed (no device needed).
    fn streamed(n: usize) -> Arc<DeviceSrs> {
        Arc::new(DeviceSrs {
            key: key(n),
            queries: [Placement::Streamed; 5],
            plan: None,
            h: Bases::Streamed,
            l: Bases::Streamed,
            a: Bases::Streamed,
            b_g1: Bases::Streamed,
            b_g2: Bases::Streamed,
        })
    }

    #[test]
    fn sets_kept_for_proofs_beside_a_region_stay_until_a_proof_needs_their_room() {
        let margin = cuzk_gpu::MEMORY_MARGIN;
        let mut cache = SrsCache::default();
        let (small, held, big) = (streamed(1), streamed(2), streamed(3));
        cache.insert(small.clone(), Some(100 << 20));
        cache.insert(held.clone(), Some(300 << 20));
        cache.insert(big.clone(), None);
        assert_eq!(cache.held_back(), (300 << 20) + margin);
        drop((small, big));
        let in_use: Vec<bool> = cache.occupants().iter().map(|o| o.in_use).collect();
        // Kept sets count as in use; `held` is also held by this test, as by a proof.
        assert_eq!(in_use, [true, true, false]);

        let released = cache.stop_keeping();
        assert_eq!(released.len(), 1, "the kept set no proof uses goes");
        assert!(released[0].key == key(1));
        assert_eq!(cache.held_back(), 0);
        // The one in use stays, now an ordinary set, and the big one is untouched.
        assert!(cache.find(&key(2)).is_some() && cache.find(&key(3)).is_some());
        drop(held);
        assert!(cache.occupants().iter().all(|o| !o.in_use));
    }

    fn set(bytes: usize, last_used: u64, in_use: bool) -> Occupant {
        Occupant {
            bytes,
            last_used,
            in_use,
        }
    }

    #[test]
    fn evicts_nothing_when_the_set_fits() {
        let sets = [set(100, 1, false), set(100, 2, false)];
        assert_eq!(evictions(&sets, 50, 50), Some(vec![]));
        assert_eq!(evictions(&[], 50, 50), Some(vec![]));
    }

    #[test]
    fn evicts_the_least_recently_used_first_and_no_more_than_needed() {
        let sets = [set(100, 7, false), set(100, 3, false), set(100, 5, false)];
        assert_eq!(evictions(&sets, 50, 150), Some(vec![1]));
        assert_eq!(evictions(&sets, 50, 250), Some(vec![1, 2]));
        assert_eq!(evictions(&sets, 50, 350), Some(vec![1, 2, 0]));
    }

    #[test]
    fn never_evicts_a_set_in_use() {
        let sets = [set(100, 1, true), set(100, 2, false)];
        assert_eq!(evictions(&sets, 0, 100), Some(vec![1]));
        // The in-use set's memory would be needed too: evicting the other would not make room.
        assert_eq!(evictions(&sets, 0, 150), None);
    }

    #[test]
    fn skips_sets_that_hold_no_device_memory() {
        // A streamed set (0 device bytes) is older, but evicting it frees nothing.
        let sets = [set(0, 1, false), set(100, 2, false)];
        assert_eq!(evictions(&sets, 0, 100), Some(vec![1]));
    }

    #[test]
    fn evicts_nothing_when_even_all_idle_sets_are_not_enough() {
        let sets = [set(100, 1, false), set(100, 2, false)];
        assert_eq!(evictions(&sets, 10, 211), None);
        assert_eq!(evictions(&sets, 10, 210), Some(vec![0, 1]));
        assert_eq!(evictions(&sets, usize::MAX, usize::MAX), Some(vec![]));
    }
}
