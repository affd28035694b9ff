// Montgomery arithmetic over an N-limb (32-bit) prime field, for moduli with a spare bit in the
// top limb (m < R/2; BLS12-381's p: 381 bits of 384, r: 255 of 256), so sums of two values below
// 2m and the CIOS accumulator never overflow N + 1 limbs.
//
// Storage is the host's: little-endian 32-bit limbs of x·R mod m, which is byte-for-byte the
// Montgomery form blst keeps in little-endian u64 limbs. Carry chains use PTX's condition code;
// each chain is a run of consecutive asm statements with nothing in between.
#pragma once

#include <cstdint>

namespace cuzk {

// Field parameters: `P::N` limbs, `P::inv()` = −m⁻¹ mod 2³², `P::INLINE_MUL`, `P::SPARSE_LOW`, `P::FOLD_ROWS`, and the limbs of the modulus, of R mod m
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

    // Limb i of 2^k·m (k = 0, 1): the modulus, or twice it, the bound of the lazy range.
    template <int k>
    __device__ __forceinline__ static uint32_t mod_times(int i) {
        static_assert(k == 0 || k == 1, "m or 2m");
        if constexpr (k == 0) {
            return P::mod(i);
        } else {
            return P::mod(i) << 1 | (i > 0 ? P::mod(i - 1) >> 31 : 0u);
        }
    }

    // a − 2^k·m if a + top·2^(32N) ≥ 2^k·m, else a (the value below 2^(k+1)·m).
    template <int k = 0>
    __device__ __forceinline__ static void reduce_once(uint32_t (&a)[N], uint32_t top) {
        uint32_t s[N], borrow;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(s[0]) : "r"(a[0]), "r"(mod_times<k>(0)));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(s[i]) : "r"(a[i]), "r"(mod_times<k>(i)));
        asm volatile("subc.u32 %0, %1, 0;" : "=r"(borrow) : "r"(top));
        // borrow is 0xffffffff when the value is below 2^k·m: keep a.
#pragma unroll
        for (int i = 0; i < N; i++) a[i] = (a[i] & borrow) | (s[i] & ~borrow);
    }

    // this + b below 2^k·m, for both below 2^k·m.
    template <int k>
    __device__ __forceinline__ mont sum(const mont& b) const {
        mont r;
        uint32_t top;
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.l[0]) : "r"(l[0]), "r"(b.l[0]));
#pragma unroll
        for (int i = 1; i < N; i++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.l[i]) : "r"(l[i]), "r"(b.l[i]));
        asm volatile("addc.u32 %0, 0, 0;" : "=r"(top));
        reduce_once<k>(r.l, top);
        return r;
    }

    // this − b below 2^k·m, for both below 2^k·m.
    template <int k>
    __device__ __forceinline__ mont difference(const mont& b) const {
        mont r;
        uint32_t borrow;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r.l[0]) : "r"(l[0]), "r"(b.l[0]));
#pragma unroll
        for (int i = 1; i < N; i++) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r.l[i]) : "r"(l[i]), "r"(b.l[i]));
        asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
        // On borrow add 2^k·m back.
        asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(r.l[0]) : "r"(mod_times<k>(0) & borrow));
#pragma unroll
        for (int i = 1; i < N - 1; i++)
            asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(r.l[i]) : "r"(mod_times<k>(i) & borrow));
        asm volatile("addc.u32 %0, %0, %1;" : "+r"(r.l[N - 1]) : "r"(mod_times<k>(N - 1) & borrow));
        return r;
    }

    __device__ __forceinline__ mont operator+(const mont& b) const { return sum<0>(b); }

    __device__ __forceinline__ mont operator-(const mont& b) const { return difference<0>(b); }

    // The lazy range: values below 2m, which a chain of operations (an NTT's butterflies and
    // twiddle products) keeps without reducing each result, and reduces once at its end. As
    // m < R/2, a sum of two fits N limbs and a carry: sums and differences need one conditional
    // subtraction or addition of 2m, as for reduced values, and a product by a reduced factor
    // none (below).
    __device__ __forceinline__ mont add_lazy(const mont& b) const { return sum<1>(b); }

    __device__ __forceinline__ mont sub_lazy(const mont& b) const { return difference<1>(b); }

    // reduced·this·R⁻¹ below 2m, for `reduced` below m and this any N-limb value: the rotating
    // product with the reduced factor as the one multiplied in full each row, where its bounds
    // (mul_inline) take any limbs for the other, and (m·this + Q·m)/R < 2m. The final
    // subtraction and select it saves are 17 ALU instructions of ~270 for Fr.
    __device__ __forceinline__ mont mul_lazy(const mont& reduced) const {
        static_assert(!P::FOLD_ROWS && P::INLINE_MUL, "for the rotating, inlined product");
        return mul_inline<false>(reduced, *this);
    }

    // this·w below 2m, for this below 2m and a fixed factor w below m, as a plain integer (not in
    // Montgomery form: the result keeps this one's form), given w's Shoup quotient
    // wq = ⌊w·2^(32N)/m⌋ (Shoup, "NTL: a library for doing number theory"). With q the floor of
    // this·wq/2^(32N), this·w − q·m is the result: a product's low half (mod 2^(32N)) minus another.
    // q itself is floored from the products at columns N − 2 and up only: what that leaves out is
    // below 2^(32N − 29), so q is at most one below the exact floor, and the result, in units of
    // m, is below frac + dropped + this·(w/m − wq/2^(32N)) < 1 + 2^−29 + 2m/R, which is below 2
    // for Fr (2r/R < 0.91).
    // For Fr, N = 8: 86 fused 32×32 products and 14 low halves, against the Montgomery product's 112
    // fused ones (SPARSE_LOW: m̄ = 2^(32N) − m has limbs 2^32 − 1 and 0 at the bottom, so q·m̄'s
    // lowest two rows are one subtraction chain).
    __device__ __forceinline__ mont mul_shoup(const mont& w, const mont& wq) const {
        static_assert(P::SPARSE_LOW && N % 2 == 0, "m̄'s two low limbs are 2^32 − 1 and 0");
        // Columns N − 2 … 2N − 1 of this·wq, by the parity of each product's low column.
        uint32_t E[2 * N] = {}, O[2 * N] = {};
#pragma unroll
        for (int i = 0; i < N; i++) {
            const int j0 = i < N - 2 ? N - 2 - i : 0;
            mad_row<true>(((i + j0) & 1) ? O : E, i, j0, wq.l, l[i]);
            mad_row<true>(((i + j0) & 1) ? E : O, i, j0 + 1, wq.l, l[i]);
        }
        // Column N − 1 only carries into q.
        uint32_t q[N], below_q;
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(below_q) : "r"(E[N - 1]), "r"(O[N - 1]));
#pragma unroll
        for (int k = 0; k < N - 1; k++)
            asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(q[k]) : "r"(E[N + k]), "r"(O[N + k]));
        asm volatile("addc.u32 %0, %1, %2;" : "=r"(q[N - 1]) : "r"(E[2 * N - 1]), "r"(O[2 * N - 1]));

        // this·w + q·m̄ mod 2^(32N), m̄ = 2^(32N) − m; its rows 0 and 1 are q·(2^32 − 1) = (q << 32) − q.
        uint32_t e[N], o[N] = {}, mbar[N];
#pragma unroll
        for (int j = 0; j < N; j++) mbar[j] = ~P::mod(j);
        asm volatile("sub.cc.u32 %0, 0, %1;" : "=r"(e[0]) : "r"(q[0]));
#pragma unroll
        for (int k = 1; k < N; k++) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(e[k]) : "r"(q[k - 1]), "r"(q[k]));
        // q's rows first: q is then dead while w's rows run (fewer live registers).
#pragma unroll
        for (int i = 0; i < N - 2; i++) {
            mad_row<false>((i & 1) ? o : e, i, 2, mbar, q[i]);
            mad_row<false>((i & 1) ? e : o, i, 3, mbar, q[i]);
        }
#pragma unroll
        for (int i = 0; i < N; i++) {
            mad_row<false>((i & 1) ? o : e, i, 0, w.l, l[i]);
            mad_row<false>((i & 1) ? e : o, i, 1, w.l, l[i]);
        }
        mont r;
        r.l[0] = e[0];
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.l[1]) : "r"(e[1]), "r"(o[1]));
#pragma unroll
        for (int k = 2; k < N - 1; k++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.l[k]) : "r"(e[k]), "r"(o[k]));
        asm volatile("addc.u32 %0, %1, %2;" : "=r"(r.l[N - 1]) : "r"(e[N - 1]), "r"(o[N - 1]));
        return r;
    }

    // The value of a lazy-range one, reduced (below m).
    __device__ __forceinline__ mont reduced() const {
        mont r = *this;
        reduce_once(r.l, 0);
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

    // acc[c], acc[c + 1] += y·x[j] at c = i + j for j = j0, j0 + 2, … < N: one carry chain, as
    // the products of every other limb never overlap. `high`: columns to 2N − 1, the carry out of
    // the last pair added at the column above it (whose accumulator starts there, or holds only a
    // carry). Else modulo 2^(32N): the chain stops at column N − 1, a low half alone there.
    template <bool high, int M>
    __device__ __forceinline__ static void mad_row(uint32_t (&acc)[M], int i, int j0, const uint32_t (&x)[N],
                                                   uint32_t y) {
        const int end = high ? N : N - i;  // j < end
        if (j0 >= end) return;
#pragma unroll
        for (int j = j0; j < end; j += 2) {
            const int c = i + j;
            const bool first = j == j0, more = j + 2 < end;
            if (!high && c == N - 1) {
                if (first)
                    asm volatile("mad.lo.u32 %0, %1, %2, %0;" : "+r"(acc[c]) : "r"(x[j]), "r"(y));
                else
                    asm volatile("madc.lo.u32 %0, %1, %2, %0;" : "+r"(acc[c]) : "r"(x[j]), "r"(y));
                continue;
            }
            if (first)
                asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(acc[c]) : "r"(x[j]), "r"(y));
            else
                asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(acc[c]) : "r"(x[j]), "r"(y));
            if (high || more)
                asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(acc[c + 1]) : "r"(x[j]), "r"(y));
            else
                asm volatile("madc.hi.u32 %0, %1, %2, %0;" : "+r"(acc[c + 1]) : "r"(x[j]), "r"(y));
            if (high && !more) {
                if (c + 2 < M) asm volatile("addc.u32 %0, %0, 0;" : "+r"(acc[c + 2]));
            }
        }
    }

    // acc[0..N) += add[0..N), the carry out left in the condition code.
    __device__ __forceinline__ static void add_limbs(uint32_t* acc, const uint32_t* add) {
        asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(acc[0]) : "r"(add[0]));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(acc[j]) : "r"(add[j]));
    }

    // Rows i… of the exact square (see sqr_inline): row i's operand is a_i, 2a_{i+1} mod 2^32, then
    // the limbs of 2a (`twice`); its products of even position go to X, the odd ones to Y.
    template <int i>
    __device__ __forceinline__ static void square_rows(uint32_t (&X)[2 * N], uint32_t (&Y)[2 * N - 1],
                                                       const uint32_t (&a)[N], const uint32_t (&twice)[N]) {
        uint32_t x[N];
#pragma unroll
        for (int j = i; j < N; j++) x[j] = j == i ? a[i] : j == i + 1 ? a[i + 1] << 1 : twice[j];
        // Positions 2i − 2 and 2i − 1 are final: X takes Y's share of them (in the low half, which
        // so ends up whole in X), and the carry rides into this row's first product, at 2i.
        constexpr bool fold = i > 0 && 2 * i <= N;
        if constexpr (i == 1) {
            asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(X[1]) : "r"(Y[0]));
        } else if constexpr (fold) {
            asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(X[2 * i - 2]) : "r"(Y[2 * i - 3]));
            asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(X[2 * i - 1]) : "r"(Y[2 * i - 2]));
        }
        // X[i + j] for j = i, i + 2, …: pairs from X[i + s], up to X[i + s + N − 1].
        constexpr int s = i % 2;
        mad_pairs<i / 2, N / 2, s, fold>(X + i + s, x, a[i]);
        if constexpr (s == 0 && i > 0) asm volatile("addc.u32 %0, 0, 0;" : "=r"(X[i + N]));
        if constexpr (i + 1 < N) {
            // Y[i + j − 1] for j = i + 1, i + 3, …: pairs from Y[i − s] (i − s is even).
            mad_pairs<(i + 1) / 2, N / 2, 1 - s, false>(Y + i - s, x, a[i]);
            if constexpr (s == 1) asm volatile("addc.u32 %0, 0, 0;" : "=r"(Y[i - 1 + N]));
            square_rows<i + 1>(X, Y, a, twice);
        }
    }

    // The row's q, which makes its lowest limb `low` zero: q·m ≡ −low (mod 2^32). With
    // P::SPARSE_LOW that is −low (m₀ = 1), written as inv() − low + 1 with inv() = −1 from memory
    // (see fr_params) so that ptxas cannot see the negation; a 3-input add stays on the ALU pipe,
    // where low·inv() is an IMAD (sm_90: 130 fewer IMADs in the NTT pass, Fr products +5.6%).
    __device__ __forceinline__ static uint32_t quotient(uint32_t low) {
        if constexpr (P::SPARSE_LOW) {
            return P::inv() - low + 1;
        } else {
            return low * P::inv();
        }
    }

    // acc += the products of q = quotient(low) with the modulus limbs of parity s, at acc[2k],
    // acc[2k + 1] (see mad_pairs), the carry out of the last limb left in the condition code. With
    // P::SPARSE_LOW (m₀ = 1, m₁ = 2^32 − 1) the lowest product of each parity is an addition:
    // q·m₀ = q, and q·m₁ = q·2^32 − q = (q − [low ≠ 0])·2^32 + low, as −q ≡ low (mod 2^32).
    // `carry_in`: the chain opens with *below += add, below being the limb under acc[0], so that
    // the carry of that addition enters acc[0] (in the same run of asm statements as the chain).
    template <int s, bool carry_in = false>
    __device__ __forceinline__ static void mad_modulus(uint32_t* acc, const uint32_t* m, uint32_t low,
                                                       uint32_t* below = nullptr, uint32_t add = 0) {
        const uint32_t q = quotient(low);
        if constexpr (P::SPARSE_LOW) {
            const uint32_t lo = s == 0 ? q : low, hi = s == 0 ? 0u : q - (low != 0 ? 1u : 0u);
            if constexpr (carry_in) {
                asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(*below) : "r"(add));
                asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(acc[0]) : "r"(lo));
            } else {
                asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(acc[0]) : "r"(lo));
            }
            asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(acc[1]) : "r"(hi));
            mad_pairs<1, N / 2, s, true>(acc, m, q);
        } else {
            if constexpr (carry_in) asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(*below) : "r"(add));
            mad_pairs<0, N / 2, s, carry_in>(acc, m, q);
        }
    }

    // The rotating form's division by 2^32 once a row has made A₀ zero (see mul_inline): B becomes
    // A, A₁ becomes L and A₂… (aligned pairs still) become B, with `top` entering at B's limb N − 2.
    __device__ __forceinline__ static void rotate(uint32_t* A, uint32_t (&B)[N], uint32_t& L, uint32_t top) {
        uint32_t next_b[N];
#pragma unroll
        for (int j = 0; j < N - 2; j++) next_b[j] = A[j + 2];
        next_b[N - 2] = top, next_b[N - 1] = 0;
        L = A[1];
#pragma unroll
        for (int j = 0; j < N; j++) A[j] = B[j], B[j] = next_b[j];
    }

    // The rotating form's value A + L + B·2^32 (below 2m; B's top limb zero), fully reduced or
    // (`reduce` false) as it is.
    template <bool reduce = true>
    __device__ __forceinline__ static mont rotating_value(const uint32_t* A, const uint32_t (&B)[N], uint32_t L) {
        mont r;
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.l[0]) : "r"(A[0]), "r"(L));
#pragma unroll
        for (int j = 1; j < N; j++)
            asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.l[j]) : "r"(A[j]), "r"(B[j - 1]));
        if constexpr (reduce) reduce_once(r.l, 0);
        return r;
    }

    // Montgomery product a·b·R⁻¹ (CIOS, one limb of b per row), with each row's products split by
    // the parity of the other operand's limb so that every 32×32 product is one fused instruction
    // (see mad_pairs) writing an aligned register pair. Two forms, by P::FOLD_ROWS.
    //
    // Rotating (FOLD_ROWS false): the running value is A + B·2^32 + L. A (N + 1 limbs) takes the
    // even products, at limbs (2k, 2k + 1), B (N limbs) the odd ones, at its limbs (2k, 2k + 1)
    // one position up, and L is one limb left over from the last row. A row: L into A₀ (its carry
    // rides into B's chain); B += odd of a·bᵢ; A += even of a·bᵢ; q = A₀·INV; A += even of q·m;
    // B += odd of q·m. Then A₀ = 0, and the division by 2^32 is a renaming: B becomes A, A₁
    // becomes L and A₂… (aligned pairs still) become B. The halves meet once, at the end.
    //
    // Folded (FOLD_ROWS true): the value is e + o, folded at the start of each row by an N-limb add
    // chain: e += o; e += even of a·bᵢ; q = e₀·INV; e += even of q·m; o = odd of a·bᵢ and of q·m,
    // aligned one limb down; e >>= 32. Nine ALU instructions per row more.
    //
    // Bounds (a < m, b any N limbs, m < 2^(32N − 1)): the value is below 2m at the start of a row
    // and below 2m + 2^33·m < 2^(32N + 32) within it, so no chain carries out of the top limb of
    // its half, and the even chains' carries stop at limb N; at the end it is below 2m, and with
    // `reduce` false it is left there (mul_lazy).
    template <bool reduce = true>
    __device__ __forceinline__ static mont mul_inline(const mont& a, const mont& b) {
        static_assert(N % 2 == 0, "the parity split needs an even limb count");
        uint32_t m[N];
#pragma unroll
        for (int j = 0; j < N; j++) m[j] = P::mod(j);
        mont r;
        if constexpr (P::FOLD_ROWS) {
            uint32_t e[N + 1] = {}, o[N] = {};
#pragma unroll
            for (int i = 0; i < N; i++) {
                const uint32_t bi = b.l[i];
                if (i > 0) {
                    add_limbs(e, o);
                    asm volatile("addc.u32 %0, 0, 0;" : "=r"(e[N]));
                }
                mad_pairs<0, N / 2, 0, false>(e, a.l, bi);
                asm volatile("addc.u32 %0, %0, 0;" : "+r"(e[N]));
                const uint32_t low = e[0];
                mad_modulus<0>(e, m, low);
                asm volatile("addc.u32 %0, %0, 0;" : "+r"(e[N]));
#pragma unroll
                for (int j = 0; j < N; j++) o[j] = 0;
                mad_pairs<0, N / 2, 1, false>(o, a.l, bi);
                mad_modulus<1>(o, m, low);
                // e₀ is now zero: shift one limb down.
#pragma unroll
                for (int j = 0; j < N; j++) e[j] = e[j + 1];
            }
            uint32_t top;
            add_limbs(e, o);
            asm volatile("addc.u32 %0, 0, 0;" : "=r"(top));
#pragma unroll
            for (int j = 0; j < N; j++) r.l[j] = e[j];
            reduce_once(r.l, top);
        } else {
            uint32_t A[N + 1] = {}, B[N] = {}, L = 0;
#pragma unroll
            for (int i = 0; i < N; i++) {
                const uint32_t bi = b.l[i];
                if (i > 0) {
                    asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(A[0]) : "r"(L));
                    mad_pairs<0, N / 2, 1, true>(B, a.l, bi);
                } else {
                    mad_pairs<0, N / 2, 1, false>(B, a.l, bi);
                }
                mad_pairs<0, N / 2, 0, false>(A, a.l, bi);
                asm volatile("addc.u32 %0, %0, 0;" : "+r"(A[N]));
                const uint32_t low = A[0];
                mad_modulus<0>(A, m, low);
                asm volatile("addc.u32 %0, %0, 0;" : "+r"(A[N]));
                mad_modulus<1>(B, m, low);
                // A₀ is now zero: divide by 2^32, A_N moving to B's limb N − 2.
                rotate(A, B, L, A[N]);
                A[N] = 0;
            }
            // The value, below 2m, is A + L + B·2^32 (A_N and B's top limb are zero).
            r = rotating_value<reduce>(A, B, L);
        }
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

    // Montgomery square a²·R⁻¹ from the exact square T = a² (N(N + 1)/2 products: each cross
    // product once, already doubled) and a Montgomery reduction of T (N² products), instead of the
    // 2N² of a·a. Bit-identical to mul_inline(a, a).
    //
    // Square: row i adds a_i·(a_i + 2·Σ_{j>i} a_j·2^(32(j − i)))·2^(64i), so it multiplies a_i by
    // a_i and then by the limbs of 2a, except that its first one is 2a_{i+1} mod 2^32, without the
    // top bit of a_i (which belongs to the row's own 2a_i). 2a fits N limbs as a < m < 2^(32N − 1).
    // The products split by the parity of their position into X (even, at limbs 2k, 2k + 1) and
    // Y (odd; Y_k is at position k + 1), a chain per row and parity. A chain's top limb is the
    // previous row's top in that part (the carry then goes into the untouched limb above) or a
    // limb no chain has reached (then no carry: a product's high half + 1 < 2^32). Each part stays
    // below T < 2^(64N), so nothing is lost. Low limbs are folded into X as they become final, so
    // X's low half ends up T mod R; H = ⌊T/R⌋ is the sum of the high halves.
    //
    // Reduction: the rotating product's rows (see mul_inline) on the value A + B·2^32 + L, from
    // T mod R; H enters a limb per row at the window's limb N − 1 (B's limb N − 2, free after the
    // rotation). At row i the window is (T mod 2^(32(N + i)) + Q·m)/2^(32i) < 2^(32N) + m, below
    // 2^(32N) + (2^32 + 1)·m < 2^(32N + 32) within the row; the result (T + Q·m)/R < (m² + R·m)/R
    // < 2m takes one conditional subtraction. (Entering at the window's top limb, N, H could make
    // it overflow.)
    __device__ __forceinline__ static mont sqr_inline(const mont& a) {
        static_assert(N % 2 == 0, "the parity split needs an even limb count");
        uint32_t m[N], twice[N];  // twice: limbs 2… of 2a, those the rows read
#pragma unroll
        for (int j = 0; j < N; j++) m[j] = P::mod(j);
#pragma unroll
        for (int j = 2; j < N; j++) twice[j] = __funnelshift_l(a.l[j - 1], a.l[j], 1);
        uint32_t X[2 * N] = {}, Y[2 * N - 1] = {};
        square_rows<0>(X, Y, a.l, twice);
        uint32_t H[N];
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(H[0]) : "r"(X[N]), "r"(Y[N - 1]));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(H[j]) : "r"(X[N + j]), "r"(Y[N - 1 + j]));

        uint32_t A[N], B[N], L = 0;
#pragma unroll
        for (int j = 0; j < N; j++) A[j] = X[j], B[j] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            // The window's lowest limb is A₀ + L.
            const uint32_t low = A[0] + L;
            if (i > 0) {
                mad_modulus<1, true>(B, m, low, &A[0], L);
            } else {
                mad_modulus<1>(B, m, low);
            }
            mad_modulus<0>(A, m, low);
            // The carry out of A, at limb N, goes to B's top limb there: that limb starts each row at
            // zero and takes at most the high half of q·m_{N−1} and a carry, so it has room; A
            // needs no limb N, to be paired after the rotation.
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(B[N - 1]));
            // A₀ is now zero: divide by 2^32, the next limb of H entering.
            rotate(A, B, L, H[i]);
        }
        return rotating_value(A, B, L);
    }

    // Out of line for wide fields, as mul_call.
    __device__ __noinline__ static mont sqr_call(const mont a) { return sqr_inline(a); }

    __device__ __forceinline__ mont sqr() const {
        if constexpr (P::INLINE_MUL) {
            return sqr_inline(*this);
        } else {
            return sqr_call(*this);
        }
    }

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

    // x⁻¹ (zero maps to zero) by Pornin's binary GCD on approximations ("Optimized Binary GCD for
    // Modular Inversion", 2020), on the stored integer X = x·R. Each outer step runs 30 steps of
    // the binary GCD on 62-bit stand-ins for a and b (their low 30 and top 32 bits), which choose
    // the same subtractions as the full values would often enough that STEPS outer steps suffice;
    // their combined effect, signed factors of at most 2^30, then updates the full a and b (exactly
    // divisible by 2^30) and the coefficients u and v (times 2^−32 mod m: one Montgomery word
    // reduction). Invariants a ≡ X·u·4^i and b ≡ X·v·4^i (mod m) after i outer steps; at the end
    // a = 0 and b = gcd(X, m) = 1, so X⁻¹ = v·4^STEPS and x⁻¹·R = v·4^STEPS·R²: one product by
    // 4^STEPS·R³. No branches, so a warp's lanes never diverge (the bit-at-a-time loop it replaces
    // diverged at every one of its ~760 steps).
    __device__ mont inverse() const {
        // ⌈(2·len(m) − 1)/30⌉ with len(m) ≤ 32N − 1 for both fields; a step past the bound keeps the
        // invariants (with a = 0 it only scales v).
        constexpr int STEPS = (2 * (32 * N - 1) - 1 + 29) / 30;
        uint32_t a[N], b[N];
        mont u = zero(), v = zero();
        u.l[0] = 1;
#pragma unroll
        for (int i = 0; i < N; i++) a[i] = l[i], b[i] = P::mod(i);
        for (int step = 0; step < STEPS; step++) {
            // Bits [len − 32, len) and [0, 30) of a and b, len the bit length of the larger (≥ 62).
            uint32_t top = 0, top_limb = 0;
#pragma unroll
            for (int i = 0; i < N; i++) {
                const uint32_t w = a[i] | b[i];
                if (w != 0) top = w, top_limb = i;
            }
            const uint32_t len = max(32 * top_limb + 32 - __clz(top), 62u);
            uint64_t a_bar, b_bar;
            stand_ins(a, b, len - 32, a_bar, b_bar);
            int32_t f0 = 1, g0 = 0, f1 = 0, g1 = 1;
#pragma unroll 10
            for (int j = 0; j < 30; j++) {
                // Odd a: swap so that a ≥ b, then a −= b; then a /= 2, which the factors of b
                // record by doubling (they stand for 2^j·a and 2^j·b).
                const uint32_t odd = 0u - uint32_t(a_bar & 1);
                const uint32_t swap = odd & (a_bar < b_bar ? ~0u : 0u);
                const uint64_t swap64 = (uint64_t(swap) << 32) | swap, odd64 = (uint64_t(odd) << 32) | odd;
                const uint64_t t = (a_bar ^ b_bar) & swap64;
                a_bar ^= t, b_bar ^= t;
                const int32_t tf = (f0 ^ f1) & int32_t(swap), tg = (g0 ^ g1) & int32_t(swap);
                f0 ^= tf, f1 ^= tf, g0 ^= tg, g1 ^= tg;
                a_bar = (a_bar - (b_bar & odd64)) >> 1;
                f0 -= f1 & int32_t(odd), g0 -= g1 & int32_t(odd);
                f1 *= 2, g1 *= 2;
            }
            uint32_t wide[N + 1], next_a[N];
            const uint32_t a_negative = combine(a, b, f0, g0, wide);
#pragma unroll
            for (int i = 0; i < N; i++) next_a[i] = __funnelshift_r(wide[i], wide[i + 1], 30);
            const uint32_t b_negative = combine(a, b, f1, g1, wide);
#pragma unroll
            for (int i = 0; i < N; i++) b[i] = __funnelshift_r(wide[i], wide[i + 1], 30), a[i] = next_a[i];
            // Negative results were made positive: their factors change sign with them.
            f0 = (f0 ^ int32_t(a_negative)) - int32_t(a_negative);
            g0 = (g0 ^ int32_t(a_negative)) - int32_t(a_negative);
            f1 = (f1 ^ int32_t(b_negative)) - int32_t(b_negative);
            g1 = (g1 ^ int32_t(b_negative)) - int32_t(b_negative);
            const mont next_u = combine_mod(u, v, f0, g0);
            v = combine_mod(u, v, f1, g1);
            u = next_u;
        }
        mont factor;
#pragma unroll
        for (int i = 0; i < N; i++) factor.l[i] = P::r2(i);
        factor = factor * factor;  // R⁴/R
        for (int i = 0; i < 2 * STEPS; i++) factor = factor + factor;
        return v * factor;
    }

  private:
    // For x = a and b: bits [0, 30) of x, then bits [shift, shift + 32) above them (x < 2^(shift +
    // 32)). The limbs are picked by selects in inline assembly: as plain C++ the compiler turned
    // the pick into an indexed load and moved a and b to local memory.
    __device__ __forceinline__ static void stand_ins(const uint32_t (&a)[N], const uint32_t (&b)[N], uint32_t shift,
                                                     uint64_t& a_bar, uint64_t& b_bar) {
        const uint32_t limb = shift / 32;
        uint32_t a_lo = 0, a_hi = 0, b_lo = 0, b_hi = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            asm("{\n\t.reg .pred lo, hi;\n\t"
                "setp.eq.u32 lo, %4, %5;\n\t"
                "setp.eq.u32 hi, %4, %6;\n\t"
                "selp.b32 %0, %7, %0, lo;\n\t"
                "selp.b32 %1, %7, %1, hi;\n\t"
                "selp.b32 %2, %8, %2, lo;\n\t"
                "selp.b32 %3, %8, %3, hi;\n\t}"
                : "+r"(a_lo), "+r"(a_hi), "+r"(b_lo), "+r"(b_hi)
                : "r"(limb), "r"(uint32_t(i)), "r"(uint32_t(i) - 1), "r"(a[i]), "r"(b[i]));
        }
        const uint32_t low = (1u << 30) - 1;
        a_bar = (uint64_t(__funnelshift_r(a_lo, a_hi, shift % 32)) << 30) | (a[0] & low);
        b_bar = (uint64_t(__funnelshift_r(b_lo, b_hi, shift % 32)) << 30) | (b[0] & low);
    }

    // r = x·w over N + 1 limbs.
    __device__ __forceinline__ static void mul_word(const uint32_t (&x)[N], uint32_t w, uint32_t (&r)[N + 1]) {
        uint32_t carry = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint64_t t = uint64_t(x[i]) * w + carry;
            r[i] = uint32_t(t);
            carry = uint32_t(t >> 32);
        }
        r[N] = carry;
    }

    // Two's complement negation of r when `mask` is all ones; r unchanged when it is zero.
    __device__ __forceinline__ static void negate_if(uint32_t (&r)[N + 1], uint32_t mask) {
        uint32_t carry = mask & 1;
#pragma unroll
        for (int i = 0; i <= N; i++) {
            const uint64_t t = uint64_t(r[i] ^ mask) + carry;
            r[i] = uint32_t(t);
            carry = uint32_t(t >> 32);
        }
    }

    // r = |x·f + y·g| over N + 1 limbs; returns all ones when x·f + y·g < 0, else zero. Needs
    // x, y < 2^(32N − 1) and |f|, |g| ≤ 2^30, so the sum fits N + 1 limbs with its sign.
    __device__ __forceinline__ static uint32_t combine(const uint32_t (&x)[N], const uint32_t (&y)[N], int32_t f,
                                                       int32_t g, uint32_t (&r)[N + 1]) {
        const uint32_t f_sign = uint32_t(f >> 31), g_sign = uint32_t(g >> 31);
        uint32_t t[N + 1];
        mul_word(x, (uint32_t(f) ^ f_sign) - f_sign, r);
        mul_word(y, (uint32_t(g) ^ g_sign) - g_sign, t);
        negate_if(r, f_sign);
        negate_if(t, g_sign);
        uint32_t carry = 0;
#pragma unroll
        for (int i = 0; i <= N; i++) {
            const uint64_t s = uint64_t(r[i]) + t[i] + carry;
            r[i] = uint32_t(s);
            carry = uint32_t(s >> 32);
        }
        const uint32_t negative = uint32_t(int32_t(r[N]) >> 31);
        negate_if(r, negative);
        return negative;
    }

    // (x·f + y·g)·2^−32 mod m for x, y < m: the magnitude plus the multiple of m that clears its
    // low word, shifted down a word (below 2m), reduced, and negated mod m if the sum was negative.
    __device__ __forceinline__ static mont combine_mod(const mont& x, const mont& y, int32_t f, int32_t g) {
        uint32_t t[N + 1];
        const uint32_t negative = combine(x.l, y.l, f, g, t);
        const uint32_t q = quotient(t[0]);
        uint32_t carry = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint64_t s = uint64_t(P::mod(i)) * q + t[i] + carry;
            t[i] = uint32_t(s);
            carry = uint32_t(s >> 32);
        }
        t[N] += carry;
        mont r;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = t[i + 1];
        reduce_once(r.l, 0);
        const mont negated = zero() - r;
#pragma unroll
        for (int i = 0; i < N; i++) r.l[i] = (r.l[i] & ~negative) | (negated.l[i] & negative);
        return r;
    }
};

}  // namespace cuzk
