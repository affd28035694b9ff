// Gathers scalars by index: the compaction of a witness vector to the variables a query uses
// (density bitmaps become index lists once on the host; the scalars never leave the device).
#pragma once

#include "field/params.cuh"

// out[i] = src[index[i]] for i < n; every index is below the length of src.
extern "C" __global__ void gather_fr(const cuzk::fr_t* src, const uint32_t* index, uint32_t n, cuzk::fr_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = src[index[i]];
}
