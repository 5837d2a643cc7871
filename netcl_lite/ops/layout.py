"""Layout changes (``kernels/layout.cl``): ``swap_axes``. Reshapes need no kernel: a Tensor's
``reshape`` is a view. Float64 reference: ``np.swapaxes``.
"""

from __future__ import annotations

from ..checks import int_in
from .operands import OpCall, elements, i32, round_up, shape_of


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
