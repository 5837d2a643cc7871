"""``rope``: rotary position embedding on the last axis, and its gradient (``kernels/rope.cl``).
Float64 reference: :func:`netcl_lite.reference.rope`.

The cos/sin tables are computed once per (device, width, base) in float64, kept on
the device and grown when a longer position is asked for: a call uploads nothing.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..checks import one_of, positive_real
from ..core.tensor import Tensor
from .operands import OpCall, elements, f32, i32, int32_range, round_up, shape_of

PAIRINGS = ("interleaved", "half")


def rope_tables(t_len: int, dim: int, offset: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of angle (offset + t) · base^(-2i/d), shape (T, d/2), computed in float64.

    >>> c, s = rope_tables(2, 2, 0, 10000.0); float(s[1, 0])          # doctest: +ELLIPSIS
    0.841...
    """
    theta = base ** (-2.0 * np.arange(dim // 2) / dim)                  # (d/2,)
    angle = (offset + np.arange(t_len, dtype=np.float64))[:, None] * theta  # (T, d/2)
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


_tables: dict[tuple, tuple[int, Tensor, Tensor]] = {}


def _device_tables(queue, positions: int, dim: int, base: float) -> tuple[Tensor, Tensor]:
    """cos/sin for at least ``positions`` positions, cached on the device (capacity doubles)."""
    key = (queue.context.int_ptr, dim, base)
    have = _tables.get(key)
    if have is None or have[0] < positions:
        capacity = max(64, 1 << max(0, positions - 1).bit_length())
        cos_t, sin_t = rope_tables(capacity, dim, 0, base)
        have = _tables[key] = (capacity, Tensor.from_host(queue, cos_t), Tensor.from_host(queue, sin_t))
    return have[1], have[2]


def _check(x, offset, base, pairing):
    shape = shape_of(x)
    if len(shape) < 2:
        raise ValueError(f"x must be (..., T, d) with at least 2 axes, got shape {shape}")
    t_len, dim = shape[-2:]
    if dim % 2:
        raise ValueError(f"rope needs an even feature width d to form pairs, got d={dim}")
    one_of("pairing", pairing, PAIRINGS)
    if isinstance(offset, bool) or not isinstance(offset, numbers.Integral) or offset < 0:
        raise ValueError(f"offset must be a non-negative int (the position of row 0), got {offset!r}")
    positive_real("base", base)
    int32_range(elements=elements(shape), positions=int(offset) + t_len)
    return shape, t_len, dim


def rope(x, *, offset: int = 0, base: float = 10000.0, pairing: str = "interleaved", queue=None):
    """Rotate feature pairs of ``x`` ``(..., T, d)`` by position: row ``t`` is position ``offset + t``.

    Pair ``i`` (``0 <= i < d/2``) turns by angle ``(offset + t) · θ_i`` with
    ``θ_i = base^(-2i/d)``. ``pairing="interleaved"`` rotates ``(x[2i], x[2i+1])``
    (the RoFormer paper's convention); ``pairing="half"`` rotates ``(x[i], x[i+d/2])``
    (the rotate-half convention of GPT-NeoX and LLaMA code). The two give
    different results for the same weights: use the one a checkpoint was trained with.
    Scores of rotated queries and keys depend only on the offset ``n - m`` between
    their positions. ``offset`` lets a decoder rotate new rows at their true positions.

    >>> rope(np.array([[1.0, 0.0]]), offset=1, base=1.0).round(6)      # (cos 1, sin 1)
    array([[0.540302, 0.841471]], dtype=float32)
    """
    return _rotate("rope", x, offset, base, pairing, 1.0, queue)


def rope_backward(g, *, offset: int = 0, base: float = 10000.0, pairing: str = "interleaved"):
    """The gradient of :func:`rope`: the transpose of a rotation is the rotation by −θ."""
    return _rotate("rope backward", g, offset, base, pairing, -1.0, None)


def _rotate(name, x, offset, base, pairing, sign, queue):
    shape, t_len, dim = _check(x, offset, base, pairing)
    call = OpCall(name, queue=queue, x=x)
    tx = call.float_input("x")
    out = call.output(shape)
    if out.size:
        cos_t, sin_t = _device_tables(call.queue, int(offset) + t_len, dim, float(base))
        call.launch("rope.cl", "rope_rotate", (round_up(dim // 2, 8), round_up(t_len, 4), out.size // (t_len * dim)),
                    (8, 4, 1), tx.buffer, out.buffer, cos_t.buffer, sin_t.buffer, i32(t_len), i32(dim), i32(offset),
                    i32(PAIRINGS.index(pairing)), f32(sign), call.stream.status, call.seq)
    return call.result(out, check=[False])
