// Dependent chains of field products, one per thread: the product rate this device reaches with
// our field code, which `cuzk bench-kernels` reports and measures every kernel against.
#pragma once

#include "field/params.cuh"

#define PRODUCT_CHAIN_KERNEL(SUFFIX, F)                                                              \
    extern "C" __global__ void product_chain_##SUFFIX(F* x, const F* y, uint32_t n, uint32_t iters) { \
        const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (i >= n) return;                                                                           \
        F a = x[i];                                                                                   \
        const F b = y[i];                                                                             \
        for (uint32_t k = 0; k < iters; k++) a = a * b;                                               \
        x[i] = a;                                                                                     \
    }

PRODUCT_CHAIN_KERNEL(fr, cuzk::fr_t)
PRODUCT_CHAIN_KERNEL(fp, cuzk::fp_t)

// By a fixed factor (see mont::mul_shoup), w and its quotient at y[2i] and y[2i + 1]; the chain
// stays in the lazy range and is stored reduced.
extern "C" __global__ void product_chain_fr_fixed(cuzk::fr_t* x, const cuzk::fr_t* y, uint32_t n, uint32_t iters) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuzk::fr_t a = x[i];
    const cuzk::fr_t w = y[2 * i], wq = y[2 * i + 1];
    for (uint32_t k = 0; k < iters; k++) a = a.mul_shoup(w, wq);
    x[i] = a.reduced();
}
