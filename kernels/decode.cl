// decode.cl: one cached decoding step of a Llama-style decoder, a whole layer per launch.
//
// Generating a token runs every layer on ONE position. Split into the training path's ops,
// that is ~17 small kernels per layer, and on a CPU driver each launch costs tens of
// microseconds, far more than the arithmetic (a layer of Chapter 9's 128-wide model is
// ~0.35 MFLOP). Here one work-group per sequence runs the whole layer, its stages separated
// by barriers, so a step is one launch per layer plus one for the head. Vectors between
// stages live in `work` (global memory the host keeps per device: on a CPU it stays in
// cache). The price: one sequence's layer runs on one core (a CPU runs a work-group on one
// thread). Spreading it over groups would need a launch per stage, the only global barrier
// OpenCL has, and at these widths that costs more than the second core gives.
//
// Layout conventions are the training path's: projections stored (in, out) so that a layer
// is x @ W; the KV cache is (batch, groups, max_len, head_dim) per layer; RoPE is the
// rotate-half pairing (x[i], x[i + d/2]) with the float64-built cos/sin tables of rope.cl.
//
// Kernels:
//   decode_layer        x <- x + Attn(RMSNorm1(x)); x <- x + SwiGLU(RMSNorm2(x)) for one position
//                       `pos` of each sequence (group b = sequence b). Appends this position's
//                       K and V to the cache and attends over positions 0..pos (causal: the
//                       new position sees every cached one). With embed = 1 the layer first
//                       loads x from the embedding table row of ids[b] (an id out of range is
//                       reported as a bad input and row 0 is used).
//   decode_logits       logits[b, v] = RMSNorm(x_b) . table[v] with a tied head (table (V, D)),
//                       or RMSNorm(x_b) @ out[:, v] with an untied one (out (D, V)).
#include "common.h"

#define DECODE_MAX_LOCAL 256

// A work-group-wide sum: each work-item gives its part, all get the total.
// Every work-item adds the parts in the same order, so all hold the same float.
ALWAYS_INLINE float group_sum(float part, __local float *red) {
    const int lid = get_local_id(0), ls = get_local_size(0);
    red[lid] = part;
    barrier(CLK_LOCAL_MEM_FENCE);
    float total = 0.0f;
    for (int i = 0; i < ls; ++i) total += red[i];
    barrier(CLK_LOCAL_MEM_FENCE);            // red is free again
    return total;
}

// 1 / rms(x) over n values, the sum of squares split across the group.
ALWAYS_INLINE float group_inv_rms(__global const float *x, int n, float eps, __local float *red) {
    const int lid = get_local_id(0), ls = get_local_size(0);
    float8 ss = (float8)(0.0f);
    for (int c = lid * 8; c < n; c += ls * 8) {
        const float8 v = load8(x, c, n);
        ss += v * v;
    }
    return 1.0f / sqrt(group_sum(hsum8(ss), red) / n + eps);
}

// sum_i x[i] W[i, j..j+7] (W (k, n) row-major), the columns past n read as 0.
ALWAYS_INLINE float8 column_dot8(__global const float *x, __global const float *W, int k, int n, int j) {
    float8 a0 = (float8)(0.0f), a1 = a0;
    int i = 0;
    for (; i + 2 <= k; i += 2) {
        a0 += x[i] * load8(W + (long)i * n, j, n);
        a1 += x[i + 1] * load8(W + (long)(i + 1) * n, j, n);
    }
    if (i < k) a0 += x[i] * load8(W + (long)i * n, j, n);
    return a0 + a1;
}

// The same for 16 columns j..j+15, all inside the row: a cache line per row, two partial
// sums so that consecutive multiply-adds do not wait on each other. Returned as lo and hi.
typedef float16 float16u __attribute__((aligned(4)));
ALWAYS_INLINE void column_dot16(__global const float *x, __global const float *W, int k, int n, int j,
                                float8 *lo, float8 *hi) {
    float16 a0 = (float16)(0.0f), a1 = a0;
    int i = 0;
    for (; i + 2 <= k; i += 2) {
        __global const float *w = W + (long)i * n + j;
        a0 += x[i] * *(__global const float16u *)w;
        a1 += x[i + 1] * *(__global const float16u *)(w + n);
    }
    if (i < k) a0 += x[i] * *(__global const float16u *)(W + (long)i * n + j);
    a0 += a1;
    *lo = a0.lo;
    *hi = a0.hi;
}

// Columns j..j+15 of x W: 16 at once where they fit in the row, else 8 at a time (the tail).
ALWAYS_INLINE void column_chunk(__global const float *x, __global const float *W, int k, int n, int j,
                                float8 *lo, float8 *hi) {
    if (j + 16 <= n) {
        column_dot16(x, W, k, n, j, lo, hi);
    } else {
        *lo = column_dot8(x, W, k, n, j);
        *hi = j + 8 < n ? column_dot8(x, W, k, n, j + 8) : (float8)(0.0f);
    }
}

// y[j] = sum_i x[i] W[i, j] for this work-item's columns, 16 at a time; with `add`,
// y[j] += that instead. Returns whether a stored value is inf or NaN.
ALWAYS_INLINE int group_matvec(__global const float *x, __global const float *W, int k, int n,
                               __global float *y, int add) {
    const int lid = get_local_id(0), ls = get_local_size(0);
    int bad = 0;
    for (int j = lid * 16; j < n; j += ls * 16) {
        float8 lo, hi;
        column_chunk(x, W, k, n, j, &lo, &hi);
        if (add) {
            lo += load8(y, j, n);
            hi += load8(y, j + 8, n);
        }
        bad |= store8(y, j, n, lo) | store8(y, j + 8, n, hi);
    }
    return bad;
}

__kernel void decode_layer(
    __global float *x_all, __global const float *table, __global const int *ids, const int embed, const int vocab,
    __global const float *norm1, __global const float *wq, __global const float *wk, __global const float *wv,
    __global const float *wo, __global const float *norm2, __global const float *w1, __global const float *w3,
    __global const float *w2, __global float *k_cache, __global float *v_cache,
    __global const float *cos_t, __global const float *sin_t, __global float *work,
    const int dim, const int heads, const int groups, const int head_dim, const int hidden, const int max_len,
    const int pos, const float eps, const float scale, __global int *status, const int seq)
{
    __local float red[DECODE_MAX_LOCAL];
    const int b = get_group_id(0), lid = get_local_id(0), ls = get_local_size(0);
    const int kv = groups * head_dim, len = pos + 1, pairs = head_dim / 2, per_group = heads / groups;
    __global float *x = x_all + (long)b * dim;
    // This sequence's scratch: n (dim), q (dim), k (kv), v (kv), o (dim), p (heads * max_len), u (hidden).
    __global float *n = work + (long)b * (4L * dim + 2L * kv + (long)heads * max_len + hidden);
    __global float *q = n + dim, *k = q + dim, *v = k + kv, *o = v + kv, *p = o + dim;
    __global float *u = p + (long)heads * max_len;
    __global float *kc = k_cache + (long)b * groups * max_len * head_dim;
    __global float *vc = v_cache + (long)b * groups * max_len * head_dim;
    int bad = 0;

    if (embed) {
        int id = ids[b];
        if (id < 0 || id >= vocab) {
            if (lid == 0) report(status, STATUS_BAD_INPUT, seq, 1);
            id = 0;
        }
        for (int c = lid; c < dim; c += ls) x[c] = table[(long)id * dim + c];
        barrier(CLK_GLOBAL_MEM_FENCE);
    }

    // Attention branch: n = RMSNorm1(x); q, k, v = n Wq, n Wk, n Wv.
    const float inv1 = group_inv_rms(x, dim, eps, red);
    for (int c = lid; c < dim; c += ls) n[c] = x[c] * inv1 * norm1[c];
    barrier(CLK_GLOBAL_MEM_FENCE);
    group_matvec(n, wq, dim, dim, q, 0);
    group_matvec(n, wk, dim, kv, k, 0);
    group_matvec(n, wv, dim, kv, v, 0);
    barrier(CLK_GLOBAL_MEM_FENCE);

    // RoPE at position pos on every query and key head (rotate-half pairs).
    for (int e = lid; e < (heads + groups) * pairs; e += ls) {
        const int row = e / pairs, i = e - row * pairs;
        __global float *r = row < heads ? q + row * head_dim : k + (row - heads) * head_dim;
        const float c = cos_t[(long)pos * pairs + i], s = sin_t[(long)pos * pairs + i];
        const float a = r[i], bb = r[i + pairs];
        r[i] = a * c - bb * s;
        r[i + pairs] = a * s + bb * c;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int e = lid; e < kv; e += ls) {                 // append to the cache, in place
        const int g = e / head_dim, c = e - g * head_dim;
        const long at = ((long)g * max_len + pos) * head_dim + c;
        kc[at] = k[e];
        vc[at] = v[e];
    }
    barrier(CLK_GLOBAL_MEM_FENCE);

    // Scores of each query head against the keys 0..pos of its K/V group.
    for (int e = lid; e < heads * len; e += ls) {
        const int hh = e / len, t = e - hh * len;
        __global const float *kr = kc + ((long)(hh / per_group) * max_len + t) * head_dim;
        __global const float *qr = q + hh * head_dim;
        float8 acc = (float8)(0.0f);
        for (int c = 0; c < head_dim; c += 8) acc += load8(qr, c, head_dim) * load8(kr, c, head_dim);
        p[(long)hh * max_len + t] = hsum8(acc) * scale;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    // Softmax over each head's row: a work-item per head (a row is at most max_len long).
    for (int hh = lid; hh < heads; hh += ls) {
        __global float *row = p + (long)hh * max_len;
        float m = row[0];
        for (int t = 1; t < len; ++t) m = fmax(m, row[t]);
        float8 s8 = (float8)(0.0f);
        for (int t = 0; t < len; t += 8) {
            const int8 live = (int8)(t) + (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)(len);
            s8 += live ? exp8(load8(row, t, len) - m) : (float8)(0.0f);
        }
        const float inv = 1.0f / hsum8(s8);
        for (int t = 0; t < len; t += 8) store8(row, t, len, exp8(load8(row, t, len) - m) * inv);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    // o[h] = sum_t p[h, t] V[t], 8 features per work-item.
    const int chunks = (head_dim + 7) / 8;
    for (int e = lid; e < heads * chunks; e += ls) {
        const int hh = e / chunks, c = (e - hh * chunks) * 8;
        __global const float *vg = vc + (long)(hh / per_group) * max_len * head_dim;
        __global const float *prow = p + (long)hh * max_len;
        float8 acc = (float8)(0.0f);
        for (int t = 0; t < len; ++t) acc += prow[t] * load8(vg + (long)t * head_dim, c, head_dim);
        store8(o + hh * head_dim, c, head_dim, acc);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    bad |= group_matvec(o, wo, dim, dim, x, 1);          // x += o Wo
    barrier(CLK_GLOBAL_MEM_FENCE);

    // Feed-forward branch: n = RMSNorm2(x); u = silu(n W1) * (n W3); x += u W2.
    const float inv2 = group_inv_rms(x, dim, eps, red);
    for (int c = lid; c < dim; c += ls) n[c] = x[c] * inv2 * norm2[c];
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int j = lid * 16; j < hidden; j += ls * 16) {
        float8 g_lo, g_hi, u_lo, u_hi;
        column_chunk(n, w1, dim, hidden, j, &g_lo, &g_hi);
        column_chunk(n, w3, dim, hidden, j, &u_lo, &u_hi);
        store8(u, j, hidden, g_lo / (1.0f + exp8(-g_lo)) * u_lo);
        store8(u, j + 8, hidden, g_hi / (1.0f + exp8(-g_hi)) * u_hi);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    bad |= group_matvec(u, w2, hidden, dim, x, 1);       // x += u W2
    report(status, STATUS_NONFINITE, seq, bad);
}

// The final RMSNorm of sequence b's x, times the norm weight, into this group's part of n.
ALWAYS_INLINE void final_norm(__global const float *x, __global const float *norm, int dim, float eps,
                              __local float *n, __local float *red) {
    const int lid = get_local_id(0), ls = get_local_size(0);
    const float inv = group_inv_rms(x, dim, eps, red);
    for (int c = lid; c < dim; c += ls) n[c] = x[c] * inv * norm[c];
    barrier(CLK_LOCAL_MEM_FENCE);
}

// Tied head: logits of rows r0..r0+7 of table (vocab, dim), 8 independent sums over
// contiguous rows (rows past the vocabulary read row 0 and are not stored).
ALWAYS_INLINE float8 tied_logits8(__local const float *n, __global const float *table, int dim, int vocab, int r0) {
    float8 acc[8];
    for (int r = 0; r < 8; ++r) acc[r] = (float8)(0.0f);
    for (int c = 0; c < dim; c += 8) {
        float8 nv;
        if (c + 8 <= dim) {
            nv = vload8(0, n + c);
        } else {
            lanes8f l;
            for (int k = 0; k < 8; ++k) l.s[k] = c + k < dim ? n[c + k] : 0.0f;
            nv = l.v;
        }
        for (int r = 0; r < 8; ++r)
            acc[r] += nv * load8(table + (long)(r0 + r < vocab ? r0 + r : 0) * dim, c, dim);
    }
    lanes8f y;
    for (int r = 0; r < 8; ++r) y.s[r] = hsum8(acc[r]);
    return y.v;
}

// The head: 8 vocabulary entries per work-item, groups along axis 0 cover the vocabulary and
// axis 1 is the sequence; `n` (dim floats of local memory) holds the normed x. With `tied`,
// head is the embedding table (vocab, dim); otherwise the output matrix (dim, vocab).
__kernel void decode_logits(__global const float *x_all, __global const float *norm,
                            __global const float *head, __global float *logits, __local float *n,
                            const int dim, const int vocab, const int tied, const float eps,
                            __global int *status, const int seq)
{
    __local float red[DECODE_MAX_LOCAL];
    const int b = get_global_id(1), j = get_global_id(0) * 8;
    final_norm(x_all + (long)b * dim, norm, dim, eps, n, red);
    if (j >= vocab) return;
    float8 acc = (float8)(0.0f);
    if (tied) {
        acc = tied_logits8(n, head, dim, vocab, j);
    } else {
        for (int i = 0; i < dim; ++i) acc += n[i] * load8(head + (long)i * vocab, j, vocab);
    }
    report(status, STATUS_NONFINITE, seq, store8(logits + (long)b * vocab, j, vocab, acc));
}
