"""Sums over a tensor (``kernels/reduce.cl``): ``sum``, ``mean``, and ``sum_to``, the
gradient of a broadcast. Float64 references: :func:`netcl_lite.reference.sum`.

Every sum runs in a fixed order (chunks of rows, then the chunks in order), so
the same input gives the same bits on every run: training resumes bit-identically.
"""

from __future__ import annotations

import numpy as np

from .operands import OpCall, device_operand, elements, f32, i32, int32_range, round_up, shape_of

#: rows one work-item of ``sum_columns`` adds before a second pass joins the chunks
CHUNK = 256
#: work-items per work-group of :func:`join_rows`: PoCL's CPU driver pays per work-group, and a
#: split GEMM's join has a work-item per element of C (40,960 at 128 x 320), so large groups
#: keep that cost small beside the product
JOIN_LOCAL = 64


def mean_scale(n: int) -> float:
    """The power of two at or below 1/n: a mean's terms scaled by it sum to at most float32's largest
    value when each term is at most that (scaling by a power of two is exact), where their plain sum
    may overflow although the mean is a float32 (``reduce.cl``'s ``pre``)."""
    return 2.0 ** -(max(int(n), 1) - 1).bit_length()


def sum_columns(call: OpCall, x, out, rows: int, cols: int, alpha: float, pre: float = 1.0) -> None:
    """out (cols,) = alpha · x (rows, cols) summed over rows, enqueued on ``call``.

    A sum of at most ``CHUNK`` rows is one pass; a taller one writes the sums of
    ``CHUNK``-row slices to scratch and joins them with :func:`join_rows`, so no
    float32 partial sum runs over more than ``CHUNK`` terms. Over no rows, out is 0 (written:
    its memory may hold anything). ``pre`` (a power of two, :func:`mean_scale` for a mean): the
    partial sums are kept scaled by it, and a sum that overflows is formed of terms scaled by it.
    """
    parts = -(-rows // CHUNK)
    if parts <= 1:
        join_rows(call, x.buffer, out.buffer, rows, cols, alpha, pre=pre)
        return
    partial = call.scratch("reduce.partial", parts * cols)
    call.launch("reduce.cl", "sum_columns", (round_up(cols, 8), parts), (8, 1),
                x.buffer, partial, i32(rows), i32(cols), i32(CHUNK), f32(pre), f32(pre), x.buffer, i32(0),
                call.stream.status, call.seq)
    join_rows(call, partial, out.buffer, parts, cols, alpha / pre)


def join_rows(call: OpCall, x_buf, out_buf, rows: int, cols: int, alpha: float = 1.0, d_buf=None, *,
              pre: float = 1.0) -> None:
    """out (cols,) = alpha · the rows of x (rows, cols) summed in row order (+ d): one pass, a
    work-item per column. It joins partial sums that other kernels wrote a row each (the chunks
    of a tall sum, a norm's weight gradient, a GEMM split over K). Over no rows, out is 0 (or d): the
    kernel writes nothing for a column with no rows, so the empty sum is written here. ``pre``: as
    :func:`sum_columns` takes it (a column whose sum overflows is summed again of terms scaled by it)."""
    if not cols:
        return
    if not rows:
        if d_buf is None:
            call.stream.fill(out_buf, 4 * cols)
        elif d_buf != out_buf:
            call.stream.copy(out_buf, d_buf, 4 * cols)
        return
    call.launch("reduce.cl", "sum_columns", (round_up(cols, JOIN_LOCAL), 1), (JOIN_LOCAL, 1),
                x_buf, out_buf, i32(rows), i32(cols), i32(rows), f32(alpha), f32(pre),
                x_buf if d_buf is None else d_buf, i32(d_buf is not None), call.stream.status, call.seq)


def sum(x, *, axis=None, queue=None):  # noqa: A001 (the op's name)
    """Σ of every element (``axis=None``, a 0-d result) or over the last axis (``axis=-1``).

    >>> import numpy as np
    >>> float(sum(np.arange(1.0, 101.0)))
    5050.0
    >>> sum(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=-1)
    array([3., 7.], dtype=float32)
    """
    return _sum("sum", x, axis, queue, mean=False)


def mean(x, *, axis=None, queue=None):
    """The mean of every element (``axis=None``) or over the last axis (``axis=-1``).

    >>> import numpy as np
    >>> float(mean(np.array([1.0, 2.0, 6.0])))
    3.0
    """
    return _sum("mean", x, axis, queue, mean=True)


def _sum(name, x, axis, queue, mean: bool):
    shape = shape_of(x)
    if axis is not None and (isinstance(axis, bool) or not isinstance(axis, (int, np.integer))):
        raise TypeError(f"{name}: axis must be None or an int (-1, the last axis), got {type(axis).__name__} {axis!r}")
    if axis not in (None, -1, len(shape) - 1) or (axis is not None and not shape):
        raise ValueError(f"{name}: axis must be None (every element) or -1 (the last axis), got {axis!r} for shape {shape}")
    n = elements(shape)
    int32_range(elements=n)
    call = OpCall(name, queue=queue, x=x)
    tx = call.float_input("x")
    if axis is None:
        if mean and n == 0:
            raise ValueError("mean of an empty tensor is undefined; pass at least one element")
        out = call.output(())
        sum_columns(call, tx, out, n, 1, 1.0 / n if mean else 1.0, mean_scale(n) if mean else 1.0)
    else:
        cols = shape[-1]
        if mean and cols == 0:
            raise ValueError(f"mean over an empty last axis (shape {shape}) is undefined")
        out = call.output(shape[:-1])
        if out.size:
            call.launch("reduce.cl", "sum_rows", (round_up(out.size, 16),), (16,),
                        tx.buffer, out.buffer, i32(out.size), i32(cols), f32(1.0 / cols if mean else 1.0),
                        f32(mean_scale(cols) if mean else 1.0), call.stream.status, call.seq)
    return call.result(out, check=[False])


def sum_to(t, shape):
    """``t`` summed over the leading axes it has beyond ``shape``: the gradient of an operand
    that was broadcast over them. ``shape`` is a suffix of ``t.shape``, possibly with leading
    1s (a batch of one), or ``()``. ``t`` is a Tensor.
    """
    t = device_operand("sum_to", "t", t)
    shape = tuple(shape)
    if t.shape == shape:
        return t
    core = shape
    while core and core[0] == 1:
        core = core[1:]
    if len(core) > len(t.shape) or t.shape[len(t.shape) - len(core):] != core:
        raise ValueError(f"sum_to: {shape} is not a suffix of {t.shape}")
    call = OpCall("sum over broadcast axes", t=t)
    cols = elements(core)
    out = call.output(core)
    if out.size:
        sum_columns(call, t, out, t.size // max(cols, 1), cols, 1.0)
    return call.result(out, check=[False]).reshape(shape)


def sum_backward(g, shape, axis, mean: bool):
    """Gradient of :func:`sum`/:func:`mean` of an ``x`` of ``shape``: ``g`` broadcast back over
    what was summed (read on the device, no host round trip)."""
    shape = tuple(shape)
    rows, cols = (1, elements(shape)) if axis is None else (elements(shape[:-1]), shape[-1] if shape else 1)
    op = f"{'mean' if mean else 'sum'} backward"
    g = device_operand(op, "g", g)
    if g.size != rows:                               # one gradient per row summed, read to rows' length
        raise ValueError(f"{op}: g must hold {rows} element(s), one per sum of x {shape}, got shape {tuple(g.shape)}")
    call = OpCall(op, g=g)
    out = call.output(shape)
    if out.size:
        call.launch("reduce.cl", "broadcast_rows", (round_up(cols, 16), rows), (16, 1),
                    g.buffer, out.buffer, i32(rows), i32(cols), f32(1.0 / cols if mean else 1.0))
    return call.result(out, check=[False])
