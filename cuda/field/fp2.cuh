// Fp2 = Fp[u]/(u² + 1), the coordinate field of G2. Layout (c0, c1) as blst's blst_fp2.
#pragma once

#include "field/params.cuh"

namespace cuzk {

struct fp2_t {
    using fp = fp_t;
    fp c0, c1;

    __device__ __forceinline__ static fp2_t zero() { return {fp::zero(), fp::zero()}; }
    __device__ __forceinline__ static fp2_t one() { return {fp::one(), fp::zero()}; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool operator==(const fp2_t& o) const { return c0 == o.c0 && c1 == o.c1; }
    __device__ __forceinline__ bool operator!=(const fp2_t& o) const { return !(*this == o); }
    __device__ __forceinline__ fp2_t operator+(const fp2_t& o) const { return {c0 + o.c0, c1 + o.c1}; }
    __device__ __forceinline__ fp2_t operator-(const fp2_t& o) const { return {c0 - o.c0, c1 - o.c1}; }
    __device__ __forceinline__ fp2_t operator-() const { return {-c0, -c1}; }
    __device__ __forceinline__ fp2_t dbl() const { return {c0.dbl(), c1.dbl()}; }

    // Karatsuba: three Fp products.
    __device__ __forceinline__ fp2_t operator*(const fp2_t& o) const {
        const fp a = c0 * o.c0, b = c1 * o.c1;
        const fp c = (c0 + c1) * (o.c0 + o.c1);
        return {a - b, c - a - b};
    }

    // (c0 + c1·u)² = (c0 + c1)(c0 − c1) + 2·c0·c1·u: two Fp products.
    __device__ __forceinline__ fp2_t sqr() const {
        const fp t = c0 * c1;
        return {(c0 + c1) * (c0 - c1), t.dbl()};
    }

    // 1/(c0 + c1·u) = (c0 − c1·u)/(c0² + c1²).
    __device__ fp2_t inverse() const {
        const fp norm_inv = (c0.sqr() + c1.sqr()).inverse();
        return {c0 * norm_inv, -(c1 * norm_inv)};
    }
};

}  // namespace cuzk
