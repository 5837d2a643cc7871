"""``matmul`` and its gradient: batched float32 matrix products (``kernels/matmul.cl``).
Float64 reference: :func:`netcl_lite.reference.matmul`.
"""

from __future__ import annotations

import functools
import heapq
from typing import NamedTuple

import numpy as np
import pyopencl as cl

from ..checks import flag
from ..core.device import manager
from ..core.kernels import vector_lanes
from ..core.tensor import Tensor
from .elementwise import add, swiglu
from .layout import split_columns
from .operands import OpCall, elements, f32, i32, int32_range, round_up, shape_of
from .reduce import join_rows, sum_to

_BLOCK = 4  # matmul_blocked computes a 4 x 4 block of C per work-item
#: matmul_packed's C tile per device vector width (lanes): (rows MR, vectors per row NV).
#: 16 lanes (AVX-512): 6 x 64 in 24 of 32 registers; 8 lanes (AVX2, or a GPU): 6 x 16 in 12 of 16.
TILES = {16: (6, 4), 8: (6, 2)}
PACK_K = 64     # k values per packing work-item
PACK_PANELS = 8  # A panels per packing work-item
#: below this many multiply-adds the unpacked kernel is faster than the micro-kernel: on the
#: PoCL CPU driver launches dominate there (benchmarks/results/tried.md, "PACKED_MIN_WORK").
PACKED_MIN_WORK = 64**3


def _batch_shape(sa, sb) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ValueError(f"batch shapes of a {sa} and b {sb} do not broadcast") from None


def _batch_stride(name, shape, batch, matrix_elems) -> int:
    """Element stride per flattened batch index: 0 when this operand is broadcast."""
    lead = tuple(shape[:-2])
    if lead == tuple(batch):
        return matrix_elems
    if elements(lead) == 1:
        return 0
    raise ValueError(
        f"{name} with batch shape {lead} must match the broadcast batch {tuple(batch)} exactly or be unbatched; "
        "broadcast it with np.broadcast_to first"
    )


def matmul_shapes(sa, sb, transpose_a: bool, transpose_b: bool):
    """(batch, M, N, K) of ``op(a) @ op(b)``, or a ValueError naming what disagrees."""
    if len(sa) < 2 or len(sb) < 2:
        raise ValueError(f"matmul needs at least 2-D operands, got a {sa} and b {sb}")
    m, k = (sa[-1], sa[-2]) if transpose_a else (sa[-2], sa[-1])
    k2, n = (sb[-1], sb[-2]) if transpose_b else (sb[-2], sb[-1])
    if k != k2:
        raise ValueError(
            f"inner dimensions differ: a {sa}{'ᵀ' if transpose_a else ''} has K={k}, "
            f"b {sb}{'ᵀ' if transpose_b else ''} has K={k2}"
        )
    return _batch_shape(sa, sb), m, n, k


def matmul(a, b, *, transpose_a: bool = False, transpose_b: bool = False, queue=None):
    """``a @ b`` in float32: ``a`` is ``(..., M, K)``, ``b`` is ``(..., K, N)`` → ``(..., M, N)``.

    ``transpose_a`` / ``transpose_b`` use ``aᵀ`` / ``bᵀ`` of the last two axes
    without copying. Batch axes must be equal, or one operand unbatched.

    >>> matmul(np.eye(2), [[1.0, 2.0], [3.0, 4.0]])
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    return _product(a, b, None, transpose_a, transpose_b, queue)


def matmul_add(a, b, d, *, transpose_a: bool = False, transpose_b: bool = False, queue=None):
    """``op(a) @ op(b) + d`` with ``d`` of the product's shape: the sum is formed as the product
    is stored (the packed kernel's epilogue), so no separate pass reads the product back. A
    backward uses it to add a product's share of a gradient to the share gathered so far.

    >>> matmul_add(np.eye(2), [[1.0, 2.0], [3.0, 4.0]], np.ones((2, 2)))
    array([[2., 3.],
           [4., 5.]], dtype=float32)
    """
    return _product(a, b, d, transpose_a, transpose_b, queue)


def _product(a, b, d, transpose_a, transpose_b, queue):
    """:func:`matmul` (``d`` None) and :func:`matmul_add`: one body for both."""
    flag("transpose_a", transpose_a)
    flag("transpose_b", transpose_b)
    how = _how(shape_of(a), shape_of(b), transpose_a, transpose_b, PACKED_MIN_WORK, (TALL_MIN_K, TALL_MAX_C))
    if d is not None and tuple(shape_of(d)) != how.out_shape:
        raise ValueError(f"d must have the product's shape {how.out_shape}, got {tuple(shape_of(d))}")
    call = OpCall("matmul", queue=queue, a=a, b=b, **({} if d is None else {"d": d}))
    ta, tb = call.float_input("a"), call.float_input("b")
    td = None if d is None else call.float_input("d")
    d_buf = None if td is None else td.buffer
    out = call.output(how.out_shape)
    if how.kind == _ZEROS and d is None:
        call.stream.fill(out.buffer, out.nbytes)
    elif how.kind == _ZEROS:                                # K = 0: the product is zero, the sum is d
        call.stream.copy(out.buffer, d_buf, out.nbytes)
    elif how.tall and _device(call.queue).cpu:
        _tall(call, ta.buffer, tb.buffer, out.buffer, *how.tall, d_buf=d_buf)
    elif how.kind == _SWAPPED:
        gemm(call, tb.buffer, ta.buffer, out.buffer, *how.args, c_trans=True, d_buf=d_buf)
    elif how.kind == _GEMM:
        gemm(call, ta.buffer, tb.buffer, out.buffer, *how.args, d_buf=d_buf)
    return call.result(out, check=[False])


_EMPTY, _ZEROS, _SWAPPED, _GEMM = range(4)
#: Aᵀ B with A wider than B (M > N) runs as (Bᵀ A)ᵀ from this K on (below, only past M > 4N)
SWAP_MIN_K = 1024


class _How(NamedTuple):
    """What :func:`matmul` does for one pair of shapes: the output's shape, which path, and
    :func:`gemm`'s arguments after the three buffers; ``tall``: (M, N, K) where a CPU runs the
    product as :func:`_tall` does, else ()."""
    out_shape: tuple
    kind: int
    args: tuple
    tall: tuple = ()


@functools.lru_cache(maxsize=1024)
def _how(sa, sb, transpose_a: bool, transpose_b: bool, min_work: int, tall_limits: tuple | None = None) -> _How:
    """The shape logic of :func:`matmul`, a pure function of the shapes, the flags,
    :data:`PACKED_MIN_WORK` and :func:`tall_pays`' limits (passed in, so a changed limit is a new
    entry; None: the module's), so it runs once per shape: a call's own Python is a good part of a
    small product's time (an exception is not cached, so a bad pair of shapes raises on every call)."""
    batch, m, n, k = matmul_shapes(sa, sb, transpose_a, transpose_b)
    n_batch = elements(batch)
    int32_range(M=m, N=n, K=k, a_elements=elements(sa), b_elements=elements(sb), out_elements=n_batch * m * n)
    out_shape = tuple(batch) + (m, n)
    if not n_batch * m * n:
        return _How(out_shape, _EMPTY, ())
    if k == 0:
        return _How(out_shape, _ZEROS, ())
    narrow = transpose_a and not transpose_b and n_batch == 1 and tall_pays(m, n, k, *(tall_limits or ()))
    tall = (m, n, k) if narrow else ()
    if transpose_a and not transpose_b and n_batch == 1 and swap_pays(m, n, k) and packed_pays(m, n, k, min_work):
        # C = Aᵀ B computed as (Bᵀ A)ᵀ: a transposed operand is packed, so pack the smaller one
        # (B, K x N) and read the larger (A, K x M) as the row-major "B"; the tile is stored transposed.
        return _How(out_shape, _SWAPPED, (n, m, k, 1, (0, 1, n), (0, m, 1)), tall)
    a_strides = (_batch_stride("a", sa, batch, sa[-2] * sa[-1]),) + ((1, sa[-1]) if transpose_a else (sa[-1], 1))
    b_strides = (_batch_stride("b", sb, batch, sb[-2] * sb[-1]),) + ((1, sb[-1]) if transpose_b else (sb[-1], 1))
    return _How(out_shape, _GEMM, (m, n, k, n_batch, a_strides, b_strides,
                                   1 if a_strides[0] else n_batch, 1 if b_strides[0] else n_batch), tall)



#: a CPU runs Aᵀ B as matmul_tall (:func:`_tall`) from this K on, when C has at most
#: :data:`TALL_MAX_C` elements (:func:`tall_pays`)
TALL_MIN_K = 1024
TALL_MAX_C = 128 * 128
#: matmul_tall's work: row tiles per work-item at most, the work-items K is split until there are
#: (``chunks × panels × row groups``), and the fewest k a chunk keeps
TALL_ROW_TILES = 32
TALL_TASKS = 8
TALL_MIN_CHUNK = 256


def tall_pays(m: int, n: int, k: int, min_k: int = TALL_MIN_K, max_c: int = TALL_MAX_C) -> bool:
    """Whether ``Aᵀ B`` (A: K x M, B: K x N) runs as ``matmul_tall`` on a CPU: a weight gradient of a
    narrow layer (C of at most ``max_c`` elements) over at least ``min_k`` rows.

    ``matmul_packed`` copies B's K-long panels into local memory once per work-group and reads the
    transposed A a cache line per k; with so small a C its few work-groups each copy a panel of
    512 KiB or more, and the K split adds a partial C per slice. ``matmul_tall`` reads both
    operands in place, a row of each per k, and splits K into as many chunks as keep every core
    busy: 1.4-1.8 times faster per CPU second at 128 x 64, 64 x 128 and 128 x 128 over K = 2048
    with the operands out of cache, and no faster at 128 x 320, 320 x 128 or 1024 x 128
    (benchmarks/results/tried.md, "Weight gradients of narrow layers read in place")."""
    return k >= min_k and m * n <= max_c


class _Device(NamedTuple):
    """What the products' plans read of a queue's device: the micro-kernel's tile (:func:`tile_for`),
    bytes of local memory, compute units, and whether it is a CPU."""
    tile: tuple
    local_mem: int
    units: int
    cpu: bool


@functools.lru_cache(maxsize=64)
def _device(queue) -> _Device:
    """:class:`_Device` of ``queue``'s device, asked once per queue (each query is a driver call)."""
    device = queue.device
    return _Device(tile_for(device), device.local_mem_size, device.max_compute_units,
                   bool(device.type & cl.device_type.CPU))


def _tall(call, a_buf, b_buf, c_buf, m, n, k, d_buf=None, ldb=None, b_off=0):
    """C (m, n) = Aᵀ B (+ D) for A (k, m) and B (k, n) row-major, by ``matmul_tall``: both read in
    place, K in chunks whose partial Cs are joined in order (:func:`~netcl_lite.ops.reduce.join_rows`).
    B may be the columns from ``b_off`` of a wider matrix of row stride ``ldb`` (default n)."""
    plan = _tall_plan(_device(call.queue).tile, m, n, k, d_buf is not None,
                      (TALL_ROW_TILES, TALL_TASKS, TALL_MIN_CHUNK))
    out = c_buf if plan.chunks == 1 else call.scratch("matmul.partial", plan.chunks * m * n)
    call.launch("matmul.cl", "matmul_tall", plan.global_size, (1, 1), a_buf, b_buf, out,
                c_buf if d_buf is None else d_buf, *plan.args[:4], i32(n if ldb is None else ldb), i32(b_off),
                *plan.args[4:], call.stream.status, call.seq, options=plan.options)
    if plan.chunks > 1:
        join_rows(call, out, c_buf, plan.chunks, m * n, 1.0, d_buf)


class _TallPlan(NamedTuple):
    """How :func:`_tall` launches one shape."""
    options: tuple
    global_size: tuple
    args: tuple                 # matmul_tall's scalar arguments, from M to alpha but ldb and b_off
    chunks: int                 # K chunks (1: C is written directly)


@functools.lru_cache(maxsize=256)
def _tall_plan(tile, m, n, k, add_d, tuning) -> _TallPlan:
    """The launch of ``matmul_tall`` for one shape with micro-kernel ``tile`` (VW, MR, NV). A work-item
    takes one panel of B's columns, up to ``tuning[0]`` row tiles and one chunk of K; K is split until
    there are ``tuning[1]`` work-items, in chunks of at least ``tuning[2]`` k. The chunks come from
    the shape alone, so the order of every sum is the same on any number of compute units."""
    row_tiles, tasks, min_chunk = tuning
    vw, mr, nv = tile
    pm, pn = -(-m // mr), -(-n // (vw * nv))
    tiles = min(pm, row_tiles)
    groups = -(-pm // tiles)
    chunks = max(1, min(-(-tasks // (pn * groups)), k // min_chunk))
    chunk = -(-k // chunks)
    chunks = -(-k // chunk)
    options = (f"-DVW={vw}", f"-DMR={mr}", f"-DNV={nv}", f"-DADD_D={int(add_d and chunks == 1)}")
    args = (*map(i32, (m, n, k, m, chunk, tiles)), f32(1.0))
    return _TallPlan(options, (pn * groups, chunks), args, chunks)


def matmul_backward(g, a, b, transpose_a: bool = False, transpose_b: bool = False, needs=(True, True),
                    acc=(None, None)):
    """(da, db) of ``C = op(a) @ op(b)`` given dC = ``g`` (Tensors); None where not needed.

    d op(A) = dC op(B)ᵀ and d op(B) = op(A)ᵀ dC, as matmuls with transposes; an
    unbatched operand's gradient sums over the batch. For ``x (..., K) @ W (K, N)``
    the batch folds into rows, so dW is one 2-D product. ``acc`` holds a gradient already
    gathered for a or b (or None): the result then includes it, added as the product is stored
    when no batch sum follows (:func:`matmul_add`).
    """
    if acc is None:                                  # no gradient gathered for either
        acc = (None, None)
    ta, tb = transpose_a, transpose_b
    da = db = None
    if needs[0]:
        args, kw = ((b, g), {"transpose_a": tb, "transpose_b": True}) if ta else ((g, b), {"transpose_b": not tb})
        da = _product_plus(args, kw, a.shape, acc[0])
    if needs[1]:
        av, gg = a, g
        if len(b.shape) == 2 and len(a.shape) > 2 and not ta:        # fold the batch into rows
            av, gg = a.reshape(-1, a.shape[-1]), g.reshape(-1, g.shape[-1])
        args, kw = ((gg, av), {"transpose_a": True, "transpose_b": ta}) if tb else ((av, gg), {"transpose_a": not ta})
        db = _product_plus(args, kw, b.shape, acc[1])
    return da, db


def matmul_columns(a, b, start: int, width: int, acc=None):
    """``aᵀ b[:, start:start + width]`` (+ ``acc``) for Tensors ``a`` (K, M) and ``b`` (K, W): the
    weight gradient of one projection whose output's gradient is a column block of a joined
    gradient (:func:`netcl_lite.ops.rotary_attention_backward`'s ``[dq | dk | dv]``). Where a CPU
    runs the shape as ``matmul_tall`` (:func:`tall_pays`) the block is read in place, else from a
    copy of it. ``acc`` (M, width): a gradient gathered so far, added as the product is stored."""
    for name, t in (("a", a), ("b", b), ("acc", acc)):
        if not isinstance(t, Tensor) and (t is not None or name != "acc"):
            raise TypeError(f"{name} must be a Tensor (a backward's operand on the device), got {type(t).__name__}")
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0]:
        raise ValueError(f"a (K, M) and b (K, W) must be 2-D with the same K, got a {a.shape} and b {b.shape}")
    if not (0 <= start and 0 < width and start + width <= b.shape[1]):
        raise ValueError(f"columns [{start}, {start + width}) must lie within b's {b.shape[1]}")
    k, m = a.shape
    if acc is not None and tuple(acc.shape) != (m, width):
        raise ValueError(f"acc must have the product's shape {(m, width)}, got {tuple(acc.shape)}")
    how = _how((k, m), (k, width), True, False, PACKED_MIN_WORK, (TALL_MIN_K, TALL_MAX_C))   # as matmul decides
    if not (how.tall and _device(a.queue).cpu):
        block = split_columns(b, (start, width, b.shape[1] - start - width))[1] if width < b.shape[1] else b
        return matmul(a, block, transpose_a=True) if acc is None else matmul_add(a, block, acc, transpose_a=True)
    call = OpCall("matmul", a=a, b=b, **({} if acc is None else {"d": acc}))
    out = call.output((m, width))
    _tall(call, a.buffer, b.buffer, out.buffer, m, width, k, d_buf=None if acc is None else acc.buffer,
          ldb=b.shape[1], b_off=start)
    return call.result(out, check=[False])


def matmul_pair(a, b, a2, b2, *, transpose_b: bool = False, d=None, queue=None):
    """``a @ op(b) + a2 @ op(b2)`` (``+ d``): ``a`` is ``(M, K1)``, ``a2`` ``(M, K2)``, ``op(b)``
    ``(K1, N)`` and ``op(b2)`` ``(K2, N)`` (``transpose_b``: ``b`` and ``b2`` given as ``(N, K)``); ``d``, of
    the result's shape, is added as it is stored.

    Where K1 = K2 and the micro-kernel runs the joined product whole (``matmul_packed`` built with
    ``PAIR``: no K split, the panels in local memory, A read in place), one launch sums each element over K1 + K2
    in order, as the product of ``[a | a2]`` and ``[op(b); op(b2)]`` would, with no partial result
    stored; elsewhere ``a2 @ op(b2)`` is formed first and ``a @ op(b)`` added to it in its epilogue
    (:func:`matmul_add`). SwiGLU's input gradient ``dgate W1ᵀ + dup W3ᵀ`` is such a sum.

    >>> matmul_pair(np.eye(2), [[1.0, 2.0], [3.0, 4.0]], np.ones((2, 1)), [[10.0, 20.0]])
    array([[11., 22.],
           [13., 24.]], dtype=float32)
    """
    flag("transpose_b", transpose_b)
    shapes = [tuple(shape_of(t)) for t in (a, b, a2, b2)]
    if any(len(s) != 2 for s in shapes):
        raise ValueError(f"a, b, a2 and b2 must be 2-D, got shapes {shapes}")
    (m, k1), (m2, k2) = shapes[0], shapes[2]
    if m2 != m:
        raise ValueError(f"a2 must have a's M={m} rows, got shape {shapes[2]}")
    nk = [(s[0], s[1]) if transpose_b else (s[1], s[0]) for s in (shapes[1], shapes[3])]
    if nk[0][1] != k1 or nk[1][1] != k2 or nk[0][0] != nk[1][0]:
        raise ValueError(f"op(b) must be (K1={k1}, N) and op(b2) (K2={k2}, N) with the same N, got b {shapes[1]} "
                         f"and b2 {shapes[3]} (transpose_b={transpose_b})")
    n, k = nk[0][0], k1 + k2
    int32_range(M=m, N=n, K=k, out_elements=m * n)
    if d is not None and tuple(shape_of(d)) != (m, n):
        raise ValueError(f"d must have the result's shape {(m, n)}, got {tuple(shape_of(d))}")
    if queue is not None and not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue must be a pyopencl.CommandQueue, got {type(queue).__name__}")
    if queue is None:
        queue = next((t.queue for t in (a, b, a2, b2, d) if isinstance(t, Tensor)), None) or manager.default().queue
    b_strides = (0, 1, k1) if transpose_b else (0, n, 1)
    plan = None
    if m * n and k1 == k2 and k1 and packed_pays(m, n, k):   # one row stride serves a and a2 (and b, b2)
        plan = _plan(*_device(queue), m, n, k, 1, (0, k1, 1), 1, b_strides, 1, 1.0, False, d is not None,
                     _tuning())
        if plan.splits != 1 or plan.pack_floats or "-DSLICED=1" in plan.options:
            plan = None
    if plan is None:
        second = matmul(a2, b2, transpose_b=transpose_b, queue=queue)
        if d is not None:
            second = add(second, d)
        return matmul_add(a, b, second, transpose_b=transpose_b, queue=queue)
    call = OpCall("matmul", queue=queue, a=a, b=b, a2=a2, b2=b2, **({} if d is None else {"d": d}))
    ta, tb, ta2, tb2 = (call.float_input(name) for name in ("a", "b", "a2", "b2"))
    td = None if d is None else call.float_input("d")
    out = call.output((m, n))
    _packed(call, ta.buffer, tb.buffer, out.buffer, m, n, k, 1, (0, k1, 1), b_strides, 1, 1, 1.0,
            (call.stream.status, call.seq), d_buf=None if td is None else td.buffer, pair=(ta2.buffer, tb2.buffer, k1))
    return call.result(out, check=[False])


def swiglu_input_grad(gate, up, g, w1, w3, *, d=None):
    """``(dx, dgate, dup)`` of ``h = silu(x W1) · (x W3)`` given gate = x W1, up = x W3 and h's gradient
    ``g`` (Tensors, all ``(M, H)``; w1 and w3 ``(D, H)``): SwiGLU's gradients as
    :func:`~netcl_lite.ops.swiglu_backward` forms them and ``dx = dgate W1ᵀ + dup W3ᵀ`` (``+ d``) as
    :func:`matmul_pair` sums it, so the same bits. Where the paired product's work-groups would each
    hold all of dx's columns (one column group), each tile's rows of dgate and dup are formed by the
    work-item that then reads them as its tile's A (``matmul_packed`` built with ``SWIGLU_BWD``):
    one launch, the gradients read back from L1 instead of memory. Elsewhere the pass and the
    paired product run apart. The weights' gradients need dgate and dup: both are returned."""
    for name, t in (("gate", gate), ("up", up), ("g", g), ("w1", w1), ("w3", w3), ("d", d)):
        if not isinstance(t, Tensor) and (t is not None or name != "d"):
            raise TypeError(f"{name} must be a Tensor (a backward's operand on the device), got {type(t).__name__}")
    if gate.ndim != 2 or up.shape != gate.shape or g.shape != gate.shape:
        raise ValueError(f"gate, up and g must be 2-D of one shape, got {gate.shape}, {up.shape}, {g.shape}")
    (m, h), n = gate.shape, w1.shape[0] if w1.ndim == 2 else -1
    if w1.ndim != 2 or w1.shape[1] != h or w3.shape != w1.shape:
        raise ValueError(f"w1 and w3 must be (D, {h}) of one shape, got {w1.shape} and {w3.shape}")
    if d is not None and d.shape != (m, n):
        raise ValueError(f"d must have dx's shape {(m, n)}, got {d.shape}")
    plan = None
    if m * n and h and packed_pays(m, n, 2 * h):
        plan = _plan(*_device(gate.queue), m, n, 2 * h, 1, (0, h, 1), 1, (0, 1, h), 1, 1.0, False, d is not None,
                     _tuning())
        if plan.splits != 1 or plan.pack_floats or "-DSLICED=1" in plan.options or plan.global_size[1] != 1:
            plan = None
    if plan is None:
        from .elementwise import swiglu_backward

        dgate, dup = swiglu_backward(gate, up, g)
        return matmul_pair(dgate, w1, dup, w3, transpose_b=True, d=d), dgate, dup
    call = OpCall("swiglu_input_grad", gate=gate, up=up, g=g, w1=w1, w3=w3, **({} if d is None else {"d": d}))
    dx, dgate, dup = call.output((m, n)), call.output((m, h)), call.output((m, h))
    call.launch("matmul.cl", "matmul_packed", plan.global_size, (GROUP_ITEMS, 1, 1),
                gate.buffer, w1.buffer, dx.buffer, dx.buffer if d is None else d.buffer, *plan.args,
                call.stream.status, call.seq, plan.local, up.buffer, w3.buffer, i32(h),
                gate.buffer, up.buffer, g.buffer, dgate.buffer, dup.buffer,
                options=plan.options + ("-DPAIR=1", "-DSWIGLU_BWD=1"))
    return call.result(dx, dgate, dup, check=[False, False, False])


def swiglu_linear(x, w1, w3, *, queue=None):
    """``(h, gate, up)`` with ``gate = x @ w1``, ``up = x @ w3`` and ``h = silu(gate) · up``: a SwiGLU
    layer's first half. ``x`` is ``(M, K)``, ``w1`` and ``w3`` are ``(K, N)``; all three outputs are
    ``(M, N)`` (the backward needs gate and up).

    One launch (``matmul_swiglu``) computes a tile of gate and of up side by side and forms h from the
    registers, so no pass reads gate and up back; each value has the bits of :func:`matmul` (where it
    does not split K: :func:`k_splits`) and :func:`~netcl_lite.ops.swiglu` apart (the same sums in the
    same order, the same expression).
    Where a pair of K-long weight panels would not fit the device's local memory, the two products
    and the pass run apart.

    >>> h, gate, up = swiglu_linear(np.ones((2, 3)), np.full((3, 2), 0.5), np.ones((3, 2)))
    >>> gate[0], up[0], h.round(4)[0]             # silu(1.5) · 3
    (array([1.5, 1.5], dtype=float32), array([3., 3.], dtype=float32), array([3.6791, 3.6791], dtype=float32))
    """
    sx, s1, s3 = (tuple(shape_of(t)) for t in (x, w1, w3))
    if len(sx) != 2 or len(s1) != 2:
        raise ValueError(f"x must be 2-D (M, K) and w1 2-D (K, N), got x {sx} and w1 {s1}")
    if s1[0] != sx[1]:
        raise ValueError(f"w1 must have x's K={sx[1]} rows, got shape {s1}")
    if s3 != s1:
        raise ValueError(f"w3 must have w1's shape {s1}, got {s3}")
    (m, k), n = sx, s1[1]
    int32_range(M=m, N=n, K=k, x_elements=m * k, w_elements=k * n, out_elements=m * n)
    if queue is not None and not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue must be a pyopencl.CommandQueue, got {type(queue).__name__}")
    if queue is None:
        queue = next((t.queue for t in (x, w1, w3) if isinstance(t, Tensor)), None) or manager.default().queue
    # No rows or no columns: nothing to launch (and no tiles to plan), three empty results as matmul gives.
    plan = _swiglu_plan(_device(queue), m, n, k, (MAX_GROUP_PANELS, GROUP_PANEL_BYTES, PANEL_BYTES,
                                                  LAYOUT_EFFICIENCY)) if m * n else ()
    if plan is None:                                # the panels do not fit: the products and the pass apart
        gate, up = matmul(x, w1, queue=queue), matmul(x, w3, queue=queue)
        return swiglu(gate, up, queue=queue), gate, up
    call = OpCall("swiglu_linear", queue=queue, x=x, w1=w1, w3=w3)
    tx, t1, t3 = call.float_input("x"), call.float_input("w1"), call.float_input("w3")
    h, gate, up = call.output((m, n)), call.output((m, n)), call.output((m, n))
    if m * n:
        call.launch("matmul.cl", "matmul_swiglu", plan[1], (GROUP_ITEMS, 1, 1), tx.buffer, t1.buffer, t3.buffer,
                    gate.buffer, up.buffer, h.buffer, *map(i32, (m, n, k, k, plan[2])), call.stream.status,
                    call.seq, cl.LocalMemory(plan[3]), options=plan[0])
    return call.result(h, gate, up, check=[False, False, False])


@functools.lru_cache(maxsize=256)
def _swiglu_plan(dev: _Device, m, n, k, tuning):
    """(options, global size, row tiles per work-group, local bytes) of ``matmul_swiglu`` for one shape,
    or None when one pair's panel (K x NR floats) outgrows the local memory allowed: the layout is
    :func:`_layout`'s over pairs of HALF = NR / 2 columns of both weights."""
    max_panels, group_bytes, panel_bytes, efficiency = tuning
    vw, mr, nv = dev.tile
    nr = vw * nv
    pair = 4 * nr * max(k, 1)
    if pair > min(panel_bytes, dev.local_mem):
        return None
    pm, pn = -(-m // mr), -(-n // (nr // 2))
    cap = max(1, min(max_panels, pn, min(group_bytes, dev.local_mem) // pair))
    gp, tiles = _layout(dev.units, pm, pn, cap, 1, efficiency, chunked=dev.cpu)
    options = (f"-DVW={vw}", f"-DMR={mr}", f"-DNV={nv}", f"-DGP={gp}")
    return options, (-(-pm // tiles) * GROUP_ITEMS, -(-pn // gp), 1), tiles, gp * pair


def _product_plus(args, kw, shape, acc):
    """matmul(*args, **kw) summed to ``shape``, plus ``acc`` if given: in the product's epilogue
    when the product already has ``shape`` (no batch sum between), else by an add."""
    if acc is not None and _how(tuple(args[0].shape), tuple(args[1].shape), kw.get("transpose_a", False),
                                kw.get("transpose_b", False), PACKED_MIN_WORK).out_shape == tuple(shape):
        return matmul_add(*args, acc.reshape(shape), **kw)
    out = sum_to(matmul(*args, **kw), shape)
    return out if acc is None else add(out, acc.reshape(shape))


def swap_pays(m: int, n: int, k: int) -> bool:
    """Whether ``Aᵀ B`` (A: K x M, B: K x N) runs faster as ``(Bᵀ A)ᵀ``: the wider A is then
    copied into the work-groups' panels a row of K at a time, where read as the transposed
    operand each k of a tile is one cache line M floats after the last (slow when A comes from
    beyond L2, as a weight gradient's activations do). The swap pays at long K with M a few
    times N, and loses at short K, where the transposed store weighs more, and where it pads
    far more of C into panels; with the operands hot in cache the gains shrink
    (benchmarks/results/tried.md, "swap_pays"). So: always past M > 4 N; from
    :data:`SWAP_MIN_K` on when M > N and the padded work grows < 5 %."""
    if m > 4 * n:
        return True
    if m <= n or k < SWAP_MIN_K:
        return False
    mr = max(rows for rows, _ in TILES.values())     # the coarsest tile of TILES pads the most
    nr = max(lanes * vectors for lanes, (_, vectors) in TILES.items())
    padded = lambda rows, cols: -(-rows // mr) * mr * -(-cols // nr) * nr
    return padded(n, m) <= 1.05 * padded(m, n)


def packed_pays(m: int, n: int, k: int, min_work: int | None = None) -> bool:
    """Whether the micro-kernel (``matmul_packed``) beats the unpacked kernel for this size
    (``min_work`` multiply-adds at least: :data:`PACKED_MIN_WORK` by default)."""
    return m * n * k >= (PACKED_MIN_WORK if min_work is None else min_work) and min(m, n) >= 4


def gemm(call: OpCall, a_buf, b_buf, c_buf, m, n, k, n_batch, a_strides, b_strides, a_div=1, b_div=1, alpha=1.0,
         c_trans=False, d_buf=None):
    """C[b] = alpha · A[b // a_div] @ B[b // b_div] (+ D[b]) for b < n_batch, C contiguous (n_batch, M, N).

    ``a_strides``/``b_strides`` are element strides (per operand matrix, row, column):
    a transposed operand is just other strides. ``a_div``/``b_div`` let many batch
    entries share one operand (a broadcast matrix, or the K/V group of several heads).
    Large products run ``matmul_packed`` (a transposed A may be packed first); small ones run
    ``matmul_blocked``. With ``c_trans`` (packed products only) C is stored transposed, (N, M).
    ``d_buf`` (laid out as C) is added in the packed kernel's epilogue, or by one pass after a
    small product.
    """
    status = (call.stream.status, call.seq)
    if packed_pays(m, n, k):
        _packed(call, a_buf, b_buf, c_buf, m, n, k, n_batch, a_strides, b_strides, a_div, b_div, alpha, status,
                c_trans=c_trans, d_buf=d_buf)
        return
    if alpha != 1.0 or a_div not in (1, n_batch) or b_div not in (1, n_batch):
        raise ValueError("matmul_blocked takes alpha = 1 and unshared or fully broadcast operands")
    a_strides = (a_strides[0] if a_div == 1 else 0,) + tuple(a_strides[1:])
    b_strides = (b_strides[0] if b_div == 1 else 0,) + tuple(b_strides[1:])
    gx, gy = -(-n // _BLOCK), -(-m // _BLOCK)
    call.launch("matmul.cl", "matmul_blocked", (round_up(gx, 8), round_up(gy, 8), n_batch), (8, 8, 1),
                a_buf, b_buf, c_buf, i32(m), i32(n), i32(k), *map(i32, a_strides), *map(i32, b_strides), i32(m * n),
                *status)
    if d_buf is not None:                                   # C += D, element by element, in place
        size = n_batch * m * n
        call.launch("elementwise.cl", "binary_broadcast", (round_up(-(-size // 8), 16),), (16,),
                    c_buf, d_buf, c_buf, i32(size), i32(size), i32(0), *status)


def tile_for(device) -> tuple[int, int, int]:
    """(VW, MR, NV): the micro-kernel's vector width and C tile for ``device``."""
    vw = vector_lanes(device)
    return (vw, *TILES[vw])


def _packed(call, a_buf, b_buf, c_buf, m, n, k, n_batch, a_strides, b_strides, a_div, b_div, alpha, status,
            c_trans=False, d_buf=None, pair=None):
    """Run the micro-kernel: each work-group copies its GP NR-column panels of B into local
    memory (a k-slice at a time when K is long) and its items compute MR-row tiles from them; a
    row-major A is read in place, a transposed A too unless its stride and the column groups
    that would each re-read it crowd the caches (:func:`transposed_in_place`), when it is first
    packed into MR-row panels. The launch
    geometry comes from :func:`_plan`, worked out once per shape."""
    plan = _plan(*_device(call.queue), m, n, k, n_batch,
                 tuple(a_strides), a_div, tuple(b_strides), b_div, float(alpha), c_trans, d_buf is not None, _tuning())
    if plan.pack_floats:
        ap = call.scratch("matmul.ap", plan.pack_floats)
        call.launch("matmul.cl", "matmul_pack_a", plan.pack_global, (8, 1, 1), a_buf, ap, *plan.pack_args,
                    options=plan.options)
        a_buf = ap
    out = c_buf if plan.splits == 1 else call.scratch("matmul.partial", plan.splits * m * n)
    extra, options = (), plan.options
    if pair is not None:                                    # (A2, B2, K1): see matmul_pair
        extra, options = (pair[0], pair[1], i32(pair[2])), plan.options + ("-DPAIR=1",)
    call.launch("matmul.cl", "matmul_packed", plan.global_size, (GROUP_ITEMS, 1, 1),
                a_buf, b_buf, out, c_buf if d_buf is None else d_buf, *plan.args, *status, plan.local, *extra,
                options=options)
    if plan.splits > 1:                                     # C = alpha * (sum of the slices' C's) (+ D)
        join_rows(call, out, c_buf, plan.splits, m * n, alpha, d_buf)


def _tuning() -> tuple:
    """The module's limits as :func:`_plan` takes them (read at each call, so a changed limit is a new plan)."""
    return (PANEL_BYTES, GROUP_PANEL_BYTES, MAX_GROUP_PANELS, A_LINES, LAYOUT_EFFICIENCY,
            (SPLIT_UNITS, (SPLIT_MAX_TILES, SPLIT_MIN_K, SPLIT_SLICE, MAX_SPLITS)))


class _Plan(NamedTuple):
    """How :func:`_packed` launches one shape: build options, sizes and the shape's own arguments."""
    options: tuple
    pack_floats: int            # floats of the packed A (0: A is read in place)
    pack_global: tuple
    pack_args: tuple
    global_size: tuple
    args: tuple                 # matmul_packed's scalar arguments, from M to alpha
    local: cl.LocalMemory
    splits: int                 # K slices (1: none), joined by reduce.join_rows


@functools.lru_cache(maxsize=1024)
def _plan(tile, local_mem, units, cpu, m, n, k, n_batch, a_strides, a_div, b_strides, b_div, alpha, c_trans,
          add_d, tuning) -> _Plan:
    """The launch of ``matmul_packed`` (and of ``matmul_pack_a`` if A is packed) for one shape on a
    device with micro-kernel ``tile`` (VW, MR, NV), ``local_mem`` bytes of local memory and
    ``units`` compute units, a CPU or not (``cpu``; the other arguments are :func:`gemm`'s).

    A pure function of its arguments, so each shape's plan is worked out once (the call's own
    Python is most of a small product's time). ``tuning`` carries the module's limits
    (:data:`PANEL_BYTES`, :data:`GROUP_PANEL_BYTES`, :data:`MAX_GROUP_PANELS`, :data:`A_LINES`,
    :data:`LAYOUT_EFFICIENCY`, :data:`SPLIT_UNITS` and :func:`k_splits`'s limits), so a changed limit
    makes a new plan. ``units`` shapes the launch only: where K is split, and so the order in which
    a C element's products are summed, is decided for :data:`SPLIT_UNITS` workers, so the bits of C
    are the same on every compute-unit count of a device."""
    panel_bytes, group_panel_bytes, max_group_panels, a_lines, layout_efficiency, (split_units, splitting) = tuning
    vw, mr, nv = tile
    nr = vw * nv
    pm, pn = -(-m // mr), -(-n // nr)
    local = min(panel_bytes, local_mem)
    kc = max(1, min(k, local // (4 * nr)))
    cap = lambda kc: max(1, min(max_group_panels, pn, min(group_panel_bytes, local) // (4 * nr * kc)))
    splits = 1
    if kc < k:
        gp, tiles = 1, GROUP_ITEMS                 # sliced: one tile of one panel per item
    else:
        gp, tiles = _layout(units, pm, pn, cap(kc), n_batch, layout_efficiency, chunked=cpu)
        if cpu:   # decided for split_units workers, not this device's count: the sums' order stays put
            _, reference_tiles = _layout(split_units, pm, pn, cap(kc), n_batch, layout_efficiency)
            splits = k_splits(pm, pn, k, n_batch, reference_tiles < pm, *splitting)
        if splits > 1:                             # K slices instead of row splits
            kc = -(-k // splits)
            splits = -(-k // kc)
            gp, tiles = _layout(units, pm, pn, cap(kc), splits, layout_efficiency, chunked=cpu)
    groups = -(-pn // gp)                          # column groups: each reads all of A once
    a_batch, a_row, a_col = a_strides
    packed_a = 0 if a_col == 1 else 2 if transposed_in_place(a_col, k, groups, a_lines) else 1
    options = (f"-DVW={vw}", f"-DMR={mr}", f"-DNV={nv}", f"-DA_PACKED={packed_a}", f"-DC_TRANS={int(c_trans)}",
               f"-DSLICED={int(kc < k and splits == 1)}", f"-DGP={gp}", f"-DADD_D={int(add_d and splits == 1)}",
               f"-DKSPLIT={int(splits > 1)}")
    pack_floats, pack_global, pack_args = 0, (), ()
    a_sets = -(-n_batch // a_div)                  # distinct A matrices serving the n_batch products
    if packed_a == 2:
        lda = a_col
    elif packed_a:
        pack_floats = a_sets * pm * mr * k
        int32_range(packed_a=pack_floats)
        pack_global = (round_up(-(-k // PACK_K), 8), -(-pm // PACK_PANELS), a_sets)
        pack_args = (i32(m), i32(k), *map(i32, a_strides))
        a_batch, lda = pm * mr * k, mr
    else:
        lda = a_row
    args = (*map(i32, (m, n, k, a_batch, lda, a_div, *b_strides, b_div, kc, tiles)),
            f32(alpha if splits == 1 else 1.0))        # a split product scales in the join
    return _Plan(options, pack_floats, pack_global, pack_args,
                 (-(-pm // tiles) * GROUP_ITEMS, groups, n_batch * splits), args, cl.LocalMemory(4 * gp * kc * nr),
                 splits)


#: the worker count :func:`k_splits` is decided for, whatever the device has: a split changes the
#: order of a sum, so deciding it by the device's own count would change C's bits with the number of
#: threads (the limits were measured with 2 workers)
SPLIT_UNITS = 2
#: a product splits K (:func:`k_splits`) when it has at most this many C tiles, K at least
#: :data:`SPLIT_MIN_K`, and slices of at least :data:`SPLIT_SLICE` k (at most :data:`MAX_SPLITS`)
SPLIT_MAX_TILES = 256
SPLIT_MIN_K = 1024
SPLIT_SLICE = 512
MAX_SPLITS = 4


def k_splits(pm: int, pn: int, k: int, n_batch: int, rows_split: bool, max_tiles: int = SPLIT_MAX_TILES,
             min_k: int = SPLIT_MIN_K, slice_k: int = SPLIT_SLICE, max_splits: int = MAX_SPLITS) -> int:
    """K slices for one product of ``pm`` row tiles and ``pn`` panels (1: no split), given
    whether its unsplit layout for :data:`SPLIT_UNITS` workers splits the rows (``rows_split``).

    A weight gradient ``xᵀ g`` has a small C and a long K (the tokens). Unsplit, its few
    panels of B leave the two workers short of work-groups unless the rows are split, and
    each row split copies B's K-long panels again (128 x 320 x 2048: 10 work-groups, each
    copying 512 KiB of B for 11 tiles). Split K instead: each work-group sums one slice of K
    into its own partial C, which :func:`~netcl_lite.ops.reduce.join_rows` adds in slice order (deterministic), with
    alpha and D. Where the rows were not split, the join's launch and pass only cost (up to
    10 %), so those stay whole (benchmarks/results/tried.md, "Weight gradients: the swap and
    the K split")."""
    if n_batch != 1 or not rows_split or k < min_k or pm * pn > max_tiles:
        return 1
    return max(1, min(max_splits, k // slice_k))


#: the most local memory one work-group's slice of B may take (bytes): a longer K is copied in slices
PANEL_BYTES = 1 << 20
#: a work-group takes up to this many panels of B while they fit in this many bytes: each row of A
#: it reads then serves several panels; past 512 KiB they no longer stay in L2 together
#: (benchmarks/results/tried.md, "Several B panels per work-group")
MAX_GROUP_PANELS = 4
GROUP_PANEL_BYTES = 1 << 19


#: cache lines a transposed A read in place may spread over, counted once per column group that
#: reads it (a 2 MiB L2 holds 32768)
A_LINES = 32768


def transposed_in_place(lda: int, k: int, col_groups: int = 1, a_lines: int | None = None) -> bool:
    """Whether the micro-kernel reads a transposed A (k-stride ``lda`` floats) in place rather than
    packing it first (``matmul_pack_a``, one pass over A).

    In place, a tile reads one cache line per k, ``lda`` floats after the last; a stride that is a
    multiple of 2ʲ · 64 bytes can use only 1 in 2ʲ cache sets, and each of the product's
    ``col_groups`` column groups (work-groups' sets of B panels) reads all of A again. So in place
    pays while K · 2ʲ · col_groups stays within :data:`A_LINES`; past it, one packing pass is
    cheaper than the extra misses. Strides of 4 and 8 KiB (1024³, 2048³) therefore always pack
    (benchmarks/results/tried.md, "transposed_in_place")."""
    low = (lda * 4) & -(lda * 4)                 # the largest power of two dividing the stride in bytes
    return k * max(1, low // 64) * col_groups <= (A_LINES if a_lines is None else a_lines)


#: work-items per matmul_packed work-group, whatever the shape: PoCL compiles a kernel anew for
#: every local size it meets, so the items loop over the group's row tiles
GROUP_ITEMS = 16


#: the share of the ideal (all compute units busy to the end) a launch layout must reach; the
#: largest panel count that reaches it wins (each row of A read serves more panels)
LAYOUT_EFFICIENCY = 0.9


def handout_efficiency(works, units: int) -> float:
    """The share of ``units`` workers' time spent working when work-groups of the given ``works``
    (in launch order) are handed out as PoCL's CPU driver does: a free worker takes the next
    ⌈remaining / units⌉ work-groups at once (with 10 groups on 2 workers, one runs groups 0-4,
    the other 5-7, then 8, then 9). Groups of unequal work therefore load the
    workers unevenly when the heavy ones come first, however many there are."""
    free, i, n = [(0, w) for w in range(units)], 0, len(works)
    while i < n:
        t, w = heapq.heappop(free)                # the worker free first takes the next chunk
        take = -(-(n - i) // units)
        heapq.heappush(free, (t + sum(works[i:i + take]), w))
        i += take
    return sum(works) / (units * max(t for t, _ in free)) if n else 1.0


#: row splits :func:`_layout` tries per panel count, at most (each is one hand-out simulation)
MAX_SPLITS_TRIED = 64


def _layout(units: int, pm: int, pn: int, gp_cap: int, n_batch: int, target: float,
            chunked: bool = True) -> tuple[int, int]:
    """(GP, row tiles per work-group) for ``pm`` row tiles and ``pn`` column panels per product.

    A work-group copies its GP panels of B, so it should own many row tiles, and each tile's
    rows of A should serve as many panels as fit (up to ``gp_cap``). But the work-groups must
    also keep every worker busy to the end. On a CPU (``chunked``: PoCL's hand-out,
    :func:`handout_efficiency`, their work counted as tiles × panels) the last column group
    holds ``pn mod GP`` panels, and with few groups the worker that takes the full ones
    finishes last (GP = 4 at 5 panels gives one worker four fifths of a 2048 × 128 × 320
    product). So the largest GP whose rows,
    split into the fewest work-groups, reach ``target`` (:data:`LAYOUT_EFFICIENCY`) wins; rows
    are split until then, or until there are 8 work-groups per unit. If no GP reaches it, the
    most efficient layout seen wins. Elsewhere (a GPU hands out work-groups one by one) GP is
    ``gp_cap`` and rows are split until the last round of work-groups is 85 % full or there
    are 8 per unit."""
    if not chunked:
        groups, splits = -(-pn // gp_cap) * n_batch, 1
        while splits < pm:
            total = splits * groups
            if total >= 8 * units or total / (-(-total // units) * units) >= 0.85:
                break
            splits += 1
        return gp_cap, -(-pm // splits)
    best = (-1.0, 1, pm)
    for gp in range(gp_cap, 0, -1):
        panels = [min(gp, pn - g * gp) for g in range(-(-pn // gp))]
        for splits in range(1, min(pm, MAX_SPLITS_TRIED) + 1):
            tiles = -(-pm // splits)
            rows = [min(tiles, pm - r * tiles) for r in range(-(-pm // tiles))]
            works = [t * p for p in panels for t in rows] * n_batch     # launch order: rows fastest
            efficiency = handout_efficiency(works, units)
            if efficiency >= target:
                return gp, tiles
            if efficiency > best[0]:
                best = (efficiency, gp, tiles)
            if len(works) >= 8 * units:
                break
    return best[1], best[2]
