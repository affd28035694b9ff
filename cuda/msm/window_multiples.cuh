// Window multiples of MSM bases: 2^(c·w)·P for every window w, so that windows of an MSM can share
// buckets (a digit d of window w adds d·2^(c·w)·P = d·(2^(c·w)·P)), which lets the window width
// grow without multiplying the buckets to reduce. Computed once per upload.
#pragma once

#include "curve/xyzz.cuh"

// out[w·n + i] = 2^(window_bits·w)·bases[i] for w < windows (w = 0: the base itself), affine; the
// identity stays (0, 0). One thread per base: c doublings and one inversion per window.
#define MSM_WINDOW_MULTIPLES_KERNEL(SUFFIX, F)                                                        \
    extern "C" __global__ void msm_window_multiples_##SUFFIX(const cuzk::affine_t<F>* bases,         \
                                                             uint32_t n, uint32_t window_bits,         \
                                                             uint32_t windows,                         \
                                                             cuzk::affine_t<F>* out) {                 \
        const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (i >= n) return;                                                                           \
        const cuzk::affine_t<F> p = bases[i];                                                         \
        out[i] = p;                                                                                   \
        cuzk::xyzz_t<F> q = cuzk::xyzz_t<F>::from_affine(p);                                         \
        for (uint32_t w = 1; w < windows; w++) {                                                      \
            for (uint32_t k = 0; k < window_bits; k++) q = q.dbl();                                   \
            out[size_t(w) * n + i] = q.to_affine();                                                   \
        }                                                                                             \
    }

MSM_WINDOW_MULTIPLES_KERNEL(g1, cuzk::fp_t)
MSM_WINDOW_MULTIPLES_KERNEL(g2, cuzk::fp2_t)
