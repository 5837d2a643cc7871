"""The AdamW update and the global-norm clipping passes as launches of ``kernels/adamw.cl``.

:mod:`netcl_lite.optim` owns the optimizer's state and arguments; this module owns
the kernel launches it makes, as every other op's module owns its own. The float64
twins are :func:`netcl_lite.optim.adamw_reference` and
:func:`netcl_lite.optim.global_norm_reference`.
"""

from __future__ import annotations

import numpy as np

from ..core.stream import stream_of
from .operands import round_up

#: work-group size of the element-wise launches.
LOCAL = 64


def _run(queue, name, n, *args, local=LOCAL):
    """Enqueue one kernel of adamw.cl; the queue's stream keeps its buffers alive until they have run."""
    stream_of(queue).launch("adamw.cl", name, (round_up(n, local),), (local,), *args)


def adamw_step(value, grad, exp_avg, exp_avg_sq, decay, scalars, seq: int) -> None:
    """Update ``value`` and both moments in place from ``grad``, one fused kernel.

    ``decay`` is ``1 - lr·wd``; ``scalars`` are (1-β1, β2, 1-β2, lr/bias1, sqrt(bias2), eps)
    as float32. ``seq`` is the stream's sequence number of this step, under which a
    non-finite update is reported at the next read-back.
    """
    n = value.size
    if n:
        _run(value.queue, "adamw_step", n, value.buffer, grad.buffer, exp_avg.buffer, exp_avg_sq.buffer,
             np.int32(n), np.float32(decay), *(np.float32(s) for s in scalars),
             stream_of(value.queue).status, np.int32(seq))


def sum_squares_chunks(grad, chunk: int, partials, offset: int) -> None:
    """Write the sums of squares of ``grad``'s ``chunk``-element chunks into ``partials`` from ``offset``."""
    count = -(-grad.size // chunk)
    if count:
        _run(grad.queue, "sum_squares_chunks", count, grad.buffer, np.int32(grad.size), np.int32(chunk),
             partials.buffer, np.int32(offset))


def clip_coefficient(partials, count: int, max_norm: float, out) -> None:
    """Write the norm, sqrt of the first ``count`` partials' sum, and min(1, max_norm/(norm+1e-6)) to ``out``."""
    _run(partials.queue, "clip_coefficient", 1, partials.buffer, np.int32(count), np.float32(max_norm),
         out.buffer, local=1)


def scale_by(grad, coefficient) -> None:
    """Multiply ``grad`` in place by the coefficient ``clip_coefficient`` wrote (``coefficient[1]``)."""
    if grad.size:
        _run(grad.queue, "scale_by", grad.size, grad.buffer, np.int32(grad.size), coefficient.buffer)
