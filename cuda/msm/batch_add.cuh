// Bitmap batch addition: Σ bases[i] over the set bits i of a bitmap, for the many witnesses equal
// to 1 that need no Pippenger. Each warp sums the points of a run of 32·words_per_thread bitmap
// words: the set bits' positions are compacted into a queue in shared memory, and the warp's 32
// lanes take them 32 at a time, one each, into their own sums. So every lane adds in every step,
// and the 32 points a step reads lie close together (a run per lane would read 32 points tens of
// KB apart: a cache line each). The lanes' sums are then added up by the MSM's window-sum kernel
// (not here: a full addition beside the loop's would make the compiler spill it). Blocks of
// BATCH_ADD_THREADS.
#pragma once

#include "curve/xyzz.cuh"

#define BATCH_ADD_THREADS 128

// MIN_BLOCKS as for the MSM's accumulation kernels (pippenger.cuh): the same additions.
#define BATCH_ADD_KERNEL(SUFFIX, F, MIN_BLOCKS)                                                       \
    extern "C" __global__ void __launch_bounds__(BATCH_ADD_THREADS, MIN_BLOCKS) batch_add_##SUFFIX(  \
        const cuzk::affine_t<F>* bases, const uint32_t* bits, uint32_t n, uint32_t words_per_thread, \
        uint32_t threads, cuzk::xyzz_t<F>* partial) {                                                \
        /* Fewer than 32 wait between steps, and a word adds at most 32: 64 slots per warp. */        \
        __shared__ uint32_t queues[BATCH_ADD_THREADS / 32][64];                                       \
        const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;            \
        uint32_t* queue = queues[threadIdx.x / 32];                                                   \
        const uint32_t words = (n + 31) / 32, run = 32 * words_per_thread;                            \
        const uint32_t begin = min((t / 32) * run, words), end = min(begin + run, words);            \
        cuzk::xyzz_t<F> acc = cuzk::xyzz_t<F>::identity();                                           \
        uint32_t queued = 0;                                                                          \
        /* Each lane loads one word of 32; the warp then walks them in order (warp-uniform). */       \
        for (uint32_t first = begin; first < end; first += 32) {                                      \
            const uint32_t w = first + lane;                                                          \
            uint32_t mine = w < end ? bits[w] : 0;                                                    \
            if (w == words - 1 && n % 32 != 0) mine &= (1u << (n % 32)) - 1;                          \
            for (uint32_t k = 0; k < 32 && first + k < end; k++) {                                    \
                const uint32_t word = __shfl_sync(~0u, mine, k);                                      \
                if ((word >> lane) & 1)                                                               \
                    queue[queued + __popc(word & ((1u << lane) - 1))] = (first + k) * 32 + lane;      \
                queued += __popc(word);                                                               \
                __syncwarp();                                                                         \
                if (queued >= 32) {                                                                   \
                    acc.add_affine(bases[queue[lane]]);                                               \
                    queued -= 32;                                                                     \
                    const uint32_t left = lane < queued ? queue[32 + lane] : 0;                       \
                    __syncwarp();                                                                     \
                    if (lane < queued) queue[lane] = left;                                            \
                    __syncwarp();                                                                     \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
        if (lane < queued) acc.add_affine(bases[queue[lane]]);                                        \
        if (t < threads) partial[t] = acc;                                                            \
    }

BATCH_ADD_KERNEL(g1, cuzk::fp_t, 3)
BATCH_ADD_KERNEL(g2, cuzk::fp2_t, 2)
