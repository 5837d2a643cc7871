// elementwise.cl: the pointwise ops of a transformer block, one work-item per element.
//
// Kernels:
//   silu_forward    y = x * sigmoid(x) = x / (1 + exp(-x)); for x << 0, exp(-x) = inf and
//                   y = -0, never NaN.
//   swiglu_forward  y = silu(gate) * up: the gated feed-forward unit (SwiGLU) in one pass.
//   add_broadcast   c = a + b where b's shape is a suffix of a's (bias, residual):
//                   b is read at i % nb, so nothing is copied to broadcast it.
//   mul_broadcast   c = a * b, the same broadcast (a norm's gain, a gate).
#include "common.h"

inline float silu1(float x) { return x / (1.0f + exp(-x)); }

__kernel void silu_forward(__global const float *x, __global float *y, const int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = silu1(x[i]);
}

// --8<-- [start:swiglu_forward]
__kernel void swiglu_forward(__global const float *gate, __global const float *up, __global float *y, const int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = silu1(gate[i]) * up[i];
}
// --8<-- [end:swiglu_forward]

__kernel void add_broadcast(__global const float *a, __global const float *b, __global float *c,
                            const int n, const int nb)
{
    const int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i % nb];
}

__kernel void mul_broadcast(__global const float *a, __global const float *b, __global float *c,
                            const int n, const int nb)
{
    const int i = get_global_id(0);
    if (i < n) c[i] = a[i] * b[i % nb];
}
