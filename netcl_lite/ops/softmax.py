"""``softmax`` over the last axis with a mask, ``apply_mask``, and the softmax gradient
(``kernels/softmax.cl``). Float64 reference: :func:`netcl_lite.reference.softmax`.
"""

from __future__ import annotations

from ..checks import flag
from .attention_mask import AttentionMask
from .operands import OpCall, device_operand, elements, f32, i32, int32_range, round_up, shape_of


def _rows(name, x, causal):
    shape = shape_of(x)
    if len(shape) == 0:
        raise ValueError(f"{name}: x must have at least one axis (the one softmax normalizes)")
    flag("causal", causal)
    rows_shape = shape if len(shape) >= 2 else (1,) + shape
    lead, tq, tk = rows_shape[:-2], rows_shape[-2], rows_shape[-1]
    int32_range(elements=elements(rows_shape))
    return shape, lead, tq, tk


def softmax(x, *, mask=None, causal: bool = False, queue=None):
    """Softmax over the last axis of ``x`` (shape ``(..., Tq, Tk)``; 1-D is one row).

    ``mask`` is boolean, True = allowed, broadcastable to ``x``'s shape; blocked
    entries get probability 0. ``causal=True`` also blocks key ``j > i + (Tk - Tq)``.
    A row with no allowed entry raises ``ValueError`` naming it: it has no
    defined softmax, and returning NaN or a uniform row would hide the bug.

    >>> import numpy as np
    >>> softmax(np.array([[0.0, np.log(3.0)]])).round(6)
    array([[0.25, 0.75]], dtype=float32)
    """
    return softmax_with_mask(x, mask=mask, causal=causal, queue=queue)[0]


def softmax_with_mask(x, *, mask=None, causal: bool = False, queue=None):
    """:func:`softmax` that also returns the device mask, for a backward to reuse."""
    shape, lead, tq, tk = _rows("softmax", x, causal)
    if tk == 0 and elements(shape):
        raise ValueError(f"softmax: x has shape {shape}: rows of length 0 have no softmax")
    call = OpCall("softmax", queue=queue, x=x)
    m = AttentionMask(call.queue, mask, lead, tq, tk, causal)
    tx = call.float_input("x")
    out = call.output(shape)
    launch_softmax_rows(call, tx, out, elements(lead), tq, tk, lead[-1] if lead else 1, m)
    return call.result(out, check=[False]), m


def launch_softmax_rows(call: OpCall, x, y, n_batch: int, tq: int, tk: int, heads: int, mask: AttentionMask) -> None:
    """Run ``masked_softmax_rows`` over ``n_batch * tq`` rows of length ``tk``."""
    rows = n_batch * tq
    if rows and tk:
        call.launch("softmax.cl", "masked_softmax_rows", (round_up(rows, 16),), (16,),
                    x.buffer, y.buffer, *mask.kernel_args, i32(rows), i32(tq), i32(tk), i32(heads),
                    call.stream.status, call.seq)
        call.stream.keep(mask)


def apply_mask(x, *, mask=None, causal: bool = False, queue=None):
    """``x`` with ``-inf`` wherever ``mask``/``causal`` blocks an entry: the logits a masked
    softmax sees. Its output is meant to hold ``-inf``, so it is not checked for non-finite values.

    >>> import numpy as np
    >>> apply_mask(np.zeros((2, 2)), causal=True)
    array([[  0., -inf],
           [  0.,   0.]], dtype=float32)
    """
    shape, lead, tq, tk = _rows("apply_mask", x, causal)
    call = OpCall("apply_mask", queue=queue, x=x)
    m = AttentionMask(call.queue, mask, lead, tq, tk, causal)
    tx = call.float_input("x")
    out = call.output(shape)
    rows = elements(lead) * tq
    if rows and tk:
        call.launch("softmax.cl", "apply_mask_rows", (round_up(tk, 16), rows), (16, 1),
                    tx.buffer, out.buffer, *m.kernel_args, i32(rows), i32(tq), i32(tk), i32(lead[-1] if lead else 1))
        call.stream.keep(m)
    return call.result(out, check=[False])


def softmax_backward(p, g, scale: float = 1.0):
    """``scale · p ∘ (g − rowsum(g ∘ p))``: the gradient of a row softmax with output ``p`` (Tensors)."""
    p = device_operand("softmax backward", "p", p)
    g = device_operand("softmax backward", "g", g)
    if tuple(p.shape) != tuple(g.shape):        # the kernel reads both to the length of p's rows
        raise ValueError(f"softmax backward: p {tuple(p.shape)} and g {tuple(g.shape)} must have the same shape")
    call = OpCall("softmax backward", p=p, g=g)
    n = p.shape[-1] if p.shape else 1
    rows = p.size // max(n, 1)
    dx = call.output(p.shape)
    if rows:
        call.launch("softmax.cl", "softmax_backward_rows", (round_up(rows, 16),), (16,),
                    p.buffer, g.buffer, dx.buffer, i32(rows), i32(n), f32(scale), call.stream.status, call.seq)
    return call.result(dx, check=[False])
