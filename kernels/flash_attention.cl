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
// Both attention kernels keep, per query row, the running maximum m, the normalizer
// l = sum exp(s - m) and the output accumulator o = sum exp(s - m) v. When a tile
// raises the maximum, the old l and o are multiplied by exp(m_old - m_new) first:
// after the last tile o / l is exactly softmax(s) v and m + log l is the row's
// log-sum-exp. Masked keys get score -inf (weight 0); the host rejects rows with
// no allowed key, so l >= 1 at the end.
#include "common.h"

inline int kv_group(int b, int heads, int groups) {
    // b runs over (outer, head); K/V run over (outer, group): head h reads h / (H / G).
    return (b / heads) * groups + (b % heads) / (heads / groups);
}

inline int key_allowed(int i, int j, int tq, int tk, int causal,
                       __global const uchar *mask, int use_mask, long mrow, int mcol) {
    return j < tk && (!causal || causal_allowed(i, j, tq, tk)) && (!use_mask || mask[mrow + (long)j * mcol]);
}

// --8<-- [start:flash_attention_rows]
__kernel void flash_attention_rows(
    __global const float *q, __global const float *k, __global const float *v,
    __global float *out, __global float *lse,
    __global const uchar *mask, const int use_mask, const int mask_batch, const int mask_row, const int mask_col,
    const int causal, const int tq, const int tk, const int d, const int dv,
    const int heads, const int groups, const float scale, const int block)
{
    const int i = get_global_id(0), b = get_global_id(1);
    if (i >= tq) return;
    __global const float *qi = q + ((long)b * tq + i) * d;
    __global const float *kb = k + (long)kv_group(b, heads, groups) * tk * d;
    __global const float *vb = v + (long)kv_group(b, heads, groups) * tk * dv;
    __global float *o = out + ((long)b * tq + i) * dv;              // the accumulator lives in the output row
    const long mrow = (long)b * mask_batch + (long)i * mask_row;
    for (int c = 0; c < dv; ++c) o[c] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int j0 = 0; j0 < tk; j0 += block) {
        const int j1 = min(j0 + block, tk);
        float tile_max = -INFINITY;                                 // pass 1: the tile's maximum score
        for (int j = j0; j < j1; ++j) {
            if (!key_allowed(i, j, tq, tk, causal, mask, use_mask, mrow, mask_col)) continue;
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
            if (!key_allowed(i, j, tq, tk, causal, mask, use_mask, mrow, mask_col)) continue;
            float s = 0.0f;
            for (int c = 0; c < d; ++c) s += qi[c] * kb[(long)j * d + c];
            const float p = exp(s * scale - m_new);
            l += p;
            for (int c = 0; c < dv; ++c) o[c] += p * vb[(long)j * dv + c];
        }
        m = m_new;
    }
    const float inv = 1.0f / l;
    for (int c = 0; c < dv; ++c) o[c] *= inv;
    lse[(long)b * tq + i] = m + log(l);
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
    const int tk, const int tkp, const int d, const int dv)
{
    const int j = get_global_id(0), g = get_global_id(1);   // key j (< Tkp) of group g
    if (j >= tkp) return;
    const int inside = j < tk;
    __global float *kj = kt + ((long)g * (tkp / 16) + j / 16) * d * 16 + j % 16;
    for (int c = 0; c < d; ++c)
        kj[c * 16] = inside ? k[((long)g * tk + j) * d + c] : 0.0f;
    for (int c = 0; c < DVP; ++c)
        vp[(((long)g * DV_CHUNKS + c / 16) * tkp + j) * 16 + c % 16] =
            (inside && c < dv) ? v[((long)g * tk + j) * dv + c] : 0.0f;
}

__kernel void flash_attention_tiled(
    __global const float *q, __global const float *kt, __global const float *vp,
    __global float *out, __global float *lse,
    __global const uchar *mask, const int use_mask, const int mask_batch, const int mask_row, const int mask_col,
    const int causal, const int tq, const int tk, const int tkp, const int d, const int dv,
    const int heads, const int groups, const float scale_log2e)
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
    const int kend = causal ? min(tk, row[ROWS - 1] + tk - tq + 1) : tk;
    const int clean_end = causal ? min(kend, i0 + tk - tq + 1) : tk;

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
                const long mrow = (long)b * mask_batch + (long)row[r] * mask_row;
                for (int jj = 0; jj < TILE; ++jj)
                    if (!key_allowed(row[r], j0 + jj, tq, tk, causal, mask, use_mask, mrow, mask_col))
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

    for (int r = 0; r < ROWS; ++r) {
        if (i0 + r >= tq) break;
        const float inv = 1.0f / l[r];
        __global float *orow = out + ((long)b * tq + i0 + r) * dv;
        const float *acc = (const float *)o[r];
        for (int c = 0; c < dv; ++c) orow[c] = acc[c] * inv;
        lse[(long)b * tq + i0 + r] = (m[r] + log2(l[r])) * LN2;   // back to natural-log units
    }
}
