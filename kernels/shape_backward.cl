// shape_backward.cl: the plumbing gradients need: reductions over broadcast axes, scalar
// broadcast, and axis swaps.
//
// Kernels:
//   sum_leading       out[c] = alpha * sum_r x[r, c] for x viewed as (rows, cols), one work-item per
//                     column: the gradient of a suffix-broadcast operand (add, mul), of an unbatched
//                     matmul operand, and the forward of sum/mean (cols = 1).
//   fill_from_scalar  out[i] = alpha * s[0], one work-item per element: the backward of sum/mean,
//                     reading the scalar gradient on the device (no host round trip).
//   swap_axes         y[a, d, c, b, e] = x[a, b, c, d, e]: any two axes of a contiguous tensor, viewed
//                     as five blocks, one work-item per contiguous run of E floats; splits and merges attention heads ((B,T,H,d) <-> (B,H,T,d))
//                     and is its own backward.
#include "common.h"

__kernel void sum_leading(
    __global const float *x, __global float *out, const int rows, const int cols, const float alpha)
{
    const int c = get_global_id(0);
    if (c >= cols) return;
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r) acc += x[(long)r * cols + c];
    out[c] = alpha * acc;
}

__kernel void fill_from_scalar(__global const float *s, __global float *out, const int n, const float alpha)
{
    const int i = get_global_id(0);
    if (i < n) out[i] = alpha * s[0];
}

// --8<-- [start:swap_axes]
__kernel void swap_axes(
    __global const float *x, __global float *y,
    const int nb, const int nc, const int nd, const int ne, const int n_runs)
{
    const int i = get_global_id(0);        // one contiguous run of ne floats of y, shape (A, D, C, B, E)
    if (i >= n_runs) return;
    int rest = i;
    const int b = rest % nb; rest /= nb;
    const int c = rest % nc; rest /= nc;
    const int d = rest % nd; rest /= nd;
    const int a = rest;
    __global const float *src = x + ((((long)a * nb + b) * nc + c) * nd + d) * ne;
    __global float *dst = y + (long)i * ne;
    for (int e = 0; e < ne; ++e) dst[e] = src[e];
}
// --8<-- [end:swap_axes]
