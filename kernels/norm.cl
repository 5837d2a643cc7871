// norm.cl: normalization over the last axis (rows of length n), forward and backward.
//
// Kernels:
//   rms_norm_rows               y = x / sqrt(mean(x^2) + eps) * w (RMSNorm: no centering, no bias),
//                               one work-item per row.
//   layer_norm_rows             y = (x - mean) / sqrt(var + eps) * w + b, with the variance taken
//                               over the centered values in a second pass (sum(x^2) - n mean^2
//                               cancels catastrophically when |mean| >> std).
//   rms_norm_backward_rows      one work-item per row: r = 1/sqrt(mean(x^2) + eps),
//                               dx = r (g*w) - x r^3 mean(g*w*x); stores r for the weight pass.
//   rms_norm_backward_weight    one work-item per column: dw_c = sum over rows of g x r
//                               (a column sum instead of atomics: deterministic).
//   layer_norm_backward_rows    one work-item per row: xhat = (x - mean) r, r = 1/sqrt(var + eps),
//                               dx = r (gw - mean(gw) - xhat mean(gw xhat)) with gw = g*w;
//                               stores mean and r for the parameter pass.
//   layer_norm_backward_params  one work-item per column: dw_c = sum of g xhat, db_c = sum of g.
#include "common.h"

// --8<-- [start:rms_norm_rows]
__kernel void rms_norm_rows(__global const float *x, __global const float *w, __global float *y,
                            const int rows, const int dim, const float eps, __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xr = x + (long)r * dim;
    __global float *yr = y + (long)r * dim;
    float ss = 0.0f;
    for (int c = 0; c < dim; ++c) ss += xr[c] * xr[c];
    const float inv = rsqrt(ss / dim + eps);
    int bad = 0;
    for (int c = 0; c < dim; ++c) {
        yr[c] = xr[c] * inv * w[c];
        bad |= nonfinite_bits(yr[c]);
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:rms_norm_rows]

// --8<-- [start:layer_norm_rows]
__kernel void layer_norm_rows(__global const float *x, __global const float *w, __global const float *bias,
                              __global float *y, const int rows, const int dim, const float eps,
                              __global int *status, const int seq)
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
    int bad = 0;
    for (int c = 0; c < dim; ++c) {
        yr[c] = (xr[c] - mean) * inv * w[c] + bias[c];
        bad |= nonfinite_bits(yr[c]);
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:layer_norm_rows]

// --8<-- [start:rms_norm_backward_rows]
__kernel void rms_norm_backward_rows(
    __global const float *x, __global const float *w, __global const float *g,
    __global float *dx, __global float *rstd, const int n_rows, const int n, const float eps,
    __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    __global const float *xr = x + (long)r * n;
    __global const float *gr = g + (long)r * n;
    float ss = 0.0f, dot = 0.0f;
    for (int c = 0; c < n; ++c) { ss += xr[c] * xr[c]; dot += gr[c] * w[c] * xr[c]; }
    const float inv = 1.0f / sqrt(ss / n + eps);
    const float coef = inv * inv * inv * dot / n;
    int bad = 0;
    for (int c = 0; c < n; ++c) {
        const float v = inv * gr[c] * w[c] - coef * xr[c];
        dx[(long)r * n + c] = v;
        bad |= nonfinite_bits(v);
    }
    rstd[r] = inv;
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:rms_norm_backward_rows]

__kernel void rms_norm_backward_weight(
    __global const float *x, __global const float *g, __global const float *rstd,
    __global float *dw, const int n_rows, const int n, __global int *status, const int seq)
{
    const int c = get_global_id(0);
    if (c >= n) return;
    float acc = 0.0f;
    for (int r = 0; r < n_rows; ++r) acc += g[(long)r * n + c] * x[(long)r * n + c] * rstd[r];
    dw[c] = acc;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(acc));
}

// --8<-- [start:layer_norm_backward_rows]
__kernel void layer_norm_backward_rows(
    __global const float *x, __global const float *w, __global const float *g,
    __global float *dx, __global float *mean_out, __global float *rstd,
    const int n_rows, const int n, const float eps, __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    __global const float *xr = x + (long)r * n;
    __global const float *gr = g + (long)r * n;
    float mu = 0.0f, var = 0.0f;
    for (int c = 0; c < n; ++c) mu += xr[c];
    mu /= n;
    for (int c = 0; c < n; ++c) var += (xr[c] - mu) * (xr[c] - mu);
    const float inv = 1.0f / sqrt(var / n + eps);
    float a = 0.0f, b = 0.0f;                       // mean(gw), mean(gw * xhat)
    for (int c = 0; c < n; ++c) {
        const float gw = gr[c] * w[c];
        a += gw;
        b += gw * (xr[c] - mu) * inv;
    }
    a /= n;
    b /= n;
    int bad = 0;
    for (int c = 0; c < n; ++c) {
        const float xhat = (xr[c] - mu) * inv;
        const float v = inv * (gr[c] * w[c] - a - xhat * b);
        dx[(long)r * n + c] = v;
        bad |= nonfinite_bits(v);
    }
    mean_out[r] = mu;
    rstd[r] = inv;
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:layer_norm_backward_rows]

__kernel void layer_norm_backward_params(
    __global const float *x, __global const float *g, __global const float *mean,
    __global const float *rstd, __global float *dw, __global float *db, const int n_rows, const int n,
    __global int *status, const int seq)
{
    const int c = get_global_id(0);
    if (c >= n) return;
    float aw = 0.0f, ab = 0.0f;
    for (int r = 0; r < n_rows; ++r) {
        const float gv = g[(long)r * n + c];
        aw += gv * (x[(long)r * n + c] - mean[r]) * rstd[r];
        ab += gv;
    }
    dw[c] = aw;
    db[c] = ab;
    report(status, STATUS_NONFINITE, seq, nonfinite_bits(aw) | nonfinite_bits(ab));
}
