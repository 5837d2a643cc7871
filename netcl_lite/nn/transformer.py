"""Decoder building blocks on the tape: rotary attention (MHA/GQA/MQA), SwiGLU, norms, KV cache.

Every module holds its weights as :mod:`netcl_lite.autograd` leaves and is
called on a Node (or a Tensor) of shape ``(B, T, D)``; ``parameters()`` names
them (``"attn.wq"``, ``"ffn.w1"``, ...). Projections are bias-free and stored
``(in, out)`` so that a layer is ``x @ W``. Weights start as seeded
``normal / sqrt(fan_in)`` draws (unit-variance inputs give unit-variance
outputs); norm weights start at 1, biases at 0.

    >>> import numpy as np
    >>> import netcl_lite as nl
    >>> attn = RotaryAttention(nl.device().queue, dim=16, n_heads=4, n_kv_heads=2, max_seq_len=8)
    >>> attn.num_parameters()                   # 2·16² + 2·16·(2·4): Wq, Wo square, Wk, Wv narrower
    768
    >>> with nl.Tape():
    ...     out = attn(np.ones((2, 5, 16)))     # NumPy in: a constant input
    >>> out.shape
    (2, 5, 16)

Cached decoding (:class:`KVCache`) is inference: call it outside a Tape.
"""

from __future__ import annotations

import math

import numpy as np
import pyopencl as cl

from .. import autograd as ag
from ..checks import dtype_is, flag, int_in, nonnegative_int, one_of, positive_int, positive_real
from ..core.stream import stream_of
from ..core.tensor import Tensor, check_fits, check_queue
from ..ops.rotary_attention import fits as rotary_fits

NORMS = ("pre", "post")
NORM_KINDS = ("rms", "layer")
ATTENTION_KERNELS = ("flash", "dense")


def _rng(seed, tag: int) -> np.random.Generator:
    """An independent stream per (seed, parameter): changing one shape never shifts another's draws."""
    return np.random.default_rng([nonnegative_int("seed", seed), tag])


class Module:
    """Holds named parameters (autograd leaves) and child modules."""

    def __init__(self):
        self._params: dict[str, ag.Node] = {}
        self._children: dict[str, Module] = {}

    def _param(self, name: str, array: np.ndarray) -> ag.Node:
        node = ag.tensor(Tensor.from_host(self.queue, np.asarray(array, np.float32)))
        self._params[name] = node
        return node

    def _weight(self, name: str, rng, fan_in: int, fan_out: int) -> ag.Node:
        return self._param(name, rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in))

    def parameters(self) -> dict[str, ag.Node]:
        """Every parameter by dotted name (children's prefixed by the child's name)."""
        out = dict(self._params)
        for prefix, child in self._children.items():
            out.update({f"{prefix}.{name}": p for name, p in child.parameters().items()})
        return out

    def num_parameters(self) -> int:
        return int(np.sum([p.value.size for p in self.parameters().values()], dtype=np.int64))

    def zero_grad(self) -> None:
        ag.zero_grad(self.parameters())


def _input(x, dim: int, max_seq_len: int | None = None, start: int = 0, queue=None) -> ag.Node:
    """x (a Node, Tensor or NumPy array) as a Node of shape (B, T, dim), float32, with start + T <= max_seq_len."""
    if not isinstance(x, (ag.Node, Tensor)):
        arr = np.asarray(x)
        if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
            raise TypeError(f"x must be a Node, a Tensor or an array of real numbers of shape (B, T, {dim}), "
                            f"got {type(x).__name__} of dtype {arr.dtype}")
        x = ag.constant(arr.astype(np.float32), queue)
    dtype_is("x", x, "float32", "Node or Tensor")
    if len(x.shape) != 3 or x.shape[-1] != dim:
        raise ValueError(f"x must have shape (B, T, {dim}) (batch, sequence, dim), got {x.shape}")
    if max_seq_len is not None and start + x.shape[1] > max_seq_len:
        raise ValueError(
            f"sequence too long: positions {start}..{start + x.shape[1] - 1} exceed max_seq_len={max_seq_len}"
            + (" (the cache already holds " + str(start) + ")" if start else "")
        )
    return x if isinstance(x, ag.Node) else ag.constant(x)


class KVCache:
    """Preallocated K and V for incremental decoding: per layer, ``(batch, n_kv_heads, max_seq_len, head_dim)`` each.

    ``update(layer, k, v)`` writes a chunk of ``t`` new positions after the ones
    already held, in place (no allocation, O(t) copying), and returns the layer's K and
    V buffers with the number of positions now filled; attention reads that prefix
    through its ``kv_length``. Allocated bytes: ``2·layers·batch·n_kv_heads·head_dim·max_seq_len·4``.

    >>> import netcl_lite as nl
    >>> KVCache(nl.device().queue, layers=2, batch=1, n_kv_heads=2, head_dim=8, max_seq_len=16).nbytes
    4096
    """

    def __init__(self, queue, layers: int, batch: int, n_kv_heads: int, head_dim: int, max_seq_len: int):
        self.queue = check_queue(queue)
        self.layers, self.batch = positive_int("layers", layers), positive_int("batch", batch)
        self.n_kv_heads, self.head_dim = positive_int("n_kv_heads", n_kv_heads), positive_int("head_dim", head_dim)
        self.max_seq_len = positive_int("max_seq_len", max_seq_len)
        shape = (self.batch, self.n_kv_heads, self.max_seq_len, self.head_dim)
        check_fits(queue.context, math.prod(shape) * 4, f"a KV cache of {self.layers} layers × 2 buffers of "
                   f"shape {shape}", buffers=2 * self.layers)
        self.keys = [Tensor.empty(queue, shape) for _ in range(self.layers)]
        self.values = [Tensor.empty(queue, shape) for _ in range(self.layers)]
        self.lengths = [0] * self.layers

    @property
    def nbytes(self) -> int:
        """Device bytes held by K and V together."""
        return sum(t.nbytes for t in self.keys + self.values)

    def length(self, layer: int = 0) -> int:
        """Positions already written for ``layer``."""
        return self.lengths[self._layer(layer)]

    def reset(self) -> None:
        self.lengths = [0] * self.layers

    def _layer(self, layer) -> int:
        return int_in("layer", layer, 0, self.layers)

    def update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, int]:
        """Append ``k``, ``v`` of shape ``(B, G, t, d)`` at the layer's length, in place.

        Returns the layer's K and V buffers ``(B, G, max_seq_len, d)`` and the positions now
        filled: pass that as ``kv_length`` to attention.
        """
        layer = self._layer(layer)
        rows, d, start = self.batch * self.n_kv_heads, self.head_dim, self.lengths[layer]
        for name, t in (("k", k), ("v", v)):
            if not isinstance(t, Tensor) or t.ndim != 4 or t.shape[:2] + t.shape[3:] != (self.batch, self.n_kv_heads, d):
                raise ValueError(
                    f"{name} must be a Tensor of shape ({self.batch}, {self.n_kv_heads}, t, {d}), "
                    f"got {getattr(t, 'shape', type(t).__name__)}"
                )
        t_new = k.shape[2]
        if v.shape != k.shape:
            raise ValueError(f"k {k.shape} and v {v.shape} must have the same shape")
        if start + t_new > self.max_seq_len:
            raise ValueError(
                f"KV cache full: layer {layer} holds {start} positions, {t_new} more exceed max_seq_len={self.max_seq_len}"
            )
        row = self.max_seq_len * d * 4                    # bytes between two (batch, group) rows of the cache
        for cache, new in ((self.keys[layer], k), (self.values[layer], v)):
            if t_new:
                # One rectangular copy: B·G rows of t·d floats, into each row after its `start` filled ones.
                cl.enqueue_copy(self.queue, cache.buffer, new.buffer, src_origin=(0, 0, 0),
                                dst_origin=(start * d * 4, 0, 0), region=(t_new * d * 4, rows, 1),
                                src_pitches=(t_new * d * 4, t_new * d * 4 * rows), dst_pitches=(row, row * rows))
                stream_of(self.queue).keep(new.buffer)
        self.lengths[layer] = start + t_new
        return self.keys[layer], self.values[layer], self.lengths[layer]

    def advance(self) -> int:
        """Claim the next position in every layer for a kernel that writes it itself
        (:func:`netcl_lite.ops.decode_layer`); returns that position."""
        start = self.lengths[0]
        if any(n != start for n in self.lengths):
            raise ValueError(f"advance needs every layer at the same length, got {self.lengths}")
        if start >= self.max_seq_len:
            raise ValueError(f"KV cache full: it holds {start} positions, max_seq_len={self.max_seq_len}")
        self.lengths = [start + 1] * self.layers
        return start


class RotaryAttention(Module):
    """Causal self-attention with RoPE on q and k and grouped K/V heads.

    ``n_heads`` query heads of width ``d = dim / n_heads`` share ``n_kv_heads``
    K/V heads (MHA when equal, MQA when 1, GQA between): query head ``h`` reads
    K/V head ``h // (n_heads // n_kv_heads)``. Weights, bias-free: ``wq``, ``wo``
    (dim × dim), ``wk``, ``wv`` (dim × n_kv_heads·d) — 2·D² + 2·D·g·d in all.
    ``rope=False`` drops positions (the layer is then permutation-equivariant
    when ``causal=False``). ``kernel="flash"`` streams attention (never storing
    T × T, forward or backward); ``"dense"`` materializes the weights.
    ``rope_pairing`` picks which coordinates RoPE rotates together (see
    :func:`netcl_lite.ops.rope`): ``"interleaved"`` or Llama's ``"half"``. Without a cache,
    ``"flash"`` runs sequences up to :data:`netcl_lite.ops.rotary_attention.MAX_LENGTH` as one
    kernel from the projections to the merged heads (:func:`netcl_lite.ops.rotary_attention`),
    longer ones as RoPE, the split into heads and the flash kernels.
    """

    def __init__(self, queue, dim: int, n_heads: int, n_kv_heads: int, max_seq_len: int, causal: bool = True,
                 seed: int = 0, *, rope: bool = True, rope_base: float = 10000.0, rope_pairing: str = "interleaved",
                 kernel: str = "flash"):
        super().__init__()
        self.queue = check_queue(queue)
        self.dim, self.n_heads = positive_int("dim", dim), positive_int("n_heads", n_heads)
        self.n_kv_heads, self.max_seq_len = positive_int("n_kv_heads", n_kv_heads), positive_int("max_seq_len", max_seq_len)
        if dim % n_heads:
            raise ValueError(f"dim={dim} must be divisible by n_heads={n_heads} (head width d = dim / n_heads)")
        if n_heads % n_kv_heads:
            raise ValueError(f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads} (each K/V head serves n_heads / n_kv_heads query heads)")
        flag("causal", causal)
        flag("rope", rope)
        one_of("kernel", kernel, ATTENTION_KERNELS)
        self.head_dim = dim // n_heads
        if rope and self.head_dim % 2:
            raise ValueError(f"rope needs an even head width, got dim / n_heads = {self.head_dim}; pass rope=False or change dim")
        if rope_pairing not in ("interleaved", "half"):
            raise ValueError(f"rope_pairing must be 'interleaved' or 'half' (Llama's rotate-half), got {rope_pairing!r}")
        self.causal, self.rope, self.rope_base, self.kernel = causal, rope, float(rope_base), kernel
        self.rope_pairing = rope_pairing
        kv_dim = n_kv_heads * self.head_dim
        for tag, (name, fan_out) in enumerate((("wq", dim), ("wk", kv_dim), ("wv", kv_dim), ("wo", dim))):
            self._weight(name, _rng(seed, tag), dim, fan_out)
        self.wq, self.wk, self.wv, self.wo = (self._params[n] for n in ("wq", "wk", "wv", "wo"))

    def __call__(self, x, cache: KVCache | None = None, layer: int = 0, residual=None) -> ag.Node:
        """x (B, T, dim) → (B, T, dim). With ``cache``, x holds the next T positions after the cached ones.
        With ``residual`` (B, T, dim), ``residual + attention(x)``, added in the output projection."""
        start = 0 if cache is None else cache.length(layer)
        x = _input(x, self.dim, self.max_seq_len, start, self.queue)
        if cache is None and self.kernel == "flash" and rotary_fits(x.shape[1], self.head_dim, self.head_dim):
            # one kernel from the projections to the merged heads, RoPE inside (ops.rotary_attention);
            # backward, x's gradient through the three projections is one product
            out = ag.rotary_attention_projected(x, self.wq, self.wk, self.wv, self.n_heads, self.n_kv_heads,
                                                causal=self.causal, rope=self.rope, base=self.rope_base,
                                                pairing=self.rope_pairing)
            return ag.linear(out, self.wo, residual)
        q, k = ag.linear(x, self.wq), ag.linear(x, self.wk)
        if self.rope:                                                   # split into heads and rotate, one pass
            q = ag.rope_heads(q, self.n_heads, offset=start, base=self.rope_base, pairing=self.rope_pairing)
            k = ag.rope_heads(k, self.n_kv_heads, offset=start, base=self.rope_base, pairing=self.rope_pairing)
        else:
            q, k = ag.split_heads(q, self.n_heads), ag.split_heads(k, self.n_kv_heads)
        v = ag.split_heads(ag.linear(x, self.wv), self.n_kv_heads)     # q (B, H, T, d); k, v (B, G, T, d)
        if cache is not None:
            if ag.recording():
                raise ValueError("cache: cached decoding is inference only (cached K/V are not on the tape); "
                                 "call the layer outside `with Tape()` or without cache")
            k_all, v_all, length = cache.update(layer, k.value, v.value)
            attend = ag.flash_attention if self.kernel == "flash" else ag.attention
            out = attend(q, ag.constant(k_all), ag.constant(v_all), causal=self.causal, kv_length=length)
            return ag.linear(ag.merge_heads(out), self.wo, residual)
        attend = ag.flash_attention if self.kernel == "flash" else ag.attention
        return ag.linear(ag.merge_heads(attend(q, k, v, causal=self.causal)), self.wo, residual)


class FeedForward(Module):
    """SwiGLU: ``W2 (silu(x W1) ∘ (x W3))``; W1, W3 are dim × hidden, W2 hidden × dim."""

    def __init__(self, queue, dim: int, hidden: int, seed: int = 0):
        super().__init__()
        self.queue = check_queue(queue)
        self.dim, self.hidden = positive_int("dim", dim), positive_int("hidden", hidden)
        for tag, (name, fan_in, fan_out) in enumerate((("w1", dim, hidden), ("w2", hidden, dim), ("w3", dim, hidden))):
            self._weight(name, _rng(seed, 16 + tag), fan_in, fan_out)

    def __call__(self, x, residual=None) -> ag.Node:
        """x (..., dim) → (..., dim); with ``residual``, ``residual + FFN(x)``, added in W2's product."""
        x = _input(x, self.dim, queue=self.queue)
        p = self._params
        return ag.linear(ag.swiglu_linear(x, p["w1"], p["w3"]), p["w2"], residual)   # gate, up, unit: one launch


class RMSNorm(Module):
    """x / sqrt(mean(x²) + eps) · weight over the last axis; weight starts at 1."""

    def __init__(self, queue, dim: int, eps: float = 1e-6):
        super().__init__()
        self.queue, self.dim, self.eps = check_queue(queue), positive_int("dim", dim), positive_real("eps", eps)
        self.weight = self._param("weight", np.ones(dim))

    def __call__(self, x) -> ag.Node:
        return ag.rms_norm(x, self.weight, eps=self.eps)


class LayerNorm(Module):
    """(x − mean) / sqrt(var + eps) · weight + bias over the last axis; weight 1, bias 0 at start."""

    def __init__(self, queue, dim: int, eps: float = 1e-5):
        super().__init__()
        self.queue, self.dim, self.eps = check_queue(queue), positive_int("dim", dim), positive_real("eps", eps)
        self.weight, self.bias = self._param("weight", np.ones(dim)), self._param("bias", np.zeros(dim))

    def __call__(self, x) -> ag.Node:
        return ag.layer_norm(x, self.weight, self.bias, eps=self.eps)


class DecoderBlock(Module):
    """One decoder block: attention and SwiGLU branches with residuals.

    ``norm="pre"``:  x ← x + Attn(N₁(x)); x ← x + FFN(N₂(x)).
    ``norm="post"``: x ← N₁(x + Attn(x)); x ← N₂(x + FFN(x)) (the original Transformer's order).
    ``norm_kind`` picks RMSNorm (``"rms"``) or LayerNorm (``"layer"``) for N₁, N₂;
    ``eps`` their epsilon (None: the norm's default). ``rope_base`` and
    ``rope_pairing`` go to :class:`RotaryAttention`.
    """

    def __init__(self, queue, dim: int, n_heads: int, n_kv_heads: int, hidden: int, max_seq_len: int,
                 norm: str = "pre", seed: int = 0, *, norm_kind: str = "rms", causal: bool = True,
                 rope: bool = True, kernel: str = "flash", rope_base: float = 10000.0,
                 rope_pairing: str = "interleaved", eps: float | None = None):
        super().__init__()
        one_of("norm", norm, NORMS)
        one_of("norm_kind", norm_kind, NORM_KINDS)
        self.queue, self.norm, self.dim = check_queue(queue), norm, dim
        norm_cls = RMSNorm if norm_kind == "rms" else LayerNorm
        self.attn = RotaryAttention(queue, dim, n_heads, n_kv_heads, max_seq_len, causal, seed, rope=rope, kernel=kernel,
                                    rope_base=rope_base, rope_pairing=rope_pairing)
        self.ffn = FeedForward(queue, dim, hidden, seed + 1)
        norm_args = () if eps is None else (eps,)   # None: each norm kind's own default
        self.norm1, self.norm2 = norm_cls(queue, dim, *norm_args), norm_cls(queue, dim, *norm_args)
        self._children = {"attn": self.attn, "ffn": self.ffn, "norm1": self.norm1, "norm2": self.norm2}

    def decode_weights(self) -> dict[str, ag.Node]:
        """The weights by :data:`netcl_lite.ops.decode.LAYER_WEIGHTS` name, for a fused decoding step
        (a pre-norm RMSNorm block with rotate-half RoPE)."""
        if self.norm != "pre" or not isinstance(self.norm1, RMSNorm) or not self.attn.rope \
                or self.attn.rope_pairing != "half" or not self.attn.causal:
            raise ValueError("a fused decoding step needs a causal pre-norm RMSNorm block with rotate-half RoPE")
        a, f = self.attn._params, self.ffn._params
        return dict(norm1=self.norm1.weight, wq=a["wq"], wk=a["wk"], wv=a["wv"], wo=a["wo"], norm2=self.norm2.weight,
                    w1=f["w1"], w3=f["w3"], w2=f["w2"])

    # --8<-- [start:block]
    def __call__(self, x, cache: KVCache | None = None, layer: int = 0) -> ag.Node:
        """x (B, T, dim) → (B, T, dim); ``cache``/``layer`` as in :class:`RotaryAttention`."""
        x = _input(x, self.dim, queue=self.queue)
        if self.norm == "pre":                          # each residual add formed in the branch's last product
            h = self.attn(self.norm1(x), cache, layer, residual=x)
            return self.ffn(self.norm2(h), residual=h)
        h = self.norm1(self.attn(x, cache, layer, residual=x))
        return self.norm2(self.ffn(h, residual=h))
    # --8<-- [end:block]


class Embedding(Module):
    """Token table ``(vocab, dim)``; ``output_logits`` maps hidden states back to vocabulary scores.

    With ``tie=True`` the output projection reuses the table (``h @ Eᵀ``), saving
    vocab·dim weights; with ``tie=False`` it owns a separate ``(dim, vocab)`` matrix.
    The table starts as normal / sqrt(dim), so tied logits start near unit scale.
    """

    def __init__(self, queue, vocab: int, dim: int, tie: bool = True, seed: int = 0):
        super().__init__()
        self.queue = check_queue(queue)
        self.vocab, self.dim = positive_int("vocab", vocab), positive_int("dim", dim)
        self.tie = flag("tie", tie)
        self.table = self._param("table", _rng(seed, 32).standard_normal((vocab, dim), np.float32) / np.sqrt(dim))
        self.output = None if tie else self._weight("output", _rng(seed, 33), dim, vocab)

    def __call__(self, ids) -> ag.Node:
        """Integer ids (any shape) → (*ids.shape, dim)."""
        return ag.embedding(self.table, ids)

    # --8<-- [start:head]
    def output_logits(self, h) -> ag.Node:
        """h (..., dim) → logits (..., vocab)."""
        (h,) = ag.as_nodes(h)
        if h.shape[-1:] != (self.dim,):
            raise ValueError(f"h must have last axis dim={self.dim}, got shape {h.shape}")
        rows = ag.reshape(h, (-1, self.dim))
        logits = ag.matmul(rows, self.table, transpose_b=True) if self.tie else ag.matmul(rows, self.output)
        return ag.reshape(logits, h.shape[:-1] + (self.vocab,))
    # --8<-- [end:head]
