// cross_entropy.cl: softmax cross-entropy over the last axis, forward and backward.
//
// Kernels (targets are int32 class ids; a row whose target is ignore_index counts for nothing).
// One work-item per row of logits z, walking it VW lanes at a time (the host passes the
// device's vector width) with an inline 2^x (PoCL would call exp() out of line, once per
// element). e^(z - c) is computed as 2^((z - c) log2 e) with z - c <= 0. Both kernels are
// bound by that arithmetic, not by memory, so the vector width and the polynomial's degree set
// their time (benchmarks/results/tried.md, "Cross-entropy: 16 lanes and exp2_neg").
//   cross_entropy_rows      lse = max + log sum exp(z - max), loss_r = lse - z[target], written
//                           as the pair (loss_r, 1) so that one column sum gives the total and
//                           the count of rows that count. lse is kept for the backward. A target
//                           outside [0, V) that is not ignore_index reports the op to the status
//                           word (bad input).
//   cross_entropy_finish    mean = total / count; no row counting is reported the same way.
//   cross_entropy_backward  dz = g / count * (softmax(z) - onehot(target)), softmax rebuilt as
//                           exp(z - lse); g is the loss's gradient, read on the device.
#include "common.h"

#define LOG2E 1.44269504088896341f

// Lanes j .. j + VW of a row of n floats at any float address; lanes past n read as `fill`.
ALWAYS_INLINE vecf row_lanes(__global const float *zr, const int j, const int n, const float fill) {
    if (j + VW <= n) return *(__global const vecfu *)(zr + j);
    lanesf l;
    for (int k = 0; k < VW; ++k) l.s[k] = j + k < n ? zr[j + k] : fill;
    return l.v;
}

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
    vecf hiv = (vecf)(-INFINITY);
    for (int j = 0; j < n; j += VW) {
        const vecf v = row_lanes(zr, j, n, -INFINITY);
        hiv = v > hiv ? v : hiv;
    }
    const float hi = hmaxv(hiv);
    vecf sumv = (vecf)(0.0f);
    for (int j = 0; j < n; j += VW)                      // lanes past n: 2^-inf = 0
        sumv += exp2_neg((row_lanes(zr, j, n, -INFINITY) - hi) * LOG2E);
    const float l = hi + log(hsumv(sumv));
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
    __global const float *zr = z + (long)r * n;
    __global float *dr = dz + (long)r * n;
    int bad = 0;
    for (int j = 0; j < n; j += VW) {
        const veci hot = (veci)(j) + LANE_IDS == (veci)(t);
        const vecf p = exp2_neg((row_lanes(zr, j, n, 0.0f) - l) * LOG2E);
        const vecf d = s * (p - (hot ? (vecf)(1.0f) : (vecf)(0.0f)));
        if (j + VW <= n) {
            *(__global vecfu *)(dr + j) = d;
            bad |= nonfinitev(d);
        } else {
            lanesf o;
            o.v = d;
            for (int k = 0; j + k < n; ++k) {
                dr[j + k] = o.s[k];
                bad |= nonfinite_bits(o.s[k]);
            }
        }
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
