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
import numbers

import numpy as np
import pyopencl as cl

from ..checks import positive_int, positive_real
from ..core.tensor import Tensor
from .operands import OpCall, f32, i32, int32_range, round_up
from .rope import _device_tables

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
    batch, dim = x.shape
    k_cache, v_cache = _tensor("k_cache", k_cache, 4), _tensor("v_cache", v_cache, 4)
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
    if isinstance(position, bool) or not isinstance(position, numbers.Integral) or not 0 <= position < max_len:
        raise ValueError(f"position must be an int in [0, {max_len}) (the cache's length), got {position!r}")
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
    if (table is None) != (ids is None):
        raise ValueError("pass ids and table together (the embedding of the first layer), or neither")
    vocab = 0
    if table is not None:
        ts = _shape_of(table)
        if len(ts) != 2 or ts[1] != dim:
            raise ValueError(f"table must have shape (vocab, {dim}), got {ts}")
        vocab = ts[0]
        id_arr = ids if isinstance(ids, Tensor) else np.asarray(ids)
        if _shape_of(id_arr) != (batch,):
            raise ValueError(f"ids must have shape ({batch},), one id per sequence, got {_shape_of(id_arr)}")
        if not isinstance(ids, Tensor) and (id_arr.dtype.kind not in "iu" or id_arr.dtype == np.bool_):
            raise TypeError(f"ids must hold integers, got dtype {id_arr.dtype}")
    per_seq = 4 * dim + 2 * kv + heads * max_len + hidden
    int32_range(elements=batch * groups * max_len * head_dim, work=batch * per_seq,
                weights=max(dim * hidden, vocab * dim))

    bad = (lambda: f"ids must lie in [0, {vocab}); got {np.asarray(ids).tolist()}") if vocab else ""
    call = OpCall("decode_layer", bad_input=bad, x=x, k_cache=k_cache, v_cache=v_cache,
                  **{name: weights[name] for name in LAYER_WEIGHTS}, **({"table": table} if vocab else {}))
    w = [call.float_input(name).buffer for name in LAYER_WEIGHTS]
    if vocab:
        emb = call.float_input("table").buffer
        id_buf = call.int_input("ids", ids if isinstance(ids, Tensor) else np.asarray(ids, np.int32)).buffer
    else:
        emb = id_buf = x.buffer                    # unread: embed = 0
    cos_t, sin_t = _device_tables(call.queue, position + 1, head_dim, rope_base)
    work = call.scratch("decode.work", batch * per_seq)
    ls = _local_size(call.queue)
    call.launch("decode.cl", "decode_layer", (batch * ls,), (ls,),
                x.buffer, emb, id_buf, i32(1 if vocab else 0), i32(vocab), *w, k_cache.buffer, v_cache.buffer,
                cos_t.buffer, sin_t.buffer, work, i32(dim), i32(heads), i32(groups), i32(head_dim), i32(hidden),
                i32(max_len), i32(position), f32(eps), f32(1.0 / math.sqrt(head_dim)), call.stream.status, call.seq)
    return x


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
