// Exclusive prefix sums of u32 counts, in three launches: scan each block's slice and keep its
// total, scan the totals (one block), add each block's prefix back.
#pragma once

#include <cstdint>

namespace cuzk {

constexpr uint32_t SCAN_BLOCK = 1024;

// In-place exclusive scan of one block's SCAN_BLOCK values in shared memory; returns the total.
__device__ __forceinline__ uint32_t block_exclusive_scan(uint32_t* s) {
    const uint32_t t = threadIdx.x;
    // Up-sweep.
    for (uint32_t stride = 1; stride < SCAN_BLOCK; stride <<= 1) {
        __syncthreads();
        const uint32_t i = (t + 1) * stride * 2 - 1;
        if (i < SCAN_BLOCK) s[i] += s[i - stride];
    }
    __syncthreads();
    const uint32_t total = s[SCAN_BLOCK - 1];
    __syncthreads();
    if (t == 0) s[SCAN_BLOCK - 1] = 0;
    // Down-sweep.
    for (uint32_t stride = SCAN_BLOCK / 2; stride >= 1; stride >>= 1) {
        __syncthreads();
        const uint32_t i = (t + 1) * stride * 2 - 1;
        if (i < SCAN_BLOCK) {
            const uint32_t left = s[i - stride];
            s[i - stride] = s[i];
            s[i] += left;
        }
    }
    __syncthreads();
    return total;
}

}  // namespace cuzk

// Scans values[0..n) block by block (blockDim.x == SCAN_BLOCK); block_totals[blockIdx.x] = sum.
extern "C" __global__ void scan_blocks_u32(uint32_t* values, uint32_t n, uint32_t* block_totals) {
    __shared__ uint32_t s[cuzk::SCAN_BLOCK];
    const uint32_t i = blockIdx.x * cuzk::SCAN_BLOCK + threadIdx.x;
    s[threadIdx.x] = i < n ? values[i] : 0;
    const uint32_t total = cuzk::block_exclusive_scan(s);
    if (i < n) values[i] = s[threadIdx.x];
    if (threadIdx.x == 0) block_totals[blockIdx.x] = total;
}

// Exclusive scan of up to SCAN_BLOCK block totals in one block; totals[count] = grand total.
extern "C" __global__ void scan_totals_u32(uint32_t* totals, uint32_t count) {
    __shared__ uint32_t s[cuzk::SCAN_BLOCK];
    s[threadIdx.x] = threadIdx.x < count ? totals[threadIdx.x] : 0;
    const uint32_t total = cuzk::block_exclusive_scan(s);
    if (threadIdx.x < count) totals[threadIdx.x] = s[threadIdx.x];
    if (threadIdx.x == 0) totals[count] = total;
}

// values[i] += prefix of its block.
extern "C" __global__ void scan_add_u32(uint32_t* values, uint32_t n, const uint32_t* block_prefix) {
    const uint32_t i = blockIdx.x * cuzk::SCAN_BLOCK + threadIdx.x;
    if (i < n) values[i] += block_prefix[blockIdx.x];
}
