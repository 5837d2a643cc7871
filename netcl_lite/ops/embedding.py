"""``embedding``: rows of a table picked by integer token ids, and the gradient back to the
table (``kernels/embedding.cl``). Float64 reference: :func:`netcl_lite.reference.embedding`.
"""

from __future__ import annotations

import numpy as np

from ..checks import dtype_is, nonnegative_int, not_masked
from ..core.kernels import vector_lanes
from ..core.tensor import Tensor
from .operands import OpCall, device_operand, elements, i32, int32_range, round_up, shape_of


#: slices of the vocabulary in ``embedding_backward``'s grid: with the columns' vectors, the work-items
#: that share the scatter (a 128-wide table on 16 lanes has 8 column vectors: 32 items keep two or
#: more cores busy). Every item reads all the ids, so more slices cost more reading.
BACKWARD_SLICES = 4


def ids_out_of_range(ids: np.ndarray, vocab: int) -> str:
    """What is wrong with ``ids`` for a table of ``vocab`` rows: the first five bad values and where."""
    ids = np.asarray(ids)
    bad = np.argwhere((ids < 0) | (ids >= vocab))
    shown = ", ".join(f"{ids[tuple(p)]} at {tuple(int(i) for i in p)}" for p in bad[:5])
    more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
    return f"ids must lie in [0, {vocab}) for a table of {vocab} rows; got {shown}{more}"


def host_ids(ids, vocab: int, name: str = "ids") -> np.ndarray | None:
    """NumPy ids validated on the host (integers in [0, vocab)); None for an int32 Tensor,
    whose values the kernels check on the device."""
    if isinstance(ids, Tensor):
        dtype_is(name, ids, "int32")
        return None
    not_masked(name, ids)                  # np.asarray would check (and use) the values under the mask
    arr = np.asarray(ids)
    if arr.size == 0:
        arr = arr.astype(np.int32)   # np.asarray([]) is float64
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.size and ((arr < 0) | (arr >= vocab)).any():
        raise ValueError(ids_out_of_range(arr, vocab).replace("ids", name, 1))
    return arr


def embedding(table, ids, *, queue=None):
    """Rows of ``table`` ``(V, D)`` picked by ``ids`` (ints, any shape) → ``(*ids.shape, D)``.

    ``ids`` is a NumPy integer array (or nested list), checked on the host, or an
    int32 ``Tensor``, checked on the device: an id outside ``[0, V)`` raises
    ``ValueError`` naming it (for device ids, at the next sync). The kernel never
    reads outside the table.

    >>> embedding(np.eye(3), [2, 0])
    array([[0., 0., 1.],
           [1., 0., 0.]], dtype=float32)
    """
    st = shape_of(table)
    if len(st) != 2:
        raise ValueError(f"table must be (V, D), got shape {st}")
    vocab, dim = st
    checked = host_ids(ids, vocab)
    id_shape = tuple(ids.shape) if checked is None else checked.shape
    n_ids = elements(id_shape)
    int32_range(elements=n_ids * dim, table_elements=vocab * dim)
    call = OpCall("embedding", queue=queue, bad_input=lambda: ids_out_of_range(ids, vocab), table=table, ids=ids)
    tt, tid = call.float_input("table"), call.int_input("ids", checked)
    out = call.output(id_shape + (dim,))
    if out.size:
        call.launch("embedding.cl", "embedding_gather", (round_up(n_ids, 16),), (16,),
                    tt.buffer, tid.buffer, out.buffer, i32(n_ids), i32(vocab), i32(dim), call.stream.status, call.seq)
    return call.result(out, check=[False])


def embedding_ids(ids, vocab: int, queue) -> Tensor:
    """``ids`` as an int32 Tensor on ``queue`` (validated as :func:`embedding` does), so that the
    forward and the backward share one upload."""
    checked = host_ids(ids, vocab)
    return ids if checked is None else Tensor.from_host(queue, checked, dtype=np.int32)


def embedding_backward(g, ids, vocab: int):
    """The table's gradient ``(V, D)``: each row sums ``g``'s rows at the positions that looked it up.

    ``g`` is a float32 Tensor of shape ``(*ids.shape, D)``; ``ids`` as :func:`embedding` takes them
    (NumPy ids checked on the host, an int32 Tensor's on the device: an id outside ``[0, vocab)``
    raises ``ValueError`` at the next sync)."""
    vocab = nonnegative_int("vocab", vocab, "the table's number of rows")
    g = device_operand("embedding backward", "g", g)
    checked = host_ids(ids, vocab)
    id_shape = tuple(ids.shape) if checked is None else checked.shape
    if g.ndim < 1 or tuple(g.shape[:-1]) != id_shape:
        raise ValueError(f"embedding backward: g must be (*ids.shape, D) = {id_shape + ('D',)}, got {g.shape}")
    dim = g.shape[-1]
    n_ids = elements(id_shape)
    int32_range(elements=n_ids * dim, table_elements=vocab * dim)
    call = OpCall("embedding backward", bad_input=lambda: ids_out_of_range(ids, vocab), g=g, ids=ids)
    tid = call.int_input("ids", checked)
    dtable = call.output((vocab, dim))
    if dtable.size:
        call.stream.fill(dtable.buffer, dtable.nbytes)
        lanes = vector_lanes(call.queue.device)
        call.launch("embedding.cl", "embedding_backward", (-(-dim // lanes), BACKWARD_SLICES), (1, 1),
                    g.buffer, tid.buffer, dtable.buffer, i32(n_ids), i32(vocab), i32(dim), call.stream.status,
                    call.seq, options=(f"-DVW={lanes}",))
    return call.result(dtable, check=[False])
