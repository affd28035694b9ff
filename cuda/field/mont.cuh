// Montgomery arithmetic over an N-limb (32-bit) prime field, for moduli with at least two spare
// bits in the top limb (BLS12-381's p: 381 of 384; r: 255 of 256), so sums of two reduced values
// and the CIOS accumulator never overflow N + 1 limbs.
//
// Storage is the host's: little-endian 32-bit limbs of x·R mod m, which is byte-for-byte the
// Montgomery form blst keeps in little-endian u64 limbs. Carry chains use PTX's condition code;
// each chain is a run of consecutive asm statements with nothing in between.
#pragma once

#include <cstdint>

namespace cuzk {

// Field parameters: `P::N` limbs, `P::inv()` = −m⁻¹ mod 2³², `P::INLINE_MUL`, `P::SPARSE_LOW`, and the limbs of the modulus, of R mod m
// ("one") and of R² mod m, read from constant memory (see field/params.cuh).
// 16-byte aligned (both fields' sizes are multiples of 16): copies to and from global memory are
// 128-bit accesses, a quarter of the instructions of 32-bit ones. A warp's scattered point loads
// were L1-throughput bound with 32-bit accesses (one per limb).
template <class P>
struct alignas(16) mont {
    static constexpr int N = P::N;
    uint32_t l[N];

    __device__ __forceinline__ static mont zero() {
        mont r;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = 0;
        return r;
    }

    __device__ __forceinline__ static mont one() {
        mont r;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = P::one(i);
        return r;
    }

    __device__ __forceinline__ bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= l[i];
        return acc == 0;
    }

    __device__ __forceinline__ bool operator==(const mont& o) const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= l[i] ^ o.l[i];
        return acc == 0;
    }

    __device__ __forceinline__ bool operator!=(const mont& o) const { return !(*this == o); }

    // r = a − m if a ≥ m, else a (a < 2m).
    __device__ __forceinline__ static void reduce_once(uint32_t (&a)[N], uint32_t top) {
        uint32_t s[N], borrow;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(s[0]) : "r"(a[0]), "r"(P::mod(0)));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(s[i]) : "r"(a[i]), "r"(P::mod(i)));
        asm volatile("subc.u32 %0, %1, 0;" : "=r"(borrow) : "r"(top));
        // borrow is 0xffffffff when a < m: keep a.
#pragma unroll
        for (int i = 0; i < N; i++) a[i] = (a[i] & borrow) | (s[i] & ~borrow);
    }

    __device__ __forceinline__ mont operator+(const mont& b) const {
        mont r;
        uint32_t top;
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.l[0]) : "r"(l[0]), "r"(b.l[0]));
#pragma unroll
        for (int i = 1; i < N; i++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.l[i]) : "r"(l[i]), "r"(b.l[i]));
        asm volatile("addc.u32 %0, 0, 0;" : "=r"(top));
        reduce_once(r.l, top);
        return r;
    }

    __device__ __forceinline__ mont operator-(const mont& b) const {
        mont r;
        uint32_t borrow;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r.l[0]) : "r"(l[0]), "r"(b.l[0]));
#pragma unroll
        for (int i = 1; i < N; i++) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r.l[i]) : "r"(l[i]), "r"(b.l[i]));
        asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
        // On borrow add m back.
        asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(r.l[0]) : "r"(P::mod(0) & borrow));
#pragma unroll
        for (int i = 1; i < N - 1; i++) asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(r.l[i]) : "r"(P::mod(i) & borrow));
        asm volatile("addc.u32 %0, %0, %1;" : "+r"(r.l[N - 1]) : "r"(P::mod(N - 1) & borrow));
        return r;
    }

    __device__ __forceinline__ mont operator-() const { return zero() - *this; }

    __device__ __forceinline__ mont dbl() const { return *this + *this; }

    // acc[2k], acc[2k + 1] += x[2k + s]·y for k in [from, to): the products of every other limb
    // of x never overlap, so each one's low and high halves go into adjacent limbs of a single
    // carry chain. ptxas fuses such a (mad.lo.cc, madc.hi.cc) pair into one IMAD.WIDE.U32.X,
    // which costs what an IMAD.HI alone costs: a product for 2/3 of separate low and high halves.
    // `chained`: the first pair takes the carry already in the condition code. The carry out of
    // the last limb is left there for the caller.
    template <int from, int to, int s, bool chained>
    __device__ __forceinline__ static void mad_pairs(uint32_t* acc, const uint32_t* x, uint32_t y) {
#pragma unroll
        for (int k = from; k < to; k++) {
            if (k == from && !chained)
                asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(acc[2 * k]) : "r"(x[2 * k + s]), "r"(y));
            else
                asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(acc[2 * k]) : "r"(x[2 * k + s]), "r"(y));
            asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(acc[2 * k + 1]) : "r"(x[2 * k + s]), "r"(y));
        }
    }

    // acc[0..N) += add[0..N), the carry out left in the condition code.
    __device__ __forceinline__ static void add_limbs(uint32_t* acc, const uint32_t* add) {
        asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(acc[0]) : "r"(add[0]));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(acc[j]) : "r"(add[j]));
    }

    // Montgomery product a·b·R⁻¹ (CIOS, one limb of b per row), with the row's products split by
    // the parity of the other operand's limb so that every 32×32 product is one fused
    // instruction (see mad_pairs). The running value is kept as e + o:
    //   e += o; e += even products of a·bᵢ; q = e₀·INV; e += even products of q·m;
    //   o = odd products of a·bᵢ and of q·m, each aligned one limb down; e >>= 32.
    // Bounds (a, b < m, m < 2^(32N − 2)): the value stays below 2m after each row, e below
    // 2m + 2^33·m < 2^(32N + 32) within a row, o below 2m; so e needs N + 1 limbs, o N, and
    // neither chain carries out of its last limb.
    // With P::SPARSE_LOW (m₀ = 1, m₁ = 2^32 − 1) the two lowest products of q·m are an addition
    // each: q·m₀ = q, and q·m₁ = q·2^32 − q = (q − [q ≠ 0])·2^32 + (−q mod 2^32).
    __device__ __forceinline__ static mont mul_inline(const mont& a, const mont& b) {
        static_assert(N % 2 == 0, "the parity split needs an even limb count");
        uint32_t m[N], e[N + 1], o[N];
#pragma unroll
        for (int j = 0; j < N; j++) m[j] = P::mod(j), e[j] = 0, o[j] = 0;
        e[N] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint32_t bi = b.l[i];
            if (i > 0) {
                add_limbs(e, o);
                asm volatile("addc.u32 %0, 0, 0;" : "=r"(e[N]));
            }
            mad_pairs<0, N / 2, 0, false>(e, a.l, bi);
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(e[N]));
            const uint32_t q = e[0] * P::inv();
            if constexpr (P::SPARSE_LOW) {
                asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(e[0]) : "r"(q));
                asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(e[1]));
                mad_pairs<1, N / 2, 0, true>(e, m, q);
            } else {
                mad_pairs<0, N / 2, 0, false>(e, m, q);
            }
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(e[N]));
#pragma unroll
            for (int j = 0; j < N; j++) o[j] = 0;
            mad_pairs<0, N / 2, 1, false>(o, a.l, bi);
            if constexpr (P::SPARSE_LOW) {
                const uint32_t lo = 0u - q, hi = q - (q != 0 ? 1u : 0u);
                asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(o[0]) : "r"(lo));
                asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(o[1]) : "r"(hi));
                mad_pairs<1, N / 2, 1, true>(o, m, q);
            } else {
                mad_pairs<0, N / 2, 1, false>(o, m, q);
            }
            // e₀ is now zero: shift one limb down.
#pragma unroll
            for (int j = 0; j < N; j++) e[j] = e[j + 1];
        }
        uint32_t top;
        add_limbs(e, o);
        asm volatile("addc.u32 %0, 0, 0;" : "=r"(top));
        mont r;
#pragma unroll
        for (int j = 0; j < N; j++) r.l[j] = e[j];
        reduce_once(r.l, top);
        return r;
    }

    // Out of line for wide fields: a G2 point addition inlines dozens of Fp products, and inlined
    // they cost minutes of ptxas time and spill heavily; the call costs a few percent. Arguments by
    // value travel in registers; by reference they went through the stack (G2 MSM 26% slower).
    __device__ __noinline__ static mont mul_call(const mont a, const mont b) { return mul_inline(a, b); }

    __device__ __forceinline__ mont operator*(const mont& b) const {
        if constexpr (P::INLINE_MUL) {
            return mul_inline(*this, b);
        } else {
            return mul_call(*this, b);
        }
    }

    __device__ __forceinline__ mont sqr() const { return *this * *this; }

    // x·R⁻¹: Montgomery form to the canonical integer (as limbs).
    __device__ __forceinline__ mont from_montgomery() const {
        mont one_raw = zero();
        one_raw.l[0] = 1;
        return *this * one_raw;
    }

    // x·R: canonical integer (limbs, < m) to Montgomery form.
    __device__ __forceinline__ mont to_montgomery() const {
        mont r2;
#pragma unroll
        for (int i = 0; i < N; i++) r2.l[i] = P::r2(i);
        return *this * r2;
    }

    // x⁻¹ (zero maps to zero) by the binary extended Euclidean algorithm on the stored integer
    // X = x·R: invariants x1·X ≡ u and x2·X ≡ v (mod m) with v odd; each step makes u even if it
    // is odd (u − v, after a swap that keeps u ≥ v) and halves it, so u reaches 0 within 2·log m
    // steps, leaving v = gcd(X, m) = 1 and x2 = X⁻¹ = x⁻¹·R⁻¹. One product by R³ then gives x⁻¹·R.
    // Its steps are a few dependent limb operations each, far less latency than a Fermat power
    // (log m dependent products), which the MSM's pair rounds wait on once per round (H200, G1
    // 2^22: their inversion pass 5.8 → 3.3 ms).
    __device__ mont inverse() const {
        uint32_t u[N], v[N];
        mont x1 = zero(), x2 = zero();
        x1.l[0] = 1;
#pragma unroll
        for (int i = 0; i < N; i++) {
            u[i] = l[i];
            v[i] = P::mod(i);
        }
        while (!limbs_zero(u)) {
            if (u[0] & 1) {
                if (limbs_less(u, v)) {
#pragma unroll
                    for (int i = 0; i < N; i++) {
                        const uint32_t t = u[i];
                        u[i] = v[i];
                        v[i] = t;
                    }
                    const mont t = x1;
                    x1 = x2;
                    x2 = t;
                }
                limbs_sub(u, v);
                x1 = x1 - x2;
            }
            limbs_halve(u, 0);
            // x1/2 mod m: x1 + m when x1 is odd (below 2m, inside N limbs: m has spare top bits).
            uint32_t carry = 0;
            if (x1.l[0] & 1) carry = limbs_add_mod(x1.l);
            limbs_halve(x1.l, carry);
        }
        mont r2, r3;
#pragma unroll
        for (int i = 0; i < N; i++) r2.l[i] = P::r2(i);
        r3 = r2 * r2;  // R⁴/R
        return x2 * r3;
    }

  private:
    __device__ __forceinline__ static bool limbs_zero(const uint32_t (&a)[N]) {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= a[i];
        return acc == 0;
    }
    __device__ __forceinline__ static bool limbs_less(const uint32_t (&a)[N], const uint32_t (&b)[N]) {
        uint32_t borrow = 0;  // the borrow out of a − b
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint64_t d = uint64_t(a[i]) - b[i] - borrow;
            borrow = uint32_t(d >> 63);
        }
        return borrow != 0;
    }
    __device__ __forceinline__ static void limbs_sub(uint32_t (&a)[N], const uint32_t (&b)[N]) {
        uint32_t borrow = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint64_t d = uint64_t(a[i]) - b[i] - borrow;
            a[i] = uint32_t(d);
            borrow = uint32_t(d >> 63);
        }
    }
    // a += m; returns the carry out (zero here, kept for the halving's top bit).
    __device__ __forceinline__ static uint32_t limbs_add_mod(uint32_t* a) {
        uint32_t carry = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint64_t s = uint64_t(a[i]) + P::mod(i) + carry;
            a[i] = uint32_t(s);
            carry = uint32_t(s >> 32);
        }
        return carry;
    }
    // a = (a + top·2^(32N)) / 2.
    __device__ __forceinline__ static void limbs_halve(uint32_t* a, uint32_t top) {
#pragma unroll
        for (int i = 0; i < N - 1; i++) a[i] = __funnelshift_r(a[i], a[i + 1], 1);
        a[N - 1] = __funnelshift_r(a[N - 1], top, 1);
    }
};

}  // namespace cuzk
