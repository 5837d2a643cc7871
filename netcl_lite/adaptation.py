"""Dynamic evaluation: a model that keeps learning from the text it has already coded.

A coder that predicts token after token with a language model can let the model learn as it
goes, as long as the decoder can do exactly the same (Krause et al., 2018, "Dynamic
Evaluation of Neural Sequence Models", ICML; Krause et al., 2019, "Dynamic Evaluation of
Transformer Language Models", arXiv:1904.08378). Every ``chunk`` decoding steps, once the
chunk's tokens have been scored with the current weights, :class:`Adapter` takes ``steps``
gradient steps on the loss of those tokens, each predicted from the ``window`` tokens before
it in its own stream, and the next chunk is predicted with the new weights. A token's
probability therefore depends on the tokens before it in its own stream and on the other
streams' tokens of earlier chunks, never on itself: the decoder, which learns each token only
by decoding it, can follow.

The update of a weight θ with gradient g, from the trained weights θ₀:

- ``"sgd"``: θ ← θ − η·g + λ·(θ₀ − θ);
- ``"rms"`` (Krause et al.'s "RMS with a global prior"): θ ← θ − η·g / R
  + min(1, λ·R / mean R)·(θ₀ − θ), with R = max(√MS, f·mean √MS), where MS is each
  weight's mean squared gradient on the training text (:func:`gradient_mean_squares`), so
  that weights whose gradient is usually small move as far as the others, and those that
  move most are pulled back most; the floor f keeps a weight whose gradient the training
  windows hardly saw (a rare token's embedding) from taking a step 1/√MS times its gradient;
- ``"adam"``: Adam's step + λ·(θ₀ − θ), its moments starting at zero when coding starts.

Given the training run's AdamW state (``state=``, :func:`netcl_lite.train.read_optimizer_state`),
``"adam"`` continues from the run's moments and step count instead, and ``"rms"`` takes the
run's second moment (a running mean of squared gradients over its last steps) as MS.

The update runs on the host in float64 from a float32 copy of the gradient, element by
element, and writes the weights back as float32: no sum whose order could change, so the
new weights depend only on the gradients, which the training kernels compute in a fixed
order whatever the compute-unit count. Compressor and decompressor, on one PoCL thread or
sixteen, hold the same weights after every update. A step whose gradient or new weights are
not finite (in float32), or whose loss is not finite or exceeds twice a uniform guess's
(2·ln V nats: the weights have diverged), puts the trained weights back (and Adam's moments
where they started) instead, on both sides alike, and coding goes on (:attr:`Adapter.resets`
counts them).

    >>> import numpy as np
    >>> from netcl_lite.nn import DecoderLM, LMConfig
    >>> model = DecoderLM(LMConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
    ...                            num_hidden_layers=1, num_attention_heads=2,
    ...                            num_key_value_heads=1, max_position_embeddings=16))
    >>> adapter = Adapter(model, streams=2, start=0, config=AdaptConfig(chunk=4, optimizer="sgd"))
    >>> [adapter.observe(np.array([i, i + 1])) for i in range(4)]   # the 4th step ends a chunk
    [False, False, False, True]
    >>> adapter.updates, adapter.model is model                      # it adapted a copy
    (1, False)
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from . import autograd as ag
from .checks import (MAX_STREAMS, coder_sizes, flag, int_in, nonnegative_real, not_masked, one_of, positive_int,
                     positive_real)
from .nn import DecoderLM, KVCache
from .core.stream import NonFiniteError
from .nn.checkpoint import write

OPTIMIZERS = ("sgd", "rms", "adam")
#: which weights adapt: every one; all but the (tied) token embedding; only the RMSNorm gains;
#: the last one or two blocks with the final norm
ADAPTED = ("all", "no-embedding", "norms", "last-1", "last-2")
TARGETS = ("chunk", "window")
#: a target the loss leaves out
IGNORE = -100
#: the largest weight that float32 holds (a NaN fails the comparison too)
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: batches of training windows :func:`gradient_mean_squares` runs, at most (``ms_batches``): each is a
#: forward and backward pass of the model, and 8 is the chosen setting
MAX_MS_BATCHES = 1 << 16


@dataclass(frozen=True)
class AdaptConfig:
    """What dynamic evaluation does; the defaults are the setting chosen on Chapter 9's
    validation split (``benchmarks/results/dynamic_evaluation.md``).

    ``chunk``: decoding steps (tokens per stream) between updates. ``steps``: gradient steps
    per update, on the same tokens. ``lr``: η. ``optimizer``: one of :data:`OPTIMIZERS`.
    ``decay``: λ, the pull back toward the trained weights per step: in [0, 1] for ``"sgd"``
    and ``"adam"`` (1 a full pull back), any λ >= 0 for ``"rms"`` (its pull is capped at 1). ``adapted``: which
    weights change, one of :data:`ADAPTED`. ``window``: positions each training window holds,
    at most the model's ``max_position_embeddings`` (None, or a model with a shorter window:
    all of them). ``targets``: ``"chunk"``
    trains on the tokens coded since the last update only, ``"window"`` on every target of
    the windows (earlier chunks' tokens again). ``refill``: recompute the cached keys and
    values with the new weights after an update (:meth:`Adapter.refill`) rather than keep
    those computed with the old ones. ``beta1``, ``beta2``, ``eps``: Adam's. ``rms_floor``:
    f of ``"rms"``; ``ms_batches``: batches of training windows whose gradients give it
    its mean squares.
    """

    chunk: int = 8
    steps: int = 1
    lr: float = 5e-4
    optimizer: str = "rms"
    decay: float = 0.0
    adapted: str = "all"
    window: int | None = 32
    targets: str = "chunk"
    refill: bool = False
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    rms_floor: float = 0.1
    ms_batches: int = 8

    def __post_init__(self):
        # each field kept as the plain Python value it was checked as (a NumPy scalar or str becomes an
        # int, float or str): equal settings then have one repr (the coder's fingerprint) and to_dict()
        # writes to JSON
        def keep(name, value):
            object.__setattr__(self, name, value)

        keep("chunk", positive_int("chunk", self.chunk, "decoding steps between updates"))
        keep("steps", positive_int("steps", self.steps, "gradient steps per update"))
        keep("lr", positive_real("lr", self.lr))
        keep("optimizer", str(one_of("optimizer", self.optimizer, OPTIMIZERS)))
        keep("decay", nonnegative_real("decay", self.decay, "0 keeps no pull toward the trained weights"))
        if self.optimizer != "rms" and self.decay > 1:
            # "sgd" and "adam" pull by decay itself: 1 is a full pull back each step; past it the weights
            # land beyond the trained ones, farther each step, until they overflow ("rms" caps its pull at 1)
            raise ValueError(f"decay must be in [0, 1] with optimizer {self.optimizer!r} (the share of the way "
                             f"back to the trained weights each step; 1 pulls fully back), got {self.decay}")
        keep("adapted", str(one_of("adapted", self.adapted, ADAPTED)))
        if self.window is not None:
            keep("window", positive_int("window", self.window, "or None for the model's whole window"))
        keep("targets", str(one_of("targets", self.targets, TARGETS)))
        flag("refill", self.refill)
        for name in ("beta1", "beta2"):
            value = nonnegative_real(name, getattr(self, name))
            if value >= 1:
                raise ValueError(f"{name} must be in [0, 1), got {value}")
            keep(name, value)
        keep("eps", positive_real("eps", self.eps))
        keep("rms_floor", positive_real("rms_floor", self.rms_floor, "the least RMS, as a fraction of the mean"))
        keep("ms_batches", positive_int("ms_batches", self.ms_batches))
        if self.ms_batches > MAX_MS_BATCHES:        # refused here, before an Adapter lays out their windows
            raise ValueError(f"ms_batches must be at most MAX_MS_BATCHES = {MAX_MS_BATCHES:,} (each batch is a "
                             f"forward and backward pass of the model; 8 is the chosen setting), got "
                             f"{self.ms_batches:,}")

    def to_dict(self) -> dict:
        return asdict(self)


def adapted_names(model: DecoderLM, adapted: str) -> list[str]:
    """The names (``model.parameters()``'s) of the weights that ``adapted`` lets change, sorted."""
    _decoder_lm(model)
    one_of("adapted", adapted, ADAPTED)
    names = sorted(model.parameters())
    if adapted == "all":
        return names
    if adapted == "no-embedding":
        return [n for n in names if not n.startswith("embed.")]
    if adapted == "norms":
        return [n for n in names if n.endswith("norm1.weight") or n.endswith("norm2.weight") or n == "norm.weight"]
    last = int(adapted.split("-")[1])
    layers = model.config.num_hidden_layers
    keep = tuple(f"layers.{i}." for i in range(max(0, layers - last), layers))
    return [n for n in names if n.startswith(keep) or n == "norm.weight"]


def window_of(config: AdaptConfig, model: DecoderLM) -> int:
    """Positions each training window of ``config`` holds on ``model``: ``config.window``, at most the
    model's ``max_position_embeddings`` (all of them when ``config.window`` is None). The ``"rms"``
    optimizer reads at least one such window of ``train_ids`` and its target, ``window_of(...) + 1`` ids."""
    if not isinstance(config, AdaptConfig):
        raise TypeError(f"config must be an AdaptConfig, got {type(config).__name__}")
    c = _decoder_lm(model).config
    return c.max_position_embeddings if config.window is None else min(config.window, c.max_position_embeddings)


def _decoder_lm(model) -> DecoderLM:
    """``model`` when it is a :class:`~netcl_lite.nn.DecoderLM`; TypeError naming it otherwise."""
    if not isinstance(model, DecoderLM):
        raise TypeError(f"model must be a netcl_lite.nn.DecoderLM, got {type(model).__name__}")
    return model


def check_model(model) -> DecoderLM:
    """``model`` when it is a :class:`~netcl_lite.nn.DecoderLM` and no tape records (the
    adaptation runs its own)."""
    _decoder_lm(model)
    if ag.recording():
        raise ValueError("dynamic evaluation runs its own tapes: call it outside `with Tape()`")
    return model


def check_ids(name: str, ids, vocab: int, need: int) -> np.ndarray:
    """``ids`` as a 1-D int64 array of at least ``need`` token ids, each in [0, vocab); TypeError naming
    ``name`` for a NumPy masked array (:func:`~netcl_lite.checks.not_masked`)."""
    not_masked(name, ids)                    # asarray drops the mask: the values under it were coded, trained on
    arr = np.asarray(ids)
    if arr.ndim != 1 or arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        raise ValueError(f"{name} must be a 1-D array of integer token ids, got {arr.dtype} of shape {arr.shape}")
    if arr.size < need:
        raise ValueError(f"{name} holds {arr.size} tokens; at least {need} are needed (one window and its target)")
    if arr.size and (arr.min() < 0 or arr.max() >= vocab):
        raise ValueError(f"{name} must lie in [0, {vocab}) (the model's vocab_size), got ids from "
                         f"{int(arr.min())} to {int(arr.max())}")
    return arr.astype(np.int64, copy=False)


def _check_state(state, model: DecoderLM) -> dict:
    """An AdamW state for ``model``'s parameters as float64 arrays, checked."""
    if not isinstance(state, dict) or set(state) != {"step", "exp_avg", "exp_avg_sq"}:
        raise ValueError("state must be a dict with keys 'step', 'exp_avg', 'exp_avg_sq' (AdamW.state_dict(), "
                         "or netcl_lite.train.read_optimizer_state of the run's folder)")
    step = state["step"]
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 1:
        raise ValueError(f"state: step must be the run's step count (an int >= 1), got {step!r}")
    params = model.parameters()
    out = {"step": int(step)}
    for key in ("exp_avg", "exp_avg_sq"):
        got = state[key]
        if not isinstance(got, dict) or set(got) != set(params):
            names = set(got) if isinstance(got, dict) else set()
            raise ValueError(f"state {key}: one array per parameter of the model; missing "
                             f"{sorted(set(params) - names)[:3]}, unexpected {sorted(names - set(params))[:3]}")
        out[key] = {}
        for name, arr in got.items():
            not_masked(f"state {key}.{name}", arr)    # asarray drops the mask: the values under it were read
            a = np.asarray(arr)
            if a.shape != params[name].shape or a.dtype.kind != "f" or not np.isfinite(a).all():
                raise ValueError(f"state {key}.{name} must be finite floats of shape {params[name].shape}, "
                                 f"got {a.dtype} {a.shape}")
            if key == "exp_avg_sq" and (a < 0).any():
                raise ValueError(f"state exp_avg_sq.{name} has negative entries: a mean of squares is >= 0")
            if a.size and np.abs(a).max() > FLOAT32_MAX:    # Adam's bias correction overflowed such a moment
                raise ValueError(f"state {key}.{name} holds values past float32's range ({FLOAT32_MAX:.4g}): "
                                 f"a training run's moments are float32; pass the run's optimizer state")
            out[key][name] = a.astype(np.float64)
    return out


def copy_model(model: DecoderLM) -> DecoderLM:
    """A new :class:`~netcl_lite.nn.DecoderLM` on ``model``'s queue with bit-identical weights."""
    check_model(model)
    twin = DecoderLM(model.config, queue=model.queue)
    mine = twin.parameters()
    for name, node in model.parameters().items():
        write(mine[name], node.numpy())
    return twin


def _gradients(model: DecoderLM, x: np.ndarray, y: np.ndarray, names: list[str]) -> tuple[float, dict]:
    """(loss in nats per counted target, {name: float32 gradient}) of the mean cross-entropy of
    ``y`` after ``x``; only the weights in ``names`` get a gradient (the others are held fixed)."""
    params = model.parameters()
    wanted = set(names)
    frozen = [p for n, p in params.items() if n not in wanted and p.requires_grad]
    for p in frozen:
        p.requires_grad = False
    try:
        ag.zero_grad(params)
        with ag.Tape() as tape:
            loss = model.loss(x, y, ignore_index=IGNORE)
        tape.backward(loss)
        value = float(loss.numpy())
        grads = {n: params[n].grad.numpy() for n in names}
    finally:
        for p in frozen:
            p.requires_grad = True
        ag.zero_grad(params)
    if not math.isfinite(value):
        raise FloatingPointError(f"dynamic evaluation: the loss is {value}; lower lr")
    return value, grads


def gradient_mean_squares(model: DecoderLM, ids, *, batches: int, batch_size: int, block: int,
                          names=None) -> dict[str, np.ndarray]:
    """Each weight's mean squared gradient (float64) over ``batches`` batches of ``batch_size``
    windows of ``block`` tokens of ``ids`` (the training text), every target counted: the MS
    of Krause et al.'s RMS update. The windows start at evenly spaced positions (no random
    draw), so both sides of a coder compute the same values. ``names``: the weights to measure
    (None: all). At most :data:`MAX_MS_BATCHES` batches of at most
    :data:`~netcl_lite.checks.MAX_STREAMS` windows."""
    check_model(model)
    for name, value in (("batches", batches), ("batch_size", batch_size), ("block", block)):
        positive_int(name, value)
    if batches > MAX_MS_BATCHES:                  # each one is a forward and backward pass
        raise ValueError(f"batches must be at most MAX_MS_BATCHES = {MAX_MS_BATCHES:,} (each is a forward and "
                         f"backward pass of the model), got {batches:,}")
    if batch_size > MAX_STREAMS:                  # the Adapter passes its stream count, at most MAX_STREAMS
        raise ValueError(f"batch_size must be at most MAX_STREAMS = {MAX_STREAMS:,} (windows in one pass; the "
                         f"Adapter passes its stream count), got {batch_size:,}")
    if block > model.config.max_position_embeddings:
        raise ValueError(f"block={block} exceeds the model's max_position_embeddings="
                         f"{model.config.max_position_embeddings}")
    ids = check_ids("ids", ids, model.config.vocab_size, block + 1)
    if isinstance(names, (str, bytes)) or not (names is None or hasattr(names, "__iter__")):
        raise TypeError(f"names must be a list of the model's parameter names (str), or None for all, got "
                        f"{type(names).__name__} {names!r:.80}; wrap a single name as [name]")
    names = sorted(model.parameters()) if names is None else list(names)
    bad = next((n for n in names if not isinstance(n, str)), None)
    if bad is not None:                       # set() of a list was "unhashable type: 'list'", naming nothing
        raise TypeError(f"names must hold parameter names (str), got {type(bad).__name__} {bad!r:.80}")
    unknown = sorted(set(names) - set(model.parameters()))
    if unknown or not names:
        raise ValueError(f"names must name some of the model's parameters; unknown: {unknown}")
    windows = batches * batch_size
    total = {n: np.zeros(model.parameters()[n].shape, np.float64) for n in names}
    for b in range(batches):
        # this batch's windows alone: every window's positions at once would be batches times as large
        first = np.arange(b * batch_size, (b + 1) * batch_size, dtype=np.int64)
        starts = (first * (ids.size - block - 1)) // max(windows - 1, 1)
        part = ids[starts[:, None] + np.arange(block + 1)]
        _, grads = _gradients(model, part[:, :-1], part[:, 1:], names)
        for n, g in grads.items():
            total[n] += np.square(g.astype(np.float64))
    return {n: t / batches for n, t in total.items()}


class Adapter:
    """Dynamic evaluation over ``streams`` token streams coded side by side.

    ``Adapter(model, streams, start, config=AdaptConfig(), *, train_ids=None, state=None, copy=True)``.
    ``start``: the input every stream begins with (the compressor's newline token).
    ``train_ids``: the training text's ids, needed by the ``"rms"`` optimizer for its mean
    squares unless ``state`` (the training run's AdamW state, in
    :meth:`~netcl_lite.optim.AdamW.state_dict`'s form) gives them; ``"adam"`` starts from
    ``state``'s moments when it is given. ``copy=True`` adapts a copy of ``model``
    (:attr:`model`; the caller's model is never written); ``copy=False`` adapts ``model``
    itself, and :meth:`restore` (or leaving a ``with`` block) writes the trained weights back.

    After each decoding step, :meth:`observe` takes the step's tokens (one per active stream,
    the active streams a prefix, as the compressor's ``advance`` does). Every ``chunk`` calls
    it runs the update and returns True; the caller then refills its KV cache with the new
    weights (:meth:`refill`) when ``config.refill``. In the compressor's predictor, both sides
    alike: make the Adapter where the predictor is made, with its stream count and start
    token, and decode with :attr:`model`; after ``advance(tokens)`` at every step but the last,
    call ``observe(tokens)``, and when it returns True and ``config.refill``, call
    ``refill(cache, window)`` with the predictor's cache and its inputs
    (:func:`netcl_lite.dynamic_evaluation.coded_bits` is that loop). :attr:`seconds` is the time spent in
    updates and refills, :attr:`updates` and :attr:`refills` their numbers, :attr:`losses`
    each gradient step's training loss, :attr:`resets` the steps that put the trained
    weights back.
    """

    def __init__(self, model: DecoderLM, streams: int, start: int, config: AdaptConfig | None = None, *,
                 train_ids=None, state: dict | None = None, copy: bool = True):
        check_model(model)
        self.streams = positive_int("streams", streams, "token streams coded side by side")
        coder_sizes(streams=self.streams)              # before the history is sized by it
        c = model.config
        self.start = int_in("start", start, 0, c.vocab_size, "a token id of the model's vocabulary")
        if config is None:
            config = AdaptConfig()
        if not isinstance(config, AdaptConfig):
            raise TypeError(f"config must be an AdaptConfig, got {type(config).__name__}")
        flag("copy", copy)
        self.config = config
        self.window = window_of(config, model)
        if config.optimizer == "rms" and train_ids is None and state is None:
            raise ValueError("optimizer='rms' needs train_ids (the training text's ids) or the run's optimizer "
                             "state for its mean squares")
        if train_ids is not None:                    # named as the caller passed it, whichever optimizer reads it
            train_ids = check_ids("train_ids", train_ids, c.vocab_size,
                                  self.window + 1 if config.optimizer == "rms" and state is None else 2)
        if state is not None:
            if config.optimizer == "sgd":
                raise ValueError("state (the run's optimizer moments) serves optimizer 'adam' or 'rms', not 'sgd'")
            state = _check_state(state, model)
        began = time.perf_counter()
        self.model = copy_model(model) if copy else model
        self.copied = copy
        self.names = adapted_names(self.model, config.adapted)
        params = self.model.parameters()
        self.trained = {n: params[n].numpy().astype(np.float64) for n in sorted(params)}
        self.weights = {n: self.trained[n].copy() for n in self.names}
        self.scale = self.pull = None
        if config.optimizer == "rms":
            if state is not None:
                ms = {n: state["exp_avg_sq"][n] for n in self.names}
            else:
                ms = gradient_mean_squares(self.model, train_ids, batches=config.ms_batches,
                                           batch_size=self.streams, block=self.window, names=self.names)
            rms = {n: np.sqrt(v) for n, v in ms.items()}
            # math.fsum: exact, so the mean does not depend on how a sum is split or vectorised
            mean_rms = math.fsum(math.fsum(r.ravel().tolist()) for r in rms.values()) / sum(r.size for r in rms.values())
            if not mean_rms > 0 or not math.isfinite(mean_rms):
                raise ValueError(f"the training gradients' mean RMS is {mean_rms}: the model does not learn from "
                                 "train_ids (all weights frozen, or a non-finite loss)")
            floored = {n: np.maximum(r, config.rms_floor * mean_rms) for n, r in rms.items()}
            self.scale = {n: 1.0 / r for n, r in floored.items()}
            self.pull = {n: np.minimum(1.0, config.decay * r / mean_rms) for n, r in floored.items()}
        self.state = state if config.optimizer == "adam" else None
        self._fresh_moments()
        #: a loss (nats per token) above twice a uniform guess's: the adapted weights diverged
        self.diverged = 2 * math.log(c.vocab_size)
        self.gradient_steps = 0
        self.resets = 0
        self.refills = 0
        self.history = np.full((self.streams, 1 + 64), start, np.int64)    # each stream's inputs so far
        self.seen = np.ones(self.streams, np.int64)                          # filled entries per stream
        self.trained_upto = np.ones(self.streams, np.int64)    # entries before this were trained on
        self.observed = 0
        self.updates = 0
        self.losses: list[float] = []
        self.setup_seconds = time.perf_counter() - began
        self.seconds = 0.0
        self.closed = False

    # -- the coder's calls -------------------------------------------------------------------

    def observe(self, tokens) -> bool:
        """Record one decoding step's tokens (1-D, one per active stream, the active streams
        first); after every ``chunk`` steps, update the weights and return True."""
        self._open()
        not_masked("tokens", tokens)         # asarray drops the mask: a masked-out token was recorded, trained on
        arr = np.asarray(tokens)
        if arr.ndim != 1 or arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
            raise ValueError(f"tokens must be a 1-D array of integer token ids, got {arr.dtype} of shape {arr.shape}")
        if not 1 <= arr.size <= self.streams:
            raise ValueError(f"tokens: one per active stream, 1 to {self.streams}, got {arr.size}")
        vocab = self.model.config.vocab_size
        if arr.min() < 0 or arr.max() >= vocab:
            raise ValueError(f"tokens must lie in [0, {vocab}) (the model's vocab_size), got ids from "
                             f"{int(arr.min())} to {int(arr.max())}")
        n = arr.size
        need = int(self.seen[:n].max()) + 1
        if need > self.history.shape[1]:
            grown = np.full((self.streams, 2 * need), self.start, np.int64)
            grown[:, :self.history.shape[1]] = self.history
            self.history = grown
        self.history[np.arange(n), self.seen[:n]] = arr
        self.seen[:n] += 1
        self.observed += 1
        if self.observed % self.config.chunk:
            return False
        self.update()
        return True

    def refill(self, cache: KVCache, inputs) -> None:
        """Recompute ``cache``'s keys and values with the current weights: the cache is emptied
        and ``inputs[:, :n]`` (each stream's inputs at the n positions it held) run through
        :attr:`model` again in one forward pass, so it holds n positions as before. A full
        cache is left as it is: the compressor's predictor empties and refills it before its
        next step anyway."""
        self._open()
        began = time.perf_counter()
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a netcl_lite.nn.KVCache, got {type(cache).__name__}")
        held = cache.length(0)
        not_masked("inputs", inputs)         # asarray drops the mask: the values under it were run into the cache
        arr = np.asarray(inputs)
        if arr.ndim != 2 or arr.shape[0] != cache.batch or arr.shape[1] < held or arr.dtype.kind not in "iu":
            raise ValueError(f"inputs must be integer token ids of shape ({cache.batch}, >= {held}): each "
                             f"stream's inputs at the positions the cache holds; got {arr.dtype} {arr.shape}")
        if held == cache.max_seq_len:
            return            # full: the coder empties and refills it before its next step anyway
        self.model._check_cache(cache)      # another model's cache: refused before it is emptied
        vocab = self.model.config.vocab_size
        if held and (arr[:, :held].min() < 0 or arr[:, :held].max() >= vocab):    # before the cache is emptied
            raise ValueError(f"inputs must lie in [0, {vocab}) (the model's vocab_size), got ids from "
                             f"{int(arr[:, :held].min())} to {int(arr[:, :held].max())}")
        cache.reset()
        if held:
            self.model.hidden(arr[:, :held], cache).numpy()
            self.refills += 1
        self.seconds += time.perf_counter() - began

    def restore(self) -> None:
        """Write the trained weights back into :attr:`model` (needed with ``copy=False``; a copy
        is left as it is) and refuse further calls."""
        if not self.closed and not self.copied:
            params = self.model.parameters()
            for n in self.names:
                write(params[n], self.trained[n])
        self.closed = True

    def __enter__(self) -> Adapter:
        return self

    def __exit__(self, *exc) -> None:
        self.restore()

    # -- the update ----------------------------------------------------------------------------

    def batch(self) -> tuple[np.ndarray, np.ndarray]:
        """The training windows of an update: (inputs, targets), each (streams · k, w). Each
        stream contributes the k windows that end at its last coded token (w: ``window``, or
        fewer while fewer tokens are coded): k = ceil(chunk / w), or fewer when no stream has
        that many targets to count (an update called before ``chunk`` steps were observed), so
        that the batch grows with the tokens there are to train on, not with ``chunk``; a target
        that is not a coded token of the stream (left of its start), or, with
        ``targets="chunk"``, that an earlier update already trained on, is ``IGNORE``."""
        c = self.config
        if int(self.seen.max()) < 2:            # only the start input: no window holds a target yet
            raise ValueError("no tokens observed yet: an update trains on the coded tokens, so call "
                             "observe(tokens) with a step's tokens first (it updates every chunk steps itself)")
        if c.targets == "chunk" and np.array_equal(self.seen, self.trained_upto):
            raise ValueError("no token was observed since the last update (targets='chunk' trains on the tokens "
                             "observed since then): call observe(tokens) with a step's tokens first")
        w = min(self.window, int(self.seen.max()) - 1)
        # the most targets a stream counts: its entries from the first counted one to its last coded one,
        # the windows ending at its last token holding them all in ceil(most / w). Every chunk steps of
        # observe, the first stream (always active) counts chunk or more: k is ceil(chunk / w) as it was
        first = self.trained_upto if c.targets == "chunk" else 1
        most = int(np.max(self.seen - np.maximum(first, 1)))
        k = max(1, min(-(-c.chunk // w), -(-most // w)))
        span = k * w + 1                                       # inputs and the last target
        pad = max(0, span - int(self.seen.min()))
        hist = np.concatenate([np.full((self.streams, pad), self.start, np.int64), self.history], axis=1)
        cols = (self.seen + pad)[:, None] - span + np.arange(span)      # (streams, span)
        seq = hist[np.arange(self.streams)[:, None], cols]
        entry = cols - pad                     # entry 0 is the start input, entry j >= 1 the j-th token
        counted = entry >= (self.trained_upto[:, None] if c.targets == "chunk" else 1)
        targets = np.where(counted, seq, IGNORE)
        x = seq[:, :-1].reshape(-1, w)
        y = targets[:, 1:].reshape(-1, w)
        return x, y

    def update(self) -> None:
        """``steps`` gradient steps on :meth:`batch`, written into :attr:`model`."""
        self._open()
        began = time.perf_counter()
        x, y = self.batch()
        params = self.model.parameters()
        for _ in range(self.config.steps):
            try:
                loss, grads = _gradients(self.model, x, y, self.names)
                finite = loss <= self.diverged and all(np.isfinite(g).all() for g in grads.values())
            except (NonFiniteError, FloatingPointError):
                loss, finite = math.nan, False
            self.losses.append(loss)
            self.gradient_steps += 1
            if finite:
                self._step(grads)
            if not finite or not all(np.abs(w).max() <= FLOAT32_MAX for w in self.weights.values()):
                self._reset()
            for n in self.names:
                write(params[n], self.weights[n])
        self.trained_upto = self.seen.copy()
        self.updates += 1
        self.seconds += time.perf_counter() - began

    def _step(self, grads: dict) -> None:
        c = self.config
        if c.optimizer == "adam":
            self.adam_steps += 1
            t = self.adam_steps
        for n in self.names:
            w, g, home = self.weights[n], grads[n].astype(np.float64), self.trained[n]
            if c.optimizer == "sgd":
                move = c.lr * g
                pull = c.decay
            elif c.optimizer == "rms":
                move = c.lr * g * self.scale[n]
                pull = self.pull[n]
            else:
                m, v = self.moments[n]
                m *= c.beta1
                m += (1.0 - c.beta1) * g
                v *= c.beta2
                v += (1.0 - c.beta2) * g * g
                m_hat = m / (1.0 - c.beta1 ** t)
                v_hat = v / (1.0 - c.beta2 ** t)
                move = c.lr * m_hat / (np.sqrt(v_hat) + c.eps)
                pull = c.decay
            self.weights[n] = w - move + pull * (home - w)

    def _fresh_moments(self) -> None:
        """Adam's moments as coding starts: zero, or the training run's (:attr:`state`)."""
        if self.config.optimizer != "adam":
            return
        if self.state is None:
            self.moments = {n: (np.zeros_like(w), np.zeros_like(w)) for n, w in self.weights.items()}
            self.adam_steps = 0
        else:
            self.moments = {n: (self.state["exp_avg"][n].copy(), self.state["exp_avg_sq"][n].copy())
                            for n in self.names}
            self.adam_steps = self.state["step"]

    def _reset(self) -> None:
        """Back to the trained weights after a step that was not finite."""
        self.resets += 1
        self.weights = {n: self.trained[n].copy() for n in self.names}
        self._fresh_moments()

    def _not_copied(self, *_):
        raise TypeError("an Adapter cannot be copied or pickled: it holds the adapted model on the device, the "
                        "streams' history and the optimizer's state, which a copy would share or lose; make "
                        "another with Adapter(model, ...) (same arguments, from the trained model) and feed it "
                        "the same tokens")

    __copy__ = __deepcopy__ = __reduce_ex__ = __reduce__ = _not_copied

    def _open(self) -> None:
        if self.closed:
            raise ValueError("this Adapter was restored (or its with block ended); make a new one to adapt again")

