// layout.cl: moving elements between layouts.
//
// Kernels:
//   swap_axes  y[a, d, c, b, e] = x[a, b, c, d, e]: any two axes of a contiguous tensor,
//              viewed as five blocks, one work-item per contiguous run of E floats. Splits
//              and merges attention heads ((B, T, H, d) <-> (B, H, T, d)) and is its own
//              backward.
//   copy_columns  dst[r, dst_offset + c] = src[r, src_offset + c] for c < cols, each matrix
//              row-major with its own row length: joins matrices side by side (Wq | Wk | Wv,
//              so that one product forms x's gradient through all three) and cuts a joined
//              gradient back into pieces, one work-item per row.
#include "common.h"

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

__kernel void copy_columns(__global const float *src, __global float *dst, const int rows, const int cols,
                           const int src_stride, const int src_offset, const int dst_stride,
                           const int dst_offset)
{
    const int r = get_global_id(0);        // one row of the rows x cols block, 8 floats at a time
    if (r >= rows) return;
    __global const float *s = src + (long)r * src_stride + src_offset;
    __global float *d = dst + (long)r * dst_stride + dst_offset;
    for (int c = 0; c < cols; c += 8) store8(d, c, cols, load8(s, c, cols));
}
