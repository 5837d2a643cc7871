// norm.cl: normalization over the last axis, one work-item per row.
//
// Kernels:
//   rms_norm_rows    y = x / sqrt(mean(x^2) + eps) * w  (RMSNorm: no centering, no bias).
//   layer_norm_rows  y = (x - mean) / sqrt(var + eps) * w + b, with the variance taken
//                    over the centered values in a second pass (sum(x^2) - n mean^2
//                    cancels catastrophically when |mean| >> std).
#include "common.h"

// --8<-- [start:rms_norm_rows]
__kernel void rms_norm_rows(__global const float *x, __global const float *w, __global float *y,
                            const int rows, const int dim, const float eps)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xr = x + (long)r * dim;
    __global float *yr = y + (long)r * dim;
    float ss = 0.0f;
    for (int c = 0; c < dim; ++c) ss += xr[c] * xr[c];
    const float inv = rsqrt(ss / dim + eps);
    for (int c = 0; c < dim; ++c) yr[c] = xr[c] * inv * w[c];
}
// --8<-- [end:rms_norm_rows]

// --8<-- [start:layer_norm_rows]
__kernel void layer_norm_rows(__global const float *x, __global const float *w, __global const float *bias,
                              __global float *y, const int rows, const int dim, const float eps)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xr = x + (long)r * dim;
    __global float *yr = y + (long)r * dim;
    float sum = 0.0f;
    for (int c = 0; c < dim; ++c) sum += xr[c];
    const float mean = sum / dim;
    float var = 0.0f;
    for (int c = 0; c < dim; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    const float inv = rsqrt(var / dim + eps);
    for (int c = 0; c < dim; ++c) yr[c] = (xr[c] - mean) * inv * w[c] + bias[c];
}
// --8<-- [end:layer_norm_rows]
