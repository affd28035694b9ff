// MSMs over scalars that are mostly 0 or 1 (a circuit's witness is mostly bits): the scalars are
// split into a bitmap of the ones, whose points `batch_add` sums directly, and the positions of
// the others, whose points and scalars are gathered for a Pippenger pass of their own.
#pragma once

#include "field/params.cuh"

namespace cuzk {

// 0 for zero, 1 for one, 2 for any other scalar (Montgomery form, as the host lays them out).
__device__ __forceinline__ uint32_t scalar_class(const fr_t& s) {
    if (s.is_zero()) return 0;
    return s == fr_t::one() ? 1 : 2;
}

}  // namespace cuzk

namespace cuzk {

// The class of scalar i: values[index[i]], or values[i] without positions (index null).
__device__ __forceinline__ uint32_t class_of(const fr_t* values, const uint32_t* index, uint32_t i, uint32_t n) {
    if (i >= n) return 0;
    return scalar_class(values[index != nullptr ? index[i] : i]);
}

}  // namespace cuzk

// ones[i / 32] bit i % 32 = (scalar i is one); counts[block] = the block's other scalars (neither
// zero nor one). Scalar i is values[index[i]], or values[i] when index is null. Blocks of a
// multiple of 32 threads, one scalar each.
extern "C" __global__ void msm_split_classify(const cuzk::fr_t* values, const uint32_t* index, uint32_t n,
                                              uint32_t* ones, uint32_t* counts) {
    __shared__ uint32_t block_others;
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t c = cuzk::class_of(values, index, i, n);
    const uint32_t one_bits = __ballot_sync(~0u, c == 1);
    const uint32_t other_bits = __ballot_sync(~0u, c == 2);
    if (threadIdx.x == 0) block_others = 0;
    __syncthreads();
    if ((threadIdx.x & 31) == 0) {
        if (i < n) ones[i / 32] = one_bits;
        atomicAdd(&block_others, __popc(other_bits));
    }
    __syncthreads();
    if (threadIdx.x == 0) counts[blockIdx.x] = block_others;
}

// others[offsets[block] + k] = i for the k-th other scalar i of each block, so that the positions
// come out in order. Scalars and blocks as msm_split_classify's; at most 32 warps per block.
extern "C" __global__ void msm_split_others(const cuzk::fr_t* values, const uint32_t* index, uint32_t n,
                                            const uint32_t* offsets, uint32_t* others) {
    __shared__ uint32_t warp_counts[32];
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const bool other = cuzk::class_of(values, index, i, n) == 2;
    const uint32_t bits = __ballot_sync(~0u, other);
    if (lane == 0) warp_counts[warp] = __popc(bits);
    __syncthreads();
    uint32_t before = offsets[blockIdx.x];
    for (uint32_t w = 0; w < warp; w++) before += warp_counts[w];
    if (other) others[before + __popc(bits & ((1u << lane) - 1))] = i;
}

// out[k] = src[index[k] − base] for k < count, items of `words` 32-bit words (points, scalars):
// one thread per word, so that a warp reads whole items.
extern "C" __global__ void gather_words(const uint32_t* src, const uint32_t* index, uint32_t count,
                                        uint32_t base, uint32_t words, uint32_t* out) {
    const uint64_t total = uint64_t(count) * words;
    for (uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
         t += uint64_t(gridDim.x) * blockDim.x) {
        const uint64_t k = t / words, word = t % words;
        out[t] = src[uint64_t(index[k] - base) * words + word];
    }
}
