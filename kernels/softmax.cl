// softmax.cl: row softmax over the last axis with an optional boolean mask.
//
// Kernels:
//   masked_softmax_rows  one work-item per row: max pass, exp/sum pass, scale pass.
//                        Blocked entries (mask 0, or causal j > i + Tk - Tq) get weight 0.
//                        The host rejects rows with no allowed entry before launch, so
//                        the row maximum is always finite and no NaN can appear.
#include "common.h"

// --8<-- [start:masked_softmax_rows]
__kernel void masked_softmax_rows(
    __global const float *x, __global float *y,
    __global const uchar *mask, const int use_mask,
    const int mask_batch, const int mask_row, const int mask_col,
    const int causal, const int n_rows, const int tq, const int tk)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    const int batch = r / tq, i = r % tq;
    __global const float *row = x + (long)r * tk;
    __global float *out = y + (long)r * tk;
    __global const uchar *m = mask + (long)batch * mask_batch + (long)i * mask_row;

    float hi = -INFINITY;
    for (int j = 0; j < tk; ++j) {
        const int ok = (!use_mask || m[j * mask_col]) && (!causal || causal_allowed(i, j, tq, tk));
        if (ok && row[j] > hi) hi = row[j];
    }
    float total = 0.0f;
    for (int j = 0; j < tk; ++j) {
        const int ok = (!use_mask || m[j * mask_col]) && (!causal || causal_allowed(i, j, tq, tk));
        const float e = ok ? exp(row[j] - hi) : 0.0f;   // exp of a value <= 0: never overflows
        out[j] = e;
        total += e;
    }
    const float inv = 1.0f / total;                      // total >= 1: the maximum contributes exp(0)
    for (int j = 0; j < tk; ++j) out[j] *= inv;
}
// --8<-- [end:masked_softmax_rows]
