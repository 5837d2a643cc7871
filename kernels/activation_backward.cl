// activation_backward.cl: gradients of SiLU and SwiGLU, elementwise.
//
// Kernels (one work-item per element):
//   silu_backward    dx = g * s * (1 + x (1 - s)) with s = sigmoid(x); d/dx of x * sigmoid(x).
//   swiglu_backward  y = silu(gate) * up: dgate = g * up * silu'(gate), dup = g * silu(gate),
//                    both in one pass so the sigmoid is computed once.
#include "common.h"

// 1 / (1 + e^-x): for x << 0, e^-x overflows to +inf and the quotient is 0, the right limit.
inline float bwd_sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

__kernel void silu_backward(
    __global const float *x, __global const float *g, __global float *dx, const int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const float s = bwd_sigmoid(x[i]);
    dx[i] = g[i] * s * (1.0f + x[i] * (1.0f - s));
}

__kernel void swiglu_backward(
    __global const float *gate, __global const float *up, __global const float *g,
    __global float *dgate, __global float *dup, const int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const float a = gate[i], s = bwd_sigmoid(a);
    dgate[i] = g[i] * up[i] * s * (1.0f + a * (1.0f - s));
    dup[i] = g[i] * a * s;
}
