"""``attention``: dense scaled dot-product attention (the scores are materialized).

Large problems compute the scores and the weighted values on the packed GEMM of
``matmul.cl``; small ones use the one-entry-per-work-item kernels of ``attention.cl``
that the pages explain.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..core.kernels import get_kernel
from .masking import device_mask
from .operands import (
    check_float32_range,
    check_int_range,
    device_empty,
    f32,
    finish,
    i32,
    max_norm,
    pick_queue,
    round_up,
    shape_of,
    to_device,
)
from .matmul import gemm, packed_pays
from .softmax import launch_softmax_rows


def attention_shapes(sq, sk, sv):
    """Check q/k/v shapes; return (lead, heads, groups, Tq, Tk, d, dv).

    ``q`` is ``(..., H, Tq, d)``, ``k`` is ``(..., G, Tk, d)`` and ``v`` is
    ``(..., G, Tk, dv)`` with ``G`` dividing ``H`` (grouped-query attention;
    ``G == H`` is ordinary multi-head, ``G == 1`` multi-query). 2-D inputs are one head.
    """
    sq, sk, sv = tuple(sq), tuple(sk), tuple(sv)
    if len(sq) < 2 or len(sk) != len(sq) or len(sv) != len(sq):
        raise ValueError(f"q, k, v must have the same number (>= 2) of axes, got q {sq}, k {sk}, v {sv}")
    tq, d = sq[-2:]
    tk, dk = sk[-2:]
    tv, dv = sv[-2:]
    if d != dk:
        raise ValueError(f"q {sq} and k {sk} must share the last axis (the key width d)")
    if tk != tv or sk[:-2] != sv[:-2]:
        raise ValueError(f"k {sk} and v {sv} must agree on every axis but the last")
    if d == 0:
        raise ValueError(f"key width d must be positive, got q {sq}")
    heads = sq[-3] if len(sq) >= 3 else 1
    groups = sk[-3] if len(sk) >= 3 else 1
    if sq[:-3] != sk[:-3] or groups == 0 or heads % groups:
        raise ValueError(
            f"q {sq} and k {sk} must share their batch axes, and k's head axis (G={groups}) must divide "
            f"q's (H={heads}): head h reads K/V group h // (H // G)"
        )
    return sq[:-2], heads, groups, tq, tk, d, dv


def check_attention_args(q, k, v, causal, scale):
    """Shapes, ``causal`` and ``scale`` of an attention call → (lead, H, G, Tq, Tk, d, dv, scale)."""
    lead, heads, groups, tq, tk, d, dv = attention_shapes(shape_of("q", q), shape_of("k", k), shape_of("v", v))
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not math.isfinite(scale):
        raise ValueError(f"scale must be a finite real number, got {scale!r}")
    n_batch = int(np.prod(lead, dtype=np.int64))
    check_int_range(q_elements=n_batch * tq * d, out_elements=n_batch * tq * dv, k_elements=n_batch * tk * max(d, dv))
    if tk == 0 and n_batch * tq:
        raise ValueError(f"k has no keys (shape {shape_of('k', k)}): every query row would be all-masked")
    check_float32_range("a score |q·k|·scale", max_norm(q, -1), max_norm(k, -1), abs(scale),
                        hint="rescale q or k, or pass a smaller scale")
    return lead, heads, groups, tq, tk, d, dv, float(scale)


def attention(q, k, v, *, mask=None, causal: bool = False, scale=None, return_weights: bool = False, queue=None):
    """softmax(q kᵀ · scale + mask) v, with the ``Tq × Tk`` weights stored on the device.

    Shapes: ``q (..., H, Tq, d)``, ``k (..., G, Tk, d)``, ``v (..., G, Tk, dv)`` →
    ``(..., H, Tq, dv)``; the output width is ``dv``, which equals ``d`` only
    when chosen so. ``scale`` defaults to ``1/sqrt(d)``. ``mask`` is boolean,
    True = allowed, broadcastable to ``(..., H, Tq, Tk)``. ``causal=True`` lets
    query ``i`` see key ``j`` when ``j <= i + (Tk - Tq)`` (queries aligned to the
    last keys, as in cached decoding). A query with no allowed key raises
    ``ValueError`` naming it. With ``return_weights=True`` also returns the
    ``(..., H, Tq, Tk)`` weights.

    >>> out = attention(q, k, v, causal=True)                # doctest: +SKIP
    """
    lead, heads, groups, tq, tk, d, dv, scale = check_attention_args(q, k, v, causal, scale)
    n_batch = int(np.prod(lead, dtype=np.int64))
    check_int_range(scores=n_batch * tq * tk)
    cq, return_tensor = pick_queue(q, k, v, queue=queue)
    mask_buf, use_mask, strides = device_mask(cq, mask, lead, tq, tk, causal)
    tq_, tk_, tv_ = to_device(cq, "q", q), to_device(cq, "k", k), to_device(cq, "v", v)
    out = device_empty(cq, tuple(lead) + (tq, dv))
    weights = device_empty(cq, tuple(lead) + (tq, tk))
    if n_batch * tq:
        scores = device_empty(cq, weights.shape)
        div = heads // groups                  # head b reads K/V group b // (H / G)
        fast = packed_pays(tq, tk, d) and (not dv or packed_pays(tq, dv, tk))
        if fast:                               # S = scale · q kᵀ on the packed GEMM
            gemm(cq, tq_.buffer, tk_.buffer, scores.buffer, tq, tk, d, n_batch,
                 (tq * d, d, 1), (tk * d, 1, d), 1, div, alpha=scale)
        else:
            get_kernel(cq.context, "attention.cl", "attention_scores")(
                cq, (round_up(tk, 16), round_up(tq, 4), n_batch), (16, 4, 1),
                tq_.buffer, tk_.buffer, scores.buffer, i32(tq), i32(tk), i32(d), i32(heads), i32(groups), f32(scale),
            )
        launch_softmax_rows(cq, scores, weights, n_batch, tq, tk, mask_buf, use_mask, strides, causal)
        if dv and fast:                        # O = P v
            gemm(cq, weights.buffer, tv_.buffer, out.buffer, tq, dv, tk, n_batch,
                 (tq * tk, tk, 1), (tk * dv, dv, 1), 1, div)
        elif dv:
            get_kernel(cq.context, "attention.cl", "attention_apply")(
                cq, (round_up(dv, 16), round_up(tq, 4), n_batch), (16, 4, 1),
                weights.buffer, tv_.buffer, out.buffer, i32(tq), i32(tk), i32(dv), i32(heads), i32(groups),
            )
        cq.finish()  # the scores and mask buffers die with this frame
    out = finish(out, return_tensor, tv_.abs_max)  # a convex combination of values
    return (out, finish(weights, return_tensor, 1.0)) if return_weights else out
