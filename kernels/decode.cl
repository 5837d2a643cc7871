// decode.cl: cached decoding steps of a Llama-style decoder for many streams at once.
//
// A decoding step runs every layer on ONE new position of each of B streams (sequences).
// Per stream that is a matrix-vector product per weight matrix: about one multiply-add per
// weight loaded. Here a work-group takes a tile of streams (rows) and runs them together
// through the embedding, up to SLOTS layers and the LM head, so each weight is loaded once per
// register tile of rows instead of once per stream, and a step of a model of up to SLOTS
// layers is one launch. Streams never exchange values, so groups need no global barrier: a
// group's stages (norm, projections, attention, feed-forward) are separated by work-group
// barriers only, and the vectors between them live in `work`, global memory the host keeps
// per device (on a CPU it stays in cache).
//
// Every value a row gets is computed by one work-item in a fixed order: each column of a
// product sums k = 0..K-1 with one multiply-add per term, each norm, score, softmax and head
// logit sums its vector lanes in the same tree. Nothing depends on the tile, the group's rows,
// the local size or the number of groups, so a stream's bits are the same whatever the batch
// and whatever the device's compute-unit count.
//
// Layouts are the training path's: projections (in, out), so a layer is x @ W; the KV cache is
// (batch, groups, max_len, head_dim) per layer; RoPE is the rotate-half pairing
// (x[i], x[i + d/2]) with the float64-built cos/sin tables of rope.cl.
//
// Kernel:
//   decode_step   for the rows of this group, each a stream b at a position p (span positions
//                 pos.. of each stream: 1 for a decoding step, more to fill the cache with a
//                 prompt): with embed = 1, x <- table[id of the row] (from ids_lo and ids_hi with
//                 inline_ids, else from ids; an id out of range is reported as a bad input and
//                 row 0 is used); then for each of `layers` layers x <- x + Attn(RMSNorm1(x));
//                 x <- x + SwiGLU(RMSNorm2(x)) at position p (every row's K and V appended to its
//                 layer's cache first, then each attends over positions 0..p); then with head = 1
//                 (tied: head is the table (vocab, dim)) or 2 (untied: head is (dim, vocab)),
//                 logits[row] = RMSNorm(x_row) * norm_f @ head, or with head = 3 logits[row] =
//                 RMSNorm(x_row) * norm_f itself (the hidden states a prompt leaves).
#include "common.h"

#ifndef MR
#define MR 4            // rows of a projection's register tile (host: 8 with 16 lanes)
#endif
#ifndef HR
#define HR 2            // rows of a tied head's register tile (host: 4 with 16 lanes)
#endif
#define NV 2            // vectors of VW columns in a projection tile of MR rows
#define NV1 4           // ... of one row: four independent sums in flight
#define HV 4            // vocabulary entries of a tied head's tile (HR x HV vector sums)
#define HV1 VW          // ... of one row (HR x HV = HV1 = VW: the sums reduce into one vector)
#define SLOTS 4         // layers one launch runs

// CPU builds (-DPREFETCH=1) ask for the weights PREFETCH_ROWS rows ahead of a tile's k loop: a
// tile reads a few cache lines of each row, rows apart, which the hardware prefetchers follow
// poorly, and a decoding step streams every weight from beyond L2 (benchmarks/results/tried.md).
#ifndef PREFETCH
#define PREFETCH 0
#endif
#define PREFETCH_ROWS 8
#if PREFETCH
#define PREFETCH_ROW(p, C) _Pragma("unroll") for (int c = 0; c < C; ++c) __builtin_prefetch((p) + c * VW, 0, 3)
#else
#define PREFETCH_ROW(p, C)
#endif

// A vector of VW floats at any float address; lanes at or past n read as 0.
ALWAYS_INLINE vecf loadv(__global const float *p, int i0, int n) {
    if (i0 + VW <= n) return *(__global const vecfu *)(p + i0);
    lanesf l;
    for (int k = 0; k < VW; ++k) l.s[k] = i0 + k < n ? p[i0 + k] : 0.0f;
    return l.v;
}

// Stores the lanes below n; returns whether a stored value is inf or NaN.
ALWAYS_INLINE int storev(__global float *p, int i0, int n, vecf v) {
    if (i0 + VW <= n) {
        *(__global vecfu *)(p + i0) = v;
        return nonfinitev(v);
    }
    lanesf l;
    l.v = v;
    int bad = 0;
    for (int k = 0; k < VW && i0 + k < n; ++k) {
        p[i0 + k] = l.s[k];
        bad |= nonfinite_bits(l.s[k]);
    }
    return bad;
}

ALWAYS_INLINE vecf expv(vecf x) {
#if VW == 16
    return (vecf)(exp8(x.lo), exp8(x.hi));
#else
    return exp8(x);
#endif
}

// ---------------------------------------------------------------------------------------------
// Projections: Y = X W (+ Y), X (rows, K) with row stride ldx, W (K, N) row-major.

// The k loop of a tile, with `LOAD(M, c, k)` giving matrix M's vector c of row k.
#define TILE_K_LOOP(R, C, GATED, LOAD)                                                         \
    for (int k = 0; k < K; ++k) {                                                              \
        vecf w[C], w3[C];                                                                      \
        _Pragma("unroll") for (int c = 0; c < C; ++c) w[c] = LOAD(W, c, k);                    \
        PREFETCH_ROW(W + (long)(k + PREFETCH_ROWS) * N + j0, C);                               \
        if (GATED) {                                                                           \
            _Pragma("unroll") for (int c = 0; c < C; ++c) w3[c] = LOAD(W3, c, k);              \
            PREFETCH_ROW(W3 + (long)(k + PREFETCH_ROWS) * N + j0, C);                          \
        }                                                                                      \
        _Pragma("unroll") for (int r = 0; r < R; ++r) {                                        \
            const float xr = X[(long)r * ldx + k];                                             \
            _Pragma("unroll") for (int c = 0; c < C; ++c) acc[r][c] += xr * w[c];              \
            if (GATED) {                                                                       \
                _Pragma("unroll") for (int c = 0; c < C; ++c) acc3[r][c] += xr * w3[c];        \
            }                                                                                  \
        }                                                                                      \
    }
#define LOAD_FULL(M, c, k) (*(__global const vecfu *)((M) + (long)(k) * N + j0 + (c) * VW))

// The sums of a tile whose columns run past N, one column at a time: the same multiply-add per
// term as a vector lane, so a column's value does not depend on which path formed it.
#define TILE_K_EDGE(R, C, GATED)                                                               \
    _Pragma("unroll") for (int r = 0; r < R; ++r) {                                            \
        _Pragma("unroll") for (int c = 0; c < C; ++c) {                                        \
            lanesf a, a3;                                                                      \
            a.v = a3.v = (vecf)(0.0f);                                                         \
            for (int i = 0; i < VW && j0 + c * VW + i < N; ++i) {                              \
                const long j = j0 + c * VW + i;                                                \
                float s1 = 0.0f, s3 = 0.0f;                                                    \
                for (int k = 0; k < K; ++k) {                                                  \
                    const float xr = X[(long)r * ldx + k];                                     \
                    s1 += xr * W[(long)k * N + j];                                             \
                    if (GATED) s3 += xr * W3[(long)k * N + j];                                 \
                }                                                                              \
                a.s[i] = s1;                                                                   \
                a3.s[i] = s3;                                                                  \
            }                                                                                  \
            acc[r][c] = a.v;                                                                   \
            acc3[r][c] = a3.v;                                                                 \
        }                                                                                      \
    }

// One register tile, NAME(X, ldx, W, W3, K, N, j0, Y, ldy, add): R rows of X (from X's first
// row) times the C vectors of columns from j0 of W (K, N). With GATED, W3 is a second matrix of
// W's shape and the tile stores silu(X W) * (X W3) (SwiGLU); with add, it stores X W + Y (a
// residual). Columns at or past N read 0 and are not stored. R, C and GATED are literals, so
// the loops unroll and the sums stay in registers. Returns whether a stored value is inf or NaN.
#define DEFINE_PROJ_TILE(NAME, R, C, GATED)                                                               \
__attribute__((noinline)) int NAME(__global const float *X, int ldx, __global const float *W, __global const float *W3, \
                       int K, int N, int j0, __global float *Y, int ldy, int add) {                       \
    vecf acc[R][C], acc3[R][C];                                                                        \
    _Pragma("unroll") for (int r = 0; r < R; ++r) {                                                    \
        _Pragma("unroll") for (int c = 0; c < C; ++c) acc[r][c] = acc3[r][c] = (vecf)(0.0f);           \
    }                                                                                                  \
    if (j0 + C * VW <= N) {                                                                            \
        TILE_K_LOOP(R, C, GATED, LOAD_FULL)                                                            \
    } else {                                                                                           \
        TILE_K_EDGE(R, C, GATED)                                                                       \
    }                                                                                                  \
    int bad = 0;                                                                                       \
    _Pragma("unroll") for (int r = 0; r < R; ++r) {                                                    \
        __global float *y = Y + (long)r * ldy;                                                         \
        _Pragma("unroll") for (int c = 0; c < C; ++c) {                                                \
            const int j = j0 + c * VW;                                                                 \
            if (j < N) {                                                                               \
                vecf v = acc[r][c];                                                                    \
                if (GATED) v = v / (1.0f + expv(-v)) * acc3[r][c];                                     \
                if (add) v += loadv(y, j, N);                                                          \
                bad |= storev(y, j, N, v);                                                             \
            }                                                                                          \
        }                                                                                              \
    }                                                                                                  \
    return bad;                                                                                        \
}
DEFINE_PROJ_TILE(proj_tile_m, MR, NV, 0)
DEFINE_PROJ_TILE(proj_tile_m_gated, MR, NV / 2, 1)
DEFINE_PROJ_TILE(proj_tile_1, 1, NV1, 0)
DEFINE_PROJ_TILE(proj_tile_1_gated, 1, NV1 / 2, 1)

// This work-item's share of a stage's tasks, a contiguous range: a CPU runs the items of a group
// one after the other, so the tasks run in order and stream the weights front to back.
ALWAYS_INLINE int2 my_tasks(int tasks) {
    const int lid = get_local_id(0), ls = get_local_size(0), per = (tasks + ls - 1) / ls;
    const int first = lid * per < tasks ? lid * per : tasks;
    return (int2)(first, first + per < tasks ? first + per : tasks);
}

// Y = X W (+ Y) for `rows` rows, split into tiles among the group's work-items: tiles of MR rows,
// then the rows left over one at a time. Returns whether a stored value is inf or NaN.
ALWAYS_INLINE int group_proj(__global const float *X, int ldx, __global const float *W, __global const float *W3,
                             const int gated, int K, int N, __global float *Y, int ldy, const int add, int rows) {
    const int cm = gated ? NV / 2 : NV, c1 = gated ? NV1 / 2 : NV1;
    const int nm = (N + cm * VW - 1) / (cm * VW), n1 = (N + c1 * VW - 1) / (c1 * VW);
    const int tiles = rows / MR, in_tiles = tiles * nm, tasks = in_tiles + (rows - tiles * MR) * n1;
    const int2 mine = my_tasks(tasks);
    int bad = 0;
    for (int t = mine.x; t < mine.y; ++t) {
        if (t < in_tiles) {
            const int rt = t / nm, j0 = (t - rt * nm) * cm * VW;
            const long xo = (long)rt * MR * ldx, yo = (long)rt * MR * ldy;
            if (gated) bad |= proj_tile_m_gated(X + xo, ldx, W, W3, K, N, j0, Y + yo, ldy, add);
            else bad |= proj_tile_m(X + xo, ldx, W, W3, K, N, j0, Y + yo, ldy, add);
        } else {
            const int u = t - in_tiles, r = tiles * MR + u / n1, j0 = (u - (u / n1) * n1) * c1 * VW;
            const long xo = (long)r * ldx, yo = (long)r * ldy;
            if (gated) bad |= proj_tile_1_gated(X + xo, ldx, W, W3, K, N, j0, Y + yo, ldy, add);
            else bad |= proj_tile_1(X + xo, ldx, W, W3, K, N, j0, Y + yo, ldy, add);
        }
    }
    return bad;
}

// ---------------------------------------------------------------------------------------------
// Per-row stages.

// n = x / rms(x) * g over dim values (one work-item's row).
ALWAYS_INLINE void norm_row(__global const float *x, __global const float *g, int dim, float eps, __global float *n) {
    vecf ss = (vecf)(0.0f);
    for (int c = 0; c < dim; c += VW) {
        const vecf v = loadv(x, c, dim);
        ss += v * v;
    }
    const float inv = 1.0f / sqrt(hsumv(ss) / dim + eps);
    for (int c = 0; c < dim; c += VW) storev(n, c, dim, loadv(x, c, dim) * inv * loadv(g, c, dim));
}

// Rotate-half RoPE of one head of width d in place, with this position's cos and sin rows.
ALWAYS_INLINE void rotate(__global float *r, int d, __global const float *cs, __global const float *sn) {
    const int mid = d / 2;
    for (int i = 0; i < mid; ++i) {
        const float a = r[i], b = r[i + mid], c = cs[i], s = sn[i];
        r[i] = a * c - b * s;
        r[i + mid] = a * s + b * c;
    }
}

// The lane sums of VW vectors, as one vector: lane i holds the sum of a[i]'s lanes, added in the
// tree of hsumv (halves, then quarters, ...), so each sum is the same float hsumv would give.
// Transposing while adding costs about a third of VW separate hsumv calls.
ALWAYS_INLINE vecf lane_sums(const vecf a[VW]) {
#if VW == 16
    float16 t[8], u[4], w[2];
    _Pragma("unroll") for (int p = 0; p < 8; ++p)
        t[p] = (float16)(a[2 * p].lo, a[2 * p + 1].lo) + (float16)(a[2 * p].hi, a[2 * p + 1].hi);
    _Pragma("unroll") for (int p = 0; p < 4; ++p)
        u[p] = (float16)(t[2 * p].s0123, t[2 * p].s89ab, t[2 * p + 1].s0123, t[2 * p + 1].s89ab)
             + (float16)(t[2 * p].s4567, t[2 * p].scdef, t[2 * p + 1].s4567, t[2 * p + 1].scdef);
    _Pragma("unroll") for (int p = 0; p < 2; ++p)
        w[p] = (float16)(u[2 * p].s01, u[2 * p].s45, u[2 * p].s89, u[2 * p].scd,
                         u[2 * p + 1].s01, u[2 * p + 1].s45, u[2 * p + 1].s89, u[2 * p + 1].scd)
             + (float16)(u[2 * p].s23, u[2 * p].s67, u[2 * p].sab, u[2 * p].sef,
                         u[2 * p + 1].s23, u[2 * p + 1].s67, u[2 * p + 1].sab, u[2 * p + 1].sef);
    return (float16)(w[0].even, w[1].even) + (float16)(w[0].odd, w[1].odd);
#else
    float8 t[4], u[2];
    _Pragma("unroll") for (int p = 0; p < 4; ++p)
        t[p] = (float8)(a[2 * p].lo, a[2 * p + 1].lo) + (float8)(a[2 * p].hi, a[2 * p + 1].hi);
    _Pragma("unroll") for (int p = 0; p < 2; ++p)
        u[p] = (float8)(t[2 * p].s01, t[2 * p].s45, t[2 * p + 1].s01, t[2 * p + 1].s45)
             + (float8)(t[2 * p].s23, t[2 * p].s67, t[2 * p + 1].s23, t[2 * p + 1].s67);
    return (float8)(u[0].even, u[1].even) + (float8)(u[0].odd, u[1].odd);
#endif
}

// One row's K/V group g at position pos: its key, rotated (RoPE), and its value appended to the
// cache rows kc, vc of its stream.
ALWAYS_INLINE void append_kv(int g, int d, int pos, __global const float *k, __global const float *v,
                             __global float *kc, __global float *vc, __global const float *cs, __global const float *sn) {
    __global float *knew = kc + (long)pos * d;
    for (int i = 0; i < d; ++i) {
        knew[i] = k[g * d + i];
        vc[(long)pos * d + i] = v[g * d + i];
    }
    rotate(knew, d, cs, sn);
}

// One row's query heads of K/V group g at position pos: RoPE, then each head's softmax over the
// cached positions 0..pos and its output o = sum_t p_t v_t. q, p, o are this row's scratch.
ALWAYS_INLINE void attend(int g, int per_group, int d, int max_len, int pos, float scale, __global float *q,
                          __global float *p, __global float *o, __global const float *kc, __global const float *vc,
                          __global const float *cs, __global const float *sn) {
    const int len = pos + 1;
    for (int h = g * per_group; h < (g + 1) * per_group; ++h) {
        __global float *qh = q + h * d, *ph = p + (long)h * max_len;
        rotate(qh, d, cs, sn);
        float m = -INFINITY;
        for (int t = 0; t < len; ++t) {
            __global const float *kt = kc + (long)t * d;
            vecf acc = (vecf)(0.0f);
            for (int c = 0; c < d; c += VW) acc += loadv(qh, c, d) * loadv(kt, c, d);
            const float s = hsumv(acc) * scale;
            ph[t] = s;
            m = s > m ? s : m;
        }
        float8 s8 = (float8)(0.0f);
        for (int t = 0; t < len; t += 8) {
            const int8 live = (int8)(t) + (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)(len);
            const float8 e = live ? exp8(load8(ph, t, len) - m) : (float8)(0.0f);
            store8(ph, t, len, e);
            s8 += e;
        }
        const float inv = 1.0f / hsum8(s8);
        for (int c = 0; c < d; c += VW) {
            vecf acc = (vecf)(0.0f);
            for (int t = 0; t < len; ++t) acc += ph[t] * loadv(vc + (long)t * d, c, d);
            storev(o + h * d, c, d, acc * inv);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The tied head: logits[r, v] = n_r . table[v], a vector sum over dim, then its lanes.

#define DEFINE_HEAD_TILE(NAME, R, V)                                                                      \
__attribute__((noinline)) int NAME(__global const float *n, int ldn, __global const float *table, int dim, \
                                   int vocab, int v0, __global float *logits, int ldl) {                  \
    vecf acc[R * V];                                                                                   \
    __global const float *rows[V];                                                                     \
    _Pragma("unroll") for (int v = 0; v < V; ++v)                                                      \
        rows[v] = table + (long)(v0 + v < vocab ? v0 + v : vocab - 1) * dim;                           \
    _Pragma("unroll") for (int i = 0; i < R * V; ++i) acc[i] = (vecf)(0.0f);                           \
    int c = 0;                                                                                         \
    for (; c + VW <= dim; c += VW) {                                                                   \
        vecf nv[R], tv[V];                                                                             \
        _Pragma("unroll") for (int r = 0; r < R; ++r) nv[r] = *(__global const vecfu *)(n + (long)r * ldn + c); \
        _Pragma("unroll") for (int v = 0; v < V; ++v) tv[v] = *(__global const vecfu *)(rows[v] + c);  \
        _Pragma("unroll") for (int r = 0; r < R; ++r) {                                                \
            _Pragma("unroll") for (int v = 0; v < V; ++v) acc[r * V + v] += nv[r] * tv[v];             \
        }                                                                                              \
    }                                                                                                  \
    if (c < dim) {                                                                                     \
        _Pragma("unroll") for (int r = 0; r < R; ++r) {                                                \
            _Pragma("unroll") for (int v = 0; v < V; ++v)                                              \
                acc[r * V + v] += loadv(n + (long)r * ldn, c, dim) * loadv(rows[v], c, dim);           \
        }                                                                                              \
    }                                                                                                  \
    lanesf y;                                                                                          \
    y.v = lane_sums(acc);                                                                              \
    int bad = 0;                                                                                       \
    _Pragma("unroll") for (int r = 0; r < R; ++r) {                                                    \
        _Pragma("unroll") for (int v = 0; v < V; ++v) {                                                \
            if (v0 + v < vocab) {                                                                      \
                logits[(long)r * ldl + v0 + v] = y.s[r * V + v];                                       \
                bad |= nonfinite_bits(y.s[r * V + v]);                                                 \
            }                                                                                          \
        }                                                                                              \
    }                                                                                                  \
    return bad;                                                                                        \
}
// The tied head's tile, NAME(n, ldn, table, dim, vocab, v0, logits, ldl): logits[r, v0 + v] =
// n_r . table[v0 + v] for R rows and V vocabulary entries, each a vector sum over dim, then its lanes.
DEFINE_HEAD_TILE(head_tile_m, HR, HV)
DEFINE_HEAD_TILE(head_tile_1, 1, HV1)

// The tied head for `rows` rows: a task per block of HV1 vocabulary entries, which runs every row
// tile over them, so the block's table rows are read from memory once and then from L1.
ALWAYS_INLINE int group_head(__global const float *n, int ldn, __global const float *table, int dim, int vocab,
                             __global float *logits, int rows) {
    const int blocks = (vocab + HV1 - 1) / HV1, tiles = rows / HR;
    const int2 mine = my_tasks(blocks);
    int bad = 0;
    for (int t = mine.x; t < mine.y; ++t) {
        const int vb = t * HV1;
        for (int rt = 0; rt < tiles; ++rt)
            for (int v0 = vb; v0 < vb + HV1 && v0 < vocab; v0 += HV)
                bad |= head_tile_m(n + (long)rt * HR * ldn, ldn, table, dim, vocab, v0, logits + (long)rt * HR * vocab,
                                   vocab);
        for (int r = tiles * HR; r < rows; ++r)
            bad |= head_tile_1(n + (long)r * ldn, ldn, table, dim, vocab, vb, logits + (long)r * vocab, vocab);
    }
    return bad;
}

// ---------------------------------------------------------------------------------------------

// A layer's weights and caches, one set of arguments per slot.
#define LAYER_ARGS(i)                                                                                      \
    __global const float *norm1_##i, __global const float *wq_##i, __global const float *wk_##i,           \
    __global const float *wv_##i, __global const float *wo_##i, __global const float *norm2_##i,          \
    __global const float *w1_##i, __global const float *w3_##i, __global const float *w2_##i,             \
    __global float *kc_##i, __global float *vc_##i
#define PICK(name) (l == 0 ? name##_0 : l == 1 ? name##_1 : l == 2 ? name##_2 : name##_3)   // l < SLOTS

// With inline_ids, a batch of up to 32 streams passes its token ids as two int16 arguments, so a
// step needs no copy command before its launch; otherwise they are read from `ids`.
typedef union { int16 v; int s[16]; } ids16;

// Floats of a row's scratch segment of n values: whole 64-byte lines, so vectors start aligned.
ALWAYS_INLINE int seg(int n) { return (n + 15) / 16 * 16; }

__kernel void decode_step(
    __global float *x_all, __global float *work, __global const int *ids, const int inline_ids, const int16 ids_lo,
    const int16 ids_hi, __global const float *table,
    __global const float *norm_f, __global const float *head, __global float *logits,
    LAYER_ARGS(0), LAYER_ARGS(1), LAYER_ARGS(2), LAYER_ARGS(3),
    __global const float *cos_t, __global const float *sin_t,
    const int batch, const int span, const int rows_per_group, const int layers, const int embed, const int head_mode,
    const int dim, const int heads, const int groups, const int head_dim, const int hidden, const int max_len,
    const int vocab, const int pos, const float eps, const float scale, __global int *status, const int seq)
{
    const int lid = get_local_id(0), ls = get_local_size(0);
    // Rows are (stream, position) pairs, stream-major: row i is stream i / span at pos + i % span.
    // A group's rows are whole streams (rows_per_group is a multiple of span).
    const int r0 = get_group_id(0) * rows_per_group, all_rows = batch * span;
    const int rows = all_rows - r0 < rows_per_group ? all_rows - r0 : rows_per_group;
    const int kv = groups * head_dim, per_group = heads / groups, pairs = head_dim / 2;
    // This group's rows of scratch, row by row: n (dim), q (dim), k (kv), v (kv), p (heads * max_len),
    // o (dim), u (hidden).
    const int on = 0, oq = seg(dim), ok = 2 * seg(dim), ov = ok + seg(kv), op = ov + seg(kv);
    const int oo = op + seg(heads * max_len), ou = oo + seg(dim), stride = ou + seg(hidden);
    __global float *s = work + (long)r0 * stride;
    __global float *x = x_all + (long)r0 * dim;
    int bad = 0;

    // The stages, each ended by a barrier: per layer RMSNorm1, q k v, the cache append, attention,
    // x += o Wo, RMSNorm2, u = SwiGLU, x += u W2; then the final RMSNorm and the head (head mode 3:
    // the final RMSNorm alone, written to `logits` as (rows, dim)). Each kind of stage appears once
    // in the code (a loop over the stages, not one copy per layer), which keeps the kernel small
    // enough for the compiler.
    const int stages = layers * 8 + (head_mode == 3 ? 1 : head_mode ? 2 : 0);
    for (int st = 0; st < stages; ++st) {
        const int l = st < layers * 8 ? st / 8 : SLOTS;
        const int kind = st < layers * 8 ? st - l * 8 : 8 + st - layers * 8;
        if (kind == 0 || kind == 5 || kind == 8) {           // RMSNorm of x into n (the embedding first)
            __global const float *g = kind == 0 ? PICK(norm1) : kind == 5 ? PICK(norm2) : norm_f;
            for (int r = lid; r < rows; r += ls) {
                __global float *xr = x + (long)r * dim;
                if (kind == 0 && l == 0 && embed) {
                    int id;
                    if (inline_ids) {                         // the ids came as arguments
                        ids16 u;
                        u.v = r0 + r < 16 ? ids_lo : ids_hi;
                        id = u.s[(r0 + r) % 16];
                    } else {
                        id = ids[r0 + r];
                    }
                    if (id < 0 || id >= vocab) {
                        report(status, STATUS_BAD_INPUT, seq, 1);
                        id = 0;
                    }
                    for (int c = 0; c < dim; c += VW) storev(xr, c, dim, loadv(table + (long)id * dim, c, dim));
                }
                norm_row(xr, g, dim, eps, kind == 8 && head_mode == 3 ? logits + (long)(r0 + r) * dim
                                                                   : s + (long)r * stride + on);
            }
        } else if (kind == 2 || kind == 3) {                  // cache append, then attention: a (row, K/V group) per task
            __global float *kc = PICK(kc), *vc = PICK(vc);
            for (int t = lid; t < rows * groups; t += ls) {
                const int r = t / groups, g = t - r * groups, at = pos + (r0 + r) % span;
                __global float *sr = s + (long)r * stride;
                const long cache_row = ((long)((r0 + r) / span) * groups + g) * max_len * head_dim;
                __global const float *cs = cos_t + (long)at * pairs, *sn = sin_t + (long)at * pairs;
                if (kind == 2)
                    append_kv(g, head_dim, at, sr + ok, sr + ov, kc + cache_row, vc + cache_row, cs, sn);
                else
                    attend(g, per_group, head_dim, max_len, at, scale, sr + oq, sr + op, sr + oo, kc + cache_row,
                           vc + cache_row, cs, sn);
            }
        } else if (kind == 6) {                               // u = silu(n W1) * (n W3)
            group_proj(s + on, stride, PICK(w1), PICK(w3), 1, dim, hidden, s + ou, stride, 0, rows);
        } else if (kind == 9 && head_mode == 1) {             // tied head: logits = n tableᵀ
            bad |= group_head(s + on, stride, head, dim, vocab, logits + (long)r0 * vocab, rows);
        } else {                                              // products: q k v, x += o Wo, x += u W2, untied head
            const int jobs = kind == 1 ? 3 : 1;
            for (int j = 0; j < jobs; ++j) {
                __global const float *X = kind == 4 ? s + oo : kind == 7 ? s + ou : s + on;
                __global const float *W = kind == 1 ? (j == 0 ? PICK(wq) : j == 1 ? PICK(wk) : PICK(wv))
                                        : kind == 4 ? PICK(wo) : kind == 7 ? PICK(w2) : head;
                __global float *Y = kind == 1 ? s + (j == 0 ? oq : j == 1 ? ok : ov)
                                  : kind == 9 ? logits + (long)r0 * vocab : x;
                const int K = kind == 7 ? hidden : dim, N = kind == 1 ? (j == 0 ? dim : kv) : kind == 9 ? vocab : dim;
                const int ldx = stride, ldy = kind == 1 ? stride : kind == 9 ? vocab : dim;
                const int into_x = kind == 4 || kind == 7;
                const int b = group_proj(X, ldx, W, 0, 0, K, N, Y, ldy, into_x, rows);
                bad |= kind == 1 ? 0 : b;
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
