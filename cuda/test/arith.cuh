// Element-wise arithmetic kernels that the host tests compare with blstrs: they pin down the
// field and curve code and the host↔device layout at once.
#pragma once

#include "curve/xyzz.cuh"

// out[5i..5i+5) = a+b, a−b, a·b, a², a⁻¹; out[5n + i] = (a from Montgomery form, then back).
#define ARITH_FIELD_KERNEL(SUFFIX, F)                                                                \
    extern "C" __global__ void arith_field_##SUFFIX(const F* a, const F* b, F* out, uint32_t n) {   \
        const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (i >= n) return;                                                                           \
        const F x = a[i], y = b[i];                                                                   \
        out[5 * i + 0] = x + y;                                                                       \
        out[5 * i + 1] = x - y;                                                                       \
        out[5 * i + 2] = x * y;                                                                       \
        out[5 * i + 3] = x.sqr();                                                                     \
        out[5 * i + 4] = x.inverse();                                                                 \
    }

// out[3i..3i+3) = a + b (mixed), a + b (XYZZ + XYZZ), 2a; inputs are affine.
#define ARITH_CURVE_KERNEL(SUFFIX, F)                                                                 \
    extern "C" __global__ void arith_curve_##SUFFIX(const cuzk::affine_t<F>* a,                       \
                                                    const cuzk::affine_t<F>* b,                       \
                                                    cuzk::xyzz_t<F>* out, uint32_t n) {               \
        const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;                                     \
        if (i >= n) return;                                                                           \
        cuzk::xyzz_t<F> mixed = cuzk::xyzz_t<F>::from_affine(a[i]);                                   \
        mixed.add_affine(b[i]);                                                                       \
        cuzk::xyzz_t<F> full = cuzk::xyzz_t<F>::from_affine(a[i]);                                    \
        full.add(cuzk::xyzz_t<F>::from_affine(b[i]));                                                 \
        out[3 * i + 0] = mixed;                                                                       \
        out[3 * i + 1] = full;                                                                        \
        out[3 * i + 2] = cuzk::xyzz_t<F>::from_affine(a[i]).dbl();                                    \
    }

ARITH_FIELD_KERNEL(fr, cuzk::fr_t)
ARITH_FIELD_KERNEL(fp, cuzk::fp_t)
ARITH_FIELD_KERNEL(fp2, cuzk::fp2_t)
ARITH_CURVE_KERNEL(g1, cuzk::fp_t)
ARITH_CURVE_KERNEL(g2, cuzk::fp2_t)

// Montgomery form → canonical → Montgomery form, for the scalar layout test.
extern "C" __global__ void arith_fr_canonical(const cuzk::fr_t* a, cuzk::fr_t* canonical,
                                              cuzk::fr_t* back, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    canonical[i] = a[i].from_montgomery();
    back[i] = canonical[i].to_montgomery();
}

// The lazy range (values below 2r, see mont::add_lazy) on raw limbs: out[4i..4i+4) = a + b,
// a − b, a·reduced(b), reduced(a), for a, b below 2r.
extern "C" __global__ void arith_fr_lazy(const cuzk::fr_t* a, const cuzk::fr_t* b, cuzk::fr_t* out, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const cuzk::fr_t x = a[i], y = b[i];
    out[4 * i + 0] = x.add_lazy(y);
    out[4 * i + 1] = x.sub_lazy(y);
    out[4 * i + 2] = x.mul_lazy(y.reduced());
    out[4 * i + 3] = x.reduced();
}

// out[i] = a·w by mont::mul_shoup, a below 2r, w a fixed factor (plain integer, then quotient).
extern "C" __global__ void arith_fr_shoup(const cuzk::fr_t* a, const cuzk::fr_t* w, cuzk::fr_t* out, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = a[i].mul_shoup(w[2 * i], w[2 * i + 1]);
}
