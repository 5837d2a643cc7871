// norm_backward.cl: gradients of RMSNorm and LayerNorm over the last axis (rows of length n).
//
// Kernels (each gradient in two passes so that no two work-items write one address):
//   rms_norm_backward_rows      one work-item per row: r = 1/sqrt(mean(x^2) + eps),
//                               dx = r (g*w) - x r^3 mean(g*w*x); stores r for the weight pass.
//   rms_norm_backward_weight    one work-item per column: dw_c = sum over rows of g x r
//                               (a column sum instead of atomics).
//   layer_norm_backward_rows    one work-item per row: xhat = (x - mean) r, r = 1/sqrt(var + eps),
//                               dx = r (gw - mean(gw) - xhat mean(gw xhat)) with gw = g*w;
//                               stores mean and r for the parameter pass.
//   layer_norm_backward_params  one work-item per column: dw_c = sum of g xhat, db_c = sum of g.
#include "common.h"

// --8<-- [start:rms_norm_backward_rows]
__kernel void rms_norm_backward_rows(
    __global const float *x, __global const float *w, __global const float *g,
    __global float *dx, __global float *rstd, const int n_rows, const int n, const float eps)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    __global const float *xr = x + (long)r * n;
    __global const float *gr = g + (long)r * n;
    float ss = 0.0f, dot = 0.0f;
    for (int c = 0; c < n; ++c) { ss += xr[c] * xr[c]; dot += gr[c] * w[c] * xr[c]; }
    const float inv = 1.0f / sqrt(ss / n + eps);
    const float coef = inv * inv * inv * dot / n;
    for (int c = 0; c < n; ++c) dx[(long)r * n + c] = inv * gr[c] * w[c] - coef * xr[c];
    rstd[r] = inv;
}
// --8<-- [end:rms_norm_backward_rows]

__kernel void rms_norm_backward_weight(
    __global const float *x, __global const float *g, __global const float *rstd,
    __global float *dw, const int n_rows, const int n)
{
    const int c = get_global_id(0);
    if (c >= n) return;
    float acc = 0.0f;
    for (int r = 0; r < n_rows; ++r) acc += g[(long)r * n + c] * x[(long)r * n + c] * rstd[r];
    dw[c] = acc;
}

// --8<-- [start:layer_norm_backward_rows]
__kernel void layer_norm_backward_rows(
    __global const float *x, __global const float *w, __global const float *g,
    __global float *dx, __global float *mean_out, __global float *rstd,
    const int n_rows, const int n, const float eps)
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
    for (int c = 0; c < n; ++c) {
        const float xhat = (xr[c] - mu) * inv;
        dx[(long)r * n + c] = inv * (gr[c] * w[c] - a - xhat * b);
    }
    mean_out[r] = mu;
    rstd[r] = inv;
}
// --8<-- [end:layer_norm_backward_rows]

__kernel void layer_norm_backward_params(
    __global const float *x, __global const float *g, __global const float *mean,
    __global const float *rstd, __global float *dw, __global float *db, const int n_rows, const int n)
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
}
