// cross_entropy.cl: softmax cross-entropy over the last axis, forward and backward.
//
// Kernels (targets are int32 class ids; a row whose target is ignore_index counts for nothing).
// One work-item per row of logits z, walking it 8 lanes at a time with an inline exp (PoCL
// calls exp() out of line, and a row of a 2,048-token vocabulary is 6,000 calls otherwise):
//   cross_entropy_rows      lse = max + log sum exp(z - max), loss_r = lse - z[target], written
//                           as the pair (loss_r, 1) so that one column sum gives the total and
//                           the count of rows that count. lse is kept for the backward. A target
//                           outside [0, V) that is not ignore_index reports the op to the status
//                           word (bad input).
//   cross_entropy_finish    mean = total / count; no row counting is reported the same way.
//   cross_entropy_backward  dz = g / count * (softmax(z) - onehot(target)), softmax rebuilt as
//                           exp(z - lse); g is the loss's gradient, read on the device.
#include "common.h"

__kernel void cross_entropy_rows(
    __global const float *z, __global const int *target, __global float *pairs, __global float *lse,
    const int n_rows, const int n, const int ignore_index, __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    const int t = target[r];
    const int counted = t != ignore_index;
    const int inside = t >= 0 && t < n;
    report(status, STATUS_BAD_INPUT, seq, counted && !inside);
    __global const float *zr = z + (long)r * n;
    float8 hi8 = (float8)(-INFINITY);
    for (int j = 0; j < n; j += 8) {
        const float8 v = load8(zr, j, n);
        const int8 live = (int8)(j) + (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)(n);
        hi8 = live && v > hi8 ? v : hi8;
    }
    const float hi = hmax8(hi8);
    float8 sum8 = (float8)(0.0f);
    for (int j = 0; j < n; j += 8) {
        const int8 live = (int8)(j) + (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)(n);
        const float8 e = exp8(load8(zr, j, n) - hi);
        sum8 += live ? e : (float8)(0.0f);
    }
    const float l = hi + log(hsum8(sum8));
    lse[r] = l;
    pairs[2 * r] = counted && inside ? l - zr[t] : 0.0f;
    pairs[2 * r + 1] = counted && inside ? 1.0f : 0.0f;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(l));
}

__kernel void cross_entropy_finish(__global const float *sums, __global float *loss,
                                   __global int *status, const int seq)
{
    loss[0] = sums[0] / sums[1];
    report(status, STATUS_BAD_INPUT, seq, sums[1] == 0.0f);
}

__kernel void cross_entropy_backward(
    __global const float *z, __global const int *target, __global const float *lse, __global const float *sums,
    __global const float *g, __global float *dz, const int n_rows, const int n, const int ignore_index,
    __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    const int t = target[r];
    const float s = t == ignore_index ? 0.0f : g[0] / sums[1], l = lse[r];
    const long row = (long)r * n;
    int bad = 0;
    for (int j = 0; j < n; j += 8) {
        const int8 hot = (int8)(j) + (int8)(0, 1, 2, 3, 4, 5, 6, 7) == (int8)(t);
        const float8 p = exp8(load8(z + row, j, n) - l);
        bad |= store8(dz + row, j, n, s * (p - (hot ? (float8)(1.0f) : (float8)(0.0f))));
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
