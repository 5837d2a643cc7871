// matmul.cl: batched C = A @ B in float32 with optional transposes (via strides).
//
// Kernels (one work-item per block of C, no barriers: on PoCL's CPU driver barriers
// force every live value through memory, so register blocking beats local tiling):
//   matmul_blocked   each work-item owns a 4x4 block of C; any M, N, K (edges masked);
//                    operands addressed by element strides, so a transposed operand
//                    or a batch-broadcast one (stride 0) costs no copy.
#include "common.h"

#define BM 4
#define BN 4

// --8<-- [start:matmul_blocked]
__kernel void matmul_blocked(
    __global const float *a, __global const float *b, __global float *c,
    const int M, const int N, const int K,
    const int a_batch, const int a_row, const int a_col,   // element strides of A
    const int b_batch, const int b_row, const int b_col,   // element strides of B
    const int c_batch)                                     // C is contiguous (M, N) per batch
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
    for (int i = 0; i < BM && m0 + i < M; ++i)
        for (int j = 0; j < BN && n0 + j < N; ++j) c[(m0 + i) * N + n0 + j] = acc[i][j];
}
// --8<-- [end:matmul_blocked]
