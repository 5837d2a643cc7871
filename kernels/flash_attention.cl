// flash_attention.cl: exact attention by tiled online softmax; never stores Tq x Tk.
//
// Kernels:
//   flash_attention_rows  one work-item per query row, any block size at run time, plain
//                         exp(): the online-softmax algorithm as written on the page. Each
//                         tile's scores are computed twice (max pass, then sum pass)
//                         instead of being stored. The fallback for block sizes the tiled
//                         kernel is not built for; ~15x slower than it (T = 512, d = 64).
//   flash_pack            a (n, T, w) tensor -> 16-wide panels, zero-padded to whole tiles:
//                         Xt[n][row/16][c][16] and Xp[n][col/16][row][16] (K as Kt, V as Vp), so
//                         the tiled kernels stream contiguous aligned vectors with no edge cases.
//                         O(T d) extra memory and work.
//   flash_attention_tiled each work-item owns GROUPS x ROWS query rows. A tile of TILE keys:
//                         S = Q Kt in ROWS x NP*VW register blocks (ROWS * NP vector accumulators:
//                         6 x 2 float8 on AVX2, 6 x 4 float16 on AVX-512, picked by the host), softmax
//                         in base 2 with an inline exp2 polynomial (PoCL calls exp() out of
//                         line), then O += P V in ROWS x NP*VW blocks. No barriers: PoCL spills
//                         everything live across one. Every group of ROWS rows uses a tile of
//                         K and V before the next tile is read, so K and V stream from L2 or L3
//                         once per GROUPS x ROWS rows. Built per (VW, ROWS, GROUPS, TILE, DVP, NP).
//
//   flash_attention_backward_dq, flash_attention_backward_dkv,
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
#define ROWS 6          // query (or key) rows per register block
#endif
#ifndef GROUPS
#define GROUPS 1        // blocks of ROWS query rows per forward work-item, each reusing a tile while it is in L1
#endif
#ifndef TILE
#define TILE 64         // keys (or queries) per tile, a multiple of NP * VW
#endif
#ifndef DVP
#define DVP 64          // value width padded to a multiple of NP * VW
#endif
#ifndef DP
#define DP 64           // key width padded to a multiple of NP * VW (the backward's dQ and dK rows)
#endif
// Register blocks are ROWS x NP vectors: 6 x 2 (12 accumulators + 2 loads + 1 broadcast) fit the
// 16 registers of AVX2 (VW = 8). AVX-512's 32 (VW = 16) take 6 x 4 in the forward (24 + 4 + 1: a pass
// is then a 6 x 64 block over all of d, twice the work per loop entry of 8 x 2, ~7 % faster at
// T = 4096) and 8 x 2 in the backward kernels, which hold two tiles of scores.
#ifndef NP
#define NP 2            // vectors per row in one pass of the tile products (TILE, DVP, DP: multiples of NP * VW)
#endif
#define TV (TILE / VW)                  // vectors per row of one tile of scores
#define SPAN (NP * VW / 16)             // 16-wide chunks one pass of NP vectors covers
// Offset of a pass's vector j in a panel of 16-wide chunks `chunk` floats apart (two float8s per chunk).
#define CHUNK_AT(j, chunk) (((j) * VW / 16) * (chunk) + ((j) * VW) % 16)
#define LN2 0.69314718055994531f
#define LOG2E 1.4426950408889634f

// --8<-- [start:flash_pack]
// Two layouts of one (n, T, w) tensor whose rows sit `x_rows` apart, zero-padded to t_pad rows:
//   xt[n][t / 16][c][16]   d-major: 16 rows' values of column c side by side (the "Kt" of S = Q Kt)
//   xp[n][c / 16][t][16]   16 columns of row t side by side (the "V" of O += P V), w_pad columns
// so that every register block of the tile products below streams through contiguous memory.
typedef float16 float16u __attribute__((aligned(4)));     // a 16-float chunk at any float address
typedef union { float16 v; float s[16]; } lanes16;

__kernel void flash_pack(__global const float *x, __global float *xt, __global float *xp,
                         const int t_len, const int x_rows, const int t_pad, const int w, const int w_pad,
                         const int want_t, const int want_p)
{
    // One work-item per block of 16 rows: each 16 x 16 piece is read once (16 row segments of 64 bytes)
    // and written as whole 64-byte lines, 16 rows side by side (xt) and 16 columns side by side (xp).
    const int t0 = get_global_id(0) * 16, n = get_global_id(1);
    if (t0 >= t_pad) return;
    const int rows = clamp(t_len - t0, 0, 16);            // rows past t_len are written as zeros
    const int chunks = want_p ? w_pad / 16 : (w + 15) / 16;
    __global const float *src = x + ((long)n * x_rows + t0) * w;
    for (int cc = 0; cc < chunks; ++cc) {
        const int c0 = cc * 16, cols = clamp(w - c0, 0, 16);   // columns past w are zeros (xp only)
        lanes16 piece[16];
        for (int r = 0; r < 16; ++r) {
            if (r < rows && cols == 16) {
                piece[r].v = *(__global const float16u *)(src + (long)r * w + c0);
            } else {
                for (int c = 0; c < 16; ++c) piece[r].s[c] = (r < rows && c < cols) ? src[(long)r * w + c0 + c] : 0.0f;
            }
        }
        if (want_p) {
            __global float16 *dp = (__global float16 *)(xp + (((long)n * (w_pad / 16) + cc) * t_pad + t0) * 16);
            for (int r = 0; r < 16; ++r) dp[r] = piece[r].v;
        }
        if (want_t) {
            __global float16 *dt = (__global float16 *)(xt + (((long)n * (t_pad / 16) + t0 / 16) * w + c0) * 16);
            for (int c = 0; c < cols; ++c) {
                lanes16 col;
                for (int r = 0; r < 16; ++r) col.s[r] = piece[r].s[c];
                dt[c] = col.v;
            }
        }
    }
}
// --8<-- [end:flash_pack]

// out[r][v] = scale * (rows of X) . (a tile of TILE packed columns), for ROWS rows given as
// pointers (d values each) and yt pointing at the tile's first 16-column chunk of a d-major panel.
// A pass computes NP vectors of each row: ROWS x NP accumulators over all of d.
ALWAYS_INLINE void tile_products(__global const float *const *xr, __global const float *yt, const int d,
                                 const float scale, vecf out[ROWS][TV])
{
    for (int jc = 0; jc < TILE / (NP * VW); ++jc) {
        vecf s[ROWS][NP];
        #pragma unroll
        for (int r = 0; r < ROWS; ++r)
            #pragma unroll
            for (int j = 0; j < NP; ++j) s[r][j] = (vecf)(0.0f);
        __global const float *kc = yt + (long)jc * SPAN * d * 16;
        for (int c = 0; c < d; ++c, kc += 16) {
            vecf kv[NP];
            #pragma unroll
            for (int j = 0; j < NP; ++j) kv[j] = *(__global const vecf *)(kc + CHUNK_AT(j, (long)d * 16));
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                const float x = xr[r][c];
                #pragma unroll
                for (int j = 0; j < NP; ++j) s[r][j] = x * kv[j] + s[r][j];
            }
        }
        #pragma unroll
        for (int r = 0; r < ROWS; ++r)
            #pragma unroll
            for (int j = 0; j < NP; ++j) out[r][NP * jc + j] = s[r][j] * scale;
    }
}

// acc[r][v] += sum over the tile's rows jj of w[r][jj] * Y[jj][columns of vector v], in AW / NP
// passes of NP VW columns; yp points at the tile's first row in chunk 0 of a [chunk][row][16] panel
// whose chunks are cs floats apart. Defined once per accumulator width (DP / VW for dQ and dK rows,
// DVP / VW for output and dV rows) so that every private array is indexed by its declared
// dimensions: walking a 2-D array flat is undefined behaviour a GPU compiler may exploit.
#define DEFINE_TILE_WEIGHTED_SUM(NAME, AW)                                                          \
ALWAYS_INLINE void NAME(vecf acc[ROWS][AW], const vecf w[ROWS][TV], __global const float *yp,         \
                        const long cs)                                                              \
{                                                                                                   \
    for (int cc = 0; cc < (AW) / NP; ++cc) {                                                        \
        vecf a[ROWS][NP];                                                                           \
        _Pragma("unroll") for (int r = 0; r < ROWS; ++r)                                            \
            _Pragma("unroll") for (int j = 0; j < NP; ++j) a[r][j] = acc[r][NP * cc + j];           \
        __global const float *y = yp + cc * SPAN * cs;                                              \
        for (int jj = 0; jj < TILE; ++jj, y += 16) {                                                \
            vecf yv[NP];                                                                            \
            _Pragma("unroll") for (int j = 0; j < NP; ++j)                                          \
                yv[j] = *(__global const vecf *)(y + CHUNK_AT(j, cs));                              \
            _Pragma("unroll") for (int r = 0; r < ROWS; ++r) {                                      \
                const float wr = ((const float *)w[r])[jj];     /* lane jj % VW of vector jj / VW */ \
                _Pragma("unroll") for (int j = 0; j < NP; ++j) a[r][j] = wr * yv[j] + a[r][j];      \
            }                                                                                       \
        }                                                                                           \
        _Pragma("unroll") for (int r = 0; r < ROWS; ++r)                                            \
            _Pragma("unroll") for (int j = 0; j < NP; ++j) acc[r][NP * cc + j] = a[r][j];           \
    }                                                                                               \
}
DEFINE_TILE_WEIGHTED_SUM(tile_weighted_sum_dv, DVP / VW)
DEFINE_TILE_WEIGHTED_SUM(tile_weighted_sum_d, DP / VW)

__kernel void flash_attention_tiled(
    __global const float *q, __global const float *kt, __global const float *vp,
    __global float *out, __global float *lse, MASK_PARAMS,
    const int tq, const int tk, const int tkp, const int d, const int dv,
    const int heads, const int groups, const float scale_log2e, __global int *status, const int seq)
{
    const int i0 = get_global_id(0) * ROWS * GROUPS, b = get_global_id(1);
    if (i0 >= tq) return;
    const int g = kv_group(b, heads, groups);
    __global const float *ktg = kt + (long)g * tkp * d;
    __global const float *vpg = vp + (long)g * (DVP / 16) * tkp * 16;
    // Keys past kend are causally hidden from every row of the work-item.
    const int kend = causal ? min(tk, q_start + min(i0 + ROWS * GROUPS, tq)) : tk;

    vecf o[GROUPS][ROWS][DVP / VW];                                 // output accumulators
    float m[GROUPS][ROWS];
    vecf l[GROUPS][ROWS];                                           // lane sums of the normalizer
    for (int gr = 0; gr < GROUPS; ++gr)
        for (int r = 0; r < ROWS; ++r) {
            m[gr][r] = -INFINITY; l[gr][r] = (vecf)(0.0f);
            for (int c = 0; c < DVP / VW; ++c) o[gr][r][c] = (vecf)(0.0f);
        }

    // Tiles outermost: one tile of K and V (TILE keys, 2 x 16 KiB at d = dv = 64) stays in L1
    // while every block of ROWS query rows uses it, instead of each block streaming all of K
    // and V from L2 or L3 (at T = 4096 one head's K and V no longer fit in L2).
    for (int j0 = 0; j0 < kend; j0 += TILE) {
        for (int gr = 0; gr < GROUPS; ++gr) {
            const int ig = i0 + gr * ROWS;
            if (ig >= tq) break;
            __global const float *qr[ROWS];
            int row[ROWS];
            for (int r = 0; r < ROWS; ++r) {
                row[r] = min(ig + r, tq - 1);                       // rows past Tq repeat the last one
                qr[r] = q + ((long)b * tq + row[r]) * d;
            }
            const int gend = causal ? min(tk, q_start + row[ROWS - 1] + 1) : tk;
            if (j0 >= gend) continue;                               // the whole tile is in this block's future
            const int clean_end = causal ? min(gend, q_start + ig + 1) : tk;   // below: visible to every row
            vecf p[ROWS][TV];                                       // one tile of scores, then weights
            tile_products(qr, ktg + (long)(j0 / 16) * d * 16, d, scale_log2e, p);   // base-2 units
            if (use_mask || j0 + TILE > clean_end) {                // edge tile: hide blocked keys
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
                vecf hi = p[r][0];
                for (int t = 1; t < TV; ++t) hi = p[r][t] > hi ? p[r][t] : hi;
                const float tile_max = hmaxv(hi);
                if (tile_max > m[gr][r]) {          // the row's maximum grows: rescale l and o to it
                    const float alpha = exp2_neg((vecf)(m[gr][r] - tile_max)).s0;   // 0 for the first keys
                    l[gr][r] *= alpha;
                    for (int c = 0; c < DVP / VW; ++c) o[gr][r][c] *= alpha;
                    m[gr][r] = tile_max;
                }                                   // (once the maximum settles, most tiles skip this)
                const float base = m[gr][r] == -INFINITY ? 0.0f : m[gr][r];   // a row that has seen no key yet
                vecf sum = (vecf)(0.0f);
                for (int t = 0; t < TV; ++t) {
                    p[r][t] = exp2_neg(p[r][t] - base);
                    sum += p[r][t];
                }
                l[gr][r] += sum;
            }
            tile_weighted_sum_dv(o[gr], p, vpg + (long)j0 * 16, (long)tkp * 16);   // o += P V
            // --8<-- [end:online_softmax]
        }
    }

    int bad = 0;
    for (int gr = 0; gr < GROUPS; ++gr)
        for (int r = 0; r < ROWS; ++r) {
            const int i = i0 + gr * ROWS + r;
            if (i >= tq) break;
            const float l_row = hsumv(l[gr][r]);
            const float inv = 1.0f / l_row;
            __global float *orow = out + ((long)b * tq + i) * dv;
            const float *acc = (const float *)o[gr][r];
            for (int c = 0; c < dv; ++c) {
                orow[c] = acc[c] * inv;
                bad |= nonfinite_bits(orow[c]);
            }
            lse[(long)b * tq + i] = (m[gr][r] + log2(l_row)) * LN2;     // back to natural-log units
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
//   flash_attention_backward_dq_tiled   the dq kernel with ROWS query rows per work-item, built from
//                                 the forward's tile products and weighted sums over packed K, V.
//   flash_attention_backward_dkv_tiled  the dkv kernel the same way for ROWS key rows, over packed Q, dO.
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

// ---- tiled versions: the forward's tile products and weighted sums (DP and DVP padded widths) ----
// --8<-- [start:flash_attention_backward_dq_tiled]
// dQ for ROWS query rows: per key tile, S = Q Kt and dP = dO Vt as tile products, P = exp2(S - lse),
// dS = P (dP - D), then dQ += dS K as a tile weighted sum over K's row-chunked panel. D = dO . O per
// row is computed here and stored, with lse in base 2, zero-padded to whole tiles for the dkv kernel.
__kernel void flash_attention_backward_dq_tiled(
    __global const float *q, __global const float *o, __global const float *dout, __global const float *lse,
    __global const float *kt, __global const float *vt, __global const float *kp,
    __global float *dq, __global float *dpad, __global float *lpad, MASK_PARAMS,
    const int tq, const int tk, const int tqp, const int tkp, const int d, const int dv,
    const int heads, const int groups, const float scale, __global int *status, const int seq)
{
    const int i0 = get_global_id(0) * ROWS, b = get_global_id(1);
    if (i0 >= tqp) return;
    const long g = kv_group(b, heads, groups);
    __global const float *qr[ROWS], *dor[ROWS];
    float l2[ROWS], delta[ROWS];
    int row[ROWS];
    for (int r = 0; r < ROWS; ++r) {
        row[r] = min(i0 + r, tq - 1);                               // rows past Tq repeat the last one
        const long at = (long)b * tq + row[r];
        qr[r] = q + at * d;
        dor[r] = dout + at * dv;
        float dl = 0.0f;
        for (int c = 0; c < dv; ++c) dl += dor[r][c] * o[at * dv + c];
        delta[r] = dl;
        l2[r] = lse[at] * LOG2E;
        if (i0 + r < tqp) {                                         // the dkv kernel's padded copies
            dpad[(long)b * tqp + i0 + r] = i0 + r < tq ? dl : 0.0f;
            lpad[(long)b * tqp + i0 + r] = i0 + r < tq ? l2[r] : 0.0f;
        }
    }
    if (i0 >= tq) return;
    vecf acc[ROWS][DP / VW];
    for (int r = 0; r < ROWS; ++r)
        for (int c = 0; c < DP / VW; ++c) acc[r][c] = (vecf)(0.0f);
    const int kend = causal ? min(tk, q_start + row[ROWS - 1] + 1) : tk;
    const int clean_end = causal ? min(kend, q_start + i0 + 1) : tk;
    const float sl2 = scale * LOG2E;

    for (int j0 = 0; j0 < kend; j0 += TILE) {
        vecf p[ROWS][TV], dp[ROWS][TV];
        tile_products(qr, kt + (g * (tkp / 16) + j0 / 16) * d * 16, d, sl2, p);
        tile_products(dor, vt + (g * (tkp / 16) + j0 / 16) * dv * 16, dv, 1.0f, dp);
        for (int r = 0; r < ROWS; ++r)
            for (int t = 0; t < TV; ++t) p[r][t] = exp2_neg(p[r][t] - l2[r]);
        if (use_mask || j0 + TILE > clean_end) {                    // edge tile: blocked keys get P = 0
            for (int r = 0; r < ROWS; ++r) {
                float *pr = (float *)p[r];
                const long mrow = mask_row_base(b, heads, row[r], m_outer, m_head, m_row);
                for (int jj = 0; jj < TILE; ++jj)
                    if (!key_visible(row[r], j0 + jj, tk, causal, q_start, mask, use_mask, mrow, m_col)) pr[jj] = 0.0f;
            }
        }
        for (int r = 0; r < ROWS; ++r)
            for (int t = 0; t < TV; ++t) p[r][t] = p[r][t] * (dp[r][t] - delta[r]);   // dS
        tile_weighted_sum_d(acc, p, kp + (g * (DP / 16) * tkp + j0) * 16, (long)tkp * 16);
    }
    int bad = 0;
    for (int r = 0; r < ROWS && i0 + r < tq; ++r) {
        const float *a = (const float *)acc[r];
        __global float *out = dq + ((long)b * tq + i0 + r) * d;
        for (int c = 0; c < d; ++c) {
            out[c] = a[c] * scale;
            bad |= nonfinite_bits(out[c]);
        }
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:flash_attention_backward_dq_tiled]

// --8<-- [start:flash_attention_backward_dkv_tiled]
// dK and dV for ROWS key rows, summed over the heads of their K/V group: per query tile,
// St = K Qt and dPt = V dOt as tile products, Pt = exp2(St - lse), dSt = Pt (dPt - D), then
// dV += Pt dO and dK += dSt Q as tile weighted sums over dO's and Q's row-chunked panels.
__kernel void flash_attention_backward_dkv_tiled(
    __global const float *k, __global const float *v,
    __global const float *qt, __global const float *dot_, __global const float *qp, __global const float *dop,
    __global const float *dpad, __global const float *lpad,
    __global float *dk, __global float *dvv, MASK_PARAMS,
    const int tq, const int tk, const int tqp, const int d, const int dv,
    const int heads, const int groups, const float scale, __global int *status, const int seq)
{
    const int j0 = get_global_id(0) * ROWS, bg = get_global_id(1);
    if (j0 >= tk) return;
    const int outer = bg / groups, per_group = heads / groups, g = bg % groups;
    __global const float *kr[ROWS], *vr[ROWS];
    int key[ROWS];
    for (int r = 0; r < ROWS; ++r) {
        key[r] = min(j0 + r, tk - 1);                               // rows past Tk repeat the last one
        kr[r] = k + ((long)bg * tk + key[r]) * d;
        vr[r] = v + ((long)bg * tk + key[r]) * dv;
    }
    vecf dka[ROWS][DP / VW], dva[ROWS][DVP / VW];
    for (int r = 0; r < ROWS; ++r) {
        for (int c = 0; c < DP / VW; ++c) dka[r][c] = (vecf)(0.0f);
        for (int c = 0; c < DVP / VW; ++c) dva[r][c] = (vecf)(0.0f);
    }
    // Queries before `first` see none of these keys; from `clean` on they see all of them.
    const int first = causal ? max(0, j0 - q_start) / TILE * TILE : 0;
    const int clean = causal ? max(0, key[ROWS - 1] - q_start) : 0;
    const float sl2 = scale * LOG2E;

    for (int hh = 0; hh < per_group; ++hh) {
        const int b = outer * heads + g * per_group + hh;
        for (int i0 = first; i0 < tq; i0 += TILE) {
            vecf p[ROWS][TV], dp[ROWS][TV];
            tile_products(kr, qt + ((long)b * (tqp / 16) + i0 / 16) * d * 16, d, sl2, p);
            tile_products(vr, dot_ + ((long)b * (tqp / 16) + i0 / 16) * dv * 16, dv, 1.0f, dp);
            __global const vecf *lv = (__global const vecf *)(lpad + (long)b * tqp + i0);
            __global const vecf *dv_ = (__global const vecf *)(dpad + (long)b * tqp + i0);
            for (int r = 0; r < ROWS; ++r)
                for (int t = 0; t < TV; ++t) p[r][t] = exp2_neg(p[r][t] - lv[t]);
            if (use_mask || i0 < clean || i0 + TILE > tq) {         // edge tile: hidden pairs get P = 0
                for (int r = 0; r < ROWS; ++r) {
                    float *pr = (float *)p[r];
                    for (int t = 0; t < TILE; ++t) {
                        const int i = i0 + t;
                        const long mrow = mask_row_base(b, heads, min(i, tq - 1), m_outer, m_head, m_row);
                        if (i >= tq || !key_visible(i, key[r], tk, causal, q_start, mask, use_mask, mrow, m_col))
                            pr[t] = 0.0f;
                    }
                }
            }
            vecf ds[ROWS][TV];
            for (int r = 0; r < ROWS; ++r)
                for (int t = 0; t < TV; ++t) ds[r][t] = p[r][t] * (dp[r][t] - dv_[t]);
            tile_weighted_sum_dv(dva, p, dop + ((long)b * (DVP / 16) * tqp + i0) * 16, (long)tqp * 16);  // dV += Pt dO
            tile_weighted_sum_d(dka, ds, qp + ((long)b * (DP / 16) * tqp + i0) * 16, (long)tqp * 16);    // dK += dSt Q
        }
    }
    int bad = 0;
    for (int r = 0; r < ROWS && j0 + r < tk; ++r) {
        const long row = (long)bg * tk + j0 + r;
        const float *a = (const float *)dka[r], *b2 = (const float *)dva[r];
        for (int c = 0; c < d; ++c) {
            dk[row * d + c] = a[c] * scale;
            bad |= nonfinite_bits(a[c]);
        }
        for (int c = 0; c < dv; ++c) {
            dvv[row * dv + c] = b2[c];
            bad |= nonfinite_bits(b2[c]);
        }
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:flash_attention_backward_dkv_tiled]
