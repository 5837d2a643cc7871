"""``matmul``: batched float32 matrix products on the OpenCL device."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..core.kernels import get_kernel
from .operands import (
    bound,
    check_float32_range,
    check_int_range,
    device_empty,
    f32,
    finish,
    i32,
    max_norm,
    pick_queue,
    round_up,
    scratch,
    shape_of,
    to_device,
)

_BLOCK = 4  # matmul_blocked computes a 4 x 4 block of C per work-item
MR, NR = 6, 16  # matmul_packed computes a 6 x 16 block of C per work-item
PANELS, NPANELS = 2, 8  # ... for PANELS x NPANELS such blocks (12 x 128 of C)
PACK_K = 64     # k values per packing work-item
#: below this many multiply-adds the unpacked kernel is faster than pack + micro-kernel
#: (crossover measured between 64³ and 96³ on the PoCL CPU driver: launches dominate).
PACKED_MIN_WORK = 80**3


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
    check_float32_range("an entry of a @ b", max_norm(a, -2 if transpose_a else -1), max_norm(b, -1 if transpose_b else -2),
                        hint="rescale a or b")

    q, return_tensor = pick_queue(a, b, queue=queue)
    ta, tb = to_device(q, "a", a), to_device(q, "b", b)
    out = device_empty(q, tuple(batch) + (m, n))
    if out.size and k == 0:
        cl.enqueue_fill_buffer(q, out.buffer, np.zeros(1, np.float32), 0, out.nbytes)
    elif out.size:
        rows_a, cols_a = sa[-2], sa[-1]
        rows_b, cols_b = sb[-2], sb[-1]
        a_strides = (_batch_stride(sa, batch, rows_a * cols_a),) + ((1, cols_a) if transpose_a else (cols_a, 1))
        b_strides = (_batch_stride(sb, batch, rows_b * cols_b),) + ((1, cols_b) if transpose_b else (cols_b, 1))
        a_div = 1 if a_strides[0] else n_batch
        b_div = 1 if b_strides[0] else n_batch
        gemm(q, ta.buffer, tb.buffer, out.buffer, m, n, k, n_batch, a_strides, b_strides, a_div, b_div)
    return finish(out, return_tensor, bound(k, ta.abs_max, tb.abs_max))


def packed_pays(m: int, n: int, k: int) -> bool:
    """Whether packing + the 6 x 16 micro-kernel beats the unpacked kernel for this size."""
    return m * n * k >= PACKED_MIN_WORK and min(m, n) >= 4


def gemm(q, a_buf, b_buf, c_buf, m, n, k, n_batch, a_strides, b_strides, a_div=1, b_div=1, alpha=1.0):
    """C[b] = alpha · A[b // a_div] @ B[b // b_div] for b < n_batch, C contiguous (n_batch, M, N).

    ``a_strides``/``b_strides`` are element strides (per operand matrix, row, column):
    a transposed operand is just other strides. ``a_div``/``b_div`` let many batch
    entries share one operand (a broadcast matrix, or the K/V group of several heads).
    Large products pack and run ``matmul_packed``; small ones run ``matmul_blocked``.
    """
    if packed_pays(m, n, k):
        _packed(q, a_buf, b_buf, c_buf, m, n, k, n_batch, a_strides, b_strides, a_div, b_div, alpha)
        return
    if alpha != 1.0 or a_div not in (1, n_batch) or b_div not in (1, n_batch):
        raise ValueError("matmul_blocked takes alpha = 1 and unshared or fully broadcast operands")
    a_strides = (a_strides[0] if a_div == 1 else 0,) + tuple(a_strides[1:])
    b_strides = (b_strides[0] if b_div == 1 else 0,) + tuple(b_strides[1:])
    gx, gy = -(-n // _BLOCK), -(-m // _BLOCK)
    get_kernel(q.context, "matmul.cl", "matmul_blocked")(
        q, (round_up(gx, 8), round_up(gy, 8), n_batch), (8, 8, 1),
        a_buf, b_buf, c_buf, i32(m), i32(n), i32(k), *map(i32, a_strides), *map(i32, b_strides), i32(m * n),
    )


def _packed(q, a_buf, b_buf, c_buf, m, n, k, n_batch, a_strides, b_strides, a_div, b_div, alpha):
    """Pack B into 16-column panels (and A into 6-row panels unless it is row-major), then
    run the 6 x 16 micro-kernel."""
    pm, pn = -(-m // MR), -(-n // NR)
    a_sets, b_sets = -(-n_batch // a_div), -(-n_batch // b_div)
    check_int_range(packed_a=a_sets * pm * MR * k, packed_b=b_sets * pn * NR * k)
    kb = -(-k // PACK_K)
    a_batch, a_row, a_col = a_strides
    if a_col == 1:                                    # row-major A: read in place
        a_src, a_layout = a_buf, (a_batch, MR * a_row, a_row, 1)
    else:
        a_src = scratch(q, "matmul.ap", a_sets * pm * MR * k)
        get_kernel(q.context, "matmul.cl", "matmul_pack_a")(
            q, (kb, pm, a_sets), (1, 1, 1), a_buf, a_src, i32(m), i32(k), *map(i32, a_strides))
        a_layout = (pm * MR * k, MR * k, 1, MR)
    bp = scratch(q, "matmul.bp", b_sets * pn * NR * k)
    get_kernel(q.context, "matmul.cl", "matmul_pack_b")(
        q, (kb, pn, b_sets), (1, 1, 1), b_buf, bp, i32(n), i32(k), *map(i32, b_strides))
    local = 1 if q.device.type & cl.device_type.CPU else 8
    get_kernel(q.context, "matmul.cl", "matmul_packed")(
        q, (round_up(-(-pm // PANELS), local), -(-pn // NPANELS), n_batch), (local, 1, 1),
        a_src, bp, c_buf, i32(m), i32(n), i32(k), *map(i32, a_layout), i32(a_div), i32(b_div), f32(alpha),
    )
    q.finish()  # the scratch panels are reused by the next call
