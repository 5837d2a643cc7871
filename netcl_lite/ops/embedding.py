"""``embedding``: look up rows of a table by integer token id (``kernels/embedding.cl``)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..core.kernels import get_kernel
from ..core.tensor import Tensor
from .operands import check_int_range, device_empty, finish, i32, pick_queue, round_up, shape_of, to_device


def _bad_ids(ids: np.ndarray, vocab: int) -> str:
    bad = np.argwhere((ids < 0) | (ids >= vocab))
    shown = ", ".join(f"{ids[tuple(p)]} at {tuple(int(i) for i in p)}" for p in bad[:5])
    more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
    return f"ids must lie in [0, {vocab}) for a table of {vocab} rows; got {shown}{more}"


def embedding(table, ids, *, queue=None):
    """Rows of ``table`` ``(V, D)`` picked by ``ids`` (ints, any shape) → ``(*ids.shape, D)``.

    ``ids`` is a NumPy integer array (or nested list) or an int32 ``Tensor``.
    An id outside ``[0, V)`` raises ``ValueError`` naming it; the kernel never
    reads outside the table.

    >>> embedding(np.eye(3), [2, 0])                         # doctest: +SKIP
    array([[0., 0., 1.], [1., 0., 0.]], dtype=float32)
    """
    st = tuple(shape_of("table", table))
    if len(st) != 2:
        raise ValueError(f"table must be (V, D), got shape {st}")
    vocab, dim = st
    if isinstance(ids, Tensor):
        if ids.dtype != np.int32:
            raise TypeError(f"ids must be an int32 Tensor, got {ids.dtype}")
        host_ids = None
    else:
        host_ids = np.asarray(ids)
        if host_ids.size == 0:
            host_ids = host_ids.astype(np.int32)   # np.asarray([]) is float64
        if host_ids.dtype.kind not in "iu":
            raise TypeError(f"ids must be integers, got dtype {host_ids.dtype}")
        if host_ids.size and ((host_ids < 0) | (host_ids >= vocab)).any():
            raise ValueError(_bad_ids(host_ids, vocab))
    id_shape = tuple(ids.shape) if host_ids is None else host_ids.shape
    n_ids = int(np.prod(id_shape, dtype=np.int64))
    check_int_range(elements=n_ids * dim, table_elements=vocab * dim)
    q, return_tensor = pick_queue(table, ids, queue=queue)
    tt = to_device(q, "table", table)
    tid = ids if host_ids is None else Tensor.from_host(q, host_ids, dtype=np.int32)
    out = device_empty(q, id_shape + (dim,))
    if out.size:
        flag = np.zeros(1, np.int32)
        bad = cl.Buffer(q.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=flag)
        get_kernel(q.context, "embedding.cl", "embedding_gather")(
            q, (round_up(dim, 16), round_up(n_ids, 4)), (16, 4),
            tt.buffer, tid.buffer, out.buffer, bad, i32(n_ids), i32(vocab), i32(dim),
        )
        cl.enqueue_copy(q, flag, bad)   # blocking: also keeps every buffer alive until done
        if flag[0]:
            raise ValueError(_bad_ids(tid.to_host(), vocab))
    return finish(out, return_tensor, tt.abs_max)
