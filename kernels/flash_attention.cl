// flash_attention.cl: exact attention by tiled online softmax; never stores Tq x Tk.
//
// Kernels:
//   flash_attention_rows  one work-item per query row, any block size at run time, plain
//                         exp(): the online-softmax algorithm as written on the page. Each
//                         tile's scores are computed twice (max pass, then sum pass)
//                         instead of being stored. The fallback for block sizes the tiled
//                         kernel is not built for; ~15x slower than it (T = 512, d = 64).
//   flash_pack_kv         K (BG, Tk, d) and V (BG, Tk, dv) -> 16-wide panels, zero-padded to
//                         whole tiles: Kt[g][key/16][c][16] and Vp[g][col/16][key][16], so the
//                         tiled kernel streams contiguous aligned vectors with no edge cases.
//                         O(T d) extra memory and work.
//   flash_attention_tiled each work-item owns ROWS = 6 query rows. A tile of TILE keys:
//                         S = Q Kt in 6 x 16 register blocks (12 float8 accumulators, the
//                         16 AVX2 registers PoCL's LLVM targets here), softmax in base 2 with
//                         an inline exp2 polynomial (PoCL calls exp() out of line), then
//                         O += P V in 6 x 16 blocks. No barriers: PoCL spills everything
//                         live across one. Built per (ROWS, TILE, DV_CHUNKS).
//
//   flash_attention_backward_dq, flash_attention_backward_dkv, flash_backward_pack,
//   flash_attention_backward_dq_tiled, flash_attention_backward_dkv_tiled
//                         the gradient, recomputing the weights; below the forward kernels,
//                         with their own comment.
//
// Both forward kernels keep, per query row, the running maximum m, the normalizer
// l = sum exp(s - m) and the output accumulator o = sum exp(s - m) v. When a tile
// raises the maximum, the old l and o are multiplied by exp(m_old - m_new) first:
// after the last tile o / l is exactly softmax(s) v and m + log l is the row's
// log-sum-exp. Masked keys get score -inf (weight 0); the host rejects rows with
// no allowed key, so l >= 1 at the end. K and V rows of one group are `kv_rows` apart:
// the capacity of a KV cache, of which the first tk rows are used (tk otherwise).
#include "common.h"

inline int kv_group(int b, int heads, int groups) {
    // b runs over (outer, head); K/V run over (outer, group): head h reads h / (H / G).
    return (b / heads) * groups + (b % heads) / (heads / groups);
}

// --8<-- [start:flash_attention_rows]
__kernel void flash_attention_rows(
    __global const float *q, __global const float *k, __global const float *v,
    __global float *out, __global float *lse, MASK_PARAMS,
    const int tq, const int tk, const int kv_rows, const int d, const int dv,
    const int heads, const int groups, const float scale, const int block,
    __global int *status, const int seq)
{
    const int i = get_global_id(0), b = get_global_id(1);
    if (i >= tq) return;
    __global const float *qi = q + ((long)b * tq + i) * d;
    __global const float *kb = k + (long)kv_group(b, heads, groups) * kv_rows * d;
    __global const float *vb = v + (long)kv_group(b, heads, groups) * kv_rows * dv;
    __global float *o = out + ((long)b * tq + i) * dv;              // the accumulator lives in the output row
    const long mrow = mask_row_base(b, heads, i, m_outer, m_head, m_row);
    for (int c = 0; c < dv; ++c) o[c] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int j0 = 0; j0 < tk; j0 += block) {
        const int j1 = min(j0 + block, tk);
        float tile_max = -INFINITY;                                 // pass 1: the tile's maximum score
        for (int j = j0; j < j1; ++j) {
            if (!key_visible(i, j, tk, causal, q_start, mask, use_mask, mrow, m_col)) continue;
            float s = 0.0f;
            for (int c = 0; c < d; ++c) s += qi[c] * kb[(long)j * d + c];
            tile_max = fmax(tile_max, s * scale);
        }
        const float m_new = fmax(m, tile_max);
        if (m_new == -INFINITY) continue;                           // nothing allowed yet
        const float alpha = exp(m - m_new);                         // exp(-inf) = 0 on the first tile
        l *= alpha;
        for (int c = 0; c < dv; ++c) o[c] *= alpha;
        for (int j = j0; j < j1; ++j) {                             // pass 2: weights, sum and values
            if (!key_visible(i, j, tk, causal, q_start, mask, use_mask, mrow, m_col)) continue;
            float s = 0.0f;
            for (int c = 0; c < d; ++c) s += qi[c] * kb[(long)j * d + c];
            const float p = exp(s * scale - m_new);
            l += p;
            for (int c = 0; c < dv; ++c) o[c] += p * vb[(long)j * dv + c];
        }
        m = m_new;
    }
    const float inv = 1.0f / l;
    int bad = nonfinite_bits(inv);
    for (int c = 0; c < dv; ++c) {
        o[c] *= inv;
        bad |= nonfinite_bits(o[c]);
    }
    lse[(long)b * tq + i] = m + log(l);
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:flash_attention_rows]

#ifndef ROWS
#define ROWS 6          // query rows per work-item
#endif
#ifndef TILE
#define TILE 64         // keys per tile, a multiple of 16
#endif
#ifndef DV_CHUNKS
#define DV_CHUNKS 4     // value width in chunks of 16 columns: DVP = 16 * DV_CHUNKS >= dv
#endif
// Register blocks are ROWS x 16 (two float8 per row): 12 accumulators + 2 loads + 1
// broadcast fit the 16 vector registers of AVX2, the target PoCL's LLVM picks on
// the machines measured here.
#define TV (TILE / 8)
#define DVP (16 * DV_CHUNKS)
#define LN2 0.69314718055994531f
ALWAYS_INLINE float hmax8(float8 v) {
    float4 a = v.lo > v.hi ? v.lo : v.hi;
    float2 b = a.lo > a.hi ? a.lo : a.hi;
    return b.x > b.y ? b.x : b.y;
}

ALWAYS_INLINE float hsum8(float8 v) {
    float4 a = v.lo + v.hi;
    float2 b = a.lo + a.hi;
    return b.x + b.y;
}

// Kt and Vp arrive packed in 16-wide panels so that every register block streams
// through contiguous memory: Kt[g][key chunk][c][16] and Vp[g][column chunk][key][16].
__kernel void flash_pack_kv(
    __global const float *k, __global const float *v, __global float *kt, __global float *vp,
    const int tk, const int kv_rows, const int tkp, const int d, const int dv)
{
    const int j = get_global_id(0), g = get_global_id(1);   // key j (< Tkp) of group g
    if (j >= tkp) return;
    const int inside = j < tk;
    __global float *kj = kt + ((long)g * (tkp / 16) + j / 16) * d * 16 + j % 16;
    for (int c = 0; c < d; ++c)
        kj[c * 16] = inside ? k[((long)g * kv_rows + j) * d + c] : 0.0f;
    for (int c = 0; c < DVP; ++c)
        vp[(((long)g * DV_CHUNKS + c / 16) * tkp + j) * 16 + c % 16] =
            (inside && c < dv) ? v[((long)g * kv_rows + j) * dv + c] : 0.0f;
}

__kernel void flash_attention_tiled(
    __global const float *q, __global const float *kt, __global const float *vp,
    __global float *out, __global float *lse, MASK_PARAMS,
    const int tq, const int tk, const int tkp, const int d, const int dv,
    const int heads, const int groups, const float scale_log2e, __global int *status, const int seq)
{
    const int i0 = get_global_id(0) * ROWS, b = get_global_id(1);
    if (i0 >= tq) return;
    const int g = kv_group(b, heads, groups);
    __global const float *ktg = kt + (long)g * tkp * d;
    __global const float *vpg = vp + (long)g * DV_CHUNKS * tkp * 16;
    __global const float *qr[ROWS];
    int row[ROWS];
    for (int r = 0; r < ROWS; ++r) {
        row[r] = min(i0 + r, tq - 1);                               // rows past Tq repeat the last one
        qr[r] = q + ((long)b * tq + row[r]) * d;
    }
    // Keys past kend are causally hidden from every row of the block; keys below
    // clean_end are visible to all of them (no per-key test needed).
    const int kend = causal ? min(tk, q_start + row[ROWS - 1] + 1) : tk;
    const int clean_end = causal ? min(kend, q_start + i0 + 1) : tk;

    float8 o[ROWS][DVP / 8];                                        // output accumulators
    float8 p[ROWS][TV];                                             // one tile of scores, then weights
    float m[ROWS], l[ROWS], alpha[ROWS];
    for (int r = 0; r < ROWS; ++r) {
        m[r] = -INFINITY; l[r] = 0.0f;
        for (int c = 0; c < DVP / 8; ++c) o[r][c] = (float8)(0.0f);
    }

    for (int j0 = 0; j0 < kend; j0 += TILE) {
        // S = Q Kt, 16 keys at a time: a ROWS x 16 block in 2 * ROWS registers.
        for (int jc = 0; jc < TILE / 16; ++jc) {
            float8 s0[ROWS], s1[ROWS];
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) s0[r] = s1[r] = (float8)(0.0f);
            __global const float *kc = ktg + (long)(j0 / 16 + jc) * d * 16;
            for (int c = 0; c < d; ++c, kc += 16) {
                const float8 k0 = ((__global const float8 *)kc)[0], k1 = ((__global const float8 *)kc)[1];
                #pragma unroll
                for (int r = 0; r < ROWS; ++r) {
                    const float qc = qr[r][c];
                    s0[r] = qc * k0 + s0[r];
                    s1[r] = qc * k1 + s1[r];
                }
            }
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                p[r][2 * jc] = s0[r] * scale_log2e;                 // scores in base-2 units
                p[r][2 * jc + 1] = s1[r] * scale_log2e;
            }
        }
        if (use_mask || j0 + TILE > clean_end) {                    // edge tile: hide blocked keys
            for (int r = 0; r < ROWS; ++r) {
                float *pr = (float *)p[r];
                const long mrow = mask_row_base(b, heads, row[r], m_outer, m_head, m_row);
                for (int jj = 0; jj < TILE; ++jj)
                    if (!key_visible(row[r], j0 + jj, tk, causal, q_start, mask, use_mask, mrow, m_col))
                        pr[jj] = -INFINITY;
            }
        }

        // --8<-- [start:online_softmax]
        #pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            float8 hi = p[r][0];
            for (int t = 1; t < TV; ++t) hi = p[r][t] > hi ? p[r][t] : hi;
            const float tile_max = hmax8(hi);
            const float m_new = m[r] > tile_max ? m[r] : tile_max;
            const float base = m_new == -INFINITY ? 0.0f : m_new;  // a row that has seen no key yet
            alpha[r] = exp2_neg((float8)(m[r] - base)).s0;         // rescales the old l and o
            float8 sum = (float8)(0.0f);
            for (int t = 0; t < TV; ++t) {
                p[r][t] = exp2_neg(p[r][t] - base);
                sum += p[r][t];
            }
            l[r] = l[r] * alpha[r] + hsum8(sum);
            m[r] = m_new;
        }
        // o = alpha * o + P V, 16 value columns at a time (2 * ROWS accumulators).
        for (int cc = 0; cc < DV_CHUNKS; ++cc) {
            float8 a0[ROWS], a1[ROWS];
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                a0[r] = o[r][2 * cc] * alpha[r];
                a1[r] = o[r][2 * cc + 1] * alpha[r];
            }
            __global const float *vc = vpg + ((long)cc * tkp + j0) * 16;
            for (int jj = 0; jj < TILE; ++jj, vc += 16) {
                const float8 v0 = ((__global const float8 *)vc)[0], v1 = ((__global const float8 *)vc)[1];
                #pragma unroll
                for (int r = 0; r < ROWS; ++r) {
                    const float w = ((const float *)p[r])[jj];
                    a0[r] = w * v0 + a0[r];
                    a1[r] = w * v1 + a1[r];
                }
            }
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                o[r][2 * cc] = a0[r];
                o[r][2 * cc + 1] = a1[r];
            }
        }
        // --8<-- [end:online_softmax]
    }

    int bad = 0;
    for (int r = 0; r < ROWS; ++r) {
        if (i0 + r >= tq) break;
        const float inv = 1.0f / l[r];
        __global float *orow = out + ((long)b * tq + i0 + r) * dv;
        const float *acc = (const float *)o[r];
        for (int c = 0; c < dv; ++c) {
            orow[c] = acc[c] * inv;
            bad |= nonfinite_bits(orow[c]);
        }
        lse[(long)b * tq + i0 + r] = (m[r] + log2(l[r])) * LN2;   // back to natural-log units
    }
    report(status, STATUS_NONFINITE, seq, bad);
}

// ---- the gradient: recomputed from q, k and the saved log-sum-exp, never storing Tq x Tk ----
//
//   flash_attention_backward_dq   one work-item per query row: D_i = dO_i . O_i, then key tiles
//                                 recompute P_ij = exp(s_ij - lse_i) from the forward's saved log-sum-exp
//                                 and accumulate dQ_i. Stores D_i for the next kernel (the S115
//                                 recomputation).
//   flash_attention_backward_dkv  one work-item per key row: walks the queries of every head of its K/V
//                                 group (grouped-query attention sums them), recomputes P_ij once more and
//                                 accumulates dK_j and dV_j. Each work-item owns its output rows, so there
//                                 are no atomics and no races.
//   flash_backward_pack           x (n, T, w) -> panels [n][Tp/8][w][8], zero-padded to whole panels: the
//                                 d-major layout the tiled kernels read 8 keys (or queries) at a time from.
//   flash_attention_backward_dq_tiled   the dq kernel with BWD_ROWS query rows per work-item and keys in
//                                 float8 panels: scores and dP as register blocks, an inline exp2 (PoCL
//                                 calls exp() out of line), dQ += dS K as float8 row updates. Needs d and
//                                 dv multiples of 8 (HEAD_D, HEAD_DV built in); several times the row kernel.
//   flash_attention_backward_dkv_tiled  the dkv kernel the same way: KROWS key rows per work-item, queries
//                                 in float8 panels of Q and dO.
//
// Layout: q, o, dO are (n_batch, Tq, d|dv) with n_batch = outer * heads; k, v are (outer * groups, Tk, d|dv).
// The private row buffers of the row kernels hold up to MAX_D floats (the host passes -D MAX_D=... >= d, dv).
#ifndef MAX_D
#define MAX_D 64
#endif
#define KEY_TILE 16


// --8<-- [start:flash_attention_backward_dq]
__kernel void flash_attention_backward_dq(
    __global const float *q, __global const float *k, __global const float *v,
    __global const float *o, __global const float *dout, __global const float *lse,
    __global float *dq, __global float *delta_out, MASK_PARAMS,
    const int tq, const int tk, const int d, const int dv,
    const int heads, const int groups, const int n_batch, const float scale,
    __global int *status, const int seq)
{
    const int i = get_global_id(0), b = get_global_id(1);
    if (i >= tq || b >= n_batch) return;
    const long row = (long)b * tq + i;
    const long kv = kv_group(b, heads, groups);
    __global const float *kb = k + kv * tk * d;
    __global const float *vb = v + kv * tk * dv;
    __global const uchar *m = mask + mask_row_base(b, heads, i, m_outer, m_head, m_row);

    float qi[MAX_D], doi[MAX_D], acc[MAX_D];
    float delta = 0.0f;                                  // D_i = dO_i . O_i = sum_j P_ij dP_ij
    for (int c = 0; c < dv; ++c) {
        doi[c] = dout[row * dv + c];
        delta += doi[c] * o[row * dv + c];
    }
    for (int c = 0; c < d; ++c) { qi[c] = q[row * d + c]; acc[c] = 0.0f; }
    const float li = lse[row];
    const int end = causal ? min(tk, q_start + i + 1) : tk;      // later keys are causally hidden

    for (int j0 = 0; j0 < end; j0 += KEY_TILE) {
        const int n = min(KEY_TILE, end - j0);
        float ds[KEY_TILE];
        for (int t = 0; t < n; ++t) {
            const int j = j0 + t;
            float s = 0.0f, dp = 0.0f;
            for (int c = 0; c < d; ++c) s += qi[c] * kb[(long)j * d + c];
            for (int c = 0; c < dv; ++c) dp += doi[c] * vb[(long)j * dv + c];
            const int ok = !use_mask || m[(long)j * m_col];
            const float pij = ok ? exp(s * scale - li) : 0.0f;   // s*scale <= lse: never overflows
            ds[t] = pij * (dp - delta);
        }
        for (int t = 0; t < n; ++t)
            for (int c = 0; c < d; ++c) acc[c] += ds[t] * kb[(long)(j0 + t) * d + c];
    }
    int bad = 0;
    for (int c = 0; c < d; ++c) {
        dq[row * d + c] = acc[c] * scale;
        bad |= nonfinite_bits(acc[c]);
    }
    delta_out[row] = delta;
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:flash_attention_backward_dq]

// --8<-- [start:flash_attention_backward_dkv]
__kernel void flash_attention_backward_dkv(
    __global const float *q, __global const float *k, __global const float *v,
    __global const float *dout, __global const float *lse, __global const float *delta,
    __global float *dk, __global float *dvv, MASK_PARAMS,
    const int tq, const int tk, const int d, const int dv,
    const int heads, const int groups, const int n_kv, const float scale,
    __global int *status, const int seq)
{
    const int j = get_global_id(0), bg = get_global_id(1);
    if (j >= tk || bg >= n_kv) return;
    const int outer = bg / groups, g = bg % groups, per_group = heads / groups;
    const long krow = (long)bg * tk + j;

    float kj[MAX_D], vj[MAX_D], dka[MAX_D], dva[MAX_D];
    for (int c = 0; c < d; ++c) { kj[c] = k[krow * d + c]; dka[c] = 0.0f; }
    for (int c = 0; c < dv; ++c) { vj[c] = v[krow * dv + c]; dva[c] = 0.0f; }
    const int first = causal ? max(0, j - q_start) : 0;          // earlier queries cannot see key j

    for (int hh = 0; hh < per_group; ++hh) {
        const int b = outer * heads + g * per_group + hh;
        __global const uchar *mb = mask + mask_row_base(b, heads, 0, m_outer, m_head, m_row) + (long)j * m_col;
        for (int i = first; i < tq; ++i) {
            if (use_mask && !mb[(long)i * m_row]) continue;
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
    int bad = 0;
    for (int c = 0; c < d; ++c) {
        dk[krow * d + c] = dka[c] * scale;
        bad |= nonfinite_bits(dka[c]);
    }
    for (int c = 0; c < dv; ++c) {
        dvv[krow * dv + c] = dva[c];
        bad |= nonfinite_bits(dva[c]);
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:flash_attention_backward_dkv]

// ---- tiled versions (built per head width; the host uses them when d and dv are multiples of 8) ----
#ifndef HEAD_D
#define HEAD_D 64
#endif
#ifndef HEAD_DV
#define HEAD_DV 64
#endif
#ifndef BWD_ROWS
#define BWD_ROWS 2      // query rows per work-item of the tiled dq kernel
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
INLINE int8 bwd_allowed(int8 i, int8 j, int tq, int tk, int causal, int q_start, __global const uchar *mask,
                        int use_mask, long base, int m_row, int m_col) {
    int8 ok = (i < (int8)(tq)) & (j < (int8)(tk));
    if (causal) ok &= causal_allowed(i, j, (int8)(q_start));
    if (use_mask) {
        ilanes8 li, lj, m;
        li.v = i;
        lj.v = j;
        for (int t = 0; t < 8; ++t) {
            const int ii = min(li.s[t], tq - 1), jj = min(lj.s[t], tk - 1);
            m.s[t] = mask[base + (long)ii * m_row + (long)jj * m_col] ? -1 : 0;
        }
        ok &= m.v;
    }
    return ok;
}

// --8<-- [start:flash_attention_backward_dq_tiled]
__kernel void flash_attention_backward_dq_tiled(
    __global const float *q, __global const float *k, __global const float *kp, __global const float *vp,
    __global const float *o, __global const float *dout, __global const float *lse,
    __global float *dq, __global float *delta_out, MASK_PARAMS,
    const int tq, const int tk, const int tkp, const int heads, const int groups, const float scale,
    __global int *status, const int seq)
{
    const int i0 = get_global_id(0) * BWD_ROWS, b = get_global_id(1);
    if (i0 >= tq) return;
    const long g = kv_group(b, heads, groups);
    __global const float *qr[BWD_ROWS], *dor[BWD_ROWS];
    float lse2[BWD_ROWS], delta[BWD_ROWS];
    float8 acc[BWD_ROWS][HEAD_D / 8];
    for (int r = 0; r < BWD_ROWS; ++r) {
        const long row = (long)b * tq + min(i0 + r, tq - 1);         // rows past Tq repeat the last one
        qr[r] = q + row * HEAD_D;
        dor[r] = dout + row * HEAD_DV;
        float dl = 0.0f;
        for (int c = 0; c < HEAD_DV; ++c) dl += dor[r][c] * o[row * HEAD_DV + c];
        delta[r] = dl;
        lse2[r] = lse[row] * LOG2E;
        for (int c = 0; c < HEAD_D / 8; ++c) acc[r][c] = (float8)(0.0f);
    }
    const int kend = causal ? min(tk, q_start + min(i0 + BWD_ROWS - 1, tq - 1) + 1) : tk;
    const float sl2 = scale * LOG2E;
    const int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);

    for (int j0 = 0; j0 < kend; j0 += 8) {
        __global const float8 *kc = (__global const float8 *)(kp + (g * (tkp / 8) + j0 / 8) * HEAD_D * 8);
        __global const float8 *vc = (__global const float8 *)(vp + (g * (tkp / 8) + j0 / 8) * HEAD_DV * 8);
        float8 s[BWD_ROWS], dp[BWD_ROWS];
        for (int r = 0; r < BWD_ROWS; ++r) s[r] = dp[r] = (float8)(0.0f);
        for (int c = 0; c < HEAD_D; ++c) {
            const float8 k8 = kc[c];
            for (int r = 0; r < BWD_ROWS; ++r) s[r] = qr[r][c] * k8 + s[r];
        }
        for (int c = 0; c < HEAD_DV; ++c) {
            const float8 v8 = vc[c];
            for (int r = 0; r < BWD_ROWS; ++r) dp[r] = dor[r][c] * v8 + dp[r];
        }
        lanes8 ds[BWD_ROWS];
        for (int r = 0; r < BWD_ROWS; ++r) {
            const int8 ok = bwd_allowed((int8)(i0 + r), lane + j0, tq, tk, causal, q_start, mask, use_mask,
                                        mask_row_base(b, heads, 0, m_outer, m_head, m_row), m_row, m_col);
            const float8 p = ok ? exp2_neg(s[r] * sl2 - lse2[r]) : (float8)(0.0f);
            ds[r].v = p * (dp[r] - delta[r]);
        }
        for (int t = 0; t < 8; ++t) {                                 // dQ += dS K, one key row at a time
            __global const float8 *kr = (__global const float8 *)(k + (g * tk + min(j0 + t, tk - 1)) * HEAD_D);
            for (int c = 0; c < HEAD_D / 8; ++c) {
                const float8 k8 = kr[c];
                for (int r = 0; r < BWD_ROWS; ++r) acc[r][c] = ds[r].s[t] * k8 + acc[r][c];
            }
        }
    }
    int8 bad = (int8)(0);
    for (int r = 0; r < BWD_ROWS && i0 + r < tq; ++r) {
        const long row = (long)b * tq + i0 + r;
        __global float8 *out = (__global float8 *)(dq + row * HEAD_D);
        for (int c = 0; c < HEAD_D / 8; ++c) {
            out[c] = acc[r][c] * scale;
            bad |= (as_int8(acc[r][c]) & 0x7f800000) == 0x7f800000;
        }
        delta_out[row] = delta[r];
    }
    report(status, STATUS_NONFINITE, seq, any(bad));
}
// --8<-- [end:flash_attention_backward_dq_tiled]

// --8<-- [start:flash_attention_backward_dkv_tiled]
__kernel void flash_attention_backward_dkv_tiled(
    __global const float *q, __global const float *dout, __global const float *qp, __global const float *dop,
    __global const float *k, __global const float *v, __global const float *lse, __global const float *delta,
    __global float *dk, __global float *dvv, MASK_PARAMS,
    const int tq, const int tk, const int tqp, const int heads, const int groups, const float scale,
    __global int *status, const int seq)
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
    const int first = causal ? max(0, j0 - q_start) / 8 * 8 : 0;     // earlier queries see none of these keys
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
                const int8 ok = bwd_allowed(lane + i0, (int8)(j0 + r), tq, tk, causal, q_start, mask, use_mask,
                                            mask_row_base(b, heads, 0, m_outer, m_head, m_row), m_row, m_col);
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
    int8 bad = (int8)(0);
    for (int r = 0; r < KROWS && j0 + r < tk; ++r) {
        const long row = (long)bg * tk + j0 + r;
        __global float8 *dko = (__global float8 *)(dk + row * HEAD_D);
        __global float8 *dvo = (__global float8 *)(dvv + row * HEAD_DV);
        for (int c = 0; c < HEAD_D / 8; ++c) {
            dko[c] = dka[r][c] * scale;
            bad |= (as_int8(dka[r][c]) & 0x7f800000) == 0x7f800000;
        }
        for (int c = 0; c < HEAD_DV / 8; ++c) {
            dvo[c] = dva[r][c];
            bad |= (as_int8(dva[r][c]) & 0x7f800000) == 0x7f800000;
        }
    }
    report(status, STATUS_NONFINITE, seq, any(bad));
}
// --8<-- [end:flash_attention_backward_dkv_tiled]
