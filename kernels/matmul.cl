// matmul.cl: batched C = A @ B in float32 with optional transposes (via strides).
//
// Kernels (register blocking: one work-item per block of C):
//   matmul_blocked   each work-item owns a 4x4 block of C; any M, N, K (edges masked);
//                    operands addressed by element strides, so a transposed operand
//                    or a batch-broadcast one (stride 0) costs no copy. Used for small
//                    products, where the micro-kernel's setup would cost more than it saves.
//   matmul_pack_a    copies a transposed A into panels of MR rows, k-major (A_PACKED = 1): read
//                    in place, each k of a transposed A sits lda floats after the last, and when
//                    that is a multiple of 4 KiB every k maps to the same L1 set and a few L2 sets.
//                    The host reads a transposed A in place (A_PACKED = 2) when its K lines fit in
//                    the L2 sets its stride can reach, and always reads a row-major A in place.
//   matmul_packed    each work-group owns GP NR-column panels of C (or a share of their rows).
//                    It first copies those panels of B into local memory, k-major and zero past
//                    N, so each k's NR values are whole vectors (a row-major B read in place
//                    walks k with a stride of N floats, the same cache-set trap). The copy is
//                    in the same launch as the product: a separate packing kernel cost a
//                    launch, a worker wake-up and a round trip of the packed panel through
//                    memory, which weighs most at small n (benchmarks/results/tried.md, "B's
//                    panels copied inside the GEMM kernel"). After one barrier (on
//                    PoCL's CPU driver a barrier sends every value live across it through
//                    memory, so there is no other), the group's 16 items share its row tiles:
//                    each computes MR x NR tiles over all of K, held in MR * NV vector
//                    accumulators of VW lanes (per k, NV vector loads of B, MR broadcasts of A
//                    and MR * NV multiply-adds), one tile's rows against each of the GP panels
//                    in turn, so A comes from memory once per GP tiles (GP = 2-4; the host keeps
//                    a group's panels within 512 KiB; benchmarks/results/tried.md, "Several B
//                    panels per work-group"). The local size is the same for every shape: PoCL
//                    compiles a kernel anew for each local size it meets. When the panel would
//                    outgrow the local memory the host allows (SLICED), it is copied one k-slice
//                    at a time between two barriers and each item owns one tile; every tile still
//                    sums k in order, so the result is bitwise the same. The host picks the tile
//                    from the device's vector width: VW = 16 (AVX-512: 6 x 64 in 24 of the 32
//                    registers, the fastest of the tiles tried; benchmarks/results/tried.md,
//                    "GEMM tiles") or VW = 8 (AVX2: 6 x 16 in 12 of 16). Six rows of A, each
//                    contiguous in k, are six streams; twelve rows 4 KiB apart overflow an L1 set
//                    at n = 1024. Plain a * b + c becomes an FMA (PoCL would call fma() out of
//                    line). The k loop is unrolled by four, the fastest of 1, 2, 4 and 8 on
//                    AVX-512 (benchmarks/results/tried.md, "k loop unrolled by 4"). Batch b reads
//                    A of b / a_div and B of b / b_div: a broadcast operand (div = batch count)
//                    or grouped K/V heads (div = H / G) are stored once. The epilogue scales by
//                    alpha, adds D when built with ADD_D (a gradient gathered so far, which this
//                    product's share joins without a separate add), and reports inf/NaN. Built
//                    with KSPLIT (a small C over a long K, on a CPU), the third grid axis splits
//                    K instead of counting batches: each work-group sums one slice of K into its
//                    own partial C, so B's panels are copied once instead of once per row split;
//                    reduce.cl's sum_columns joins the slices in order, with alpha and D.
//                    Built with PAIR, C = A B + A2 B2 in one sum (each panel holds B's K1 rows then
//                    B2's); with SWIGLU_BWD too, A and A2 are SwiGLU's gradients, each tile's rows
//                    formed by its item from gate, up and g just before the tile reads them.
//   matmul_swiglu    gate = X W1, up = X W3 and h = silu(gate) up in one launch: panels of half W1's,
//                    half W3's columns, h formed from the accumulators in the epilogue.
//   matmul_tall      C = A^T B for a small C over a long K (a narrow layer's weight gradient): A (K, M)
//                    and B (K, N) are both read in place, a row of each per k, no panels copied, no
//                    local memory, no barrier; each work-item sums one chunk of K for one panel's
//                    row tiles in the same MR x NV accumulators, and sum_columns joins the chunks'
//                    partial Cs in order (see the kernel's comment).
#include "common.h"

#define BM 4
#define BN 4

// --8<-- [start:matmul_blocked]
__kernel void matmul_blocked(
    __global const float *a, __global const float *b, __global float *c,
    const int M, const int N, const int K,
    const int a_batch, const int a_row, const int a_col,   // element strides of A
    const int b_batch, const int b_row, const int b_col,   // element strides of B
    const int c_batch,                                     // C is contiguous (M, N) per batch
    __global int *status, const int seq)
{
    const int n0 = get_global_id(0) * BN;
    const int m0 = get_global_id(1) * BM;
    const int batch = get_global_id(2);
    if (m0 >= M || n0 >= N) return;
    a += (long)batch * a_batch;
    b += (long)batch * b_batch;
    c += (long)batch * c_batch;

    float acc[BM][BN];
    for (int i = 0; i < BM; ++i)
        for (int j = 0; j < BN; ++j) acc[i][j] = 0.0f;

    // Clamp edge rows/columns to a valid index; their results are never stored.
    int ar[BM], bc[BN];
    for (int i = 0; i < BM; ++i) ar[i] = min(m0 + i, M - 1) * a_row;
    for (int j = 0; j < BN; ++j) bc[j] = min(n0 + j, N - 1) * b_col;

    for (int k = 0; k < K; ++k) {
        float av[BM], bv[BN];
        for (int i = 0; i < BM; ++i) av[i] = a[ar[i] + k * a_col];
        for (int j = 0; j < BN; ++j) bv[j] = b[k * b_row + bc[j]];
        for (int i = 0; i < BM; ++i)
            for (int j = 0; j < BN; ++j) acc[i][j] += av[i] * bv[j];
    }
    int bad = 0;
    for (int i = 0; i < BM && m0 + i < M; ++i)
        for (int j = 0; j < BN && n0 + j < N; ++j) {
            c[(m0 + i) * N + n0 + j] = acc[i][j];
            bad |= nonfinite_bits(acc[i][j]);
        }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:matmul_blocked]

#ifndef MR
#define MR 6            // rows of the C tile
#endif
#ifndef NV
#define NV 2            // vectors per row of the C tile: NR = NV * VW columns
#endif
#ifndef C_TRANS
#define C_TRANS 0       // 1: store the tile transposed, C[n][m] (the host computes C = Aᵀ B as (Bᵀ A)ᵀ)
#endif
#ifndef A_PACKED
#define A_PACKED 0      // 1: A comes from matmul_pack_a, element (m, k) at (m / MR) * MR * K + k * MR + m % MR;
#endif                  // 2: A is transposed and read in place, element (m, k) at k * lda + m
#ifndef ADD_D
#define ADD_D 0         // 1: C = alpha * A @ B + D, D contiguous like C
#endif
#ifndef SLICED
#define SLICED 0        // 1: K is longer than the host's k-slice (KC), copy B's panel a slice at a time
#endif
#define NR (NV * VW)
#ifndef GP
#define GP 1            // B panels per work-group
#endif
#if SLICED && GP > 1
#error "a sliced build keeps one tile of one panel per item (GP = 1)"
#endif
#ifndef KSPLIT
#define KSPLIT 0        // 1: grid axis 2 splits K (one product, no batch): slice s sums k in
#endif                  // [s KC, (s + 1) KC) and stores its partial C at c + s M N; the host joins them
#if KSPLIT && SLICED
#error "a split build keeps each slice's panels whole (SLICED = 0)"
#endif
#define PACK_K 64       // k values one matmul_pack_a work-item copies
#define LINE_K 16       // k values in one cache line of a transposed B's column


// --8<-- [start:matmul_pack_a]
#define PACK_PANELS 8   // A panels one packing work-item fills: 8 x MR consecutive values of each k

__kernel void matmul_pack_a(__global const float *a, __global float *ap, const int M, const int K,
                            const int a_batch, const int a_row, const int a_col)
{
    const int k0 = get_global_id(0) * PACK_K, group = get_global_id(1), batch = get_global_id(2);
    const int m0 = group * PACK_PANELS * MR;
    if (k0 >= K || m0 >= M) return;
    const int k1 = min(K, k0 + PACK_K), rows = min(PACK_PANELS * MR, M - m0);
    const long mp = (M + MR - 1) / MR * MR;                 // rows padded to whole panels
    __global const float *src = a + (long)batch * a_batch + (long)m0 * a_row;
    __global float *dst = ap + ((long)batch * mp + m0) * K;
    // k outermost: a transposed A (a_row = 1) is read as runs of 8 MR contiguous values
    // per k, instead of MR values from each of 64 rows lda floats (often 4 KiB) apart.
    const int panels = (rows + MR - 1) / MR;
    for (int k = k0; k < k1; ++k) {
        __global const float *sk = src + (long)k * a_col;
        for (int p = 0; p < panels; ++p) {
            __global float *dk = dst + (long)p * MR * K + (long)k * MR;
            #pragma unroll
            for (int r = 0; r < MR; ++r) {
                const int m = p * MR + r;
                dk[r] = m < rows ? sk[(long)m * a_row] : 0.0f;
            }
        }
    }
}

// --8<-- [end:matmul_pack_a]

// --8<-- [start:matmul_packed]
// Copies rows [k0, k0 + kc) of the work-group's GP panels of B (panel p: columns n0 + p NR ..
// n0 + (p + 1) NR, zero past N) into bl, panel p at bl + p KC NR, k-major: NR values per k,
// each k's row whole vectors. The work-group's items share the rows.
ALWAYS_INLINE void load_panels(__local float *bl, __global const float *b, const int n0, const int N,
                               const int k0, const int kc, const int KC, const int b_row, const int b_col)
{
    const int lid = get_local_id(0), lsz = get_local_size(0);
    if (b_row == 1 && b_col != 1) {
        // A transposed B (each column n contiguous in k): a work-item copies LINE_K k of one panel
        // at a time, one cache line from each of the panel's NR columns, so every line of B is read
        // once. Walking k rows instead gathers NR values per k from lines b_col floats apart; when
        // b_col is a multiple of 256 they share four L1 sets and are gone before the next k.
        const int chunks = (kc + LINE_K - 1) / LINE_K;
        for (int i = lid; i < GP * chunks; i += lsz) {
            const int p = i / chunks, k = (i - p * chunks) * LINE_K, kn = min(LINE_K, kc - k);
            const int np = n0 + p * NR, cols = min(NR, N - np);
            if (cols <= 0) continue;
            __local float *dst = bl + (p * KC + k) * NR;
            __global const float *src = b + (long)np * b_col + k0 + k;
            for (int j = 0; j < NR; ++j, src += b_col) {
                if (j < cols) {
                    for (int kk = 0; kk < kn; ++kk) dst[kk * NR + j] = src[kk];
                } else {
                    for (int kk = 0; kk < kn; ++kk) dst[kk * NR + j] = 0.0f;
                }
            }
        }
        return;
    }
    for (int i = lid; i < GP * kc; i += lsz) {
        const int p = i / kc, k = i - p * kc, np = n0 + p * NR, cols = min(NR, N - np);
        __global const float *src = b + (long)(k0 + k) * b_row + (long)np * b_col;
        __local float *dst = bl + (p * KC + k) * NR;
        if (cols == NR && b_col == 1) {                      // a full panel of a row-major B: whole vectors
            #pragma unroll
            for (int v = 0; v < NV; ++v) ((__local vecf *)dst)[v] = ((__global const vecfu *)src)[v];
        } else if (cols > 0) {
            for (int j = 0; j < NR; ++j) dst[j] = j < cols ? src[(long)j * b_col] : 0.0f;
        }
    }
}

// acc += A[rows at, k0 .. k0 + kc) @ bk[0 .. kc)
ALWAYS_INLINE void accumulate(vecf acc[MR][NV], __local const float *bk, __global const float *ab,
                              const int at[MR], const int a_k, const int k0, const int kc)
{
    #pragma unroll 4                                    // four k per trip (see the header)
    for (int k = k0; k < k0 + kc; ++k, bk += NR) {
        vecf bv[NV];
        #pragma unroll
        for (int v = 0; v < NV; ++v) bv[v] = ((__local const vecf *)bk)[v];
        __global const float *ak = ab + (long)k * a_k;
        #pragma unroll
        for (int r = 0; r < MR; ++r) {
            const float x = ak[at[r]];
            #pragma unroll
            for (int v = 0; v < NV; ++v) acc[r][v] = x * bv[v] + acc[r][v];
        }
    }
}

// C[m0.., n0..] = alpha * acc (+ D, laid out as C, with ADD_D): the tile's rows below M and
// columns below N. Returns the inf/NaN bits of what it stored.
ALWAYS_INLINE int store_tile(vecf acc[MR][NV], __global float *cb, __global const float *db, const int m0,
                             const int n0, const int M, const int N, const float alpha)
{
    int bad = 0;
#if C_TRANS
    // C is (N, M): tile row r is column m0 + r of C, so each value lands M floats after the last,
    // and each column of the tile is MR consecutive floats of one row of C. Every loop is
    // unrolled, so each lane is read at a constant index: with a runtime index (a loop bounded
    // by N) the accumulators would go through memory.
    #pragma unroll
    for (int v = 0; v < NV; ++v) {
        #pragma unroll
        for (int j = 0; j < VW; ++j) {
            const int col = n0 + v * VW + j;
            const long at_c = (long)col * M + m0;
            #pragma unroll
            for (int r = 0; r < MR; ++r) {
                if (col < N && m0 + r < M) {
                    const float o = alpha * acc[r][v][j] + (ADD_D ? db[at_c + r] : 0.0f);
                    cb[at_c + r] = o;
                    bad |= nonfinite_bits(o);
                }
            }
        }
    }
#else
    #pragma unroll
    for (int r = 0; r < MR; ++r) {
        if (m0 + r >= M) break;
        #pragma unroll
        for (int v = 0; v < NV; ++v) {
            const long at_c = (long)(m0 + r) * N + n0 + v * VW;
            if (n0 + (v + 1) * VW <= N) {                   // a whole vector inside the row
                vecf out = alpha * acc[r][v];
#if ADD_D
                out += *(__global const vecfu *)(db + at_c);
#endif
                *(__global vecfu *)(cb + at_c) = out;
                bad |= nonfinitev(out);
            } else {
                lanesf l;
                l.v = acc[r][v];
                for (int j = 0; j < VW && n0 + v * VW + j < N; ++j) {
                    const float o = alpha * l.s[j] + (ADD_D ? db[at_c + j] : 0.0f);
                    cb[at_c + j] = o;
                    bad |= nonfinite_bits(o);
                }
            }
        }
    }
#endif
    return bad;
}

// Where the rows m0 .. m0 + MR of A are: element (m0 + r, k) at ab[k * a_k + at[r]].
#if A_PACKED == 1
#define A_TILE(m0) \
    __global const float *ab = a_set0 + (long)(m0) * K; \
    const int a_k = MR;                                 /* panel of MR rows, k-major */ \
    int at[MR]; \
    _Pragma("unroll") for (int r = 0; r < MR; ++r) at[r] = r;   /* padded rows are zeros */
#else
#define A_TILE(m0) \
    __global const float *ab = a_set0; \
    const int a_k = A_PACKED == 2 ? lda : 1;            /* a transposed A: each k a row of lda floats */ \
    int at[MR];                                         /* rows past M repeat the last one */ \
    _Pragma("unroll") for (int r = 0; r < MR; ++r) at[r] = min((m0) + r, M - 1) * (A_PACKED == 2 ? 1 : lda);
#endif

#define ZERO(acc) \
    _Pragma("unroll") for (int r = 0; r < MR; ++r) \
        _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[r][v] = (vecf)(0.0f);

#ifndef PAIR
#define PAIR 0          // 1: C = A B + A2 B2 (one sum over K1 + K2), see matmul_packed's comment
#endif
#ifndef SWIGLU_BWD
#define SWIGLU_BWD 0    // 1 (with PAIR): A and A2 are SwiGLU's gradients, formed by the tile's item first
#endif
#if PAIR && (SLICED || KSPLIT || A_PACKED)
#error "a paired product keeps both panels whole and reads both row-major As in place"
#endif
#if SWIGLU_BWD && !PAIR
#error "SWIGLU_BWD forms a paired product's two As"
#endif

// e^x on VW lanes for SwiGLU's kernels here (elementwise.cl's expv): n + 1.5 * 2^23's bits less
// 1.5 * 2^23's are the whole n as an int (an inline conversion).
#define SWIGLU_TO_INT(n) (as_veci((n) + 12582912.0f) - as_veci((vecf)(12582912.0f)))
DEFINE_EXP(expv_mm, vecf, veci, as_vecf, SWIGLU_TO_INT)

#if SWIGLU_BWD
// Rows m0 .. m0 + rows of SwiGLU's gradients from gate, up and their output's gradient g (all
// (M, K1), row stride K1): dgate = g up silu'(gate), dup = g silu(gate), swiglu_backward's
// expressions lane for lane, stored where the product then reads them (from L1). Returns the
// inf/NaN bits of what it stored.
ALWAYS_INLINE int swiglu_rows(__global const float *gate, __global const float *up, __global const float *g,
                              __global float *dgate, __global float *dup, const int m0, const int rows, const int K1)
{
    int bad = 0;
    for (int r = 0; r < rows; ++r) {
        const long row = (long)(m0 + r) * K1;
        for (int i = 0; i < K1; i += VW) {
            const long at = row + i;
            vecf a, u, gv;
            const int whole = i + VW <= K1;
            if (whole) {
                a = *(__global const vecfu *)(gate + at);
                u = *(__global const vecfu *)(up + at);
                gv = *(__global const vecfu *)(g + at);
            } else {
                lanesf la, lu, lg;
                for (int j = 0; j < VW; ++j) {
                    la.s[j] = i + j < K1 ? gate[at + j] : 0.0f;
                    lu.s[j] = i + j < K1 ? up[at + j] : 0.0f;
                    lg.s[j] = i + j < K1 ? g[at + j] : 0.0f;
                }
                a = la.v;
                u = lu.v;
                gv = lg.v;
            }
            const vecf s = 1.0f / (1.0f + expv_mm(-a));
            const vecf dg = gv * u * s * (1.0f + a * (1.0f - s)), du = gv * a * s;
            if (whole) {
                *(__global vecfu *)(dgate + at) = dg;
                *(__global vecfu *)(dup + at) = du;
                bad |= nonfinitev(dg) | nonfinitev(du);
            } else {
                lanesf l1, l2;
                l1.v = dg;
                l2.v = du;
                for (int j = 0; j < VW && i + j < K1; ++j) {
                    dgate[at + j] = l1.s[j];
                    dup[at + j] = l2.s[j];
                    bad |= nonfinite_bits(l1.s[j]) | nonfinite_bits(l2.s[j]);
                }
            }
        }
    }
    return bad;
}
#endif

// Built with PAIR, C = alpha (A B + A2 B2) (+ D): A (M, K1) and A2 (M, K - K1) row-major with the same
// row stride, B and B2 with the same strides (K1 and K - K1 rows). Each panel holds B's K1 rows then
// B2's, and each tile's accumulators run over both in one sum, k in order: the sum of two products
// that share C (SwiGLU's input gradient dgate W1ᵀ + dup W3ᵀ) as one launch with no partial C.
__kernel void matmul_packed(__global const float *a, __global const float *b, __global float *c,
                            __global const float *d, const int M, const int N, const int K,
                            const int a_set, const int lda, const int a_div,
                            const int b_set, const int b_row, const int b_col, const int b_div, const int KC,
                            const int tiles, const float alpha, __global int *status,
                            const int seq, __local float *bl
#if PAIR
                            , __global const float *a2, __global const float *b2, const int K1
#endif
#if SWIGLU_BWD
                            , __global const float *gate, __global const float *up, __global const float *g,
                            __global float *dgate, __global float *dup
#endif
                            )
{
    // Work-group (g, h, batch) owns row tiles g * tiles .. (g + 1) * tiles of C and its GP
    // panels from column h * GP * NR. The local size is fixed (PoCL compiles the kernel anew
    // for every local size), so each item loops over tiles.
    const int batch = KSPLIT ? 0 : get_global_id(2), lid = get_local_id(0), items = get_local_size(0);
    const int ng = get_group_id(1) * GP * NR;
    const int k0 = KSPLIT ? get_global_id(2) * KC : 0, kc = KSPLIT ? min(KC, K - k0) : K;
    const int t0 = get_group_id(0) * tiles, t1 = min((M + MR - 1) / MR, t0 + tiles);
    __global const float *bb = b + (long)(batch / b_div) * b_set;
    __global const float *a_set0 = a + (long)(batch / a_div) * a_set;
    __global float *cb = c + (long)(KSPLIT ? get_global_id(2) : batch) * M * N;
    __global const float *db = d + (long)batch * M * N;     // read only with ADD_D
    int bad = 0;
#if SLICED
    // K is longer than a slice: each item owns one tile of one panel (tiles <= items, GP = 1),
    // whose accumulators live across the slices. A separate build: PoCL compiles barriers in a
    // loop into slower code even for one slice.
    const int t = t0 + lid;
    const bool live = t < t1;
    A_TILE(t * MR)
    vecf acc[MR][NV];
    ZERO(acc)
    for (int k0 = 0; k0 < K; k0 += KC) {
        const int kc = min(KC, K - k0);
        barrier(CLK_LOCAL_MEM_FENCE);                   // everyone is done with the last slice
        load_panels(bl, bb, ng, N, k0, kc, KC, b_row, b_col);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (live) accumulate(acc, bl, ab, at, a_k, k0, kc);
    }
    if (live) bad = store_tile(acc, cb, db, t * MR, ng, M, N, alpha);
#elif PAIR
    load_panels(bl, bb, ng, N, 0, K1, KC, b_row, b_col);                   // rows 0 .. K1 from B
    load_panels(bl + K1 * NR, b2 + (long)(batch / b_div) * b_set, ng, N, 0, K - K1, KC, b_row, b_col);
    barrier(CLK_LOCAL_MEM_FENCE);
#if SWIGLU_BWD
    // A and A2 are dgate and dup, each tile's rows formed by the item that owns the tile (the host
    // gives one work-group all of C's panels, so no other item reads or writes those rows)
    __global const float *a2_set0 = dup;
    a_set0 = dgate;
#else
    __global const float *a2_set0 = a2 + (long)(batch / a_div) * a_set;
#endif
    for (int t = t0 + lid; t < t1; t += items) {
#if SWIGLU_BWD
        bad |= swiglu_rows(gate, up, g, dgate, dup, t * MR, min(MR, M - t * MR), K1);
#endif
        A_TILE(t * MR)
        for (int p = 0; p < GP && ng + p * NR < N; ++p) {
            vecf acc[MR][NV];
            ZERO(acc)
            accumulate(acc, bl + p * KC * NR, ab, at, a_k, 0, K1);
            accumulate(acc, bl + (p * KC + K1) * NR, a2_set0, at, a_k, 0, K - K1);
            bad |= store_tile(acc, cb, db, t * MR, ng + p * NR, M, N, alpha);
        }
    }
#else
    load_panels(bl, bb, ng, N, k0, kc, KC, b_row, b_col);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = t0 + lid; t < t1; t += items) {
        // One tile's rows against each of the group's panels in turn: A's rows come from
        // memory for the first panel and from L1 for the next GP - 1.
        A_TILE(t * MR)
        for (int p = 0; p < GP && ng + p * NR < N; ++p) {
            vecf acc[MR][NV];
            ZERO(acc)
            accumulate(acc, bl + p * KC * NR, ab, at, a_k, k0, kc);
            bad |= store_tile(acc, cb, db, t * MR, ng + p * NR, M, N, alpha);
        }
    }
#endif
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:matmul_packed]

// --8<-- [start:matmul_tall]
// C = alpha * A^T B (+ D) for a long K and a small C (a weight gradient x^T g over a batch's rows):
// A is (K, M) and B is (K, N), both row-major with row strides lda and ldb (B from element b_off:
// columns of a wider matrix, as a projection's block of a joined gradient) and both read in place:
// each k is one row of A (MR values of it per tile) and one row of B (NR values, whole vectors),
// so the two are read as they lie, a row after the other, with no copy into panels. Work-item
// (task, s) owns B's column panel task % pn, row tiles (task / pn) * tiles .. + tiles, and the
// s-th chunk of `chunk` k; each of its tiles sums its chunk in MR x NV vector accumulators, k in
// order, and is stored by store_tile (transposed with C_TRANS, alpha and D with ADD_D). With more
// than one chunk each writes its own partial C (c + s M N) and reduce.cl's sum_columns joins them
// in chunk order: the chunks are the host's, from the shape alone, so the sums do not depend on
// the number of compute units. No local memory and no barrier: the items share nothing.
__kernel void matmul_tall(__global const float *a, __global const float *b, __global float *c,
                          __global const float *d, const int M, const int N, const int K,
                          const int lda, const int ldb, const int b_off, const int chunk, const int tiles,
                          const float alpha, __global int *status, const int seq)
{
    b += b_off;                                         // B's first column: a block of a wider matrix
    const int pn = (N + NR - 1) / NR, pm = (M + MR - 1) / MR;
    const int task = get_global_id(0), s = get_global_id(1);
    const int p = task % pn, t0 = task / pn * tiles, t1 = min(pm, t0 + tiles);
    const int k0 = s * chunk, k1 = min(K, k0 + chunk);
    if (t0 >= pm || k0 >= K) return;
    const int n0 = p * NR, cols = min(NR, N - n0);
    __global float *cs = c + (long)s * M * N;
    int bad = 0;
    for (int t = t0; t < t1; ++t) {
        int at[MR];                                     // rows past M repeat the last one
        #pragma unroll
        for (int r = 0; r < MR; ++r) at[r] = min(t * MR + r, M - 1);
        vecf acc[MR][NV];
        ZERO(acc)
        __global const float *ak = a + (long)k0 * lda, *bk = b + (long)k0 * ldb + n0;
        if (cols == NR) {
            #pragma unroll 4                            // as matmul_packed's k loop
            for (int k = k0; k < k1; ++k, ak += lda, bk += ldb) {
                vecf bv[NV];
                #pragma unroll
                for (int v = 0; v < NV; ++v) bv[v] = ((__global const vecfu *)bk)[v];
                #pragma unroll
                for (int r = 0; r < MR; ++r) {
                    const float x = ak[at[r]];
                    #pragma unroll
                    for (int v = 0; v < NV; ++v) acc[r][v] = x * bv[v] + acc[r][v];
                }
            }
        } else {                                        // the last panel, narrower than NR: zeros past N
            for (int k = k0; k < k1; ++k, ak += lda, bk += ldb) {
                vecf bv[NV];
                #pragma unroll
                for (int v = 0; v < NV; ++v) {
                    lanesf l;
                    for (int j = 0; j < VW; ++j) l.s[j] = v * VW + j < cols ? bk[v * VW + j] : 0.0f;
                    bv[v] = l.v;
                }
                #pragma unroll
                for (int r = 0; r < MR; ++r) {
                    const float x = ak[at[r]];
                    #pragma unroll
                    for (int v = 0; v < NV; ++v) acc[r][v] = x * bv[v] + acc[r][v];
                }
            }
        }
        bad |= store_tile(acc, cs, d, t * MR, n0, M, N, alpha);
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:matmul_tall]

// --8<-- [start:matmul_swiglu]
// SwiGLU's gate and up projections and the unit itself in one launch (a feed-forward layer's
// first half): gate = X W1, up = X W3 and h = silu(gate) * up, for X (M, K) row-major with row
// stride lda and W1, W3 (K, N) row-major. A "pair" j is the HALF = NR / 2 columns j HALF ..
// (j + 1) HALF of both weights; its panel in local memory holds, per k, those columns of W1
// then the same columns of W3 (zero past N), so each k's NR values are the whole vectors
// matmul_packed's accumulate() reads, and a tile's MR x NV accumulators hold gate in vectors
// 0 .. NV / 2 - 1 and up in the rest. Each sum runs k in order from 0 as an unsplit matmul_packed's
// does and h is swiglu_forward's expression, so the three outputs have the bits of the two
// products (where those do not split K) and the pass apart. The epilogue stores gate and up (the backward's inputs) and h from the
// registers: no pass reads gate and up back to form h. Work-group (g, j) owns row tiles
// g * tiles .. (g + 1) * tiles and the GP pairs from pair j * GP, as matmul_packed's groups do
// (the host's layout); K must fit one panel in local memory (the host falls back otherwise).
#define HALF (NR / 2)
#if NV % 2
#error "matmul_swiglu splits a tile's vectors between gate and up: NV must be even"
#endif

__kernel void matmul_swiglu(__global const float *x, __global const float *w1, __global const float *w3,
                            __global float *gate, __global float *up, __global float *h,
                            const int M, const int N, const int K, const int lda, const int tiles,
                            __global int *status, const int seq, __local float *bl)
{
    const int lid = get_local_id(0), items = get_local_size(0);
    const int j0 = get_group_id(1) * GP;                        // the group's first pair
    const int t0 = get_group_id(0) * tiles, t1 = min((M + MR - 1) / MR, t0 + tiles);
    for (int i = lid; i < GP * K; i += items) {                 // the pairs' panels, k-major
        const int p = i / K, k = i - p * K, n0 = (j0 + p) * HALF, cols = min(HALF, N - n0);
        __local float *dst = bl + (p * K + k) * NR;
        __global const float *s1 = w1 + (long)k * N + n0, *s3 = w3 + (long)k * N + n0;
        if (cols == HALF) {
            #pragma unroll
            for (int v = 0; v < NV / 2; ++v) {
                ((__local vecf *)dst)[v] = ((__global const vecfu *)s1)[v];
                ((__local vecf *)dst)[NV / 2 + v] = ((__global const vecfu *)s3)[v];
            }
        } else {
            for (int c = 0; c < HALF; ++c) {
                dst[c] = c < cols ? s1[c] : 0.0f;
                dst[HALF + c] = c < cols ? s3[c] : 0.0f;
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int a_k = 1;
    __global const float *ab = x;
    int bad = 0;
    for (int t = t0 + lid; t < t1; t += items) {
        const int m0 = t * MR;
        int at[MR];                                              // rows past M repeat the last one
        #pragma unroll
        for (int r = 0; r < MR; ++r) at[r] = min(m0 + r, M - 1) * lda;
        for (int p = 0; p < GP; ++p) {
            const int n0 = (j0 + p) * HALF;
            if (n0 >= N) break;
            vecf acc[MR][NV];
            ZERO(acc)
            accumulate(acc, bl + p * K * NR, ab, at, a_k, 0, K);
            #pragma unroll
            for (int r = 0; r < MR; ++r) {
                if (m0 + r >= M) break;
                #pragma unroll
                for (int v = 0; v < NV / 2; ++v) {
                    const vecf a = acc[r][v], b = acc[r][NV / 2 + v];
                    const vecf o = a / (1.0f + expv_mm(-a)) * b;     // swiglu_forward's expression
                    const long at_c = (long)(m0 + r) * N + n0 + v * VW;
                    if (n0 + (v + 1) * VW <= N) {
                        *(__global vecfu *)(gate + at_c) = a;
                        *(__global vecfu *)(up + at_c) = b;
                        *(__global vecfu *)(h + at_c) = o;
                        bad |= nonfinitev(a) | nonfinitev(b) | nonfinitev(o);
                    } else {
                        lanesf la, lb, lo;
                        la.v = a;
                        lb.v = b;
                        lo.v = o;
                        for (int c = 0; c < VW && n0 + v * VW + c < N; ++c) {
                            gate[at_c + c] = la.s[c];
                            up[at_c + c] = lb.s[c];
                            h[at_c + c] = lo.s[c];
                            bad |= nonfinite_bits(la.s[c]) | nonfinite_bits(lb.s[c]) | nonfinite_bits(lo.s[c]);
                        }
                    }
                }
            }
        }
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:matmul_swiglu]
