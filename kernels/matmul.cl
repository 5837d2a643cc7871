// matmul.cl: batched C = A @ B in float32 with optional transposes (via strides).
//
// Kernels (one work-item per block of C, no barriers: on PoCL's CPU driver barriers
// force every live value through memory, so register blocking beats local tiling):
//   matmul_blocked   each work-item owns a 4x4 block of C; any M, N, K (edges masked);
//                    operands addressed by element strides, so a transposed operand
//                    or a batch-broadcast one (stride 0) costs no copy. Used for small
//                    products, where packing would cost more than it saves (~10 GFLOP/s).
//   matmul_pack_a    copies A into panels of MR = 6 rows, k-major and zero-padded, when A
//                    is not row-major (a transposed A read in place would walk k with a
//                    stride of M floats, a 4 KiB stride that L1 cannot hold). A row-major A
//                    is read in place: 6 rows, each contiguous in k.
//   matmul_pack_b    copies B into panels of NR = 16 columns, k-major, zero-padded.
//   matmul_packed    each work-item owns a 12 x 128 block of C, computed as 6 x 16 blocks
//                    held in 12 float8 registers: per k, 2 vector loads, 6 broadcasts,
//                    12 multiply-adds. k runs in blocks of KC = 64 so the 2 A and 8 B
//                    sub-panels stay in L1 while each is reused (~200 GFLOP/s on 2 cores
//                    here; one 6 x 16 block per work-item over all of K reached ~100-120). 12 accumulators + 3 operands fit the
//                    16 registers of AVX2 (the target PoCL's LLVM picks here); plain
//                    a * b + c becomes an FMA, vload/fma builtins would be calls. Batch b
//                    reads A and B panel sets b / a_div and b / b_div: a broadcast operand
//                    (div = batch count) or grouped K/V heads (div = H / G) are packed once.
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

#define MR 6
#define NR 16

#define PACK_K 64       // k values one packing work-item copies


// --8<-- [start:matmul_pack]
__kernel void matmul_pack_a(__global const float *a, __global float *ap, const int M, const int K,
                            const int a_batch, const int a_row, const int a_col)
{
    const int k0 = get_global_id(0) * PACK_K, panel = get_global_id(1), batch = get_global_id(2);
    if (k0 >= K) return;
    const int k1 = min(K, k0 + PACK_K), rows = min(MR, M - panel * MR);
    const long mp = (M + MR - 1) / MR * MR;                       // rows padded to whole panels
    __global const float *src = a + (long)batch * a_batch + (long)panel * MR * a_row;
    __global float *dst = ap + ((long)batch * mp + (long)panel * MR) * K;
    for (int k = k0; k < k1; ++k)
        for (int r = 0; r < MR; ++r)
            dst[k * MR + r] = r < rows ? src[(long)r * a_row + (long)k * a_col] : 0.0f;
}

__kernel void matmul_pack_b(__global const float *b, __global float *bp, const int N, const int K,
                            const int b_batch, const int b_row, const int b_col)
{
    const int k0 = get_global_id(0) * PACK_K, panel = get_global_id(1), batch = get_global_id(2);
    if (k0 >= K) return;
    const int k1 = min(K, k0 + PACK_K), cols = min(NR, N - panel * NR);
    const long np = (N + NR - 1) / NR * NR;
    __global const float *src = b + (long)batch * b_batch + (long)panel * NR * b_col;
    __global float *dst = bp + ((long)batch * np + (long)panel * NR) * K;
    if (cols == NR && b_col == 1) {
        // A full panel of a row-major B: copy rows as float8s (B may be a host array that is
        // only 16-byte aligned, hence the unaligned vector type).
        for (int k = k0; k < k1; ++k) {
            __global const float8u *row = (__global const float8u *)(src + (long)k * b_row);
            __global float8 *out = (__global float8 *)(dst + k * NR);
            out[0] = row[0];
            out[1] = row[1];
        }
        return;
    }
    for (int k = k0; k < k1; ++k)
        for (int c = 0; c < NR; ++c)
            dst[k * NR + c] = c < cols ? src[(long)k * b_row + (long)c * b_col] : 0.0f;
}
// --8<-- [end:matmul_pack]

#ifndef PANELS
#define PANELS 2        // A panels (of 6 rows) per work-item
#endif
#ifndef NPANELS
#define NPANELS 8       // B panels (of 16 columns) per work-item
#endif
#ifndef KC
#define KC 64           // k-block: the 2 A sub-panels (3 KB) stay in L1 across the 8 B ones (4 KB each)
#endif

// --8<-- [start:matmul_packed]
__kernel void matmul_packed(__global const float *a, __global const float *bp, __global float *c,
                            const int M, const int N, const int K,
                            const int a_set, const int a_panel, const int a_rs, const int a_ks,
                            const int a_div, const int b_div, const float alpha,
                            __global int *status, const int seq)
{
    // A element (m, k) of batch b sits at a[(b / a_div) * a_set + (m / 6) * a_panel
    // + (m % 6) * a_rs + k * a_ks]: packed panels (a_rs = 1, a_ks = 6) or a row-major
    // matrix read in place (a_rs = row stride, a_ks = 1). B is always packed.
    const int pg = get_global_id(0), ng = get_global_id(1), batch = get_global_id(2);
    const int m0 = pg * PANELS * MR, n0 = ng * NPANELS * NR;
    if (m0 >= M || n0 >= N) return;
    const int a_panels = min(PANELS, (M - m0 + MR - 1) / MR);
    const int b_panels = min(NPANELS, (N - n0 + NR - 1) / NR);
    const long np = (N + NR - 1) / NR * NR;
    __global const float *a0 = a + (long)(batch / a_div) * a_set + (long)(m0 / MR) * a_panel;
    __global const float *b0 = bp + ((long)(batch / b_div) * np + n0) * K;
    float8 part[PANELS][NPANELS][2 * MR];           // this work-item's C, between k-blocks
    for (int k0 = 0; k0 < K; k0 += KC) {
        const int k1 = min(K, k0 + KC);
        for (int t = 0; t < b_panels; ++t)
            for (int s = 0; s < a_panels; ++s) {
                int row[MR];                              // rows past M repeat the last one
                #pragma unroll
                for (int r = 0; r < MR; ++r) row[r] = min(r, M - m0 - s * MR - 1) * a_rs;
                float8 c0[MR], c1[MR];
                #pragma unroll
                for (int r = 0; r < MR; ++r) {
                    c0[r] = k0 ? part[s][t][2 * r] : (float8)(0.0f);
                    c1[r] = k0 ? part[s][t][2 * r + 1] : (float8)(0.0f);
                }
                __global const float *ak = a0 + (long)s * a_panel + (long)k0 * a_ks;
                __global const float *b = b0 + ((long)t * K + k0) * NR;
                for (int k = k0; k < k1; ++k, ak += a_ks, b += NR) {
                    const float8 bl = ((__global const float8 *)b)[0], bh = ((__global const float8 *)b)[1];
                    #pragma unroll
                    for (int r = 0; r < MR; ++r) {
                        const float ar = ak[row[r]];
                        c0[r] = ar * bl + c0[r];
                        c1[r] = ar * bh + c1[r];
                    }
                }
                #pragma unroll
                for (int r = 0; r < MR; ++r) {
                    part[s][t][2 * r] = c0[r];
                    part[s][t][2 * r + 1] = c1[r];
                }
            }
    }
    __global float *cb = c + (long)batch * M * N;
    int bad = 0;
    for (int s = 0; s < a_panels; ++s)
        for (int r = 0; r < MR && m0 + s * MR + r < M; ++r)
            for (int t = 0; t < b_panels; ++t) {
                __global float *crow = cb + (long)(m0 + s * MR + r) * N + n0 + t * NR;
                const float *acc = (const float *)&part[s][t][2 * r];
                for (int j = 0; j < NR && n0 + t * NR + j < N; ++j) {
                    const float v = alpha * acc[j];
                    crow[j] = v;
                    bad |= nonfinite_bits(v);
                }
            }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:matmul_packed]
