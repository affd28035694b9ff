// Batch-affine pair rounds: the bulk of the bucket accumulation in affine coordinates.
//
// A round halves every bucket: output slot j of bucket b is the sum of its input points 2j and
// 2j + 1 (or point 2j alone when the count is odd), so out_offsets[b] = Σ ⌈count/2⌉ (the chunk
// counts of chunk 2, scanned). An affine addition costs λ = Δy/Δx, λ² and y₃ (three products)
// once 1/Δx is known, against ten products for a mixed XYZZ addition; the inversions are shared
// by Montgomery's trick at two levels, so one inversion serves PAIRS · TOTALS additions:
//
//   prefix   one thread per PAIRS slots, 32 apart (a warp's threads interleaved over 32·PAIRS
//            consecutive slots): running products of their denominators, each stored
//            (prefix[i·stride + t], coalesced over a warp), the last one its total
//   invert   one thread per up to TOTALS thread totals: their running products, one inversion,
//            then each total's inverse in place of the total. The share shrinks with the round
//            (see invert_share) so that small rounds still spread over many threads
//   sums     the prefix threads again, slots backwards: 1/Δx from the running inverse and the
//            stored prefix, the sum written to the output
//
// Per addition: 1 + 2 products for the trick, 3 for the sum, ~0.6 for the second level and the
// inversion: ~6.6 against 10. Rounds read their points twice (prefix and sums) and write them
// once, so they run while buckets are large; the few points left per bucket go on to the chunked
// XYZZ accumulation (pippenger.cuh), which also takes the round's output as its point source.
#pragma once

#include "msm/pippenger.cuh"

namespace cuzk {

// Output slots per prefix/sums thread, and thread totals per inversion thread at most.
constexpr uint32_t PAIRS_PER_THREAD = 16;
constexpr uint32_t TOTALS_PER_THREAD = 64;
// A warp's threads take WARP_SLOTS consecutive output slots, interleaved: lane l of warp w takes
// slots w·WARP_SLOTS + 32i + l (i < PAIRS_PER_THREAD), so that at each step the warp reads and
// writes 32 neighbouring slots' points instead of 32 slots PAIRS_PER_THREAD apart.
constexpr uint32_t WARP_SLOTS = 32 * PAIRS_PER_THREAD;

// Prefix/sums threads with at least one of a round's `total` output slots: every lane of the full
// warps, and the lanes below the last warp's slot count.
__device__ __forceinline__ uint32_t round_threads(uint32_t total) {
    return total / WARP_SLOTS * 32 + min(32u, total % WARP_SLOTS);
}

// Thread t's first slot (see WARP_SLOTS); its others follow 32 apart.
__device__ __forceinline__ uint32_t first_slot(uint32_t t) { return t / 32 * WARP_SLOTS + t % 32; }

// Slots first + 32i below `total`, at most PAIRS_PER_THREAD.
__device__ __forceinline__ uint32_t slot_count(uint32_t first, uint32_t total) {
    return min(PAIRS_PER_THREAD, (total - first + 31) / 32);
}
// Inversion threads a round keeps busy before a thread takes more than one total. A thread's chain
// is 3·share products and one inversion, so small rounds want short chains and large ones few
// inversions. H200, G1 MSM 2^20 / 2^24 / 2^26:
// always 64 totals 10.4 / 104.9 / 412 ms; 2^14 threads 9.9 / 103.7 / 405.5; 2^16 10.4 / 105.0 /
// 410; 2^18 11.6 / 112.4 / 441 (the 90%-boolean prover at 2^22: 95.4, 91.4, 96.8, 100.2 ms).
constexpr uint32_t INVERT_THREADS = 1u << 14;

// Thread totals per inversion thread for a round with `totals` of them: as few as keeps
// INVERT_THREADS busy, from 1 to TOTALS_PER_THREAD.
__device__ __forceinline__ uint32_t invert_share(uint32_t totals) {
    return min(TOTALS_PER_THREAD, max(1u, totals / INVERT_THREADS));
}

// Set on a slot's input position when the slot has two input points.
constexpr uint32_t SLOT_PAIR = 0x80000000u;

// The input positions of a round's output slots, for one thread's consecutive slots walked
// forwards (next) or backwards (previous) from the slot it starts at.
//
// A step to the next slot's bucket gallops (1, 2, 4, … buckets, then a binary search) instead of
// stepping one bucket at a time: between two slots there may be every bucket of several windows,
// empty. A PoRep witness is all 0/1 but a few scalars, so one bucket holds nearly every entry
// and the few others lie ~2^19 empty buckets away: the thread whose slots crossed that gap walked
// it bucket by bucket, in each round's two passes (H100, 2^20-point passes: 200 ms instead of 2).
struct slot_walk {
    const uint32_t *in_offsets, *out_offsets;
    uint32_t buckets, bucket;

    __device__ __forceinline__ slot_walk(const uint32_t* in, const uint32_t* out, uint32_t buckets,
                                         uint32_t start)
        : in_offsets(in), out_offsets(out), buckets(buckets), bucket(bucket_of_chunk(out, buckets, start)) {}

    // Slot o's first input position, with SLOT_PAIR when the next one is its partner; o at or
    // after the current bucket's first slot.
    __device__ __forceinline__ uint32_t next(uint32_t o) {
        if (out_offsets[bucket + 1] <= o) {
            // out_offsets[lo] ≤ o < out_offsets[hi] (out_offsets[buckets], the total, is > o).
            uint32_t lo = bucket + 1, hi = buckets;
            for (uint32_t step = 1; lo + step < buckets; step *= 2) {
                if (out_offsets[lo + step] > o) {
                    hi = lo + step;
                    break;
                }
                lo += step;
            }
            bucket = search(lo, hi, o);
        }
        return position(o);
    }
    // As next, for o before the current bucket's end.
    __device__ __forceinline__ uint32_t previous(uint32_t o) {
        if (out_offsets[bucket] > o) {
            // out_offsets[lo] ≤ o < out_offsets[hi] (out_offsets[0] = 0 ≤ o).
            uint32_t lo = 0, hi = bucket;
            for (uint32_t step = 1; step < hi; step *= 2) {
                if (out_offsets[hi - step] <= o) {
                    lo = hi - step;
                    break;
                }
                hi -= step;
            }
            bucket = search(lo, hi, o);
        }
        return position(o);
    }
    // The bucket of slot o, given out_offsets[lo] ≤ o < out_offsets[hi].
    __device__ __forceinline__ uint32_t search(uint32_t lo, uint32_t hi, uint32_t o) const {
        while (hi - lo > 1) {
            const uint32_t mid = (lo + hi) / 2;
            if (out_offsets[mid] <= o) lo = mid; else hi = mid;
        }
        return lo;
    }
    __device__ __forceinline__ uint32_t position(uint32_t o) const {
        const uint32_t at = in_offsets[bucket] + 2 * (o - out_offsets[bucket]);
        return at | (at + 1 < in_offsets[bucket + 1] ? SLOT_PAIR : 0);
    }
};

// The denominator of a slot's addition (see pair_sum), reading y only where x cannot decide:
// the first pass needs nothing else, and x is half of a point's bytes.
template <class F>
__device__ __forceinline__ F pair_denominator(const point_source<F>& points, uint32_t slot) {
    if (!(slot & SLOT_PAIR)) return F::one();
    const uint32_t at = slot & ~SLOT_PAIR;
    const F px = points.x_at(at), qx = points.x_at(at + 1);
    // The identity is (0, 0): only a zero x needs its y looked at.
    if (qx.is_zero() && points.y_at(at + 1).is_zero()) return F::one();
    if (px.is_zero() && points.y_at(at).is_zero()) return F::one();
    if (px != qx) return qx - px;
    const F py = points.y_at(at);
    return py == points.y_at(at + 1) && !py.is_zero() ? py.dbl() : F::one();
}

// One slot's addition p + q, set up so that its sum needs only 1/den.
template <class F>
struct pair_sum {
    enum kind_t : uint32_t { KEEP, CHORD, TANGENT };
    affine_t<F> p, q;
    F den;  // one for KEEP, whose result is p
    kind_t kind;

    __device__ __forceinline__ static pair_sum of(const point_source<F>& points, uint32_t slot) {
        pair_sum s;
        s.p = points.at(slot & ~SLOT_PAIR);
        s.den = F::one();
        s.kind = KEEP;
        if (!(slot & SLOT_PAIR)) return s;
        s.q = points.at((slot & ~SLOT_PAIR) + 1);
        if (s.q.is_identity()) return s;
        if (s.p.is_identity()) {
            s.p = s.q;
        } else if (s.p.x != s.q.x) {
            s.den = s.q.x - s.p.x;
            s.kind = CHORD;
        } else if (s.p.y == s.q.y && !s.p.y.is_zero()) {
            s.den = s.p.y.dbl();
            s.kind = TANGENT;
        } else {
            s.p = {F::zero(), F::zero()};  // q = −p
        }
        return s;
    }

    __device__ __forceinline__ affine_t<F> sum(const F& den_inverse) const {
        if (kind == KEEP) return p;
        F num;
        if (kind == CHORD) {
            num = q.y - p.y;
        } else {
            const F xx = p.x.sqr();
            num = xx.dbl() + xx;
        }
        const F lambda = num * den_inverse;
        const F x3 = lambda.sqr() - p.x - q.x;  // q.x = p.x for a tangent
        return {x3, lambda * (p.x - x3) - p.y};
    }
};

}  // namespace cuzk

// to[i] = from[i] + to[0] for i ≤ count: a group's offsets moved to where its points were written,
// after the previous group's (to[0] is that group's end; thread 0 rewrites it unchanged, as
// from[0] = 0, so every thread reads the same base whenever it reads it).
extern "C" __global__ void msm_offsets_shift(const uint32_t* from, uint32_t count, uint32_t* to) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= count) to[i] = from[i] + to[0];
}

#define MSM_PAIR_KERNELS(SUFFIX, F, MIN_BLOCKS)                                                       \
    extern "C" __global__ void __launch_bounds__(128, MIN_BLOCKS) msm_pair_prefix_##SUFFIX(           \
        const cuzk::affine_t<F>* bases, const uint32_t* entries, const uint32_t* in_offsets, const uint32_t* out_offsets,        \
        uint32_t buckets, uint32_t stride, F* prefix, F* totals) {                                    \
        const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        const uint32_t first = cuzk::first_slot(t), total = out_offsets[buckets];                     \
        if (first >= total) return;                                                                   \
        const cuzk::point_source<F> points{bases, entries};                                           \
        cuzk::slot_walk walk(in_offsets, out_offsets, buckets, first);                                \
        const uint32_t count = cuzk::slot_count(first, total);                                        \
        F acc = F::one();                                                                             \
        for (uint32_t i = 0; i < count; i++) {                                                        \
            acc = acc * cuzk::pair_denominator(points, walk.next(first + 32 * i));                    \
            prefix[size_t(i) * stride + t] = acc;                                                     \
        }                                                                                             \
        totals[t] = acc;                                                                              \
    }                                                                                                 \
    /* Launched with a thread per prefix thread: a share of one total needs that many. */             \
    extern "C" __global__ void msm_pair_invert_##SUFFIX(F* totals, const uint32_t* out_offsets,      \
                                                        uint32_t buckets) {                           \
        const uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        const uint32_t threads = cuzk::round_threads(out_offsets[buckets]);                           \
        const uint32_t share = cuzk::invert_share(threads), first = u * share;                        \
        if (first >= threads) return;                                                                 \
        const uint32_t count = min(share, threads - first);                                           \
        F running[cuzk::TOTALS_PER_THREAD];                                                           \
        F acc = F::one();                                                                             \
        for (uint32_t j = 0; j < count; j++) {                                                        \
            acc = acc * totals[first + j];                                                            \
            running[j] = acc;                                                                         \
        }                                                                                             \
        F inverse = acc.inverse();                                                                    \
        for (uint32_t j = count; j-- > 0;) {                                                          \
            const F total = totals[first + j];                                                        \
            totals[first + j] = j > 0 ? inverse * running[j - 1] : inverse;                           \
            inverse = inverse * total;                                                                \
        }                                                                                             \
    }                                                                                                 \
    extern "C" __global__ void __launch_bounds__(128, MIN_BLOCKS) msm_pair_sums_##SUFFIX(             \
        const cuzk::affine_t<F>* bases, const uint32_t* entries, const uint32_t* in_offsets, const uint32_t* out_offsets,        \
        uint32_t buckets, uint32_t stride, const F* prefix, const F* totals,                          \
        const uint32_t* out_base, cuzk::affine_t<F>* out) {                                           \
        const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        const uint32_t first = cuzk::first_slot(t), total = out_offsets[buckets];                     \
        if (first >= total) return;                                                                   \
        const cuzk::point_source<F> points{bases, entries};                                           \
        const uint32_t count = cuzk::slot_count(first, total);                                        \
        /* Backwards from the thread's last slot; a loop, not unrolled: sixteen copies of an        \
           addition overflow the instruction cache. */                                               \
        cuzk::slot_walk walk(in_offsets, out_offsets, buckets, first + 32 * (count - 1));             \
        cuzk::affine_t<F>* to = out + (out_base != nullptr ? *out_base : 0);                          \
        F inverse = totals[t];                                                                        \
        for (uint32_t k = count; k-- > 0;) {                                                          \
            const uint32_t slot = first + 32 * k;                                                     \
            const auto s = cuzk::pair_sum<F>::of(points, walk.previous(slot));                        \
            F den_inverse = inverse;                                                                  \
            if (s.kind != s.KEEP) {                                                                   \
                if (k > 0) den_inverse = inverse * prefix[size_t(k - 1) * stride + t];                \
                inverse = inverse * s.den;                                                            \
            }                                                                                         \
            to[slot] = s.sum(den_inverse);                                                            \
        }                                                                                             \
    }

// G1 at 4 blocks of 128 per SM (128 registers, a 76-byte spill) beat 3 (144 registers) on an
// H200 by 3–4% (2^22: 32.9 → 31.9 ms, 2^24: 111.8 → 107.7); G2 needs 2 for its Fp2 temporaries.
MSM_PAIR_KERNELS(g1, cuzk::fp_t, 4)
MSM_PAIR_KERNELS(g2, cuzk::fp2_t, 2)
