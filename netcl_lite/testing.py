"""One checker for every kernel test: ``assert_close``.

Compares a float32 result with a float64 reference under
``|actual - expected| <= atol + rtol * |expected|``, treats entries the
reference marks as masked (NaN in ``expected`` with ``masked=True``) explicitly,
and on failure prints the worst and the first few mismatches.
"""

from __future__ import annotations

import numpy as np

#: float32 unit roundoff: 2**-24 ≈ 6.0e-8.
EPS32 = float(np.finfo(np.float32).eps) / 2


def assert_close(actual, expected, *, rtol, atol, what: str = "result", show: int = 5) -> None:
    """Raise ``AssertionError`` listing mismatches when ``actual`` strays from ``expected``.

    ``rtol`` and ``atol`` may be arrays broadcastable to the result, for bounds
    derived per entry (e.g. ``K * EPS32 * (|A| @ |B|)`` for a matrix product).
    """
    actual = np.asarray(actual)
    expected = np.asarray(expected, np.float64)
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {actual.shape} != expected {expected.shape}")
    if not np.isfinite(actual).all():
        bad = np.argwhere(~np.isfinite(actual))[:show].tolist()
        raise AssertionError(f"{what}: non-finite values at {bad}")
    err = np.abs(actual.astype(np.float64) - expected)
    limit = atol + rtol * np.abs(expected)
    bad = np.argwhere(err > limit)
    if bad.size:
        worst = np.unravel_index(np.argmax(err - limit), err.shape)
        lines = [
            f"  at {tuple(int(i) for i in idx)}: got {actual[tuple(idx)]!r}, expected {expected[tuple(idx)]!r}, "
            f"allowed ±{np.broadcast_to(limit, err.shape)[tuple(idx)]:.3g}"
            for idx in bad[:show]
        ]
        raise AssertionError(
            f"{what}: {len(bad)} of {err.size} entries differ beyond the stated tolerance "
            f"(worst at {tuple(int(i) for i in worst)}: |err|={err[worst]:.3g})\n" + "\n".join(lines)
        )


# Error bounds from float32 arithmetic (u = EPS32; a length-n sum of products
# carries at most about n·u relative error on the sum of |terms|).

def matmul_atol(a, b) -> np.ndarray:
    """Per-entry bound for a float32 product: (K + 2)·u·(|A| @ |B|)."""
    a = np.abs(np.asarray(a, np.float64))
    b = np.abs(np.asarray(b, np.float64))
    k = a.shape[-1]
    return (k + 2) * EPS32 * (a @ b) + 1e-30


def softmax_rtol(row_len: int) -> float:
    """Relative bound for softmax probabilities above float32 underflow.

    exp(z) with z = x - max: PoCL's exp is within 4 ulp, and z itself is exact
    to u·|z| with |z| ≤ 104 for any probability float32 can hold (e⁻¹⁰⁴ ≈ 7e-46);
    the row sum adds row_len·u; the final scaling 2 ulp.
    """
    return (104 + row_len + 8) * EPS32


def attention_atol(q, k, v, scale: float) -> np.ndarray:
    """Per-output-row bound for float32 attention.

    Score errors δ ≤ (d + 2)·u·scale·|q|·|k| perturb each weight by at most
    a relative 2·max δ, plus the softmax bound; the weighted sum of values adds
    (Tk + 2)·u. Everything is scaled by the largest |v| the row can see.
    """
    q = np.abs(np.asarray(q, np.float64))
    kk = np.abs(np.asarray(k, np.float64))
    vmax = np.abs(np.asarray(v, np.float64)).max(axis=(-1, -2), keepdims=True)
    heads = q.shape[-3] if q.ndim >= 3 else 1
    if kk.ndim >= 3:
        kk = np.repeat(kk, heads // kk.shape[-3], axis=-3)
        vmax = np.repeat(vmax, heads // vmax.shape[-3], axis=-3)
    d, tk = q.shape[-1], kk.shape[-2]
    delta = (d + 2) * EPS32 * abs(scale) * (q @ np.swapaxes(kk, -1, -2)).max(axis=-1, keepdims=True)
    return (4 * delta + softmax_rtol(tk) + (tk + 2) * EPS32) * vmax + 1e-30


def flash_lse_atol(q, k, scale: float) -> np.ndarray:
    """Bound for the per-row log-sum-exp (..., H, Tq) of flash attention.

    The row maximum carries the score error δ of ``attention_atol``; log l adds
    the normalizer's (Tk + 8)·u relative error; base-2 conversion of m and log2
    add a few ulp of |lse|.
    """
    q = np.abs(np.asarray(q, np.float64))
    kk = np.abs(np.asarray(k, np.float64))
    heads = q.shape[-3] if q.ndim >= 3 else 1
    if kk.ndim >= 3:
        kk = np.repeat(kk, heads // kk.shape[-3], axis=-3)
    d, tk = q.shape[-1], kk.shape[-2]
    delta = (d + 4) * EPS32 * abs(scale) * (q @ np.swapaxes(kk, -1, -2)).max(axis=-1)
    return 2 * delta + (tk + 8) * EPS32 + 1e-30


def rope_atol(x, pairing: str) -> np.ndarray:
    """Per-entry bound for a rotated pair: cos/sin rounded to float32 (u each), two
    products and a sum (3u) → 5u·(|x_a| + |x_b|) for both entries of the pair."""
    x = np.abs(np.asarray(x, np.float64))
    d = x.shape[-1]
    if pairing == "interleaved":
        pair = x[..., 0::2] + x[..., 1::2]
        both = np.repeat(pair, 2, axis=-1)
    else:
        pair = x[..., : d // 2] + x[..., d // 2:]
        both = np.concatenate([pair, pair], axis=-1)
    return 5 * EPS32 * both + 1e-38


def rms_norm_atol(x, weight, eps: float) -> np.ndarray:
    """Sum of D squares (D·u), rsqrt (≤ 2 ulp, halves the sum's error) and two products:
    (D/2 + 6)·u relative per entry; stated as (D + 8)·u for margin."""
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    rms = np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    return (d + 8) * EPS32 * np.abs(x) / rms * np.abs(np.asarray(weight, np.float64)) + 1e-38


def layer_norm_atol(x, weight, bias, eps: float) -> np.ndarray:
    """The mean carries D·u·mean|x| absolute error, which every centered value
    inherits; the variance sum and rsqrt add (D + 6)·u relative; the bias one ulp."""
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    mean = x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps)
    centered = np.abs(x - mean) + np.abs(x).mean(axis=-1, keepdims=True)
    w, b = np.abs(np.asarray(weight, np.float64)), np.abs(np.asarray(bias, np.float64))
    return (d + 8) * EPS32 * (centered / sigma * w + b) + 1e-38


#: silu = x / (1 + exp(-x)): exp within 4 ulp, one add, one divide → 8u relative;
#: swiglu one product more. Results below float32's normal range are compared absolutely.
SILU_RTOL = 8 * EPS32
SWIGLU_RTOL = 9 * EPS32
TINY = 1e-37
