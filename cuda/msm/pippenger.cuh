// Pippenger MSM over affine bases, every stage on the device:
//
//   digits   scalars (Montgomery form, as uploaded) → canonical, s > r/2 replaced by r − s with the
//            point negated (so s < 2^254) → signed c-bit window digits
//   sort     per-window counting sort of (point, sign) by |digit|: histogram, scan, scatter
//   buckets  one thread per (window, bucket) sums its points in XYZZ
//   reduce   per window Σ (b+1)·bucket_b by running sums over segments, segments summed in a tree
//   combine  windows by doublings (Horner) into one point
//
// Kernels are instantiated per group with the suffix _g1 / _g2 by MSM_KERNELS below.
#pragma once

#include "curve/xyzz.cuh"

namespace cuzk {

// Mirrored in crates/cuzk-gpu/src/msm.rs (`MsmParams`); keep the two in step.
struct msm_params {
    uint32_t n;            // points and scalars
    uint32_t window_bits;  // c
    uint32_t windows;      // ⌈255 / c⌉
    uint32_t buckets;      // 2^(c−1) per window (digit d ≠ 0 goes to bucket |d| − 1)
    uint32_t segments;     // running-sum segments per window in the reduction
};

// Bits [at, at + count) of a 256-bit little-endian integer (count ≤ 31).
__device__ __forceinline__ uint32_t scalar_bits(const fr_t& s, uint32_t at, uint32_t count) {
    const uint32_t limb = at / 32, shift = at % 32;
    uint64_t word = s.l[limb];
    if (limb + 1 < 8) word |= uint64_t(s.l[limb + 1]) << 32;
    return uint32_t(word >> shift) & ((1u << count) - 1);
}

// Bit 255 of a canonical scalar, free once s < 2^254: set when the point is to be negated.
constexpr uint32_t NEGATE_FLAG = 0x80000000u;

// The signed digit of window w, recomputing the carries of the windows below it. Digits lie in
// [−2^(c−1), 2^(c−1)]; a scalar below 2^254 never carries out of ⌈255/c⌉ windows (the top window
// holds at most c − 1 bits).
__device__ __forceinline__ int32_t signed_digit(const fr_t& s, uint32_t w, uint32_t c) {
    uint32_t carry = 0;
    int32_t digit = 0;
    for (uint32_t i = 0; i <= w; i++) {
        const uint32_t bits = i * c < 254 ? scalar_bits(s, i * c, min(c, 254 - i * c)) : 0;
        const uint32_t raw = bits + carry;
        carry = raw > (1u << (c - 1)) ? 1 : 0;
        digit = int32_t(raw) - int32_t(carry << c);
    }
    return digit;
}

template <class F>
__device__ __forceinline__ xyzz_t<F> bucket_sum(const affine_t<F>* bases, const uint32_t* entries,
                                                uint32_t begin, uint32_t end) {
    xyzz_t<F> acc = xyzz_t<F>::identity();
    for (uint32_t e = begin; e < end; e++) {
        const uint32_t entry = entries[e];
        const affine_t<F> p = bases[entry & 0x7fffffffu];
        acc.add_affine((entry >> 31) ? -p : p);
    }
    return acc;
}

// k·p for a small non-negative k, by double-and-add.
template <class F>
__device__ __forceinline__ xyzz_t<F> mul_small(const xyzz_t<F>& p, uint32_t k) {
    xyzz_t<F> acc = xyzz_t<F>::identity();
    for (int b = 31; b >= 0; b--) {
        acc = acc.dbl();
        if ((k >> b) & 1) acc.add(p);
    }
    return acc;
}

}  // namespace cuzk

// Scalars: Montgomery form in; canonical integers below r/2 out, with NEGATE_FLAG where s was
// replaced by r − s (s·P = (r − s)·(−P)). Halving the range keeps the top window's digits spread
// instead of piling into a few buckets.
extern "C" __global__ void msm_scalars_canonical(const cuzk::fr_t* in, cuzk::fr_t* out, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuzk::fr_t s = in[i].from_montgomery();
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
    if (above) {
        s = -s;  // r − s (s ≠ 0 here), still canonical: negation of the integer mod r
        s.l[7] |= cuzk::NEGATE_FLAG;
    }
    out[i] = s;
}

// counts[w·K + b] = points whose window-w digit is ±(b + 1). Thread per (point, window).
extern "C" __global__ void msm_histogram(const cuzk::fr_t* scalars, cuzk::msm_params p, uint32_t* counts) {
    const uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= uint64_t(p.n) * p.windows) return;
    const uint32_t i = uint32_t(t / p.windows), w = uint32_t(t % p.windows);
    const int32_t d = cuzk::signed_digit(scalars[i], w, p.window_bits);
    if (d != 0) atomicAdd(&counts[w * p.buckets + (abs(d) - 1)], 1u);
}

// entries[offsets[w·K + b] + k] = point | sign bit, for the k-th point landing in bucket b.
extern "C" __global__ void msm_scatter(const cuzk::fr_t* scalars, cuzk::msm_params p,
                                       const uint32_t* offsets, uint32_t* cursors, uint32_t* entries) {
    const uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= uint64_t(p.n) * p.windows) return;
    const uint32_t i = uint32_t(t / p.windows), w = uint32_t(t % p.windows);
    const int32_t d = cuzk::signed_digit(scalars[i], w, p.window_bits);
    if (d == 0) return;
    const uint32_t bucket = w * p.buckets + (abs(d) - 1);
    const uint32_t at = offsets[bucket] + atomicAdd(&cursors[bucket], 1u);
    const bool negate = (d < 0) != bool(scalars[i].l[7] & cuzk::NEGATE_FLAG);
    entries[at] = i | (negate ? 0x80000000u : 0);
}

#define MSM_KERNELS(SUFFIX, F)                                                                        \
    extern "C" __global__ void msm_buckets_##SUFFIX(const cuzk::affine_t<F>* bases,                  \
                                                    const uint32_t* offsets, const uint32_t* entries, \
                                                    cuzk::msm_params p, cuzk::xyzz_t<F>* buckets) {   \
        const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (b >= p.windows * p.buckets) return;                                                       \
        buckets[b] = cuzk::bucket_sum(bases, entries, offsets[b], offsets[b + 1]);                    \
    }                                                                                                 \
    /* partial[w·S + s] = Σ_{b in segment s} (b + 1)·bucket_b of window w. */                        \
    extern "C" __global__ void msm_reduce_##SUFFIX(const cuzk::xyzz_t<F>* buckets, cuzk::msm_params p,\
                                                   cuzk::xyzz_t<F>* partial) {                        \
        const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (t >= p.windows * p.segments) return;                                                      \
        const uint32_t w = t / p.segments, s = t % p.segments;                                        \
        const uint32_t per = (p.buckets + p.segments - 1) / p.segments;                               \
        const uint32_t lo = min(s * per, p.buckets), hi = min(lo + per, p.buckets);                   \
        cuzk::xyzz_t<F> running = cuzk::xyzz_t<F>::identity(), acc = running;                        \
        for (uint32_t b = hi; b > lo; b--) {                                                          \
            running.add(buckets[w * p.buckets + b - 1]);                                              \
            acc.add(running);                                                                         \
        }                                                                                             \
        /* acc = Σ (b − lo + 1)·B_b; add lo·Σ B_b for the weights b + 1. */                           \
        acc.add(cuzk::mul_small(running, lo));                                                        \
        partial[t] = acc;                                                                             \
    }                                                                                                 \
    /* One block per window: tree-sum its segments' partials into window_sums[w]. */                 \
    extern "C" __global__ void msm_window_sum_##SUFFIX(const cuzk::xyzz_t<F>* partial,                \
                                                       cuzk::msm_params p, cuzk::xyzz_t<F>* sums) {   \
        extern __shared__ unsigned char raw[];                                                        \
        cuzk::xyzz_t<F>* s = reinterpret_cast<cuzk::xyzz_t<F>*>(raw);                                 \
        const uint32_t w = blockIdx.x, t = threadIdx.x;                                               \
        cuzk::xyzz_t<F> acc = cuzk::xyzz_t<F>::identity();                                            \
        for (uint32_t i = t; i < p.segments; i += blockDim.x) acc.add(partial[w * p.segments + i]);   \
        s[t] = acc;                                                                                   \
        for (uint32_t half = blockDim.x / 2; half > 0; half /= 2) {                                   \
            __syncthreads();                                                                          \
            if (t < half) s[t].add(s[t + half]);                                                      \
        }                                                                                             \
        if (t == 0) sums[w] = s[0];                                                                   \
    }                                                                                                 \
    /* Horner over the windows, most significant first: one thread. */                               \
    extern "C" __global__ void msm_combine_##SUFFIX(const cuzk::xyzz_t<F>* sums, cuzk::msm_params p,  \
                                                    cuzk::xyzz_t<F>* out) {                           \
        if (blockIdx.x != 0 || threadIdx.x != 0) return;                                              \
        cuzk::xyzz_t<F> acc = sums[p.windows - 1];                                                    \
        for (int w = int(p.windows) - 2; w >= 0; w--) {                                               \
            for (uint32_t i = 0; i < p.window_bits; i++) acc = acc.dbl();                             \
            acc.add(sums[w]);                                                                         \
        }                                                                                             \
        *out = acc;                                                                                   \
    }

MSM_KERNELS(g1, cuzk::fp_t)
MSM_KERNELS(g2, cuzk::fp2_t)
