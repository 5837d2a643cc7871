"""``attention``: dense scaled dot-product attention (the scores are materialized), and its
gradient. Float64 reference: :func:`netcl_lite.reference.attention`.

Large problems compute the scores and the weighted values on the packed GEMM of
``matmul.cl``; small ones use the one-entry-per-work-item kernels of ``attention.cl``
that the pages explain. The softmax between them is ``softmax.cl``'s.
"""

from __future__ import annotations

import math


from ..checks import finite_real, flag, int_in
from ..core.tensor import Tensor
from .attention_mask import AttentionMask
from .matmul import gemm, matmul, packed_pays
from .operands import OpCall, elements, i32, int32_range, round_up, shape_of, f32
from .softmax import launch_softmax_rows, softmax_backward


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


def check_attention_args(q, k, v, causal, scale, kv_length=None):
    """Shapes, ``causal``, ``scale`` and ``kv_length`` of an attention call →
    (lead, H, G, Tq, Tk, kv_rows, d, dv, scale): Tk keys are used, stored ``kv_rows`` apart."""
    lead, heads, groups, tq, kv_rows, d, dv = attention_shapes(shape_of(q), shape_of(k), shape_of(v))
    flag("causal", causal)
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    finite_real("scale", scale)
    tk = kv_rows
    if kv_length is not None:
        tk = int_in("kv_length", kv_length, 0, kv_rows + 1, "keys used of those stored")
    n_batch = elements(lead)
    int32_range(q_elements=n_batch * tq * d, out_elements=n_batch * tq * dv, k_elements=n_batch * kv_rows * max(d, dv))
    if tk == 0 and n_batch * tq:
        raise ValueError(f"k has no keys (shape {shape_of(k)}, kv_length={kv_length}): every query row would be all-masked")
    return lead, heads, groups, tq, tk, kv_rows, d, dv, float(scale)


def attention(q, k, v, *, mask=None, causal: bool = False, scale=None, return_weights: bool = False,
              kv_length=None, queue=None):
    """softmax(q kᵀ · scale + mask) v, with the ``Tq × Tk`` weights stored on the device.

    Shapes: ``q (..., H, Tq, d)``, ``k (..., G, Tk, d)``, ``v (..., G, Tk, dv)`` →
    ``(..., H, Tq, dv)``; the output width is ``dv``, which equals ``d`` only
    when chosen so. ``scale`` defaults to ``1/sqrt(d)``. ``mask`` is boolean,
    True = allowed, broadcastable to ``(..., H, Tq, Tk)``. ``causal=True`` lets
    query ``i`` see key ``j`` when ``j <= i + (Tk - Tq)`` (queries aligned to the
    last keys, as in cached decoding). A query with no allowed key raises
    ``ValueError`` naming it. ``kv_length`` uses only the first keys of ``k``/``v``
    (a KV cache's filled prefix). With ``return_weights=True`` also returns the
    ``(..., H, Tq, Tk)`` weights.

    >>> q = k = np.eye(2)
    >>> attention(q, k, np.array([[1.0, 0.0], [0.0, 1.0]]), causal=True, scale=1.0).round(6)
    array([[1.      , 0.      ],
           [0.268941, 0.731059]], dtype=float32)
    """
    out, weights, _ = attention_with_mask(q, k, v, mask=mask, causal=causal, scale=scale,
                                          kv_length=kv_length, queue=queue)
    return (out, weights) if return_weights else out


def attention_with_mask(q, k, v, *, mask=None, causal=False, scale=None, kv_length=None, queue=None):
    """:func:`attention` returning (out, weights, device mask) for a backward to reuse."""
    lead, heads, groups, tq, tk, kv_rows, d, dv, scale = check_attention_args(q, k, v, causal, scale, kv_length)
    n_batch = elements(lead)
    int32_range(scores=n_batch * tq * tk)
    call = OpCall("attention", queue=queue, q=q, k=k, v=v)
    m = AttentionMask(call.queue, mask, lead, tq, tk, causal)
    tq_, tk_, tv_ = call.float_input("q"), call.float_input("k"), call.float_input("v")
    out = call.output(tuple(lead) + (tq, dv))
    weights = call.output(tuple(lead) + (tq, tk))
    if n_batch * tq:
        scores = Tensor.empty(call.queue, weights.shape)     # an intermediate: device memory even for NumPy callers
        div = heads // groups                  # head b reads K/V group b // (H / G)
        fast = packed_pays(tq, tk, d) and (not dv or packed_pays(tq, dv, tk))
        if fast:                               # S = scale · q kᵀ on the packed GEMM
            gemm(call, tq_.buffer, tk_.buffer, scores.buffer, tq, tk, d, n_batch,
                 (tq * d, d, 1), (kv_rows * d, 1, d), 1, div, alpha=scale)
        else:
            call.launch("attention.cl", "attention_scores", (round_up(tk, 16), round_up(tq, 4), n_batch), (16, 4, 1),
                        tq_.buffer, tk_.buffer, scores.buffer, i32(tq), i32(tk), i32(kv_rows), i32(d),
                        i32(heads), i32(groups), f32(scale))
        launch_softmax_rows(call, scores, weights, n_batch, tq, tk, heads, m)
        if dv and fast:                        # O = P v
            gemm(call, weights.buffer, tv_.buffer, out.buffer, tq, dv, tk, n_batch,
                 (tq * tk, tk, 1), (kv_rows * dv, dv, 1), 1, div)
        elif dv:
            call.launch("attention.cl", "attention_apply", (round_up(dv, 16), round_up(tq, 4), n_batch), (16, 4, 1),
                        weights.buffer, tv_.buffer, out.buffer, i32(tq), i32(tk), i32(kv_rows), i32(dv),
                        i32(heads), i32(groups), call.stream.status, call.seq)
    out, weights = call.result(out, weights, check=[False, False])
    return out, weights, m


def _grouped(t, groups_first: int, rows: int):
    """(..., H, T, w) viewed as (outer·G, (H/G)·T, w): the heads sharing one K/V group are adjacent."""
    return t.reshape(groups_first, rows, t.shape[-1])


def attention_backward(g, q, k, v, p, scale: float, needs=(True, True, True)):
    """(dq, dk, dv) of dense attention from its stored weights ``p`` (Tensors).

    dV = Pᵀ dO, dP = dO Vᵀ, dS = scale · P ∘ (dP − rowsum(dP ∘ P)), dQ = dS K,
    dK = dSᵀ Q. With the heads of a group viewed as one taller matrix, each is a
    single batched matmul, and grouped-query sums come for free.
    """
    lead, heads, groups, tq, tk, _, _ = attention_shapes(q.shape, k.shape, v.shape)
    nkv = elements(lead) // heads * groups
    rows = heads // groups * tq
    g3, p3 = _grouped(g, nkv, rows), _grouped(p, nkv, rows)
    q3, k3, v3 = _grouped(q, nkv, rows), _grouped(k, nkv, tk), _grouped(v, nkv, tk)
    dv = matmul(p3, g3, transpose_a=True).reshape(v.shape) if needs[2] else None
    ds = softmax_backward(p3, matmul(g3, v3, transpose_b=True), scale)
    dq = matmul(ds, k3).reshape(q.shape) if needs[0] else None
    dk = matmul(ds, q3, transpose_a=True).reshape(k.shape) if needs[1] else None
    return dq, dk, dv
