"""``softmax``: numerically stable row softmax over the last axis, with a mask."""

from __future__ import annotations

import numpy as np

from ..core.kernels import get_kernel
from ..core.tensor import Tensor
from .masking import device_mask
from .operands import check_int_range, finish, i32, pick_queue, round_up, shape_of, to_device


def launch_softmax_rows(q, x: Tensor, y: Tensor, n_batch: int, tq: int, tk: int, mask_buf, use_mask, strides, causal):
    """Run ``masked_softmax_rows`` over ``n_batch * tq`` rows of length ``tk``."""
    rows = n_batch * tq
    kernel = get_kernel(q.context, "softmax.cl", "masked_softmax_rows")
    kernel(
        q, (round_up(rows, 16),), (16,), x.buffer, y.buffer, mask_buf, i32(use_mask),
        i32(strides[0]), i32(strides[1]), i32(strides[2]), i32(causal), i32(rows), i32(tq), i32(tk),
    )


def softmax(x, *, mask=None, causal: bool = False, queue=None):
    """Softmax over the last axis of ``x`` (shape ``(..., Tq, Tk)``; 1-D is one row).

    ``mask`` is boolean, True = allowed, broadcastable to ``x``'s shape; blocked
    entries get probability 0. ``causal=True`` also blocks key ``j > i + (Tk - Tq)``.
    A row with no allowed entry raises ``ValueError`` naming it: it has no
    defined softmax, and returning NaN or a uniform row would hide the bug.

    >>> softmax(np.array([[0.0, np.log(3.0)]]))              # doctest: +SKIP
    array([[0.25, 0.75]], dtype=float32)
    """
    shape = tuple(shape_of("x", x))
    if len(shape) == 0:
        raise ValueError("x must have at least one axis (the one softmax normalizes)")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    rows_shape = shape if len(shape) >= 2 else (1,) + shape
    lead, tq, tk = rows_shape[:-2], rows_shape[-2], rows_shape[-1]
    n_batch = int(np.prod(lead, dtype=np.int64))
    if tk == 0 and n_batch * tq:
        raise ValueError(f"x has shape {shape}: rows of length 0 have no softmax")
    check_int_range(elements=n_batch * tq * tk)
    q, return_tensor = pick_queue(x, queue=queue)
    mask_buf, use_mask, strides = device_mask(q, mask, lead, tq, tk, causal)
    tx = to_device(q, "x", x)
    out = Tensor.empty(q, shape)
    if out.size:
        launch_softmax_rows(q, tx, out, n_batch, tq, tk, mask_buf, use_mask, strides, causal)
    result = finish(out, return_tensor, 1.0)
    del mask_buf
    return result
