// softmax.cl: row softmax over the last axis with an optional mask, and its gradient.
//
// Kernels:
//   masked_softmax_rows    one work-item per row: max pass, exp/sum pass, scale pass. Blocked
//                          entries (mask 0, or causally hidden) get weight 0. The host rejects
//                          rows with no allowed entry before launch, so the row maximum is
//                          finite and the sum is at least 1 (the maximum's own exp(0)).
//   apply_mask_rows        scores with -inf where blocked, the logits a masked softmax sees.
//   softmax_backward_rows  dx = scale * p * (dp - rowsum(dp * p)), one work-item per row. Blocked
//                          entries have p = 0, so their gradient is 0 with no mask needed. The
//                          dense attention backward uses it too (scale = its 1/sqrt(d)).
#include "common.h"

// --8<-- [start:masked_softmax_rows]
__kernel void masked_softmax_rows(
    __global const float *x, __global float *y, MASK_PARAMS,
    const int n_rows, const int tq, const int tk, const int heads, __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    const int batch = r / tq, i = r % tq;
    __global const float *row = x + (long)r * tk;
    __global float *out = y + (long)r * tk;
    const long mrow = mask_row_base(batch, heads, i, m_outer, m_head, m_row);

    float hi = -INFINITY;
    for (int j = 0; j < tk; ++j)
        if (key_visible(i, j, tk, causal, q_start, mask, use_mask, mrow, m_col) && row[j] > hi) hi = row[j];
    float total = 0.0f;
    for (int j = 0; j < tk; ++j) {
        const int ok = key_visible(i, j, tk, causal, q_start, mask, use_mask, mrow, m_col);
        const float e = ok ? exp(row[j] - hi) : 0.0f;   // exp of a value <= 0: never overflows
        out[j] = e;
        total += e;
    }
    const float inv = 1.0f / total;
    int bad = nonfinite_bits(inv);                       // an inf or NaN score makes the sum so
    for (int j = 0; j < tk; ++j) out[j] *= inv;
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:masked_softmax_rows]

__kernel void apply_mask_rows(
    __global const float *x, __global float *y, MASK_PARAMS,
    const int n_rows, const int tq, const int tk, const int heads)
{
    const int j = get_global_id(0), r = get_global_id(1);
    if (j >= tk || r >= n_rows) return;
    const int batch = r / tq, i = r % tq;
    const long mrow = mask_row_base(batch, heads, i, m_outer, m_head, m_row);
    const long at = (long)r * tk + j;
    y[at] = key_visible(i, j, tk, causal, q_start, mask, use_mask, mrow, m_col) ? x[at] : -INFINITY;
}

// --8<-- [start:softmax_backward_rows]
__kernel void softmax_backward_rows(
    __global const float *p, __global const float *dp, __global float *dx,
    const int n_rows, const int n, const float scale, __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    __global const float *pr = p + (long)r * n;
    __global const float *gr = dp + (long)r * n;
    __global float *out = dx + (long)r * n;
    float dot = 0.0f;
    for (int j = 0; j < n; ++j) dot += pr[j] * gr[j];
    int bad = 0;
    for (int j = 0; j < n; ++j) {
        const float v = scale * pr[j] * (gr[j] - dot);
        out[j] = v;
        bad |= nonfinite_bits(v);
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:softmax_backward_rows]
