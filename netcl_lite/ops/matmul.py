"""``matmul``: batched float32 matrix products on the OpenCL device."""

from __future__ import annotations

import numpy as np

from ..core.kernels import get_kernel
from ..core.tensor import Tensor
from .operands import check_int_range, finish, i32, pick_queue, round_up, shape_of, to_device

_BLOCK = 4  # matmul_blocked computes a 4 x 4 block of C per work-item


def _batch_shape(name_a, sa, name_b, sb) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ValueError(f"batch shapes of {name_a} {sa} and {name_b} {sb} do not broadcast") from None


def _batch_stride(shape, batch, matrix_elems) -> int:
    """Element stride per flattened batch index: 0 when this operand is broadcast."""
    lead = shape[:-2]
    if int(np.prod(lead, dtype=np.int64)) == int(np.prod(batch, dtype=np.int64)) and tuple(lead) == tuple(batch[len(batch) - len(lead):]) and len(lead) == len(batch):
        return matrix_elems
    if int(np.prod(lead, dtype=np.int64)) == 1:
        return 0
    raise ValueError(
        f"operand with batch shape {lead} must match the broadcast batch {batch} exactly or be unbatched; "
        "broadcast it with np.broadcast_to first"
    )


def matmul(a, b, *, transpose_a: bool = False, transpose_b: bool = False, queue=None):
    """``a @ b`` in float32: ``a`` is ``(..., M, K)``, ``b`` is ``(..., K, N)`` → ``(..., M, N)``.

    ``transpose_a`` / ``transpose_b`` use ``aᵀ`` / ``bᵀ`` of the last two axes
    without copying. Batch axes must be equal, or one operand unbatched.

    >>> matmul(np.eye(2), [[1.0, 2.0], [3.0, 4.0]])          # doctest: +SKIP
    array([[1., 2.], [3., 4.]], dtype=float32)
    """
    sa, sb = shape_of("a", a), shape_of("b", b)
    if len(sa) < 2 or len(sb) < 2:
        raise ValueError(f"matmul needs at least 2-D operands, got a {sa} and b {sb}")
    m, k = (sa[-1], sa[-2]) if transpose_a else (sa[-2], sa[-1])
    k2, n = (sb[-1], sb[-2]) if transpose_b else (sb[-2], sb[-1])
    if k != k2:
        raise ValueError(
            f"inner dimensions differ: a {sa}{'ᵀ' if transpose_a else ''} has K={k}, "
            f"b {sb}{'ᵀ' if transpose_b else ''} has K={k2}"
        )
    batch = _batch_shape("a", sa, "b", sb)
    n_batch = int(np.prod(batch, dtype=np.int64))
    check_int_range(M=m, N=n, K=k, a_elements=int(np.prod(sa)), b_elements=int(np.prod(sb)), out_elements=n_batch * m * n)

    q, return_tensor = pick_queue(a, b, queue=queue)
    ta, tb = to_device(q, "a", a), to_device(q, "b", b)
    out = Tensor.empty(q, tuple(batch) + (m, n))
    if out.size and k == 0:
        out = Tensor.zeros(q, out.shape)
    elif out.size:
        rows_a, cols_a = sa[-2], sa[-1]
        rows_b, cols_b = sb[-2], sb[-1]
        a_row, a_col = (1, cols_a) if transpose_a else (cols_a, 1)
        b_row, b_col = (1, cols_b) if transpose_b else (cols_b, 1)
        kernel = get_kernel(q.context, "matmul.cl", "matmul_blocked")
        gx, gy = -(-n // _BLOCK), -(-m // _BLOCK)
        local = (8, 8, 1)
        kernel(
            q, (round_up(gx, 8), round_up(gy, 8), n_batch), local,
            ta.buffer, tb.buffer, out.buffer, i32(m), i32(n), i32(k),
            i32(_batch_stride(sa, batch, rows_a * cols_a)), i32(a_row), i32(a_col),
            i32(_batch_stride(sb, batch, rows_b * cols_b)), i32(b_row), i32(b_col),
            i32(m * n),
        )
    return finish(out, return_tensor)
