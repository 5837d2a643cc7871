// matmul.cl: batched C = A @ B in float32 with optional transposes (via strides).
//
// Kernels (one work-item per block of C, no barriers: on PoCL's CPU driver barriers
// force every live value through memory, so register blocking beats local tiling):
//   matmul_blocked   each work-item owns a 4x4 block of C; any M, N, K (edges masked);
//                    operands addressed by element strides, so a transposed operand
//                    or a batch-broadcast one (stride 0) costs no copy. Used for small
//                    products, where packing would cost more than it saves (~10 GFLOP/s).
//   matmul_pack_b    copies B into panels of NR columns, k-major and zero-padded, so the
//                    micro-kernel reads each k's NR values as whole vectors (a row-major B
//                    read in place would walk k with a stride of N floats, often 4 KiB, which
//                    maps every row to the same L1 and L2 sets).
//   matmul_pack_a    copies a transposed A into panels of MR rows, k-major (A_PACKED): read in
//                    place, each k of a transposed A sits lda floats (often 4 KiB) after the
//                    last, the same cache-set trap as B. A row-major A is read in place.
//   matmul_packed    each work-item owns an MR x NR tile of C over all of K, held in
//                    MR * NV vector accumulators of VW lanes: per k, NV vector loads of B,
//                    MR broadcasts of A and MR * NV multiply-adds. The host picks the shape
//                    from the device's vector width: VW = 16 (AVX-512: 6 x 64 in 24 of the
//                    32 registers; measured on one core at n = 256..1024: 6 x 64 155-160
//                    GFLOP/s, 12 x 32 130-160, 8 x 48 135-150, OpenBLAS 140) or VW = 8 (AVX2:
//                    6 x 16 in 12 of 16). Six rows of A, each contiguous in k, are six streams;
//                    twelve rows 4 KiB apart overflow an L1 set at n = 1024. Plain a * b + c
//                    becomes an FMA (PoCL would call fma() out of line). The k loop is unrolled
//                    by four: on AVX-512 at n = 512..2048 that measured 7-10 % faster than one k
//                    per trip (two was in between, eight slower than four). Batch b reads A and
//                    the B panels of b / a_div and b / b_div: a broadcast operand (div = batch
//                    count) or grouped K/V heads (div = H / G) are packed once. The epilogue
//                    scales by alpha, optionally adds D (a residual), and reports inf/NaN.
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
#define A_PACKED 0      // 1: A comes from matmul_pack_a, element (m, k) at (m / MR) * MR * K + k * MR + m % MR
#endif
#define NR (NV * VW)
#define PACK_K 64       // k values one packing work-item copies


// --8<-- [start:matmul_pack]
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

__kernel void matmul_pack_b(__global const float *b, __global float *bp, const int N, const int K,
                            const int b_batch, const int b_row, const int b_col)
{
    const int k0 = get_global_id(0) * PACK_K, panel = get_global_id(1), batch = get_global_id(2);
    if (k0 >= K) return;
    const int k1 = min(K, k0 + PACK_K), cols = min(NR, N - panel * NR);
    const long np = (N + NR - 1) / NR * NR;                 // columns padded to whole panels
    __global const float *src = b + (long)batch * b_batch + (long)panel * NR * b_col;
    __global float *dst = bp + ((long)batch * np + (long)panel * NR) * K;
    if (cols == NR && b_col == 1) {                         // a full panel of a row-major B: whole vectors
        for (int k = k0; k < k1; ++k)
            for (int v = 0; v < NV; ++v)
                ((__global vecf *)(dst + (long)k * NR))[v] = ((__global const vecfu *)(src + (long)k * b_row))[v];
        return;
    }
    for (int k = k0; k < k1; ++k)
        for (int c = 0; c < NR; ++c)
            dst[(long)k * NR + c] = c < cols ? src[(long)k * b_row + (long)c * b_col] : 0.0f;
}
// --8<-- [end:matmul_pack]

// --8<-- [start:matmul_packed]
__kernel void matmul_packed(__global const float *a, __global const float *bp, __global float *c,
                            __global const float *d, const int M, const int N, const int K,
                            const int a_set, const int lda, const int a_div, const int b_div,
                            const float alpha, const int add_d, __global int *status, const int seq)
{
    const int pm = get_global_id(0), pn = get_global_id(1), batch = get_global_id(2);
    const int m0 = pm * MR, n0 = pn * NR;
    if (m0 >= M || n0 >= N) return;
    const long np = (N + NR - 1) / NR * NR;
    __global const float *b = bp + ((long)(batch / b_div) * np + n0) * K;
#if A_PACKED
    __global const float *ab = a + (long)(batch / a_div) * a_set + (long)m0 * K;
    int at[MR];
    #pragma unroll
    for (int r = 0; r < MR; ++r) at[r] = r;             // padded rows are zeros
#else
    __global const float *ab = a + (long)(batch / a_div) * a_set;
    int at[MR];                                         // rows past M repeat the last one
    #pragma unroll
    for (int r = 0; r < MR; ++r) at[r] = min(m0 + r, M - 1) * lda;
#endif
    vecf acc[MR][NV];
    #pragma unroll
    for (int r = 0; r < MR; ++r)
        #pragma unroll
        for (int v = 0; v < NV; ++v) acc[r][v] = (vecf)(0.0f);
    #pragma unroll 4                                    // four k per trip (see the header)
    for (int k = 0; k < K; ++k, b += NR) {
        vecf bv[NV];
        #pragma unroll
        for (int v = 0; v < NV; ++v) bv[v] = ((__global const vecf *)b)[v];
#if A_PACKED
        __global const float *ak = ab + (long)k * MR;
#else
        __global const float *ak = ab + k;
#endif
        #pragma unroll
        for (int r = 0; r < MR; ++r) {
            const float x = ak[at[r]];
            #pragma unroll
            for (int v = 0; v < NV; ++v) acc[r][v] = x * bv[v] + acc[r][v];
        }
    }
    __global float *cb = c + (long)batch * M * N;
    __global const float *db = d + (long)batch * M * N;
    int bad = 0;
#if C_TRANS
    // C is (N, M): tile row r is column m0 + r of C, so each value lands M floats after the last.
    for (int r = 0; r < MR && m0 + r < M; ++r)
        for (int v = 0; v < NV; ++v) {
            lanesf l;
            l.v = acc[r][v];
            for (int j = 0; j < VW && n0 + v * VW + j < N; ++j) {
                const long at_c = (long)(n0 + v * VW + j) * M + m0 + r;
                const float o = alpha * l.s[j] + (add_d ? db[at_c] : 0.0f);
                cb[at_c] = o;
                bad |= nonfinite_bits(o);
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
                if (add_d) out += *(__global const vecfu *)(db + at_c);
                *(__global vecfu *)(cb + at_c) = out;
                bad |= nonfinitev(out);
            } else {
                lanesf l;
                l.v = acc[r][v];
                for (int j = 0; j < VW && n0 + v * VW + j < N; ++j) {
                    const float o = alpha * l.s[j] + (add_d ? db[at_c + j] : 0.0f);
                    cb[at_c + j] = o;
                    bad |= nonfinite_bits(o);
                }
            }
        }
    }
#endif
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:matmul_packed]
