"""``rms_norm`` and ``layer_norm`` over the last axis, and their gradients (``kernels/norm.cl``).
Float64 references: :func:`netcl_lite.reference.rms_norm`, :func:`netcl_lite.reference.layer_norm`.
"""

from __future__ import annotations

from ..checks import positive_real, within_float32
from .operands import OpCall, device_operand, elements, f32, i32, int32_range, round_up, shape_of
from .reduce import CHUNK, join_rows

_LOCAL = 16


def _backward_operands(op, g, x, weight, eps):
    """The Tensors of a norm backward, checked: x with a non-empty last axis, g of x's shape, weight of
    x's last axis (each float32; the kernels read them as such, to x's length), and eps as the forward
    checks it."""
    x = device_operand(op, "x", x)
    if len(x.shape) == 0 or x.shape[-1] == 0:
        raise ValueError(f"{op}: x must have a non-empty last axis to normalize over, got shape {tuple(x.shape)}")
    g = device_operand(op, "g", g, x.shape)
    weight = device_operand(op, "weight", weight, tuple(x.shape[-1:]))
    within_float32("eps", positive_real("eps", eps, "it keeps a zero row finite"), positive=True)
    return g, x, weight


def _check(x, params, eps):
    shape = shape_of(x)
    if len(shape) == 0 or shape[-1] == 0:
        raise ValueError(f"x must have a non-empty last axis to normalize over, got shape {shape}")
    for name, p in params.items():
        sp = shape_of(p)
        if sp != shape[-1:]:
            raise ValueError(f"{name} must have shape {shape[-1:]} (x's last axis), got {sp}")
    within_float32("eps", positive_real("eps", eps, "it keeps a zero row finite"), positive=True)
    rows = elements(shape[:-1])
    int32_range(elements=rows * shape[-1])
    return shape, rows


def rms_norm(x, weight, *, eps: float = 1e-6, queue=None):
    """``x / sqrt(mean(x², axis=-1) + eps) * weight``; ``weight`` is ``(D,)``.

    >>> import numpy as np
    >>> rms_norm(np.array([[3.0, 4.0]]), np.ones(2)).round(6)     # [3, 4] / rms 3.5355
    array([[0.848528, 1.131371]], dtype=float32)
    """
    shape, rows = _check(x, {"weight": weight}, eps)
    call = OpCall("rms_norm", queue=queue, x=x, weight=weight)
    tx, tw = call.float_input("x"), call.float_input("weight")
    out = call.output(shape)
    if rows:
        call.launch("norm.cl", "rms_norm_rows", (round_up(rows, _LOCAL),), (_LOCAL,),
                    tx.buffer, tw.buffer, out.buffer, i32(rows), i32(shape[-1]), f32(eps), call.stream.status, call.seq)
    return call.result(out, check=[False])


def layer_norm(x, weight, bias, *, eps: float = 1e-5, queue=None):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis (biased variance).

    >>> import numpy as np
    >>> layer_norm(np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2)).round(6)
    array([[-0.999995,  0.999995]], dtype=float32)
    """
    shape, rows = _check(x, {"weight": weight, "bias": bias}, eps)
    call = OpCall("layer_norm", queue=queue, x=x, weight=weight, bias=bias)
    tx, tw, tb = call.float_input("x"), call.float_input("weight"), call.float_input("bias")
    out = call.output(shape)
    if rows:
        call.launch("norm.cl", "layer_norm_rows", (round_up(rows, _LOCAL),), (_LOCAL,),
                    tx.buffer, tw.buffer, tb.buffer, out.buffer, i32(rows), i32(shape[-1]), f32(eps),
                    call.stream.status, call.seq)
    return call.result(out, check=[False])


def rms_norm_backward(g, x, weight, *, eps: float = 1e-6, acc=None):
    """(dx, dweight) of :func:`rms_norm` (Tensors). With ``acc`` (a gradient of x gathered so
    far, x's shape), dx includes it, added as dx is stored."""
    g, x, weight = _backward_operands("rms_norm backward", g, x, weight, eps)
    n = x.shape[-1]
    rows = x.size // n
    if acc is not None:
        device_operand("rms_norm backward", "acc", acc)
    if acc is not None and tuple(acc.shape) != tuple(x.shape):
        raise ValueError(f"acc must have x's shape {tuple(x.shape)}, got {tuple(acc.shape)}")
    call = OpCall("rms_norm backward", g=g, x=x, weight=weight)
    dx, dw = call.output(x.shape), call.output((n,))
    parts = max(1, -(-rows // CHUNK))
    partial = dw.buffer if parts == 1 else call.scratch("norm.partial0", parts * n)
    call.launch("norm.cl", "rms_norm_backward_chunks", (parts,), (1,),
                x.buffer, weight.buffer, g.buffer, (g if acc is None else acc).buffer, i32(acc is not None),
                dx.buffer, partial, i32(rows), i32(n), i32(CHUNK), f32(eps), call.stream.status, call.seq)
    if parts > 1:
        join_rows(call, partial, dw.buffer, parts, n)
    return call.result(dx, dw, check=[False, False])


def _column_sums(call, kernel, inputs, outs, rows, n):
    """Run ``kernel`` (a parameter gradient: sums over rows into each of ``outs``, ``(n,)``) over
    chunks of :data:`~netcl_lite.ops.reduce.CHUNK` rows, one grid row per chunk, so every core
    takes a share; the chunks' partial sums are then joined in order (:func:`join_rows`)."""
    status = (call.stream.status, call.seq)
    parts = max(1, -(-rows // CHUNK))
    partial = [o.buffer for o in outs] if parts == 1 else \
        [call.scratch(f"norm.partial{i}", parts * n) for i in range(len(outs))]
    call.launch("norm.cl", kernel, (round_up(-(-n // 8), _LOCAL), parts), (_LOCAL, 1),
                *inputs, *partial, i32(rows), i32(n), i32(CHUNK), *status)
    if parts > 1:
        for buf, out in zip(partial, outs):
            join_rows(call, buf, out.buffer, parts, n)


def layer_norm_backward(g, x, weight, *, eps: float = 1e-5):
    """(dx, dweight, dbias) of :func:`layer_norm` (Tensors)."""
    g, x, weight = _backward_operands("layer_norm backward", g, x, weight, eps)
    n = x.shape[-1]
    rows = x.size // n
    call = OpCall("layer_norm backward", g=g, x=x, weight=weight)
    dx, dw, db = call.output(x.shape), call.output((n,)), call.output((n,))
    mean, rstd = call.scratch("norm.mean", rows), call.scratch("norm.rstd", rows)
    status = (call.stream.status, call.seq)
    call.launch("norm.cl", "layer_norm_backward_rows", (round_up(rows, _LOCAL),), (_LOCAL,),
                x.buffer, weight.buffer, g.buffer, dx.buffer, mean, rstd, i32(rows), i32(n), f32(eps), *status)
    _column_sums(call, "layer_norm_backward_params", (x.buffer, g.buffer, mean, rstd), (dw, db), rows, n)
    return call.result(dx, dw, db, check=[False, False, False])
