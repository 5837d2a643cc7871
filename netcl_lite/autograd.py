"""Reverse-mode autograd over device tensors, in micrograd's shape.

A :class:`Tape` records every differentiable op run inside ``with Tape():``.
Each op below computes its output with a forward op from :mod:`netcl_lite.ops`
and records, beside it, a one-line rule mapping the output's gradient to its
inputs' gradients; the launchers behind the rules live in the op's own module
(``ops/<op>.py`` owns its forward and its backward). ``loss.backward()`` replays
the record in reverse (the order ops ran in is already a topological order),
accumulates into each leaf's ``.grad`` and then releases the record, so the
activations it kept can be freed.

    >>> import numpy as np
    >>> import netcl_lite as nl
    >>> with nl.Tape():
    ...     w = nl.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    ...     loss = (w * w).sum()
    >>> loss.backward()
    >>> w.grad.numpy()
    array([[2., 4.],
           [6., 8.]], dtype=float32)

Subtle: with no tape active (or no input requiring gradients) an op records
nothing and keeps nothing alive: that is inference. Nested tapes all record the
ops run inside them, so an outer tape's ``backward`` also sees inner ops, while
an inner tape's treats values made before it as constants.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from . import ops
from .core.device import manager
from .core.stream import BadInputError, NonFiniteError, stream_of
from .core.tensor import Tensor

_THREAD = threading.local()   # each thread's tapes whose `with` block is running, innermost last


def _active() -> list[Tape]:
    """This thread's open tapes, innermost last: a tape records the ops of the thread that opened it,
    so a training loop in one thread and inference (the compressor's coder, say) in another do not
    see each other's tapes."""
    tapes = getattr(_THREAD, "tapes", None)
    if tapes is None:
        tapes = _THREAD.tapes = []
    return tapes
#: let rules that can (matmul, linear, rms_norm) add a parent's gradient gathered so far as they
#: form their own share, instead of a separate add per extra use of a value (False: always add)
FUSED_ACCUMULATION = True


class Node:
    """A device value on the tape: ``value`` (a float32 :class:`Tensor`) and ``grad`` (a Tensor or None).

    Arithmetic builds more nodes: ``a + b``, ``a - b``, ``a * b``, ``a / b`` (``b`` of
    ``a``'s shape or a suffix of it, or a number), ``a @ b``, ``-a``, ``a.T`` (the last
    two axes swapped), ``a.reshape(...)``, ``a.sum()``, ``a.mean()``.
    """

    __slots__ = ("grad", "op", "parents", "requires_grad", "rule", "tape", "value")
    __array_priority__ = 1000    # `ndarray * node` calls Node.__rmul__, not NumPy's loop

    def __init__(self, value: Tensor, requires_grad: bool = False, parents=(), rule=None, op: str = "leaf"):
        if not isinstance(value, Tensor):
            raise TypeError(f"a Node holds a Tensor, got {type(value).__name__}")
        if requires_grad and value.dtype != np.float32:
            raise TypeError(f"only float32 tensors can require gradients, got {value.dtype}")
        self.value, self.grad, self.requires_grad = value, None, bool(requires_grad)
        self.parents, self.rule, self.op, self.tape = tuple(parents), rule, op, None

    shape = property(lambda self: self.value.shape)
    dtype = property(lambda self: self.value.dtype)
    queue = property(lambda self: self.value.queue)
    ndim = property(lambda self: self.value.ndim)
    size = property(lambda self: self.value.size)

    def numpy(self) -> np.ndarray:
        """The value copied to the host (waits for the queue; raises what its kernels reported)."""
        return self.value.numpy()

    def __array__(self, dtype=None, copy=None):
        host = self.numpy()
        return host if dtype is None else host.astype(dtype)

    def backward(self, grad=None, *, retain_graph: bool = False) -> None:
        """``tape.backward(self, grad)`` on the (innermost) tape that recorded this node."""
        if self.tape is None:
            raise ValueError(f"{self!r} was not recorded on a Tape: run the ops inside `with nl.Tape():` "
                             "with an input that requires gradients")
        self.tape.backward(self, grad, retain_graph=retain_graph)

    def reshape(self, *shape) -> Node:
        return reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)

    def swap_axes(self, axis1: int, axis2: int) -> Node:
        return swap_axes(self, axis1, axis2)

    @property
    def T(self) -> Node:  # noqa: N802 (NumPy's name)
        """The last two axes swapped (a matrix transpose, batched)."""
        return self if self.ndim < 2 else swap_axes(self, -2, -1)

    def sum(self, axis=None) -> Node:
        return sum(self, axis=axis)

    def mean(self, axis=None) -> Node:
        return mean(self, axis=axis)

    def exp(self) -> Node:
        return exp(self)

    __add__ = __radd__ = lambda self, other: add(self, other)
    __sub__ = lambda self, other: sub(self, other)
    __rsub__ = lambda self, other: add(neg(self), other)
    __mul__ = __rmul__ = lambda self, other: mul(self, other)
    __truediv__ = lambda self, other: div(self, other)
    __matmul__ = lambda self, other: matmul(self, other)
    __rmatmul__ = lambda self, other: matmul(other, self)
    __neg__ = lambda self: neg(self)

    def __rtruediv__(self, other):
        (me,) = as_nodes(self)
        return div(constant(np.broadcast_to(np.float32(other), me.shape), me.queue), me)

    def __repr__(self) -> str:
        return f"Node({self.op}, shape={self.shape}, requires_grad={self.requires_grad})"


class Tape:
    """Records ops run inside ``with Tape() as tape:``; ``tape.backward(node)`` fills ``.grad``."""

    def __init__(self):
        self.nodes: list[Node] = []  # outputs of recorded ops, in the order they ran
        self.released = False

    def __enter__(self):
        _active().append(self)
        return self

    def __exit__(self, *exc) -> None:
        _active().remove(self)

    def backward(self, node: Node, grad=None, *, retain_graph: bool = False) -> None:
        """Accumulate d(node)/d(x) into ``x.grad`` for every x the node depends on.

        ``node`` must be a scalar (one element) unless ``grad`` (a Tensor or
        array of ``node``'s shape) gives the output gradient. Gradients add up
        across uses of a node within one call and across calls (set ``.grad``
        to None, or call ``zero_grad``, to start over). The forward's errors
        (inf/NaN, ids out of range) surface here, naming their op. Afterwards the
        record is released (the activations its rules kept can be freed) unless
        ``retain_graph=True`` keeps it for another backward.
        """
        if not isinstance(node, Node):
            raise TypeError(f"backward() takes a Node, got {type(node).__name__}")
        if self.released:
            raise ValueError("this tape's record was released by an earlier backward(); "
                             "run the forward again under a new Tape")
        if not node.requires_grad:
            raise ValueError("node does not depend on any tensor with requires_grad=True recorded on a tape")
        stream = stream_of(node.queue)
        forward_done = stream.mark()                # the forward's errors, checked below without a drain
        if grad is None:
            if node.value.size != 1:
                raise ValueError(f"backward() without grad needs a one-element node, got shape {node.shape}; pass grad=")
            grad = Tensor.from_host(node.queue, np.ones(node.shape, np.float32))
        else:
            grad = grad if isinstance(grad, Tensor) else Tensor.from_host(node.queue, np.asarray(grad, np.float32))
            if grad.shape != node.shape or grad.dtype != np.float32:
                raise ValueError(f"grad must be float32 of the node's shape {node.shape}, got {grad.dtype} {grad.shape}")
        pending = {id(node): (node, grad)}
        kept = set()            # leaves whose .grad from an earlier backward a rule's sum already holds
        for out in reversed(self.nodes):
            entry = pending.pop(id(out), None)
            if entry is not None:
                if out.rule is None:
                    raise ValueError(f"{out!r} was released by another tape's backward(); run the forward again")
                parents = out.parents
                if (FUSED_ACCUMULATION and getattr(out.rule, "accumulates", False)
                        and len({id(p) for p in parents}) == len(parents)):
                    # the rule adds each parent's gradient gathered so far as it forms its own share
                    # (a matmul's epilogue, the norm's row pass), and returns the sums
                    earlier = [id(p) not in pending and _earlier_grad(p) is not None for p in parents]
                    acc = [p.grad if e else pending[id(p)][1] if id(p) in pending else None
                           for p, e in zip(parents, earlier)]
                    for parent, g, e in zip(parents, out.rule(entry[1], acc), earlier):
                        if g is not None and parent.requires_grad:
                            pending[id(parent)] = (parent, g)
                            if e:
                                kept.add(id(parent))
                else:
                    for parent, g in zip(parents, out.rule(entry[1])):
                        if g is None or not parent.requires_grad:
                            continue
                        have = pending.get(id(parent))
                        pending[id(parent)] = (parent, g if have is None else ops.add(have[1], g))
            if not retain_graph:
                out.rule, out.parents = None, ()    # release what the rule kept (activations, masks)
        try:
            # The rules' kernels are queued behind the forward's (they are memory-safe on bad
            # input: embedding_backward skips ids out of range). Raise before any .grad changes.
            stream.check(forward_done)
        except (NonFiniteError, BadInputError):
            if not retain_graph:
                self.nodes.clear()
                self.released = True
            raise
        for n, g in pending.values():               # leaves, and values recorded before this tape
            n.grad = g if n.grad is None or id(n) in kept else ops.add(n.grad, g)
        if not retain_graph:
            self.nodes.clear()
            self.released = True


def recording() -> bool:
    """True inside a ``with Tape():`` block."""
    return bool(_active())


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

def as_nodes(*xs) -> list[Node]:
    """The inputs as Nodes, in order: Nodes pass through, anything else becomes a constant.

    Tensors, arrays and numbers become constants (no gradient) on the device of the
    first Node or Tensor among ``xs``, or the default device when there is none. Layers
    call it so they accept what the ops accept.
    """
    queue = next((x.queue for x in xs if isinstance(x, (Node, Tensor))), None)
    return [x if isinstance(x, Node) else constant(x, queue) for x in xs]


def _record(value: Tensor, parents, rule, op: str) -> Node:
    """The op's output; recorded (with its rule) on every active tape when an input needs a gradient."""
    needs = bool(_active()) and any(p.requires_grad for p in parents)
    node = Node(value, needs, parents if needs else (), rule if needs else None, op)
    if needs:
        for tape in _active():
            tape.nodes.append(node)
        node.tape = _active()[-1]
    return node


def _needs(*nodes: Node) -> tuple[bool, ...]:
    return tuple(n.requires_grad for n in nodes)


def _earlier_grad(node: Node):
    """A leaf's gradient from an earlier backward (gradients add up across calls), for a rule
    that can add it as it forms its share; None for a node this tape still computes."""
    return node.grad if node.rule is None and node.requires_grad else None


def _accumulating(rule):
    """Mark ``rule(g, acc)`` as one that takes each parent's gradient gathered so far (``acc``,
    None where there is none) and returns gradients that include it: :meth:`Tape.backward`
    then adds no separate pass. ``acc`` must only be read (it may be another node's gradient),
    and ``rule(g)`` alone must give the plain gradients."""
    rule.accumulates = True
    return rule


# -- primitives: each forward beside its one-line rule ------------------------------------

def matmul(a, b, *, transpose_a: bool = False, transpose_b: bool = False) -> Node:
    """``op(a) @ op(b)`` (see :func:`netcl_lite.ops.matmul`)."""
    a, b = as_nodes(a, b)
    out = ops.matmul(a.value, b.value, transpose_a=transpose_a, transpose_b=transpose_b)
    return _record(out, (a, b), _accumulating(lambda g, acc=(None, None): ops.matmul_backward(
        g, a.value, b.value, transpose_a, transpose_b, _needs(a, b), acc)), "matmul")


def linear(x, weight, residual=None) -> Node:
    """x (..., n) @ weight (n, m) → (..., m), as one 2-D matmul over the flattened rows; with
    ``residual`` (of the output's shape), ``residual + x @ weight``, the sum formed as the product
    is stored. One node with x itself as parent, so that layers reading one x (W1 and W3) add
    their shares of x's gradient in their products' epilogues."""
    x, w = as_nodes(x, weight)
    if w.ndim != 2:
        raise ValueError(f"weight must be 2-D (n, m), got shape {w.shape}")
    n, m = w.shape
    if not x.ndim or x.shape[-1] != n:
        raise ValueError(f"x's last axis must be weight's n={n}, got x of shape {x.shape}")
    rows, shape = x.value.reshape((-1, n)), x.shape[:-1] + (m,)
    if residual is None:
        parents, out = (x, w), ops.matmul(rows, w.value)
    else:
        (residual,) = as_nodes(residual)
        if residual.shape != shape:
            raise ValueError(f"residual must have the output's shape {shape}, got {residual.shape}")
        parents, out = (x, w, residual), ops.matmul_add(rows, w.value, residual.value.reshape((-1, m)))

    def rule(g, acc=(None, None, None)):
        dx, dw = ops.matmul_backward(g.reshape((-1, m)), rows, w.value, needs=_needs(x, w),
                                     acc=(None if acc[0] is None else acc[0].reshape((-1, n)), acc[1]))
        grads = ((None if dx is None else dx.reshape(x.shape)), dw)
        return grads if residual is None else grads + (g if acc[2] is None else ops.add(acc[2], g),)
    return _record(out.reshape(shape), parents, _accumulating(rule), "linear")


def _binary(name: str, forward, a, b) -> Node:
    a, b = as_nodes(a, b)
    out = forward(a.value, b.value)
    return _record(out, (a, b), lambda g: ops.binary_backward(name, g, a.value, b.value, out, _needs(a, b)), name)


def add(a, b) -> Node:
    """``a + b`` with ``b`` of a's shape or a suffix of it; b's gradient sums over the broadcast axes."""
    return _binary("add", ops.add, a, b)


def sub(a, b) -> Node:
    """``a - b`` (b as in :func:`add`)."""
    return _binary("sub", ops.sub, a, b)


def mul(a, b) -> Node:
    """``a * b`` elementwise (b as in :func:`add`)."""
    return _binary("mul", ops.mul, a, b)


def div(a, b) -> Node:
    """``a / b`` elementwise (b as in :func:`add`)."""
    return _binary("div", ops.div, a, b)


def neg(x) -> Node:
    """``-x``."""
    (x,) = as_nodes(x)
    return _record(ops.scale(x.value, -1.0), (x,), lambda g: (ops.scale(g, -1.0),), "neg")


def exp(x) -> Node:
    """``e**x``; d/dx = the output itself."""
    (x,) = as_nodes(x)
    out = ops.exp(x.value)
    return _record(out, (x,), lambda g: (ops.mul(g, out),), "exp")


def softmax(x, *, mask=None, causal: bool = False) -> Node:
    """Row softmax over the last axis (mask as in :func:`netcl_lite.ops.softmax`)."""
    (x,) = as_nodes(x)
    y, _ = ops.softmax_with_mask(x.value, mask=mask, causal=causal)
    return _record(y, (x,), lambda g: (ops.softmax_backward(y, g),), "softmax")


def attention(q, k, v, *, mask=None, causal: bool = False, scale=None, kv_length=None) -> Node:
    """Dense attention (:func:`netcl_lite.ops.attention`); the weights P are kept for the backward."""
    q, k, v = as_nodes(q, k, v)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    out, p, _ = ops.attention_with_mask(q.value, k.value, v.value, mask=mask, causal=causal, scale=scale,
                                        kv_length=kv_length)
    return _record(out, (q, k, v), lambda g: ops.attention_backward(g, q.value, k.value, v.value, p, scale,
                                                                    _needs(q, k, v)), "attention")


def flash_attention(q, k, v, *, mask=None, causal: bool = False, scale=None, block_size=None,
                    kernel: str = "auto", kv_length=None) -> Node:
    """Streamed attention (:func:`netcl_lite.ops.flash_attention`): keeps only O and the row log-sum-exp;
    the backward recomputes the weights (``kernel`` picks the kernels, forward and backward alike)."""
    q, k, v = as_nodes(q, k, v)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    if kv_length is None:
        ops.backward_uses_tiles(kernel, q.shape[-1], v.shape[-1])   # refuse a backward it cannot run, now
    elif _active() and any(n.requires_grad for n in (q, k, v)):
        raise ValueError("kv_length (attention over a cache's prefix) is inference only: call it outside a Tape")
    out, lse, m = ops.flash_attention_with_mask(q.value, k.value, v.value, mask=mask, causal=causal, scale=scale,
                                                block_size=block_size, kernel=kernel, kv_length=kv_length)
    return _record(out, (q, k, v), lambda g: ops.flash_attention_backward(g, q.value, k.value, v.value, out, lse, m,
                                                                          scale, kernel), "flash_attention")


def rotary_attention(q, k, v, heads: int, kv_heads: int, *, causal: bool = True, rope: bool = True,
                     base: float = 10000.0, pairing: str = "half", scale=None) -> Node:
    """Self-attention straight from the projections (:func:`netcl_lite.ops.rotary_attention`):
    q (B, T, heads·d), k (B, T, kv_heads·d), v (B, T, kv_heads·dv) → (B, T, heads·dv), RoPE
    applied inside; the backward recomputes the weights from the saved log-sum-exp."""
    q, k, v = as_nodes(q, k, v)
    kw = dict(causal=causal, rope=rope, base=base, pairing=pairing, scale=scale)
    out, lse = ops.rotary_attention(q.value, k.value, v.value, heads, kv_heads, return_stats=True, **kw)
    widths = (q.shape[-1], k.shape[-1], v.shape[-1])
    return _record(out, (q, k, v), lambda g: ops.split_columns(ops.rotary_attention_backward(
        g, q.value, k.value, v.value, out, lse, heads, kv_heads, **kw), widths), "rotary_attention")


def rotary_attention_projected(x, wq, wk, wv, heads: int, kv_heads: int, *, causal: bool = True,
                               rope: bool = True, base: float = 10000.0, pairing: str = "half", scale=None) -> Node:
    """:func:`rotary_attention` of the projections ``x @ wq``, ``x @ wk``, ``x @ wv`` as one node:
    x (B, T, n), the weights (n, ·). The forward joins the weights into ``[wq | wk | wv]`` (one
    launch) and forms the three projections as one product, which the attention reads as column
    blocks (:func:`netcl_lite.ops.rotary_attention_qkv`). The backward takes the attention's
    gradient as one ``[dq | dk | dv]`` and so forms x's gradient as one product with the same joined
    weights instead of three, and K's and V's weight gradients as one product, cut in two; each
    weight gradient reads its block of ``[dq | dk | dv]`` in place (:func:`netcl_lite.ops.matmul.matmul_columns`)."""
    x, wq, wk, wv = as_nodes(x, wq, wk, wv)
    if x.ndim != 3:
        raise ValueError(f"x must be (B, T, n), got shape {x.shape}")
    n = x.shape[-1]
    for name, w in (("wq", wq), ("wk", wk), ("wv", wv)):
        if w.ndim != 2 or w.shape[0] != n:
            raise ValueError(f"{name} must be 2-D with x's last axis n={n} rows, got shape {w.shape}")
    rows = x.value.reshape((-1, n))
    widths = (wq.shape[1], wk.shape[1], wv.shape[1])
    starts = (0, widths[0], widths[0] + widths[1])     # the blocks of [q | k | v] and [dq | dk | dv]
    joined = ops.concat_columns([wq.value, wk.value, wv.value])
    qkv = ops.matmul(rows, joined).reshape(x.shape[:2] + (starts[2] + widths[2],))
    kw = dict(causal=causal, rope=rope, base=base, pairing=pairing, scale=scale)
    out, lse = ops.rotary_attention_qkv(qkv, widths, heads, kv_heads, return_stats=True, **kw)

    def rule(g, acc=(None, None, None, None)):
        d = ops.rotary_attention_qkv_backward(g, qkv, widths, out, lse, heads, kv_heads, **kw)
        d = d.reshape((-1, d.shape[-1]))
        dx = dwq = dwk = dwv = None
        if x.requires_grad:
            dx = (ops.matmul(d, joined, transpose_b=True) if acc[0] is None else
                  ops.matmul_add(d, joined, acc[0].reshape((-1, n)), transpose_b=True)).reshape(x.shape)
        if wq.requires_grad:
            dwq = ops.matmul_columns(rows, d, 0, widths[0], acc[1])
        if wk.requires_grad and wv.requires_grad:
            dwk, dwv = ops.split_columns(ops.matmul_columns(rows, d, widths[0], widths[1] + widths[2]), widths[1:])
            dwk = dwk if acc[2] is None else ops.add(dwk, acc[2])
            dwv = dwv if acc[3] is None else ops.add(dwv, acc[3])
        else:
            for i, w in ((2, wk), (3, wv)):
                if w.requires_grad:
                    got = ops.matmul_columns(rows, d, starts[i - 1], widths[i - 1], acc[i])
                    dwk, dwv = (got, dwv) if i == 2 else (dwk, got)
        return dx, dwq, dwk, dwv
    return _record(out, (x, wq, wk, wv), _accumulating(rule), "rotary_attention")


def rope(x, *, offset: int = 0, base: float = 10000.0, pairing: str = "interleaved") -> Node:
    """Rotary position embedding (:func:`netcl_lite.ops.rope`); the backward rotates by −θ."""
    (x,) = as_nodes(x)
    out = ops.rope(x.value, offset=offset, base=base, pairing=pairing)
    return _record(out, (x,), lambda g: (ops.rope_backward(g, offset=offset, base=base, pairing=pairing),), "rope")


def rope_heads(x, heads: int, *, offset: int = 0, base: float = 10000.0, pairing: str = "interleaved") -> Node:
    """(B, T, heads·d) → (B, heads, T, d), each head rotated (:func:`netcl_lite.ops.rope_heads`):
    :func:`split_heads` then :func:`rope` in one pass; the backward rotates by −θ and merges back."""
    (x,) = as_nodes(x)
    out = ops.rope_heads(x.value, heads, offset=offset, base=base, pairing=pairing)
    return _record(out, (x,), lambda g: (ops.rope_heads_backward(g, offset=offset, base=base, pairing=pairing),),
                   "rope_heads")


def rms_norm(x, weight, *, eps: float = 1e-6) -> Node:
    """x / sqrt(mean(x²) + eps) · weight over the last axis."""
    x, w = as_nodes(x, weight)
    out = ops.rms_norm(x.value, w.value, eps=eps)

    def rule(g, acc=(None, None)):
        dx, dw = ops.rms_norm_backward(g, x.value, w.value, eps=eps, acc=acc[0])
        return dx, dw if acc[1] is None else ops.add(acc[1], dw)
    return _record(out, (x, w), _accumulating(rule), "rms_norm")


def layer_norm(x, weight, bias, *, eps: float = 1e-5) -> Node:
    """(x − mean) / sqrt(var + eps) · weight + bias over the last axis."""
    x, w, b = as_nodes(x, weight, bias)
    out = ops.layer_norm(x.value, w.value, b.value, eps=eps)
    return _record(out, (x, w, b), lambda g: ops.layer_norm_backward(g, x.value, w.value, eps=eps), "layer_norm")


def silu(x) -> Node:
    """x · sigmoid(x)."""
    (x,) = as_nodes(x)
    return _record(ops.silu(x.value), (x,), lambda g: (ops.silu_backward(x.value, g),), "silu")


def swiglu(gate, up) -> Node:
    """silu(gate) · up (same shapes); both gradients in one kernel pass."""
    gate, up = as_nodes(gate, up)
    out = ops.swiglu(gate.value, up.value)
    return _record(out, (gate, up), lambda g: ops.swiglu_backward(gate.value, up.value, g), "swiglu")


def swiglu_linear(x, w1, w3) -> Node:
    """``swiglu(x @ w1, x @ w3)`` as one node (:func:`netcl_lite.ops.swiglu_linear`: one launch for the
    two products and the unit): x (..., n), w1 and w3 (n, m). The backward: SwiGLU's gradients and x's
    gradient ``dgate W1ᵀ + dup W3ᵀ`` as one sum (:func:`netcl_lite.ops.swiglu_input_grad`, one launch
    where it can), and each weight's gradient as the linear node's. The forward and the weights'
    gradients have the bits of the three nodes apart; x's gradient is summed over both products at
    once instead of added from two."""
    x, w1, w3 = as_nodes(x, w1, w3)
    for name, w in (("w1", w1), ("w3", w3)):
        if w.ndim != 2:
            raise ValueError(f"{name} must be 2-D (n, m), got shape {w.shape}")
    n, m = w1.shape
    if not x.ndim or x.shape[-1] != n:
        raise ValueError(f"x's last axis must be w1's n={n}, got x of shape {x.shape}")
    if w3.shape != w1.shape:
        raise ValueError(f"w3 must have w1's shape {w1.shape}, got {w3.shape}")
    rows, shape = x.value.reshape((-1, n)), x.shape[:-1] + (m,)
    out, gate, up = ops.swiglu_linear(rows, w1.value, w3.value)

    def rule(g, acc=(None, None, None)):
        dx = None
        if x.requires_grad:                # SwiGLU's gradients, then dgate W1ᵀ + dup W3ᵀ (+ x's so far) as one sum
            dx, dgate, dup = ops.swiglu_input_grad(gate, up, g.reshape((-1, m)), w1.value, w3.value,
                                                   d=None if acc[0] is None else acc[0].reshape((-1, n)))
            dx = dx.reshape(x.shape)
        else:
            dgate, dup = ops.swiglu_backward(gate, up, g.reshape((-1, m)))
        _, dw3 = ops.matmul_backward(dup, rows, w3.value, needs=(False, w3.requires_grad), acc=(None, acc[2]))
        _, dw1 = ops.matmul_backward(dgate, rows, w1.value, needs=(False, w1.requires_grad), acc=(None, acc[1]))
        return dx, dw1, dw3
    return _record(out.reshape(shape), (x, w1, w3), _accumulating(rule), "swiglu_linear")


def embedding(table, ids) -> Node:
    """Rows of ``table`` (V, D) at integer ``ids`` (any shape) → (*ids.shape, D); the ids go to
    the device once, for the forward and the backward."""
    (table,) = as_nodes(table)
    vocab = table.shape[0] if table.ndim == 2 else 0
    ids_t = ops.embedding_ids(ids, vocab, table.queue) if table.ndim == 2 else ids
    out = ops.embedding(table.value, ids_t)
    return _record(out, (table,), lambda g: (ops.embedding_backward(g, ids_t, vocab),), "embedding")


def cross_entropy(logits, targets, *, ignore_index: int = -100) -> Node:
    """Mean softmax cross-entropy of logits (..., V) against integer targets (...) → a 0-d node;
    rows whose target is ``ignore_index`` are left out."""
    (z,) = as_nodes(logits)
    loss, saved = ops.cross_entropy_with_stats(z.value, targets, ignore_index=ignore_index,
                                               gradient=recording() and z.requires_grad)
    return _record(loss, (z,), lambda g: (ops.cross_entropy_backward(g, saved),), "cross_entropy")


def sum(x, axis=None) -> Node:  # noqa: A001 (the op's name)
    """Σ of every element (a 0-d node), or over the last axis (``axis=-1``)."""
    (x,) = as_nodes(x)
    out = ops.sum(x.value, axis=axis)
    return _record(out, (x,), lambda g: (ops.sum_backward(g, x.shape, axis, mean=False),), "sum")


def mean(x, axis=None) -> Node:
    """Mean of every element (a 0-d node), or over the last axis (``axis=-1``)."""
    (x,) = as_nodes(x)
    out = ops.mean(x.value, axis=axis)
    return _record(out, (x,), lambda g: (ops.sum_backward(g, x.shape, axis, mean=True),), "mean")


def reshape(x, shape) -> Node:
    """The same elements in a new shape (a view); the gradient is reshaped back."""
    (x,) = as_nodes(x)
    return _record(x.value.reshape(shape), (x,), lambda g: (g.reshape(x.shape),), "reshape")


def swap_axes(x, axis1: int, axis2: int) -> Node:
    """Exchange two axes (a copy into the new layout); its own backward."""
    (x,) = as_nodes(x)
    if x.ndim and axis1 % x.ndim == axis2 % x.ndim:
        return x
    out = ops.swap_axes(x.value, axis1, axis2)
    return _record(out, (x,), lambda g: (ops.swap_axes(g, axis1, axis2),), "swap_axes")


# -- derived ops: compositions of the primitives above (no rules of their own) ------------

def split_heads(x, heads: int) -> Node:
    """(B, T, heads·d) → (B, heads, T, d)."""
    (x,) = as_nodes(x)
    b, t, width = x.shape
    return swap_axes(reshape(x, (b, t, heads, width // heads)), 1, 2)


def merge_heads(x) -> Node:
    """(B, heads, T, d) → (B, T, heads·d): the inverse of :func:`split_heads`."""
    (x,) = as_nodes(x)
    b, h, t, d = x.shape
    return reshape(swap_axes(x, 1, 2), (b, t, h * d))
