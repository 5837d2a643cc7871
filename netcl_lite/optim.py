"""AdamW, global-norm gradient clipping and a warmup + cosine schedule, on the device.

``AdamW(params, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)`` follows
``torch.optim.AdamW``: decoupled weight decay (the weights shrink by ``lr·wd``
before the Adam step, whatever the gradient) and bias-corrected moments. The
update is one fused kernel (``kernels/adamw.cl``) that takes up to 16 tensors a
launch, reading each gradient once and writing the weights and both moments in place.

    >>> import numpy as np
    >>> from netcl_lite import autograd as ag
    >>> w = ag.tensor(np.ones(3, np.float32))
    >>> opt = AdamW({"w": w}, lr=0.1, weight_decay=0.0)
    >>> with ag.Tape() as tape:
    ...     loss = ag.sum(ag.mul(w, w))
    >>> tape.backward(loss)
    >>> opt.step()                          # the first step moves each weight by lr against its gradient's sign
    >>> w.numpy().round(4)
    array([0.9, 0.9, 0.9], dtype=float32)

Parameter groups are dicts, as in torch: ``AdamW([{"params": decayed, "weight_decay": 0.1},
{"params": gains, "weight_decay": 0.0}], lr=3e-3)``. The optimizer decays every
parameter it is given at its group's rate; the caller chooses the groups.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from . import autograd as ag
from .checks import dtype_is, flag, nonnegative_int, real
from .core.stream import stream_of
from .core.tensor import Tensor
from .ops import adamw as adamw_ops

#: elements per work-item of the gradient-norm pass (partial sums stay short: ~256·u relative error each).
NORM_CHUNK = 256


def _real(name: str, value, low: float, high: float = math.inf, *, low_open=False, high_open=False) -> float:
    value = real(name, value)
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if not math.isfinite(value) or too_low or too_high:
        lo, hi = ("(" if low_open else "["), (")" if high_open or high == math.inf else "]")
        raise ValueError(f"{name} must be in {lo}{low}, {high}{hi}, got {value}")
    return value


def _named(params, where: str) -> dict[str, ag.Node]:
    """{name: Node} from a dict or an iterable of Nodes (named by position)."""
    items = params.items() if isinstance(params, dict) else ((str(i), p) for i, p in enumerate(params))
    out = {}
    for name, p in items:
        if not isinstance(p, ag.Node) or not p.requires_grad:
            raise TypeError(f"{where}: parameter {name!r} must be an autograd Node with requires_grad=True, "
                            f"got {type(p).__name__}")
        out[str(name)] = p
    return out


class AdamW:
    """torch.optim.AdamW's update as one OpenCL kernel for up to 16 tensors; ``step()`` then ``zero_grad()``.

    ``params``: ``model.parameters()`` (a dict), an iterable of Nodes, or a list
    of group dicts ``{"params": ..., "weight_decay": ...}``. ``lr`` may be
    changed between steps (``opt.lr = schedule(step)``). Parameters without a
    gradient are skipped, as in torch.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.01):
        self.lr = _real("lr", lr, 0.0)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"betas must be a pair (beta1, beta2), got {betas!r}")
        self.betas = (_real("betas[0]", betas[0], 0.0, 1.0, high_open=True),
                      _real("betas[1]", betas[1], 0.0, 1.0, high_open=True))
        self.eps = _real("eps", eps, 0.0, low_open=True)
        if np.float32(self.eps) < np.finfo(np.float32).tiny:   # the kernel adds it in float32
            raise ValueError(f"eps={eps!r} is below float32's smallest normal number "
                             f"({np.finfo(np.float32).tiny:.3g}), so the update would divide by zero "
                             "where a gradient is 0; use e.g. 1e-8")
        default_wd = _real("weight_decay", weight_decay, 0.0)
        groups = params if isinstance(params, list) and params and all(isinstance(g, dict) for g in params) else None
        if groups is None:
            groups = [{"params": params}]
        self.groups = []   # [(weight_decay, {name: Node})]
        seen = {}
        for index, group in enumerate(groups):
            unknown = set(group) - {"params", "weight_decay"}
            if "params" not in group or unknown:
                raise ValueError(f"param group {index} must have 'params' and optionally 'weight_decay', got keys {sorted(group)}")
            wd = _real(f"param group {index} weight_decay", group.get("weight_decay", default_wd), 0.0)
            named = _named(group["params"], f"param group {index}")
            for name, p in named.items():
                if name in seen or any(p is q for q in seen.values()):
                    raise ValueError(f"parameter {name!r} appears in more than one group")
                seen[name] = p
            self.groups.append((wd, named))
        if not seen:
            raise ValueError("params is empty: give the optimizer at least one parameter")
        self.params = seen
        self.step_count = 0
        self.exp_avg = {n: Tensor.zeros(p.queue, p.shape) for n, p in seen.items()}
        self.exp_avg_sq = {n: Tensor.zeros(p.queue, p.shape) for n, p in seen.items()}

    def zero_grad(self) -> None:
        """Drop every parameter's gradient (the next backward starts from zero)."""
        ag.zero_grad(self.params)

    def step(self, norm=None) -> None:
        """One AdamW update of every parameter that has a gradient.

        ``norm``: what :func:`clip_grad_norm` returned with ``wait=False`` (the norm and the clip
        coefficient still on the device). Each gradient is then read times that coefficient, the
        clipping ``wait=False`` leaves to this step, and the update is skipped on the device when
        the norm is not finite, so a loop can leave the check to its one read-back after the
        step. The updates take a few launches for all the tensors (``kernels/adamw.cl``)."""
        if norm is not None and not (isinstance(norm, Tensor) and norm.shape == (2,) and norm.dtype == np.float32):
            raise TypeError("norm must be the (2,) float32 Tensor that clip_grad_norm(..., wait=False) returns, "
                            f"got {type(norm).__name__}")
        updates: dict[int, tuple] = {}                    # per queue: (queue, [(name, p, decay)])
        for wd, named in self.groups:
            decay = np.float32(1.0 - self.lr * wd)
            for name, p in named.items():
                if p.grad is None:
                    continue
                _device_gradient("AdamW.step: gradient", name, p.grad)
                if not _same_queue(p.grad.queue, p.queue):      # the step runs on the parameter's queue
                    raise ValueError(f"AdamW.step: the gradient of {name!r} is a Tensor of another command queue "
                                     "than the parameter's; the step would not wait for it")
                if norm is not None and not _same_queue(norm.queue, p.queue):
                    raise ValueError(f"AdamW.step: norm is a Tensor of another command queue than the parameter "
                                     f"{name!r}'s; the step would read it without waiting for that queue")
                if p.grad.shape != p.shape:
                    raise ValueError(f"gradient of {name!r} has shape {p.grad.shape}, the parameter {p.shape}")
                dtype_is(f"gradient of {name!r}", p.grad, "float32")     # the kernel reads float32 bits
                if p.value.size:
                    updates.setdefault(p.queue.int_ptr, (p.queue, []))[1].append((name, p, decay))
        self.step_count += 1                              # every gradient checked: nothing changed before
        t = self.step_count
        beta1, beta2 = self.betas
        bias1, bias2 = 1.0 - beta1 ** t, 1.0 - beta2 ** t
        scalars = (1.0 - beta1, beta2, 1.0 - beta2, self.lr / bias1, math.sqrt(bias2), self.eps)
        for queue, todo in updates.values():
            for i in range(0, len(todo), adamw_ops.STEP_SLOTS):       # one launch; its sequence numbers
                batch = todo[i:i + adamw_ops.STEP_SLOTS]               # name each tensor
                seqs = stream_of(queue).begin_all((f"AdamW.step ({name})", {"gradient": p.grad})
                                                  for name, p, _ in batch)
                adamw_ops.adamw_step(queue, [(p.value, p.grad, self.exp_avg[name], self.exp_avg_sq[name], decay, seq)
                                             for (name, p, decay), seq in zip(batch, seqs)],
                                     scalars, norm)             # inf/NaN reported at the next read-back

    def state_dict(self) -> dict:
        """{"step": t, "exp_avg": {name: array}, "exp_avg_sq": {name: array}}: what resuming needs exactly."""
        return {"step": self.step_count,
                "exp_avg": {n: t.numpy() for n, t in self.exp_avg.items()},
                "exp_avg_sq": {n: t.numpy() for n, t in self.exp_avg_sq.items()}}

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict`; names and shapes are checked before anything is written."""
        if not isinstance(state, dict) or set(state) != {"step", "exp_avg", "exp_avg_sq"}:
            raise ValueError("optimizer state must be a dict with keys 'step', 'exp_avg', 'exp_avg_sq'")
        step = state["step"]
        nonnegative_int("optimizer state: step", step)
        for key in ("exp_avg", "exp_avg_sq"):
            got = state[key]
            missing, extra = sorted(set(self.params) - set(got)), sorted(set(got) - set(self.params))
            if missing or extra:
                raise ValueError(f"optimizer state {key}: missing {missing}, unexpected {extra}")
            for name, arr in got.items():
                if np.shape(arr) != self.params[name].shape:
                    raise ValueError(f"optimizer state {key}.{name} has shape {np.shape(arr)}, "
                                     f"expected {self.params[name].shape}")
                values = np.asarray(arr)
                if values.dtype.kind not in "fiu" or not np.isfinite(values.astype(np.float32)).all():
                    raise ValueError(f"optimizer state {key}.{name} must hold numbers finite in float32")
                if key == "exp_avg_sq" and (values < 0).any():   # a mean of squares; sqrt of it next step
                    raise ValueError(f"optimizer state exp_avg_sq.{name} has negative entries; "
                                     "it is a running mean of squared gradients (>= 0): the state is corrupted")
        for key, tensors in (("exp_avg", self.exp_avg), ("exp_avg_sq", self.exp_avg_sq)):
            for name, arr in state[key].items():
                tensors[name] = Tensor.from_host(self.params[name].queue, np.asarray(arr, np.float32))
        self.step_count = int(step)


def clip_grad_norm(params, max_norm: float, *, wait: bool = True):
    """Scale all gradients together so their global L2 norm is at most ``max_norm``; return the norm before.

    As ``torch.nn.utils.clip_grad_norm_``: coefficient min(1, max_norm / (norm + 1e-6)).
    The norm and coefficient are computed on the device, in a few launches for all the
    tensors. By default the gradients are scaled in place and the norm is read back (a float; a
    non-finite norm raises ``ValueError``). With ``wait=False`` nothing is read and the gradients
    are left as they are: the result is a (2,) Tensor holding the norm and the coefficient, which
    :meth:`AdamW.step` takes as ``norm=``, scaling each gradient as it reads it (one pass over the
    gradients fewer), and a loop reads with its loss at the end of the step. Parameters without a
    gradient are skipped.
    """
    max_norm = _real("max_norm", max_norm, 0.0, low_open=True)
    flag("wait", wait)
    named = _named(params, "clip_grad_norm")
    for name, p in named.items():
        if p.grad is not None:                           # the norm kernels read float32 bits
            _device_gradient("clip_grad_norm: gradient", name, p.grad)
            dtype_is(f"clip_grad_norm: gradient of {name!r}", p.grad, "float32")
    grads = [p.grad for p in named.values() if p.grad is not None]
    if not grads:
        raise ValueError("clip_grad_norm: no parameter has a gradient; call backward first")
    queue = grads[0].queue
    if any(g.queue.context != queue.context for g in grads):
        raise ValueError("clip_grad_norm: the gradients live on different OpenCL contexts; give one device's")
    for name, p in named.items():
        if p.grad is not None and not _same_queue(p.grad.queue, queue):
            # its kernels run on the first gradient's queue, which would not wait for this one's
            raise ValueError(f"clip_grad_norm: the gradient of {name!r} is a Tensor of another command queue than "
                             "the first gradient's (one context); the norm runs on one queue and would not wait "
                             "for the other: make every gradient on one queue")
    stream_of(queue).begin("clip_grad_norm")
    grads = [g for g in grads if g.size]
    partials = Tensor.empty(queue, (max(1, sum(-(-g.size // NORM_CHUNK) for g in grads)),))
    count = adamw_ops.sum_squares(grads, NORM_CHUNK, partials) if grads else 0
    out = Tensor.empty(queue, (2,))
    adamw_ops.clip_coefficient(partials, count, max_norm, out)
    if not wait:
        return out                      # AdamW.step(norm=out) applies the coefficient
    unique, seen = [], set()
    for g in grads:                     # a buffer two parameters share is scaled once
        if id(g.buffer) not in seen:
            seen.add(id(g.buffer))
            unique.append(g)
    if unique:
        adamw_ops.scale_by(unique, out)
    return finite_norm(float(out.numpy()[0]))   # syncs the queue: raises here if an earlier op failed


def _same_queue(a, b) -> bool:
    return a is b or a == b


def _device_gradient(what: str, name: str, grad) -> None:
    """TypeError naming the parameter for a gradient that is no Tensor (a NumPy array set by hand has no
    buffer for the kernels to read)."""
    if not isinstance(grad, Tensor):
        raise TypeError(f"{what} of {name!r} must be a Tensor (on the parameter's device), got "
                        f"{type(grad).__name__}; set it with Tensor.from_host(queue, array)")


def finite_norm(norm: float) -> float:
    """``norm`` (what :func:`clip_grad_norm` computed) if finite, else the ``ValueError`` it raises."""
    if not math.isfinite(norm):
        raise ValueError("clip_grad_norm: the gradients' norm is not finite (a gradient overflowed or is NaN)")
    return norm


def _decay_progress(step: int, max_lr, warmup_steps: int, total_steps: int, min_lr, decay_steps) -> tuple[float, float, float | None]:
    """Check a schedule's arguments; return (max_lr, min_lr, progress): None during warmup, else
    how far ``step`` is into the final ``decay_steps`` steps, from 0 (before them) to 1 (at their end)."""
    for name, value in (("step", step), ("warmup_steps", warmup_steps), ("total_steps", total_steps)):
        nonnegative_int(name, value)
    max_lr = _real("max_lr", max_lr, 0.0)
    min_lr = _real("min_lr", min_lr, 0.0, max_lr)
    if warmup_steps > total_steps:
        raise ValueError(f"warmup_steps={warmup_steps} must not exceed total_steps={total_steps}")
    if decay_steps is None:
        decay_steps = total_steps - warmup_steps
    elif isinstance(decay_steps, bool) or not isinstance(decay_steps, numbers.Integral) \
            or not 1 <= decay_steps <= total_steps - warmup_steps:
        raise ValueError(f"decay_steps must be None or an int in [1, total_steps - warmup_steps = "
                         f"{total_steps - warmup_steps}], got {decay_steps!r}")
    if step < warmup_steps:
        return max_lr, min_lr, None
    if step >= total_steps:
        return max_lr, min_lr, 1.0
    start = total_steps - decay_steps
    return max_lr, min_lr, min(max(step - start, 0) / max(decay_steps, 1), 1.0)


def cosine_schedule(step: int, *, max_lr: float, warmup_steps: int, total_steps: int, min_lr: float = 0.0,
                    decay_steps: int | None = None) -> float:
    """Learning rate for 0-based ``step``: linear warmup to ``max_lr``, then cosine decay to ``min_lr``.

    Warmup: max_lr · (step + 1) / warmup_steps for step < warmup_steps. Then
    min_lr + (max_lr − min_lr) · (1 + cos(π · progress)) / 2, where progress runs from 0
    to 1 over the last ``decay_steps`` steps before total_steps (None: every step after the
    warmup) and the rate holds at max_lr before them; min_lr from total_steps on.

    >>> [round(cosine_schedule(s, max_lr=1.0, warmup_steps=2, total_steps=6), 3) for s in range(7)]
    [0.5, 1.0, 1.0, 0.854, 0.5, 0.146, 0.0]
    """
    max_lr, min_lr, progress = _decay_progress(step, max_lr, warmup_steps, total_steps, min_lr, decay_steps)
    if progress is None:
        return max_lr * (step + 1) / warmup_steps
    return min_lr + (max_lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


def linear_schedule(step: int, *, max_lr: float, warmup_steps: int, total_steps: int, min_lr: float = 0.0,
                    decay_steps: int | None = None) -> float:
    """Learning rate for 0-based ``step``: linear warmup to ``max_lr``, then a straight line down to ``min_lr``.

    The warmup is :func:`cosine_schedule`'s. Then min_lr + (max_lr − min_lr) · (1 − progress),
    progress as there: with ``decay_steps`` the rate holds at max_lr until the last
    ``decay_steps`` steps (warmup, stable, decay), with None it falls from the end of the
    warmup. Against the cosine it keeps more of the rate through the second half of training.

    >>> [round(linear_schedule(s, max_lr=1.0, warmup_steps=2, total_steps=6), 3) for s in range(7)]
    [0.5, 1.0, 1.0, 0.75, 0.5, 0.25, 0.0]
    >>> [round(linear_schedule(s, max_lr=1.0, warmup_steps=2, total_steps=6, decay_steps=2), 3) for s in range(7)]
    [0.5, 1.0, 1.0, 1.0, 1.0, 0.5, 0.0]
    """
    max_lr, min_lr, progress = _decay_progress(step, max_lr, warmup_steps, total_steps, min_lr, decay_steps)
    if progress is None:
        return max_lr * (step + 1) / warmup_steps
    return min_lr + (max_lr - min_lr) * (1.0 - progress)


#: The decays :class:`~netcl_lite.train.TrainConfig` can name, after the shared linear warmup.
SCHEDULES = {"cosine": cosine_schedule, "linear": linear_schedule}

# -- float64 references --------------------------------------------------------------------------

# --8<-- [start:adamw_reference]
def adamw_reference(p, g, m, v, *, step: int, lr: float, betas, eps: float, weight_decay: float):
    """One AdamW step in float64 from torch's definition → (p, m, v). Arrays of one shape."""
    p, g, m, v = (np.asarray(x, np.float64) for x in (p, g, m, v))
    beta1, beta2 = betas
    p = p * (1 - lr * weight_decay)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** step), v / (1 - beta2 ** step)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
# --8<-- [end:adamw_reference]


def global_norm_reference(grads) -> float:
    """sqrt(Σ over every tensor of Σ g²), in float64."""
    return math.sqrt(sum(float(np.sum(np.asarray(g, np.float64) ** 2)) for g in grads))
