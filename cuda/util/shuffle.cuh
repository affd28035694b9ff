// Warp shuffles of whole values (field elements, points), word by word.
#pragma once

#include <cstdint>

namespace cuzk {

// `v` of the lane `delta` above this one (every lane of the warp must call it).
template <class T>
__device__ __forceinline__ T shuffle_down(const T& v, uint32_t delta) {
    static_assert(sizeof(T) % 4 == 0, "shuffled values are whole 32-bit words");
    T r;
    const uint32_t* from = reinterpret_cast<const uint32_t*>(&v);
    uint32_t* to = reinterpret_cast<uint32_t*>(&r);
#pragma unroll
    for (uint32_t i = 0; i < sizeof(T) / 4; i++) to[i] = __shfl_down_sync(0xffffffffu, from[i], delta);
    return r;
}

}  // namespace cuzk
