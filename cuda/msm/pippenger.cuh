// Pippenger MSM over affine bases, every stage but the final doublings on the device:
//
//   digits   one thread per scalar: Montgomery → canonical; s > r/2 becomes r − s with the point
//            negated (so s < 2^254); the signed c-bit digits of all windows in one pass, each
//            stored as a code (|d|, sign) and counted into its bucket's histogram
//   sort     exclusive scan of the histogram; scatter of (point, sign) entries into bucket order,
//            in passes over ranges of digit magnitudes where a window has many buckets (so few
//            half-written entry sectors are open in L2 at a time; see scatter_passes on the host)
//   rounds   while buckets are large, batch-affine pair rounds halve them (affine_rounds.cuh);
//            the points they leave take the place of the sorted entries below
//   chunks   every bucket cut into chunks of at most `chunk` entries, one thread per chunk; the
//            chunk sums are summed again in chunks, level after level, until each bucket holds
//            one point. A thread's work is bounded whatever the scalars (all equal, small, sparse),
//            and the threads of a warp do near-equal work
//   reduce   per window Σ (b+1)·bucket_b by running sums over short segments (one thread each),
//            summed per warp, then a tree per window
//   combine  on the host: windows by doublings (Horner), a few hundred group operations
//
// Counting atomics are aggregated per warp (one atomic per distinct bucket in the warp), so equal
// scalars do not serialise on one counter. Kernels are instantiated per group with the suffix
// _g1 / _g2 by MSM_KERNELS below.
#pragma once

#include "curve/xyzz.cuh"
#include "util/shuffle.cuh"

namespace cuzk {

// Mirrored in crates/cuzk-gpu/src/msm.rs (`MsmParams`); keep the two in step.
struct msm_params {
    uint32_t n;            // points and scalars
    uint32_t window_bits;  // c
    uint32_t windows;      // ⌈255 / c⌉: a scalar below 2^254 never carries out of the top window
    uint32_t buckets;      // 2^(c−1) per window (digit d ≠ 0 goes to bucket |d| − 1)
    uint32_t segments;     // running-sum segments (threads) per window in the reduction: 32·k
    // 0: each window has its own buckets, entries name base i. Otherwise the bases come with their
    // window multiples (msm/window_multiples.cuh), `shared_stride` points per window, so windows
    // can share buckets, and the entry of (window w, point i) names w·shared_stride + i.
    uint32_t shared_stride;
    uint32_t set_windows;  // consecutive windows sharing one set of buckets (1 without multiples)
};

// Sets of buckets: windows / set_windows, rounded up.
__device__ __forceinline__ uint32_t bucket_sets(const msm_params& p) {
    return (p.windows + p.set_windows - 1) / p.set_windows;
}

// The bucket of digit magnitude m ≥ 1 in window w.
__device__ __forceinline__ uint32_t bucket_key(const msm_params& p, uint32_t w, uint32_t m) {
    return w / p.set_windows * p.buckets + m - 1;
}

// A digit code: |d| in the low bits, the sign of the point to add in the top bit; 0 for d = 0.
constexpr uint32_t CODE_NEGATE = 0x80000000u;
// The bucket key of a lane that has nothing to count.
constexpr uint32_t NO_BUCKET = 0xffffffffu;

// Bits [at, at + count) of a 256-bit little-endian integer (count ≤ 31).
__device__ __forceinline__ uint32_t scalar_bits(const fr_t& s, uint32_t at, uint32_t count) {
    const uint32_t limb = at / 32, shift = at % 32;
    uint64_t word = s.l[limb];
    if (limb + 1 < 8) word |= uint64_t(s.l[limb + 1]) << 32;
    return uint32_t(word >> shift) & ((1u << count) - 1);
}

// Adds `amount` to counter[key] once per group of lanes sharing a key (every lane of the warp
// calls this; lanes with key NO_BUCKET take no part) and returns, per lane, the counter's old value
// plus the lane's rank in its group: a distinct slot for each lane.
__device__ __forceinline__ uint32_t warp_reserve(uint32_t* counter, uint32_t key) {
    const uint32_t lane = threadIdx.x % 32;
    const uint32_t peers = __match_any_sync(0xffffffffu, key);
    const uint32_t leader = __ffs(peers) - 1;
    const uint32_t rank = __popc(peers & ((1u << lane) - 1));
    uint32_t base = 0;
    if (key != NO_BUCKET && lane == leader) base = atomicAdd(&counter[key], __popc(peers));
    return __shfl_sync(0xffffffffu, base, leader) + rank;
}

// The bucket b whose chunk range [chunk_offsets[b], chunk_offsets[b + 1]) holds chunk c, for
// c < chunk_offsets[buckets]: the last b with chunk_offsets[b] ≤ c.
__device__ __forceinline__ uint32_t bucket_of_chunk(const uint32_t* chunk_offsets, uint32_t buckets,
                                                    uint32_t c) {
    uint32_t lo = 0, hi = buckets;  // chunk_offsets[lo] ≤ c < chunk_offsets[hi]
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) / 2;
        if (chunk_offsets[mid] <= c) lo = mid; else hi = mid;
    }
    return lo;
}

// The entries [begin, end) of chunk c, given per-bucket entry offsets and chunk offsets. A bucket's
// entries are dealt evenly over its ⌈count/chunk⌉ chunks (lengths at most `chunk`, differing by at
// most one, at least chunk/2 when there are several), not as full chunks plus a remainder: a
// warp's lanes then run chains of more equal length (H200, G1 2^20: accumulation −3%).
struct chunk_range {
    uint32_t begin, end;
    __device__ __forceinline__ static chunk_range of(const uint32_t* offsets, const uint32_t* chunk_offsets,
                                                     uint32_t buckets, uint32_t c) {
        const uint32_t b = bucket_of_chunk(chunk_offsets, buckets, c);
        const uint64_t count = offsets[b + 1] - offsets[b];
        const uint64_t chunks = chunk_offsets[b + 1] - chunk_offsets[b], i = c - chunk_offsets[b];
        return {offsets[b] + uint32_t(i * count / chunks), offsets[b] + uint32_t((i + 1) * count / chunks)};
    }
};

// The points a bucket accumulation reads by position: the bases named by the sorted entries, with
// their signs, or (entries == nullptr) points already in bucket order, such as a pair round's sums.
template <class F>
struct point_source {
    const affine_t<F>* points;
    const uint32_t* entries;

    __device__ __forceinline__ affine_t<F> at(uint32_t e) const {
        if (entries == nullptr) return points[e];
        const uint32_t entry = entries[e];
        const affine_t<F> p = points[entry & ~CODE_NEGATE];
        return (entry & CODE_NEGATE) ? -p : p;
    }
    // The x and y coordinates alone (the sign of an entry changes only y).
    __device__ __forceinline__ F x_at(uint32_t e) const {
        return points[entries == nullptr ? e : entries[e] & ~CODE_NEGATE].x;
    }
    __device__ __forceinline__ F y_at(uint32_t e) const {
        if (entries == nullptr) return points[e].y;
        const uint32_t entry = entries[e];
        const F y = points[entry & ~CODE_NEGATE].y;
        return (entry & CODE_NEGATE) ? -y : y;
    }
};

// k·p for a small non-negative k, by double-and-add.
template <class F>
__device__ __forceinline__ xyzz_t<F> mul_small(const xyzz_t<F>& p, uint32_t k) {
    xyzz_t<F> acc = xyzz_t<F>::identity();
    for (int b = 31 - __clz(k | 1); b >= 0; b--) {
        acc = acc.dbl();
        if ((k >> b) & 1) acc.add(p);
    }
    return acc;
}

}  // namespace cuzk

// Digits of every window of scalar i, counted into counts[bucket_key(w, |d|)]; codes[w·n + i].
// Every lane of a warp reaches the counting (the warp-aggregated atomic needs all 32).
extern "C" __global__ void msm_digits(const cuzk::fr_t* scalars, cuzk::msm_params p, uint32_t* codes,
                                      uint32_t* counts) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool valid = i < p.n;
    cuzk::fr_t s = valid ? scalars[i].from_montgomery() : cuzk::fr_t::zero();
    // s > (r − 1)/2, compared limb by limb from the top; r − 1 = 2·half with half = (r − 1)/2.
    bool above = false, decided = false;
#pragma unroll
    for (int k = 7; k >= 0; k--) {
        const uint32_t half = (cuzk::fr_params::mod(k) >> 1) | (k < 7 ? cuzk::fr_params::mod(k + 1) << 31 : 0);
        if (!decided && s.l[k] != half) {
            above = s.l[k] > half;
            decided = true;
        }
    }
    if (above) s = -s;  // r − s (s ≠ 0 here): s·P = (r − s)·(−P)
    const uint32_t c = p.window_bits;
    uint32_t carry = 0;
    for (uint32_t w = 0; w < p.windows; w++) {
        const uint32_t bits = w * c < 254 ? cuzk::scalar_bits(s, w * c, min(c, 254 - w * c)) : 0;
        const uint32_t raw = bits + carry;
        carry = raw > (1u << (c - 1)) ? 1 : 0;
        const int32_t d = int32_t(raw) - int32_t(carry << c);
        const uint32_t magnitude = uint32_t(abs(d));
        if (valid) codes[size_t(w) * p.n + i] = magnitude | ((d < 0) != above ? cuzk::CODE_NEGATE : 0);
        const uint32_t key = valid && d != 0 ? cuzk::bucket_key(p, w, magnitude) : cuzk::NO_BUCKET;
        cuzk::warp_reserve(counts, key);
    }
}

// entries[slot] = point | sign for each point i with a digit magnitude in [from, to) in bucket k
// (point: i, or w·shared_stride + i, see msm_params), slot the old value of cursors[k]: the
// cursors start as a copy of the scanned histogram, so an entry needs no read of its bucket's
// offset. Grid: (⌈n / blockDim⌉, windows); blockDim a multiple of 32.
extern "C" __global__ void msm_scatter(const uint32_t* codes, cuzk::msm_params p, uint32_t from, uint32_t to,
                                       uint32_t* cursors, uint32_t* entries) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x, w = blockIdx.y;
    const uint32_t code = i < p.n ? codes[size_t(w) * p.n + i] : 0;
    const uint32_t magnitude = code & ~cuzk::CODE_NEGATE;
    const bool inside = magnitude != 0 && magnitude >= from && magnitude < to;
    const uint32_t key = inside ? cuzk::bucket_key(p, w, magnitude) : cuzk::NO_BUCKET;
    const uint32_t slot = cuzk::warp_reserve(cursors, key);
    const uint32_t point = p.shared_stride != 0 ? w * p.shared_stride + i : i;
    if (key != cuzk::NO_BUCKET) entries[slot] = point | (code & cuzk::CODE_NEGATE);
}

// counts[b] = ⌈(offsets[b + 1] − offsets[b]) / chunk⌉: the chunks bucket b is cut into.
// counts[buckets] = 0, the slot the scan turns into the total. Launched with buckets + 1 threads.
extern "C" __global__ void msm_chunk_counts(const uint32_t* offsets, uint32_t buckets, uint32_t chunk,
                                            uint32_t* counts) {
    const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < buckets) counts[b] = (offsets[b + 1] - offsets[b] + chunk - 1) / chunk;
    else if (b == buckets) counts[b] = 0;
}

// MIN_BLOCKS: blocks of 128 threads per SM the accumulation kernels are compiled for (it caps
// their registers at 65536 / (128 · MIN_BLOCKS)). On an H200: G1 3 (141 registers) beat 4 (128)
// by 3%; G2 needs 2 to keep its Fp2 temporaries in 252 registers without spilling.
#define MSM_KERNELS(SUFFIX, F, MIN_BLOCKS)                                                            \
    /* Level 0: out[c] = Σ of chunk c's points (see point_source). */                             \
    extern "C" __global__ void __launch_bounds__(128, MIN_BLOCKS) msm_chunks_affine_##SUFFIX(         \
        const cuzk::affine_t<F>* bases, const uint32_t* entries, const uint32_t* offsets,             \
        const uint32_t* chunk_offsets, uint32_t buckets, cuzk::xyzz_t<F>* out) {                      \
        const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (c >= chunk_offsets[buckets]) return;                                                      \
        const auto r = cuzk::chunk_range::of(offsets, chunk_offsets, buckets, c);                     \
        const cuzk::point_source<F> points{bases, entries};                                           \
        cuzk::xyzz_t<F> acc = cuzk::xyzz_t<F>::identity();                                           \
        for (uint32_t e = r.begin; e < r.end; e++) acc.add_affine(points.at(e));                      \
        out[c] = acc;                                                                                 \
    }                                                                                                 \
    /* Later levels: out[c] = Σ of the previous level's sums in chunk c. */                           \
    extern "C" __global__ void __launch_bounds__(128, MIN_BLOCKS) msm_chunks_xyzz_##SUFFIX(           \
        const cuzk::xyzz_t<F>* in, const uint32_t* offsets, const uint32_t* chunk_offsets,            \
        uint32_t buckets, cuzk::xyzz_t<F>* out) {                                                     \
        const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (c >= chunk_offsets[buckets]) return;                                                      \
        const auto r = cuzk::chunk_range::of(offsets, chunk_offsets, buckets, c);                     \
        cuzk::xyzz_t<F> acc = in[r.begin];                                                            \
        for (uint32_t e = r.begin + 1; e < r.end; e++) acc.add(in[e]);                                \
        out[c] = acc;                                                                                 \
    }                                                                                                 \
    /* Σ_{b in segment s} (b + 1)·bucket_b of bucket set w (a window, or windows sharing buckets),  \
       for segment s = t mod S of thread t, summed over each warp's 32 segments into partial[t/32]; \
       bucket b is sums[k] for its one chunk k = chunk_offsets[b], or the identity when it has     \
       none. S is a multiple of 32, so a warp's segments are of one set. */                         \
    extern "C" __global__ void msm_reduce_##SUFFIX(const cuzk::xyzz_t<F>* sums,                      \
                                                   const uint32_t* chunk_offsets, cuzk::msm_params p, \
                                                   cuzk::xyzz_t<F>* partial) {                        \
        const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (t >= cuzk::bucket_sets(p) * p.segments) return; /* whole warps: S is a multiple of 32 */  \
        const uint32_t w = t / p.segments, s = t % p.segments;                                        \
        const uint32_t per = (p.buckets + p.segments - 1) / p.segments;                               \
        const uint32_t lo = min(s * per, p.buckets), hi = min(lo + per, p.buckets);                   \
        cuzk::xyzz_t<F> running = cuzk::xyzz_t<F>::identity(), acc = running;                        \
        for (uint32_t b = hi; b > lo; b--) {                                                          \
            const uint32_t k = w * p.buckets + b - 1;                                                 \
            if (chunk_offsets[k + 1] > chunk_offsets[k]) running.add(sums[chunk_offsets[k]]);         \
            acc.add(running);                                                                         \
        }                                                                                             \
        /* acc = Σ (b − lo + 1)·B_b; add lo·Σ B_b for the weights b + 1. */                           \
        acc.add(cuzk::mul_small(running, lo));                                                        \
        for (uint32_t lanes = 16; lanes > 0; lanes /= 2) acc.add(cuzk::shuffle_down(acc, lanes));     \
        if (t % 32 == 0) partial[t / 32] = acc;                                                       \
    }                                                                                                 \
    /* One block per bucket set: tree-sum its `count` partials into sums[w] (added to what sums[w]  \
       holds when `accumulate` is set). */                                                            \
    extern "C" __global__ void msm_window_sum_##SUFFIX(const cuzk::xyzz_t<F>* partial, uint32_t count, \
                                                       uint32_t accumulate, cuzk::xyzz_t<F>* sums) {  \
        extern __shared__ unsigned char raw[];                                                        \
        cuzk::xyzz_t<F>* s = reinterpret_cast<cuzk::xyzz_t<F>*>(raw);                                 \
        const uint32_t w = blockIdx.x, t = threadIdx.x;                                               \
        cuzk::xyzz_t<F> acc = cuzk::xyzz_t<F>::identity();                                           \
        for (uint32_t i = t; i < count; i += blockDim.x) acc.add(partial[size_t(w) * count + i]);     \
        s[t] = acc;                                                                                   \
        for (uint32_t half = blockDim.x / 2; half > 0; half /= 2) {                                   \
            __syncthreads();                                                                          \
            if (t < half) s[t].add(s[t + half]);                                                      \
        }                                                                                             \
        if (t == 0 && accumulate != 0) s[0].add(sums[w]);                                             \
        if (t == 0) sums[w] = s[0];                                                                   \
    }

MSM_KERNELS(g1, cuzk::fp_t, 3)
MSM_KERNELS(g2, cuzk::fp2_t, 2)
