"""The merge loop of many chunks at once, as an OpenCL kernel (``kernels/bpe.cl``).

:class:`BPETokenizer` encodes each new chunk with the Python loop of
:mod:`~netcl_lite.text.byte_pair` (``chunk_encoder``), the readable reference. When one
call brings enough new bytes (``kernel_min_bytes``), it hands all its new chunks to
:class:`DeviceMerger` instead: they are packed into one byte buffer with offsets, one
work-item merges each chunk by the same rule, and the ids come back in chunk order to
fill the chunk cache. The results are identical to the Python loop's; the tests compare
them on every tokenizer test text, cl100k_base's held-out checks and random Unicode.

The merge table lives on the device: an open-addressed hash from ``(left id, right id)``
to ``(priority, merged id)``, built here once per tokenizer with NumPy (:func:`hash_table`)
and kept with it, plus a 256 x 256 table of the byte pairs every chunk starts from.

    >>> from netcl_lite.text.byte_pair import rank_pair_table
    >>> pairs = rank_pair_table([bytes([b]) for b in range(256)] + [b"ab", b"abc"])
    >>> DeviceMerger(range(256), pairs).merge([b"abc", b"cab", b"x"])
    [[257], [99, 256], [120]]
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

from netcl_lite.text.byte_pair import PairTable

__all__ = ["MAX_CHUNK", "DeviceMerger", "hash_table", "home_slots"]

#: The longest chunk (in bytes) the kernel merges; longer chunks stay in Python
#: (its O(n log n) heap; the kernel's loop is O(n²) in private arrays of this size).
MAX_CHUNK = 256
EMPTY = 0xFFFFFFFF  # an empty slot's left id; the priority of a pair that never merges
LOCAL_SIZE = 64     # work-items per group (explicit: PoCL picks huge groups otherwise)


def home_slots(left: np.ndarray, right: np.ndarray, shift: int) -> np.ndarray:
    """The slot each pair's probe starts at: ``bpe_home`` of ``kernels/bpe.cl`` in uint32 NumPy.

    >>> home_slots(np.array([1, 1]), np.array([2, 3]), 28).tolist()   # 16 home slots: 0..15
    [6, 15]
    """
    left, right = np.asarray(left, np.uint32), np.asarray(right, np.uint32)
    h = (left * np.uint32(0x9E3779B1)) ^ (right * np.uint32(0x85EBCA77))
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x7FEB352D)
    return h >> np.uint32(shift)


def pair_entries(pairs: PairTable, listed: bool) -> tuple[np.ndarray, ...]:
    """``(left, right, priority, merged)`` arrays of every pair in a pair table.

    ``listed``: the table follows a merge list (value = position << 32 | id; the priority is the
    position); otherwise tiktoken's rule (value = id = rank, the priority).
    """
    sizes = np.fromiter(map(len, pairs), np.int64, len(pairs))
    total = int(sizes.sum())
    left = np.repeat(np.arange(len(pairs), dtype=np.uint32), sizes)
    right = np.fromiter(chain.from_iterable(pairs), np.uint32, total)           # a dict iterates its keys
    values = np.fromiter(chain.from_iterable(map(dict.values, pairs)), np.uint64, total)
    merged = (values & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    priority = (values >> np.uint64(32)).astype(np.uint32) if listed else merged
    return left, right, priority, merged


def hash_table(left, right, priority, merged) -> tuple[np.ndarray, int]:
    """Linear-probing hash table of the pairs, ``(slots, shift)``: ``slots`` is an
    ``(n_slots, 4)`` uint32 array of ``(left, right, priority, merged)``, empty slots
    ``(EMPTY, EMPTY, EMPTY, 0)``, and ``shift`` is the kernel's hash shift.

    At most half the 2^k home slots are taken. Pairs are placed in order of their home slot,
    each at the first free slot at or after it, so no probe ever wraps around; the table
    extends past the last home slot as far as the last pair lands, plus one empty slot,
    where every probe stops.

    >>> slots, shift = hash_table(np.array([1, 1]), np.array([2, 3]), np.array([5, 6]), np.array([7, 8]))
    >>> shift, len(slots), slots[1].tolist(), slots[3].tolist(), slots[4].tolist()
    (30, 5, [1, 2, 5, 7], [1, 3, 6, 8], [4294967295, 4294967295, 4294967295, 0])
    """
    n = len(left)
    bits = max(1, int(2 * max(n, 1) - 1).bit_length())   # 2^bits >= 2n
    shift = 32 - bits
    home = home_slots(left, right, shift).astype(np.int64)
    order = np.argsort(home, kind="stable")
    ranked = home[order] - np.arange(n)
    position = np.maximum.accumulate(ranked) + np.arange(n) if n else ranked
    n_slots = max(1 << bits, int(position[-1]) + 1 if n else 0) + 1
    slots = np.empty((n_slots, 4), np.uint32)
    slots[:, :3] = EMPTY
    slots[:, 3] = 0
    slots[position] = np.stack([np.asarray(a, np.uint32)[order] for a in (left, right, priority, merged)], axis=1)
    return slots, shift


class DeviceMerger:
    """Merges many chunks in one launch of ``bpe_merge_chunks``; keeps the tables on one device.

    ``byte_ids[b]``: the id of byte ``b``; ``pairs``: the tokenizer's pair table
    (:mod:`~netcl_lite.text.byte_pair`); ``listed``: whether it follows a merge list.
    ``device``: a :class:`netcl_lite.core.device.Device` (default: ``netcl_lite.device()``).
    """

    def __init__(self, byte_ids: Sequence[int], pairs: PairTable, listed: bool = False, device=None):
        import pyopencl as cl

        from netcl_lite.core.device import device as default_device
        from netcl_lite.core.kernels import get_kernel

        self._cl = cl
        self.device = device if device is not None else default_device()
        context = self.device.context
        byte_ids = np.asarray(list(byte_ids), np.uint32)
        if byte_ids.shape != (256,):
            raise ValueError(f"byte_ids must hold the ids of the 256 byte values, got {byte_ids.shape[0]}")
        left, right, priority, merged = pair_entries(pairs, listed)
        slots, self._shift = hash_table(left, right, priority, merged)
        self._n_slots = len(slots)
        # the byte-pair table: (priority, merged) of every pair of bytes a, b at 256 * a + b
        byte_of = np.full(max(len(pairs), int(byte_ids.max()) + 1), -1, np.int64)
        byte_of[byte_ids] = np.arange(256)
        keep = np.flatnonzero((byte_of[left] >= 0) & (byte_of[right] >= 0))   # every id < len(pairs)
        byte_pairs = np.empty((65536, 2), np.uint32)
        byte_pairs[:, 0], byte_pairs[:, 1] = EMPTY, 0
        at = byte_of[left[keep]] * 256 + byte_of[right[keep]]
        byte_pairs[at, 0], byte_pairs[at, 1] = priority[keep], merged[keep]
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        self._byte_ids = cl.Buffer(context, flags, hostbuf=byte_ids)
        self._byte_pairs = cl.Buffer(context, flags, hostbuf=byte_pairs)
        self._table = cl.Buffer(context, flags, hostbuf=slots)
        self._kernel = get_kernel(context, "bpe.cl", "bpe_merge_chunks", (f"-DBPE_MAX_CHUNK={MAX_CHUNK}",))
        self.table_bytes = slots.nbytes + byte_pairs.nbytes

    def merge(self, pieces: Sequence[bytes]) -> list[list[int]]:
        """The ids of each piece (UTF-8 bytes of a chunk, 1..``MAX_CHUNK`` bytes), in order."""
        cl, queue = self._cl, self.device.queue
        if not pieces:
            return []
        lengths = np.fromiter(map(len, pieces), np.uint32, len(pieces))
        if lengths.min() == 0 or lengths.max() > MAX_CHUNK:
            bad = int(np.flatnonzero((lengths == 0) | (lengths > MAX_CHUNK))[0])
            raise ValueError(f"pieces[{bad}] has {lengths[bad]} bytes; the kernel merges pieces of "
                             f"1..{MAX_CHUNK} bytes (longer ones go to the Python loop)")
        starts = np.zeros(len(pieces) + 1, np.uint32)
        np.cumsum(lengths, out=starts[1:])
        text = np.frombuffer(b"".join(pieces), np.uint8)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        context = self.device.context
        text_buf = cl.Buffer(context, flags, hostbuf=text)
        starts_buf = cl.Buffer(context, flags, hostbuf=starts)
        out = np.empty(len(text), np.uint32)
        counts = np.empty(len(pieces), np.uint32)
        out_buf = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, out.nbytes)
        counts_buf = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, counts.nbytes)
        n = len(pieces)
        global_size = -(-n // LOCAL_SIZE) * LOCAL_SIZE
        self._kernel(queue, (global_size,), (LOCAL_SIZE,), text_buf, starts_buf, n, self._byte_ids,
                     self._byte_pairs, self._table, self._n_slots, self._shift, out_buf, counts_buf)
        cl.enqueue_copy(queue, counts, counts_buf, is_blocking=False)
        cl.enqueue_copy(queue, out, out_buf, is_blocking=True)   # the buffers above live until here
        if counts.min() == 0:
            raise RuntimeError("bpe_merge_chunks left a chunk unmerged (count 0); this is a bug")
        flat, begin, count = out.tolist(), starts.tolist(), counts.tolist()
        return [flat[b:b + k] for b, k in zip(begin, count)]
