// Sparse matrix–vector products over Fr: a = A·z, b = B·z, c = C·z for a compiled R1CS, on the
// device, so that a proof uploads its witness instead of a, b and c (a third of the bytes at
// 32 GiB, and no host products). Matrices are compressed rows whose coefficients are indices
// into one table of distinct values, index 0 being one. Hash circuits' witnesses are mostly bits:
// a zero adds nothing and a one adds the coefficient itself, with no multiplication.
#pragma once

#include "field/params.cuh"
#include "ntt/ntt.cuh"

// out[r] = Σ table[coeffs[e]]·z[columns[e]] over row r's entries e in [starts[r], starts[r+1]),
// one thread per row, for r < rows. Every column is below the length of z and every coefficient
// index below the table's (the host checks both once per matrix). `entry_base` is subtracted from
// every start: a chunk of rows streamed from the host brings its own entries only, the first at
// index 0 (0 for a whole matrix).
extern "C" __global__ void spmv_fr(const uint32_t* starts, const uint32_t* columns,
                                   const uint32_t* coeffs, const cuzk::fr_t* table,
                                   const cuzk::fr_t* z, uint32_t rows, uint32_t entry_base,
                                   cuzk::fr_t* out) {
    const uint32_t row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const cuzk::fr_t one = cuzk::fr_t::one();
    cuzk::fr_t acc = cuzk::fr_t::zero();
    const uint32_t end = starts[row + 1] - entry_base;
    for (uint32_t e = starts[row] - entry_base; e < end; e++) {
        const cuzk::fr_t v = cuzk::ldg_fr(z + columns[e]);
        const uint32_t k = coeffs[e];
        if (k == 0) {
            acc = acc + v;
        } else if (v == one) {
            acc = acc + cuzk::ldg_fr(table + k);
        } else if (!v.is_zero()) {
            acc = acc + v * cuzk::ldg_fr(table + k);
        }
    }
    cuzk::ntt_store(out + row, acc);
}
