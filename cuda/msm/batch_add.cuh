// Bitmap batch addition: Σ bases[i] over the set bits i of a bitmap, for the many witnesses equal
// to 1 that need no Pippenger. Each thread sums the set bits of a run of 32-bit words; the partial
// sums are then added up by the MSM's per-window tree kernel (one "window" of `segments` partials).
#pragma once

#include "curve/xyzz.cuh"

#define BATCH_ADD_KERNEL(SUFFIX, F)                                                                   \
    extern "C" __global__ void batch_add_##SUFFIX(const cuzk::affine_t<F>* bases,                     \
                                                  const uint32_t* bits, uint32_t n,                   \
                                                  uint32_t words_per_thread, uint32_t threads,        \
                                                  cuzk::xyzz_t<F>* partial) {                         \
        const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (t >= threads) return;                                                                     \
        const uint32_t words = (n + 31) / 32;                                                         \
        const uint32_t begin = t * words_per_thread, end = min(begin + words_per_thread, words);      \
        cuzk::xyzz_t<F> acc = cuzk::xyzz_t<F>::identity();                                           \
        for (uint32_t w = begin; w < end; w++) {                                                      \
            uint32_t word = bits[w];                                                                  \
            if (w == words - 1 && n % 32 != 0) word &= (1u << (n % 32)) - 1;                          \
            while (word != 0) {                                                                       \
                const uint32_t b = __ffs(word) - 1;                                                   \
                word &= word - 1;                                                                     \
                acc.add_affine(bases[w * 32 + b]);                                                    \
            }                                                                                         \
        }                                                                                             \
        partial[t] = acc;                                                                             \
    }

BATCH_ADD_KERNEL(g1, cuzk::fp_t)
BATCH_ADD_KERNEL(g2, cuzk::fp2_t)
