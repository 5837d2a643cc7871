// elementwise.cl: the pointwise ops of a transformer block and their gradients. Each
// work-item handles 8 consecutive elements as one float8 (the SwiGLU kernels: one vector of the
// device's lanes; PoCL would otherwise run one scalar per work-item), with exp inline (exp8 in common.h: PoCL calls exp() out of line),
// and reports a non-finite result to the queue's status word itself, so no separate pass
// re-reads its output.
//
// Kernels:
//   binary_broadcast  c = a op b for op in + - * / where b's shape is a suffix of a's (a
//                     bias, a residual, a gain, a scalar): b is read at index i % nb, so
//                     nothing is copied to broadcast it.
//   scale             y = alpha * x (negation, the mean's 1/n).
//   exp_forward       y = exp(x); exp(-inf) = 0, so masked scores may go in.
//   silu_forward      y = x * sigmoid(x) = x / (1 + exp(-x)); for x << 0, exp(-x) = inf and
//                     y = -0, never NaN.
//   swiglu_forward    y = silu(gate) * up: the gated feed-forward unit (SwiGLU) in one pass.
//   silu_backward     dx = g * s * (1 + x (1 - s)) with s = sigmoid(x).
//   swiglu_backward   dgate = g * up * silu'(gate), dup = g * silu(gate), one pass for both.
#include "common.h"

// b's 8 lanes for a's elements i0 .. i0 + 7, broadcast over a's leading axes.
ALWAYS_INLINE float8 load8_broadcast(__global const float *b, long i0, long n, int nb) {
    if (nb == 1) return (float8)(b[0]);
    if (nb % 8 == 0 && i0 + 8 <= n) return *(__global const float8u *)(b + i0 % nb);
    lanes8f l;
    for (int k = 0; k < 8; ++k) l.s[k] = b[(i0 + k) % nb];
    return l.v;
}

// op: 0 add, 1 sub, 2 mul, 3 div (one branch that every work-item takes the same way).
__kernel void binary_broadcast(__global const float *a, __global const float *b, __global float *c,
                               const int n, const int nb, const int op, __global int *status, const int seq)
{
    const long i0 = (long)get_global_id(0) * 8;
    if (i0 >= n) return;
    const float8 x = load8(a, i0, n), y = load8_broadcast(b, i0, n, nb);
    const float8 v = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
    report(status, STATUS_NONFINITE, seq, store8(c, i0, n, v));
}

__kernel void scale(__global const float *x, __global float *y, const int n, const float alpha,
                    __global int *status, const int seq)
{
    const long i0 = (long)get_global_id(0) * 8;
    if (i0 >= n) return;
    report(status, STATUS_NONFINITE, seq, store8(y, i0, n, alpha * load8(x, i0, n)));
}

__kernel void exp_forward(__global const float *x, __global float *y, const int n,
                          __global int *status, const int seq)
{
    const long i0 = (long)get_global_id(0) * 8;
    if (i0 >= n) return;
    report(status, STATUS_NONFINITE, seq, store8(y, i0, n, exp8(load8(x, i0, n))));
}

ALWAYS_INLINE float8 sigmoid8(float8 x) { return 1.0f / (1.0f + exp8(-x)); }   // x << 0: 1 / inf = 0
ALWAYS_INLINE float8 silu8(float8 x) { return x / (1.0f + exp8(-x)); }

__kernel void silu_forward(__global const float *x, __global float *y, const int n,
                           __global int *status, const int seq)
{
    const long i0 = (long)get_global_id(0) * 8;
    if (i0 >= n) return;
    report(status, STATUS_NONFINITE, seq, store8(y, i0, n, silu8(load8(x, i0, n))));
}

// The SwiGLU kernels take vectors of the device's lanes (VW, from the host) rather than float8:
// at the widths of a feed-forward layer they run on every step of training.
// exp8 (common.h) on VW lanes; n + 1.5 * 2^23's bits less 1.5 * 2^23's are the whole n as an int
// (an inline conversion: PoCL calls convert_int16 out of line).
#define WHOLE_TO_INT(n) (as_veci((n) + 12582912.0f) - as_veci((vecf)(12582912.0f)))
DEFINE_EXP(expv, vecf, veci, as_vecf, WHOLE_TO_INT)

// One vector of p from i0, lanes past n read as 0 / left unwritten.
ALWAYS_INLINE vecf loadv(__global const float *p, long i0, long n) {
    if (i0 + VW <= n) return *(__global const vecfu *)(p + i0);
    lanesf l;
    for (int k = 0; k < VW; ++k) l.s[k] = i0 + k < n ? p[i0 + k] : 0.0f;
    return l.v;
}
ALWAYS_INLINE int storev(__global float *p, long i0, long n, vecf v) {
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

// --8<-- [start:swiglu_forward]
__kernel void swiglu_forward(__global const float *gate, __global const float *up, __global float *y,
                             const int n, __global int *status, const int seq)
{
    const long i0 = (long)get_global_id(0) * VW;
    if (i0 >= n) return;
    const vecf a = loadv(gate, i0, n);
    const vecf v = a / (1.0f + expv(-a)) * loadv(up, i0, n);         // silu(gate) * up
    report(status, STATUS_NONFINITE, seq, storev(y, i0, n, v));
}
// --8<-- [end:swiglu_forward]

__kernel void silu_backward(__global const float *x, __global const float *g, __global float *dx,
                            const int n, __global int *status, const int seq)
{
    const long i0 = (long)get_global_id(0) * 8;
    if (i0 >= n) return;
    const float8 xv = load8(x, i0, n), s = sigmoid8(xv);
    report(status, STATUS_NONFINITE, seq, store8(dx, i0, n, load8(g, i0, n) * s * (1.0f + xv * (1.0f - s))));
}

__kernel void swiglu_backward(__global const float *gate, __global const float *up, __global const float *g,
                              __global float *dgate, __global float *dup, const int n,
                              __global int *status, const int seq)
{
    const long i0 = (long)get_global_id(0) * VW;
    if (i0 >= n) return;
    const vecf a = loadv(gate, i0, n), s = 1.0f / (1.0f + expv(-a)), gv = loadv(g, i0, n);
    const int bad = storev(dgate, i0, n, gv * loadv(up, i0, n) * s * (1.0f + a * (1.0f - s)))
                  | storev(dup, i0, n, gv * a * s);
    report(status, STATUS_NONFINITE, seq, bad);
}
