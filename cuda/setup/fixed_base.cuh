// Fixed-base multiplication for parameter generation: out[i] = s_i·G for one generator G and
// millions of scalars s_i (every query point of a Groth16 key is such a multiple).
//
// The table is the host's (cuzk_math::FixedBaseTable, same layout): table[w·half + m − 1] =
// m·2^(c·w)·G for 1 ≤ m ≤ half = 2^(c−1), affine, for every window w < windows. With signed
// c-bit digits each scalar costs one mixed addition per nonzero digit and no doubling; then one
// inversion makes it affine.
#pragma once

#include "curve/xyzz.cuh"
#include "msm/pippenger.cuh"

#define FIXED_BASE_KERNEL(SUFFIX, F)                                                                  \
    extern "C" __global__ void fixed_base_##SUFFIX(const cuzk::fr_t* scalars, uint32_t n,            \
                                                   const cuzk::affine_t<F>* table,                    \
                                                   uint32_t window_bits, uint32_t windows,            \
                                                   cuzk::affine_t<F>* out) {                          \
        const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (i >= n) return;                                                                           \
        const cuzk::fr_t s = scalars[i].from_montgomery();                                            \
        const uint32_t c = window_bits, half = 1u << (c - 1);                                         \
        cuzk::xyzz_t<F> acc = cuzk::xyzz_t<F>::identity();                                           \
        uint32_t carry = 0;                                                                           \
        for (uint32_t w = 0; w < windows; w++) {                                                      \
            /* Scalars are below 2^255: bits past 255 are zero. */                                    \
            const uint32_t raw =                                                                      \
                (w * c < 255 ? cuzk::scalar_bits(s, w * c, min(c, 255 - w * c)) : 0) + carry;        \
            /* A digit in [−half, half): raw ≥ half becomes raw − 2^c and carries one, except in   */ \
            /* the top window, which has room for it (at most 255 mod c bits plus the carry).      */ \
            carry = raw >= half && w + 1 < windows ? 1 : 0;                                           \
            const int32_t d = int32_t(raw) - int32_t(carry << c);                                     \
            if (d == 0) continue;                                                                     \
            const cuzk::affine_t<F> entry = table[size_t(w) * half + uint32_t(abs(d)) - 1];          \
            acc.add_affine(d > 0 ? entry : -entry);                                                   \
        }                                                                                             \
        out[i] = acc.to_affine();                                                                     \
    }

FIXED_BASE_KERNEL(g1, cuzk::fp_t)
FIXED_BASE_KERNEL(g2, cuzk::fp2_t)
