// Short Weierstrass points with a = 0 (both BLS12-381 groups), over a coordinate field F (fp_t for
// G1, fp2_t for G2).
//
// affine_t<F> is blst's affine layout (x, y), with (0, 0) for the identity (not a curve point,
// since b ≠ 0). xyzz_t<F> is extended Jacobian (X, Y, ZZ, ZZZ): x = X/ZZ, y = Y/ZZZ, ZZ³ = ZZZ²,
// with ZZ = 0 for the identity; adding an affine point costs 8M + 2S and needs no inversion.
#pragma once

#include "field/fp2.cuh"

namespace cuzk {

template <class F>
struct affine_t {
    F x, y;

    __device__ __forceinline__ bool is_identity() const { return x.is_zero() && y.is_zero(); }
    __device__ __forceinline__ affine_t operator-() const { return {x, -y}; }
};

template <class F>
struct xyzz_t {
    F X, Y, ZZ, ZZZ;

    __device__ __forceinline__ static xyzz_t identity() {
        return {F::one(), F::one(), F::zero(), F::zero()};
    }
    __device__ __forceinline__ bool is_identity() const { return ZZ.is_zero(); }
    __device__ __forceinline__ static xyzz_t from_affine(const affine_t<F>& p) {
        if (p.is_identity()) return identity();
        return {p.x, p.y, F::one(), F::one()};
    }
    __device__ __forceinline__ xyzz_t operator-() const { return {X, -Y, ZZ, ZZZ}; }

    // The affine point, by one inversion: with ZZ = Z² and ZZZ = Z³, (ZZ / ZZZ)² = 1 / ZZ.
    __device__ affine_t<F> to_affine() const {
        if (is_identity()) return {F::zero(), F::zero()};
        const F zzz_inverse = ZZZ.inverse(), z_inverse = ZZ * zzz_inverse;
        return {X * z_inverse.sqr(), Y * zzz_inverse};
    }

    // 2·this (dbl-2008-s-1).
    __device__ __forceinline__ xyzz_t dbl() const {
        if (is_identity()) return *this;
        const F u = Y.dbl(), v = u.sqr(), w = u * v, s = X * v;
        const F x2 = X.sqr(), m = x2.dbl() + x2;
        const F x3 = m.sqr() - s.dbl();
        return {x3, m * (s - x3) - w * Y, v * ZZ, w * ZZZ};
    }

    // this + p for an affine p (madd-2008-s), handling the identity and equal or opposite points.
    __device__ __forceinline__ void add_affine(const affine_t<F>& p) {
        if (p.is_identity()) return;
        if (is_identity()) {
            *this = from_affine(p);
            return;
        }
        const F u2 = p.x * ZZ, s2 = p.y * ZZZ;
        const F pp_ = u2 - X, r = s2 - Y;
        if (pp_.is_zero()) {
            *this = r.is_zero() ? from_affine(p).dbl() : identity();
            return;
        }
        const F pp = pp_.sqr(), ppp = pp_ * pp, q = X * pp;
        const F x3 = r.sqr() - ppp - q.dbl();
        Y = r * (q - x3) - Y * ppp;
        X = x3;
        ZZ = ZZ * pp;
        ZZZ = ZZZ * ppp;
    }

    // this + o (add-2008-s).
    __device__ __forceinline__ void add(const xyzz_t& o) {
        if (o.is_identity()) return;
        if (is_identity()) {
            *this = o;
            return;
        }
        const F u1 = X * o.ZZ, u2 = o.X * ZZ;
        const F s1 = Y * o.ZZZ, s2 = o.Y * ZZZ;
        const F pp_ = u2 - u1, r = s2 - s1;
        if (pp_.is_zero()) {
            *this = r.is_zero() ? dbl() : identity();
            return;
        }
        const F pp = pp_.sqr(), ppp = pp_ * pp, q = u1 * pp;
        const F x3 = r.sqr() - ppp - q.dbl();
        Y = r * (q - x3) - s1 * ppp;
        X = x3;
        ZZ = ZZ * o.ZZ * pp;
        ZZZ = ZZZ * o.ZZZ * ppp;
    }
};

using g1_affine_t = affine_t<fp_t>;
using g1_xyzz_t = xyzz_t<fp_t>;
using g2_affine_t = affine_t<fp2_t>;
using g2_xyzz_t = xyzz_t<fp2_t>;

}  // namespace cuzk
