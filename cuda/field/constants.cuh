// GENERATED from blstrs by crates/cuzk-gpu/tests/cuda_constants.rs; do not edit.
// Regenerate with: CUZK_BLESS=1 cargo test -p cuzk-gpu --test cuda_constants
#pragma once

#include <cstdint>

namespace cuzk {
namespace consts {

// FP: modulus m, R mod m (Montgomery one), R² mod m, −m⁻¹ mod 2³².
__device__ __constant__ __align__(16) const uint32_t FP_MODULUS[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
__device__ __constant__ __align__(16) const uint32_t FP_ONE[12] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b, 0x53c758ba, 0x5f489857, 0x70525745, 0x77ce5853, 0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
__device__ __constant__ __align__(16) const uint32_t FP_R2[12] = {0x1c341746, 0xf4df1f34, 0x09d104f1, 0x0a76e6a6, 0x4c95b6d5, 0x8de5476c, 0x939d83c0, 0x67eb88a9, 0xb519952d, 0x9a793e85, 0x92cae3aa, 0x11988fe5};
static constexpr uint32_t FP_INV = 0xfffcfffd;

// FR: modulus m, R mod m (Montgomery one), R² mod m, −m⁻¹ mod 2³².
__device__ __constant__ __align__(16) const uint32_t FR_MODULUS[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402, 0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
__device__ __constant__ __align__(16) const uint32_t FR_ONE[8] = {0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa, 0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159};
__device__ __constant__ __align__(16) const uint32_t FR_R2[8] = {0xf3f29c6d, 0xc999e990, 0x87925c23, 0x2b6cedcb, 0x7254398f, 0x05d31496, 0x9f59ff11, 0x0748d9d9};
static constexpr uint32_t FR_INV = 0xffffffff;

}  // namespace consts
}  // namespace cuzk
