"""The merge loop of many chunks at once, as an OpenCL kernel (``kernels/bpe.cl``).

:class:`BPETokenizer` encodes each new chunk with the Python loop of
:mod:`~netcl_lite.text.byte_pair` (``chunk_encoder``), the readable reference. When one
call brings enough new bytes (``kernel_min_bytes``), it hands all its new chunks to
:class:`DeviceMerger` instead: they are packed into one byte buffer with offsets, one
work-item merges each chunk by the same rule, and the ids come back in chunk order to
fill the chunk cache. The results are identical to the Python loop's; the tests compare
them on every tokenizer test text, cl100k_base's held-out checks and random Unicode.

For GPT-4's pattern under tiktoken's rule, :meth:`DeviceMerger.merge_text` takes a whole call
instead: one work-item splits the UTF-8 text as the pattern does (:meth:`DeviceMerger.split_text`
alone; each code point's class from :func:`~netcl_lite.text.patterns.code_point_classes`), each
different chunk is merged once (the call's chunks claim their bytes in a table on the device),
and one work-item gathers the ids; the tokenizer sends a call there from
``kernel_text_min_bytes`` bytes, skipping its chunk cache.

The tables live on the device, built there once per tokenizer and kept with it, plus a
256 x 256 table of the byte pairs every chunk starts from:

* under tiktoken's rule (two tokens merge when their joined bytes are a token, at its rank),
  an open-addressed hash of the tokens by their bytes (:func:`token_slots` is its slot in
  NumPy). A work-item carries each of its tokens' hash, so asking whether two neighbours merge
  is one multiply-add and a probe, and a probe that matches compares the bytes. Building it
  is one pass over the tokens, several times cheaper than a hash of every pair that splits a
  token (233,000 for cl100k_base), and the merges cost no more (figures:
  ``benchmarks/results/tokenizer.md``);
* under a merge list (a ``tokenizer.json``), an open-addressed hash from ``(left id, right
  id)`` to the merge's position, its priority (:func:`home_slots`; :func:`pair_entries` is
  the host's account of the same table, for the tests).

    >>> tokens = [bytes([b]) for b in range(256)] + [b"ab", b"abc"]
    >>> DeviceMerger(range(256), tokens=tokens).merge([b"abc", b"cab", b"x"])
    [(257,), (99, 256), (120,)]
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Sequence
from itertools import accumulate, repeat
from operator import mul
from struct import Struct
from typing import NamedTuple

import numpy as np

from netcl_lite.text.byte_pair import PairTable

__all__ = ["MAX_CHUNK", "MAX_ID", "DeviceMerger", "PackedTokens", "home_slots", "pack_tokens", "pair_entries",
           "token_hashes", "token_slots"]

#: The longest chunk (in bytes) the kernel merges; longer chunks stay in Python
#: (its O(n log n) heap; the kernel's loop is O(n²) in private arrays of this size).
MAX_CHUNK = 256
EMPTY = 0xFFFFFFFF  # an empty slot; the priority of a pair that never merges
#: The largest token id the device table holds (a slot packs two 21-bit ids; all ones marks empty).
MAX_ID = (1 << 21) - 2
#: The largest priority (a merge list's position) a slot holds: 22 bits.
MAX_PRIORITY = (1 << 22) - 1
LOCAL_SIZE = 64     # work-items per group (explicit: PoCL picks huge groups otherwise)
#: The longest text ``merge_text`` takes: its buffers need ~33 bytes of device memory a byte of
#: text. The tokenizer encodes a longer call on the host.
MAX_TEXT_BYTES = 1 << 24
#: A text of up to this many bytes is split, merged and gathered in one launch of one work-group
#: (``DeviceMerger.merge_text``); a longer one spreads its merges over many work-groups.
ONE_GROUP_BYTES = 1 << 16
_KEPT_BYTES = 1 << 19   # the largest scratch buffer kept between calls (`seen` and `out` for 64 KiB of text)
_ID_STRUCTS = [Struct(f"={k}I") for k in range(MAX_CHUNK + 1)]   # k native uint32: a chunk of k ids


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


P = 0x01000193   # the polynomial hash's base (BPE_P)
_POWERS = np.array([pow(P, k, 1 << 32) for k in range(MAX_CHUNK + 1)], np.uint32)   # P^k mod 2^32
_PAIR_BYTES = np.arange(65536, dtype=">u2").tobytes()   # every byte pair: a, b at 2 * (256 a + b)


def token_hashes(tokens: Sequence[bytes]) -> np.ndarray:
    """Each token's polynomial hash, sum of ``b[i] * P^(n-1-i)`` mod 2^32 (as ``kernels/bpe.cl``).

    >>> token_hashes([b"a", b"ab"]).tolist() == [97, (97 * P + 98) % 2**32]
    True
    """
    out = np.zeros(len(tokens), np.uint64)
    for i, token in enumerate(tokens):
        h = 0
        for b in token:
            h = (h * P + b) & 0xFFFFFFFF
        out[i] = h
    return out.astype(np.uint32)


def token_slots(hashes, lengths, mask: int) -> np.ndarray:
    """The slot each token's probe starts at: ``bpe_mix(h, n) & mask`` of ``kernels/bpe.cl`` in NumPy.

    >>> token_slots([97], [1], 15).tolist()
    [1]
    """
    h = np.asarray(hashes, np.uint32) ^ (np.asarray(lengths, np.uint32) * np.uint32(0x9E3779B1))
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x7FEB352D)
    h ^= h >> np.uint32(15)
    h *= np.uint32(0x846CA68B)
    h ^= h >> np.uint32(16)
    return h & np.uint32(mask)


class PackedTokens(NamedTuple):
    """A vocabulary's tokens in one buffer: token ``t`` is ``blob[offsets[t]:offsets[t + 1]]``."""

    blob: bytes
    offsets: np.ndarray      # uint32, one more than the tokens


def pack_tokens(tokens: Sequence[bytes]) -> PackedTokens:
    """Pack the tokens (index = id) as the index build reads them. A tokenizer packs its tokens
    when it loads them, while they are in the CPU's caches: for cl100k_base that costs about
    10 ms, a small part of the load, and packing them in the first call that launches the kernel,
    from 100,000 bytes objects out of the caches, costs more (``benchmarks/results/tokenizer.md``).

    >>> pack_tokens([b"a", b"bc"])
    PackedTokens(blob=b'abc', offsets=array([0, 1, 3], dtype=uint32))
    """
    offsets = np.zeros(len(tokens) + 1, np.uint32)
    np.cumsum(np.fromiter(map(len, tokens), np.uint32, len(tokens)), out=offsets[1:])
    return PackedTokens(b"".join(tokens), offsets)


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
    the bytes of each token, index = rank = id, all distinct as a vocabulary's are; or the
    same, packed by :func:`pack_tokens`) or
    ``merges`` (Hugging Face's rule: ``(left, right, merged)`` in priority order). ``device``:
    a :class:`netcl_lite.core.device.Device` (default: ``netcl_lite.device()``).
    """

    def __init__(self, byte_ids: Sequence[int], *, tokens: Sequence[bytes] | None = None,
                 merges: Sequence[tuple[int, int, int]] | None = None, device=None):
        import pyopencl as cl

        from netcl_lite.core import forking
        from netcl_lite.core.device import device as default_device
        from netcl_lite.core.kernels import get_kernel, get_program

        forking.check()          # a forked child: its blocking reads would wait for ever
        self._forking = forking
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
            tokens = tokens if isinstance(tokens, PackedTokens) else pack_tokens(tokens)
            largest = max(largest, len(tokens.offsets) - 2)
        else:
            merges = np.asarray(merges, np.int64).reshape(-1, 3)
            largest = max(largest, int(merges.max(initial=0)))
            if len(merges) > MAX_PRIORITY + 1:
                raise ValueError(f"DeviceMerger: {len(merges)} merges; the table packs a merge's position in "
                                 f"22 bits (at most {MAX_PRIORITY + 1}); such a tokenizer stays on the Python loop")
        if largest > MAX_ID or byte_ids.min() < 0:
            raise ValueError(f"DeviceMerger: token ids must lie in 0..{MAX_ID} (the table packs a pair into "
                             f"8 bytes), got {largest}; such a tokenizer stays on the Python loop")
        options = (f"-DBPE_MAX_CHUNK={MAX_CHUNK}",)
        kernel = lambda name: get_kernel(context, "bpe.cl", name, options)   # noqa: E731
        mf = cl.mem_flags
        upload = lambda array: cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=array)  # noqa: E731
        empty = lambda nbytes: cl.Buffer(context, mf.READ_WRITE, nbytes)   # noqa: E731
        unused = empty(8)                                   # the other rule's tables
        inserted = np.zeros(1, np.uint32)
        inserted_buf = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=inserted)
        self._listed = tokens is None
        self._byte_ids = upload(byte_ids.astype(np.uint32))
        self._powers = upload(_POWERS)
        if tokens is not None:
            blob, offsets = tokens
            n = expected = len(offsets) - 1
            bits = _table_bits(n)
            self._index_mask, self._shift = (1 << bits) - 1, 0
            self._index = empty(8 << bits)
            cl.enqueue_fill_buffer(queue, self._index, np.uint32(EMPTY), 0, 8 << bits)
            self._bytes, self._offsets = upload(blob or b"\0"), upload(offsets)
            kernel("bpe_index_tokens")(queue, (max(1, -(-n // LOCAL_SIZE)) * LOCAL_SIZE,), (LOCAL_SIZE,),
                                       self._bytes, self._offsets, np.uint32(n), self._index,
                                       np.uint32(self._index_mask), inserted_buf)
            self._table = unused
            self._merged_host = np.zeros(1, np.uint32)
        else:
            merged = merges.astype(np.uint32)
            n = expected = len(merged)
            bits = _table_bits(n)
            self._shift, self._index_mask = 32 - bits, 0
            self._table = empty(8 << bits)
            cl.enqueue_fill_buffer(queue, self._table, np.uint32(EMPTY), 0, 8 << bits)
            self._merges_buf = upload(merged if n else np.zeros(3, np.uint32))   # alive until the build ends
            kernel("bpe_listed_pairs")(queue, (max(1, -(-n // LOCAL_SIZE)) * LOCAL_SIZE,), (LOCAL_SIZE,),
                                       self._merges_buf, np.uint32(n), self._table, np.uint32(self._shift),
                                       inserted_buf)
            self._index, self._bytes, self._offsets = unused, unused, unused
            self._merged_host = merged[:, 2].copy() if n else np.zeros(1, np.uint32)   # merged_of[priority]
        self._merged_of = upload(self._merged_host)
        self._pair_bytes = upload(_PAIR_BYTES)
        self._byte_pairs = empty(4 * 65536)
        kernel("bpe_byte_pairs")(queue, (65536,), (LOCAL_SIZE,), self._byte_ids, np.uint32(self._listed),
                                 self._index, np.uint32(self._index_mask), self._bytes, self._offsets,
                                 self._pair_bytes, self._table, np.uint32(self._shift), self._byte_pairs)
        cl.enqueue_copy(queue, inserted, inserted_buf, is_blocking=True)
        self.n_entries = int(inserted[0])    # tokens indexed, or pairs listed
        if self.n_entries != expected:
            raise RuntimeError(f"the device table holds {self.n_entries} of {expected} entries; this is a bug")
        # its own kernel object (not the shared one), its scalar types declared so that one
        # set_args sets them all (pyopencl's set_arg of a NumPy scalar costs ~8 µs a call)
        self._merge = cl.Kernel(get_program(context, "bpe.cl", options), "bpe_merge_chunks")
        self._merge.set_scalar_arg_dtypes([None, None, np.uint32, None, None, np.uint32, None, np.uint32, None,
                                           None, None, None, np.uint32, None, None])
        self._tables = (self._byte_ids, self._byte_pairs, int(self._listed), self._index, self._index_mask,
                        self._bytes, self._offsets, self._powers, self._table, self._shift, self._merged_of)
        self._split_kernels = None   # the whole-call kernels and the class table, on first use
        # one call at a time: the kernel objects hold their arguments, and merge_text's buffers are kept
        self._lock = threading.Lock()

    def merge_text(self, data: bytes) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """A whole text's ids: split by GPT-4's pattern and merged, both on the device.

        ``data``: the UTF-8 bytes of a ``str``. Returns the ids (uint32) and the byte ranges of
        the chunks longer than :data:`MAX_CHUNK`, each of which holds one ``EMPTY`` in the ids,
        in order, for the caller's Python loop. A text of up to :data:`ONE_GROUP_BYTES` takes one
        launch (``bpe_encode_text``, one work-group); a longer one four, whose merges spread
        over many work-groups.

        >>> tokens = [bytes([b]) for b in range(256)] + [b"ab", b" ab", b"abc"]
        >>> ids, longs = DeviceMerger(range(256), tokens=tokens).merge_text(b"abc abab!")
        >>> ids.tolist(), longs
        ([258, 257, 256, 33], [])
        """
        ids, _, longs = self.merge_documents(data, np.array([0, len(data)], np.uint32))
        return ids, longs

    def merge_documents(self, data: bytes, doc_starts) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
        """:meth:`merge_text` of many documents in one call: ``data`` holds them one after another,
        document ``d`` is ``data[doc_starts[d]:doc_starts[d + 1]]`` (``doc_starts`` runs from 0 to
        ``len(data)``, never down). The device's split restarts at each document's start, so no
        chunk crosses from one document into the next; equal chunks are merged once for all.
        Returns the ids, each document's first id (then the number of ids), and the long chunks
        as :meth:`merge_text` does.

        >>> tokens = [bytes([b]) for b in range(256)] + [b"ab", b" ab"]
        >>> ids, firsts, _ = DeviceMerger(range(256), tokens=tokens).merge_documents(b"ab ab", [0, 3, 5])
        >>> ids.tolist(), firsts.tolist()
        ([256, 32, 256], [0, 2, 3])
        """
        doc_starts = np.asarray(doc_starts)
        if (doc_starts.ndim != 1 or len(doc_starts) < 1 or doc_starts[0] != 0 or doc_starts[-1] != len(data)
                or (np.diff(doc_starts.astype(np.int64)) < 0).any()):
            raise ValueError(f"doc_starts must run from 0 to len(data)={len(data)} without going down, "
                             f"one more than the documents; got {doc_starts.tolist()[:10]}")
        self._forking.check()
        with self._lock:
            return self._merge_text_locked(data, np.ascontiguousarray(doc_starts, np.uint32))

    def _merge_text_locked(self, data: bytes, doc_starts: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
        if self._listed:
            raise ValueError("merge_text follows tiktoken's rule; a merge list's merger has only merge()")
        cl, queue = self._cl, self.device.queue
        n = len(data)
        if n > MAX_TEXT_BYTES:
            raise ValueError(f"merge_text takes at most {MAX_TEXT_BYTES:,} bytes (MAX_TEXT_BYTES), got {n:,}; "
                             f"encode a longer text in pieces, or on the host")
        n_docs = len(doc_starts) - 1
        if n == 0:
            return np.zeros(0, np.uint32), np.zeros(n_docs + 1, np.uint32), []
        if self._split_kernels is None:
            self._split_kernels = self._build_split()
        one, clear, merge, gather, classes = self._split_kernels
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        # the text in a buffer of its own: made from host memory it costs ~1 µs, where a copy into
        # a kept buffer is a command for PoCL's worker threads (~25 µs)
        text_buf = cl.Buffer(self.device.context, flags, hostbuf=data)
        doc_starts_buf = cl.Buffer(self.device.context, flags, hostbuf=doc_starts)
        docs_buf = self._scratch("docs", 4 * (n_docs + 1))            # each document's first chunk, then id
        starts_buf = self._scratch("starts", 4 * (n + 1))
        seen_slots = 1 << (2 * n - 1).bit_length()                  # twice the most chunks n bytes can hold
        seen_buf = self._scratch("seen", 4 * seen_slots)
        out_buf = self._scratch("out", 8 * n)                    # ids at each chunk's bytes, then counts
        result_buf = self._scratch("result", 4 * (n + 2))         # the number of ids and of long chunks, ids
        longs_buf = self._scratch("longs", 8 * (n // (MAX_CHUNK + 1) + 1))
        tables = self._tables_tiktoken
        if n <= ONE_GROUP_BYTES:
            one.set_args(text_buf, doc_starts_buf, n_docs, classes, starts_buf, docs_buf, seen_buf, *tables,
                         out_buf, result_buf, longs_buf)
            cl.enqueue_nd_range_kernel(queue, one, (LOCAL_SIZE,), (LOCAL_SIZE,))
            firsts = self._read_firsts(docs_buf, n_docs)
            result = np.empty(n + 2, np.uint32)                   # one read brings the count and the ids
            cl.enqueue_copy(queue, result, result_buf, is_blocking=True)
            n_ids, n_long = int(result[0]), int(result[1])
            ids = result[2:2 + n_ids]
        else:
            split, head_buf = self._split_one, self._scratch("head", 8)
            split.set_args(text_buf, doc_starts_buf, n_docs, classes, starts_buf, docs_buf, head_buf)
            cl.enqueue_nd_range_kernel(queue, split, (1,), (1,))
            clear.set_args(head_buf, seen_buf)
            cl.enqueue_nd_range_kernel(queue, clear, (min(-(-seen_slots // (8 * LOCAL_SIZE)), 256) * LOCAL_SIZE,),
                                       (LOCAL_SIZE,))
            groups = min(-(-n // (8 * LOCAL_SIZE)), 256)         # ~8 bytes a work-item, at least
            merge.set_args(text_buf, starts_buf, head_buf, seen_buf, *tables, out_buf)
            cl.enqueue_nd_range_kernel(queue, merge, (groups * LOCAL_SIZE,), (LOCAL_SIZE,))
            gather.set_args(starts_buf, head_buf, out_buf, result_buf, longs_buf, n_docs, docs_buf)
            cl.enqueue_nd_range_kernel(queue, gather, (1,), (1,))
            firsts = self._read_firsts(docs_buf, n_docs)
            head = np.empty(2, np.uint32)
            cl.enqueue_copy(queue, head, result_buf, is_blocking=True)
            n_ids, n_long = int(head[0]), int(head[1])
            ids = np.empty(n_ids, np.uint32)
            cl.enqueue_copy(queue, ids, result_buf, src_offset=8, is_blocking=True)
        longs = []
        if n_long:
            ranges = np.empty(2 * n_long, np.uint32)
            cl.enqueue_copy(queue, ranges, longs_buf, is_blocking=True)
            longs = list(zip(ranges[0::2].tolist(), ranges[1::2].tolist()))
        if firsts is None:                                        # one document: its ids are all of them
            firsts = np.array([0, len(ids)], np.uint32)
        return ids, firsts, longs

    def _read_firsts(self, docs_buf, n_docs: int) -> np.ndarray | None:
        """Each document's first id (read after the gather, before the blocking read of the ids that
        follows it in the queue); ``None`` for one document, whose first id is 0."""
        if n_docs == 1:
            return None
        firsts = np.empty(n_docs + 1, np.uint32)
        self._cl.enqueue_copy(self.device.queue, firsts, docs_buf, is_blocking=False)
        return firsts

    def _scratch(self, name: str, nbytes: int):
        """A device buffer of at least ``nbytes``. For a short text (up to :data:`ONE_GROUP_BYTES`,
        ~1.5 MiB of buffers at most) it is kept between calls: the first of the exact size (so that
        Oclgrind sees a kernel that writes past it), then doubling when short. A longer text's
        buffers are its own, freed with it, so that one long call does not hold its memory."""
        if nbytes > _KEPT_BYTES:
            return self._cl.Buffer(self.device.context, self._cl.mem_flags.READ_WRITE, nbytes)
        found = self._buffers.get(name)
        if found is None or found.size < nbytes:
            size = min(max(nbytes, 2 * found.size), _KEPT_BYTES) if found is not None else nbytes
            found = self._buffers[name] = self._cl.Buffer(self.device.context, self._cl.mem_flags.READ_WRITE, size)
        return found

    def split_text(self, data: bytes) -> np.ndarray:
        """Where GPT-4's pattern cuts ``data`` (UTF-8 of a ``str``), by the device's splitter alone:
        the byte offset of each chunk, then ``len(data)``.

        >>> DeviceMerger(range(256), tokens=[bytes([b]) for b in range(256)]).split_text(b"Hi, it's 2024!").tolist()
        [0, 2, 3, 6, 8, 9, 12, 13, 14]
        """
        self._forking.check()
        with self._lock:
            return self._split_text_locked(data)

    def _split_text_locked(self, data: bytes) -> np.ndarray:
        cl, queue, context = self._cl, self.device.queue, self.device.context
        n = len(data)
        if self._split_kernels is None:
            self._split_kernels = self._build_split()
        split, classes = self._split_one, self._split_kernels[-1]
        starts = np.empty(n + 1, np.uint32)
        if n == 0:
            return starts[:1] * 0
        starts_buf = cl.Buffer(context, cl.mem_flags.READ_WRITE, starts.nbytes)
        count = np.empty(2, np.uint32)
        count_buf = cl.Buffer(context, cl.mem_flags.READ_WRITE, 8)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        text_buf = cl.Buffer(context, flags, hostbuf=data)
        doc_starts_buf = cl.Buffer(context, flags, hostbuf=np.array([0, n], np.uint32))
        docs_buf = cl.Buffer(context, cl.mem_flags.READ_WRITE, 8)
        split.set_args(text_buf, doc_starts_buf, 1, classes, starts_buf, docs_buf, count_buf)
        cl.enqueue_nd_range_kernel(queue, split, (1,), (1,))
        cl.enqueue_copy(queue, count, count_buf)
        cl.enqueue_copy(queue, starts, starts_buf, is_blocking=True)
        return starts[:int(count[0]) + 1]

    def _build_split(self):
        from netcl_lite.core.kernels import get_program
        from netcl_lite.text.patterns import code_point_classes

        cl = self._cl
        program = get_program(self.device.context, "bpe.cl", (f"-DBPE_MAX_CHUNK={MAX_CHUNK}",))
        one, split, clear, merge, gather = (cl.Kernel(program, name) for name in (
            "bpe_encode_text", "bpe_split_cl100k", "bpe_clear_seen", "bpe_merge_split", "bpe_gather_ids"))
        tables = [None, None, None, np.uint32, None, None, None]   # self._tables_tiktoken
        one.set_scalar_arg_dtypes([None, None, np.uint32, None, None, None, None, *tables, None, None, None])
        split.set_scalar_arg_dtypes([None, None, np.uint32, None, None, None, None])
        merge.set_scalar_arg_dtypes([None, None, None, None, *tables, None])
        gather.set_scalar_arg_dtypes([None, None, None, None, None, np.uint32, None])
        self._split_one, self._buffers = split, {}
        self._tables_tiktoken = (self._byte_ids, self._byte_pairs, self._index, self._index_mask, self._bytes,
                                 self._offsets, self._powers)
        classes = cl.Buffer(self.device.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                            hostbuf=code_point_classes())
        return one, clear, merge, gather, classes

    def index(self) -> np.ndarray:
        """tiktoken's rule: the device's index of the tokens, ``(2^k, 2)`` uint32 slots ``(id, hash)``."""
        if self._listed:
            raise ValueError("a merge list's merger has no token index; see table()")
        self._forking.check()
        out = np.empty((self._index_mask + 1, 2), np.uint32)
        self._cl.enqueue_copy(self.device.queue, out, self._index, is_blocking=True)
        return out

    def table(self) -> np.ndarray:
        """A merge list: the device's pair table, ``(2^k, 2)`` uint32 slots ``(x, y)`` as ``kernels/bpe.cl`` packs them."""
        if not self._listed:
            raise ValueError("tiktoken's rule keeps no pair table; see index()")
        self._forking.check()
        out = np.empty(((0xFFFFFFFF >> self._shift) + 1, 2), np.uint32)
        self._cl.enqueue_copy(self.device.queue, out, self._table, is_blocking=True)
        return out

    def pairs(self) -> set[tuple[int, int, int, int]]:
        """A merge list: ``{(left, right, priority, merged)}`` read back from the device table (compare
        :func:`pair_entries`)."""
        slots = self.table().astype(np.int64)
        slots = slots[slots[:, 0] != EMPTY]
        left = slots[:, 0] >> 21 | (slots[:, 1] & 0x3FF) << 11
        right, priority = slots[:, 0] & 0x1FFFFF, slots[:, 1] >> 10
        return set(zip(left.tolist(), right.tolist(), priority.tolist(), self._merged_host[priority].tolist()))

    def merge(self, pieces: Sequence[bytes]) -> list[tuple[int, ...]]:
        """The ids of each piece (UTF-8 bytes of a chunk, 1..``MAX_CHUNK`` bytes), in order."""
        self._forking.check()
        with self._lock:
            return self._merge_locked(pieces)

    def _merge_locked(self, pieces: Sequence[bytes]) -> list[tuple[int, ...]]:
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
        kernel.set_args(text_buf, starts_buf, n, *self._tables, out_buf)
        cl.enqueue_nd_range_kernel(queue, kernel, (-(-n // LOCAL_SIZE) * LOCAL_SIZE,), (LOCAL_SIZE,))
        cl.enqueue_copy(queue, out, out_buf, is_blocking=True)   # the buffers above live until here
        counts = out[total:].tolist()
        if min(counts) == 0:
            raise RuntimeError("bpe_merge_chunks left a chunk unmerged (count 0); this is a bug")
        # each chunk's ids straight from the buffer, as a tuple: no list of every id (a big young
        # container that each of the garbage collector's passes, triggered by these tuples, walks)
        return list(map(Struct.unpack_from, map(_ID_STRUCTS.__getitem__, counts), repeat(out),
                        map(mul, starts, repeat(4))))
