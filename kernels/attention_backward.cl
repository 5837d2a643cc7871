// attention_backward.cl: gradients of scaled dot-product attention, dense and streamed.
//
// Kernels:
//   softmax_backward_rows         dense path and ag.softmax: dX = scale * P * (dP - rowsum(dP * P)),
//                                 one work-item per row. Blocked entries have P = 0, so their gradient
//                                 is 0 with no mask needed. The four products around it (dV, dP, dQ, dK)
//                                 reuse matmul_blocked from matmul.cl.
//   flash_attention_backward_dq   flash path, one work-item per query row: D_i = dO_i . O_i, then key tiles
//                                 recompute P_ij = exp(s_ij - lse_i) from the forward's saved log-sum-exp
//                                 and accumulate dQ_i. Stores D_i for the next kernel; nothing Tq x Tk is
//                                 ever stored (the S115 recomputation).
//   flash_attention_backward_dkv  flash path, one work-item per key row: walks the queries of every head
//                                 of its K/V group (grouped-query attention sums them), recomputes P_ij
//                                 once more and accumulates dK_j and dV_j. Each work-item owns its output
//                                 rows, so there are no atomics and no races.
//   flash_backward_pack           x (n, T, w) -> panels [n][Tp/8][w][8], zero-padded to whole panels: the
//                                 d-major layout the tiled kernels read 8 keys (or queries) at a time from.
//   flash_attention_backward_dq_tiled   the dq kernel with ROWS query rows per work-item and keys in
//                                 float8 panels: scores and dP as register blocks, an inline exp2 (PoCL
//                                 calls exp() out of line), dQ += dS K as float8 row updates. Needs d and
//                                 dv multiples of 8 (HEAD_D, HEAD_DV built in); several times the row kernel.
//   flash_attention_backward_dkv_tiled  the dkv kernel the same way: KROWS key rows per work-item, queries
//                                 in float8 panels of Q and dO.
//
// Layout: q, o, dO are (n_batch, Tq, d|dv) with n_batch = outer * heads; k, v are (outer * groups, Tk, d|dv);
// head h of H reads K/V group h / (H / G). Masks are uchar (1 = allowed) addressed by element strides, as
// in softmax.cl. The private row buffers hold up to MAX_D floats (the host passes -D MAX_D=... >= d, dv).
#include "common.h"

#ifndef MAX_D
#define MAX_D 64
#endif
#define KEY_TILE 16

inline long bwd_kv_row(int b, int heads, int groups) {
    return (long)(b / heads) * groups + (b % heads) / (heads / groups);
}

// --8<-- [start:softmax_backward_rows]
__kernel void softmax_backward_rows(
    __global const float *p, __global const float *dp, __global float *dx,
    const int n_rows, const int n, const float scale)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    __global const float *pr = p + (long)r * n;
    __global const float *gr = dp + (long)r * n;
    __global float *out = dx + (long)r * n;
    float dot = 0.0f;
    for (int j = 0; j < n; ++j) dot += pr[j] * gr[j];
    for (int j = 0; j < n; ++j) out[j] = scale * pr[j] * (gr[j] - dot);
}
// --8<-- [end:softmax_backward_rows]

// --8<-- [start:flash_attention_backward_dq]
__kernel void flash_attention_backward_dq(
    __global const float *q, __global const float *k, __global const float *v,
    __global const float *o, __global const float *dout, __global const float *lse,
    __global float *dq, __global float *delta_out,
    __global const uchar *mask, const int use_mask,
    const int mask_batch, const int mask_row, const int mask_col, const int causal,
    const int tq, const int tk, const int d, const int dv,
    const int heads, const int groups, const int n_batch, const float scale)
{
    const int i = get_global_id(0), b = get_global_id(1);
    if (i >= tq || b >= n_batch) return;
    const long row = (long)b * tq + i;
    const long kv = bwd_kv_row(b, heads, groups);
    __global const float *kb = k + kv * tk * d;
    __global const float *vb = v + kv * tk * dv;
    __global const uchar *m = mask + (long)b * mask_batch + (long)i * mask_row;

    float qi[MAX_D], doi[MAX_D], acc[MAX_D];
    float delta = 0.0f;                                  // D_i = dO_i . O_i = sum_j P_ij dP_ij
    for (int c = 0; c < dv; ++c) {
        doi[c] = dout[row * dv + c];
        delta += doi[c] * o[row * dv + c];
    }
    for (int c = 0; c < d; ++c) { qi[c] = q[row * d + c]; acc[c] = 0.0f; }
    const float li = lse[row];
    const int end = causal ? min(tk, i + (tk - tq) + 1) : tk;   // keys past the diagonal are blocked

    for (int j0 = 0; j0 < end; j0 += KEY_TILE) {
        const int n = min(KEY_TILE, end - j0);
        float ds[KEY_TILE];
        for (int t = 0; t < n; ++t) {
            const int j = j0 + t;
            float s = 0.0f, dp = 0.0f;
            for (int c = 0; c < d; ++c) s += qi[c] * kb[(long)j * d + c];
            for (int c = 0; c < dv; ++c) dp += doi[c] * vb[(long)j * dv + c];
            const int ok = !use_mask || m[j * mask_col];
            const float pij = ok ? exp(s * scale - li) : 0.0f;   // s*scale <= lse: never overflows
            ds[t] = pij * (dp - delta);
        }
        for (int t = 0; t < n; ++t)
            for (int c = 0; c < d; ++c) acc[c] += ds[t] * kb[(long)(j0 + t) * d + c];
    }
    for (int c = 0; c < d; ++c) dq[row * d + c] = acc[c] * scale;
    delta_out[row] = delta;
}
// --8<-- [end:flash_attention_backward_dq]

// --8<-- [start:flash_attention_backward_dkv]
__kernel void flash_attention_backward_dkv(
    __global const float *q, __global const float *k, __global const float *v,
    __global const float *dout, __global const float *lse, __global const float *delta,
    __global float *dk, __global float *dvv,
    __global const uchar *mask, const int use_mask,
    const int mask_batch, const int mask_row, const int mask_col, const int causal,
    const int tq, const int tk, const int d, const int dv,
    const int heads, const int groups, const int n_kv, const float scale)
{
    const int j = get_global_id(0), bg = get_global_id(1);
    if (j >= tk || bg >= n_kv) return;
    const int outer = bg / groups, g = bg % groups, per_group = heads / groups;
    const long krow = (long)bg * tk + j;

    float kj[MAX_D], vj[MAX_D], dka[MAX_D], dva[MAX_D];
    for (int c = 0; c < d; ++c) { kj[c] = k[krow * d + c]; dka[c] = 0.0f; }
    for (int c = 0; c < dv; ++c) { vj[c] = v[krow * dv + c]; dva[c] = 0.0f; }
    const int first = causal ? max(0, j - (tk - tq)) : 0;        // query i sees key j when i >= j - (Tk - Tq)

    for (int hh = 0; hh < per_group; ++hh) {
        const int b = outer * heads + g * per_group + hh;
        __global const uchar *mb = mask + (long)b * mask_batch + (long)j * mask_col;
        for (int i = first; i < tq; ++i) {
            if (use_mask && !mb[(long)i * mask_row]) continue;
            const long row = (long)b * tq + i;
            __global const float *qi = q + row * d;
            __global const float *doi = dout + row * dv;
            float s = 0.0f, dp = 0.0f;
            for (int c = 0; c < d; ++c) s += qi[c] * kj[c];
            for (int c = 0; c < dv; ++c) dp += doi[c] * vj[c];
            const float pij = exp(s * scale - lse[row]);
            const float ds = pij * (dp - delta[row]);
            for (int c = 0; c < dv; ++c) dva[c] += pij * doi[c];
            for (int c = 0; c < d; ++c) dka[c] += ds * qi[c];
        }
    }
    for (int c = 0; c < d; ++c) dk[krow * d + c] = dka[c] * scale;
    for (int c = 0; c < dv; ++c) dvv[krow * dv + c] = dva[c];
}
// --8<-- [end:flash_attention_backward_dkv]

// ---- tiled versions (built per head width; the host uses them when d and dv are multiples of 8) ----
#ifndef HEAD_D
#define HEAD_D 64
#endif
#ifndef HEAD_DV
#define HEAD_DV 64
#endif
#ifndef ROWS
#define ROWS 2          // query rows per work-item of the dq kernel
#endif
#ifndef KROWS
#define KROWS 2         // key rows per work-item of the dkv kernel
#endif
#define LOG2E 1.4426950408889634f
#define INLINE __attribute__((always_inline))

typedef union { float8 v; float s[8]; } lanes8;
typedef union { int8 v; int s[8]; } ilanes8;


// --8<-- [start:flash_backward_pack]
__kernel void flash_backward_pack(
    __global const float *x, __global float *panels, const int t_len, const int t_pad, const int w)
{
    const int t = get_global_id(0), n = get_global_id(1);
    if (t >= t_pad) return;
    __global float *dst = panels + ((long)n * (t_pad / 8) + t / 8) * w * 8 + t % 8;
    for (int c = 0; c < w; ++c) dst[c * 8] = t < t_len ? x[((long)n * t_len + t) * w + c] : 0.0f;
}
// --8<-- [end:flash_backward_pack]

// Lanes of one 8-wide panel a row may use: inside the sequence, causal, and the explicit mask.
INLINE int8 bwd_allowed(int8 i, int8 j, int tq, int tk, int causal, __global const uchar *mask, int use_mask,
                        long base, int mask_row, int mask_col) {
    int8 ok = (i < (int8)(tq)) & (j < (int8)(tk));
    if (causal) ok &= j <= i + (int8)(tk - tq);
    if (use_mask) {
        ilanes8 li, lj, m;
        li.v = i;
        lj.v = j;
        for (int t = 0; t < 8; ++t) {
            const int ii = min(li.s[t], tq - 1), jj = min(lj.s[t], tk - 1);
            m.s[t] = mask[base + (long)ii * mask_row + (long)jj * mask_col] ? -1 : 0;
        }
        ok &= m.v;
    }
    return ok;
}

// --8<-- [start:flash_attention_backward_dq_tiled]
__kernel void flash_attention_backward_dq_tiled(
    __global const float *q, __global const float *k, __global const float *kp, __global const float *vp,
    __global const float *o, __global const float *dout, __global const float *lse,
    __global float *dq, __global float *delta_out,
    __global const uchar *mask, const int use_mask,
    const int mask_batch, const int mask_row, const int mask_col, const int causal,
    const int tq, const int tk, const int tkp, const int heads, const int groups, const float scale)
{
    const int i0 = get_global_id(0) * ROWS, b = get_global_id(1);
    if (i0 >= tq) return;
    const long g = bwd_kv_row(b, heads, groups);
    __global const float *qr[ROWS], *dor[ROWS];
    float lse2[ROWS], delta[ROWS];
    float8 acc[ROWS][HEAD_D / 8];
    for (int r = 0; r < ROWS; ++r) {
        const long row = (long)b * tq + min(i0 + r, tq - 1);         // rows past Tq repeat the last one
        qr[r] = q + row * HEAD_D;
        dor[r] = dout + row * HEAD_DV;
        float dl = 0.0f;
        for (int c = 0; c < HEAD_DV; ++c) dl += dor[r][c] * o[row * HEAD_DV + c];
        delta[r] = dl;
        lse2[r] = lse[row] * LOG2E;
        for (int c = 0; c < HEAD_D / 8; ++c) acc[r][c] = (float8)(0.0f);
    }
    const int kend = causal ? min(tk, min(i0 + ROWS - 1, tq - 1) + tk - tq + 1) : tk;
    const float sl2 = scale * LOG2E;
    const int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);

    for (int j0 = 0; j0 < kend; j0 += 8) {
        __global const float8 *kc = (__global const float8 *)(kp + (g * (tkp / 8) + j0 / 8) * HEAD_D * 8);
        __global const float8 *vc = (__global const float8 *)(vp + (g * (tkp / 8) + j0 / 8) * HEAD_DV * 8);
        float8 s[ROWS], dp[ROWS];
        for (int r = 0; r < ROWS; ++r) s[r] = dp[r] = (float8)(0.0f);
        for (int c = 0; c < HEAD_D; ++c) {
            const float8 k8 = kc[c];
            for (int r = 0; r < ROWS; ++r) s[r] = qr[r][c] * k8 + s[r];
        }
        for (int c = 0; c < HEAD_DV; ++c) {
            const float8 v8 = vc[c];
            for (int r = 0; r < ROWS; ++r) dp[r] = dor[r][c] * v8 + dp[r];
        }
        lanes8 ds[ROWS];
        for (int r = 0; r < ROWS; ++r) {
            const int8 ok = bwd_allowed((int8)(i0 + r), lane + j0, tq, tk, causal, mask, use_mask,
                                        (long)b * mask_batch, mask_row, mask_col);
            const float8 p = ok ? exp2_neg(s[r] * sl2 - lse2[r]) : (float8)(0.0f);
            ds[r].v = p * (dp[r] - delta[r]);
        }
        for (int t = 0; t < 8; ++t) {                                 // dQ += dS K, one key row at a time
            __global const float8 *kr = (__global const float8 *)(k + (g * tk + min(j0 + t, tk - 1)) * HEAD_D);
            for (int c = 0; c < HEAD_D / 8; ++c) {
                const float8 k8 = kr[c];
                for (int r = 0; r < ROWS; ++r) acc[r][c] = ds[r].s[t] * k8 + acc[r][c];
            }
        }
    }
    for (int r = 0; r < ROWS && i0 + r < tq; ++r) {
        const long row = (long)b * tq + i0 + r;
        __global float8 *out = (__global float8 *)(dq + row * HEAD_D);
        for (int c = 0; c < HEAD_D / 8; ++c) out[c] = acc[r][c] * scale;
        delta_out[row] = delta[r];
    }
}
// --8<-- [end:flash_attention_backward_dq_tiled]

// --8<-- [start:flash_attention_backward_dkv_tiled]
__kernel void flash_attention_backward_dkv_tiled(
    __global const float *q, __global const float *dout, __global const float *qp, __global const float *dop,
    __global const float *k, __global const float *v, __global const float *lse, __global const float *delta,
    __global float *dk, __global float *dvv,
    __global const uchar *mask, const int use_mask,
    const int mask_batch, const int mask_row, const int mask_col, const int causal,
    const int tq, const int tk, const int tqp, const int heads, const int groups, const float scale)
{
    const int j0 = get_global_id(0) * KROWS, bg = get_global_id(1);
    if (j0 >= tk) return;
    const int outer = bg / groups, per_group = heads / groups, g = bg % groups;
    __global const float *kr[KROWS], *vr[KROWS];
    float8 dka[KROWS][HEAD_D / 8], dva[KROWS][HEAD_DV / 8];
    for (int r = 0; r < KROWS; ++r) {
        const long row = (long)bg * tk + min(j0 + r, tk - 1);
        kr[r] = k + row * HEAD_D;
        vr[r] = v + row * HEAD_DV;
        for (int c = 0; c < HEAD_D / 8; ++c) dka[r][c] = (float8)(0.0f);
        for (int c = 0; c < HEAD_DV / 8; ++c) dva[r][c] = (float8)(0.0f);
    }
    const int first = causal ? max(0, j0 - (tk - tq)) / 8 * 8 : 0;   // earlier queries see none of these keys
    const float sl2 = scale * LOG2E;
    const int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);

    for (int hh = 0; hh < per_group; ++hh) {
        const int b = outer * heads + g * per_group + hh;
        for (int i0 = first; i0 < tq; i0 += 8) {
            __global const float8 *qc = (__global const float8 *)(qp + ((long)b * (tqp / 8) + i0 / 8) * HEAD_D * 8);
            __global const float8 *oc = (__global const float8 *)(dop + ((long)b * (tqp / 8) + i0 / 8) * HEAD_DV * 8);
            float8 st[KROWS], dpt[KROWS];
            for (int r = 0; r < KROWS; ++r) st[r] = dpt[r] = (float8)(0.0f);
            for (int c = 0; c < HEAD_D; ++c) {
                const float8 q8 = qc[c];
                for (int r = 0; r < KROWS; ++r) st[r] = kr[r][c] * q8 + st[r];
            }
            for (int c = 0; c < HEAD_DV; ++c) {
                const float8 o8 = oc[c];
                for (int r = 0; r < KROWS; ++r) dpt[r] = vr[r][c] * o8 + dpt[r];
            }
            lanes8 l2, dl;
            for (int t = 0; t < 8; ++t) {
                const long row = (long)b * tq + min(i0 + t, tq - 1);
                l2.s[t] = lse[row] * LOG2E;
                dl.s[t] = delta[row];
            }
            lanes8 p[KROWS], ds[KROWS];
            for (int r = 0; r < KROWS; ++r) {
                const int8 ok = bwd_allowed(lane + i0, (int8)(j0 + r), tq, tk, causal, mask, use_mask,
                                            (long)b * mask_batch, mask_row, mask_col);
                p[r].v = ok ? exp2_neg(st[r] * sl2 - l2.v) : (float8)(0.0f);
                ds[r].v = p[r].v * (dpt[r] - dl.v);
            }
            for (int t = 0; t < 8; ++t) {                             // dV += Pᵀ dO, dK += dSᵀ Q by query rows
                const long row = (long)b * tq + min(i0 + t, tq - 1);
                __global const float8 *orow = (__global const float8 *)(dout + row * HEAD_DV);
                __global const float8 *qrow = (__global const float8 *)(q + row * HEAD_D);
                for (int c = 0; c < HEAD_DV / 8; ++c) {
                    const float8 o8 = orow[c];
                    for (int r = 0; r < KROWS; ++r) dva[r][c] = p[r].s[t] * o8 + dva[r][c];
                }
                for (int c = 0; c < HEAD_D / 8; ++c) {
                    const float8 q8 = qrow[c];
                    for (int r = 0; r < KROWS; ++r) dka[r][c] = ds[r].s[t] * q8 + dka[r][c];
                }
            }
        }
    }
    for (int r = 0; r < KROWS && j0 + r < tk; ++r) {
        const long row = (long)bg * tk + j0 + r;
        __global float8 *dko = (__global float8 *)(dk + row * HEAD_D);
        __global float8 *dvo = (__global float8 *)(dvv + row * HEAD_DV);
        for (int c = 0; c < HEAD_D / 8; ++c) dko[c] = dka[r][c] * scale;
        for (int c = 0; c < HEAD_DV / 8; ++c) dvo[c] = dva[r][c];
    }
}
// --8<-- [end:flash_attention_backward_dkv_tiled]
