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

__kernel void rope_rotate(__global const float *x, __global float *y,
                          __global const float *cos_t, __global const float *sin_t,
                          const int t_len, const int dim, const int offset, const int pairing,
                          const float sign, __global int *status, const int seq)
{
    const int i = get_global_id(0), t = get_global_id(1), b = get_global_id(2);
    const int pairs = dim / 2;
    if (i >= pairs || t >= t_len) return;
    const long row = ((long)b * t_len + t) * dim;
    const int ia = pairing ? i : 2 * i;          // the pair's two features
    const int ib = pairing ? i + pairs : 2 * i + 1;
    const long at = (long)(offset + t) * pairs + i;
    const float c = cos_t[at], s = sign * sin_t[at];
    // --8<-- [start:rope_rotation]
    const float xa = x[row + ia], xb = x[row + ib];
    y[row + ia] = xa * c - xb * s;               // (xa, xb) rotated by the angle (offset + t) * theta_i
    y[row + ib] = xa * s + xb * c;
    // --8<-- [end:rope_rotation]
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(y[row + ia]) | nonfinite_bits(y[row + ib]));
}
