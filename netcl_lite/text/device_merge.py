"""The merge loop of many chunks at once, as an OpenCL kernel (``kernels/bpe.cl``).

:class:`BPETokenizer` encodes each new chunk with the Python loop of
:mod:`~netcl_lite.text.byte_pair` (``chunk_encoder``), the readable reference. When one
call brings enough new bytes (``kernel_min_bytes``), it hands all its new chunks to
:class:`DeviceMerger` instead: they are packed into one byte buffer with offsets, one
work-item merges each chunk by the same rule, and the ids come back in chunk order to
fill the chunk cache. The results are identical to the Python loop's; the tests compare
them on every tokenizer test text, cl100k_base's held-out checks and random Unicode.

The merge table lives on the device: an open-addressed hash from ``(left id, right id)``
to ``(priority, merged id)``, plus a 256 x 256 table of the byte pairs every chunk starts
from. Both are built there, once per tokenizer, and kept with it: under tiktoken's rule
from the tokens' bytes (every split of a token into two tokens), under a merge list from
the list. (Walking the Python pair table's 233,000 entries of cl100k_base into arrays
took ~0.1 s; the device builds the table from the packed tokens in a few milliseconds.)
:func:`pair_entries` is the host's account of the same table, for the tests.

    >>> tokens = [bytes([b]) for b in range(256)] + [b"ab", b"abc"]
    >>> DeviceMerger(range(256), tokens=tokens).merge([b"abc", b"cab", b"x"])
    [(257,), (99, 256), (120,)]
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import accumulate
from operator import add

import numpy as np

from netcl_lite.text.byte_pair import PairTable

__all__ = ["MAX_CHUNK", "MAX_ID", "DeviceMerger", "home_slots", "pair_entries"]

#: The longest chunk (in bytes) the kernel merges; longer chunks stay in Python
#: (its O(n log n) heap; the kernel's loop is O(n²) in private arrays of this size).
MAX_CHUNK = 256
EMPTY = 0xFFFFFFFF  # an empty slot; the priority of a pair that never merges
#: The largest token id the device table holds (a slot packs two 21-bit ids; all ones marks empty).
MAX_ID = (1 << 21) - 2
LOCAL_SIZE = 64     # work-items per group (explicit: PoCL picks huge groups otherwise)


def home_slots(left, right, shift: int) -> np.ndarray:
    """The slot each pair's probe starts at: ``bpe_home`` of ``kernels/bpe.cl`` in uint32 NumPy.

    >>> home_slots(np.array([1, 1]), np.array([2, 3]), 28).tolist()   # 16 slots: 0..15
    [6, 15]
    """
    left, right = np.asarray(left, np.uint32), np.asarray(right, np.uint32)
    h = (left * np.uint32(0x9E3779B1)) ^ (right * np.uint32(0x85EBCA77))
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x7FEB352D)
    return h >> np.uint32(shift)


def pair_entries(pairs: PairTable, listed: bool) -> set[tuple[int, int, int, int]]:
    """``{(left, right, priority, merged)}`` of every pair in a Python pair table.

    ``listed``: the table follows a merge list (value = position << 32 | id; the priority is the
    position); otherwise tiktoken's rule (value = id = rank, also the priority).

    >>> from netcl_lite.text.byte_pair import listed_pair_table
    >>> sorted(pair_entries(listed_pair_table([(0, 1, 5), (5, 0, 6)]), listed=True))
    [(0, 1, 0, 5), (5, 0, 1, 6)]
    """
    out = set()
    for left, row in enumerate(pairs):
        for right, value in row.items():
            merged = value & 0xFFFFFFFF
            out.add((left, right, value >> 32 if listed else merged, merged))
    return out


def _table_bits(n_pairs: int) -> int:
    return max(1, int(2 * max(n_pairs, 1) - 1).bit_length())   # 2^bits >= 2 n_pairs: at most half full


class DeviceMerger:
    """Merges many chunks in one launch of ``bpe_merge_chunks``; keeps the tables on one device.

    ``byte_ids[b]``: the id of byte ``b``. Then exactly one of ``tokens`` (tiktoken's rule:
    the bytes of each token, index = rank = id) or ``merges`` (Hugging Face's rule:
    ``(left, right, merged)`` in priority order). ``device``: a
    :class:`netcl_lite.core.device.Device` (default: ``netcl_lite.device()``). ``n_pairs``
    (with ``tokens``): how many pairs the rule makes, when known (the Python pair table's
    size): the table is sized by it and the build checked against it; otherwise it is
    sized for every split of every token.
    """

    def __init__(self, byte_ids: Sequence[int], *, tokens: Sequence[bytes] | None = None,
                 merges: Sequence[tuple[int, int, int]] | None = None, n_pairs: int | None = None, device=None):
        import pyopencl as cl

        from netcl_lite.core.device import device as default_device
        from netcl_lite.core.kernels import get_kernel, get_program

        if (tokens is None) == (merges is None):
            raise TypeError("DeviceMerger: pass exactly one of tokens (tiktoken's rule) or merges (a merge list)")
        self._cl = cl
        self.device = device if device is not None else default_device()
        context, queue = self.device.context, self.device.queue
        byte_ids = np.asarray(list(byte_ids), np.int64)
        if byte_ids.shape != (256,):
            raise ValueError(f"byte_ids must hold the ids of the 256 byte values, got {byte_ids.shape[0]}")
        largest = int(byte_ids.max())
        if tokens is not None:
            largest = max(largest, len(tokens) - 1)
        else:
            merges = np.asarray(merges, np.int64).reshape(-1, 3)
            largest = max(largest, int(merges.max(initial=0)))
        if largest > MAX_ID or byte_ids.min() < 0:
            raise ValueError(f"DeviceMerger: token ids must lie in 0..{MAX_ID} (the table packs a pair into "
                             f"8 bytes), got {largest}; such a tokenizer stays on the Python loop")
        byte_ids = byte_ids.astype(np.uint32)
        options = (f"-DBPE_MAX_CHUNK={MAX_CHUNK}",)
        kernel = lambda name: get_kernel(context, "bpe.cl", name, options)   # noqa: E731
        mf = cl.mem_flags
        upload = lambda array: cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=array)  # noqa: E731
        inserted = np.zeros(1, np.uint32)
        inserted_buf = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=inserted)
        keep = []                                           # buffers the build uses, alive until it ends
        if tokens is not None:
            lengths = list(map(len, tokens))
            offsets = array("I", accumulate(lengths, initial=0))
            blob = b"".join(tokens)
            expected = n_pairs
            bits = _table_bits(n_pairs if n_pairs is not None else offsets[-1] - len(tokens))
            index_bits = _table_bits(len(tokens))
            index = cl.Buffer(context, mf.READ_WRITE, 4 << index_bits)
            cl.enqueue_fill_buffer(queue, index, np.uint32(EMPTY), 0, 4 << index_bits)
            bytes_buf, offsets_buf = upload(blob), upload(offsets)
            keep += [index, bytes_buf, offsets_buf]
            n = len(tokens)
            grid = (-(-n // LOCAL_SIZE) * LOCAL_SIZE,)
            kernel("bpe_index_tokens")(queue, grid, (LOCAL_SIZE,), bytes_buf, offsets_buf, n, index,
                                       (1 << index_bits) - 1)
            build = lambda table, shift: kernel("bpe_rank_pairs")(  # noqa: E731
                queue, grid, (LOCAL_SIZE,), bytes_buf, offsets_buf, n, index, (1 << index_bits) - 1,
                table, shift, inserted_buf)
        else:
            merged = merges.astype(np.uint32)
            expected, bits = len(merged), _table_bits(len(merged))
            merges_buf = upload(merged if len(merged) else np.zeros(3, np.uint32))
            keep.append(merges_buf)
            n = len(merged)
            build = lambda table, shift: kernel("bpe_listed_pairs")(  # noqa: E731
                queue, (max(1, -(-n // LOCAL_SIZE)) * LOCAL_SIZE,), (LOCAL_SIZE,), merges_buf, n, table, shift,
                inserted_buf)
        self._shift = 32 - bits
        self._table = cl.Buffer(context, mf.READ_WRITE, 8 << bits)
        cl.enqueue_fill_buffer(queue, self._table, np.uint32(EMPTY), 0, 8 << bits)
        build(self._table, self._shift)
        self._byte_ids = upload(byte_ids)
        self._listed = tokens is None        # then merged_of[priority] is the merged id
        self._merged_host = merged[:, 2].copy() if self._listed and n else np.zeros(1, np.uint32)
        self._merged_of = upload(self._merged_host)
        self._byte_pairs = cl.Buffer(context, mf.READ_WRITE, 4 * 65536)
        kernel("bpe_byte_pairs")(queue, (65536,), (LOCAL_SIZE,), self._byte_ids, self._table, self._shift,
                                 self._byte_pairs)
        cl.enqueue_copy(queue, inserted, inserted_buf, is_blocking=True)
        self.n_pairs = int(inserted[0])
        if expected is not None and self.n_pairs != expected:
            raise RuntimeError(f"the device table holds {self.n_pairs} of {expected} pairs; this is a bug")
        if self.n_pairs > 1 << (bits - 1):
            raise RuntimeError(f"{self.n_pairs} pairs overfill a table of {1 << bits} slots; this is a bug")
        # its own kernel object (not the shared one): the table's arguments are set once, here
        self._merge = cl.Kernel(get_program(context, "bpe.cl", options), "bpe_merge_chunks")
        self._merge.set_arg(3, self._byte_ids)
        self._merge.set_arg(4, self._byte_pairs)
        self._merge.set_arg(5, self._table)
        self._merge.set_arg(6, np.uint32(self._shift))
        self._merge.set_arg(7, self._merged_of)
        self._merge.set_arg(8, np.uint32(self._listed))
        self.table_bytes = (8 << bits) + 4 * 65536

    def table(self) -> np.ndarray:
        """The device's hash table, ``(2^k, 2)`` uint32 slots ``(x, y)`` as ``kernels/bpe.cl`` packs them."""
        out = np.empty(((0xFFFFFFFF >> self._shift) + 1, 2), np.uint32)
        self._cl.enqueue_copy(self.device.queue, out, self._table, is_blocking=True)
        return out

    def pairs(self) -> set[tuple[int, int, int, int]]:
        """``{(left, right, priority, merged)}`` read back from the device table (compare :func:`pair_entries`)."""
        slots = self.table().astype(np.int64)
        slots = slots[slots[:, 0] != EMPTY]
        left = slots[:, 0] >> 21 | (slots[:, 1] & 0x3FF) << 11
        right, priority = slots[:, 0] & 0x1FFFFF, slots[:, 1] >> 10
        merged = self._merged_host[priority] if self._listed else priority
        return set(zip(left.tolist(), right.tolist(), priority.tolist(), merged.tolist()))

    def merge(self, pieces: Sequence[bytes]) -> list[tuple[int, ...]]:
        """The ids of each piece (UTF-8 bytes of a chunk, 1..``MAX_CHUNK`` bytes), in order."""
        if not pieces:
            return []
        cl, queue, context = self._cl, self.device.queue, self.device.context
        lengths = list(map(len, pieces))     # plain Python: a call's fixed cost counts (threshold)
        if min(lengths) == 0 or max(lengths) > MAX_CHUNK:
            bad = next(i for i, k in enumerate(lengths) if not 0 < k <= MAX_CHUNK)
            raise ValueError(f"pieces[{bad}] has {lengths[bad]} bytes; the kernel merges pieces of "
                             f"1..{MAX_CHUNK} bytes (longer ones go to the Python loop)")
        n = len(pieces)
        starts = array("I", accumulate(lengths, initial=0))
        total = starts[-1]
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        text_buf = cl.Buffer(context, flags, hostbuf=b"".join(pieces))
        starts_buf = cl.Buffer(context, flags, hostbuf=starts)
        out = np.empty(total + n, np.uint32)                      # ids, then each chunk's count
        out_buf = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, out.nbytes)
        kernel = self._merge                                      # this merger's own kernel object
        kernel.set_arg(0, text_buf)
        kernel.set_arg(1, starts_buf)
        kernel.set_arg(2, np.uint32(n))
        kernel.set_arg(9, out_buf)
        cl.enqueue_nd_range_kernel(queue, kernel, (-(-n // LOCAL_SIZE) * LOCAL_SIZE,), (LOCAL_SIZE,))
        cl.enqueue_copy(queue, out, out_buf, is_blocking=True)   # the buffers above live until here
        flat = tuple(out.tolist())                                # a tuple's slices are tuples
        counts = flat[total:]
        if min(counts) == 0:
            raise RuntimeError("bpe_merge_chunks left a chunk unmerged (count 0); this is a bug")
        return [flat[b:e] for b, e in zip(starts, map(add, starts, counts))]
