// reduce.cl: sums, parallel and deterministic (every sum runs in one fixed order).
//
// Kernels:
//   sum_columns   out[c] = alpha * sum over r < rows of x[r, c] (+ d[c] with add_d) for x viewed
//                 as (rows, cols), one work-item per column. Rows come in chunks of `chunk` along
//                 the second grid axis, each writing its own partial row, so tall inputs (a
//                 bias's gradient over B*T rows, a whole tensor seen as one column) still spread
//                 over every core; a second launch sums the partial rows in order. The same
//                 second pass joins other kernels' partial sums (a norm's weight gradient, a
//                 GEMM split over K, which also adds D); add_d only with one chunk.
//   sum_rows      out[r] = alpha * sum over c of x[r, c], one work-item per row.
//   Both take `pre`, a power of two (1 for a plain sum): where the plain sum overflows float32 (the
//   sum of a mean's large values, whose mean itself is a float32), the terms are summed again each
//   scaled by `pre` (exact), and that sum is multiplied by alpha / pre. A sum that does not overflow
//   is computed, and rounded, as without it.
//   broadcast_rows  out[r, c] = alpha * g[r]: the backward of a sum over the last axis, and
//                 with rows = 1 of a sum over everything (a scalar gradient read on the device).
#include "common.h"

__kernel void sum_columns(__global const float *x, __global float *out, const int rows, const int cols,
                          const int chunk, const float alpha, const float pre, __global const float *d,
                          const int add_d, __global int *status, const int seq)
{
    const int c = get_global_id(0), part = get_global_id(1);
    const int r0 = part * chunk, r1 = min(rows, r0 + chunk);
    if (c >= cols || r0 >= rows) return;
    float acc = 0.0f;
    for (int r = r0; r < r1; ++r) acc += x[(long)r * cols + c];
    float scaled = alpha;
    if (nonfinite_bits(acc) && pre != 1.0f) {           // overflowed: sum the terms scaled by pre
        acc = 0.0f;
        for (int r = r0; r < r1; ++r) acc += x[(long)r * cols + c] * pre;
        scaled = alpha / pre;
    }
    const float v = scaled * acc + (add_d ? d[c] : 0.0f);
    out[(long)part * cols + c] = v;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(v));
}

__kernel void sum_rows(__global const float *x, __global float *out, const int rows, const int cols,
                       const float alpha, const float pre, __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xr = x + (long)r * cols;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) acc += xr[c];
    float scaled = alpha;
    if (nonfinite_bits(acc) && pre != 1.0f) {           // overflowed: sum the terms scaled by pre
        acc = 0.0f;
        for (int c = 0; c < cols; ++c) acc += xr[c] * pre;
        scaled = alpha / pre;
    }
    const float v = scaled * acc;
    out[r] = v;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(v));
}

__kernel void broadcast_rows(__global const float *g, __global float *out, const int rows, const int cols,
                             const float alpha)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (c < cols && r < rows) out[(long)r * cols + c] = alpha * g[r];
}
