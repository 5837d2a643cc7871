"""Reverse-mode autograd over device tensors, in micrograd's shape.

A :class:`Tape` records every differentiable op run inside ``with Tape():``.
Each op below computes its output with a forward op from :mod:`netcl_lite.ops`
and, right beside it, a ``backward(g)`` closure mapping the output's gradient
to its inputs' gradients. ``tape.backward(loss)`` replays the record in reverse
(the order ops ran in is already a topological order) and accumulates into
each :class:`Node`'s ``.grad``. Every rule runs on the device: forward ops
where the math allows (matmul's backward is two matmuls with transposes, RoPE's
is RoPE conjugated by a sign flip), otherwise ``kernels/*_backward.cl``.

    >>> import numpy as np
    >>> from netcl_lite import autograd as ag
    >>> with ag.Tape() as tape:
    ...     w = ag.tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    ...     loss = ag.sum(ag.mul(w, w))
    >>> tape.backward(loss)
    >>> w.grad.to_host()
    array([[2., 4.],
           [6., 8.]], dtype=float32)

Subtle: with no tape active (or no input requiring gradients) an op records
nothing and keeps nothing alive: that is inference. Nested tapes all record the
ops run inside them, so an outer tape's ``backward`` also sees inner ops, while
an inner tape's treats values made before it as constants.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from . import ops
from .core.device import manager
from .core.kernels import get_kernel
from .core.tensor import Tensor
from .ops.attention import attention_shapes
from .ops.masking import device_mask
from .ops.operands import round_up

_ACTIVE: list[Tape] = []  # the tapes whose `with` block is running, innermost last


class Node:
    """A device value on the tape: ``value`` (a float32 :class:`Tensor`) and ``grad`` (a Tensor or None)."""

    __slots__ = ("grad", "op", "parents", "requires_grad", "rule", "value")

    def __init__(self, value: Tensor, requires_grad: bool = False, parents=(), rule=None, op: str = "leaf"):
        if not isinstance(value, Tensor):
            raise TypeError(f"a Node holds a Tensor, got {type(value).__name__}")
        if requires_grad and value.dtype != np.float32:
            raise TypeError(f"only float32 tensors can require gradients, got {value.dtype}")
        self.value, self.grad, self.requires_grad = value, None, bool(requires_grad)
        self.parents, self.rule, self.op = tuple(parents), rule, op

    shape = property(lambda self: self.value.shape)
    dtype = property(lambda self: self.value.dtype)
    queue = property(lambda self: self.value.queue)

    def numpy(self) -> np.ndarray:
        """The value copied to the host."""
        return self.value.to_host()

    def reshape(self, *shape) -> Node:
        return reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else shape)

    def __add__(self, other):
        return add(self, other)

    def __mul__(self, other):
        return mul(self, other)

    def __matmul__(self, other):
        return matmul(self, other)

    def __repr__(self) -> str:
        return f"Node({self.op}, shape={self.shape}, requires_grad={self.requires_grad})"


class Tape:
    """Records ops run inside ``with Tape() as tape:``; ``tape.backward(node)`` fills ``.grad``."""

    def __init__(self):
        self.nodes: list[Node] = []  # outputs of recorded ops, in the order they ran

    def __enter__(self):
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.remove(self)

    def backward(self, node: Node, grad=None) -> None:
        """Accumulate d(node)/d(x) into ``x.grad`` for every x the node depends on.

        ``node`` must be a scalar (one element) unless ``grad`` (a Tensor or
        array of ``node``'s shape) gives the output gradient. Gradients add up
        across uses of a node within one call and across calls (set ``.grad``
        to None, or call ``zero_grad``, to start over).
        """
        if not isinstance(node, Node):
            raise TypeError(f"backward() takes a Node, got {type(node).__name__}")
        if not node.requires_grad:
            raise ValueError("node does not depend on any tensor with requires_grad=True recorded on a tape")
        if grad is None:
            if node.value.size != 1:
                raise ValueError(f"backward() without grad needs a one-element node, got shape {node.shape}; pass grad=")
            grad = Tensor.from_host(node.queue, np.ones(node.shape, np.float32))
        else:
            grad = grad if isinstance(grad, Tensor) else Tensor.from_host(node.queue, np.asarray(grad, np.float32))
            if grad.shape != node.shape or grad.dtype != np.float32:
                raise ValueError(f"grad must be float32 of the node's shape {node.shape}, got {grad.dtype} {grad.shape}")
        pending = {id(node): (node, grad)}
        for out in reversed(self.nodes):
            entry = pending.get(id(out))
            if entry is None:
                continue
            for parent, g in zip(out.parents, out.rule(entry[1])):
                if g is None or not parent.requires_grad:
                    continue
                have = pending.get(id(parent))
                pending[id(parent)] = (parent, g if have is None else ops.add(have[1], g))
        for n, g in pending.values():
            n.grad = g if n.grad is None else ops.add(n.grad, g)


def recording() -> bool:
    """True inside a ``with Tape():`` block."""
    return bool(_ACTIVE)


def zero_grad(nodes) -> None:
    """Forget accumulated gradients of ``nodes`` (an iterable, or a dict like ``module.parameters()``)."""
    for n in nodes.values() if isinstance(nodes, dict) else nodes:
        n.grad = None


def tensor(x, requires_grad: bool = True, queue=None) -> Node:
    """A leaf Node for a Tensor (used as is) or an array (uploaded as float32 to ``queue``)."""
    if isinstance(x, Node):
        x = x.value
    if not isinstance(x, Tensor):
        x = Tensor.from_host(queue or manager.default().queue, np.asarray(x, np.float32))
    return Node(x, requires_grad=requires_grad)


def constant(x, queue=None) -> Node:
    """A leaf that never receives a gradient."""
    return tensor(x, requires_grad=False, queue=queue)


# -- plumbing ------------------------------------------------------------------

def _nodes(*xs) -> list[Node]:
    """Inputs as Nodes: Tensors and arrays become constants on the first Node/Tensor's device."""
    queue = next((x.queue for x in xs if isinstance(x, (Node, Tensor))), None)
    return [x if isinstance(x, Node) else constant(x, queue) for x in xs]


def _record(value: Tensor, parents, rule, op: str) -> Node:
    """The op's output; recorded (with its rule) on every active tape when an input needs a gradient."""
    needs = bool(_ACTIVE) and any(p.requires_grad for p in parents)
    node = Node(value, needs, parents if needs else (), rule if needs else None, op)
    if needs:
        for tape in _ACTIVE:
            tape.nodes.append(node)
    return node


def _run(q, filename: str, name: str, global_size, local_size, *args, options=()) -> None:
    get_kernel(q.context, filename, name, options)(q, global_size, local_size, *args)


def _i(x) -> np.int32:
    return np.int32(x)


def _f(x) -> np.float32:
    return np.float32(x)


def _sum_to(t: Tensor, shape) -> Tensor:
    """Sum ``t`` over the leading axes it has beyond ``shape`` (a suffix of t.shape, or fully collapsed)."""
    shape = tuple(shape)
    if t.shape == shape:
        return t
    cols = int(np.prod(shape, dtype=np.int64))
    out = Tensor.empty(t.queue, shape)
    _run(t.queue, "shape_backward.cl", "sum_leading", (round_up(cols, 16),), (16,),
         t.buffer, out.buffer, _i(t.size // cols), _i(cols), _f(1.0))
    t.queue.finish()
    return out


# -- primitives: forward and backward side by side ----------------------------------

def matmul(a, b, *, transpose_a: bool = False, transpose_b: bool = False) -> Node:
    """``op(a) @ op(b)`` (see :func:`netcl_lite.ops.matmul`).

    Backward, with C = op(A) op(B): d op(A) = dC op(B)ᵀ and d op(B) = op(A)ᵀ dC,
    as matmuls with transposes; an unbatched operand sums over the batch.
    """
    a, b = _nodes(a, b)
    ta, tb = transpose_a, transpose_b
    out = ops.matmul(a.value, b.value, transpose_a=ta, transpose_b=tb)

    def backward(g):
        ga = gb = None
        if a.requires_grad:
            ga = (ops.matmul(b.value, g, transpose_a=tb, transpose_b=True) if ta
                  else ops.matmul(g, b.value, transpose_b=not tb))
            ga = _sum_to(ga, a.shape)
        if b.requires_grad:
            av, gg = a.value, g
            if len(b.shape) == 2 and len(a.shape) > 2 and not ta:   # x (..., K) @ W: fold the batch into rows
                av, gg = av.reshape(-1, a.shape[-1]), g.reshape(-1, g.shape[-1])
            gb = (ops.matmul(gg, av, transpose_a=True, transpose_b=ta) if tb
                  else ops.matmul(av, gg, transpose_a=not ta))
            gb = _sum_to(gb, b.shape)
        return ga, gb

    return _record(out, (a, b), backward, "matmul")


def add(a, b) -> Node:
    """``a + b`` with ``b`` of a's shape or a suffix of it; b's gradient sums over the broadcast axes."""
    a, b = _nodes(a, b)
    out = ops.add(a.value, b.value)
    return _record(out, (a, b), lambda g: (g, _sum_to(g, b.shape)), "add")


def mul(a, b) -> Node:
    """``a * b`` elementwise (b as in :func:`add`): da = g·b, db = Σ g·a over the broadcast axes."""
    a, b = _nodes(a, b)
    out = ops.mul(a.value, b.value)

    def backward(g):
        ga = ops.mul(g, b.value) if a.requires_grad else None
        gb = _sum_to(ops.mul(g, a.value), b.shape) if b.requires_grad else None
        return ga, gb

    return _record(out, (a, b), backward, "mul")


def _softmax_backward(p: Tensor, dp: Tensor, scale: float) -> Tensor:
    """scale · P ∘ (dP − rowsum(dP ∘ P)), rows over the last axis."""
    n = p.shape[-1]
    rows = p.size // max(n, 1)
    dx = Tensor.empty(p.queue, p.shape)
    _run(p.queue, "attention_backward.cl", "softmax_backward_rows", (round_up(rows, 16),), (16,),
         p.buffer, dp.buffer, dx.buffer, _i(rows), _i(n), _f(scale))
    p.queue.finish()
    return dx


def softmax(x, *, mask=None, causal: bool = False) -> Node:
    """Row softmax over the last axis (mask as in :func:`netcl_lite.ops.softmax`); dx = y ∘ (g − Σ g∘y)."""
    (x,) = _nodes(x)
    y = ops.softmax(x.value, mask=mask, causal=causal)
    return _record(y, (x,), lambda g: (_softmax_backward(y, g, 1.0),), "softmax")


def _grouped(t: Tensor, groups_first: int, rows: int) -> Tensor:
    """(..., H, T, w) viewed as (outer·G, (H/G)·T, w): the heads sharing one K/V group are adjacent."""
    return t.reshape(groups_first, rows, t.shape[-1])


def attention(q, k, v, *, mask=None, causal: bool = False, scale=None) -> Node:
    """Dense attention (:func:`netcl_lite.ops.attention`); the weights P are kept for the backward.

    q (..., H, Tq, d), k (..., G, Tk, d), v (..., G, Tk, dv) → (..., H, Tq, dv).
    Backward through the stored P: dV = Pᵀ dO, dP = dO Vᵀ, dS = scale · P ∘ (dP − rowsum),
    dQ = dS K, dK = dSᵀ Q. With the heads of a group viewed as one taller matrix,
    each is a single batched matmul and grouped-query sums come for free.
    """
    q, k, v = _nodes(q, k, v)
    lead, heads, groups, tq, tk, d, _ = attention_shapes(q.shape, k.shape, v.shape)
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    out, p = ops.attention(q.value, k.value, v.value, mask=mask, causal=causal, scale=scale, return_weights=True)
    nkv = int(np.prod(lead, dtype=np.int64)) // heads * groups
    rows = heads // groups * tq

    def backward(g):
        g3, p3 = _grouped(g, nkv, rows), _grouped(p, nkv, rows)
        q3, k3, v3 = _grouped(q.value, nkv, rows), _grouped(k.value, nkv, tk), _grouped(v.value, nkv, tk)
        dv_ = ops.matmul(p3, g3, transpose_a=True) if v.requires_grad else None
        ds = _softmax_backward(p3, ops.matmul(g3, v3, transpose_b=True), scale)
        dq = ops.matmul(ds, k3).reshape(q.shape) if q.requires_grad else None
        dk = ops.matmul(ds, q3, transpose_a=True).reshape(k.shape) if k.requires_grad else None
        return dq, dk, (dv_.reshape(v.shape) if dv_ is not None else None)

    return _record(out, (q, k, v), backward, "attention")


#: query rows (dq) and key rows (dK, dV) per work-item of the tiled flash backward kernels.
FLASH_BACKWARD_ROWS, FLASH_BACKWARD_KROWS = 2, 2  # measured best of 1, 2, 4 at d = 64


def flash_attention(q, k, v, *, mask=None, causal: bool = False, scale=None, block_size=None,
                    kernel: str = "auto") -> Node:
    """Streamed attention (:func:`netcl_lite.ops.flash_attention`): keeps only O and the row log-sum-exp.

    The backward never stores Tq × Tk either: it recomputes each score from q,
    k and the saved log-sum-exp, P_ij = exp(s_ij − lse_i) — one pass over keys
    per query row for dQ, one over queries per key row for dK and dV (S115's
    recomputation). ``kernel`` picks the kernels, forward and backward alike:
    ``"tiled"`` (8-wide panels; head widths multiples of 8), ``"rows"`` (one row
    per work-item, any width) or ``"auto"`` (tiled where it applies).
    """
    q, k, v = _nodes(q, k, v)
    lead, heads, groups, tq, tk, d, dv = attention_shapes(q.shape, k.shape, v.shape)
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    out, lse = ops.flash_attention(q.value, k.value, v.value, mask=mask, causal=causal, scale=scale,
                                   block_size=block_size, return_stats=True, kernel=kernel)
    n_batch = int(np.prod(lead, dtype=np.int64))
    n_kv = n_batch // heads * groups
    tiled = kernel == "tiled" or (kernel == "auto" and d % 8 == 0 and dv % 8 == 0)
    if tiled and (d % 8 or dv % 8):
        raise ValueError(f"the tiled flash backward needs d and dv multiples of 8, got d={d}, dv={dv}; use kernel='rows'")

    def backward(g):
        cq = g.queue
        mask_buf, use_mask, strides = device_mask(cq, mask, lead, tq, tk, causal)
        dq, delta = Tensor.empty(cq, q.shape), Tensor.empty(cq, (n_batch, tq))
        dk, dvv = Tensor.empty(cq, k.shape), Tensor.empty(cq, v.shape)
        masks = (mask_buf, _i(use_mask), *(_i(s) for s in strides), _i(causal))
        heads_args = (_i(heads), _i(groups))
        qb, kb, vb, ob, lb = q.value.buffer, k.value.buffer, v.value.buffer, out.buffer, lse.buffer
        if tiled:
            rows, krows = FLASH_BACKWARD_ROWS, FLASH_BACKWARD_KROWS
            opts = (f"-DHEAD_D={d}", f"-DHEAD_DV={dv}", f"-DROWS={rows}", f"-DKROWS={krows}")
            tqp, tkp = round_up(tq, 8), round_up(tk, 8)
            panels = []
            for x, n, t_len, t_pad, w in ((k.value, n_kv, tk, tkp, d), (v.value, n_kv, tk, tkp, dv),
                                          (q.value, n_batch, tq, tqp, d), (g, n_batch, tq, tqp, dv)):
                p = Tensor.empty(cq, (n, t_pad, w))
                _run(cq, "attention_backward.cl", "flash_backward_pack", (t_pad, n), (8, 1),
                     x.buffer, p.buffer, _i(t_len), _i(t_pad), _i(w), options=opts)
                panels.append(p.buffer)
            kp, vp, qp, gp = panels
            _run(cq, "attention_backward.cl", "flash_attention_backward_dq_tiled", (-(-tq // rows), n_batch), (1, 1),
                 qb, kb, kp, vp, ob, g.buffer, lb, dq.buffer, delta.buffer, *masks,
                 _i(tq), _i(tk), _i(tkp), *heads_args, _f(scale), options=opts)
            _run(cq, "attention_backward.cl", "flash_attention_backward_dkv_tiled", (-(-tk // krows), n_kv), (1, 1),
                 qb, g.buffer, qp, gp, kb, vb, lb, delta.buffer, dk.buffer, dvv.buffer, *masks,
                 _i(tq), _i(tk), _i(tqp), *heads_args, _f(scale), options=opts)
        else:
            opts = (f"-DMAX_D={1 << max(4, (max(d, dv) - 1).bit_length())}",)
            dims = (_i(tq), _i(tk), _i(d), _i(dv), *heads_args)
            _run(cq, "attention_backward.cl", "flash_attention_backward_dq", (round_up(tq, 8), n_batch), (8, 1),
                 qb, kb, vb, ob, g.buffer, lb, dq.buffer, delta.buffer, *masks, *dims, _i(n_batch), _f(scale),
                 options=opts)
            _run(cq, "attention_backward.cl", "flash_attention_backward_dkv", (round_up(tk, 8), n_kv), (8, 1),
                 qb, kb, vb, g.buffer, lb, delta.buffer, dk.buffer, dvv.buffer, *masks, *dims, _i(n_kv), _f(scale),
                 options=opts)
        cq.finish()  # the mask, delta and panels die with this frame
        return dq, dk, dvv

    return _record(out, (q, k, v), backward, "flash_attention")


_SIGNS: dict[tuple, Tensor] = {}


def _conjugation(queue, d: int, pairing: str) -> Tensor:
    """(d,) signs +1 on each pair's first coordinate, −1 on its second: C with C R(θ) C = R(−θ)."""
    key = (queue.context.int_ptr, d, pairing)
    if key not in _SIGNS:
        if pairing == "interleaved":      # pairs (x[2i], x[2i+1])
            signs = np.tile([1.0, -1.0], d // 2)
        elif pairing == "half":           # pairs (x[i], x[i + d/2])
            signs = np.repeat([1.0, -1.0], d // 2)
        else:
            raise ValueError(f"pairing must be 'interleaved' or 'half', got {pairing!r}")
        _SIGNS[key] = Tensor.from_host(queue, signs.astype(np.float32))
    return _SIGNS[key]


def rope(x, *, offset: int = 0, base: float = 10000.0, pairing: str = "interleaved") -> Node:
    """Rotary position embedding (:func:`netcl_lite.ops.rope`), x (..., T, d).

    Backward: the transpose of a rotation is the rotation by −θ, and
    R(−θ) = C R(θ) C with C flipping the sign of each pair's second coordinate,
    so the forward kernel serves the backward too (sign flips are exact).
    """
    (x,) = _nodes(x)
    out = ops.rope(x.value, offset=offset, base=base, pairing=pairing)

    def backward(g):
        c = _conjugation(g.queue, x.shape[-1], pairing)
        return (ops.mul(ops.rope(ops.mul(g, c), offset=offset, base=base, pairing=pairing), c),)

    return _record(out, (x,), backward, "rope")


def rms_norm(x, weight, *, eps: float = 1e-6) -> Node:
    """x / sqrt(mean(x²) + eps) · weight over the last axis; backward in norm_backward.cl."""
    x, w = _nodes(x, weight)
    out = ops.rms_norm(x.value, w.value, eps=eps)
    n = x.shape[-1]
    rows = x.value.size // n

    def backward(g):
        q = g.queue
        dx, rstd, dw = Tensor.empty(q, x.shape), Tensor.empty(q, (rows,)), Tensor.empty(q, (n,))
        _run(q, "norm_backward.cl", "rms_norm_backward_rows", (round_up(rows, 16),), (16,),
             x.value.buffer, w.value.buffer, g.buffer, dx.buffer, rstd.buffer, _i(rows), _i(n), _f(eps))
        _run(q, "norm_backward.cl", "rms_norm_backward_weight", (round_up(n, 16),), (16,),
             x.value.buffer, g.buffer, rstd.buffer, dw.buffer, _i(rows), _i(n))
        q.finish()
        return dx, dw

    return _record(out, (x, w), backward, "rms_norm")


def layer_norm(x, weight, bias, *, eps: float = 1e-5) -> Node:
    """(x − mean) / sqrt(var + eps) · weight + bias over the last axis; backward in norm_backward.cl."""
    x, w, b = _nodes(x, weight, bias)
    out = ops.layer_norm(x.value, w.value, b.value, eps=eps)
    n = x.shape[-1]
    rows = x.value.size // n

    def backward(g):
        q = g.queue
        dx, dw, db = Tensor.empty(q, x.shape), Tensor.empty(q, (n,)), Tensor.empty(q, (n,))
        mean, rstd = Tensor.empty(q, (rows,)), Tensor.empty(q, (rows,))
        _run(q, "norm_backward.cl", "layer_norm_backward_rows", (round_up(rows, 16),), (16,),
             x.value.buffer, w.value.buffer, g.buffer, dx.buffer, mean.buffer, rstd.buffer,
             _i(rows), _i(n), _f(eps))
        _run(q, "norm_backward.cl", "layer_norm_backward_params", (round_up(n, 16),), (16,),
             x.value.buffer, g.buffer, mean.buffer, rstd.buffer, dw.buffer, db.buffer, _i(rows), _i(n))
        q.finish()
        return dx, dw, db

    return _record(out, (x, w, b), backward, "layer_norm")


def silu(x) -> Node:
    """x · sigmoid(x); dx = g · s (1 + x (1 − s))."""
    (x,) = _nodes(x)
    out = ops.silu(x.value)

    def backward(g):
        dx = Tensor.empty(g.queue, x.shape)
        _run(g.queue, "activation_backward.cl", "silu_backward", (round_up(x.value.size, 64),), (64,),
             x.value.buffer, g.buffer, dx.buffer, _i(x.value.size))
        g.queue.finish()
        return (dx,)

    return _record(out, (x,), backward, "silu")


def swiglu(gate, up) -> Node:
    """silu(gate) · up (same shapes); both gradients in one kernel pass."""
    gate, up = _nodes(gate, up)
    out = ops.swiglu(gate.value, up.value)

    def backward(g):
        q, n = g.queue, gate.value.size
        dgate, dup = Tensor.empty(q, gate.shape), Tensor.empty(q, up.shape)
        _run(q, "activation_backward.cl", "swiglu_backward", (round_up(n, 64),), (64,),
             gate.value.buffer, up.value.buffer, g.buffer, dgate.buffer, dup.buffer, _i(n))
        q.finish()
        return dgate, dup

    return _record(out, (gate, up), backward, "swiglu")


def _host_ids(ids) -> np.ndarray:
    return (ids.to_host() if isinstance(ids, Tensor) else np.asarray(ids)).reshape(-1)


def embedding(table, ids) -> Node:
    """Rows of ``table`` (V, D) at integer ``ids`` (any shape) → (*ids.shape, D).

    Backward: a table-shaped gradient where each row sums the gradients of
    every position that looked it up (repeated ids accumulate): positions are
    sorted by id on the host, then one work-item per (id, column) sums its run.
    """
    (table,) = _nodes(table)
    out = ops.embedding(table.value, ids)
    flat = _host_ids(ids)

    def backward(g):
        q = g.queue
        vocab, dim = table.shape
        order = np.argsort(flat, kind="stable").astype(np.int32)
        rows, starts = np.unique(flat[order], return_index=True)
        starts = np.append(starts, flat.size).astype(np.int32)
        dtable = Tensor.zeros(q, (vocab, dim))
        bufs = [Tensor.from_host(q, a, dtype=np.int32) for a in (order, starts, rows.astype(np.int32))]
        _run(q, "embedding_backward.cl", "embedding_backward_sorted", (round_up(dim, 16), rows.size), (16, 1),
             g.buffer, *(b.buffer for b in bufs), dtable.buffer, _i(rows.size), _i(dim))
        q.finish()
        return (dtable,)

    return _record(out, (table,), backward, "embedding")


def cross_entropy(logits, targets) -> Node:
    """Mean softmax cross-entropy: logits (..., V), integer targets (...) → a scalar node (shape ()).

    loss = mean over rows of (logsumexp(z) − z[target]); dz = (softmax(z) − onehot) · g / rows.
    """
    (z,) = _nodes(logits)
    vocab = z.shape[-1] if z.shape else 0
    t = _host_ids(targets)
    rows = z.value.size // max(vocab, 1)
    if vocab == 0 or t.size != rows:
        raise ValueError(f"targets must hold one class id per row of logits {z.shape}, got {t.size} ids")
    if t.dtype.kind not in "iu" or t.min() < 0 or t.max() >= vocab:
        raise ValueError(f"targets must be integer class ids in [0, {vocab}), got {t.dtype} in [{t.min()}, {t.max()}]")
    q = z.queue
    tgt = Tensor.from_host(q, t.astype(np.int32), dtype=np.int32)
    losses, lse, loss = Tensor.empty(q, (rows,)), Tensor.empty(q, (rows,)), Tensor.empty(q, ())
    _run(q, "loss_backward.cl", "cross_entropy_rows", (round_up(rows, 16),), (16,),
         z.value.buffer, tgt.buffer, losses.buffer, lse.buffer, _i(rows), _i(vocab))
    _run(q, "shape_backward.cl", "sum_leading", (16,), (16,), losses.buffer, loss.buffer, _i(rows), _i(1), _f(1 / rows))
    q.finish()

    def backward(g):
        dz = Tensor.empty(q, z.shape)
        _run(q, "loss_backward.cl", "cross_entropy_backward", (round_up(rows, 16),), (16,),
             z.value.buffer, tgt.buffer, lse.buffer, g.buffer, dz.buffer, _i(rows), _i(vocab), _f(1 / rows))
        q.finish()
        return (dz,)

    return _record(loss, (z,), backward, "cross_entropy")


def _total(x, alpha: float, op: str) -> Node:
    """alpha · (sum of every element) as a scalar node; backward broadcasts alpha · g."""
    (x,) = _nodes(x)
    q, n = x.queue, x.value.size
    out = Tensor.empty(q, ())
    _run(q, "shape_backward.cl", "sum_leading", (16,), (16,), x.value.buffer, out.buffer, _i(n), _i(1), _f(alpha))
    q.finish()

    def backward(g):
        dx = Tensor.empty(q, x.shape)
        _run(q, "shape_backward.cl", "fill_from_scalar", (round_up(n, 64),), (64,), g.buffer, dx.buffer, _i(n), _f(alpha))
        q.finish()
        return (dx,)

    return _record(out, (x,), backward, op)


def sum(x) -> Node:
    """Σ of every element → a scalar node."""
    return _total(x, 1.0, "sum")


def mean(x) -> Node:
    """Mean of every element → a scalar node."""
    (x,) = _nodes(x)
    return _total(x, 1.0 / max(x.value.size, 1), "mean")


def reshape(x, shape) -> Node:
    """The same elements in a new shape (a view); the gradient is reshaped back."""
    (x,) = _nodes(x)
    out = x.value.reshape(shape)
    return _record(out, (x,), lambda g: (g.reshape(x.shape),), "reshape")


def swap_axes(x, axis1: int, axis2: int) -> Node:
    """Exchange two axes (a copy into the new layout); its own backward."""
    (x,) = _nodes(x)
    nd = len(x.shape)
    i, j = sorted(a % nd for a in (axis1, axis2)) if nd else (0, 0)
    if i == j:
        return x
    out = _swap(x.value, i, j)
    return _record(out, (x,), lambda g: (_swap(g, i, j),), "swap_axes")


def _swap(t: Tensor, i: int, j: int) -> Tensor:
    s = t.shape
    blocks = [int(np.prod(s[:i], dtype=np.int64)), s[i], int(np.prod(s[i + 1:j], dtype=np.int64)), s[j],
              int(np.prod(s[j + 1:], dtype=np.int64))]
    new = s[:i] + (s[j],) + s[i + 1:j] + (s[i],) + s[j + 1:]
    out = Tensor.empty(t.queue, new)
    runs = t.size // max(blocks[4], 1)
    _run(t.queue, "shape_backward.cl", "swap_axes", (round_up(runs, 16),), (16,),
         t.buffer, out.buffer, *(_i(b) for b in blocks[1:]), _i(runs))
    t.queue.finish()
    return out


# -- derived ops: compositions of the primitives above (no rules of their own) ------------

def linear(x, weight) -> Node:
    """x (..., n) @ weight (n, m) → (..., m), as one 2-D matmul over the flattened rows."""
    (x,) = _nodes(x)
    n, m = weight.shape
    return reshape(matmul(reshape(x, (-1, n)), weight), x.shape[:-1] + (m,))


def split_heads(x, heads: int) -> Node:
    """(B, T, heads·d) → (B, heads, T, d)."""
    (x,) = _nodes(x)
    b, t, width = x.shape
    return swap_axes(reshape(x, (b, t, heads, width // heads)), 1, 2)


def merge_heads(x) -> Node:
    """(B, heads, T, d) → (B, T, heads·d): the inverse of :func:`split_heads`."""
    (x,) = _nodes(x)
    b, h, t, d = x.shape
    return reshape(swap_axes(x, 1, 2), (b, t, h * d))
