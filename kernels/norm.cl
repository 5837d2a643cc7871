// norm.cl: normalization over the last axis (rows of length n), forward and backward.
// Rows are walked 8 lanes at a time (load8/store8 in common.h; PoCL would otherwise run one
// scalar per step), and every kernel reports a non-finite result to the status word.
//
// Kernels:
//   rms_norm_rows               y = x / sqrt(mean(x^2) + eps) * w (RMSNorm: no centering, no bias),
//                               one work-item per row.
//   layer_norm_rows             y = (x - mean) / sqrt(var + eps) * w + b, with the variance taken
//                               over the centered values in a second pass (sum(x^2) - n mean^2
//                               cancels catastrophically when |mean| >> std).
//   rms_norm_backward_rows      one work-item per row: r = 1/sqrt(mean(x^2) + eps),
//                               dx = r (g*w) - x r^3 mean(g*w*x) (+ acc, a gradient of x gathered
//                               so far, when add_acc); stores r for the weight pass.
//   rms_norm_backward_weight    one work-item per 8 columns and chunk of rows (second grid axis):
//                               the chunk's share of dw_c = sum over rows of g x r, written to its
//                               own row of partial sums, which the host joins in order with
//                               reduce.cl's sum_columns (no atomics: deterministic). One chunk
//                               writes dw itself. A single pass over every row ran on one core:
//                               the columns alone are too few work-items to share.
//   layer_norm_backward_rows    one work-item per row: xhat = (x - mean) r, r = 1/sqrt(var + eps),
//                               dx = r (gw - mean(gw) - xhat mean(gw xhat)) with gw = g*w;
//                               stores mean and r for the parameter pass.
//   layer_norm_backward_params  one work-item per 8 columns and chunk of rows, as rms_norm's:
//                               dw_c = sum of g xhat, db_c = sum of g.
#include "common.h"

// --8<-- [start:rms_norm_rows]
__kernel void rms_norm_rows(__global const float *x, __global const float *w, __global float *y,
                            const int rows, const int dim, const float eps, __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xr = x + (long)r * dim;
    __global float *yr = y + (long)r * dim;
    float8 ss = (float8)(0.0f);
    for (int c = 0; c < dim; c += 8) {
        const float8 v = load8(xr, c, dim);
        ss += v * v;
    }
    const float inv = 1.0f / sqrt(hsum8(ss) / dim + eps);
    int bad = 0;
    for (int c = 0; c < dim; c += 8) bad |= store8(yr, c, dim, load8(xr, c, dim) * inv * load8(w, c, dim));
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
    float8 s = (float8)(0.0f);
    for (int c = 0; c < dim; c += 8) s += load8(xr, c, dim);
    const float mean = hsum8(s) / dim;
    float8 var = (float8)(0.0f);
    for (int c = 0; c < dim; c += 8) {
        const int8 live = (int8)(c) + (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)(dim);
        const float8 d = load8(xr, c, dim) - mean;
        var += live ? d * d : (float8)(0.0f);
    }
    const float inv = 1.0f / sqrt(hsum8(var) / dim + eps);
    int bad = 0;
    for (int c = 0; c < dim; c += 8)
        bad |= store8(yr, c, dim, (load8(xr, c, dim) - mean) * inv * load8(w, c, dim) + load8(bias, c, dim));
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:layer_norm_rows]

// --8<-- [start:rms_norm_backward_rows]
__kernel void rms_norm_backward_rows(
    __global const float *x, __global const float *w, __global const float *g, __global const float *acc,
    const int add_acc, __global float *dx, __global float *rstd, const int n_rows, const int n, const float eps,
    __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= n_rows) return;
    __global const float *xr = x + (long)r * n;
    __global const float *gr = g + (long)r * n;
    __global const float *ar = acc + (long)r * n;
    float8 ss = (float8)(0.0f), dot = (float8)(0.0f);
    for (int c = 0; c < n; c += 8) {
        const float8 xv = load8(xr, c, n);
        ss += xv * xv;
        dot += load8(gr, c, n) * load8(w, c, n) * xv;
    }
    const float inv = 1.0f / sqrt(hsum8(ss) / n + eps);
    const float coef = inv * inv * inv * hsum8(dot) / n;
    int bad = 0;
    for (int c = 0; c < n; c += 8) {
        float8 d = inv * load8(gr, c, n) * load8(w, c, n) - coef * load8(xr, c, n);
        if (add_acc) d += load8(ar, c, n);
        bad |= store8(dx + (long)r * n, c, n, d);
    }
    rstd[r] = inv;
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:rms_norm_backward_rows]

__kernel void rms_norm_backward_weight(
    __global const float *x, __global const float *g, __global const float *rstd,
    __global float *dw, const int n_rows, const int n, const int chunk, __global int *status, const int seq)
{
    const int c = get_global_id(0) * 8, part = get_global_id(1);
    const int r0 = part * chunk, r1 = min(n_rows, r0 + chunk);
    if (c >= n) return;
    float8 acc = (float8)(0.0f);
    for (int r = r0; r < r1; ++r) acc += load8(g + (long)r * n, c, n) * load8(x + (long)r * n, c, n) * rstd[r];
    report(status, STATUS_NONFINITE, seq, store8(dw + (long)part * n, c, n, acc));
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
    float8 s = (float8)(0.0f);
    for (int c = 0; c < n; c += 8) s += load8(xr, c, n);
    const float mu = hsum8(s) / n;
    float8 var = (float8)(0.0f);
    for (int c = 0; c < n; c += 8) {
        const int8 live = (int8)(c) + (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)(n);
        const float8 d = load8(xr, c, n) - mu;
        var += live ? d * d : (float8)(0.0f);
    }
    const float inv = 1.0f / sqrt(hsum8(var) / n + eps);
    float8 a8 = (float8)(0.0f), b8 = (float8)(0.0f);        // sums of gw and gw * xhat
    for (int c = 0; c < n; c += 8) {
        const int8 live = (int8)(c) + (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)(n);
        const float8 gw = load8(gr, c, n) * load8(w, c, n);
        a8 += gw;
        b8 += live ? gw * (load8(xr, c, n) - mu) * inv : (float8)(0.0f);
    }
    const float a = hsum8(a8) / n, b = hsum8(b8) / n;
    int bad = 0;
    for (int c = 0; c < n; c += 8) {
        const float8 xhat = (load8(xr, c, n) - mu) * inv;
        bad |= store8(dx + (long)r * n, c, n, inv * (load8(gr, c, n) * load8(w, c, n) - a - xhat * b));
    }
    mean_out[r] = mu;
    rstd[r] = inv;
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:layer_norm_backward_rows]

__kernel void layer_norm_backward_params(
    __global const float *x, __global const float *g, __global const float *mean,
    __global const float *rstd, __global float *dw, __global float *db, const int n_rows, const int n,
    const int chunk, __global int *status, const int seq)
{
    const int c = get_global_id(0) * 8, part = get_global_id(1);
    const int r0 = part * chunk, r1 = min(n_rows, r0 + chunk);
    if (c >= n) return;
    float8 aw = (float8)(0.0f), ab = (float8)(0.0f);
    for (int r = r0; r < r1; ++r) {
        const float8 gv = load8(g + (long)r * n, c, n);
        aw += gv * (load8(x + (long)r * n, c, n) - mean[r]) * rstd[r];
        ab += gv;
    }
    report(status, STATUS_NONFINITE, seq, store8(dw + (long)part * n, c, n, aw) | store8(db + (long)part * n, c, n, ab));
}
