// cross_entropy.cl: softmax cross-entropy over the last axis, forward and backward.
//
// Kernels (targets are int32 class ids; a row whose target is ignore_index counts for nothing).
// One work-item per row of logits z, walking it VW lanes at a time (the host passes the
// device's vector width) with an inline 2^x (PoCL would call exp() out of line, once per
// element). e^(z - c) is computed as 2^((z - c) log2 e) with z - c <= 0. Both kernels are
// bound by that arithmetic, not by memory, so the vector width and the polynomial's degree set
// their time (benchmarks/results/tried.md, "Cross-entropy: 16 lanes and exp2_neg").
//   cross_entropy_rows      loss_r = lse - z[target] with lse = max + log sum exp(z - max), formed as
//                           log sum - (z[target] - max): max + log sum would round log sum away
//                           once |max| is large (five equal logits of 1e8 gave 0, not log 5).
//                           Written as the pair (loss_r, 1) so that one column sum gives the total and
//                           the count of rows that count. The row's (max, 1 / sum) are kept for
//                           the backward. A target outside [0, V) that is not ignore_index
//                           reports the op to the status word (bad input).
//   cross_entropy_finish    mean = total / count; no row counting is reported the same way.
//   cross_entropy_backward  dz = g / count * (softmax(z) - onehot(target)), softmax rebuilt as
//                           exp(z - max) * (1 / sum) from the kept pair; g is the loss's gradient,
//                           read on the device. With skip_unit, a g of exactly 1 leaves dz as it
//                           is: the forward wrote it.
//   cross_entropy_count     one work-item: the number of rows that count, the float that the
//                           column sum of cross_entropy_rows' pairs gives (whole numbers: exact).
//   cross_entropy_rows_grad cross_entropy_rows, and, while the row is in L1, the backward's dz for
//                           g = 1 (the loss as the last node of a backward), bit for bit what
//                           cross_entropy_backward would write then: the sum's pass stores each
//                           exp(z - max) where dz goes, and the last pass scales them, so each
//                           logit's exponential is computed once and the logits are not read again.
#include "common.h"

#define LOG2E 1.44269504088896341f

// Lanes j .. j + VW of a row of n floats at any float address; lanes past n read as `fill`.
ALWAYS_INLINE vecf row_lanes(__global const float *zr, const int j, const int n, const float fill) {
    if (j + VW <= n) return *(__global const vecfu *)(zr + j);
    lanesf l;
    for (int k = 0; k < VW; ++k) l.s[k] = j + k < n ? zr[j + k] : fill;
    return l.v;
}

// Row r's max and sum of exp(z - max) (in *hi and *sum), its (loss, counted) pair written, inputs
// checked; the row's target in *t_out. With `dr`, each exp(z - max) is also stored at dr (lanes
// past n are not), where row_gradient then finds it.
ALWAYS_INLINE void row_stats(__global const float *zr, __global const int *target, __global float *pairs,
                             const int r, const int n, const int ignore_index, __global int *status,
                             const int seq, int *t_out, float *hi_out, float *sum_out, __global float *dr)
{
    const int t = target[r];
    const int counted = t != ignore_index;
    const int inside = t >= 0 && t < n;
    report(status, STATUS_BAD_INPUT, seq, counted && !inside);
    vecf hiv = (vecf)(-INFINITY);
    for (int j = 0; j < n; j += VW) {
        const vecf v = row_lanes(zr, j, n, -INFINITY);
        hiv = v > hiv ? v : hiv;
    }
    const float hi = hmaxv(hiv);
    vecf sumv = (vecf)(0.0f);
    for (int j = 0; j < n; j += VW) {                    // lanes past n: 2^-inf = 0
        const vecf e = exp2_neg((row_lanes(zr, j, n, -INFINITY) - hi) * LOG2E);
        sumv += e;
        if (dr) {
            if (j + VW <= n) {
                *(__global vecfu *)(dr + j) = e;
            } else {
                lanesf o;
                o.v = e;
                for (int k = 0; j + k < n; ++k) dr[j + k] = o.s[k];
            }
        }
    }
    const float sum = hsumv(sumv);
    const float ls = log(sum);                           // in [0, log n]: finite unless sum is NaN
    pairs[2 * r] = counted && inside ? ls - (zr[t] - hi) : 0.0f;
    pairs[2 * r + 1] = counted && inside ? 1.0f : 0.0f;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(hi + ls));  // the row's lse, as it was checked
    *t_out = t;
    *hi_out = hi;
    *sum_out = sum;
}

// dz of a row, s (p - onehot(t)) with p = e inv, returning inf/NaN bits. With `stored`, e is read
// at `src` (row_stats' exponentials, in place when src == dr); otherwise src is the row of logits
// and e = exp(z - hi) is computed as row_stats computes it, so both give the same bits.
ALWAYS_INLINE int row_gradient(__global const float *src, __global float *dr, const int n, const int t,
                               const float s, const float hi, const float inv, const int stored)
{
    int bad = 0;
    for (int j = 0; j < n; j += VW) {
        const veci hot = (veci)(j) + LANE_IDS == (veci)(t);
        const vecf e = stored ? row_lanes(src, j, n, 0.0f) : exp2_neg((row_lanes(src, j, n, -INFINITY) - hi) * LOG2E);
        const vecf p = e * inv;                            // its own statement: not contracted into an FMA
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
    return bad;
}

__kernel void cross_entropy_rows(
    __global const float *z, __global const int *target, __global float *pairs, __global float *stats,
    const int n_rows, const int n, const int ignore_index, __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    int t;
    float hi, sum;
    row_stats(z + (long)r * n, target, pairs, r, n, ignore_index, status, seq, &t, &hi, &sum, 0);
    stats[2 * r] = hi;
    stats[2 * r + 1] = 1.0f / sum;
}

__kernel void cross_entropy_count(__global const int *target, __global float *count, const int n_rows,
                                  const int n, const int ignore_index)
{
    int c = 0;
    for (int r = 0; r < n_rows; ++r) {
        const int t = target[r];
        c += t != ignore_index && t >= 0 && t < n;
    }
    count[0] = (float)c;
}

__kernel void cross_entropy_rows_grad(
    __global const float *z, __global const int *target, __global float *pairs, __global float *stats,
    __global const float *count, __global float *dz, const int n_rows, const int n, const int ignore_index,
    __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    __global float *dr = dz + (long)r * n;
    int t;
    float hi, sum;
    row_stats(z + (long)r * n, target, pairs, r, n, ignore_index, status, seq, &t, &hi, &sum, dr);
    const float inv = 1.0f / sum;
    stats[2 * r] = hi;
    stats[2 * r + 1] = inv;
    const float s = t == ignore_index ? 0.0f : 1.0f / count[0];
    report(status, STATUS_NONFINITE, seq, row_gradient(dr, dr, n, t, s, hi, inv, 1));
}

__kernel void cross_entropy_finish(__global const float *sums, __global float *loss,
                                   __global int *status, const int seq)
{
    loss[0] = sums[0] / sums[1];
    report(status, STATUS_BAD_INPUT, seq, sums[1] == 0.0f);
}

__kernel void cross_entropy_backward(
    __global const float *z, __global const int *target, __global const float *stats, __global const float *sums,
    __global const float *g, __global float *dz, const int n_rows, const int n, const int ignore_index,
    const int skip_unit, __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= n_rows || (skip_unit && g[0] == 1.0f)) return;
    const int t = target[r];
    const float s = t == ignore_index ? 0.0f : g[0] / sums[1];
    report(status, STATUS_NONFINITE, seq,
           row_gradient(z + (long)r * n, dz + (long)r * n, n, t, s, stats[2 * r], stats[2 * r + 1], 0));
}
