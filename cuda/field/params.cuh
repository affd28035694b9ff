// The two fields of BLS12-381 as parameters of `mont`; the numbers come from the generated
// constants.cuh (made from blstrs' own values, never typed by hand).
#pragma once

#include "field/constants.cuh"
#include "field/mont.cuh"

namespace cuzk {

// The base field Fp: 12 limbs. G1 code inlines its products; Fp2 (G2) calls them out of line,
// since a G2 point addition inlines dozens of them and costs minutes of ptxas time and heavy
// spilling. Same layout and values either way.
template <bool Inline>
struct fp_params_t {
    static constexpr int N = 12;
    static constexpr uint32_t INV = consts::FP_INV;
    static constexpr bool INLINE_MUL = Inline;
    __device__ __forceinline__ static uint32_t mod(int i) { return consts::FP_MODULUS[i]; }
    __device__ __forceinline__ static uint32_t one(int i) { return consts::FP_ONE[i]; }
    __device__ __forceinline__ static uint32_t r2(int i) { return consts::FP_R2[i]; }
};
using fp_params = fp_params_t<true>;
using fp_params_outlined = fp_params_t<false>;

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
using fp_outlined_t = mont<fp_params_outlined>;
using fr_t = mont<fr_params>;

}  // namespace cuzk
