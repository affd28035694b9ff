// Number-theoretic transforms over Fr in device memory, in place, n = 2^L points.
//
// A transform is a few passes; each pass runs k ≤ NTT_MAX_PASS_BITS radix-2 stages of size-2^k
// sub-transforms held in shared memory, one block per `cols` of them. Writing an index as
// high·2^(lo+k) + mid·2^lo + low, a pass over bits [lo, lo + k) transforms along mid for every
// (high, low): that is the split n' = 2^k · 2^lo of the size-n' = 2^(lo+k) DFT that the earlier
// passes left in each contiguous run of n' points. Passes meet through one diagonal twiddle:
//
//   DIF (Gentleman–Sande; natural in, bit-reversed out; passes from the top bits down):
//     sub-DFT along mid, then position (mid, low) times ω_{n'}^(low · rev_k(mid));
//   DIT (Cooley–Tukey; bit-reversed in, natural out; passes from the bottom bits up):
//     the transpose of the above: the same twiddle first, then the sub-DFT.
//
// The root ω (or ω⁻¹ for inverses) is chosen by the tables passed in. Twiddles come from tables:
// the stage table stage_tw[2^t + m] = ω_{2^(t+1)}^m (t < NTT_MAX_PASS_BITS), and for the
// inter-pass ones ω_n^e = lo[e mod 2^split] · hi[e >> split], or one read of a direct table
// ω_{n'}^e, which saves a product per element: e < n' for a pass below the top one, e < n/2 for
// the top pass (n' = n; the other half is the negation, ω_n^(n/2) = −1). The stage table and
// the lower direct table hold fixed factors for mont::mul_shoup, whose product takes 17% fewer
// multiplier cycles than a Montgomery one (all of a transform's products but the top pass's
// twiddles and the scales; H200, 2^27: 37.05 → 33.10 ms). The top pass's table is as large as
// half the data and read at random, so a DIF top pass fetches its block's twiddles into a second
// tile with cp.async as it starts; they arrive while the stages run (H200, 2^27: 41.5 → 39.4 ms).
// The coset shift g^i (forward) and 1/n or g^-i/n (inverse) ride on the first pass's loads or the
// last pass's stores, from tables of the same two-level shape indexed by the natural index i of
// the element. Between a transform's loads and its last stores values stay in the lazy range
// (below 2r, see mont::add_lazy): no product pays for a final subtraction, and each element is
// reduced once, as the last pass stores it.
//
// Shared memory keeps a block's elements as 32-byte records, each read and written as two 16-byte
// halves (two 128-bit accesses instead of eight 32-bit ones, each with its own address: a pass
// spends its time issuing instructions and on the multiplier, not on shared-memory bandwidth;
// on an H200 the heavy multiply pipe is ~70% busy). The stages run two at a time: a thread loads
// the four elements of a radix-4 quad, does both stages' butterflies in registers and stores the
// four back, so a pass has half the shared-memory round trips and barriers, and each thread two
// independent products per stage. A record's halves sit at units 2e ^ g and 2e ^ g ^ 1 of its
// 128-byte row, g a linear function of bits 2 to 4 of its slot e, chosen so that the eight accesses
// of a quarter-warp cover the eight 16-byte bank groups once: in the loads and stores (neighbouring
// slots), in every quad step (the quads of stages t, t − 1, whatever slot bits they flip) and in
// a lone stage.
#pragma once

#include "field/params.cuh"

namespace cuzk {

// Mirrored in crates/cuzk-gpu/src/ntt.rs; keep the two in step.
constexpr uint32_t NTT_MAX_PASS_BITS = 10;  // radix of one pass: 2^10; stage table of 2^10 entries
constexpr uint32_t NTT_THREADS = 256;       // threads per block at most
// Blocks per SM the pass is compiled for: three of 256 threads cap it at 80 registers, which the
// radix-4 steps' four elements and a product need (at four blocks, 64 registers, they spill 136
// bytes). H200, 2^27: 3 blocks 41.8 ms, 4 42.4, 2 43.7 (radix-2 stages at 4 blocks: 43.7).
constexpr uint32_t NTT_MIN_BLOCKS = 3;

// How a pass scales the values it loads or stores.
enum : uint32_t {
    NTT_SCALE_NONE = 0,
    NTT_SCALE_CONST = 1,   // times scale_lo[0]
    NTT_SCALE_POWERS = 2,  // times scale_lo[i mod 2^split] · scale_hi[i >> split], i the natural index
};

// Mirrored in crates/cuzk-gpu/src/ntt.rs (`NttPassParams`); keep the two in step.
struct ntt_pass_params {
    uint32_t log_n;       // L ≥ 1
    uint32_t lo;          // lowest index bit the pass transforms
    uint32_t bits;        // k ≥ 1: stages of this pass
    uint32_t log_cols;    // sub-transforms per block, log2; cols ≤ 2^lo when lo ≥ 1
    uint32_t split;       // the low tables hold 2^split entries
    uint32_t dit;         // 0: DIF pass, 1: DIT pass
    uint32_t pre_scale;   // NTT_SCALE_* applied to loaded values
    uint32_t post_scale;  // NTT_SCALE_* applied to stored values
};

// A twiddle as mont::mul_shoup takes it: the root as a plain integer, then its quotient.
struct ntt_factor {
    fr_t w, wq;
};

// An element from its two 16-byte halves.
__device__ __forceinline__ fr_t fr_of_halves(const uint4 a, const uint4 b) {
    fr_t r;
    r.l[0] = a.x, r.l[1] = a.y, r.l[2] = a.z, r.l[3] = a.w;
    r.l[4] = b.x, r.l[5] = b.y, r.l[6] = b.z, r.l[7] = b.w;
    return r;
}

// Global memory holds elements 32-byte aligned (allocations are 256-byte aligned): two 16-byte
// accesses each. `ldg_fr` is for tables no kernel writes.
__device__ __forceinline__ fr_t ntt_load(const fr_t* p) {
    const uint4* v = reinterpret_cast<const uint4*>(p);
    const uint4 a = v[0], b = v[1];
    return fr_of_halves(a, b);
}

__device__ __forceinline__ fr_t ldg_fr(const fr_t* p) {
    const uint4* v = reinterpret_cast<const uint4*>(p);
    const uint4 a = __ldg(v), b = __ldg(v + 1);
    return fr_of_halves(a, b);
}

__device__ __forceinline__ void ntt_store(fr_t* p, const fr_t& x) {
    uint4* v = reinterpret_cast<uint4*>(p);
    v[0] = make_uint4(x.l[0], x.l[1], x.l[2], x.l[3]);
    v[1] = make_uint4(x.l[4], x.l[5], x.l[6], x.l[7]);
}

// The block's element in slot e: its halves at 16-byte units u and u ^ 1 of its 128-byte row,
// u = 2e ^ g, g linear in bits 2, 3 and 4 of e, which flip the bank group by 1, 7 and 3: then the
// three lowest slot bits a step leaves to a quarter-warp's eight lanes (bits 0 to 2 for
// neighbouring slots; for a pair or quad, the lowest three it does not flip) reach all eight
// groups, for every pass shape (checked by a script). TILE_SWIZZLE holds g at bits 3j to 3j + 2,
// j = bits 2 to 4 of e.
constexpr uint32_t TILE_SWIZZLE = 0xb13dc8;

__device__ __forceinline__ uint32_t tile_unit(uint32_t e) { return 2 * e ^ ((TILE_SWIZZLE >> 3 * ((e >> 2) & 7)) & 7); }

__device__ __forceinline__ fr_t tile_get(const uint4* tile, uint32_t e) {
    const uint32_t u = tile_unit(e);
    const uint4 a = tile[u], b = tile[u ^ 1];
    return fr_of_halves(a, b);
}

__device__ __forceinline__ void tile_put(uint4* tile, uint32_t e, const fr_t& x) {
    const uint32_t u = tile_unit(e);
    tile[u] = make_uint4(x.l[0], x.l[1], x.l[2], x.l[3]);
    tile[u ^ 1] = make_uint4(x.l[4], x.l[5], x.l[6], x.l[7]);
}

// x times a twiddle given as a fixed factor, in the lazy range.
__device__ __forceinline__ fr_t ntt_times(const fr_t& x, const ntt_factor* f) {
    return x.mul_shoup(ldg_fr(&f->w), ldg_fr(&f->wq));
}

// base^e from the two-level tables lo[j] = base^j (j < 2^split), hi[j] = base^(j·2^split).
__device__ __forceinline__ fr_t table_power(const fr_t* lo, const fr_t* hi, uint32_t split, uint32_t e) {
    return ldg_fr(lo + (e & ((1u << split) - 1))) * ldg_fr(hi + (e >> split));
}

// The lowest `bits` bits of x reversed (1 ≤ bits ≤ 32).
__device__ __forceinline__ uint32_t reverse_bits(uint32_t x, uint32_t bits) { return __brev(x) >> (32 - bits); }

__device__ __forceinline__ fr_t ntt_scale(const fr_t& x, uint32_t mode, const fr_t* lo, const fr_t* hi,
                                          uint32_t split, uint32_t i) {
    const fr_t f = mode == NTT_SCALE_CONST ? ldg_fr(lo) : table_power(lo, hi, split, i);
    return x.mul_lazy(f);
}

// Where the block's e-th element lives. Consecutive e are consecutive addresses in runs of cols
// (lo ≥ 1: e = mid·cols + c) or of the whole sub-transform (lo = 0: e = c·2^k + mid), and the
// block's shared slot of the element is e itself.
struct ntt_slot {
    uint32_t mid, low, index;
};

__device__ __forceinline__ ntt_slot ntt_locate(const ntt_pass_params& p, uint32_t e) {
    uint32_t c, mid;
    if (p.lo == 0) {
        mid = e & ((1u << p.bits) - 1);
        c = e >> p.bits;
    } else {
        c = e & ((1u << p.log_cols) - 1);
        mid = e >> p.log_cols;
    }
    const uint32_t s = (blockIdx.x << p.log_cols) + c;  // which sub-transform, over all blocks
    const uint32_t high = s >> p.lo, low = s & ((1u << p.lo) - 1);
    return {mid, low, (high << (p.lo + p.bits)) | (mid << p.lo) | low};
}

__device__ __forceinline__ uint32_t ntt_twiddle_exponent(const ntt_pass_params& p, const ntt_slot& at) {
    return at.low * reverse_bits(at.mid, p.bits);
}

// The top pass's direct table holds ω_n^e for e < n/2 only: ω_n^(e + n/2) = −ω_n^e.
__device__ __forceinline__ bool ntt_top_direct(const ntt_pass_params& p, const fr_t* direct) {
    return direct != nullptr && p.lo + p.bits == p.log_n;
}

__device__ __forceinline__ fr_t ntt_negate_if(const fr_t& w, bool negate) {
    const fr_t minus = -w;
    return negate ? minus : w;
}

// x times ω_{n'}^(low · rev_k(mid)), n' = 2^(lo+k): from the pass's direct table when it has one
// (the top pass's holds elements ω_n^e, e < n/2; a lower pass's fixed factors ω_{n'}^e for
// mul_shoup), else as ω_n^e' (e' < n) from the two-level tables.
__device__ __forceinline__ fr_t ntt_times_pass_twiddle(const fr_t& x, const ntt_pass_params& p, const ntt_slot& at,
                                                       const fr_t* lo, const fr_t* hi, const fr_t* direct) {
    const uint32_t e = ntt_twiddle_exponent(p, at);
    const bool top = ntt_top_direct(p, direct);
    if (direct != nullptr && !top) return ntt_times(x, reinterpret_cast<const ntt_factor*>(direct) + e);
    const uint32_t half = 1u << (p.log_n - 1);
    const fr_t w = top ? ntt_negate_if(ldg_fr(direct + (e & (half - 1))), (e & half) != 0)
                       : table_power(lo, hi, p.split, e << (p.log_n - p.lo - p.bits));
    return x.mul_lazy(w);
}

// (x, y) ← (x + y, x − y), in the lazy range.
__device__ __forceinline__ void ntt_butterfly(fr_t& x, fr_t& y) {
    const fr_t sum = x.add_lazy(y);
    y = x.sub_lazy(y);
    x = sum;
}

// One stage on two pairs, (x, y) and (u, v), y and v the elements with the stage's mid bit set,
// whose twiddles wy and wv come after the butterfly (DIF) or before it (DIT). The two products
// are independent, in one basic block, so they can overlap.
__device__ __forceinline__ void ntt_stage_pairs(fr_t& x, fr_t& y, fr_t& u, fr_t& v, const ntt_factor* wy,
                                                const ntt_factor* wv, bool dit) {
    if (!dit) ntt_butterfly(x, y), ntt_butterfly(u, v);
    y = ntt_times(y, wy);
    v = ntt_times(v, wv);
    if (dit) ntt_butterfly(x, y), ntt_butterfly(u, v);
}

// Stage t alone (slot bit b = mid_at + t): butterfly q pairs q with a zero bit inserted at b and
// that with the bit set; twiddle ω_{2^(t+1)}^(mid mod 2^t), 1 at t = 0 (no products). A thread
// takes `per` pairs at a time, their products in one basic block so that they overlap; a
// twiddle of 1 is multiplied all the same (a warp's pairs have mixed mid).
template <int per>
__device__ __forceinline__ void ntt_radix2_pairs(uint4* tile, const ntt_factor* stage_tw, uint32_t size, uint32_t mid_at,
                                                 uint32_t t, bool dit) {
    const uint32_t h = 1u << t, b = mid_at + t, below = (1u << b) - 1;
    for (uint32_t q0 = threadIdx.x; q0 < size / 2; q0 += per * blockDim.x) {
        uint32_t ia[per], ib[per];
        fr_t x[per], y[per];
#pragma unroll
        for (int j = 0; j < per; j++) {
            const uint32_t q = q0 + j * blockDim.x;
            ia[j] = ((q & ~below) << 1) | (q & below), ib[j] = ia[j] | (1u << b);
            x[j] = tile_get(tile, ia[j]), y[j] = tile_get(tile, ib[j]);
            if (!dit) ntt_butterfly(x[j], y[j]);
        }
        if (t > 0) {
#pragma unroll
            for (int j = 0; j < per; j++) y[j] = ntt_times(y[j], stage_tw + h + ((ia[j] >> mid_at) & (h - 1)));
        }
#pragma unroll
        for (int j = 0; j < per; j++) {
            if (dit) ntt_butterfly(x[j], y[j]);
            tile_put(tile, ia[j], x[j]);
            tile_put(tile, ib[j], y[j]);
        }
    }
}

__device__ __forceinline__ void ntt_radix2_stage(uint4* tile, const ntt_factor* stage_tw, uint32_t size,
                                                 uint32_t mid_at, uint32_t t, bool dit) {
    if (size / 2 >= 2 * blockDim.x) {
        ntt_radix2_pairs<2>(tile, stage_tw, size, mid_at, t, dit);
    } else {
        ntt_radix2_pairs<1>(tile, stage_tw, size, mid_at, t, dit);
    }
    __syncthreads();
}

// Stages t and t − 1 (t ≥ 1), DIF t first, DIT t − 1 first. Quad q is q with two zero bits
// inserted at slot bits mid_at + t − 1 and up: x0 there, x1 and x2 one step of the second and of
// the first stage up, x3 both; the first stage pairs (x0, x2) and (x1, x3), the second (x0, x1)
// and (x2, x3). With m the quad's mid mod 2^(t−1), stage t's pairs take ω_{2^(t+1)}^m and, the one
// with mid bit t − 1 set, ω_{2^(t+1)}^(m + 2^(t−1)); both of stage t − 1 take ω_{2^t}^m. Products
// by a twiddle of 1 are skipped only at t = 1, where the quad needs just ω_4: for t ≥ 2 a warp's
// quads have mixed m, so skipping would save nothing and split the two products apart.
__device__ __forceinline__ void ntt_radix4_step(uint4* tile, const ntt_factor* stage_tw, uint32_t size,
                                                uint32_t mid_at, uint32_t t, bool dit) {
    const uint32_t h = 1u << t, below = (1u << (mid_at + t - 1)) - 1;
    const uint32_t first = dit ? t - 1 : t, second = dit ? t : t - 1;
    const uint32_t to_first = 1u << (mid_at + first), to_second = 1u << (mid_at + second);
    for (uint32_t q = threadIdx.x; q < size / 4; q += blockDim.x) {
        const uint32_t i0 = ((q & ~below) << 2) | (q & below), i1 = i0 | to_second, i2 = i0 | to_first,
                       i3 = i1 | to_first;
        fr_t x0 = tile_get(tile, i0), x1 = tile_get(tile, i1), x2 = tile_get(tile, i2), x3 = tile_get(tile, i3);
        if (t == 1) {
            // In either order the same: stage 1's pair (x1, x3) takes ω_4 after stage 1 (DIF) or
            // before it, after stage 0 (DIT); x3 is that pair's upper element both ways.
            ntt_butterfly(x0, x2), ntt_butterfly(x1, x3);
            x3 = ntt_times(x3, stage_tw + 3);
            ntt_butterfly(x0, x1), ntt_butterfly(x2, x3);
        } else {
            const uint32_t m = (i0 >> mid_at) & (h / 2 - 1);
            const ntt_factor *top = stage_tw + h + m, *low = stage_tw + h / 2 + m;
            ntt_stage_pairs(x0, x2, x1, x3, dit ? low : top, dit ? low : top + h / 2, dit);
            ntt_stage_pairs(x0, x1, x2, x3, dit ? top : low, dit ? top + h / 2 : low, dit);
        }
        tile_put(tile, i0, x0);
        tile_put(tile, i1, x1);
        tile_put(tile, i2, x2);
        tile_put(tile, i3, x3);
    }
    __syncthreads();
}

}  // namespace cuzk

// One pass (see the top of this file). Block: cols·2^k elements in 32·cols·2^k bytes of dynamic
// shared memory (16-byte aligned), twice that for a DIF top pass given a direct table; grid:
// 2^(L−k−log_cols) blocks; blockDim.x ≤ min(NTT_THREADS, cols·2^(k−1)), a power of two.
extern "C" __global__ void __launch_bounds__(cuzk::NTT_THREADS, cuzk::NTT_MIN_BLOCKS)
    ntt_pass(cuzk::fr_t* data, const cuzk::ntt_factor* stage_tw, const cuzk::fr_t* tw_lo, const cuzk::fr_t* tw_hi,
             const cuzk::fr_t* tw_direct, const cuzk::fr_t* scale_lo, const cuzk::fr_t* scale_hi,
             cuzk::ntt_pass_params p) {
    using namespace cuzk;
    extern __shared__ uint4 tile[];
    const uint32_t k = p.bits, size = 1u << (p.log_cols + k);
    // Slot bit of mid bit 0: mid is the slot's low bits (lo = 0) or sits above the column bits.
    const uint32_t mid_at = p.lo == 0 ? 0 : p.log_cols;

    // DIF top pass with its direct table: the twiddles the stores need are fetched now, into a
    // second tile (each thread its own elements'), and arrive while the stages run.
    uint4* twiddles = tile + 2 * size;
    const bool prefetch = !p.dit && ntt_top_direct(p, tw_direct);
    // Values stay in the lazy range (below 2r) through the passes; the last one stores them reduced.
    const bool last = p.dit ? p.lo + p.bits == p.log_n : p.lo == 0;
    if (prefetch) {
        const uint32_t half = 1u << (p.log_n - 1);
        for (uint32_t e = threadIdx.x; e < size; e += blockDim.x) {
            const uint32_t x = ntt_twiddle_exponent(p, ntt_locate(p, e)) & (half - 1);
            const uint4* from = reinterpret_cast<const uint4*>(tw_direct + x);
            const uint32_t to = static_cast<uint32_t>(__cvta_generic_to_shared(twiddles + 2 * e));
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to), "l"(from));
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to + 16), "l"(from + 1));
        }
        asm volatile("cp.async.commit_group;");
    }

    // A thread holds 2 or 4 elements (blockDim ≤ size / 2): it takes them two at a time, so that
    // their loads are in flight together and their products overlap. The pass twiddle of low = 0
    // is 1 and is multiplied all the same, which keeps the two products in one basic block.
    for (uint32_t e = threadIdx.x; e < size; e += 2 * blockDim.x) {
        ntt_slot at[2];
        fr_t x[2];
#pragma unroll
        for (int j = 0; j < 2; j++) at[j] = ntt_locate(p, e + j * blockDim.x), x[j] = ntt_load(data + at[j].index);
        if (p.pre_scale != NTT_SCALE_NONE) {
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const uint32_t i = p.dit ? reverse_bits(at[j].index, p.log_n) : at[j].index;
                x[j] = ntt_scale(x[j], p.pre_scale, scale_lo, scale_hi, p.split, i);
            }
        }
        if (p.dit && p.lo != 0) {
#pragma unroll
            for (int j = 0; j < 2; j++) x[j] = ntt_times_pass_twiddle(x[j], p, at[j], tw_lo, tw_hi, tw_direct);
        }
#pragma unroll
        for (int j = 0; j < 2; j++) tile_put(tile, e + j * blockDim.x, x[j]);
    }
    __syncthreads();

    // Stage t pairs the slots that differ in mid bit t (slot bit mid_at + t), with twiddle
    // ω_{2^(t+1)}^(mid mod 2^t): DIF from t = k−1 down, DIT from t = 0 up. They run in radix-4 steps
    // of two, paired so that one step is stages (1, 0), whose quads need a single product; with k
    // odd, stage k−1 runs alone, first (DIF) or last (DIT).
    const bool lone = k & 1;
    for (uint32_t step = 0; step < (k + 1) / 2; step++) {
        if (lone && step == (p.dit ? k / 2 : 0)) {
            ntt_radix2_stage(tile, stage_tw, size, mid_at, k - 1, p.dit);
        } else {
            const uint32_t t = p.dit ? 2 * step + 1 : k - 1 + lone - 2 * step;
            ntt_radix4_step(tile, stage_tw, size, mid_at, t, p.dit);
        }
    }

    for (uint32_t e = threadIdx.x; e < size; e += 2 * blockDim.x) {
        ntt_slot at[2];
        fr_t x[2];
#pragma unroll
        for (int j = 0; j < 2; j++) at[j] = ntt_locate(p, e + j * blockDim.x), x[j] = tile_get(tile, e + j * blockDim.x);
        if (prefetch) {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
            const uint32_t half = 1u << (p.log_n - 1);
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const uint4* w = twiddles + 2 * (e + j * blockDim.x);
                const uint4 a = w[0], b = w[1];
                x[j] = x[j].mul_lazy(ntt_negate_if(fr_of_halves(a, b), (ntt_twiddle_exponent(p, at[j]) & half) != 0));
            }
        } else if (!p.dit && p.lo != 0) {
#pragma unroll
            for (int j = 0; j < 2; j++) x[j] = ntt_times_pass_twiddle(x[j], p, at[j], tw_lo, tw_hi, tw_direct);
        }
        if (p.post_scale != NTT_SCALE_NONE) {
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const uint32_t i = p.dit ? at[j].index : reverse_bits(at[j].index, p.log_n);
                x[j] = ntt_scale(x[j], p.post_scale, scale_lo, scale_hi, p.split, i);
            }
        }
#pragma unroll
        for (int j = 0; j < 2; j++) ntt_store(data + at[j].index, last ? x[j].reduced() : x[j]);
    }
}

// out[e] = lo[e mod 2^split] · hi[e >> split] for e < count: a direct table from two-level ones.
extern "C" __global__ void ntt_power_table(cuzk::fr_t* out, const cuzk::fr_t* lo, const cuzk::fr_t* hi, uint32_t split,
                                           uint32_t count) {
    const uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e < count) cuzk::ntt_store(out + e, cuzk::table_power(lo, hi, split, e));
}

// In-place bit-reversal permutation of n = 2^log_n ≥ 2 elements: thread i swaps with rev(i) > i.
extern "C" __global__ void ntt_bit_reverse(cuzk::fr_t* data, uint32_t log_n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (log_n == 0 || i >= (1u << log_n)) return;
    const uint32_t j = cuzk::reverse_bits(i, log_n);
    if (i < j) {
        const cuzk::fr_t x = cuzk::ntt_load(data + i), y = cuzk::ntt_load(data + j);
        cuzk::ntt_store(data + i, y);
        cuzk::ntt_store(data + j, x);
    }
}

// a[i] = (a[i]·b[i] − c[i])·factor for i < n: a quotient (a∘b − c)/Z by the vanishing polynomial
// on the coset g·H, where Z is the constant g^n − 1 (factor = its inverse); any common order.
extern "C" __global__ void ntt_ab_minus_c(cuzk::fr_t* a, const cuzk::fr_t* b, const cuzk::fr_t* c,
                                          cuzk::fr_t factor, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const cuzk::fr_t x = cuzk::ntt_load(a + i) * cuzk::ntt_load(b + i) - cuzk::ntt_load(c + i);
    cuzk::ntt_store(a + i, x * factor);
}

// The same quotient in two steps, for a device that holds two of the three vectors at a time:
// a[i] = a[i]·b[i], then (with c in b's place) a[i] = (a[i] − c[i])·factor.
extern "C" __global__ void ntt_mul(cuzk::fr_t* a, const cuzk::fr_t* b, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuzk::ntt_store(a + i, cuzk::ntt_load(a + i) * cuzk::ntt_load(b + i));
}

extern "C" __global__ void ntt_minus_scaled(cuzk::fr_t* a, const cuzk::fr_t* c, cuzk::fr_t factor,
                                            uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuzk::ntt_store(a + i, (cuzk::ntt_load(a + i) - cuzk::ntt_load(c + i)) * factor);
}
