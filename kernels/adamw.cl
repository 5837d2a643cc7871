// adamw.cl: the optimizer's update and the global gradient norm, one pass over each tensor, up to
// MT tensors a launch.
//
// Kernels:
//   adamw_step          one fused AdamW update per element, in torch.optim.AdamW's order:
//                       p *= 1 - lr*wd (decoupled decay); m += (1 - b1)(g - m);
//                       v = b2 v + (1 - b2) g²; p -= step_size * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//                       with step_size = lr / (1 - b1^t). The host computes the scalars in float64.
//                       Reports inf or NaN in the new p, m or v (with b2 = 0.999 a gradient past
//                       ~6e20 overflows v, and p would then silently stop moving), under the
//                       tensor's own sequence number. When `gated`, it leaves everything as it
//                       is if the norm clip_coefficient wrote (gate[0]) is not finite: the step
//                       is dropped on the device, as a non-finite norm stops the host's loop,
//                       without a read-back in between; otherwise each gradient is multiplied by
//                       the clip coefficient (gate[1]) as it is read, the product scale_by would
//                       have stored, so the clipped gradients never make a pass of their own.
//   sum_squares         partial sums of g² over fixed chunks, one work-item per chunk (VW lane sums,
//                       then across the lanes), written to out[offset + chunk], tensor after
//                       tensor: no atomics, and the order of every sum is fixed.
//   clip_coefficient    one work-item: norm = sqrt(sum of the partials, in order) and the clip
//                       coefficient min(1, max_norm / (norm + 1e-6)), as torch's clip_grad_norm_.
//   scale_by            g *= coef[1]: applies the clip coefficient without reading it on the host
//                       (clip_grad_norm's waiting form; its device form leaves it to adamw_step).
//
// A training step updates every parameter tensor, and a launch costs more than updating a small
// one, so adamw_step, sum_squares and scale_by take up to MT tensors, each in its own buffers
// (slot i: p_i, g_i, ...; n_i elements). Tensor i owns a run of the grid from gs_i: work-groups
// (adamw_step, scale_by: a vector of VW elements per work-item, so a work-group's items share one
// tensor and its buffers) or work-items (sum_squares: one chunk each). The host passes an unused slot the
// first tensor's buffers and a run start past the grid.
#include "common.h"

// X(i) for each slot i < MT (MT = 8, 16 or 32): the kernels' per-tensor arguments and choices.
#define SLOTS_8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define SLOTS_16(X) SLOTS_8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define SLOTS_32(X) SLOTS_16(X) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) \
                    X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)
#ifndef MT
#define MT 16
#endif
#if MT == 8
#define SLOTS SLOTS_8
#elif MT == 16
#define SLOTS SLOTS_16
#elif MT == 32
#define SLOTS SLOTS_32
#else
#error "MT must be 8, 16 or 32"
#endif
#define ARG_P(i) , __global float *p##i
#define ARG_CG(i) , __global const float *g##i
#define ARG_G(i) , __global float *g##i
#define ARG_M(i) , __global float *m##i
#define ARG_V(i) , __global float *v##i
#define ARG_N(i) , const int n##i
#define ARG_GS(i) , const int gs##i
#define ARG_SEQ(i) , const int seq##i
#define ARG_DECAY(i) , const float decay##i
#define RUN(i) + (at >= gs##i)                  // counts the runs started by `at`: they ascend
#define PICK_P(i) t == i ? p##i :
#define PICK_G(i) t == i ? g##i :
#define PICK_M(i) t == i ? m##i :
#define PICK_V(i) t == i ? v##i :
#define PICK_N(i) t == i ? n##i :
#define PICK_GS(i) t == i ? gs##i :
#define PICK_SEQ(i) t == i ? seq##i :
#define PICK_DECAY(i) t == i ? decay##i :

// Element i0 .. i0 + VW - 1 of the launch's run for this work-item (one vector, VW = the device's lanes).
#define ELEMENT0 ((at - (SLOTS(PICK_GS) 0)) * get_local_size(0) + get_local_id(0)) * VW

__kernel void adamw_step(
    const int gated, __global const float *gate, const float one_minus_beta1, const float beta2,
    const float one_minus_beta2, const float step_size, const float bias2_sqrt, const float eps,
    __global int *status SLOTS(ARG_P) SLOTS(ARG_CG) SLOTS(ARG_M) SLOTS(ARG_V) SLOTS(ARG_N) SLOTS(ARG_GS)
    SLOTS(ARG_SEQ) SLOTS(ARG_DECAY))
{
    const int at = get_group_id(0);
    const int t = -1 SLOTS(RUN);
    const int n = SLOTS(PICK_N) 0;
    const int i0 = ELEMENT0;
    if (i0 >= n || (gated && nonfinite_bits(gate[0]))) return;
    const float coef = gated ? gate[1] : 1.0f;              // g * 1 is g: an ungated step reads g as it is
    __global float *p = (SLOTS(PICK_P) p0) + i0;
    __global const float *g = (SLOTS(PICK_G) g0) + i0;
    __global float *m = (SLOTS(PICK_M) m0) + i0;
    __global float *v = (SLOTS(PICK_V) v0) + i0;
    const float decay = SLOTS(PICK_DECAY) 1.0f;
    int bad = 0;
    if (i0 + VW <= n) {                                     // a whole vector: the common case
        const vecf gi = *(__global const vecfu *)g * coef, mo = *(__global vecfu *)m;
        const vecf mi = mo + one_minus_beta1 * (gi - mo);   // torch's lerp for a weight < 0.5
        const vecf vi = *(__global vecfu *)v * beta2 + one_minus_beta2 * gi * gi;
        const vecf denom = sqrt(vi) / bias2_sqrt + eps;
        const vecf p_new = *(__global vecfu *)p * decay - step_size * (mi / denom);
        *(__global vecfu *)m = mi;
        *(__global vecfu *)v = vi;
        *(__global vecfu *)p = p_new;
        bad = nonfinitev(p_new) | nonfinitev(mi) | nonfinitev(vi);
    } else {
        for (int e = 0; e < n - i0; ++e) {                  // the tensor's last, partial vector
            const float gi = g[e] * coef;
            const float mi = m[e] + one_minus_beta1 * (gi - m[e]);
            const float vi = v[e] * beta2 + one_minus_beta2 * gi * gi;
            const float denom = sqrt(vi) / bias2_sqrt + eps;
            const float p_new = p[e] * decay - step_size * (mi / denom);
            m[e] = mi;
            v[e] = vi;
            p[e] = p_new;
            bad |= nonfinite_bits(p_new) | nonfinite_bits(mi) | nonfinite_bits(vi);
        }
    }
    report(status, STATUS_NONFINITE, SLOTS(PICK_SEQ) 0, bad);
}

__kernel void sum_squares(const int chunk, __global float *out, const int offset
                          SLOTS(ARG_CG) SLOTS(ARG_N) SLOTS(ARG_GS))
{
    const int at = get_global_id(0);
    const int t = -1 SLOTS(RUN);
    const int c = at - (SLOTS(PICK_GS) 0), n = SLOTS(PICK_N) 0;
    const long start = (long)c * chunk;
    if (start >= n) return;                     // the grid's padding, past the last run
    __global const float *g = SLOTS(PICK_G) g0;
    const long end = start + chunk < n ? start + chunk : n;
    vecf lanes = (vecf)(0.0f);                  // VW running sums, then one across them
    long i = start;
    for (; i + VW <= end; i += VW) {
        const vecf x = *(__global const vecfu *)(g + i);
        lanes = x * x + lanes;
    }
    float acc = hsumv(lanes);
    for (; i < end; ++i) acc += g[i] * g[i];
    out[offset + at] = acc;
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

__kernel void scale_by(__global const float *coef SLOTS(ARG_G) SLOTS(ARG_N) SLOTS(ARG_GS))
{
    const int at = get_group_id(0);
    const int t = -1 SLOTS(RUN);
    const int n = SLOTS(PICK_N) 0;
    const int i0 = ELEMENT0;
    if (i0 >= n) return;
    __global float *g = (SLOTS(PICK_G) g0) + i0;
    const float c = coef[1];
    if (i0 + VW <= n) {
        *(__global vecfu *)g = *(__global vecfu *)g * c;
    } else {
        for (int e = 0; e < n - i0; ++e) g[e] = g[e] * c;
    }
}
