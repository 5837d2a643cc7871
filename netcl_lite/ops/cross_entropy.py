"""``cross_entropy``: mean softmax cross-entropy of logits against class ids, and its gradient
(``kernels/cross_entropy.cl``). Float64 reference: :func:`netcl_lite.reference.cross_entropy`.
"""

from __future__ import annotations


import numpy as np

from ..checks import flag, integer, not_masked
from ..core.kernels import vector_lanes
from ..core.tensor import Tensor
from .embedding import host_ids
from .operands import OpCall, device_operand, elements, i32, int32_range, round_up, shape_of
from .reduce import sum_columns


def _options(call: OpCall) -> tuple[str, ...]:
    """The build of ``cross_entropy.cl`` for the call's device: rows walked in vectors of its width."""
    return (f"-DVW={vector_lanes(call.queue.device)}",)


def _check(logits, targets, ignore_index):
    sz = shape_of(logits)
    vocab = sz[-1] if sz else 0
    rows = elements(sz[:-1]) if sz else 0
    st = shape_of(targets)
    if vocab == 0 or tuple(st) != tuple(sz[:-1]):
        raise ValueError(f"targets must have logits' shape without its last axis, {tuple(sz[:-1])}, got {tuple(st)}")
    integer("ignore_index", ignore_index)
    if not -2**31 <= ignore_index < 2**31:         # the kernels take it as an int32
        raise ValueError(f"ignore_index={ignore_index} is outside int32's range [-2**31, 2**31): the kernels "
                         "compare the targets with it as an int32 (the default, -100, or any id no target holds)")
    if rows == 0:                 # as when every target is ignored: no row counts
        raise ValueError(f"targets of shape {tuple(st)} hold no rows: the mean over no rows is undefined")
    int32_range(elements=rows * vocab)
    return vocab, rows


def _host_targets(targets, vocab, ignore_index):
    if isinstance(targets, Tensor):
        return host_ids(targets, vocab, "targets")
    not_masked("targets", targets)         # np.asarray would score the targets under the mask
    arr = np.asarray(targets)
    if arr.size == 0:
        arr = arr.astype(np.int32)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"targets must be integer class ids, got dtype {arr.dtype}")
    counted = arr != ignore_index
    if ((counted & ((arr < 0) | (arr >= vocab)))).any():
        bad = arr[counted & ((arr < 0) | (arr >= vocab))]
        raise ValueError(f"targets must be class ids in [0, {vocab}) or ignore_index={ignore_index}; got {bad[:5].tolist()}")
    if arr.size and not counted.any():
        raise ValueError(f"every target is ignore_index={ignore_index}: the mean over no rows is undefined")
    return arr


def cross_entropy(logits, targets, *, ignore_index: int = -100, queue=None):
    """Mean over rows of ``logsumexp(z) − z[target]``: logits ``(..., V)``, integer targets ``(...)``.

    Rows whose target is ``ignore_index`` are left out of the mean (padding). Returns a
    0-d result.

    >>> round(float(cross_entropy(np.log([[0.25, 0.75]]), [1])), 6)       # −log 0.75
    0.287682
    """
    loss, _ = cross_entropy_with_stats(logits, targets, ignore_index=ignore_index, queue=queue)
    return loss


def cross_entropy_with_stats(logits, targets, *, ignore_index: int = -100, queue=None, gradient: bool = False):
    """:func:`cross_entropy` returning (loss, saved) where ``saved`` is what the backward needs.

    ``gradient=True`` (a backward will follow) also writes, in the same pass over each row of
    logits, the gradient for a loss gradient of 1: the common backward (the loss is the last
    node) then reads nothing, and any other gradient is computed afresh, so the result is bit for
    bit the same either way."""
    gradient = flag("gradient", gradient)
    vocab, rows = _check(logits, targets, ignore_index)
    checked = _host_targets(targets, vocab, ignore_index)
    call = OpCall("cross_entropy", queue=queue,
                  bad_input=f"targets must be class ids in [0, {vocab}) or ignore_index={ignore_index}, "
                            "with at least one row not ignored",
                  logits=logits, targets=targets)
    tz, tt = call.float_input("logits"), call.int_input("targets", checked)
    pairs, stats = Tensor.empty(call.queue, (rows, 2)), Tensor.empty(call.queue, (rows, 2))   # stats: (max, 1 / sum)
    sums, loss = Tensor.empty(call.queue, (2,)), call.output(())
    status = (call.stream.status, call.seq)
    options = _options(call)
    dz = None
    if gradient and rows:
        count, dz = Tensor.empty(call.queue, (1,)), Tensor.empty(call.queue, tz.shape)
        call.launch("cross_entropy.cl", "cross_entropy_count", (1,), (1,), tt.buffer, count.buffer, i32(rows),
                    i32(vocab), i32(ignore_index), options=options)
        call.launch("cross_entropy.cl", "cross_entropy_rows_grad", (round_up(rows, 16),), (16,),
                    tz.buffer, tt.buffer, pairs.buffer, stats.buffer, count.buffer, dz.buffer, i32(rows), i32(vocab),
                    i32(ignore_index), *status, options=options)
    else:
        call.launch("cross_entropy.cl", "cross_entropy_rows", (round_up(rows, 16),), (16,),
                    tz.buffer, tt.buffer, pairs.buffer, stats.buffer, i32(rows), i32(vocab), i32(ignore_index), *status,
                    options=options)
    sum_columns(call, pairs, sums, rows, 2, 1.0)
    call.launch("cross_entropy.cl", "cross_entropy_finish", (1,), (1,), sums.buffer, loss.buffer, *status,
                options=options)
    return call.result(loss, check=[False]), [tz, tt, stats, sums, ignore_index, dz]


def cross_entropy_backward(g, saved):
    """d loss / d logits from the loss's gradient ``g`` (a one-element Tensor) and ``saved``. The
    gradient the forward wrote (``gradient=True``) serves the first call only: it is handed out as
    the result, which a later call must not overwrite."""
    z, targets, stats, sums, ignore_index, ready = saved
    g = device_operand("cross_entropy backward", "g", g, dtype="float32")
    if g.size != 1:                               # the kernel reads g[0]: the loss's gradient
        raise ValueError(f"cross_entropy backward: g must be the loss's gradient, one element, got shape {g.shape}")
    saved[-1] = None
    vocab = z.shape[-1]
    rows = z.size // vocab
    call = OpCall("cross_entropy backward", g=g, logits=z)
    dz = call.output(z.shape) if ready is None else ready
    call.launch("cross_entropy.cl", "cross_entropy_backward", (round_up(rows, 16),), (16,),
                z.buffer, targets.buffer, stats.buffer, sums.buffer, g.buffer, dz.buffer, i32(rows), i32(vocab),
                i32(ignore_index), i32(ready is not None), call.stream.status, call.seq, options=_options(call))
    return call.result(dz, check=[False])
