// elementwise.cl: the pointwise ops of a transformer block and their gradients, one
// work-item per element. Every kernel reports a non-finite result to the queue's status
// word itself (report() in common.h), so no separate pass re-reads its output.
//
// Kernels:
//   binary_broadcast  c = a op b for op in + - * / where b's shape is a suffix of a's (a
//                   bias, a residual, a gain, a scalar): a (rows, nb) grid, b read at the
//                   column index, so nothing is copied to broadcast it.
//   scale           y = alpha * x (negation, the mean's 1/n).
//   exp_forward     y = exp(x); exp(-inf) = 0, so masked scores may go in.
//   silu_forward    y = x * sigmoid(x) = x / (1 + exp(-x)); for x << 0, exp(-x) = inf and
//                   y = -0, never NaN.
//   swiglu_forward  y = silu(gate) * up: the gated feed-forward unit (SwiGLU) in one pass.
//   silu_backward   dx = g * s * (1 + x (1 - s)) with s = sigmoid(x).
//   swiglu_backward dgate = g * up * silu'(gate), dup = g * silu(gate), one pass for both.
#include "common.h"

// op: 0 add, 1 sub, 2 mul, 3 div (one branch that every work-item takes the same way).
__kernel void binary_broadcast(__global const float *a, __global const float *b, __global float *c,
                               const int nb, const int rows, const int op, __global int *status, const int seq)
{
    const int j = get_global_id(0), r = get_global_id(1);
    if (j >= nb || r >= rows) return;
    const long i = (long)r * nb + j;
    const float x = a[i], y = b[j];
    const float v = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
    c[i] = v;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(v));
}

__kernel void scale(__global const float *x, __global float *y, const int n, const float alpha,
                    __global int *status, const int seq)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = alpha * x[i];
    y[i] = v;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(v));
}

__kernel void exp_forward(__global const float *x, __global float *y, const int n,
                          __global int *status, const int seq)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = exp(x[i]);
    y[i] = v;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(v));
}

inline float sigmoid1(float x) { return 1.0f / (1.0f + exp(-x)); }   // x << 0: 1 / inf = 0, the limit
inline float silu1(float x) { return x / (1.0f + exp(-x)); }

__kernel void silu_forward(__global const float *x, __global float *y, const int n,
                           __global int *status, const int seq)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = silu1(x[i]);
    y[i] = v;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(v));
}

// --8<-- [start:swiglu_forward]
__kernel void swiglu_forward(__global const float *gate, __global const float *up, __global float *y,
                             const int n, __global int *status, const int seq)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = silu1(gate[i]) * up[i];
    y[i] = v;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(v));
}
// --8<-- [end:swiglu_forward]

__kernel void silu_backward(__global const float *x, __global const float *g, __global float *dx,
                            const int n, __global int *status, const int seq)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const float s = sigmoid1(x[i]);
    const float v = g[i] * s * (1.0f + x[i] * (1.0f - s));
    dx[i] = v;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(v));
}

__kernel void swiglu_backward(__global const float *gate, __global const float *up, __global const float *g,
                              __global float *dgate, __global float *dup, const int n,
                              __global int *status, const int seq)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const float a = gate[i], s = sigmoid1(a);
    const float vg = g[i] * up[i] * s * (1.0f + a * (1.0f - s)), vu = g[i] * a * s;
    dgate[i] = vg;
    dup[i] = vu;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(vg) | nonfinite_bits(vu));
}
