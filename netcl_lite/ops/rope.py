"""``rope``: rotary position embedding on the last axis (``kernels/rope.cl``)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..core.kernels import get_kernel
from .operands import (
    bound,
    check_float32_range,
    check_int_range,
    device_empty,
    finish,
    i32,
    max_abs,
    pick_queue,
    round_up,
    shape_of,
    to_device,
)

PAIRINGS = ("interleaved", "half")


def rope_tables(t_len: int, dim: int, offset: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of angle (offset + t) · base^(-2i/d), shape (T, d/2), computed in float64.

    >>> c, s = rope_tables(2, 2, 0, 10000.0); float(s[1, 0])          # doctest: +ELLIPSIS
    0.841...
    """
    theta = base ** (-2.0 * np.arange(dim // 2) / dim)                  # (d/2,)
    angle = (offset + np.arange(t_len, dtype=np.float64))[:, None] * theta  # (T, d/2)
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def rope(x, *, offset: int = 0, base: float = 10000.0, pairing: str = "interleaved", queue=None):
    """Rotate feature pairs of ``x`` ``(..., T, d)`` by position: row ``t`` is position ``offset + t``.

    Pair ``i`` (``0 <= i < d/2``) turns by angle ``(offset + t) · θ_i`` with
    ``θ_i = base^(-2i/d)``. ``pairing="interleaved"`` rotates ``(x[2i], x[2i+1])``
    (the RoFormer paper's convention); ``pairing="half"`` rotates ``(x[i], x[i+d/2])``
    (the rotate-half convention of GPT-NeoX and LLaMA code). The two give
    different results for the same weights: use the one a checkpoint was trained with.
    Scores of rotated queries and keys depend only on the offset ``n - m`` between
    their positions. ``offset`` lets a decoder rotate new rows at their true positions.

    >>> rope(np.array([[1.0, 0.0]]), offset=1, base=1.0)     # doctest: +SKIP
    array([[0.5403023, 0.841471 ]], dtype=float32)
    """
    shape = tuple(shape_of("x", x))
    if len(shape) < 2:
        raise ValueError(f"x must be (..., T, d) with at least 2 axes, got shape {shape}")
    t_len, dim = shape[-2:]
    if dim % 2:
        raise ValueError(f"rope needs an even feature width d to form pairs, got d={dim}")
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {PAIRINGS}, got {pairing!r}")
    if isinstance(offset, bool) or not isinstance(offset, numbers.Integral) or offset < 0:
        raise ValueError(f"offset must be a non-negative int (the position of row 0), got {offset!r}")
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not math.isfinite(base) or base <= 0:
        raise ValueError(f"base must be a positive finite number, got {base!r}")
    n_batch = int(np.prod(shape[:-2], dtype=np.int64))
    check_int_range(elements=n_batch * t_len * dim)
    check_float32_range("a rotated pair's coordinate", max_abs(x), 2.0, hint="rescale x")
    q, return_tensor = pick_queue(x, queue=queue)
    tx = to_device(q, "x", x)
    out = device_empty(q, shape)
    if out.size:
        cos_t, sin_t = (to_device(q, name, a) for name, a in zip(("cos", "sin"), rope_tables(t_len, dim, int(offset), float(base))))
        get_kernel(q.context, "rope.cl", "rope_rotate")(
            q, (round_up(dim // 2, 8), round_up(t_len, 4), n_batch), (8, 4, 1),
            tx.buffer, out.buffer, cos_t.buffer, sin_t.buffer, i32(t_len), i32(dim), i32(PAIRINGS.index(pairing)),
        )
        q.finish()  # the tables die with this frame
    return finish(out, return_tensor, bound(math.sqrt(2.0), tx.abs_max))  # a rotated pair keeps its norm
