"""Pointwise ops and their gradients (``kernels/elementwise.cl``): ``add``, ``sub``, ``mul``,
``div``, ``scale``, ``exp``, ``silu``, ``swiglu``. Float64 references: the functions of
the same names in :mod:`netcl_lite.reference`.

The binary ops broadcast ``b`` over ``a``'s leading axes: ``b``'s shape is ``a``'s
or a suffix of it (a bias, a residual, a per-feature gain, a scalar).
"""

from __future__ import annotations


from ..core.kernels import vector_lanes
from .operands import OpCall, device_operand, elements, f32, i32, int32_range, round_up, shape_of
from .reduce import sum_to

BINARY = ("add", "sub", "mul", "div")     # binary_broadcast's op codes, in order


def _each(call: OpCall, kernel: str, n: int, *buffers, extra=()) -> None:
    """One work-item per 8 elements of an n-element output."""
    if n:
        call.launch("elementwise.cl", kernel, (round_up(-(-n // 8), 16),), (16,), *buffers, i32(n), *extra,
                    call.stream.status, call.seq)


def _each_vector(call: OpCall, kernel: str, n: int, *buffers) -> None:
    """One work-item per vector of the device's lanes of an n-element output."""
    if n:
        lanes = vector_lanes(call.queue.device)
        call.launch("elementwise.cl", kernel, (round_up(-(-n // lanes), 16),), (16,), *buffers, i32(n),
                    call.stream.status, call.seq, options=(f"-DVW={lanes}",))


def _binary(name: str, a, b, queue):
    sa, sb = shape_of(a), shape_of(b)
    scalar = elements(sb) == 1 and len(sb) <= len(sa)          # (), (1,), (1, 1): one value for every element
    if not scalar and (len(sb) > len(sa) or sa[len(sa) - len(sb):] != sb):
        raise ValueError(
            f"{name}: b {sb} must have a's shape {sa}, a suffix of it, or one element (b is broadcast over a)"
        )
    n, nb = elements(sa), elements(sb)
    int32_range(elements=n)
    call = OpCall(name, queue=queue, a=a, b=b)
    ta, tb = call.float_input("a"), call.float_input("b")
    out = call.output(sa)
    _each(call, "binary_broadcast", n, ta.buffer, tb.buffer, out.buffer, extra=(i32(nb), i32(BINARY.index(name))))
    return call.result(out, check=[False])


def add(a, b, *, queue=None):
    """``a + b``; ``b`` has ``a``'s shape or a suffix of it.

    >>> add(np.zeros((2, 3)), np.arange(3.0))
    array([[0., 1., 2.],
           [0., 1., 2.]], dtype=float32)
    """
    return _binary("add", a, b, queue)


def sub(a, b, *, queue=None):
    """``a - b``; ``b`` has ``a``'s shape or a suffix of it.

    >>> sub(np.ones(3), np.float32(0.5))
    array([0.5, 0.5, 0.5], dtype=float32)
    """
    return _binary("sub", a, b, queue)


def mul(a, b, *, queue=None):
    """``a * b``; ``b`` has ``a``'s shape or a suffix of it.

    >>> mul(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([10.0, 100.0]))
    array([[ 10., 200.],
           [ 30., 400.]], dtype=float32)
    """
    return _binary("mul", a, b, queue)


def div(a, b, *, queue=None):
    """``a / b``; ``b`` has ``a``'s shape or a suffix of it. Dividing by 0 is reported as an
    inf/NaN result (:class:`~netcl_lite.core.stream.NonFiniteError`), never returned. The
    kernels read a subnormal float (magnitude below 2⁻¹²⁶ ≈ 1.2e-38) as 0, so such a divisor
    counts as 0 too (:data:`~netcl_lite.core.kernels.COMMON_OPTIONS`).

    >>> div(np.array([1.0, 3.0]), np.array([2.0, 4.0]))
    array([0.5 , 0.75], dtype=float32)
    """
    return _binary("div", a, b, queue)


def _unary(name: str, kernel: str, x, queue, *extra):
    shape = shape_of(x)
    int32_range(elements=elements(shape))
    call = OpCall(name, queue=queue, x=x)
    tx = call.float_input("x")
    out = call.output(shape)
    _each(call, kernel, out.size, tx.buffer, out.buffer, extra=extra)
    return call.result(out, check=[False])


def scale(x, alpha: float, *, queue=None):
    """``alpha * x`` for a Python number ``alpha``.

    >>> scale(np.array([1.0, -2.0]), -0.5)
    array([-0.5,  1. ], dtype=float32)
    """
    return _unary("scale", "scale", x, queue, f32(alpha))


def exp(x, *, queue=None):
    """``e**x`` elementwise; ``-inf`` (a masked score) gives 0.

    >>> exp(np.array([0.0, 1.0, -np.inf])).round(6)
    array([1.      , 2.718282, 0.      ], dtype=float32)
    """
    return _unary("exp", "exp_forward", x, queue)


def silu(x, *, queue=None):
    """``x * sigmoid(x)`` elementwise (any shape).

    >>> silu(np.array([0.0, 1.0])).round(6)
    array([0.      , 0.731059], dtype=float32)
    """
    return _unary("silu", "silu_forward", x, queue)


def swiglu(gate, up, *, queue=None):
    """``silu(gate) * up`` elementwise: the SwiGLU feed-forward gate. Same shapes.

    >>> swiglu(np.array([1.0]), np.array([2.0])).round(6)
    array([1.462117], dtype=float32)
    """
    sg, su = shape_of(gate), shape_of(up)
    if sg != su:
        raise ValueError(f"gate {sg} and up {su} must have the same shape")
    int32_range(elements=elements(sg))
    call = OpCall("swiglu", queue=queue, gate=gate, up=up)
    tg, tu = call.float_input("gate"), call.float_input("up")
    out = call.output(sg)
    _each_vector(call, "swiglu_forward", out.size, tg.buffer, tu.buffer, out.buffer)
    return call.result(out, check=[False])


# -- backward launchers (Tensors in, Tensors out) -------------------------------------------------

def binary_backward(name: str, g, a, b, out, needs=(True, True)):
    """Gradients of ``out = a op b`` (b broadcast over a's leading axes): (da, db), None where not needed."""
    if not isinstance(name, str) or name not in BINARY:
        raise ValueError(f"binary_backward: name must be one of {', '.join(BINARY)}, got {name!r}")
    need_a, need_b = needs
    if name == "add":
        return (g if need_a else None), (sum_to(g, b.shape) if need_b else None)
    if name == "sub":
        return (g if need_a else None), (scale(sum_to(g, b.shape), -1.0) if need_b else None)
    if name == "mul":
        return (mul(g, b) if need_a else None), (sum_to(mul(g, a), b.shape) if need_b else None)
    g_over_b = div(g, b)                                         # d(a/b)/da = 1/b, d(a/b)/db = -out/b
    return (g_over_b if need_a else None), (scale(sum_to(mul(g_over_b, out), b.shape), -1.0) if need_b else None)


def silu_backward(x, g):
    """dx = g · s (1 + x (1 − s)) with s = sigmoid(x)."""
    x = device_operand("silu backward", "x", x)
    g = device_operand("silu backward", "g", g, x.shape)
    call = OpCall("silu backward", x=x, g=g)
    dx = call.output(x.shape)
    _each(call, "silu_backward", dx.size, x.buffer, g.buffer, dx.buffer)
    return call.result(dx, check=[False])


def swiglu_backward(gate, up, g):
    """(dgate, dup) of ``silu(gate) · up`` in one pass."""
    gate = device_operand("swiglu backward", "gate", gate)
    up = device_operand("swiglu backward", "up", up, gate.shape)
    g = device_operand("swiglu backward", "g", g, gate.shape)
    call = OpCall("swiglu backward", gate=gate, up=up, g=g)
    dgate, dup = call.output(gate.shape), call.output(up.shape)
    _each_vector(call, "swiglu_backward", dgate.size, gate.buffer, up.buffer, g.buffer, dgate.buffer, dup.buffer)
    return call.result(dgate, dup, check=[False, False])
