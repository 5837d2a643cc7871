// loss_backward.cl: softmax cross-entropy over the last axis, forward and backward.
//
// Kernels (one work-item per row of logits z; targets are int32 class ids):
//   cross_entropy_rows      forward: lse = max + log sum exp(z - max), loss_r = lse - z[target];
//                           stores lse so the backward need not redo the reductions.
//   cross_entropy_backward  dz = scale * g * (softmax(z) - onehot(target)), softmax rebuilt as
//                           exp(z - lse); g is the loss's gradient (a one-element buffer on the
//                           device) and scale is 1/rows for a mean loss.
#include "common.h"

__kernel void cross_entropy_rows(
    __global const float *z, __global const int *target, __global float *loss, __global float *lse,
    const int n_rows, const int n)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    __global const float *zr = z + (long)r * n;
    float hi = zr[0];
    for (int j = 1; j < n; ++j) hi = zr[j] > hi ? zr[j] : hi;
    float total = 0.0f;
    for (int j = 0; j < n; ++j) total += exp(zr[j] - hi);
    const float l = hi + log(total);
    lse[r] = l;
    loss[r] = l - zr[target[r]];
}

__kernel void cross_entropy_backward(
    __global const float *z, __global const int *target, __global const float *lse,
    __global const float *g, __global float *dz, const int n_rows, const int n, const float scale)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    const float s = scale * g[0], l = lse[r];
    const int t = target[r];
    for (int j = 0; j < n; ++j) {
        const long at = (long)r * n + j;
        dz[at] = s * (exp(z[at] - l) - (j == t ? 1.0f : 0.0f));
    }
}
