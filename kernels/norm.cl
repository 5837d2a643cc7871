// norm.cl: normalization over the last axis (rows of length n), forward and backward.
// Rows are walked 8 lanes at a time (load8/store8 in common.h; PoCL would otherwise run one
// scalar per step), and every kernel reports a non-finite result to the status word. A row whose
// squares overflow float32 (|x| past ~1.8e19) is normalized from x scaled by a power of two
// (overflow_scale), so it gives the right answer instead of 1/sqrt(inf) = 0: a row of zeros that
// no non-finite flag would catch.
//
// Kernels:
//   rms_norm_rows               y = x / sqrt(mean(x^2) + eps) * w (RMSNorm: no centering, no bias),
//                               one work-item per row.
//   layer_norm_rows             y = (x - mean) / sqrt(var + eps) * w + b, with the variance taken
//                               over the centered values in a second pass (sum(x^2) - n mean^2
//                               cancels catastrophically when |mean| >> std).
//   rms_norm_backward_chunks    one work-item per chunk of rows, a row at a time: r = 1/sqrt(mean(x^2)
//                               + eps), dx = r (g*w) - x r^3 mean(g*w*x) (+ acc, a gradient of x
//                               gathered so far, when add_acc), and, from the row's g and x while
//                               they are in L1, the chunk's share of dw_c = sum over rows of g x r,
//                               summed in row order into its own row of partial sums, which the
//                               host joins in order with reduce.cl's sum_columns (no atomics:
//                               deterministic). One chunk writes dw itself.
//   layer_norm_backward_rows    one work-item per row: xhat = (x - mean) r, r = 1/sqrt(var + eps),
//                               dx = r (gw - mean(gw) - xhat mean(gw xhat)) with gw = g*w;
//                               stores mean and r for the parameter pass.
//   layer_norm_backward_params  one work-item per 8 columns and chunk of rows (second grid axis):
//                               dw_c = sum of g xhat, db_c = sum of g, each chunk's share written
//                               to its own row of partial sums, joined in order on the host.
#include "common.h"

// Rows whose squares overflow float32 (|x| past ~1.8e19) would give 1/sqrt(inf) = 0 and a row of
// zeros that no flag catches. Such a row is normalized from x * s instead, s a power of two that
// brings max |x| into [1, 2): scaling by it is exact, and the norm of x is the norm of x * s over s.
// 1 for a row holding inf or NaN (its result is non-finite and flagged) or only zeros.
ALWAYS_INLINE float overflow_scale(__global const float *xr, const int n) {
    float8 hi = (float8)(0.0f);
    for (int c = 0; c < n; c += 8) hi = fmax(hi, fabs(load8(xr, c, n)));
    const float amax = hmax8(hi);
    return isfinite(amax) && amax > 0.0f ? ldexp(1.0f, -ilogb(amax)) : 1.0f;
}

// sum over the row of (x s)^2
ALWAYS_INLINE float scaled_squares(__global const float *xr, const int n, const float s) {
    float8 ss = (float8)(0.0f);
    for (int c = 0; c < n; c += 8) {
        const float8 v = load8(xr, c, n) * s;
        ss += v * v;
    }
    return hsum8(ss);
}

// mean of x s over the row, and the sum of squares of its deviations (centered: sum(x^2) - n mean^2
// cancels catastrophically when |mean| >> std)
ALWAYS_INLINE float2 scaled_moments(__global const float *xr, const int n, const float s) {
    float8 sum = (float8)(0.0f);
    for (int c = 0; c < n; c += 8) sum += load8(xr, c, n) * s;
    const float mean = hsum8(sum) / n;
    float8 var = (float8)(0.0f);
    for (int c = 0; c < n; c += 8) {
        const int8 live = (int8)(c) + (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)(n);
        const float8 d = load8(xr, c, n) * s - mean;
        var += live ? d * d : (float8)(0.0f);
    }
    return (float2)(mean, hsum8(var));
}

// --8<-- [start:rms_norm_rows]
__kernel void rms_norm_rows(__global const float *x, __global const float *w, __global float *y,
                            const int rows, const int dim, const float eps, __global int *status, const int seq)
{
    const int r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xr = x + (long)r * dim;
    __global float *yr = y + (long)r * dim;
    float s = 1.0f, ss = scaled_squares(xr, dim, 1.0f);
    if (isinf(ss)) {                                                // squares past float32: scale x first
        s = overflow_scale(xr, dim);
        ss = scaled_squares(xr, dim, s);
    }
    const float inv = 1.0f / sqrt(ss / dim + eps * s * s);          // 1 / rms of x * s
    int bad = 0;
    for (int c = 0; c < dim; c += 8) bad |= store8(yr, c, dim, load8(xr, c, dim) * s * inv * load8(w, c, dim));
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
    float s = 1.0f;
    float2 mv = scaled_moments(xr, dim, 1.0f);                      // (mean, sum of squared deviations)
    if (isinf(mv.x) || isinf(mv.y)) {                               // past float32: scale x first
        s = overflow_scale(xr, dim);
        mv = scaled_moments(xr, dim, s);
    }
    const float inv = 1.0f / sqrt(mv.y / dim + eps * s * s);        // of x * s
    int bad = 0;
    for (int c = 0; c < dim; c += 8)
        bad |= store8(yr, c, dim, (load8(xr, c, dim) * s - mv.x) * inv * load8(w, c, dim) + load8(bias, c, dim));
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:layer_norm_rows]

// --8<-- [start:rms_norm_backward_chunks]
__kernel void rms_norm_backward_chunks(
    __global const float *x, __global const float *w, __global const float *g, __global const float *acc,
    const int add_acc, __global float *dx, __global float *dw, const int n_rows, const int n, const int chunk,
    const float eps, __global int *status, const int seq)
{
    const int part = get_global_id(0);
    const int r0 = part * chunk, r1 = min(n_rows, r0 + chunk);
    if (part > 0 && r0 >= n_rows) return;
    __global float *dwp = dw + (long)part * n;          // this chunk's partial sums of g x r
    for (int c = 0; c < n; c += 8) store8(dwp, c, n, (float8)(0.0f));
    int bad = 0;
    for (int r = r0; r < r1; ++r) {
        __global const float *xr = x + (long)r * n;
        __global const float *gr = g + (long)r * n;
        __global const float *ar = acc + (long)r * n;
        float s = 1.0f, ss = scaled_squares(xr, n, 1.0f);
        if (isinf(ss)) {                                            // as in the forward: scale x first
            s = overflow_scale(xr, n);
            ss = scaled_squares(xr, n, s);
        }
        float8 dot = (float8)(0.0f);
        for (int c = 0; c < n; c += 8) dot += load8(gr, c, n) * load8(w, c, n) * (load8(xr, c, n) * s);
        // With xs = x s and inv = 1 / rms(xs): dx = s inv (g w - xs inv^2 mean(g w xs)).
        const float inv = 1.0f / sqrt(ss / n + eps * s * s);
        const float coef = inv * inv * inv * hsum8(dot) / n;
        const float rstd = s * inv;
        for (int c = 0; c < n; c += 8) {
            const float8 gc = load8(gr, c, n), xc = load8(xr, c, n);
            float8 d = s * (inv * gc * load8(w, c, n) - coef * (xc * s));
            if (add_acc) d += load8(ar, c, n);
            bad |= store8(dx + (long)r * n, c, n, d);
            bad |= store8(dwp, c, n, load8(dwp, c, n) + gc * xc * rstd);
        }
    }
    report(status, STATUS_NONFINITE, seq, bad);
}
// --8<-- [end:rms_norm_backward_chunks]

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
    float s = 1.0f;
    float2 mv = scaled_moments(xr, n, 1.0f);                        // as in the forward: of x * s
    if (isinf(mv.x) || isinf(mv.y)) {
        s = overflow_scale(xr, n);
        mv = scaled_moments(xr, n, s);
    }
    const float mu = mv.x, inv = 1.0f / sqrt(mv.y / n + eps * s * s);
    float8 a8 = (float8)(0.0f), b8 = (float8)(0.0f);        // sums of gw and gw * xhat
    for (int c = 0; c < n; c += 8) {
        const int8 live = (int8)(c) + (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)(n);
        const float8 gw = load8(gr, c, n) * load8(w, c, n);
        a8 += gw;
        b8 += live ? gw * (load8(xr, c, n) * s - mu) * inv : (float8)(0.0f);
    }
    const float a = hsum8(a8) / n, b = hsum8(b8) / n;
    int bad = 0;
    for (int c = 0; c < n; c += 8) {
        const float8 xhat = (load8(xr, c, n) * s - mu) * inv;
        bad |= store8(dx + (long)r * n, c, n, s * inv * (load8(gr, c, n) * load8(w, c, n) - a - xhat * b));
    }
    mean_out[r] = mu / s;                                   // of x itself, for the parameter pass
    rstd[r] = s * inv;
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
