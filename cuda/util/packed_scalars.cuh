// Scalars packed on the host for a short upload (a witness is mostly 0 and 1: a bitmap of the
// ones, then the positions and values of the others) and unpacked here into the dense layout that
// the matrices' products and the MSMs read. The host side and the layout: crates/cuzk-gpu/src/packed.rs.
#pragma once

#include "field/params.cuh"

// out[i] = 1 where bit i % 32 of ones[i / 32] is set, else 0 (Montgomery form), for i < n.
extern "C" __global__ void unpack_ones(const uint32_t* ones, uint32_t n, cuzk::fr_t* out) {
    for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += uint64_t(gridDim.x) * blockDim.x) {
        const bool one = (ones[i / 32] >> (i % 32)) & 1u;
        out[i] = one ? cuzk::fr_t::one() : cuzk::fr_t::zero();
    }
}

// out[index[k]] = src[k] for k < count, items of `words` 32-bit words: gather_words' inverse, one
// thread per word so that a warp writes whole items.
extern "C" __global__ void scatter_words(const uint32_t* src, const uint32_t* index, uint32_t count,
                                         uint32_t words, uint32_t* out) {
    const uint64_t total = uint64_t(count) * words;
    for (uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
         t += uint64_t(gridDim.x) * blockDim.x) {
        const uint64_t k = t / words, word = t % words;
        out[uint64_t(index[k]) * words + word] = src[t];
    }
}
