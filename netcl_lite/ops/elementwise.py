"""Pointwise ops: ``silu``, ``swiglu``, ``add``, ``mul`` (``kernels/elementwise.cl``)."""

from __future__ import annotations

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

_LOCAL = 64


def _launch(q, name, n, *args):
    if n:
        get_kernel(q.context, "elementwise.cl", name)(q, (round_up(n, _LOCAL),), (_LOCAL,), *args)


def silu(x, *, queue=None):
    """``x * sigmoid(x)`` elementwise (any shape).

    >>> silu(np.array([0.0, 1.0]))                           # doctest: +SKIP
    array([0.       , 0.7310586], dtype=float32)
    """
    shape = tuple(shape_of("x", x))
    check_int_range(elements=int(np.prod(shape, dtype=np.int64)))
    q, return_tensor = pick_queue(x, queue=queue)
    tx = to_device(q, "x", x)
    out = device_empty(q, shape)
    _launch(q, "silu_forward", out.size, tx.buffer, out.buffer, i32(out.size))
    return finish(out, return_tensor, tx.abs_max)  # |silu(x)| <= |x|


def swiglu(gate, up, *, queue=None):
    """``silu(gate) * up`` elementwise: the SwiGLU feed-forward gate. Same shapes.

    >>> swiglu(np.array([1.0]), np.array([2.0]))             # doctest: +SKIP
    array([1.4621172], dtype=float32)
    """
    sg, su = tuple(shape_of("gate", gate)), tuple(shape_of("up", up))
    if sg != su:
        raise ValueError(f"gate {sg} and up {su} must have the same shape")
    check_int_range(elements=int(np.prod(sg, dtype=np.int64)))
    check_float32_range("|silu(gate) * up|", max_abs(gate), max_abs(up), hint="rescale gate or up")
    q, return_tensor = pick_queue(gate, up, queue=queue)
    tg, tu = to_device(q, "gate", gate), to_device(q, "up", up)
    out = device_empty(q, sg)
    _launch(q, "swiglu_forward", out.size, tg.buffer, tu.buffer, out.buffer, i32(out.size))
    return finish(out, return_tensor, bound(tg.abs_max, tu.abs_max))


def _binary(name, kernel, a, b, queue):
    sa, sb = tuple(shape_of("a", a)), tuple(shape_of("b", b))
    if len(sb) > len(sa) or sa[len(sa) - len(sb):] != sb:
        raise ValueError(
            f"{name}: b {sb} must have a's shape {sa} or a suffix of it (b is broadcast over a's leading axes)"
        )
    n = int(np.prod(sa, dtype=np.int64))
    nb = int(np.prod(sb, dtype=np.int64))
    check_int_range(elements=n)
    if name == "mul":
        check_float32_range("|a * b|", max_abs(a), max_abs(b), hint="rescale a or b")
    else:
        ma, mb = max_abs(a), max_abs(b)
        check_float32_range("|a + b|", None if ma is None or mb is None else ma + mb, hint="rescale a or b")
    q, return_tensor = pick_queue(a, b, queue=queue)
    ta, tb = to_device(q, "a", a), to_device(q, "b", b)
    out = device_empty(q, sa)
    if nb:
        _launch(q, kernel, n, ta.buffer, tb.buffer, out.buffer, i32(n), i32(nb))
    if name == "mul":
        return finish(out, return_tensor, bound(ta.abs_max, tb.abs_max))
    return finish(out, return_tensor, bound(ta.abs_max, plus=tb.abs_max))


def add(a, b, *, queue=None):
    """``a + b``; ``b`` has ``a``'s shape or a suffix of it (a bias, a residual).

    >>> add(np.zeros((2, 3)), np.arange(3.0))                # doctest: +SKIP
    array([[0., 1., 2.], [0., 1., 2.]], dtype=float32)
    """
    return _binary("add", "add_broadcast", a, b, queue)


def mul(a, b, *, queue=None):
    """``a * b``; ``b`` has ``a``'s shape or a suffix of it."""
    return _binary("mul", "mul_broadcast", a, b, queue)
