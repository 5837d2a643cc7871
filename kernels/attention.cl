// attention.cl: dense (materialized) scaled dot-product attention, in two kernels
// around the row softmax of softmax.cl:
//
//   attention_scores  S[b,i,j] = scale * q_i . k_j for query head b, reading K from
//                     its K/V group (grouped-query attention: head h of H reads group
//                     h / (H / G)). Stores the whole Tq x Tk matrix: this is the
//                     textbook form the pages teach from, not the memory-lean one.
//   attention_apply   O[b,i,:] = sum_j P[b,i,j] V[group(b), j, :].
// Both are one output entry per work-item: the readable version, used for small
// problems. Larger ones run both products on the packed GEMM of matmul.cl
// (see netcl_lite/ops/attention.py), ~10x faster on the PoCL CPU driver.
// K and V rows of a group are `kv_rows` apart (the capacity of a KV cache; tk when not cached).
#include "common.h"

inline int kv_index(int b, int heads, int groups) {
    // b runs over (outer, head); K/V run over (outer, group).
    const int outer = b / heads, h = b % heads;
    return outer * groups + h / (heads / groups);
}

// --8<-- [start:attention_scores]
__kernel void attention_scores(
    __global const float *q, __global const float *k, __global float *s,
    const int tq, const int tk, const int kv_rows, const int d, const int heads, const int groups,
    const float scale)
{
    const int j = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
    if (j >= tk || i >= tq) return;
    __global const float *qi = q + ((long)b * tq + i) * d;
    __global const float *kj = k + ((long)kv_index(b, heads, groups) * kv_rows + j) * d;
    float dot = 0.0f;
    for (int c = 0; c < d; ++c) dot += qi[c] * kj[c];
    s[((long)b * tq + i) * tk + j] = dot * scale;
}
// --8<-- [end:attention_scores]

// --8<-- [start:attention_apply]
__kernel void attention_apply(
    __global const float *p, __global const float *v, __global float *o,
    const int tq, const int tk, const int kv_rows, const int dv, const int heads, const int groups,
    __global int *status, const int seq)
{
    const int c = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
    if (c >= dv || i >= tq) return;
    __global const float *pi = p + ((long)b * tq + i) * tk;
    __global const float *vb = v + (long)kv_index(b, heads, groups) * kv_rows * dv;
    float acc = 0.0f;
    for (int j = 0; j < tk; ++j) acc += pi[j] * vb[j * dv + c];
    o[((long)b * tq + i) * dv + c] = acc;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(acc));
}
// --8<-- [end:attention_apply]
