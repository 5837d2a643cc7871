"""Training a :class:`~netcl_lite.nn.DecoderLM`: random windows, AdamW, held-out evaluation, checkpoints.

:func:`train` is one flat loop, in nanoGPT's shape, readable top to bottom:

    for each step: learning rate from the schedule → a batch of random windows →
    forward and loss on the tape → backward → clip the global gradient norm →
    AdamW step → log; every ``eval_interval`` steps the held-out loss; every
    ``checkpoint_interval`` steps (and at the end, and on Ctrl-C) a checkpoint.

A checkpoint directory holds the model as transformers saves it (``config.json``,
``model.safetensors``), the optimizer moments (``optimizer.safetensors``) and
``trainer_state.json`` (step, the loader's random state, the log so far), so
``train(..., resume=True)`` continues bit-identically to a run never stopped.
``log.json`` is the loss curve. Weight decay applies to the projection matrices
(and an untied head), not to norm gains or the token embedding.
"""

from __future__ import annotations

import json
import math
import shutil
import signal
import threading
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from . import autograd as ag
from .checks import count, nonnegative_int, nonnegative_real, one_of, positive_int
from .files import flush_to_disk, read_regular, temporary_name
from .core.tensor import read
from .optim import SCHEDULES, AdamW, clip_grad_norm, finite_norm

TRAINER_STATE, OPTIMIZER_FILE, LOG_FILE = "trainer_state.json", "optimizer.safetensors", "log.json"


@dataclass(frozen=True)
class TrainConfig:
    """Everything the loop needs besides the model and the data."""

    batch_size: int = 16          # windows per step
    block_size: int = 128         # tokens per window (the context trained on)
    max_steps: int = 1000
    learning_rate: float = 3e-3   # peak, after warmup
    min_lr: float = 3e-4          # end of the decay
    decay: str = "cosine"         # after warmup, down to min_lr: "cosine" or "linear" (optim.SCHEDULES)
    decay_steps: int = 0          # the decay takes the last decay_steps steps, the rate holding before them (0: all after warmup)
    warmup_steps: int = 50
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    grad_clip: float = 1.0        # global L2 norm
    eval_interval: int = 100      # steps between held-out evaluations (0: only at the end)
    eval_windows: int = 64        # held-out windows per evaluation (the first ones: the same every time)
    checkpoint_interval: int = 0  # steps between checkpoints (0: only at the end and on Ctrl-C)
    seed: int = 0                 # the loader's windows

    def __post_init__(self):
        one_of("decay", self.decay, SCHEDULES)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "str":
                continue
            if f.type == "int":
                if f.name in ("eval_interval", "checkpoint_interval", "warmup_steps", "seed", "decay_steps"):
                    nonnegative_int(f.name, value)
                else:
                    positive_int(f.name, value)
            else:
                nonnegative_real(f.name, value)
        if self.min_lr > self.learning_rate:
            raise ValueError(f"min_lr={self.min_lr} must not exceed learning_rate={self.learning_rate}")
        if self.warmup_steps > self.max_steps:
            raise ValueError(f"warmup_steps={self.warmup_steps} must not exceed max_steps={self.max_steps}")
        if self.decay_steps > self.max_steps - self.warmup_steps:
            raise ValueError(f"decay_steps={self.decay_steps} must not exceed max_steps - warmup_steps = "
                             f"{self.max_steps - self.warmup_steps}")
        for name in ("beta1", "beta2"):
            if not getattr(self, name) < 1:
                raise ValueError(f"{name} must be < 1, got {getattr(self, name)}")
        if self.grad_clip <= 0 or self.eps <= 0:
            raise ValueError("grad_clip and eps must be > 0")


def learning_rate_at(step: int, config: TrainConfig) -> float:
    """The rate of 0-based ``step`` under ``config``'s schedule: warmup, then its ``decay`` to ``min_lr``."""
    return SCHEDULES[config.decay](step, max_lr=config.learning_rate, warmup_steps=config.warmup_steps,
                                   total_steps=config.max_steps, min_lr=config.min_lr,
                                   decay_steps=config.decay_steps or None)


def _token_ids(name: str, ids, need: int) -> np.ndarray:
    arr = np.asarray(ids)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be a 1-D array of integer token ids, got {arr.dtype} {arr.shape}")
    if arr.size < need:
        raise ValueError(f"{name} holds {arr.size} tokens; a window needs {need}")
    return arr.astype(np.int64, copy=False)


class WindowLoader:
    """Batches of random windows over a 1-D token array, from a seeded generator that can be saved.

    ``next_batch()`` → (x, y), each (batch_size, block_size): y is x shifted by one token.

    >>> x, y = WindowLoader(np.arange(100), batch_size=2, block_size=4, seed=0).next_batch()
    >>> bool((y == x + 1).all()), x.shape
    (True, (2, 4))
    """

    def __init__(self, ids, batch_size: int, block_size: int, seed: int = 0):
        self.batch_size, self.block_size = _positive_int("batch_size", batch_size), _positive_int("block_size", block_size)
        self.ids = _token_ids("ids", ids, self.block_size + 1)
        self.rng = np.random.default_rng(seed)

    def next_batch(self) -> tuple[np.ndarray, np.ndarray]:
        starts = self.rng.integers(0, self.ids.size - self.block_size, size=self.batch_size)
        rows = starts[:, None] + np.arange(self.block_size + 1)
        windows = self.ids[rows]
        return windows[:, :-1], windows[:, 1:]

    def state_dict(self) -> dict:
        return {"bit_generator": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["bit_generator"]


class RecordedStep:
    """Forward, loss, backward and global-norm clipping of one training step, recorded on the first
    call and replayed after it (:class:`~netcl_lite.core.replay.Replay`): the same kernels with the
    same arguments in the same order, so a replayed step computes what the eager one would, bit for
    bit, without the ops' Python on the host.

    ``step(x, y)`` copies the batch (integer arrays of shape (batch_size, block_size)) into the
    step's own int32 device buffers, runs the commands, leaves each parameter's gradient in
    ``.grad`` (before clipping) and returns ``(loss, clip)``: the loss Tensor and the (2,) Tensor
    that :meth:`~netcl_lite.optim.AdamW.step` takes as ``norm`` (it applies the clip coefficient
    as it reads the gradients). The ids are checked here (integers in
    [0, vocab), ``ValueError`` otherwise) before they are copied. The replay reads the parameters' buffers as they
    are; if one is replaced (a new Tensor), the next call records again. A stretch that cannot be
    recorded runs eagerly every time (:attr:`refused` says why).
    """

    def __init__(self, model, grad_clip: float, batch_size: int, block_size: int):
        from .core.tensor import Tensor

        self.model, self.grad_clip, self.vocab = model, grad_clip, model.config.vocab_size
        self.params = model.parameters()
        queue = model.queue
        self.x = Tensor.empty(queue, (batch_size, block_size), np.int32)
        self.y = Tensor.empty(queue, (batch_size, block_size), np.int32)
        self.replay, self.refused, self._bound = None, None, None

    def _eager(self):
        with ag.Tape() as tape:
            loss = self.model.loss(self.x, self.y)
        tape.backward(loss)
        return loss.value, clip_grad_norm(self.params, self.grad_clip, wait=False)

    def __call__(self, x, y):
        from .core.replay import Replay
        from .core.stream import stream_of

        stream = stream_of(self.x.queue)
        for name, host, dev in (("x", x, self.x), ("y", y, self.y)):
            host = np.asarray(host)
            if host.shape != dev.shape or host.dtype.kind not in "iu":
                raise ValueError(f"{name} must be integer ids of shape {dev.shape}, got {host.dtype} {host.shape}")
            if host.min() < 0 or host.max() >= self.vocab:
                raise ValueError(f"{name} must lie in [0, {self.vocab}) (the vocabulary), got ids from "
                                 f"{host.min()} to {host.max()}")
            stream.write(dev.buffer, np.ascontiguousarray(host, dtype=np.int32))
        bound = tuple(p.value.buffer.int_ptr for p in self.params.values())
        if self.replay is not None and bound == self._bound:
            loss, clip, *grads = self.replay.run()
            for p, g in zip(self.params.values(), grads):
                p.grad = g
            return loss, clip
        if self.refused is not None:
            return self._eager()
        with stream.record() as recording:
            loss, clip = self._eager()
        grads = [p.grad for p in self.params.values()]
        if any(g is None for g in grads):
            recording.refuse("a parameter got no gradient")
        try:
            self.replay = Replay(self.x.queue, recording, bound=[p.value for p in self.params.values()]
                                 + [self.x, self.y], outputs=[loss, clip, *grads])
            self._bound = bound
        except ValueError as err:
            self.replay, self.refused = None, str(err)
        return loss, clip


def _positive_int(name: str, value) -> int:
    """``value`` as an int >= 1; floats, strings and bools are refused rather than rounded."""
    return count(name, value, 1)


def eval_windows(ids, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """All non-overlapping windows of ``ids``: every token after the first is a target exactly once
    (the tail shorter than a window is dropped)."""
    ids = _token_ids("ids", ids, block_size + 1)
    n = (ids.size - 1) // block_size
    x = ids[: n * block_size].reshape(n, block_size)
    y = ids[1: n * block_size + 1].reshape(n, block_size)
    return x, y


def evaluate(model, ids, block_size: int, batch_size: int, max_windows: int | None = None) -> tuple[float, int]:
    """(total cross-entropy in nats, number of targets) over the first ``max_windows`` windows of ``ids``."""
    if ag.recording():
        raise ValueError("evaluate runs without a tape; call it outside `with Tape()`")
    for name, value in (("batch_size", batch_size), ("block_size", block_size)):
        positive_int(name, value)
    if max_windows is not None:
        _positive_int("max_windows", max_windows)       # None for every window; -1 would drop the last
    x, y = eval_windows(ids, block_size)
    if max_windows is not None:
        x, y = x[:max_windows], y[:max_windows]
    total = 0.0
    for i in range(0, len(x), batch_size):
        xb, yb = x[i:i + batch_size], y[i:i + batch_size]
        total += float(model.loss(xb, yb).numpy()) * yb.size
    return total, int(y.size)


def parameter_groups(model, weight_decay: float) -> list[dict]:
    """AdamW groups: decay the projection matrices (and an untied head); not norm gains or the embedding."""
    decay, plain = {}, {}
    for name, p in model.parameters().items():
        (decay if len(p.shape) == 2 and name != "embed.table" else plain)[name] = p
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


# -- checkpoints ---------------------------------------------------------------------------------

def save_checkpoint(directory, model, optimizer: AdamW, trainer_state: dict) -> Path:
    """Write model, optimizer and trainer state to a fresh folder, then swap it in place of ``directory``."""
    from safetensors.numpy import save_file

    final = Path(directory)
    check_out_dir(final)
    tmp = temporary_name(final)              # unique per process and thread
    model.save_pretrained(tmp)
    opt = optimizer.state_dict()
    tensors = {f"exp_avg.{n}": a for n, a in opt["exp_avg"].items()}
    tensors.update({f"exp_avg_sq.{n}": a for n, a in opt["exp_avg_sq"].items()})
    save_file(tensors, str(tmp / OPTIMIZER_FILE), metadata={"step": str(opt["step"])})
    (tmp / TRAINER_STATE).write_text(json.dumps(trainer_state) + "\n", encoding="utf-8")
    (tmp / LOG_FILE).write_text(json.dumps(trainer_state["log"], indent=1) + "\n", encoding="utf-8")
    flush_to_disk(tmp)                       # on disk before the swap publishes it
    old = temporary_name(final.with_name(final.name + ".old"))
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


#: the largest trainer_state.json read when resuming (it holds the log: ~100 bytes a step)
MAX_STATE_BYTES = 256 << 20

#: the files a checkpoint folder holds; a folder with anything else is the user's, not ours to replace
CHECKPOINT_FILES = frozenset({"config.json", "model.safetensors", OPTIMIZER_FILE, TRAINER_STATE, LOG_FILE})


def check_out_dir(directory: Path) -> None:
    """Refuse an ``out_dir`` that saving would destroy: an existing file, or a folder holding anything
    but a checkpoint's own files (saving swaps the whole folder for a new one)."""
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"out_dir={str(directory)!r} exists and is not a directory; give a new or "
                         "checkpoint directory (the file is left as it is)")
    if directory.is_dir():
        foreign = sorted(p.name for p in directory.iterdir() if p.name not in CHECKPOINT_FILES)
        if foreign:
            raise ValueError(f"out_dir={str(directory)!r} holds {foreign[:5]}, which are not checkpoint files; "
                             "give an empty or new directory, or one a previous run wrote")


def read_optimizer_state(directory) -> dict:
    """The AdamW state a checkpoint folder (a Chapter 9 run's folder is one) holds, as
    :meth:`~netcl_lite.optim.AdamW.state_dict` gives it: ``{"step", "exp_avg", "exp_avg_sq"}``,
    the moments by parameter name. Checked against a model by ``AdamW.load_state_dict``."""
    from safetensors import safe_open

    from .nn.checkpoint import read_tensors

    file = Path(directory) / OPTIMIZER_FILE
    tensors = read_tensors(file)
    try:
        with safe_open(str(file), framework="np") as f:
            step = int(f.metadata()["step"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{file}: no optimizer step in its metadata (not a checkpoint's optimizer file?)") from err
    state = {"step": step, "exp_avg": {}, "exp_avg_sq": {}}
    for key, arr in tensors.items():
        kind, _, name = key.partition(".")
        if kind not in ("exp_avg", "exp_avg_sq") or not name:
            raise ValueError(f"{file}: unexpected tensor {key!r} (an optimizer file holds exp_avg.* and exp_avg_sq.*)")
        state[kind][name] = arr
    return state


def load_checkpoint(directory, model, optimizer: AdamW) -> dict:
    """Restore model weights and optimizer moments from ``directory``; return its trainer state."""
    from .nn.checkpoint import WEIGHTS_FILE, read_config, read_tensors

    path = Path(directory)
    config = read_config(path)
    if config != model.config:
        raise ValueError(f"{path}: the checkpoint's config {config} differs from the model's {model.config}")
    raw = read_regular(path / TRAINER_STATE, MAX_STATE_BYTES, TRAINER_STATE)   # no pipe or device
    try:
        state = json.loads(raw)
    except (ValueError, RecursionError) as err:      # RecursionError: JSON nested too deeply to read
        raise ValueError(f"{path / TRAINER_STATE}: not a trainer state (not readable JSON: "
                         f"{type(err).__name__})") from None
    if not isinstance(state, dict) or not {"step", "loader", "log"} <= set(state):
        raise ValueError(f"{path / TRAINER_STATE}: not a trainer state (expected a JSON object with 'step', "
                         f"'loader' and 'log', as save_checkpoint writes)")
    optimizer.load_state_dict(read_optimizer_state(path))
    model.load_state_dict(read_tensors(path / WEIGHTS_FILE))
    return state


class _Interrupt:
    """Turn Ctrl-C into a request honoured between steps, so a checkpoint never holds half a step.

    A second Ctrl-C interrupts at once. Outside the main thread signals cannot be
    caught and the ordinary KeyboardInterrupt applies.
    """

    def __init__(self):
        self.requested, self._old = False, None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        return False


# -- the loop --------------------------------------------------------------------------------------

def train(model, train_ids, val_ids, config: TrainConfig, out_dir=None, *, resume: bool = False,
          progress: bool | None = None, callback=None) -> dict:
    """Train ``model`` in place; return the log {"train": [...], "eval": [...], ...}.

    ``out_dir``: where checkpoints and ``log.json`` go (None: nowhere).
    ``resume``: continue from the checkpoint in ``out_dir``. ``progress``: the
    tqdm bar (None: only on a terminal). ``callback(step, record)`` runs after
    each step. Ctrl-C finishes the current step, writes a checkpoint and
    re-raises ``KeyboardInterrupt``.
    """
    from tqdm.auto import tqdm

    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    if config.block_size > model.config.max_position_embeddings:
        raise ValueError(f"block_size={config.block_size} exceeds the model's max_position_embeddings="
                         f"{model.config.max_position_embeddings}")
    if resume and out_dir is None:
        raise ValueError("resume=True needs out_dir, the checkpoint to resume from")
    if out_dir is not None:
        check_out_dir(Path(out_dir))
    val_ids = _token_ids("val_ids", val_ids, config.block_size + 1)
    loader = WindowLoader(train_ids, config.batch_size, config.block_size, config.seed)
    opt = AdamW(parameter_groups(model, config.weight_decay), lr=config.learning_rate,
                betas=(config.beta1, config.beta2), eps=config.eps)
    forward_backward = RecordedStep(model, config.grad_clip, config.batch_size, config.block_size)
    tokens_per_step = config.batch_size * config.block_size
    log = {"config": asdict(config), "model": model.config.to_dict(), "tokens_per_step": tokens_per_step,
           "parameters": model.num_parameters(), "train": [], "eval": []}
    step, seconds = 0, 0.0
    if resume:
        state = load_checkpoint(out_dir, model, opt)
        if state["log"]["config"] != log["config"]:
            raise ValueError(f"{out_dir}: the checkpoint was trained with another TrainConfig; resume with the same one")
        loader.load_state_dict(state["loader"])
        step, log = state["step"], state["log"]
        seconds = log["train"][-1]["seconds"] if log["train"] else 0.0

    def checkpoint():
        if out_dir is not None:
            save_checkpoint(out_dir, model, opt, {"step": step, "loader": loader.state_dict(), "log": log})

    def held_out():
        nats, count = evaluate(model, val_ids, config.block_size, config.batch_size, config.eval_windows)
        log["eval"].append({"step": step, "loss": nats / count})

    bar = tqdm(total=config.max_steps, initial=step, disable=(not progress) if progress is not None else None,
               unit="step", desc="training")
    with _Interrupt() as interrupt:
        # --8<-- [start:loop]
        while step < config.max_steps:
            if config.eval_interval and step % config.eval_interval == 0 and not any(
                    e["step"] == step for e in log["eval"]):
                held_out()
            began = time.perf_counter()
            opt.lr = learning_rate_at(step, config)
            x, y = loader.next_batch()
            loss, clip = forward_backward(x, y)           # forward, loss, backward, clipping (the norm
            opt.step(norm=clip)                           # stays on the device); skipped there if not finite
            opt.zero_grad()
            loss_host, clip_host = read(loss, clip)       # the step's one read-back
            value, norm = float(loss_host), finite_norm(float(clip_host[0]))
            del loss, clip
            if not math.isfinite(value):
                raise FloatingPointError(f"step {step}: the loss is {value}; lower learning_rate or check the data")
            step += 1
            elapsed = time.perf_counter() - began
            seconds += elapsed
            record = {"step": step, "loss": value, "lr": opt.lr, "grad_norm": norm, "seconds": seconds}
            log["train"].append(record)
            bar.set_postfix(loss=f"{value:.3f}", tok_s=f"{tokens_per_step / elapsed:,.0f}")
            bar.update()
            if callback is not None:
                callback(step, record)
            if config.checkpoint_interval and step % config.checkpoint_interval == 0:
                checkpoint()
            if interrupt.requested:
                checkpoint()
                bar.close()
                raise KeyboardInterrupt(f"stopped after step {step}; checkpoint in {out_dir}")
        # --8<-- [end:loop]
    bar.close()
    if not log["eval"] or log["eval"][-1]["step"] != step:
        held_out()
    checkpoint()
    return log
