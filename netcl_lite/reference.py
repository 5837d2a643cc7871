"""Float64 NumPy references for every kernel: the math the kernels must match.

Each function mirrors one op in :mod:`netcl_lite.ops` with the same arguments
and conventions, written for clarity rather than speed. Tests compare the
OpenCL result in float32 against these in float64.
"""

from __future__ import annotations

import numpy as np


def matmul(a, b, *, transpose_a=False, transpose_b=False):
    """a: (..., M, K), b: (..., K, N) → (..., M, N) in float64."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return a @ b


def causal_mask(tq: int, tk: int) -> np.ndarray:
    """(Tq, Tk) boolean: query i sees key j when j <= i + (Tk - Tq) (queries aligned to the end)."""
    return np.arange(tk)[None, :] <= np.arange(tq)[:, None] + (tk - tq)


def softmax(x, *, mask=None, causal=False):
    """Row softmax over the last axis; blocked entries get 0. x: (..., Tq, Tk)."""
    x = np.asarray(x, np.float64)
    allowed = np.ones(x.shape, bool)
    if mask is not None:
        allowed = allowed & np.asarray(mask, bool)
    if causal:
        allowed = allowed & causal_mask(*x.shape[-2:])
    if x.size and not allowed.any(axis=-1).all():
        raise ValueError("all-masked row")
    z = np.where(allowed, x, -np.inf)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.where(allowed, np.exp(z), 0.0)
    return e / e.sum(axis=-1, keepdims=True)


def expand_groups(kv, heads: int):
    """(..., G, T, w) → (..., H, T, w): head h reads group h // (H // G)."""
    kv = np.asarray(kv, np.float64)
    if kv.ndim < 3:
        return kv
    return np.repeat(kv, heads // kv.shape[-3], axis=-3)


def attention(q, k, v, *, mask=None, causal=False, scale=None, return_weights=False):
    """softmax(q kᵀ · scale + mask) v. q: (..., H, Tq, d); k, v: (..., G, Tk, d|dv)."""
    q = np.asarray(q, np.float64)
    heads = q.shape[-3] if q.ndim >= 3 else 1
    k, v = expand_groups(k, heads), expand_groups(v, heads)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    weights = softmax(q @ np.swapaxes(k, -1, -2) * scale, mask=mask, causal=causal)
    out = weights @ v
    return (out, weights) if return_weights else out
