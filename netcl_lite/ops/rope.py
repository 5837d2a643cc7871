"""``rope``: rotary position embedding on the last axis, and its gradient (``kernels/rope.cl``);
``rope_heads``: the same rotation fused with the split into attention heads. Float64
references: :func:`netcl_lite.reference.rope`, :func:`netcl_lite.reference.rope_heads`.

The cos/sin tables are computed once per (device, width, base) in float64, kept on
the device and grown when a longer position is asked for: a call uploads nothing.
"""

from __future__ import annotations


import numpy as np

from ..checks import nonnegative_int, one_of, positive_int, positive_real
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


def device_tables(queue, positions: int, dim: int, base: float) -> tuple[Tensor, Tensor]:
    """The cos and sin tables for at least ``positions`` positions, as Tensors on ``queue``'s device.

    They are cached per context, dimension and base, and regrown to the next power of two
    (at least 64) when a longer sequence asks, so a decoding loop uploads them O(log T) times.
    ``rope`` and the decoder's fused layer both read them.
    """
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
    _check_rotation(shape, t_len, dim, offset, base, pairing)
    return shape, t_len, dim


def _check_rotation(shape, t_len, dim, offset, base, pairing):
    if dim % 2:
        raise ValueError(f"rope needs an even feature width d to form pairs, got d={dim}")
    one_of("pairing", pairing, PAIRINGS)
    nonnegative_int("offset", offset, "the position of row 0")
    positive_real("base", base)
    int32_range(elements=elements(shape), positions=int(offset) + t_len)


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


def rope_heads(x, heads: int, *, offset: int = 0, base: float = 10000.0, pairing: str = "interleaved",
               queue=None):
    """Split ``x`` ``(B, T, heads·d)`` into heads and rotate them: :func:`rope` of the
    ``(B, heads, T, d)`` layout attention reads, in one pass (no separate copy for the split).

    Each head's ``d`` features are rotated as :func:`rope` rotates a row of width ``d``.

    >>> x = np.arange(8.0).reshape(1, 1, 8)                            # one position, two heads of 4
    >>> rope_heads(x, 2, offset=0).shape, np.array_equal(rope_heads(x, 2)[0, 1, 0], x[0, 0, 4:])
    ((1, 2, 1, 4), True)
    """
    shape, t_len, dim = _check_heads(x, heads, offset, base, pairing)
    b = shape[0]
    return _rotate_layout("rope_heads", x, (b, heads, t_len, dim), t_len, dim, heads, b, offset, base, pairing, 1.0,
                          (t_len * heads * dim, dim, heads * dim), (heads * t_len * dim, t_len * dim, dim), queue)


def rope_heads_backward(g, *, offset: int = 0, base: float = 10000.0, pairing: str = "interleaved"):
    """The gradient of :func:`rope_heads`: ``g`` ``(B, heads, T, d)`` rotated by −θ and merged
    back to ``(B, T, heads·d)``."""
    shape = shape_of(g)
    if len(shape) != 4:
        raise ValueError(f"g must be (B, heads, T, d), got shape {shape}")
    b, heads, t_len, dim = shape
    _check(g, offset, base, pairing)
    return _rotate_layout("rope_heads backward", g, (b, t_len, heads * dim), t_len, dim, heads, b, offset, base,
                          pairing, -1.0, (heads * t_len * dim, t_len * dim, dim), (t_len * heads * dim, dim, heads * dim),
                          None)


def _check_heads(x, heads, offset, base, pairing):
    shape = shape_of(x)
    if len(shape) != 3:
        raise ValueError(f"x must be (B, T, heads·d), got shape {shape}")
    positive_int("heads", heads)
    b, t_len, width = shape
    if width % heads:
        raise ValueError(f"x's width {width} must be divisible by heads={heads} (head width d = width / heads)")
    _check_rotation(shape, t_len, width // heads, offset, base, pairing)
    return shape, t_len, width // heads


def _rotate(name, x, offset, base, pairing, sign, queue):
    shape, t_len, dim = _check(x, offset, base, pairing)
    rows = elements(shape) // (t_len * dim) if t_len and dim else 0
    row = (t_len * dim, 0, dim)
    return _rotate_layout(name, x, shape, t_len, dim, 1, rows, offset, base, pairing, sign, row, row, queue)


def _rotate_layout(name, x, out_shape, t_len, dim, heads, batch, offset, base, pairing, sign, x_strides, y_strides,
                   queue):
    """Launch ``rope_rotate`` over ``batch`` × ``heads`` × ``t_len`` rows of ``dim`` features, row
    (b, h, t) at b·s[0] + h·s[1] + t·s[2] elements in ``x`` (strides ``x_strides``) and in the
    output (``y_strides``)."""
    call = OpCall(name, queue=queue, x=x)
    tx = call.float_input("x")
    out = call.output(out_shape)
    if out.size:
        cos_t, sin_t = device_tables(call.queue, int(offset) + t_len, dim, float(base))
        call.launch("rope.cl", "rope_rotate", (round_up(t_len, 16), heads, batch), (16, 1, 1),
                    tx.buffer, out.buffer, cos_t.buffer, sin_t.buffer, i32(t_len), i32(dim), i32(offset),
                    i32(PAIRINGS.index(pairing)), f32(sign), *map(np.int64, x_strides), *map(np.int64, y_strides),
                    call.stream.status, call.seq)
    return call.result(out, check=[False])
