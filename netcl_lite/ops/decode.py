"""One cached decoding step of a Llama layer in one launch (``kernels/decode.cl``).

Float64 references: :func:`netcl_lite.reference.decode_layer`, :func:`netcl_lite.reference.decode_logits`.

Generating a token runs the model on one position per sequence. The training path would
spend ~17 launches per layer on it, and on a CPU driver a launch costs far more than a
one-position layer's arithmetic, so :func:`decode_layer` runs the whole layer (both norms,
the projections, RoPE, the cache append, attention over the cached prefix, SwiGLU and both
residuals) as one work-group per sequence, and :func:`decode_logits` the final norm and
the LM head. Inference only: nothing is recorded for a backward pass.

The weights are the training path's, in its layout (projections ``(in, out)``): pass
:data:`LAYER_WEIGHTS` by name, e.g. from a :class:`~netcl_lite.nn.DecoderBlock`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pyopencl as cl

from ..checks import int_in, positive_int, positive_real
from ..core.kernels import get_program
from ..core.stream import stream_of
from ..core.tensor import DeviceMemory, Tensor
from .embedding import ids_out_of_range
from .operands import OpCall, f32, i32, int32_range, round_up
from .rope import device_tables

#: the weights one layer reads, by name: RMSNorm gains, attention and SwiGLU projections
LAYER_WEIGHTS = ("norm1", "wq", "wk", "wv", "wo", "norm2", "w1", "w3", "w2")


def _local_size(queue: cl.CommandQueue) -> int:
    """Work-items per sequence: a CPU runs a group on one core (16 items of 8 lanes cover 128
    columns a pass); a GPU wants more items in flight."""
    return 16 if queue.device.type & cl.device_type.CPU else 128


def _tensor(name: str, x, ndim: int) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a Tensor (the step updates it on the device), got {type(x).__name__}")
    if x.dtype != np.float32 or x.ndim != ndim:
        raise ValueError(f"{name} must be a float32 Tensor with {ndim} axes, got {x.dtype} of shape {x.shape}")
    return x


def _shape_of(x) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, (Tensor, np.ndarray)) else np.shape(x)


class _Layer(NamedTuple):
    """The sizes of one layer's decoding step, from its validated operands."""

    batch: int
    dim: int
    heads: int
    groups: int
    max_len: int
    head_dim: int
    hidden: int
    vocab: int
    per_seq: int
    eps: float
    rope_base: float


def _check_layer(x: Tensor, weights, k_cache: Tensor, v_cache: Tensor, n_heads, eps, rope_base, table) -> _Layer:
    """Check one layer's operands (all but the position and the ids) and return its sizes."""
    batch, dim = x.shape
    if k_cache.shape != v_cache.shape:
        raise ValueError(f"k_cache {k_cache.shape} and v_cache {v_cache.shape} must have the same shape")
    cb, groups, max_len, head_dim = k_cache.shape
    heads = positive_int("n_heads", n_heads)
    if dim % heads or dim // heads != head_dim:
        raise ValueError(f"x's width {dim} must be n_heads={heads} x the cache's head_dim={head_dim}")
    if head_dim % 2:
        raise ValueError(f"RoPE needs an even head_dim, got {head_dim}")
    if cb != batch:
        raise ValueError(f"the cache holds {cb} sequences, x has {batch}; they must agree")
    if heads % groups:
        raise ValueError(f"the cache's {groups} K/V heads must divide n_heads={heads}")
    eps, rope_base = positive_real("eps", eps), positive_real("rope_base", rope_base)
    if not isinstance(weights, dict) or set(weights) != set(LAYER_WEIGHTS):
        have = sorted(weights) if isinstance(weights, dict) else type(weights).__name__
        raise ValueError(f"weights must be a dict with exactly the keys {LAYER_WEIGHTS}, got {have}")
    kv = groups * head_dim
    w1_shape = _shape_of(weights["w1"])
    if len(w1_shape) != 2 or w1_shape[0] != dim or not w1_shape[1]:
        raise ValueError(f"weights['w1'] must have shape ({dim}, hidden) with hidden > 0, got {w1_shape}")
    hidden = w1_shape[1]
    expected = dict(norm1=(dim,), wq=(dim, dim), wk=(dim, kv), wv=(dim, kv), wo=(dim, dim), norm2=(dim,),
                    w1=(dim, hidden), w3=(dim, hidden), w2=(hidden, dim))
    for name in LAYER_WEIGHTS:
        if _shape_of(weights[name]) != expected[name]:
            raise ValueError(f"weights[{name!r}] must have shape {expected[name]}, got {_shape_of(weights[name])}")
    vocab = 0
    if table is not None:
        ts = _shape_of(table)
        if len(ts) != 2 or ts[1] != dim:
            raise ValueError(f"table must have shape (vocab, {dim}), got {ts}")
        vocab = ts[0]
    per_seq = 4 * dim + 2 * kv + heads * max_len + hidden
    int32_range(elements=batch * groups * max_len * head_dim, work=batch * per_seq,
                weights=max(dim * hidden, vocab * dim))
    return _Layer(batch, dim, heads, groups, max_len, head_dim, hidden, vocab, per_seq, eps, rope_base)


def _check_position(position, max_len: int) -> int:
    return int_in("position", position, 0, max_len, "the cache's length")


def decode_layer(x, weights, k_cache, v_cache, position: int, *, n_heads: int, eps: float = 1e-6,
                 rope_base: float = 10000.0, ids=None, table=None) -> Tensor:
    """Advance ``x`` (B, D), one position per sequence, through a Llama layer, in place.

    ``x ← x + Attn(RMSNorm₁(x)); x ← x + SwiGLU(RMSNorm₂(x))``, where attention uses
    rotate-half RoPE at ``position``, writes this position's K and V into ``k_cache`` and
    ``v_cache`` (B, G, S, d) at ``position`` and attends over positions ``0..position``
    (G K/V heads serve ``n_heads`` query heads, d = D / n_heads). ``weights`` maps each
    name in :data:`LAYER_WEIGHTS` to a float32 Tensor or array: ``norm1``, ``norm2`` (D,);
    ``wq``, ``wo`` (D, D); ``wk``, ``wv`` (D, G·d); ``w1``, ``w3`` (D, F); ``w2`` (F, D).
    With ``table`` (V, D) and ``ids`` (B,), ``x`` is first loaded from the table rows of
    ``ids`` (the embedding). Returns ``x``.

    >>> import numpy as np, netcl_lite as nl
    >>> q = nl.device().queue
    >>> rng = np.random.default_rng(0)
    >>> shapes = dict(norm1=(8,), wq=(8, 8), wk=(8, 4), wv=(8, 4), wo=(8, 8), norm2=(8,), w1=(8, 12), w3=(8, 12), w2=(12, 8))
    >>> w = {k: nl.Tensor.from_host(q, rng.standard_normal(s) * 0.3) for k, s in shapes.items()}
    >>> k, v = nl.Tensor.zeros(q, (1, 1, 5, 4)), nl.Tensor.zeros(q, (1, 1, 5, 4))
    >>> x = nl.Tensor.zeros(q, (1, 8))
    >>> table = nl.Tensor.from_host(q, rng.standard_normal((10, 8)))
    >>> x = decode_layer(x, w, k, v, 0, n_heads=2, ids=np.array([3]), table=table)
    >>> x.shape, bool(np.abs(k.numpy()[0, 0, 0]).sum() > 0)        # position 0 now holds a key
    ((1, 8), True)
    """
    x = _tensor("x", x, 2)
    k_cache, v_cache = _tensor("k_cache", k_cache, 4), _tensor("v_cache", v_cache, 4)
    if (table is None) != (ids is None):
        raise ValueError("pass ids and table together (the embedding of the first layer), or neither")
    layer = _check_layer(x, weights, k_cache, v_cache, n_heads, eps, rope_base, table)
    position = _check_position(position, layer.max_len)
    if layer.vocab:
        id_arr = _check_ids(ids if isinstance(ids, Tensor) else np.asarray(ids), layer.batch)

    bad = _bad_ids(layer.vocab, ids) if layer.vocab else ""
    call = OpCall("decode_layer", bad_input=bad, x=x, k_cache=k_cache, v_cache=v_cache,
                  **{name: weights[name] for name in LAYER_WEIGHTS}, **({"table": table} if layer.vocab else {}))
    buffers = {name: call.float_input(name).buffer for name in LAYER_WEIGHTS}
    if layer.vocab:
        buffers["emb"] = call.float_input("table").buffer
        buffers["ids"] = call.int_input("ids", ids if isinstance(ids, Tensor) else _ids_int32(id_arr, layer.vocab)).buffer
    else:
        buffers["emb"] = buffers["ids"] = x.buffer                # unread: embed = 0
    cos_t, sin_t = device_tables(call.queue, position + 1, layer.head_dim, layer.rope_base)
    buffers.update(x=x.buffer, k_cache=k_cache.buffer, v_cache=v_cache.buffer, cos=cos_t.buffer, sin=sin_t.buffer,
                   work=call.scratch("decode.work", layer.batch * layer.per_seq), status=call.stream.status)
    ls = _local_size(call.queue)
    call.launch("decode.cl", "decode_layer", (layer.batch * ls,), (ls,),
                *_launch_args(layer, buffers, position, call.seq))
    return x


#: decode_layer's kernel arguments, in order
_ARGS = ("x", "emb", "ids", "embed", "vocab", *LAYER_WEIGHTS, "k_cache", "v_cache", "cos", "sin", "work", "dim", "heads",
         "groups", "head_dim", "hidden", "max_len", "position", "eps", "scale", "status", "seq")
_AT = {name: i for i, name in enumerate(_ARGS)}


def _launch_args(layer: _Layer, buffers: dict, position: int, seq) -> tuple:
    """The kernel's arguments in :data:`_ARGS` order: ``buffers`` by name, the sizes from ``layer``."""
    values = dict(buffers, embed=i32(1 if layer.vocab else 0), vocab=i32(layer.vocab), dim=i32(layer.dim),
                  heads=i32(layer.heads), groups=i32(layer.groups), head_dim=i32(layer.head_dim),
                  hidden=i32(layer.hidden), max_len=i32(layer.max_len), position=i32(position), eps=f32(layer.eps),
                  scale=f32(1.0 / math.sqrt(layer.head_dim)), seq=seq)
    return tuple(values[name] for name in _ARGS)


def _check_ids(ids, batch: int):
    """``ids`` (a NumPy array or an int32 Tensor) after checking it holds one integer per sequence."""
    if _shape_of(ids) != (batch,):
        raise ValueError(f"ids must have shape ({batch},), one id per sequence, got {_shape_of(ids)}")
    if not isinstance(ids, Tensor) and (ids.dtype.kind not in "iu" or ids.dtype == np.bool_):
        raise TypeError(f"ids must hold integers, got dtype {ids.dtype}")
    return ids


def _ids_int32(host: np.ndarray, vocab: int) -> np.ndarray:
    """Host ids as the int32 the kernel reads. The kernel checks their range on the device, but a
    value int32 cannot hold would wrap (2³² + 3 becomes 3, in range), so it is refused here."""
    if host.size and (int(host.min()) < -2**31 or int(host.max()) > 2**31 - 1):
        raise ValueError(ids_out_of_range(host, vocab))
    return host.astype(np.int32, copy=False)


def _bad_ids(vocab: int, ids):
    """The message for ids the device found out of range, worked out only if it did."""
    return lambda: ids_out_of_range(ids.numpy() if isinstance(ids, Tensor) else ids, vocab)


class LayerLaunch:
    """One layer's :func:`decode_layer`, checked and set up once, then launched per token.

    A decoding loop calls each layer with the same tensors at every step; only the position
    and the token ids change. This checks the operands once and sets the kernel's arguments
    on a kernel object of its own, so a step is one launch (and, for the first layer, one
    copy of the ids into a buffer it owns) instead of re-checking 13 operands and setting 30
    arguments: on PoCL's CPU driver that took a step of the capstone model from 80 to ~30 µs
    of host time per layer. The operands must be float32 Tensors on one device; they are
    held, not copied, so later writes into them (an updated cache, new weights loaded in
    place) are seen. ``uses`` tells whether a launch was built for given tensors.

    >>> import numpy as np, netcl_lite as nl
    >>> q = nl.device().queue
    >>> rng = np.random.default_rng(0)
    >>> shapes = dict(norm1=(8,), wq=(8, 8), wk=(8, 4), wv=(8, 4), wo=(8, 8), norm2=(8,), w1=(8, 12), w3=(8, 12), w2=(12, 8))
    >>> w = {k: nl.Tensor.from_host(q, rng.standard_normal(s) * 0.3) for k, s in shapes.items()}
    >>> table = nl.Tensor.from_host(q, rng.standard_normal((10, 8)))
    >>> caches = [nl.Tensor.zeros(q, (1, 1, 5, 4)) for _ in range(4)]
    >>> x1, x2 = nl.Tensor.zeros(q, (1, 8)), nl.Tensor.zeros(q, (1, 8))
    >>> step = LayerLaunch(x1, w, caches[0], caches[1], n_heads=2, table=table)
    >>> for position, token in enumerate([3, 7]):          # the same as decode_layer, step by step
    ...     _ = step(position, ids=np.array([token]))
    ...     _ = decode_layer(x2, w, caches[2], caches[3], position, n_heads=2, ids=np.array([token]), table=table)
    >>> bool(np.array_equal(x1.numpy(), x2.numpy())), step.uses(x1, w, caches[0], caches[1], table)
    (True, True)
    """

    def __init__(self, x, weights, k_cache, v_cache, *, n_heads: int, eps: float = 1e-6,
                 rope_base: float = 10000.0, table=None):
        x = _tensor("x", x, 2)
        k_cache, v_cache = _tensor("k_cache", k_cache, 4), _tensor("v_cache", v_cache, 4)
        if isinstance(weights, dict):
            for name, w in weights.items():
                _tensor(f"weights[{name!r}]", w, len(_shape_of(w)))
        if table is not None:
            _tensor("table", table, 2)
        layer = _check_layer(x, weights, k_cache, v_cache, n_heads, eps, rope_base, table)
        self.operands = dict(x=x, k_cache=k_cache, v_cache=v_cache, **{n: weights[n] for n in LAYER_WEIGHTS},
                             **({"table": table} if table is not None else {}))
        context = x.queue.context
        if any(t.queue.context != context for t in self.operands.values()):
            raise ValueError("decode_layer: tensors live on different OpenCL contexts; copy them to one device first")
        self.layer, self.queue = layer, x.queue
        self.kernel = cl.Kernel(get_program(context, "decode.cl"), "decode_layer")   # its own: the arguments stay set
        self._work = DeviceMemory(context, 4 * layer.batch * layer.per_seq)
        self._ids = DeviceMemory(context, 4 * layer.batch) if layer.vocab else None
        self._tables = device_tables(self.queue, 1, layer.head_dim, layer.rope_base)
        self._status = stream_of(self.queue).status
        buffers = {name: weights[name].buffer for name in LAYER_WEIGHTS}
        buffers.update(x=x.buffer, k_cache=k_cache.buffer, v_cache=v_cache.buffer, work=self._work.buffer,
                       emb=table.buffer if layer.vocab else x.buffer, ids=self._ids.buffer if layer.vocab else x.buffer,
                       cos=self._tables[0].buffer, sin=self._tables[1].buffer, status=self._status)
        self.kernel.set_args(*_launch_args(layer, buffers, 0, i32(0)))
        ls = _local_size(self.queue)
        self._sizes = ((layer.batch * ls,), (ls,))

    def uses(self, x, weights, k_cache, v_cache, table=None) -> bool:
        """Whether this launch was set up for exactly these tensors (the same objects)."""
        mine = self.operands
        return (x is mine["x"] and k_cache is mine["k_cache"] and v_cache is mine["v_cache"]
                and table is mine.get("table") and isinstance(weights, dict)
                and all(weights.get(n) is mine[n] for n in LAYER_WEIGHTS))

    def __call__(self, position: int, ids=None) -> Tensor:
        """Run the layer on one position, as ``decode_layer(x, ..., position, ids=ids, table=...)``; returns x."""
        layer, kernel = self.layer, self.kernel
        position = _check_position(position, layer.max_len)
        if layer.vocab:
            if ids is None:
                raise ValueError("ids: this layer embeds the tokens (it was given a table); pass one id per sequence")
            host = _ids_int32(_check_ids(np.array(ids, copy=True), layer.batch), layer.vocab)
        elif ids is not None:
            raise ValueError("ids: this layer was set up without a table, so it does not embed tokens")
        stream = stream_of(self.queue)
        if stream.status is not self._status:                 # a new stream for this queue
            self._status = stream.status
            kernel.set_arg(_AT["status"], self._status)
        seq = stream.begin("decode_layer", self.operands, _bad_ids(layer.vocab, host) if layer.vocab else "")
        tables = device_tables(self.queue, position + 1, layer.head_dim, layer.rope_base)
        if tables[0] is not self._tables[0]:                  # the cached tables grew
            stream.keep(self._tables)                         # queued steps may still read the old ones
            self._tables = tables
            kernel.set_arg(_AT["cos"], tables[0].buffer)
            kernel.set_arg(_AT["sin"], tables[1].buffer)
        kernel.set_arg(_AT["position"], i32(position))
        kernel.set_arg(_AT["seq"], seq)
        if layer.vocab:
            cl.enqueue_copy(self.queue, self._ids.buffer, host, is_blocking=False)
        stream.enqueue(kernel, "decode.cl:decode_layer", *self._sizes, keep=(self, host if layer.vocab else None))
        return self.operands["x"]


def decode_logits(x, norm, *, table=None, output=None, eps: float = 1e-6, queue=None):
    """Logits (B, V) of the last layer's ``x`` (B, D): ``RMSNorm(x) · norm`` times the LM head.

    Give the head as ``table`` (V, D) when it is tied to the embedding (logits
    ``n @ tableᵀ``), or as ``output`` (D, V) when it is its own matrix. NumPy in gives
    NumPy out; Tensors in give a Tensor.

    >>> import numpy as np
    >>> decode_logits(np.array([[3.0, 4.0]]), np.ones(2), table=np.eye(2)).round(4)   # the RMSNorm of x
    array([[0.8485, 1.1314]], dtype=float32)
    """
    xs = _shape_of(x)
    if len(xs) != 2 or not xs[1]:
        raise ValueError(f"x must have shape (B, D) with D > 0, got {xs}")
    batch, dim = xs
    if _shape_of(norm) != (dim,):
        raise ValueError(f"norm must have shape ({dim},), got {_shape_of(norm)}")
    if (table is None) == (output is None):
        raise ValueError("give the LM head as exactly one of table= (V, D), tied, or output= (D, V)")
    head = table if table is not None else output
    hs = _shape_of(head)
    if len(hs) != 2 or (table is not None and hs[1] != dim) or (output is not None and hs[0] != dim):
        want = f"(vocab, {dim})" if table is not None else f"({dim}, vocab)"
        raise ValueError(f"{'table' if table is not None else 'output'} must have shape {want}, got {hs}")
    vocab = hs[0] if table is not None else hs[1]
    eps = positive_real("eps", eps)
    int32_range(elements=vocab * dim, logits=batch * vocab)
    call = OpCall("decode_logits", queue=queue, x=x, norm=norm, head=head)
    local_bytes = 4 * dim
    if local_bytes > call.queue.device.local_mem_size // 2:
        raise ValueError(f"x's width {dim} needs {local_bytes} bytes of local memory; this device has "
                         f"{call.queue.device.local_mem_size}")
    tx, tn, th = call.float_input("x"), call.float_input("norm"), call.float_input("head")
    out = call.output((batch, vocab))
    if batch and vocab:
        ls = _local_size(call.queue)
        tied = table is not None
        columns = -(-vocab // 8)                        # 8 vocabulary entries per work-item
        call.launch("decode.cl", "decode_logits", (round_up(columns, ls), batch), (ls, 1), tx.buffer, tn.buffer,
                    th.buffer, out.buffer, cl.LocalMemory(local_bytes), i32(dim), i32(vocab), i32(tied), f32(eps),
                    call.stream.status, call.seq)
    return call.result(out, check=[False])
