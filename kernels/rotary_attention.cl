// rotary_attention.cl: a decoder layer's attention on short sequences, read from and written to the
// projections' own layout, with RoPE applied as the rows are read.
//
// Kernels:
//   rotary_attention_forward   one work-item per (batch entry, query head): rotates the head's K
//                              group into a d-major private copy, then for blocks of ROWS query
//                              rows (rotated and scaled as they are read) computes scores against
//                              chunks of KC keys in ROWS x NV vector accumulators, an online
//                              softmax in base 2 (exp2_neg, inline), and O += P V with V's rows read
//                              in place. Writes O into the (B, T, H dv) layout the output
//                              projection reads and each row's log-sum-exp (B, H, T).
//   rotary_attention_backward  one work-item per (batch entry, K/V group): recomputes the weights
//                              P = exp(s - lse) of every query row of the group's heads, and
//                              accumulates dQ (per row block), dK and dV (the whole group, in
//                              private memory: no atomics, no races); dQ and dK are rotated back
//                              (the transpose of a rotation is the rotation by -theta) as they
//                              are written into the projections' layout, side by side in one
//                              gradient [dq | dk | dv] (B, T, H D + G D + G DV), so that x's
//                              gradient through the three projections is one product.
//
// What it replaces on the training path: RoPE and the split into heads of q and k (rope_heads),
// the split of v and the merge of the output (swap_axes), flash attention's packing of K and V, and
// the same again backward: at the lengths a small model trains on (T = 64), those passes and
// launches took longer than the attention itself. The host runs it for T <= 256 (private copies of
// K and V per work-item: D x TP floats each); longer sequences take the flash kernels.
//
// Layouts: row t of batch entry b of q is q + q_off + (b T + t) q_row, head h's columns from h D; k
// and v likewise with group g's columns (g = h / (H / G)). Separate q, k and v have offset 0 and
// rows of their own widths; the three column blocks of one joined projection [q | k | v] (x times
// [Wq | Wk | Wv], one product) are the same buffer at offsets 0, H D and H D + G D, rows of its width. D, DV (head widths), TP (T rounded up to a
// multiple of KC), ROT (0: no rotation, 1: interleaved pairs (2i, 2i + 1), 2: halves (i, i + D/2))
// are build options. cos and sin come from rope.cl's tables (position t at row t, D/2 columns).
// Causal: query i sees key j <= i (queries and keys are the same positions).
#include "common.h"

#ifndef D
#define D 32
#endif
#ifndef DV
#define DV 32
#endif
#ifndef TP
#define TP 64
#endif
#ifndef ROT
#define ROT 2
#endif
#if VW == 16
#define NV 4            // score vectors per row: KC = 64 keys a chunk, 6 x 4 accumulators
#else
#define NV 2            // 6 x 2 float8: 12 of AVX2's 16 registers
#endif
#define KC (NV * VW)
#define ROWS 6
#define DVV ((DV + VW - 1) / VW)          // vectors of a value row (the tail lanes are padding)
#define DKV ((D + VW - 1) / VW)           // vectors of a key row
#define DPAD (DKV * VW)
#define DVPAD (DVV * VW)
#if TP % KC
#error "TP must be a multiple of KC"
#endif
#if ROT && D % 2
#error "rotation needs an even head width"
#endif
#define LN2 0.69314718055994531f
#define LOG2E 1.4426950408889634f

// (a, b) rotated by the angle of (c, s): pair (a, b) -> (a c - b s, a s + b c); s < 0 turns back.
#define ROTATE(a, b, c, s) { const float ra = (a) * (c) - (b) * (s); (b) = (a) * (s) + (b) * (c); (a) = ra; }

// One row of D features from `src` into `dst` (DPAD floats, zero past D), rotated by position t
// with sign +1 (forward) or -1 (back).
ALWAYS_INLINE void load_row(float dst[DPAD], __global const float *src, __global const float *cos_t,
                            __global const float *sin_t, const int t, const float sign, const float mul)
{
    for (int c = 0; c < D; ++c) dst[c] = src[c] * mul;
    for (int c = D; c < DPAD; ++c) dst[c] = 0.0f;
#if ROT
    __global const float *cr = cos_t + (long)t * (D / 2), *sr = sin_t + (long)t * (D / 2);
    for (int i = 0; i < D / 2; ++i) {
        const int ia = ROT == 1 ? 2 * i : i, ib = ROT == 1 ? 2 * i + 1 : i + D / 2;
        const float c = cr[i], s = sign * sr[i];
        ROTATE(dst[ia], dst[ib], c, s)
    }
#endif
}

// src (DPAD floats) rotated back by position t and stored: D floats at dst. Returns inf/NaN bits.
ALWAYS_INLINE int store_row(__global float *dst, float src[DPAD], __global const float *cos_t,
                           __global const float *sin_t, const int t)
{
#if ROT
    __global const float *cr = cos_t + (long)t * (D / 2), *sr = sin_t + (long)t * (D / 2);
    for (int i = 0; i < D / 2; ++i) {
        const int ia = ROT == 1 ? 2 * i : i, ib = ROT == 1 ? 2 * i + 1 : i + D / 2;
        const float c = cr[i], s = -sr[i];
        ROTATE(src[ia], src[ib], c, s)
    }
#endif
    int bad = 0;
    for (int c = 0; c < D; ++c) {
        dst[c] = src[c];
        bad |= nonfinite_bits(src[c]);
    }
    return bad;
}

// s[r][v] = sum over c < W of x[r][c] yt[c][j0 + v VW ..] for the chunk's first N vectors of keys
// (the rows' last visible key lies in them; causal rows see fewer keys than a whole chunk), and FILL
// for the rest: ROWS rows against N vectors of keys, every loop unrolled, one copy per N.
#define DEFINE_PRODUCTS(NAME, N, XW, W, FILL)                                                             \
ALWAYS_INLINE void NAME##_##N(vecf s[ROWS][NV], float x[ROWS][XW], float yt[W][TP], const int j0)     \
{                                                                                                   \
    _Pragma("unroll") for (int r = 0; r < ROWS; ++r)                                                \
        _Pragma("unroll") for (int v = 0; v < NV; ++v) s[r][v] = (vecf)(v < N ? 0.0f : FILL);        \
    for (int c = 0; c < W; ++c) {                                                                   \
        vecf kv[N];                                                                                 \
        _Pragma("unroll") for (int v = 0; v < N; ++v) kv[v] = *(vecfu *)&yt[c][j0 + v * VW];       \
        _Pragma("unroll") for (int r = 0; r < ROWS; ++r) {                                          \
            const float a = x[r][c];                                                                \
            _Pragma("unroll") for (int v = 0; v < N; ++v) s[r][v] = a * kv[v] + s[r][v];           \
        }                                                                                           \
    }                                                                                               \
}
#define DEFINE_ALL_PRODUCTS(NAME, XW, W, FILL) \
    DEFINE_PRODUCTS(NAME, 1, XW, W, FILL) DEFINE_PRODUCTS(NAME, 2, XW, W, FILL) \
    DEFINE_PRODUCTS(NAME, 3, XW, W, FILL) DEFINE_PRODUCTS(NAME, 4, XW, W, FILL)
DEFINE_ALL_PRODUCTS(scores, DPAD, D, -INFINITY)       // q kt: the scores (hidden keys past them)
DEFINE_ALL_PRODUCTS(value_products, DVPAD, DV, 0.0f)  // dO vt: the weights' gradient (backward)

// NAME over the first n vectors of the chunk (1 <= n <= NV): the copy built for n.
#if NV == 4
#define PRODUCTS(NAME, n, s, x, yt, j0) \
    switch (n) { case 1: NAME##_1(s, x, yt, j0); break; case 2: NAME##_2(s, x, yt, j0); break; \
                 case 3: NAME##_3(s, x, yt, j0); break; default: NAME##_4(s, x, yt, j0); }
#else
#define PRODUCTS(NAME, n, s, x, yt, j0) \
    switch (n) { case 1: NAME##_1(s, x, yt, j0); break; default: NAME##_2(s, x, yt, j0); }
#endif

// Scores of keys a row may not see (past its own position when causal, past T always) become -inf.
ALWAYS_INLINE void hide_keys(vecf s[ROWS][NV], const int r0, const int j0, const int t_len, const int causal)
{
    #pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const int last = causal ? min(r0 + r, t_len - 1) : t_len - 1;   // rows past T repeat the last
        #pragma unroll
        for (int v = 0; v < NV; ++v) {
            const veci j = (veci)(j0 + v * VW) + LANE_IDS;
            s[r][v] = j > (veci)(last) ? (vecf)(-INFINITY) : s[r][v];
        }
    }
}

__kernel void rotary_attention_forward(
    __global const float *q, __global const float *k, __global const float *v, __global float *out,
    __global float *lse, __global const float *cos_t, __global const float *sin_t,
    const int t_len, const int heads, const int groups, const int q_row, const int k_row, const int v_row,
    const int q_off, const int k_off, const int v_off, const int causal, const float scale,
    __global int *status, const int seq)
{
    const int h = get_global_id(0), b = get_global_id(1);
    if (h >= heads) return;
    q += q_off;                                    // q, k and v may be column blocks of one [q | k | v]
    k += k_off;
    v += v_off;
    const int g = h / (heads / groups);
    float kt[D][TP] __attribute__((aligned(64)));  // this head's K, rotated, d-major, zero past T
    for (int j = 0; j < t_len; ++j) {
        float row[DPAD];
        load_row(row, k + ((long)b * t_len + j) * k_row + g * D, cos_t, sin_t, j, 1.0f, 1.0f);
        for (int c = 0; c < D; ++c) kt[c][j] = row[c];
    }
    for (int c = 0; c < D; ++c)
        for (int j = t_len; j < TP; ++j) kt[c][j] = 0.0f;
    __global const float *vg = v + (long)b * t_len * v_row + g * DV;
    int bad = 0;
    for (int r0 = 0; r0 < t_len; r0 += ROWS) {
        float qs[ROWS][DPAD];                      // rows rotated and scaled to base-2 units
        for (int r = 0; r < ROWS; ++r) {
            const int i = min(r0 + r, t_len - 1);
            load_row(qs[r], q + ((long)b * t_len + i) * q_row + h * D, cos_t, sin_t, i, 1.0f, scale * LOG2E);
        }
        const int kend = causal ? min(t_len, r0 + ROWS) : t_len;
        float m[ROWS];
        vecf l[ROWS], o[ROWS][DVV];
        for (int r = 0; r < ROWS; ++r) {
            m[r] = -INFINITY;
            l[r] = (vecf)(0.0f);
            for (int c = 0; c < DVV; ++c) o[r][c] = (vecf)(0.0f);
        }
        for (int j0 = 0; j0 < kend; j0 += KC) {
            vecf s[ROWS][NV];
            const int nv = min(NV, (kend - j0 + VW - 1) / VW);  // vectors holding a visible key
            PRODUCTS(scores, nv, s, qs, kt, j0)
            if (j0 + KC > (causal ? r0 : t_len)) hide_keys(s, r0, j0, t_len, causal);
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                vecf hi = s[r][0];
                for (int w = 1; w < NV; ++w) hi = s[r][w] > hi ? s[r][w] : hi;
                const float chunk_max = hmaxv(hi);
                if (chunk_max > m[r]) {            // the row's maximum grows: rescale l and o to it
                    const float alpha = exp2_neg((vecf)(m[r] - chunk_max)).s0;   // 0 for the first keys
                    l[r] *= alpha;
                    for (int c = 0; c < DVV; ++c) o[r][c] *= alpha;
                    m[r] = chunk_max;
                }
                const float base = m[r] == -INFINITY ? 0.0f : m[r];
                vecf sum = (vecf)(0.0f);
                for (int w = 0; w < NV; ++w) {
                    s[r][w] = exp2_neg(s[r][w] - base);
                    sum += s[r][w];
                }
                l[r] += sum;
            }
            const int jn = min(KC, kend - j0);
            for (int jj = 0; jj < jn; ++jj) {     // o += P V, a row of V at a time
                __global const float *vj = vg + (long)(j0 + jj) * v_row;
                vecf vv[DVV];
                for (int c = 0; c < DVV; ++c) {
                    if ((c + 1) * VW <= DV) {
                        vv[c] = *(__global const vecfu *)(vj + c * VW);
                    } else {
                        lanesf t;
                        for (int e = 0; e < VW; ++e) t.s[e] = c * VW + e < DV ? vj[c * VW + e] : 0.0f;
                        vv[c] = t.v;
                    }
                }
                #pragma unroll
                for (int r = 0; r < ROWS; ++r) {
                    const float p = ((const float *)s[r])[jj];
                    for (int c = 0; c < DVV; ++c) o[r][c] = p * vv[c] + o[r][c];
                }
            }
        }
        for (int r = 0; r < ROWS && r0 + r < t_len; ++r) {
            const int i = r0 + r;
            const float l_row = hsumv(l[r]), inv = 1.0f / l_row;
            __global float *orow = out + ((long)b * t_len + i) * heads * DV + h * DV;
            const float *acc = (const float *)o[r];
            for (int c = 0; c < DV; ++c) {
                orow[c] = acc[c] * inv;
                bad |= nonfinite_bits(orow[c]);
            }
            lse[((long)b * heads + h) * t_len + i] = (m[r] + log2(l_row)) * LN2;
        }
    }
    report(status, STATUS_NONFINITE, seq, bad);
}

__kernel void rotary_attention_backward(
    __global const float *q, __global const float *k, __global const float *v, __global const float *out,
    __global const float *gout, __global const float *lse, __global float *dqkv,
    __global const float *cos_t, __global const float *sin_t,
    const int t_len, const int heads, const int groups, const int q_row, const int k_row, const int v_row,
    const int q_off, const int k_off, const int v_off, const int causal, const float scale,
    __global int *status, const int seq)
{
    const int g = get_global_id(0), b = get_global_id(1);
    if (g >= groups) return;
    q += q_off;
    k += k_off;
    v += v_off;
    const int per = heads / groups, d_row = heads * D + groups * (D + DV);
    __global float *dq = dqkv, *dk = dqkv + heads * D, *dv = dk + groups * D;   // [dq | dk | dv] rows
    float kt[D][TP], kr[TP][DPAD], vt[DV][TP];    // K rotated (d-major and row-major), V d-major
    float dks[TP][DPAD], dvs[TP][DVPAD];          // the group's dK (rotated frame) and dV, summed over heads
    for (int j = 0; j < TP; ++j) {
        if (j < t_len) {
            load_row(kr[j], k + ((long)b * t_len + j) * k_row + g * D, cos_t, sin_t, j, 1.0f, 1.0f);
            __global const float *vj = v + ((long)b * t_len + j) * v_row + g * DV;
            for (int c = 0; c < DV; ++c) vt[c][j] = vj[c];
        } else {
            for (int c = 0; c < DPAD; ++c) kr[j][c] = 0.0f;
            for (int c = 0; c < DV; ++c) vt[c][j] = 0.0f;
        }
        for (int c = 0; c < D; ++c) kt[c][j] = kr[j][c];
        for (int c = 0; c < DPAD; ++c) dks[j][c] = 0.0f;
        for (int c = 0; c < DVPAD; ++c) dvs[j][c] = 0.0f;
    }
    int bad = 0;
    for (int h = g * per; h < (g + 1) * per; ++h) {
        for (int r0 = 0; r0 < t_len; r0 += ROWS) {
            float qs[ROWS][DPAD], dos[ROWS][DVPAD];    // rotated q rows (base-2 scaled), dO rows
            float delta[ROWS], base[ROWS];              // dO . O and lse in base-2 units, per row
            for (int r = 0; r < ROWS; ++r) {
                const int i = min(r0 + r, t_len - 1);
                const long row = (long)b * t_len + i;
                load_row(qs[r], q + row * q_row + h * D, cos_t, sin_t, i, 1.0f, scale * LOG2E);
                __global const float *gr = gout + row * heads * DV + h * DV, *orow = out + row * heads * DV + h * DV;
                float dd = 0.0f;
                for (int c = 0; c < DV; ++c) {
                    dos[r][c] = gr[c];
                    dd += gr[c] * orow[c];
                }
                for (int c = DV; c < DVPAD; ++c) dos[r][c] = 0.0f;
                delta[r] = dd;
                base[r] = lse[((long)b * heads + h) * t_len + i] * LOG2E;
            }
            vecf dqa[ROWS][DKV];
            for (int r = 0; r < ROWS; ++r)
                for (int c = 0; c < DKV; ++c) dqa[r][c] = (vecf)(0.0f);
            const int kend = causal ? min(t_len, r0 + ROWS) : t_len;
            for (int j0 = 0; j0 < kend; j0 += KC) {
                vecf p[ROWS][NV], ds[ROWS][NV];
                const int nv = min(NV, (kend - j0 + VW - 1) / VW);   // vectors holding a visible key
                PRODUCTS(scores, nv, p, qs, kt, j0)     // s in base-2 units
                if (j0 + KC > (causal ? r0 : t_len)) hide_keys(p, r0, j0, t_len, causal);
                #pragma unroll
                for (int r = 0; r < ROWS; ++r)
                    #pragma unroll
                    for (int w = 0; w < NV; ++w) p[r][w] = exp2_neg(p[r][w] - base[r]);   // the weights
                PRODUCTS(value_products, nv, ds, dos, vt, j0)   // dP = dO V^T over the chunk
                #pragma unroll
                for (int r = 0; r < ROWS; ++r)          // dS = P (dP - delta); rows past T add nothing
                    #pragma unroll
                    for (int w = 0; w < NV; ++w)
                        ds[r][w] = r0 + r < t_len ? p[r][w] * (ds[r][w] - delta[r]) : (vecf)(0.0f);
                const int jn = min(KC, kend - j0);
                for (int jj = 0; jj < jn; ++jj) {       // dQ += dS K and dK += dS^T Q, a key at a time
                    const int j = j0 + jj;
                    vecf kv[DKV], dk_acc[DKV];
                    #pragma unroll
                    for (int c = 0; c < DKV; ++c) {
                        kv[c] = *(vecfu *)&kr[j][c * VW];
                        dk_acc[c] = *(vecfu *)&dks[j][c * VW];
                    }
                    #pragma unroll
                    for (int r = 0; r < ROWS; ++r) {
                        const float dsr = ((const float *)ds[r])[jj];
                        #pragma unroll
                        for (int c = 0; c < DKV; ++c) {
                            dqa[r][c] = dsr * kv[c] + dqa[r][c];
                            dk_acc[c] = dsr * *(vecfu *)&qs[r][c * VW] + dk_acc[c];
                        }
                    }
                    #pragma unroll
                    for (int c = 0; c < DKV; ++c) *(vecfu *)&dks[j][c * VW] = dk_acc[c];
                }
                for (int jj = 0; jj < jn; ++jj) {       // dV += P^T dO
                    const int j = j0 + jj;
                    vecf dv_acc[DVV];
                    #pragma unroll
                    for (int c = 0; c < DVV; ++c) dv_acc[c] = *(vecfu *)&dvs[j][c * VW];
                    #pragma unroll
                    for (int r = 0; r < ROWS; ++r) {
                        const float pr = r0 + r < t_len ? ((const float *)p[r])[jj] : 0.0f;
                        #pragma unroll
                        for (int c = 0; c < DVV; ++c) dv_acc[c] = pr * *(vecfu *)&dos[r][c * VW] + dv_acc[c];
                    }
                    #pragma unroll
                    for (int c = 0; c < DVV; ++c) *(vecfu *)&dvs[j][c * VW] = dv_acc[c];
                }
            }
            for (int r = 0; r < ROWS && r0 + r < t_len; ++r) {   // dq = scale dQ (dS is in natural units)
                const int i = r0 + r;
                float row[DPAD];
                for (int c = 0; c < DKV; ++c) *(vecfu *)&row[c * VW] = dqa[r][c] * scale;
                bad |= store_row(dq + ((long)b * t_len + i) * d_row + h * D, row, cos_t, sin_t, i);
            }
        }
    }
    // dK: the products with base-2 scaled q rows, back to natural units (ln 2), rotated back.
    for (int j = 0; j < t_len; ++j) {
        float row[DPAD];
        for (int c = 0; c < DPAD; ++c) row[c] = dks[j][c] * LN2;
        bad |= store_row(dk + ((long)b * t_len + j) * d_row + g * D, row, cos_t, sin_t, j);
        __global float *dvj = dv + ((long)b * t_len + j) * d_row + g * DV;
        for (int c = 0; c < DV; ++c) {
            dvj[c] = dvs[j][c];
            bad |= nonfinite_bits(dvs[j][c]);
        }
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
