"""A decoder-only language model in Llama's shape: a config, the model, its loss and generation.

``DecoderLM`` is Llama's architecture built from the blocks of
:mod:`netcl_lite.nn.transformer`: a token embedding, ``num_hidden_layers``
pre-norm blocks (RMSNorm → RoPE attention with grouped K/V → residual, then
RMSNorm → SwiGLU → residual), a final RMSNorm and an LM head, tied to the
embedding or not. RoPE rotates the pairs (x[i], x[i + d/2]) ("rotate half"),
as transformers' ``LlamaForCausalLM`` does, so a checkpoint moves between the
two with nothing but names and transposes (:mod:`netcl_lite.nn.checkpoint`).

    >>> from netcl_lite.nn.lm import DecoderLM, LMConfig
    >>> config = LMConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
    ...                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    >>> model = DecoderLM(config)
    >>> model([[1, 2, 3]]).shape                     # logits (B, T, vocab_size)
    (1, 3, 64)
    >>> model.generate([1, 2, 3], max_new_tokens=4, temperature=0).shape
    (7,)
"""

from __future__ import annotations

import numbers
import weakref
from pathlib import Path

import numpy as np

from .. import autograd as ag
from .. import ops, sampling
from ..checks import count, flag, int_in, integer, nonnegative_int, nonnegative_real, real
from ..core.device import manager
from ..core.tensor import Tensor, check_queue
from ..ops.decode import StepLaunch, decode_prefill
from .checkpoint import from_llama, from_pretrained, save_pretrained, to_llama, write
from .config import LMConfig
from .transformer import DecoderBlock, Embedding, KVCache, Module, RMSNorm


def check_ids(name: str, ids, vocab_size: int, max_len: int, start: int = 0):
    """``ids`` as a (B, T) int64 array, T >= 1, every id in [0, vocab_size), start + T <= max_len;
    an int32 (B, T) Tensor is checked for its shape here and for its values on the device (an id
    out of range raises at the next sync), and returned as it is."""
    if isinstance(ids, Tensor):
        if ids.dtype != np.int32 or ids.ndim != 2 or ids.size == 0:
            raise ValueError(f"{name} as a Tensor must be int32 of shape (batch, sequence) with at least one "
                             f"token, got {ids.dtype} {ids.shape}")
        if start + ids.shape[1] > max_len:
            raise ValueError(f"{name}: {ids.shape[1]} positions" + (f" after the {start} cached" if start else "")
                             + f" exceed max_position_embeddings={max_len}")
        return ids
    arr = np.asarray(ids)
    if arr.dtype == object or arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        if arr.size == 0 and arr.dtype.kind == "f":
            raise ValueError(f"{name} is empty: give at least one token id")
        if arr.dtype == object and all(isinstance(v, numbers.Integral) for v in arr.reshape(-1)):
            raise ValueError(f"{name} must lie in [0, {vocab_size}) (vocab_size); it holds an integer beyond int64")
        raise TypeError(f"{name} must hold integer token ids, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (batch, sequence), got {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}): give at least one token id per row")
    bad = np.argwhere((arr < 0) | (arr >= vocab_size))
    if bad.size:
        at = tuple(int(i) for i in bad[0])
        raise ValueError(f"{name} must lie in [0, {vocab_size}) (vocab_size); got {arr[at]} at {at}"
                         + (f" and {len(bad) - 1} more out of range" if len(bad) > 1 else ""))
    if start + arr.shape[1] > max_len:
        raise ValueError(f"{name}: {arr.shape[1]} positions" + (f" after the {start} cached" if start else "")
                         + f" exceed max_position_embeddings={max_len}")
    return arr.astype(np.int64, copy=False)


#: the most parameter tensors a model is built with (9 per layer: ~11,000 layers); models in use
#: have at most a few hundred layers, and each tensor is its own device buffer and Python object
MAX_TENSORS = 100_000


def check_fits(config: LMConfig, device) -> None:
    """Refuse, before anything is allocated, a ``config`` whose weights the OpenCL ``device`` cannot
    hold: more than :data:`MAX_TENSORS` tensors, float32 weights larger than the device's global
    memory, or one tensor larger than its largest allocation. ``from_pretrained`` refuses such a
    config against the file's header; this does the same for a model built directly.

    >>> import netcl_lite as nl
    >>> check_fits(LMConfig(vocab_size=8, hidden_size=4, num_hidden_layers=10**6, num_attention_heads=2),
    ...            nl.device().cl_device)
    Traceback (most recent call last):
    ValueError: config: num_hidden_layers=1000000 makes 9000002 weight tensors; at most 100000 are built (MAX_TENSORS)
    """
    c = config
    d, kv, inner, vocab = c.hidden_size, c.num_key_value_heads * c.head_dim, c.intermediate_size, c.vocab_size
    tensors = 2 + 9 * c.num_hidden_layers + (0 if c.tie_word_embeddings else 1)
    if tensors > MAX_TENSORS:
        raise ValueError(f"config: num_hidden_layers={c.num_hidden_layers} makes {tensors} weight tensors; "
                         f"at most {MAX_TENSORS} are built (MAX_TENSORS)")
    per_layer = 2 * d * d + 2 * kv * d + 3 * inner * d + 2 * d
    weights = 4 * (vocab * d * (1 if c.tie_word_embeddings else 2) + d + c.num_hidden_layers * per_layer)
    largest = 4 * max(vocab * d, inner * d, d * d, kv * d)
    if weights > device.global_mem_size:
        raise ValueError(f"config: the weights take {weights / 2**30:.3g} GiB in float32, more than the "
                         f"{device.global_mem_size / 2**30:.3g} GiB of memory of {device.name.strip()}; "
                         f"use a smaller config")
    if largest > device.max_mem_alloc_size:
        raise ValueError(f"config: one weight tensor takes {largest / 2**30:.3g} GiB, more than the largest "
                         f"allocation of {device.name.strip()} ({device.max_mem_alloc_size / 2**30:.3g} GiB); "
                         f"use a smaller vocab_size, hidden_size or intermediate_size")


class DecoderLM(Module):
    """Llama's decoder-only language model on the tape. ``DecoderLM(config, queue=None, seed=0)``.

    Parameters are named as the modules name them (``embed.table``,
    ``layers.0.attn.wq``, ``layers.0.ffn.w1``, ``norm.weight``, and
    ``embed.output`` when the head is untied); :meth:`state_dict` gives them in
    transformers' names and layout.
    """

    def __init__(self, config: LMConfig, queue=None, seed: int = 0):
        super().__init__()
        if not isinstance(config, LMConfig):
            raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
        nonnegative_int("seed", seed)
        self.config = c = config
        self.queue = check_queue(manager.default().queue if queue is None else queue)
        q = self.queue
        check_fits(c, q.device)
        self.embed = Embedding(q, c.vocab_size, c.hidden_size, tie=c.tie_word_embeddings, seed=seed)
        self.layers = [
            DecoderBlock(q, c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.intermediate_size,
                         c.max_position_embeddings, "pre", seed + 2 * i, rope_base=c.rope_theta,
                         rope_pairing="half", eps=c.rms_norm_eps)
            for i in range(c.num_hidden_layers)
        ]
        self.norm = RMSNorm(q, c.hidden_size, c.rms_norm_eps)
        self._children = {"embed": self.embed, **{f"layers.{i}": b for i, b in enumerate(self.layers)},
                          "norm": self.norm}
        self._initialize(seed)
        self._decode_state: dict[int, Tensor] = {}   # x (batch, hidden) that decode_step advances in place
        # per KVCache, its StepLaunch; an entry goes when its cache does (the launch holds the
        # cache's tensors, which must not outlive a cache the caller has dropped)
        self._decode_launches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _initialize(self, seed: int) -> None:
        """Weights ~ N(0, initializer_range²), one seeded stream per parameter; norm gains 1."""
        for index, (name, node) in enumerate(sorted(self.parameters().items())):
            if name.endswith("norm1.weight") or name.endswith("norm2.weight") or name == "norm.weight":
                continue
            rng = np.random.default_rng([int(seed), 1000 + index])
            write(node, rng.standard_normal(node.shape) * self.config.initializer_range)

    # -- forward -----------------------------------------------------------------------------

    # --8<-- [start:forward]
    def __call__(self, ids, cache: KVCache | None = None) -> ag.Node:
        """Token ids (B, T) → logits (B, T, vocab_size); with ``cache``, ids continue the cached positions."""
        return self.embed.output_logits(self.hidden(ids, cache))

    def hidden(self, ids, cache: KVCache | None = None) -> ag.Node:
        """The final-normed hidden states (B, T, hidden_size) that the LM head reads."""
        c = self.config
        if cache is not None:
            self._check_cache(cache)
        start = 0 if cache is None else cache.length(0)
        ids = check_ids("ids", ids, c.vocab_size, c.max_position_embeddings, start)
        if cache is not None and not ag.recording():
            if isinstance(ids, Tensor):
                raise TypeError("ids: decoding with a cache takes NumPy ids, not a Tensor")
            return self._prefill(ids, cache, start)   # inference with a cache: the fused decode kernel
        h = self.embed(ids)
        for i, block in enumerate(self.layers):
            h = block(h, cache, i)
        return self.norm(h)
    # --8<-- [end:forward]

    def _prefill(self, ids: np.ndarray, cache: KVCache, start: int) -> ag.Node:
        """``hidden(ids, cache)`` outside a tape: every layer at once for all streams and positions
        (:func:`netcl_lite.ops.decode.decode_prefill`), the cache filled at ``start..``."""
        c = self.config
        if any(n != start for n in cache.lengths):
            raise ValueError(f"cache: every layer must hold the same number of positions, got {cache.lengths}")
        if ids.shape[0] != cache.batch:
            raise ValueError(f"ids: one row per cached sequence ({cache.batch}), got {ids.shape[0]}")
        out = decode_prefill(ids, self._decode_layers(), cache.keys, cache.values, start, n_heads=c.num_attention_heads,
                             table=self.embed.table.value, norm=self.norm.weight.value, eps=c.rms_norm_eps,
                             rope_base=c.rope_theta)
        cache.lengths = [start + ids.shape[1]] * cache.layers
        return ag.constant(out)

    def _decode_layers(self) -> list[dict]:
        """Each layer's weights by :data:`netcl_lite.ops.decode.LAYER_WEIGHTS` name, as Tensors."""
        return [{name: node.value for name, node in block.decode_weights().items()} for block in self.layers]

    def loss(self, ids, targets, ignore_index: int = -100) -> ag.Node:
        """Mean cross-entropy (nats per token) of ``targets[b, t]``, the token after ``ids[b, t]``.

        Targets equal to ``ignore_index`` are left out of the mean (padding, a
        prompt); at least one target must count. ``ids`` and ``targets`` may also both be int32
        Tensors already on the device (a training loop's batch): their shapes are checked here,
        their values on the device (an id or target out of range raises at the next sync), and
        nothing is read back, so the loss can be part of a recorded step
        (:class:`netcl_lite.train.RecordedStep`).
        """
        c = self.config
        if isinstance(ids, Tensor) or isinstance(targets, Tensor):
            if not (isinstance(ids, Tensor) and isinstance(targets, Tensor)):
                raise TypeError("ids and targets: give both as int32 Tensors or both as NumPy arrays")
            if targets.dtype != np.int32 or targets.shape != ids.shape:
                raise ValueError(f"targets must be an int32 Tensor of the shape of ids {ids.shape}, "
                                 f"got {targets.dtype} {targets.shape}")
            integer("ignore_index", ignore_index)
            if not -2**31 <= ignore_index < 2**31:
                raise ValueError(f"ignore_index must lie in [-2**31, 2**31) (a 32-bit int), got {ignore_index}")
            logits = ag.reshape(self(ids), (-1, c.vocab_size))
            return ag.cross_entropy(logits, targets.reshape((-1,)), ignore_index=int(ignore_index))
        ids_arr = np.asarray(ids)
        t = np.asarray(targets)
        integer("ignore_index", ignore_index)
        if not -2**31 <= ignore_index < 2**31:          # the kernel compares it as a 32-bit int
            raise ValueError(f"ignore_index must lie in [-2**31, 2**31) (a 32-bit int), got {ignore_index}; "
                             "the usual value is -100")
        if t.dtype == object or t.dtype.kind not in "iu" or t.dtype == np.bool_:
            raise TypeError(f"targets must hold integer token ids, got dtype {t.dtype}")
        if t.shape != ids_arr.shape:
            raise ValueError(f"targets must have the shape of ids {ids_arr.shape}, got {t.shape}")
        if t.size == 0:
            raise ValueError(f"ids and targets are empty (shape {t.shape}): give at least one token")
        if t.dtype.kind == "u" and t.max() > np.iinfo(np.int64).max:   # would wrap to a negative id
            raise ValueError(f"targets must lie in [0, {c.vocab_size}); got {int(t.max())}")
        flat = t.reshape(-1).astype(np.int64)
        keep = flat != ignore_index
        bad = keep & ((flat < 0) | (flat >= c.vocab_size))
        if bad.any():
            at = int(np.flatnonzero(bad)[0])
            raise ValueError(f"targets must lie in [0, {c.vocab_size}) or equal ignore_index={ignore_index}; "
                             f"got {flat[at]} at flat position {at}")
        if not keep.any():
            raise ValueError(f"targets: every entry equals ignore_index={ignore_index}; the mean over no tokens is undefined")
        logits = ag.reshape(self(ids), (-1, c.vocab_size))
        return ag.cross_entropy(logits, flat, ignore_index=int(ignore_index))

    def _check_cache(self, cache) -> None:
        c = self.config
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache (netcl_lite.nn.KVCache) or None, got "
                            f"{type(cache).__name__}")
        if (cache.layers, cache.n_kv_heads, cache.head_dim) != (c.num_hidden_layers, c.num_key_value_heads, c.head_dim):
            raise ValueError(f"cache holds {cache.layers} layers of {cache.n_kv_heads} K/V heads of width "
                             f"{cache.head_dim}; this model needs {c.num_hidden_layers}, "
                             f"{c.num_key_value_heads}, {c.head_dim}")

    # -- generation --------------------------------------------------------------------------

    def next_logits(self, ids, cache: KVCache | None = None) -> np.ndarray:
        """Host logits (vocab_size,) for the position after the last of ``ids`` (1, T); inference only.

        One new token with a cache is a decoding step: the embedding, every layer and the
        head run as one fused kernel per four layers (:class:`netcl_lite.ops.decode.StepLaunch`).
        """
        if cache is not None and np.shape(ids) == (1, 1) and not ag.recording():
            return self.decode_step(np.asarray(ids).reshape(1), cache)[0]
        h = self.hidden(ids, cache)
        t = h.shape[1]
        rows = ag.reshape(h, (t, self.config.hidden_size))
        last = rows if t == 1 else ag.embedding(rows, [t - 1])   # (1, D): only the last row meets the head
        return self.embed.output_logits(last).numpy()[0]

    def decode_step(self, ids, cache: KVCache, *, wait: bool = True):
        """Logits (B, vocab_size) after appending one token per sequence, ``ids`` (B,), to ``cache``.
        ``wait=False`` returns them as a :class:`~netcl_lite.core.tensor.Tensor` still being
        computed (``.numpy()`` waits for it), so that the host can work meanwhile.

        Inference only; the cache must hold the same number of positions in every layer
        (a prompt run through the model with it, or nothing yet). The first step with a cache
        sets up its launch (:class:`netcl_lite.ops.decode.StepLaunch`: the embedding, the layers
        and the head, one kernel per four layers); later steps only change the position and the
        ids. The model keeps it while the cache lives.
        """
        c = self.config
        self._check_cache(cache)
        if ag.recording():
            raise ValueError("decode_step is inference: call it outside `with Tape()`")
        rows = check_ids("ids", np.asarray(ids).reshape(-1, 1), c.vocab_size, c.max_position_embeddings,
                         cache.length(0))
        if rows.shape[0] != cache.batch:
            raise ValueError(f"ids: one token per cached sequence ({cache.batch}), got {rows.shape[0]}")
        position = cache.advance()
        x = self._decode_state.get(cache.batch)
        if x is None:
            x = self._decode_state[cache.batch] = Tensor.empty(self.queue, (cache.batch, c.hidden_size))
        # The step is checked and set up once per cache and reused while it sees the same tensors
        # (weights swapped for new ones make a new one).
        layers = self._decode_layers()
        operands = (x, layers, cache.keys, cache.values, self.embed.table.value, self.norm.weight.value,
                    None if c.tie_word_embeddings else self.embed.output.value)
        step = self._decode_launches.get(cache)
        if step is None or not step.uses(*operands):
            step = self._decode_launches[cache] = StepLaunch(
                *operands[:4], n_heads=c.num_attention_heads, eps=c.rms_norm_eps, rope_base=c.rope_theta,
                table=operands[4], norm=operands[5], output=operands[6])
        logits = step(position, ids=rows[:, 0])
        return logits.numpy() if wait else logits

    def generate(self, ids, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 top_p: float | None = None, seed: int | None = None, stop=None, on_token=None,
                 use_cache: bool = True, no_repeat_ngram_size: int = 0) -> np.ndarray:
        """Extend one prompt by up to ``max_new_tokens`` tokens; returns the ids with the new ones appended.

        ``ids``: the prompt, a 1-D sequence of token ids or an array of shape
        (1, T); the result has the same rank. ``temperature=0`` is greedy (the
        argmax, ties to the lower id); otherwise each token is drawn with
        :func:`netcl_lite.sampling.sample` (temperature, then top-k, then
        top-p), from a generator seeded with ``seed``. ``stop``: a token id or
        a collection of ids that ends generation once produced (it is kept).
        ``on_token(id)`` is called with each new id as it is made.
        ``use_cache=False`` reruns the full forward over the whole prefix for
        every token instead of appending to a KV cache (same tokens, slower).
        ``no_repeat_ngram_size=n`` (n >= 1) never produces an n-gram of tokens that the
        prompt or the output already holds (:func:`netcl_lite.sampling.repeated_ngram_bans`);
        0 turns the rule off.
        """
        c = self.config
        prompt = np.asarray(ids)
        if prompt.ndim == 2 and prompt.shape[0] != 1:
            raise ValueError(f"ids: generate extends one prompt, shape (T,) or (1, T); got {prompt.shape}")
        if prompt.ndim not in (1, 2):
            raise ValueError(f"ids must be a 1-D prompt or shape (1, T), got shape {prompt.shape}")
        if prompt.size == 0:
            raise ValueError("ids: the prompt is empty; give at least one token id")
        rows = check_ids("ids", prompt.reshape(1, -1), c.vocab_size, c.max_position_embeddings)
        n_new = count("max_new_tokens", max_new_tokens, minimum=0)
        if rows.shape[1] + n_new > c.max_position_embeddings:
            raise ValueError(f"max_new_tokens={n_new} after a prompt of {rows.shape[1]} exceeds "
                             f"max_position_embeddings={c.max_position_embeddings}; shorten one of them")
        _check_sampling(temperature, top_k, top_p)
        if seed is not None:
            nonnegative_int("seed", seed, "or None")
        stops = _stop_ids(stop, c.vocab_size)
        if on_token is not None and not callable(on_token):
            raise TypeError(f"on_token must be callable (it receives each new token id), got {type(on_token).__name__}")
        flag("use_cache", use_cache)
        if ag.recording():
            raise ValueError("generate is inference: call it outside `with Tape()`")
        no_repeat = count("no_repeat_ngram_size", no_repeat_ngram_size, minimum=0)

        # --8<-- [start:generate]
        rng = np.random.default_rng(seed)
        tokens = rows[0].tolist()
        cache = (KVCache(self.queue, c.num_hidden_layers, 1, c.num_key_value_heads, c.head_dim,
                         len(tokens) + n_new) if use_cache and n_new else None)
        logits = self.next_logits(rows, cache) if n_new else None
        for step in range(n_new):
            if no_repeat:
                logits = logits.copy()
                logits[sorted(sampling.repeated_ngram_bans(tokens, no_repeat))] = -1e9   # never chosen
            if temperature == 0:
                token = sampling.greedy(logits)
            else:
                token = sampling.sample(logits, rng, temperature=temperature, top_k=top_k, top_p=top_p)
            tokens.append(token)
            if on_token is not None:
                on_token(token)
            if token in stops or step == n_new - 1:
                break
            if cache is not None:
                logits = self.next_logits([[token]], cache)
            else:
                logits = self.next_logits([tokens])
        # --8<-- [end:generate]
        out = np.asarray(tokens, np.int64)
        return out if prompt.ndim == 1 else out[None, :]

    # -- weights in transformers' layout --------------------------------------------------------

    def state_dict(self) -> dict[str, np.ndarray]:
        """{transformers name: float32 array}, linear weights (out, in), as ``LlamaForCausalLM`` stores them."""
        return to_llama(self)

    def load_state_dict(self, state: dict) -> None:
        """Read a :meth:`state_dict` back: every tensor is checked before any is written."""
        from_llama(self, state)

    def save_pretrained(self, directory) -> Path:
        """Write ``config.json`` and ``model.safetensors`` as transformers' ``save_pretrained`` does."""
        return save_pretrained(self, directory)

    @classmethod
    def from_pretrained(cls, directory, queue=None) -> DecoderLM:
        """A model from a directory written by :meth:`save_pretrained` or by ``LlamaForCausalLM.save_pretrained``."""
        return from_pretrained(cls, directory, queue)


def _check_sampling(temperature, top_k, top_p) -> None:
    real("temperature", temperature)
    nonnegative_real("temperature", temperature, "0 is greedy")
    if top_k is not None:
        count("top_k", top_k, 1, "None keeps every token")
    if top_p is not None:
        real("top_p", top_p, "or None")
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}; None (or 1) keeps every token")


def _stop_ids(stop, vocab_size: int) -> frozenset:
    if stop is None:
        return frozenset()
    values = [stop] if isinstance(stop, numbers.Integral) and not isinstance(stop, bool) else stop
    try:
        values = list(values)
    except TypeError:
        raise TypeError(f"stop must be a token id or a collection of ids, got {type(stop).__name__}") from None
    for v in values:
        int_in("stop ids", v, 0, vocab_size, "token ids of the vocabulary")
    return frozenset(int(v) for v in values)
