// adamw.cl: the optimizer's update and the global gradient norm, one pass over each tensor.
//
// Kernels:
//   adamw_step          one fused AdamW update per element, in torch.optim.AdamW's order:
//                       p *= 1 - lr*wd (decoupled decay); m += (1 - b1)(g - m);
//                       v = b2 v + (1 - b2) g²; p -= step_size * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//                       with step_size = lr / (1 - b1^t). The host computes the scalars in float64.
//                       Reports inf or NaN in the new p, m or v (with b2 = 0.999 a gradient past
//                       ~6e20 overflows v, and p would then silently stop moving).
//   sum_squares_chunks  partial sums of g² over fixed chunks, one work-item per chunk, written to
//                       out[offset + chunk]: no atomics, and the order of every sum is fixed.
//   clip_coefficient    one work-item: norm = sqrt(sum of the partials, in order) and the clip
//                       coefficient min(1, max_norm / (norm + 1e-6)), as torch's clip_grad_norm_.
//   scale_by            g *= coef[1]: applies the clip coefficient without reading it on the host.
#include "common.h"

__kernel void adamw_step(
    __global float *p, __global const float *g, __global float *m, __global float *v, const int n,
    const float decay, const float one_minus_beta1, const float beta2, const float one_minus_beta2,
    const float step_size, const float bias2_sqrt, const float eps, __global int *status, const int seq)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const float gi = g[i];
    const float mi = m[i] + one_minus_beta1 * (gi - m[i]);       // torch's lerp for a weight < 0.5
    const float vi = v[i] * beta2 + one_minus_beta2 * gi * gi;
    const float denom = sqrt(vi) / bias2_sqrt + eps;
    const float p_new = p[i] * decay - step_size * (mi / denom);
    m[i] = mi;
    v[i] = vi;
    p[i] = p_new;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(p_new) | nonfinite_bits(mi) | nonfinite_bits(vi));
}

__kernel void sum_squares_chunks(__global const float *g, const int n, const int chunk,
                                 __global float *out, const int offset)
{
    const int c = get_global_id(0);
    const long start = (long)c * chunk;
    if (start >= n) return;
    const long end = start + chunk < n ? start + chunk : n;
    float acc = 0.0f;
    for (long i = start; i < end; ++i) acc += g[i] * g[i];
    out[offset + c] = acc;
}

__kernel void clip_coefficient(__global const float *partials, const int n, const float max_norm,
                               __global float *out)
{
    if (get_global_id(0) != 0) return;
    float total = 0.0f;
    for (int i = 0; i < n; ++i) total += partials[i];
    const float norm = sqrt(total);
    const float coef = max_norm / (norm + 1e-6f);
    out[0] = norm;
    out[1] = coef < 1.0f ? coef : 1.0f;
}

__kernel void scale_by(__global float *g, const int n, __global const float *coef)
{
    const int i = get_global_id(0);
    if (i < n) g[i] = g[i] * coef[1];
}
