"""The AdamW update and the global-norm clipping passes as launches of ``kernels/adamw.cl``.

:mod:`netcl_lite.optim` owns the optimizer's state and arguments; this module owns
the kernel launches it makes, as every other op's module owns its own. The float64
twins are :func:`netcl_lite.optim.adamw_reference` and
:func:`netcl_lite.optim.global_norm_reference`.

The passes over every parameter tensor take many tensors a launch (each in its own buffers):
a model's step updates tens of tensors, and on PoCL's CPU driver a launch costs more than the
update of a small tensor.
"""

from __future__ import annotations

import numpy as np

from ..core.kernels import vector_lanes
from ..core.stream import stream_of
from .operands import round_up

#: work-group size of the launches; adamw_step's and scale_by's items take a vector of the device's
#: lanes each
LOCAL = 16
#: tensors per launch of ``adamw_step`` (the kernel's MT): a slot takes four buffers and four scalars,
#: 48 bytes of arguments, so 16 slots stay within the 1024 bytes of arguments that every OpenCL device
#: accepts (the least CL_DEVICE_MAX_PARAMETER_SIZE may be)
STEP_SLOTS = 16
#: tensors per launch of ``sum_squares`` and ``scale_by``: a buffer and two scalars a slot
PASS_SLOTS = 32
_PAST = np.int32(2**31 - 1)      # an unused slot's run start: past every grid


def _launches(per: int, items: list) -> list[list]:
    """``items`` cut into launches of at most ``per`` slots."""
    return [items[i:i + per] for i in range(0, len(items), per)]


def _runs(counts, per: int) -> tuple[list[np.int32], int]:
    """Each slot's run start (``counts`` work-groups or work-items each, then :data:`_PAST` for the
    unused slots up to ``per``) and the grid's length."""
    starts, total = [], 0
    for c in counts:
        starts.append(np.int32(total))
        total += c
    return starts + [_PAST] * (per - len(counts)), total


def _options(queue, slots: int) -> tuple:
    return (f"-DMT={slots}", f"-DVW={vector_lanes(queue.device)}")


def _pad(values, per: int, fill) -> list:
    """One value per slot: ``values``, then ``fill`` for the unused slots."""
    return list(values) + [fill] * (per - len(values))


def adamw_step(queue, items, scalars, gate=None) -> None:
    """One AdamW update of every tensor in ``items``, in place, :data:`STEP_SLOTS` tensors a launch.

    ``items``: (value, grad, exp_avg, exp_avg_sq, decay, seq) per tensor, each of size > 0 on
    ``queue``: ``decay`` is ``1 - lr·wd``, ``seq`` the stream's sequence number under which a
    non-finite update of that tensor is reported. ``scalars`` are (1-β1, β2, 1-β2, lr/bias1,
    sqrt(bias2), eps). With ``gate``, the (2,) Tensor that :func:`clip_coefficient` wrote, every
    tensor is left as it is when the norm in it is not finite, and otherwise each gradient is read
    times the clip coefficient in it (the gradients themselves are not changed).
    """
    stream = stream_of(queue)
    gated = (np.int32(1), gate.buffer) if gate is not None else (np.int32(0), stream.status)
    scalars = tuple(np.float32(s) for s in scalars)
    per, span = STEP_SLOTS, LOCAL * vector_lanes(queue.device)
    for batch in _launches(per, items):
        starts, groups = _runs([-(-x[0].size // span) for x in batch], per)
        p, g, m, v = (_pad([x[j].buffer for x in batch], per, batch[0][j].buffer) for j in range(4))
        stream.launch("adamw.cl", "adamw_step", (groups * LOCAL,), (LOCAL,), *gated, *scalars, stream.status,
                      *p, *g, *m, *v, *_pad([np.int32(x[0].size) for x in batch], per, np.int32(0)), *starts,
                      *_pad([np.int32(x[5]) for x in batch], per, np.int32(0)),
                      *_pad([np.float32(x[4]) for x in batch], per, np.float32(1.0)), options=_options(queue, per))


def sum_squares(grads, chunk: int, partials) -> int:
    """The sums of squares of each gradient's ``chunk``-element chunks, into ``partials``, one
    gradient's after another's (every size > 0, one queue), :data:`PASS_SLOTS` a launch.
    Returns how many partials were written."""
    stream = stream_of(partials.queue)
    per, offset = PASS_SLOTS, 0
    for batch in _launches(per, grads):
        starts, total = _runs([-(-g.size // chunk) for g in batch], per)
        stream.launch("adamw.cl", "sum_squares", (round_up(total, LOCAL),), (LOCAL,), np.int32(chunk),
                      partials.buffer, np.int32(offset), *_pad([g.buffer for g in batch], per, batch[0].buffer),
                      *_pad([np.int32(g.size) for g in batch], per, np.int32(0)), *starts,
                      options=_options(stream.queue, per))
        offset += total
    return offset


def clip_coefficient(partials, count: int, max_norm: float, out) -> None:
    """Write the norm, sqrt of the first ``count`` partials' sum, and min(1, max_norm/(norm+1e-6)) to ``out``."""
    stream_of(partials.queue).launch("adamw.cl", "clip_coefficient", (1,), (1,), partials.buffer,
                                     np.int32(count), np.float32(max_norm), out.buffer)


def scale_by(grads, coefficient) -> None:
    """Multiply each of ``grads`` (every size > 0, one queue) in place by the coefficient that
    :func:`clip_coefficient` wrote (``coefficient[1]``), :data:`PASS_SLOTS` a launch."""
    queue = coefficient.queue
    stream = stream_of(queue)
    per, span = PASS_SLOTS, LOCAL * vector_lanes(queue.device)
    for batch in _launches(per, grads):
        starts, groups = _runs([-(-g.size // span) for g in batch], per)
        stream.launch("adamw.cl", "scale_by", (groups * LOCAL,), (LOCAL,), coefficient.buffer,
                      *_pad([g.buffer for g in batch], per, batch[0].buffer),
                      *_pad([np.int32(g.size) for g in batch], per, np.int32(0)), *starts,
                      options=_options(queue, per))
