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
    static constexpr uint32_t INV = consts::FP_INV;
    static constexpr bool INLINE_MUL = false;
    __device__ __forceinline__ static uint32_t mod(int i) { return consts::FP_MODULUS[i]; }
    __device__ __forceinline__ static uint32_t one(int i) { return consts::FP_ONE[i]; }
    __device__ __forceinline__ static uint32_t r2(int i) { return consts::FP_R2[i]; }
};

// The scalar field Fr (witnesses, NTTs, MSM scalars): 8 limbs.
struct fr_params {
    static constexpr int N = 8;
    static constexpr uint32_t INV = consts::FR_INV;
    static constexpr bool INLINE_MUL = true;
    __device__ __forceinline__ static uint32_t mod(int i) { return consts::FR_MODULUS[i]; }
    __device__ __forceinline__ static uint32_t one(int i) { return consts::FR_ONE[i]; }
    __device__ __forceinline__ static uint32_t r2(int i) { return consts::FR_R2[i]; }
};

using fp_t = mont<fp_params>;
using fr_t = mont<fr_params>;

}  // namespace cuzk
