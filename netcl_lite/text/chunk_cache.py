"""A tokenizer's chunk cache: chunk -> ids, so that a chunk seen before costs one dict lookup.

:class:`~netcl_lite.text.BPETokenizer` seeds it with every token that is whole UTF-8 text (a
chunk that is a token becomes that token, as in tiktoken) and keeps every chunk it merges, up
to :data:`CACHE_LIMIT` of them, then starts over from the seed. A short call looks its chunks
up in C (``dict.__getitem__``) and merges a miss on the spot (``__missing__``); a longer one
looks them all up first and hands its new chunks, together, to
:meth:`~netcl_lite.text.dispatch.Dispatcher.merge_new` (the merge kernel, when they hold enough
bytes).

    >>> from netcl_lite.text.byte_pair import chunk_encoder
    >>> cache = ChunkCache({"a": (97,)}, chunk_encoder(range(256), [{} for _ in range(256)]))
    >>> cache["ab"], len(cache)
    ((97, 98), 2)
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain, compress
from operator import not_

from netcl_lite.text.dispatch import Dispatcher, utf8

__all__ = ["CACHE_LIMIT", "MAX_CACHED_CHARS", "ChunkCache"]

#: Chunks kept beyond the seed before the cache starts over.
CACHE_LIMIT = 1 << 17
#: Longer chunks (a tokenizer without a pattern) are encoded but not kept.
MAX_CACHED_CHARS = 256


class _LoneSurrogate(Exception):
    pass


class ChunkCache(dict):
    """chunk -> token ids, seeded with ``seed``; a miss is merged by ``encode(bytes) -> ids``.

    The ids are tuples: warm passes chain them faster than lists, for a copy the cold pass
    hardly notices.
    """

    __slots__ = ("_encode", "_seed")

    def __init__(self, seed: dict[str, tuple[int, ...]], encode: Callable[[bytes], list[int]]):
        super().__init__(seed)
        self._encode, self._seed = encode, seed

    def __missing__(self, chunk: str) -> tuple[int, ...]:
        # subtle: a chunk that is one token never gets here under tiktoken's rule: the seed holds it
        try:
            piece = chunk.encode("utf-8")
        except UnicodeEncodeError:
            raise _LoneSurrogate from None
        ids = tuple(self._encode(piece))
        if len(chunk) <= MAX_CACHED_CHARS:
            if len(self) > len(self._seed) + CACHE_LIMIT:
                self._start_over()
            self[chunk] = ids
        return ids

    def _start_over(self) -> None:
        self.clear()
        self.update(self._seed)

    def short_ids(self, chunks: list[str], text: str) -> list[int]:
        """The ids of ``chunks`` (``text`` split) of a text too short for the device: each chunk looked
        up, a new one merged on the spot (:meth:`__missing__`, which also keeps the cache bounded)."""
        try:
            return list(chain.from_iterable(map(self.__getitem__, chunks)))
        except _LoneSurrogate:
            utf8(text)
            raise

    def ids_of(self, chunks: list[str], text: str, dispatch: Dispatcher) -> list[int]:
        """The ids of ``chunks`` (``text`` split), each new chunk merged and kept. A text too short to
        bring :attr:`~Dispatcher.kernel_min_bytes` new bytes merges them one by one, as they come.
        Past :data:`CACHE_LIMIT` chunks beyond the seed, the cache starts over from the seed."""
        n = len(text)
        try:
            if n < dispatch.min_chars or (n < dispatch.min_ascii and text.isascii()):
                ids = list(chain.from_iterable(map(self.__getitem__, chunks)))
            else:
                values = list(map(self.get, chunks))   # one lookup pass; None: new (ids are never empty)
                if not all(values):
                    self._fill_new(chunks, values, dispatch)
                ids = list(chain.from_iterable(values))
        except _LoneSurrogate:
            utf8(text)
            raise
        if len(self) > len(self._seed) + CACHE_LIMIT:
            self._start_over()
        return ids

    def _fill_new(self, chunks: list[str], values: list, dispatch: Dispatcher) -> None:
        """Fill in ``values`` (``self.get`` of each chunk; ``None``: new) with the new chunks' ids, merged
        together by ``dispatch`` and kept."""
        new = list(set(compress(chunks, map(not_, values))))
        try:
            pieces = list(map(str.encode, new))
        except UnicodeEncodeError:
            raise _LoneSurrogate from None
        got = dict(zip(new, dispatch.merge_new(pieces)))
        if max(map(len, new)) <= MAX_CACHED_CHARS:
            self.update(got)
        else:
            self.update((c, ids) for c, ids in got.items() if len(c) <= MAX_CACHED_CHARS)
        if 4 * len(got) < len(values):  # few: patch their places (each read before it is set)
            for i in compress(range(len(values)), map(not_, values)):
                values[i] = got[chunks[i]]
        else:                            # many: one more pass at C speed (got holds no old chunk)
            values[:] = map(got.get, chunks, values)
