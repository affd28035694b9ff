// The two fields of BLS12-381 as parameters of `mont`; the numbers come from the generated
// constants.cuh (made from blstrs' own values, never typed by hand).
#pragma once

#include "field/constants.cuh"
#include "field/mont.cuh"

namespace cuzk {

// The base field Fp (coordinates of G1 and, as Fp2, of G2): 12 limbs. Its products are calls, not
// inlined: a point addition holds ten or more of them, and inlined they made the MSM kernels slower
// on an H200 (G1 2^24: 343 ms inlined vs 272 ms called; instruction-cache pressure), cost minutes
// of ptxas time and spilled heavily in G2.
struct fp_params {
    static constexpr int N = 12;
    static constexpr bool INLINE_MUL = false;
    static constexpr bool SPARSE_LOW = false;
    // The folded product (see mont::mul_inline): the rotating one is 21% fewer instructions and
    // a 2.7% faster product on an H200, but as an out-of-line call it made the G1 pair-sums
    // kernel spill four times as much around its calls (G1 MSM 2^24 89.8 → 91.9 ms).
    static constexpr bool FOLD_ROWS = true;
    __device__ __forceinline__ static uint32_t inv() { return consts::FP_INV; }
    __device__ __forceinline__ static uint32_t mod(int i) { return consts::FP_MODULUS[i]; }
    __device__ __forceinline__ static uint32_t one(int i) { return consts::FP_ONE[i]; }
    __device__ __forceinline__ static uint32_t r2(int i) { return consts::FP_R2[i]; }
};

// Not const: a value the host could change, which the compiler must load rather than fold.
__constant__ uint32_t FR_INV_UNFOLDED = consts::FR_INV;

// The scalar field Fr (witnesses, NTTs, MSM scalars): 8 limbs.
struct fr_params {
    static constexpr int N = 8;
    static constexpr bool INLINE_MUL = true;
    // The rotating product (see mont::mul_inline): 288 instructions instead of 336, no per-row
    // fold on the ALU pipe; H200: Fr products 57.9 → 60.6 G/s, NTT 2^27 48.8 → 46.8 ms.
    static constexpr bool FOLD_ROWS = false;
    // r's limbs 0 and 1 are 1 and 2^32 − 1 (so −r⁻¹ mod 2^32 is 2^32 − 1).
    static constexpr bool SPARSE_LOW = true;
    // −1, from memory ptxas cannot fold (see mont::quotient): knowing that a row's q is −A₀, it
    // rewrites q·r and splits 48 of the product's fused instructions in two (Fr products ~17%
    // slower).
    __device__ __forceinline__ static uint32_t inv() { return FR_INV_UNFOLDED; }
    __device__ __forceinline__ static uint32_t mod(int i) { return consts::FR_MODULUS[i]; }
    __device__ __forceinline__ static uint32_t one(int i) { return consts::FR_ONE[i]; }
    __device__ __forceinline__ static uint32_t r2(int i) { return consts::FR_R2[i]; }
};

using fp_t = mont<fp_params>;
using fr_t = mont<fr_params>;

}  // namespace cuzk
