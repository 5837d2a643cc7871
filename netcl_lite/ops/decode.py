"""Cached decoding steps of a Llama decoder for many streams at once (``kernels/decode.cl``).

Float64 references: :func:`netcl_lite.reference.decode_layer`, :func:`netcl_lite.reference.decode_logits`,
:func:`netcl_lite.reference.decode_step`, :func:`netcl_lite.reference.decode_prefill`.

Generating a token runs the model on one position per sequence (stream). Per stream every weight
matrix meets one vector, about one multiply-add per weight loaded, and the training path would
spend ~17 launches per layer on it. The kernel here runs a tile of streams per work-group
through the embedding, up to :data:`SLOTS` layers (both norms, the projections, RoPE, the cache
append, attention over the cached prefix, SwiGLU and both residuals) and the LM head, so a weight
is loaded once per register tile of streams, and a step of a model of up to :data:`SLOTS` layers
is one launch. Inference only: nothing is recorded for a backward pass.

:class:`StepLaunch` sets a model's step up once and launches it per token; :func:`decode_prefill`
runs a prompt's positions through the same kernel at once (a row per stream and position);
:func:`decode_layer`, :class:`LayerLaunch` and :func:`decode_logits` run one layer or the head
alone. A stream's values do not depend on the batch it is decoded in, on the work-group sizes or
on the device's compute-unit count: every value is summed by one work-item in a fixed order.

The weights are the training path's, in its layout (projections ``(in, out)``): pass
:data:`LAYER_WEIGHTS` by name, e.g. from a :class:`~netcl_lite.nn.DecoderBlock`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pyopencl as cl
import pyopencl.cltypes as cltypes

from ..checks import int_in, not_masked, positive_int, positive_real
from ..core import compiler_target
from ..core.kernels import get_program, vector_lanes
from ..core.stream import stream_of
from ..core.tensor import DeviceMemory, Tensor
from .embedding import ids_out_of_range
from .operands import OpCall, f32, i32, int32_range
from .rope import device_tables

#: the weights one layer reads, by name: RMSNorm gains, attention and SwiGLU projections
LAYER_WEIGHTS = ("norm1", "wq", "wk", "wv", "wo", "norm2", "w1", "w3", "w2")
#: layers one launch runs (``SLOTS`` in ``kernels/decode.cl``); a deeper model takes one launch per
#: this many layers
SLOTS = 4
_CACHES = ("k_cache", "v_cache")
#: the kernel's arguments, in order: one set of :data:`LAYER_WEIGHTS` and caches per slot
_ARGS = ("x", "work", "ids", "inline_ids", "ids_lo", "ids_hi", "table", "norm", "head", "logits",
         *(f"{name}.{slot}" for slot in range(SLOTS) for name in (*LAYER_WEIGHTS, *_CACHES)),
         "cos", "sin", "batch", "span", "rows_per_group", "layers", "embed", "head_mode", "dim", "heads", "groups",
         "head_dim", "hidden", "max_len", "vocab", "position", "eps", "scale", "status", "seq")
_AT = {name: i for i, name in enumerate(_ARGS)}
#: the scalar arguments' types (buffers None), as PyOpenCL packs them
_FLOATS = ("eps", "scale")
_DTYPES = [cltypes.int16 if name in ("ids_lo", "ids_hi") else np.float32 if name in _FLOATS
           else np.int32 if name in ("inline_ids", "batch", "span", "rows_per_group", "layers", "embed", "head_mode", "dim",
                                     "heads", "groups", "head_dim", "hidden", "max_len", "vocab", "position", "seq")
           else None for name in _ARGS]
#: streams whose token ids a step passes as kernel arguments (two int16), not through a copy
INLINE_IDS = 32
_NO_IDS = np.zeros(INLINE_IDS, np.int32).view(cltypes.int16)
NO_HEAD, TIED, UNTIED, NORMED = 0, 1, 2, 3


def _local_size(queue: cl.CommandQueue) -> int:
    """Work-items per group: a CPU runs a group on one core (16 items, one local size for every
    shape: PoCL compiles a kernel anew per local size); a GPU wants more items in flight."""
    return 16 if queue.device.type & cl.device_type.CPU else 128


def _tiles(device: cl.Device) -> tuple[int, int, int]:
    """(VW, MR, HR): vector lanes, rows of a projection's register tile (MR x 2 vectors of sums)
    and of the tied head's (HR x 4): 16 vector sums where there are 32 vector registers, else 8."""
    vw = vector_lanes(device)
    return (vw, 8, 4) if vw == 16 else (vw, 4, 2)


def _options(device: cl.Device) -> tuple[str, ...]:
    """The kernel's build options: its tiles, and software prefetching of the weights on PoCL's CPU
    driver (other compilers, Oclgrind's among them, may not know the prefetch intrinsic)."""
    vw, mr, hr = _tiles(device)
    prefetch = compiler_target.pocl_cpu_name(device) is not None
    return (f"-DVW={vw}", f"-DMR={mr}", f"-DHR={hr}", f"-DPREFETCH={int(prefetch)}")


def _rows_per_group(queue: cl.CommandQueue, batch: int) -> int:
    """Streams per work-group: as many groups as compute units while each keeps a full register
    tile of rows (every group loads all the weights once). The values do not depend on it."""
    mr = _tiles(queue.device)[1]
    groups = max(1, min(queue.device.max_compute_units, -(-batch // mr)))
    return -(-batch // groups)


def _tensor(name: str, x, ndim: int) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a Tensor (the step updates it on the device), got {type(x).__name__}")
    if x.dtype != np.float32 or x.ndim != ndim:
        raise ValueError(f"{name} must be a float32 Tensor with {ndim} axes, got {x.dtype} of shape {x.shape}")
    return x


def _shape_of(x) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, (Tensor, np.ndarray)) else np.shape(x)


class _Rows(NamedTuple):
    """A (streams, dim) shape standing in for x where the rows are not a Tensor of their own."""

    shape: tuple


def _segment(n: int) -> int:
    """Floats of a row's scratch segment of n values (whole 64-byte lines, as the kernel lays them)."""
    return -(-n // 16) * 16


class _Sizes(NamedTuple):
    """The sizes of a decoding step, from its validated operands."""

    batch: int
    dim: int
    heads: int
    groups: int
    max_len: int
    head_dim: int
    hidden: int
    vocab: int
    eps: float
    rope_base: float

    @property
    def row_floats(self) -> int:
        """Scratch floats per stream: n, q, k, v, scores, o and u (``decode_step``'s layout)."""
        kv = self.groups * self.head_dim
        return (3 * _segment(self.dim) + 2 * _segment(kv) + _segment(self.heads * self.max_len)
                + _segment(self.hidden))


def _check_layer(x: Tensor, weights, k_cache: Tensor, v_cache: Tensor, n_heads, eps, rope_base, table,
                 what: str = "weights") -> _Sizes:
    """Check one layer's operands (all but the position and the ids) and return the step's sizes."""
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
        raise ValueError(f"{what} must be a dict with exactly the keys {LAYER_WEIGHTS}, got {have}")
    kv = groups * head_dim
    w1_shape = _shape_of(weights["w1"])
    if len(w1_shape) != 2 or w1_shape[0] != dim or not w1_shape[1]:
        raise ValueError(f"{what}['w1'] must have shape ({dim}, hidden) with hidden > 0, got {w1_shape}")
    hidden = w1_shape[1]
    expected = dict(norm1=(dim,), wq=(dim, dim), wk=(dim, kv), wv=(dim, kv), wo=(dim, dim), norm2=(dim,),
                    w1=(dim, hidden), w3=(dim, hidden), w2=(hidden, dim))
    for name in LAYER_WEIGHTS:
        if _shape_of(weights[name]) != expected[name]:
            raise ValueError(f"{what}[{name!r}] must have shape {expected[name]}, got {_shape_of(weights[name])}")
    vocab = 0
    if table is not None:
        ts = _shape_of(table)
        if len(ts) != 2 or ts[1] != dim or not ts[0]:
            raise ValueError(f"table must have shape (vocab, {dim}) with vocab > 0, got {ts}")
        vocab = ts[0]
    sizes = _Sizes(batch, dim, heads, groups, max_len, head_dim, hidden, vocab, eps, rope_base)
    int32_range(elements=batch * groups * max_len * head_dim, work=batch * sizes.row_floats,
                weights=max(dim * hidden, vocab * dim))
    return sizes


def _check_position(position, max_len: int) -> int:
    return int_in("position", position, 0, max_len, "the cache's length")


def _inline(host: np.ndarray | None):
    """(inline_ids, ids_lo, ids_hi) for host int32 ids of up to :data:`INLINE_IDS` streams, else unused."""
    if host is None or host.size > INLINE_IDS:
        return 0, _NO_IDS[0], _NO_IDS[1]
    packed = np.zeros(INLINE_IDS, np.int32)
    packed[:host.size] = host
    lo, hi = packed.view(cltypes.int16)
    return 1, lo, hi


_KERNELS: dict[tuple, cl.Kernel] = {}


def _kernel(queue: cl.CommandQueue) -> cl.Kernel:
    """``decode_step`` for this context and device, its scalar types declared (the library's loader
    knows no vector-typed arguments), built once. Launches set every argument each time."""
    options = _options(queue.device)
    key = (queue.context.int_ptr, options)
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS[key] = cl.Kernel(get_program(queue.context, "decode.cl", options), "decode_step")
        kernel.set_scalar_arg_dtypes(_DTYPES)
    return kernel


def _arguments(sizes: _Sizes, buffers: dict, layers: list[dict], *, rows_per_group: int, embed: bool,
               head_mode: int, position: int, seq, host_ids: np.ndarray | None = None, span: int = 1) -> tuple:
    """The kernel's arguments in :data:`_ARGS` order. ``buffers`` names the step's buffers, ``layers``
    holds each layer's weight and cache buffers by name; slots past the layers get ``x`` (unread)."""
    inline, lo, hi = _inline(host_ids)
    values = dict(buffers, inline_ids=inline, ids_lo=lo, ids_hi=hi, batch=i32(sizes.batch), span=i32(span),
                  rows_per_group=i32(rows_per_group), layers=i32(len(layers)),
                  embed=i32(embed), head_mode=i32(head_mode), dim=i32(sizes.dim), heads=i32(sizes.heads),
                  groups=i32(sizes.groups), head_dim=i32(sizes.head_dim), hidden=i32(sizes.hidden),
                  max_len=i32(sizes.max_len), vocab=i32(sizes.vocab), position=i32(position), eps=f32(sizes.eps),
                  scale=f32(1.0 / math.sqrt(sizes.head_dim)), seq=seq)
    for slot in range(SLOTS):
        for name in (*LAYER_WEIGHTS, *_CACHES):
            values[f"{name}.{slot}"] = layers[slot][name] if slot < len(layers) else buffers["x"]
    return tuple(values[name] for name in _ARGS)


def _layer_caches(layers, k_caches, v_caches) -> tuple[list, list]:
    """Checks that ``layers`` is a non-empty list with one K and one V cache per layer; returns the
    caches as 4-D tensors (each named by its index in a refusal)."""
    if not isinstance(layers, (list, tuple)) or not layers:
        raise ValueError("layers must be a non-empty list of weight dicts (one per layer)")
    for name, caches in (("k_caches", k_caches), ("v_caches", v_caches)):
        if not isinstance(caches, (list, tuple)) or len(caches) != len(layers):
            raise ValueError(f"{name} must be a list of one cache per layer ({len(layers)})")
    return ([_tensor(f"k_caches[{i}]", t, 4) for i, t in enumerate(k_caches)],
            [_tensor(f"v_caches[{i}]", t, 4) for i, t in enumerate(v_caches)])


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
    sizes = _check_layer(x, weights, k_cache, v_cache, n_heads, eps, rope_base, table)
    position = _check_position(position, sizes.max_len)
    if sizes.vocab:
        not_masked("ids", ids)
        id_arr = _check_ids(ids if isinstance(ids, Tensor) else np.asarray(ids), sizes.batch)

    bad = _bad_ids(sizes.vocab, ids) if sizes.vocab else ""
    call = OpCall("decode_layer", bad_input=bad, x=x, k_cache=k_cache, v_cache=v_cache,
                  **{name: weights[name] for name in LAYER_WEIGHTS}, **({"table": table} if sizes.vocab else {}))
    layer = {name: call.float_input(name).buffer for name in LAYER_WEIGHTS}
    layer.update(k_cache=k_cache.buffer, v_cache=v_cache.buffer)
    buffers = dict(x=x.buffer, table=x.buffer, ids=x.buffer, norm=x.buffer, head=x.buffer, logits=x.buffer)
    if sizes.vocab:
        buffers["table"] = call.float_input("table").buffer
        buffers["ids"] = call.int_input("ids", ids if isinstance(ids, Tensor) else _ids_int32(id_arr, sizes.vocab)).buffer
    cos_t, sin_t = device_tables(call.queue, position + 1, sizes.head_dim, sizes.rope_base)
    buffers.update(cos=cos_t.buffer, sin=sin_t.buffer, status=call.stream.status,
                   work=call.scratch("decode.work", sizes.batch * sizes.row_floats))
    rows = _rows_per_group(call.queue, sizes.batch)
    _launch(call, sizes.batch, _arguments(sizes, buffers, [layer], rows_per_group=rows, embed=bool(sizes.vocab),
                                          head_mode=NO_HEAD, position=position, seq=call.seq))
    return x


def _launch(call: OpCall, batch: int, args: tuple, span: int = 1) -> None:
    """One call's launch of ``decode_step`` with ``args`` (kept alive until the next sync)."""
    kernel = _kernel(call.queue)
    kernel.set_args(*args)
    rows, ls = _rows_per_group(call.queue, batch), _local_size(call.queue)
    call.stream.enqueue(kernel, "decode.cl:decode_step", (-(-batch // rows) * ls,), (ls,), keep=args)


def decode_prefill(ids, layers, k_caches, v_caches, position: int, *, n_heads: int, table, norm, eps: float = 1e-6,
                   rope_base: float = 10000.0) -> Tensor:
    """Run a prompt through the layers at once: the final-normed hidden states (B, T, D) of ``ids``.

    ``ids`` (B, T) are each stream's tokens at positions ``position .. position + T - 1``; every
    layer's K and V at those positions are written into its cache (B, G, S, d), which must hold
    the earlier positions already. ``layers``, the caches and ``table`` (V, D) are as
    :class:`StepLaunch` takes them; ``norm`` (D,) is the final RMSNorm's weight. The step kernel
    runs the B·T rows (stream, position) with a work-group per tile of whole streams, each row
    attending causally over its stream's cache, one launch per :data:`SLOTS` layers: the
    arithmetic of T decoding steps, with each weight read once per tile of rows.

    >>> import numpy as np, netcl_lite as nl
    >>> q = nl.device().queue
    >>> rng = np.random.default_rng(0)
    >>> shapes = dict(norm1=(8,), wq=(8, 8), wk=(8, 4), wv=(8, 4), wo=(8, 8), norm2=(8,), w1=(8, 12), w3=(8, 12), w2=(12, 8))
    >>> layers = [{k: nl.Tensor.from_host(q, rng.standard_normal(s) * 0.3) for k, s in shapes.items()}]
    >>> table, norm = nl.Tensor.from_host(q, rng.standard_normal((10, 8))), nl.Tensor.from_host(q, np.ones(8))
    >>> k, v = nl.Tensor.zeros(q, (2, 1, 6, 4)), nl.Tensor.zeros(q, (2, 1, 6, 4))
    >>> decode_prefill([[3, 7, 1], [2, 2, 9]], layers, [k], [v], 0, n_heads=2, table=table, norm=norm).shape
    (2, 3, 8)
    """
    k_caches, v_caches = _layer_caches(layers, k_caches, v_caches)
    _tensor("table", table, 2)
    _tensor("norm", norm, 1)
    not_masked("ids", ids)
    arr = np.asarray(ids) if not isinstance(ids, Tensor) else None
    if arr is None or arr.ndim != 2 or not arr.size:
        raise ValueError(f"ids must be a (batch, positions) array of token ids with at least one, got "
                         f"{'a Tensor' if arr is None else arr.shape}")
    if arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        raise TypeError(f"ids must hold integers, got dtype {arr.dtype}")
    batch, span = arr.shape
    if k_caches[0].shape[0] != batch:
        raise ValueError(f"ids has {batch} rows (streams), the caches hold {k_caches[0].shape[0]}; they must agree")
    streams = _Rows((batch, table.shape[1]))                  # x's shape as the layer checks want it
    sizes = [_check_layer(streams, w, k, v, n_heads, eps, rope_base, table, f"layers[{i}]")
             for i, (w, k, v) in enumerate(zip(layers, k_caches, v_caches))]
    if any(s != sizes[0] for s in sizes[1:]):
        raise ValueError("layers have other sizes than layers[0]; a step runs layers of one shape")
    sizes = sizes[0]
    position = int_in("position", position, 0, sizes.max_len - span + 1,
                      f"the cache's length {sizes.max_len} less the {span} positions")
    if norm.shape != (sizes.dim,):
        raise ValueError(f"norm must have shape ({sizes.dim},), got {norm.shape}")
    host = _ids_int32(arr.reshape(-1), sizes.vocab)
    tensors = dict(table=table, norm=norm, **{f"k_caches[{i}]": k for i, k in enumerate(k_caches)},
                   **{f"v_caches[{i}]": v for i, v in enumerate(v_caches)},
                   **{f"layers[{i}][{n!r}]": w[n] for i, w in enumerate(layers) for n in LAYER_WEIGHTS})
    call = OpCall("decode_prefill", bad_input=_bad_ids(sizes.vocab, arr), **tensors)
    out = Tensor.empty(call.queue, (batch, span, sizes.dim))
    cos_t, sin_t = device_tables(call.queue, position + span, sizes.head_dim, sizes.rope_base)
    rows = _rows_per_group(call.queue, batch) * span
    buffers = dict(x=call.scratch("decode.rows", batch * span * sizes.dim),
                   work=call.scratch("decode.work", batch * span * sizes.row_floats),
                   ids=call.int_input("ids", host).buffer, table=table.buffer, norm=norm.buffer, head=table.buffer,
                   logits=out.buffer, cos=cos_t.buffer, sin=sin_t.buffer, status=call.stream.status)
    for first in range(0, len(layers), SLOTS):
        chunk = [dict({n: w[n].buffer for n in LAYER_WEIGHTS}, k_cache=k.buffer, v_cache=v.buffer)
                 for w, k, v in zip(layers[first:first + SLOTS], k_caches[first:first + SLOTS],
                                    v_caches[first:first + SLOTS])]
        last = first + SLOTS >= len(layers)
        _launch(call, batch, _arguments(sizes, buffers, chunk, rows_per_group=rows, embed=not first,
                                        head_mode=NORMED if last else NO_HEAD, position=position, seq=call.seq,
                                        span=span), span)
    return out


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


def _check_head(sizes: _Sizes, norm, table, output) -> int:
    """The head's mode (:data:`NO_HEAD`, :data:`TIED`, :data:`UNTIED`) after checking its operands."""
    if norm is None:
        if output is not None:
            raise ValueError("output: pass the final norm's weight (norm=) with the LM head")
        return NO_HEAD
    _tensor("norm", norm, 1)
    if norm.shape != (sizes.dim,):
        raise ValueError(f"norm must have shape ({sizes.dim},), got {norm.shape}")
    if output is None:
        if table is None:
            raise ValueError("a tied LM head reads the embedding table: pass table= (vocab, dim), or output= (dim, vocab)")
        return TIED
    _tensor("output", output, 2)
    if output.shape != (sizes.dim, sizes.vocab or output.shape[1]) or not output.shape[1]:
        want = f"({sizes.dim}, {sizes.vocab})" if sizes.vocab else f"({sizes.dim}, vocab) with vocab > 0"
        raise ValueError(f"output must have shape {want}, got {output.shape}")
    return UNTIED


class StepLaunch:
    """A decoding step of a stack of layers, checked and set up once, then launched per token.

    ``StepLaunch(x, layers, k_caches, v_caches, *, n_heads, eps=1e-6, rope_base=10000.0,
    table=None, norm=None, output=None)``: ``x`` (B, D) holds the streams' hidden state,
    ``layers`` is a list of weight dicts (:data:`LAYER_WEIGHTS`, as :func:`decode_layer` takes
    them), with one K and one V cache (B, G, S, d) per layer. With ``table`` (V, D) a step first
    embeds its ids; with ``norm`` (D,) it ends with the final RMSNorm and the LM head, tied to
    ``table`` or ``output`` (D, V), and writes the logits into a (B, V) Tensor it owns
    (:attr:`logits`). A step is one launch per :data:`SLOTS` layers, whose arguments are worked
    out once; a call changes only the position, the sequence number, the ids (kernel arguments
    for up to :data:`INLINE_IDS` streams, else one copy into a buffer it owns) and, when the
    cached RoPE tables grow, the tables, and allocates nothing on the device. The operands must be float32 Tensors on one device; they are held, not copied, so later
    writes into them (an updated cache, new weights loaded in place) are seen. ``uses`` tells
    whether a launch was built for given tensors.

    >>> import numpy as np, netcl_lite as nl
    >>> q = nl.device().queue
    >>> rng = np.random.default_rng(0)
    >>> shapes = dict(norm1=(8,), wq=(8, 8), wk=(8, 4), wv=(8, 4), wo=(8, 8), norm2=(8,), w1=(8, 12), w3=(8, 12), w2=(12, 8))
    >>> layers = [{k: nl.Tensor.from_host(q, rng.standard_normal(s) * 0.3) for k, s in shapes.items()} for _ in range(2)]
    >>> table, norm = nl.Tensor.from_host(q, rng.standard_normal((10, 8))), nl.Tensor.from_host(q, np.ones(8))
    >>> caches = [nl.Tensor.zeros(q, (3, 1, 5, 4)) for _ in range(4)]
    >>> step = StepLaunch(nl.Tensor.zeros(q, (3, 8)), layers, caches[:2], caches[2:], n_heads=2, table=table, norm=norm)
    >>> step(0, ids=[3, 7, 1]).shape                    # logits of 3 streams after their first token
    (3, 10)
    """

    def __init__(self, x, layers, k_caches, v_caches, *, n_heads: int, eps: float = 1e-6,
                 rope_base: float = 10000.0, table=None, norm=None, output=None):
        x = _tensor("x", x, 2)
        k_caches, v_caches = _layer_caches(layers, k_caches, v_caches)
        for i, weights in enumerate(layers):
            if isinstance(weights, dict):
                for name, w in weights.items():
                    _tensor(f"layers[{i}][{name!r}]", w, len(_shape_of(w)))
        if table is not None:
            _tensor("table", table, 2)
        sizes = [_check_layer(x, w, k, v, n_heads, eps, rope_base, table, f"layers[{i}]")
                 for i, (w, k, v) in enumerate(zip(layers, k_caches, v_caches))]
        for i, s in enumerate(sizes[1:], 1):
            if s != sizes[0]:
                raise ValueError(f"layers[{i}] has other sizes than layers[0] ({s} vs {sizes[0]}); "
                                 "a step runs layers of one shape")
        self.sizes = sizes = sizes[0]
        self.head_mode = _check_head(sizes, norm, table, output)
        if self.head_mode == UNTIED and not sizes.vocab:
            self.sizes = sizes = sizes._replace(vocab=output.shape[1])
        self.layers = [dict(weights) for weights in layers]
        self.k_caches, self.v_caches = list(k_caches), list(v_caches)
        self.operands = dict(x=x, table=table, norm=norm, output=output)
        # what a step reads, by name: an input found non-finite after a failure is named
        self._reads = {name: t for name, t in self.operands.items() if t is not None}
        for i, (w, k, v) in enumerate(zip(self.layers, self.k_caches, self.v_caches)):
            self._reads.update({f"layers[{i}][{n!r}]": w[n] for n in LAYER_WEIGHTS}, **{f"k_caches[{i}]": k,
                                                                                      f"v_caches[{i}]": v})
        tensors = [x, *self.k_caches, *self.v_caches, *(t for w in self.layers for t in w.values()),
                   *(t for t in (table, norm, output) if t is not None)]
        context = x.queue.context
        if any(t.queue.context != context for t in tensors):
            raise ValueError("decode step: tensors live on different OpenCL contexts; copy them to one device first")
        self.queue = queue = x.queue
        self.embeds = table is not None
        self.logits = Tensor.empty(queue, (sizes.batch, sizes.vocab)) if self.head_mode else None
        self._work = DeviceMemory(context, 4 * sizes.batch * sizes.row_floats)
        self._ids = DeviceMemory(context, 4 * sizes.batch) if self.embeds and sizes.batch > INLINE_IDS else None
        self._tables = device_tables(queue, 1, sizes.head_dim, sizes.rope_base)
        rows = _rows_per_group(queue, sizes.batch)
        ls = _local_size(queue)
        self._sizes = ((-(-sizes.batch // rows) * ls,), (ls,))
        head = output if self.head_mode == UNTIED else table
        buffers = dict(x=x.buffer, work=self._work.buffer, ids=self._ids.buffer if self._ids is not None else x.buffer,
                       table=table.buffer if self.embeds else x.buffer, norm=norm.buffer if norm is not None else x.buffer,
                       head=head.buffer if self.head_mode else x.buffer,
                       logits=self.logits.buffer if self.head_mode else x.buffer,
                       cos=self._tables[0].buffer, sin=self._tables[1].buffer, status=stream_of(queue).status)
        # per launch, its arguments: a step changes the position and the sequence number and sets
        # them all at once (with the scalar types declared, cheaper than two set_arg calls)
        self._kernel = _kernel(queue)
        self._args = []
        for first in range(0, len(self.layers), SLOTS):
            chunk = [dict({n: w[n].buffer for n in LAYER_WEIGHTS}, k_cache=k.buffer, v_cache=v.buffer)
                     for w, k, v in zip(self.layers[first:first + SLOTS], self.k_caches[first:first + SLOTS],
                                        self.v_caches[first:first + SLOTS])]
            last = first + SLOTS >= len(self.layers)
            self._args.append(list(_arguments(sizes, buffers, chunk, rows_per_group=rows, embed=self.embeds and not first,
                                              head_mode=self.head_mode if last else NO_HEAD, position=0, seq=0)))

    @property
    def launches(self) -> int:
        """Kernel launches per step."""
        return len(self._args)

    def uses(self, x, layers, k_caches, v_caches, table=None, norm=None, output=None) -> bool:
        """Whether this launch was set up for exactly these tensors (the same objects)."""
        mine = self.operands
        if not (x is mine["x"] and table is mine["table"] and norm is mine["norm"] and output is mine["output"]
                and len(layers) == len(self.layers) == len(k_caches) == len(v_caches)):
            return False
        return (all(a is b for a, b in zip(k_caches, self.k_caches)) and all(a is b for a, b in zip(v_caches, self.v_caches))
                and all(isinstance(w, dict) and all(w.get(n) is m[n] for n in LAYER_WEIGHTS)
                        for w, m in zip(layers, self.layers)))

    def __call__(self, position: int, ids=None) -> Tensor:
        """Run the step on one position; returns the logits Tensor with a head, else ``x``."""
        sizes = self.sizes
        position = _check_position(position, sizes.max_len)
        if self.embeds:
            if ids is None:
                raise ValueError("ids: this step embeds the tokens (it was given a table); pass one id per sequence")
            host = _ids_int32(_check_ids(np.array(ids, copy=True), sizes.batch), sizes.vocab)
        elif ids is not None:
            raise ValueError("ids: this step was set up without a table, so it does not embed tokens")
        stream = stream_of(self.queue)
        seq = stream.begin(self._name, self._reads, _bad_ids(sizes.vocab, host) if self.embeds else "")
        tables = device_tables(self.queue, position + 1, sizes.head_dim, sizes.rope_base)
        if tables[0] is not self._tables[0]:                  # the cached tables grew
            stream.keep(self._tables)                         # queued steps may still read the old ones
            self._tables = tables
        inline = _inline(host if self.embeds else None)
        if self.embeds and not inline[0]:                     # too many streams to pass as arguments
            cl.enqueue_copy(self.queue, self._ids.buffer, host, is_blocking=False)
        for args in self._args:
            args[_AT["status"]], args[_AT["cos"]], args[_AT["sin"]] = stream.status, tables[0].buffer, tables[1].buffer
            args[_AT["position"]], args[_AT["seq"]] = position, seq
            args[_AT["inline_ids"]], args[_AT["ids_lo"]], args[_AT["ids_hi"]] = inline
            self._kernel.set_args(*args)
            stream.enqueue(self._kernel, "decode.cl:decode_step", *self._sizes, keep=(self, host if self.embeds else None))
        return self.logits if self.head_mode else self.operands["x"]

    _name = "decode_step"


class LayerLaunch(StepLaunch):
    """One layer's :func:`decode_layer`, checked and set up once, then launched per token.

    A :class:`StepLaunch` of one layer without a head: a decoding loop calls the layer with the
    same tensors at every step, and only the position and the token ids change, so a step is
    one launch instead of re-checking 13 operands. ``uses`` tells whether a launch was built for given tensors.

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

    _name = "decode_layer"

    def __init__(self, x, weights, k_cache, v_cache, *, n_heads: int, eps: float = 1e-6,
                 rope_base: float = 10000.0, table=None):
        x = _tensor("x", x, 2)
        k_cache, v_cache = _tensor("k_cache", k_cache, 4), _tensor("v_cache", v_cache, 4)
        if isinstance(weights, dict):
            for name, w in weights.items():
                _tensor(f"weights[{name!r}]", w, len(_shape_of(w)))
        _check_layer(x, weights, k_cache, v_cache, n_heads, eps, rope_base, table)   # the messages name `weights`
        super().__init__(x, [weights], [k_cache], [v_cache], n_heads=n_heads, eps=eps, rope_base=rope_base,
                         table=table)

    def uses(self, x, weights, k_cache, v_cache, table=None) -> bool:
        """Whether this launch was set up for exactly these tensors (the same objects)."""
        return super().uses(x, [weights], [k_cache], [v_cache], table)

    def __call__(self, position: int, ids=None) -> Tensor:
        """Run the layer on one position, as ``decode_layer(x, ..., position, ids=ids, table=...)``; returns x."""
        return super().__call__(position, ids)


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
    tx, tn, th = call.float_input("x"), call.float_input("norm"), call.float_input("head")
    out = call.output((batch, vocab))
    if batch and vocab:
        sizes = _Sizes(batch, dim, 1, 1, 1, 2, 1, vocab, eps, 1.0)
        mode = TIED if table is not None else UNTIED
        buffers = dict(x=tx.buffer, work=call.scratch("decode.work", batch * sizes.row_floats), ids=tx.buffer,
                       table=tx.buffer, norm=tn.buffer, head=th.buffer, logits=out.buffer, cos=tx.buffer,
                       sin=tx.buffer, status=call.stream.status)
        rows = _rows_per_group(call.queue, batch)
        _launch(call, batch, _arguments(sizes, buffers, [], rows_per_group=rows, embed=False, head_mode=mode,
                                        position=0, seq=call.seq))
    return call.result(out, check=[False])
