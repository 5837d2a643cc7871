// layout.cl: moving elements between layouts.
//
// Kernels:
//   swap_axes  y[a, d, c, b, e] = x[a, b, c, d, e]: any two axes of a contiguous tensor,
//              viewed as five blocks, one work-item per contiguous run of E floats. Splits
//              and merges attention heads ((B, T, H, d) <-> (B, H, T, d)) and is its own
//              backward.
//   copy_blocks  for up to four blocks a launch, dst[r, dst_offset + c] = src[r, src_offset + c]
//              for c < cols, each matrix row-major with its own row length: joins matrices side
//              by side (Wq | Wk | Wv, so that one product forms x's gradient through all three)
//              and cuts a joined gradient back into pieces, one work-item per row of a block.
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

// copy_blocks: block j on grid row j (the host's grid has as many rows as blocks), so a join of Wq,
// Wk and Wv, or the cut of a joined gradient, costs one launch instead of one per piece. Each block:
// src, dst, cols, src_stride, src_offset, dst_stride, dst_offset; every block has `rows` rows.
#define BLOCK_ARGS(j) , __global const float *src##j, __global float *dst##j, const int cols##j, \
    const int src_stride##j, const int src_offset##j, const int dst_stride##j, const int dst_offset##j
#define PICK(name) (j == 0 ? name##0 : j == 1 ? name##1 : j == 2 ? name##2 : name##3)

__kernel void copy_blocks(const int rows BLOCK_ARGS(0) BLOCK_ARGS(1) BLOCK_ARGS(2) BLOCK_ARGS(3))
{
    const int r = get_global_id(0), j = get_global_id(1);
    if (r >= rows) return;
    const int cols = PICK(cols);
    __global const float *s = PICK(src) + (long)r * PICK(src_stride) + PICK(src_offset);
    __global float *d = PICK(dst) + (long)r * PICK(dst_stride) + PICK(dst_offset);
    for (int c = 0; c < cols; c += 8) store8(d, c, cols, load8(s, c, cols));
}
