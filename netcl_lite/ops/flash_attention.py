"""``flash_attention``: exact attention by tiled online softmax, never storing ``Tq × Tk``.

Keys and values stream through in tiles of ``block_size`` keys. Each query row
keeps a running maximum ``m``, normalizer ``l`` and output accumulator ``o``;
when a tile raises the maximum, ``l`` and ``o`` are first multiplied by
``exp(m_old - m_new)``. The result equals dense attention up to float32
rounding, with O(T·d) extra memory instead of O(T²).
"""

from __future__ import annotations

import numbers

import numpy as np
import pyopencl as cl

from ..core.kernels import get_kernel
from .attention import check_attention_args
from .masking import device_mask
from .operands import device_empty, f32, finish, i32, pick_queue, round_up, to_device

#: keys per tile when ``block_size`` is None (tuned on the PoCL CPU driver).
DEFAULT_BLOCK = 64
#: query rows per work-item of the tiled kernel.
ROWS = 6
#: the tiled kernel is built for block sizes that are multiples of 16 up to this.
MAX_TILED_BLOCK = 256
KERNELS = ("auto", "tiled", "rows")
LOG2E = 1.4426950408889634


def _check_block(block_size, kernel):
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if block_size is None:
        block = DEFAULT_BLOCK
    elif isinstance(block_size, bool) or not isinstance(block_size, numbers.Integral) or block_size < 1:
        raise ValueError(f"block_size must be a positive int (keys per tile) or None, got {block_size!r}")
    else:
        block = int(block_size)
    tiled_ok = block % 16 == 0 and block <= MAX_TILED_BLOCK
    if kernel == "tiled" and not tiled_ok:
        raise ValueError(f"the tiled kernel needs block_size a multiple of 16 up to {MAX_TILED_BLOCK}, got {block}")
    use_tiled = kernel == "tiled" or (kernel == "auto" and tiled_ok)
    return block, use_tiled


def _local(queue, n):
    """Work-group size along the query axis: tiny groups on CPUs (PoCL runs a group per thread)."""
    return 1 if queue.device.type & cl.device_type.CPU else min(32, n)


def flash_attention(q, k, v, *, mask=None, causal: bool = False, scale=None, block_size=None,
                    return_stats: bool = False, kernel: str = "auto", queue=None):
    """Exact softmax(q kᵀ · scale) v by tiles of ``block_size`` keys (online softmax).

    Shapes as :func:`~netcl_lite.ops.attention`: ``q (..., H, Tq, d)``,
    ``k (..., G, Tk, d)``, ``v (..., G, Tk, dv)`` → ``(..., H, Tq, dv)``; head
    ``h`` reads K/V group ``h // (H // G)`` inside the kernel (no copy per head).
    ``mask`` (boolean, True = allowed, broadcastable to ``(..., H, Tq, Tk)``) and
    ``causal`` (query ``i`` sees key ``j <= i + Tk - Tq``) work as in dense
    attention, and a query with no allowed key raises ``ValueError``.

    ``block_size`` is keys per tile (None → ``DEFAULT_BLOCK``). Multiples of 16
    up to 256 run the tiled kernel (6 query rows per work-item, 16-key register blocks);
    any other size runs ``flash_attention_rows`` (one row per work-item).
    ``kernel="rows"`` or ``"tiled"`` forces one. Extra device memory is O(T·d):
    a d-major copy of K and a padded V, never a ``Tq × Tk`` buffer.

    With ``return_stats=True`` returns ``(out, lse)`` where ``lse`` ``(..., H, Tq)``
    is each row's log-sum-exp of its scaled, allowed scores (``m + log l``),
    what a recomputing backward pass needs.

    >>> out = flash_attention(q, k, v, causal=True, block_size=64)   # doctest: +SKIP
    """
    lead, heads, groups, tq, tk, d, dv, scale = check_attention_args(q, k, v, causal, scale)
    block, use_tiled = _check_block(block_size, kernel)
    n_batch = int(np.prod(lead, dtype=np.int64))
    n_kv = n_batch // heads * groups

    cq, return_tensor = pick_queue(q, k, v, queue=queue)
    mask_buf, use_mask, strides = device_mask(cq, mask, lead, tq, tk, causal)
    tq_, tk_, tv_ = to_device(cq, "q", q), to_device(cq, "k", k), to_device(cq, "v", v)
    out = device_empty(cq, tuple(lead) + (tq, dv))
    lse = device_empty(cq, tuple(lead) + (tq,))
    common = (mask_buf, i32(use_mask), i32(strides[0]), i32(strides[1]), i32(strides[2]), i32(causal), i32(tq), i32(tk))
    if n_batch * tq and use_tiled:
        dv_chunks = max(1, -(-dv // 16))
        tkp = round_up(tk, block)
        options = (f"-DROWS={ROWS}", f"-DTILE={block}", f"-DDV_CHUNKS={dv_chunks}")
        kt, vp = device_empty(cq, (n_kv, tkp, d)), device_empty(cq, (n_kv, dv_chunks * 16, tkp))
        get_kernel(cq.context, "flash_attention.cl", "flash_pack_kv", options)(
            cq, (tkp, n_kv), (16, 1), tk_.buffer, tv_.buffer, kt.buffer, vp.buffer, i32(tk), i32(tkp), i32(d), i32(dv),
        )
        blocks = -(-tq // ROWS)
        local = _local(cq, blocks)
        get_kernel(cq.context, "flash_attention.cl", "flash_attention_tiled", options)(
            cq, (round_up(blocks, local), n_batch), (local, 1),
            tq_.buffer, kt.buffer, vp.buffer, out.buffer, lse.buffer, *common,
            i32(tkp), i32(d), i32(dv), i32(heads), i32(groups), f32(scale * LOG2E),
        )
        cq.finish()  # kt, vp and the mask die with this frame
    elif n_batch * tq:
        local = _local(cq, tq)
        get_kernel(cq.context, "flash_attention.cl", "flash_attention_rows")(
            cq, (round_up(tq, local), n_batch), (local, 1),
            tq_.buffer, tk_.buffer, tv_.buffer, out.buffer, lse.buffer, *common,
            i32(d), i32(dv), i32(heads), i32(groups), f32(scale), i32(block),
        )
        cq.finish()
    out = finish(out, return_tensor, tv_.abs_max)  # a convex combination of values
    return (out, finish(lse, return_tensor)) if return_stats else out
