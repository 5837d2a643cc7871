"""Attention masks on their way to a kernel: the device operand (a boolean array, True = allowed,
plus a causal flag) that every attention kernel takes. The masks themselves are built on the host
by :mod:`netcl_lite.masks`.

Kernels read a mask as ``uchar`` through four element strides, (outer batch,
head, query row, key column), and skip any axis the caller broadcast (stride 0),
so nothing is copied to broadcast it: a causal ``(Tq, Tk)`` mask costs
``Tq × Tk`` bytes for any batch, and a key-padding mask ``(B, 1, 1, Tk)`` costs
``B × Tk`` bytes, never ``B × H × Tq × Tk``. Causal masking is a flag and an
integer: query ``i`` sits at position ``q_start + i`` and sees key ``j`` when
``j <= q_start + i`` (:func:`netcl_lite.masks.query_start`).

Rows with no visible key are refused before launch (softmax over nothing is
undefined). The check works on the compacted mask, so its cost is the mask's own
size plus ``O(batch × heads × Tq)``, never a broadcast ``Tq × Tk`` per head.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..checks import not_masked
from ..masks import query_start
from .operands import i32


class AttentionMask:
    """A validated mask on the device: ``kernel_args`` is what every attention kernel takes after its tensors.

    Built once per forward call and kept by the backward, so the mask is uploaded once.
    """

    def __init__(self, queue, mask, lead: tuple[int, ...], tq: int, tk: int, causal: bool):
        heads = lead[-1] if lead else 1
        n_outer = int(np.prod(lead[:-1], dtype=np.int64)) if lead else 1
        self.q_start = query_start(tq, tk)
        if mask is None:
            if causal and tq > tk:
                raise ValueError(
                    f"causal attention with Tq={tq} > Tk={tk}: queries are aligned to the last keys, so query "
                    f"rows 0..{tq - tk - 1} see no key; pass at least as many keys as queries"
                )
            arr, strides = np.ones((1, 1, 1, 1), np.uint8), (0, 0, 0, 0)
        else:
            arr, strides = compact(mask, lead, tq, tk)
            raise_blocked(blocked_rows(arr, n_outer, heads, tq, tk, self.q_start if causal else None))
        self.array = arr
        self.buffer = cl.Buffer(queue.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=arr)
        self.use_mask, self.strides, self.causal = mask is not None, strides, bool(causal)
        self.kernel_args = (self.buffer, i32(self.use_mask), *map(i32, strides), i32(self.causal), i32(self.q_start))


def compact(mask, lead: tuple[int, ...], tq: int, tk: int) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """``mask`` as a contiguous uint8 array of shape (O, H', R, C) plus its element strides
    (outer, head, row, col); a broadcast axis keeps length 1 and gets stride 0.

    >>> arr, strides = compact(np.ones((2, 1, 1, 5), bool), (2, 4), 3, 5)    # key padding (B, 1, 1, Tk)
    >>> arr.shape, strides
    ((2, 1, 1, 5), (5, 0, 0, 1))
    """
    not_masked("mask", mask)              # np.asarray would use the values under a masked array's mask
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError(f"mask must be a boolean array (True = allowed), got dtype {m.dtype}")
    full = tuple(lead) + (tq, tk)
    try:
        view = np.broadcast_to(m, full)
    except ValueError:
        raise ValueError(f"mask of shape {m.shape} does not broadcast to the scores' shape {full}") from None
    outer = int(np.prod(lead[:-1], dtype=np.int64)) if lead else 1
    heads = lead[-1] if lead else 1
    as4 = view.reshape(outer, heads, tq, tk)       # a view for up to two lead axes (batch, heads)
    keep = [stride != 0 and n > 1 for stride, n in zip(as4.strides, as4.shape)]
    arr = np.ascontiguousarray(as4[tuple(slice(None) if k else slice(0, 1) for k in keep)], dtype=np.uint8)
    o, h, r, c = arr.shape
    strides = (h * r * c if keep[0] else 0, r * c if keep[1] else 0, c if keep[2] else 0, 1 if keep[3] else 0)
    return arr, strides


def blocked_rows(arr: np.ndarray, n_outer: int, heads: int, tq: int, tk: int, q_start: int | None) -> list[tuple[int, int]]:
    """(batch, row) pairs whose query sees no key (the first 8), from the compact (O, H', R, C) mask.

    ``q_start`` is None without a causal mask; with one, row ``i`` sees keys ``j <= q_start + i``,
    so it has a visible key exactly when the first allowed key ``f`` satisfies ``f <= q_start + i``.
    """
    allowed = arr.astype(bool)
    rows = np.arange(tq)
    if q_start is None:
        dead = ~allowed.any(axis=-1)                                        # (O, H', R)
    else:
        first = np.where(allowed.any(axis=-1), allowed.argmax(axis=-1), tk)  # (O, H', R): first allowed key
        dead = first > q_start + rows                                       # (O, H', Tq)
    dead = np.broadcast_to(dead, (dead.shape[0], dead.shape[1], tq))
    found = []
    for o, h, i in np.argwhere(dead)[:8]:
        batch = (o if dead.shape[0] > 1 else 0) * heads + (h if dead.shape[1] > 1 else 0)
        found.append((int(batch), int(i)))
    return found


def raise_blocked(rows) -> None:
    if rows:
        listed = ", ".join(str(r) for r in rows)
        raise ValueError(
            f"all-masked query rows (batch, row): {listed}; give each query at least one allowed key "
            "(a row with no allowed key has no defined softmax)"
        )
