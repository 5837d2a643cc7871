"""Layout changes (``kernels/layout.cl``): ``swap_axes``, ``concat_columns``, ``split_columns``.
Reshapes need no kernel: a Tensor's ``reshape`` is a view. Float64 references: ``np.swapaxes``,
``np.concatenate`` and ``np.split`` on the last axis (the kernels copy, so they agree exactly).
"""

from __future__ import annotations

import numpy as np

from ..checks import int_in
from .operands import OpCall, elements, i32, int32_range, round_up, shape_of


def swap_axes(x, axis1: int, axis2: int, *, queue=None):
    """``x`` with two axes exchanged, copied into the new layout (its own backward).

    For a device tensor whose elements keep their order (every axis from ``axis1`` to
    ``axis2`` but one has length 1) the result is a view of ``x``'s buffer, as
    :meth:`~netcl_lite.core.tensor.Tensor.reshape` is; NumPy callers always get a new array.

    >>> import numpy as np
    >>> swap_axes(np.arange(6.0).reshape(2, 3), 0, 1)
    array([[0., 3.],
           [1., 4.],
           [2., 5.]], dtype=float32)
    """
    s = shape_of(x)
    nd = len(s)
    for name, axis in (("axis1", axis1), ("axis2", axis2)):
        int_in(name, axis, -nd, nd, f"an axis of a {nd}-d tensor")
    i, j = sorted((axis1 % nd, axis2 % nd))
    if i == j:
        raise ValueError(f"swap_axes: axis1 and axis2 name the same axis ({i}); nothing to swap")
    new = s[:i] + (s[j],) + s[i + 1:j] + (s[i],) + s[j + 1:]
    call = OpCall("swap_axes", queue=queue, x=x)
    tx = call.float_input("x")
    if call.returns_tensors and sum(n > 1 for n in s[i:j + 1]) <= 1:
        # At most one of the axes from i to j is longer than 1 (a decode step's (B, 1, H, d)):
        # the elements keep their order, so the result is a view, as a reshape is; no kernel.
        return tx.reshape(new)
    out = call.output(new)
    blocks = [s[i], elements(s[i + 1:j]), s[j], elements(s[j + 1:])]
    runs = out.size // max(blocks[3], 1)
    if out.size:
        call.launch("layout.cl", "swap_axes", (round_up(runs, 16),), (16,),
                    tx.buffer, out.buffer, *(i32(b) for b in blocks), i32(runs))
    return call.result(out, check=[False])


#: blocks one launch of ``copy_blocks`` copies (the kernel's slots)
BLOCKS_PER_LAUNCH = 4


def _copy_blocks(call, rows, blocks) -> None:
    """For each block (src, dst, cols, src_stride, src_offset, dst_stride, dst_offset):
    dst[r, dst_offset + c] = src[r, src_offset + c] for r < rows, c < cols (row lengths: the strides),
    :data:`BLOCKS_PER_LAUNCH` blocks a launch."""
    blocks = [b for b in blocks if b[2]]
    if not rows:
        return
    for i in range(0, len(blocks), BLOCKS_PER_LAUNCH):
        batch = blocks[i:i + BLOCKS_PER_LAUNCH]
        slots = batch + [batch[0]] * (BLOCKS_PER_LAUNCH - len(batch))     # unused slots: no grid row reads them
        args = [a for src, dst, *ints in slots for a in (src, dst, *map(i32, ints))]
        call.launch("layout.cl", "copy_blocks", (round_up(rows, 16), len(batch)), (16, 1), i32(rows), *args)


def concat_columns(pieces, *, queue=None):
    """The ``pieces`` (arrays or Tensors of one shape but the last axis) side by side on the last axis,
    as ``np.concatenate(pieces, axis=-1)``: joins Wq, Wk and Wv so that one product forms x's gradient
    through all three.

    >>> import numpy as np
    >>> concat_columns([np.ones((2, 1)), np.zeros((2, 2))])
    array([[1., 0., 0.],
           [1., 0., 0.]], dtype=float32)
    """
    if not isinstance(pieces, (list, tuple)) or not pieces:
        raise TypeError(f"pieces must be a non-empty list of arrays or Tensors, got {type(pieces).__name__}")
    shapes = [shape_of(p) for p in pieces]
    lead = shapes[0][:-1]
    if any(not s or s[:-1] != lead for s in shapes):
        raise ValueError(f"pieces must be at least 1-d and agree on every axis but the last, got shapes {shapes}")
    widths = [s[-1] for s in shapes]
    width, rows = sum(widths), elements(lead)
    int32_range(elements=rows * width)
    call = OpCall("concat_columns", queue=queue, **{f"piece{i}": p for i, p in enumerate(pieces)})
    out = call.output(lead + (width,))
    starts = np.cumsum([0] + widths[:-1])
    _copy_blocks(call, rows, [(call.float_input(f"piece{i}").buffer, out.buffer, w, w, 0, width, int(start))
                              for i, (w, start) in enumerate(zip(widths, starts))])
    return call.result(out, check=[False])


def split_columns(x, widths, *, queue=None):
    """``x`` (..., sum(widths)) cut on the last axis into pieces of the given ``widths``, each its own
    contiguous array (the inverse of :func:`concat_columns`); a tuple.

    >>> import numpy as np
    >>> split_columns(np.arange(6.0).reshape(2, 3), (1, 2))[1]
    array([[1., 2.],
           [4., 5.]], dtype=float32)
    """
    s = shape_of(x)
    if not isinstance(widths, (list, tuple)) or not widths or any(
            isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0 for w in widths):
        raise TypeError(f"widths must be a non-empty sequence of non-negative ints, got {widths!r}")
    if not s or sum(int(w) for w in widths) != s[-1]:     # Python ints: NumPy int64 widths would wrap
        raise ValueError(f"widths {tuple(widths)} must add up to x's last axis, got x of shape {s}")
    int32_range(elements=elements(s))
    rows = elements(s[:-1])
    call = OpCall("split_columns", queue=queue, x=x)
    tx = call.float_input("x")
    outs, blocks, offset = [], [], 0
    for w in widths:
        out = call.output(s[:-1] + (int(w),))
        blocks.append((tx.buffer, out.buffer, int(w), s[-1], offset, int(w), 0))
        outs.append(out)
        offset += int(w)
    _copy_blocks(call, rows, blocks)
    got = call.result(*outs, check=[False] * len(outs))
    return got if len(outs) > 1 else (got,)
