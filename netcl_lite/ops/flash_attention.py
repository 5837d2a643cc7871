"""``flash_attention``: exact attention by tiled online softmax, never storing ``Tq × Tk``,
forward and backward (``kernels/flash_attention.cl``). Float64 reference:
:func:`netcl_lite.reference.flash_attention` (the same tile loop in float64).

Keys and values stream through in tiles of ``block_size`` keys. Each query row
keeps a running maximum ``m``, normalizer ``ℓ`` and output accumulator ``a``
(Chapter 8's names); when a tile raises the maximum, ``ℓ`` and ``a`` are first multiplied by
``exp(m_old - m_new)``. The result equals dense attention up to float32
rounding, with O(T·d) extra memory instead of O(T²).
"""

from __future__ import annotations


import pyopencl as cl

from ..checks import one_of, positive_int
from ..core.kernels import vector_lanes
from .attention import attention_shapes, check_attention_args
from .attention_mask import AttentionMask
from .operands import OpCall, elements, f32, i32, round_up

#: keys per tile when ``block_size`` is None (tuned on the PoCL CPU driver).
DEFAULT_BLOCK = 64
#: Forward tiling by the device's vector lanes: (rows per register block, blocks of rows per work-item,
#: vectors per row in one pass of the tile products). AVX-512 (32 registers of 16 floats): 6 rows x 4
#: float16 = 24 accumulators, each pass a 6 x 64 block over all of d (the matmul micro-kernel's shape);
#: AVX2 (16 registers of 8): 6 x 2 float8. Blocks of rows share each tile of K and V while it is in L1,
#: so more blocks per item read K and V from memory fewer times; 16 blocks (96 rows) on AVX-512 pay
#: where one head's K and V (2 MiB and more) no longer stay in L2 between passes, and cost nothing
#: at shorter T (benchmarks/results/tried.md, "Flash forward" and "Flash: 16 blocks").
TILING = {16: (6, 16, 4), 8: (6, 4, 2)}
#: Tiles or value widths that are not a multiple of 4 x 16 floats (block_size 32, dv = 20) take 2-vector passes.
TILING_NARROW = {16: (8, 8, 2), 8: (6, 4, 2)}
#: Rows per register block of the tiled backward kernels (2-vector passes): 8 x 2 float16, 6 x 2 float8.
BACKWARD_ROWS = {16: 8, 8: 6}
#: the tiled kernel is built for block sizes that are multiples of 16 up to this.
MAX_TILED_BLOCK = 256
KERNELS = ("auto", "tiled", "rows")
LOG2E = 1.4426950408889634
#: keys (dq) or queries (dk, dv) per tile of the tiled backward kernels.
BACKWARD_TILE = 64


def _check_block(block_size, kernel):
    one_of("kernel", kernel, KERNELS)
    if block_size is None:
        block = DEFAULT_BLOCK
    else:
        block = positive_int("block_size", block_size, "keys per tile, or None")
    tiled_ok = block % 16 == 0 and block <= MAX_TILED_BLOCK
    if kernel == "tiled" and not tiled_ok:
        raise ValueError(f"the tiled kernel needs block_size a multiple of 16 up to {MAX_TILED_BLOCK}, got {block}")
    use_tiled = kernel == "tiled" or (kernel == "auto" and tiled_ok)
    return block, use_tiled


def _local(queue, n):
    """Work-group size along the query axis: tiny groups on CPUs (PoCL runs a group per thread)."""
    return 1 if queue.device.type & cl.device_type.CPU else min(32, n)


def flash_attention(q, k, v, *, mask=None, causal: bool = False, scale=None, block_size=None,
                    return_stats: bool = False, kernel: str = "auto", kv_length=None, queue=None):
    """Exact softmax(q kᵀ · scale) v by tiles of ``block_size`` keys (online softmax).

    Shapes as :func:`~netcl_lite.ops.attention`: ``q (..., H, Tq, d)``,
    ``k (..., G, Tk, d)``, ``v (..., G, Tk, dv)`` → ``(..., H, Tq, dv)``; head
    ``h`` reads K/V group ``h // (H // G)`` inside the kernel (no copy per head).
    ``mask`` (boolean, True = allowed, broadcastable to ``(..., H, Tq, Tk)``) and
    ``causal`` (query ``i`` sees key ``j <= i + Tk - Tq``) work as in dense
    attention, and a query with no allowed key raises ``ValueError``.
    ``kv_length`` uses only the first keys of ``k``/``v`` (a KV cache's filled prefix).

    ``block_size`` is keys per tile (None → ``DEFAULT_BLOCK``). Multiples of 16
    up to 256 run the tiled kernel (blocks of query rows share each tile of keys; see ``TILING``);
    any other size runs ``flash_attention_rows`` (one row per work-item).
    ``kernel="rows"`` or ``"tiled"`` forces one. Extra device memory is O(T·d):
    a d-major copy of K and a padded V, never a ``Tq × Tk`` buffer.

    With ``return_stats=True`` returns ``(out, lse)`` where ``lse`` ``(..., H, Tq)``
    is each row's log-sum-exp of its scaled, allowed scores (``m + log l``),
    what a recomputing backward pass needs.

    >>> q = k = np.eye(2)
    >>> flash_attention(q, k, np.array([[1.0, 0.0], [0.0, 1.0]]), causal=True, scale=1.0).round(6)
    array([[1.      , 0.      ],
           [0.268941, 0.731059]], dtype=float32)
    """
    out, lse, _ = flash_attention_with_mask(q, k, v, mask=mask, causal=causal, scale=scale, block_size=block_size,
                                            kernel=kernel, kv_length=kv_length, queue=queue)
    return (out, lse) if return_stats else out


def flash_attention_with_mask(q, k, v, *, mask=None, causal=False, scale=None, block_size=None, kernel="auto",
                              kv_length=None, queue=None):
    """:func:`flash_attention` returning (out, lse, device mask) for the backward to reuse."""
    lead, heads, groups, tq, tk, kv_rows, d, dv, scale = check_attention_args(q, k, v, causal, scale, kv_length)
    block, use_tiled = _check_block(block_size, kernel)
    n_batch = elements(lead)
    n_kv = n_batch // heads * groups
    call = OpCall("flash_attention", queue=queue, q=q, k=k, v=v)
    m = AttentionMask(call.queue, mask, lead, tq, tk, causal)
    tq_, tk_, tv_ = call.float_input("q"), call.float_input("k"), call.float_input("v")
    out = call.output(tuple(lead) + (tq, dv))
    lse = call.output(tuple(lead) + (tq,))
    status = (call.stream.status, call.seq)
    if n_batch * tq and use_tiled:
        vw = vector_lanes(call.queue.device) if block % 32 == 0 else 8     # a pass takes at least 2 VW keys
        rows, blocks_per_item, np_ = TILING[vw]
        if block % (np_ * vw) or round_up(dv, np_ * vw) > round_up(dv, 2 * vw):
            rows, blocks_per_item, np_ = TILING_NARROW[vw]
        dvp = round_up(dv, np_ * vw)
        tkp = round_up(tk, block)
        options = (f"-DVW={vw}", f"-DROWS={rows}", f"-DGROUPS={blocks_per_item}", f"-DTILE={block}", f"-DDVP={dvp}",
                   f"-DNP={np_}")
        kt, vp = call.scratch("flash.kt", n_kv * tkp * d), call.scratch("flash.vp", n_kv * dvp * tkp)
        _pack(call, tk_.buffer, kt, None, n_kv, tk, kv_rows, tkp, d, 0, options)
        _pack(call, tv_.buffer, None, vp, n_kv, tk, kv_rows, tkp, dv, dvp, options)
        items = -(-tq // (rows * blocks_per_item))
        local = _local(call.queue, items)
        call.launch("flash_attention.cl", "flash_attention_tiled", (round_up(items, local), n_batch), (local, 1),
                    tq_.buffer, kt, vp, out.buffer, lse.buffer, *m.kernel_args,
                    i32(tq), i32(tk), i32(tkp), i32(d), i32(dv), i32(heads), i32(groups), f32(scale * LOG2E),
                    *status, options=options)
    elif n_batch * tq:
        local = _local(call.queue, tq)
        call.launch("flash_attention.cl", "flash_attention_rows", (round_up(tq, local), n_batch), (local, 1),
                    tq_.buffer, tk_.buffer, tv_.buffer, out.buffer, lse.buffer, *m.kernel_args,
                    i32(tq), i32(tk), i32(kv_rows), i32(d), i32(dv), i32(heads), i32(groups), f32(scale), i32(block),
                    *status)
    call.stream.keep(m)
    out, lse = call.result(out, lse, check=[False, False])
    return out, lse, m


def _pack(call, x, xt, xp, n, t_len, x_rows, t_pad, w, w_pad, options) -> None:
    """``flash_pack``: x (n, T, w), rows ``x_rows`` apart, into the d-major panels ``xt`` and/or the
    row-major 16-column panels ``xp`` (``w_pad`` columns), zero-padded to ``t_pad`` rows."""
    blocks = t_pad // 16                       # one work-item per 16 rows (t_pad is a multiple of 16)
    local = 4 if blocks % 4 == 0 else 2 if blocks % 2 == 0 else 1
    call.launch("flash_attention.cl", "flash_pack", (blocks, n), (local, 1), x, xt if xt is not None else xp,
                xp if xp is not None else xt, i32(t_len), i32(x_rows), i32(t_pad), i32(w), i32(w_pad),
                i32(xt is not None), i32(xp is not None), options=options)


def backward_uses_tiles(kernel: str, d: int, dv: int) -> bool:
    """Whether the backward runs the tiled kernels (any head width) or the row kernels."""
    return one_of("kernel", kernel, KERNELS) != "rows"


def flash_attention_backward(g, q, k, v, out, lse, mask: AttentionMask, scale: float, kernel: str = "auto"):
    """(dq, dk, dv) of flash attention, recomputing each weight from q, k and the saved
    log-sum-exp, P_ij = exp(s_ij − lse_i): one pass over keys per query row for dQ, one over
    queries per key row for dK and dV (S115's recomputation). Tensors in, Tensors out."""
    lead, heads, groups, tq, tk, d, dv = attention_shapes(q.shape, k.shape, v.shape)
    n_batch = elements(lead)
    n_kv = n_batch // heads * groups
    tiled = backward_uses_tiles(kernel, d, dv)
    call = OpCall("flash_attention backward", g=g, q=q, k=k, v=v)
    dq, dk, dvv = call.output(q.shape), call.output(k.shape), call.output(v.shape)
    heads_args = (i32(heads), i32(groups))
    status = (call.stream.status, call.seq)
    if tiled:
        vw = vector_lanes(call.queue.device)
        rows = BACKWARD_ROWS[vw]
        tile = BACKWARD_TILE
        dp_, dvp = round_up(d, 2 * vw), round_up(dv, 2 * vw)
        opts = (f"-DVW={vw}", f"-DROWS={rows}", f"-DTILE={tile}", f"-DDP={dp_}", f"-DDVP={dvp}")
        tqp, tkp = round_up(tq, tile), round_up(tk, tile)
        panel = lambda name, n_floats: call.scratch(f"flash.backward.{name}", n_floats)
        kt, kp, vt = panel("kt", n_kv * tkp * d), panel("kp", n_kv * dp_ * tkp), panel("vt", n_kv * tkp * dv)
        qt, qp = panel("qt", n_batch * tqp * d), panel("qp", n_batch * dp_ * tqp)
        gt, gp = panel("gt", n_batch * tqp * dv), panel("gp", n_batch * dvp * tqp)
        lpad = panel("lse", n_batch * tqp)
        _pack(call, k.buffer, kt, kp, n_kv, tk, tk, tkp, d, dp_, opts)
        _pack(call, v.buffer, vt, None, n_kv, tk, tk, tkp, dv, 0, opts)
        _pack(call, q.buffer, qt, qp, n_batch, tq, tq, tqp, d, dp_, opts)
        _pack(call, g.buffer, gt, gp, n_batch, tq, tq, tqp, dv, dvp, opts)
        delta = panel("delta", n_batch * tqp)
        call.launch("flash_attention.cl", "flash_attention_backward_dq_tiled", (-(-tqp // rows), n_batch), (1, 1),
                    q.buffer, out.buffer, g.buffer, lse.buffer, kt, vt, kp, dq.buffer, delta, lpad,
                    *mask.kernel_args, i32(tq), i32(tk), i32(tqp), i32(tkp), i32(d), i32(dv), *heads_args,
                    f32(scale), *status, options=opts)
        call.launch("flash_attention.cl", "flash_attention_backward_dkv_tiled", (-(-tk // rows), n_kv), (1, 1),
                    k.buffer, v.buffer, qt, gt, qp, gp, delta, lpad, dk.buffer, dvv.buffer,
                    *mask.kernel_args, i32(tq), i32(tk), i32(tqp), i32(d), i32(dv), *heads_args, f32(scale),
                    *status, options=opts)
    else:
        opts = (f"-DMAX_D={1 << max(4, (max(d, dv) - 1).bit_length())}",)
        dims = (i32(tq), i32(tk), i32(d), i32(dv), *heads_args)
        delta = call.scratch("flash.backward.delta", n_batch * tq)      # D_i = dO_i · O_i, for the dkv pass
        call.launch("flash_attention.cl", "flash_attention_backward_dq", (round_up(tq, 8), n_batch), (8, 1),
                    q.buffer, k.buffer, v.buffer, out.buffer, g.buffer, lse.buffer, dq.buffer, delta,
                    *mask.kernel_args, *dims, i32(n_batch), f32(scale), *status, options=opts)
        call.launch("flash_attention.cl", "flash_attention_backward_dkv", (round_up(tk, 8), n_kv), (8, 1),
                    q.buffer, k.buffer, v.buffer, g.buffer, lse.buffer, delta, dk.buffer, dvv.buffer,
                    *mask.kernel_args, *dims, i32(n_kv), f32(scale), *status, options=opts)
    call.stream.keep(mask)
    return call.result(dq, dk, dvv, check=[False, False, False])
