"""``rms_norm`` and ``layer_norm`` over the last axis (``kernels/norm.cl``)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..core.kernels import get_kernel
from .operands import (
    bound,
    check_int_range,
    device_empty,
    f32,
    finish,
    i32,
    pick_queue,
    round_up,
    shape_of,
    to_device,
)

_LOCAL = 16


def _check(x, params, eps):
    shape = tuple(shape_of("x", x))
    if len(shape) == 0 or shape[-1] == 0:
        raise ValueError(f"x must have a non-empty last axis to normalize over, got shape {shape}")
    for name, p in params.items():
        sp = tuple(shape_of(name, p))
        if sp != shape[-1:]:
            raise ValueError(f"{name} must have shape {shape[-1:]} (x's last axis), got {sp}")
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be a positive finite number (it keeps a zero row finite), got {eps!r}")
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    check_int_range(elements=rows * shape[-1])
    return shape, rows


def rms_norm(x, weight, *, eps: float = 1e-6, queue=None):
    """``x / sqrt(mean(x², axis=-1) + eps) * weight``; ``weight`` is ``(D,)``.

    >>> rms_norm(np.array([[3.0, 4.0]]), np.ones(2))         # doctest: +SKIP
    array([[0.8485281, 1.1313708]], dtype=float32)
    """
    shape, rows = _check(x, {"weight": weight}, eps)
    q, return_tensor = pick_queue(x, weight, queue=queue)
    tx, tw = to_device(q, "x", x), to_device(q, "weight", weight)
    out = device_empty(q, shape)
    if rows:
        get_kernel(q.context, "norm.cl", "rms_norm_rows")(
            q, (round_up(rows, _LOCAL),), (_LOCAL,), tx.buffer, tw.buffer, out.buffer, i32(rows), i32(shape[-1]), f32(eps)
        )
    # |x_i| / rms(x) <= sqrt(D), so the output is at most sqrt(D) max|weight|
    return finish(out, return_tensor, bound(math.sqrt(shape[-1]), tw.abs_max))


def layer_norm(x, weight, bias, *, eps: float = 1e-5, queue=None):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis (biased variance).

    >>> layer_norm(np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2))   # doctest: +SKIP
    array([[-0.999995,  0.999995]], dtype=float32)
    """
    shape, rows = _check(x, {"weight": weight, "bias": bias}, eps)
    q, return_tensor = pick_queue(x, weight, bias, queue=queue)
    tx, tw, tb = to_device(q, "x", x), to_device(q, "weight", weight), to_device(q, "bias", bias)
    out = device_empty(q, shape)
    if rows:
        get_kernel(q.context, "norm.cl", "layer_norm_rows")(
            q, (round_up(rows, _LOCAL),), (_LOCAL,),
            tx.buffer, tw.buffer, tb.buffer, out.buffer, i32(rows), i32(shape[-1]), f32(eps),
        )
    return finish(out, return_tensor, bound(math.sqrt(shape[-1]), tw.abs_max, plus=tb.abs_max))
