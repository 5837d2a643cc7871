"""Boolean attention masks on their way to a kernel.

A mask is boolean, True = allowed, broadcastable to ``(..., Tq, Tk)``. Kernels
read it as ``uchar`` through three element strides (batch, row, column). A
query or key axis the caller broadcast gets stride 0 and is never copied, and so
does the whole batch when the mask has none: a causal ``(Tq, Tk)`` mask is
``Tq × Tk`` bytes for any batch, and a padding mask of shape ``(B, 1, 1, Tk)`` is
``B × H × Tk`` bytes, not ``B × H × Tq × Tk``.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl


def compact_mask(mask, lead: tuple[int, ...], tq: int, tk: int) -> tuple[np.ndarray, tuple[int, int, int]]:
    """``mask`` as a contiguous uint8 array plus its (batch, row, col) element strides.

    ``lead`` is the shape in front of ``(Tq, Tk)``; batch index ``b`` runs over
    ``prod(lead)`` in C order.

    >>> arr, strides = compact_mask(np.tril(np.ones((3, 3), bool)), (2,), 3, 3)
    >>> arr.shape, strides
    ((1, 3, 3), (0, 3, 1))
    """
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError(f"mask must be a boolean array (True = allowed), got dtype {m.dtype}")
    full = tuple(lead) + (tq, tk)
    try:
        view = np.broadcast_to(m, full)
    except ValueError:
        raise ValueError(f"mask of shape {m.shape} does not broadcast to the scores' shape {full}") from None
    row_b = view.strides[-2] == 0 or tq == 1
    col_b = view.strides[-1] == 0 or tk == 1
    lead_b = all(s == 0 or n == 1 for s, n in zip(view.strides[:-2], lead))
    sub = view[..., : 1 if row_b else tq, : 1 if col_b else tk]
    if lead_b:
        sub = sub[(0,) * len(lead)] if lead else sub
    rows, cols = sub.shape[-2:]
    arr = np.ascontiguousarray(sub, dtype=np.uint8).reshape(-1, rows, cols)
    strides = (0 if lead_b else rows * cols, 0 if row_b else cols, 0 if col_b else 1)
    return arr, strides


def blocked_rows(arr: np.ndarray, strides, n_batch: int, tq: int, tk: int, causal: bool) -> list[tuple[int, int]]:
    """(batch, row) pairs whose query may see no key at all (first few suffice for an error)."""
    allowed = arr.astype(bool)
    b = n_batch if strides[0] else 1
    allowed = np.broadcast_to(allowed, (b, tq if strides[1] else allowed.shape[1], allowed.shape[2]))
    if causal:
        # Key j is visible to query i when j <= i + (Tk - Tq): a prefix of the row.
        limit = np.arange(tq) + (tk - tq)                       # last visible key per query row
        allowed = np.broadcast_to(allowed, (b, tq, allowed.shape[2]))
        if allowed.shape[2] == 1:                               # column-broadcast mask
            any_row = allowed[:, :, 0] & (limit >= 0)
        else:
            prefix = np.logical_or.accumulate(allowed, axis=-1)
            any_row = np.where(limit >= 0, prefix[:, np.arange(tq), np.clip(limit, 0, tk - 1)], False)
    else:
        any_row = allowed.any(axis=-1)
        any_row = np.broadcast_to(any_row, (b, tq))
    bad = np.argwhere(~any_row)
    return [(int(x), int(y)) for x, y in bad[:8]]


def raise_blocked(rows, what: str = "query rows") -> None:
    if rows:
        listed = ", ".join(str(r) for r in rows)
        raise ValueError(
            f"all-masked {what} (batch, row): {listed}; give each query at least one allowed key "
            "(a row with no allowed key has no defined softmax)"
        )


_ALL_ALLOWED = np.ones((1, 1, 1), np.uint8)


def device_mask(queue, mask, lead, tq: int, tk: int, causal: bool):
    """Validate ``mask`` (may be None) against the scores' shape and upload it.

    Returns ``(buffer, use_mask, (batch, row, col) strides)``; raises when a
    query row would see no key. The caller keeps ``buffer`` alive until its
    kernels finish.
    """
    n_batch = int(np.prod(lead, dtype=np.int64))
    if mask is None:
        if causal and tq > tk:
            raise ValueError(
                f"causal attention with Tq={tq} > Tk={tk}: queries are aligned to the last keys, so query "
                f"rows 0..{tq - tk - 1} see no key; pass at least as many keys as queries"
            )
        arr, strides, use = _ALL_ALLOWED, (0, 0, 0), False
    else:
        arr, strides = compact_mask(mask, lead, tq, tk)
        raise_blocked(blocked_rows(arr, strides, n_batch, tq, tk, causal))
        use = True
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=arr)
    return buf, use, strides
