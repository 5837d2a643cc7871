// rope.cl: rotary position embedding (RoPE) applied to the last axis.
//
// Kernels:
//   rope_rotate  rotates each pair of features of row t by angle sign * (offset + t) * theta_i,
//                theta_i = base^(-2i/d). pairing 0 ("interleaved", RoFormer) pairs
//                (x[2i], x[2i+1]); pairing 1 ("half", GPT-NeoX/LLaMA code) pairs
//                (x[i], x[i + d/2]). cos and sin come from a (positions, d/2) table the
//                host computes once in float64 and keeps on the device: an angle like
//                8191 * 1.0 rad computed in float32 would already be off by ~5e-4.
//                sign = -1 turns the other way: the transpose of a rotation, i.e. the
//                backward pass, by the same kernel.
#include "common.h"

// 16 floats at any float address. A pointer, not vload16/vstore16: those are calls into PoCL's
// builtin library, and where PoCL compiles for AVX2 while linking its AVX-512 library (as LLVM 14
// does on CPUs it names znver3), a 512-bit vector crosses that call under two different ABIs.
typedef float16 float16u __attribute__((aligned(4)));

// One work-item per row of d features: row t of head h of batch entry b, read at
// x + b x_b + h x_h + t x_t and written at the same place under y's strides, so the rotation
// can also move a row between layouts (e.g. (B, T, H d) to (B, H, T, d)) in the same pass.
// A row per item, eight pairs per step, keeps work-groups large enough that PoCL's cost per
// work-group stays small beside the work (benchmarks/results/tried.md, "RoPE: a row per item").
__kernel void rope_rotate(__global const float *x, __global float *y,
                          __global const float *cos_t, __global const float *sin_t,
                          const int t_len, const int dim, const int offset, const int pairing, const float sign,
                          const long x_b, const long x_h, const long x_t, const long y_b, const long y_h,
                          const long y_t, __global int *status, const int seq)
{
    const int t = get_global_id(0), h = get_global_id(1), b = get_global_id(2);
    if (t >= t_len) return;
    const int pairs = dim / 2;
    __global const float *xr = x + b * x_b + h * x_h + t * x_t;
    __global float *yr = y + b * y_b + h * y_h + t * y_t;
    __global const float *cr = cos_t + (long)(offset + t) * pairs, *sr = sin_t + (long)(offset + t) * pairs;
    const int step = pairing ? 1 : 2, far = pairing ? pairs : 1;   // pair i: features i * step, i * step + far
    int bad = 0;
    int i = 0;
    // Eight pairs at a time: the halves' runs of 8 ("half"), or 16 features split into even
    // and odd lanes ("interleaved"); the rest one pair at a time below.
    for (; i + 8 <= pairs; i += 8) {
        const float8 c = vload8(0, cr + i), s = sign * vload8(0, sr + i);
        float8 xa, xb;
        if (pairing) {
            xa = vload8(0, xr + i);
            xb = vload8(0, xr + pairs + i);
        } else {
            const float16 v = *(__global const float16u *)(xr + 2 * i);
            xa = v.even;
            xb = v.odd;
        }
        const float8 ya = xa * c - xb * s, yb = xa * s + xb * c;
        if (pairing) {
            vstore8(ya, 0, yr + i);
            vstore8(yb, 0, yr + pairs + i);
        } else {
            float16 v;
            v.even = ya;
            v.odd = yb;
            *(__global float16u *)(yr + 2 * i) = v;
        }
        bad |= any8(nonfinite8(ya) | nonfinite8(yb));
    }
    for (; i < pairs; ++i) {
        const int ia = i * step, ib = ia + far;
        const float c = cr[i], s = sign * sr[i];
        // --8<-- [start:rope_rotation]
        const float xa = xr[ia], xb = xr[ib];
        const float ya = xa * c - xb * s;        // (xa, xb) rotated by the angle (offset + t) * theta_i
        const float yb = xa * s + xb * c;
        // --8<-- [end:rope_rotation]
        yr[ia] = ya;
        yr[ib] = yb;
        bad |= nonfinite_bits(ya) | nonfinite_bits(yb);
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
