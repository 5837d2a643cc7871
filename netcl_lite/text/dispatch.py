"""Where a tokenizer's merges run: the Python loop on the host, or the kernels of ``kernels/bpe.cl``.

A :class:`~netcl_lite.text.BPETokenizer` holds one :class:`Dispatcher`, which decides per call
and launches the device's work (:class:`~netcl_lite.text.device_merge.DeviceMerger`):

* a text of at least :attr:`Dispatcher.kernel_text_min_bytes` UTF-8 bytes, under GPT-4's
  pattern and tiktoken's rule, goes to the device whole (:meth:`Dispatcher.encode_text`): split,
  merged and gathered there, without the tokenizer's chunk cache; a batch whose documents
  together hold that many bytes goes there as one text with each document's offset
  (:meth:`Dispatcher.encode_documents`), in calls of at most :data:`GROUP_BYTES`;
* otherwise the chunks a call has not seen before are merged together
  (:meth:`Dispatcher.merge_new`): by one launch of the merge kernel when they hold at least
  :attr:`Dispatcher.kernel_min_bytes`, else by the Python loop;
* chunks longer than :data:`~netcl_lite.text.device_merge.MAX_CHUNK` bytes always take the
  Python loop, spliced into the device's ids in their placeholders' places.

The device's tables are built on first use (:meth:`Dispatcher.merger`); a vocabulary whose ids
or merges do not fit them turns both thresholds off and stays on the host.

    >>> from netcl_lite.text.byte_pair import chunk_encoder, rank_pair_table
    >>> tokens = [bytes([b]) for b in range(256)] + [b"ab"]
    >>> dispatch = Dispatcher(range(256), chunk_encoder(range(256), rank_pair_table(tokens)), tokens=tokens)
    >>> dispatch.kernel_min_bytes = None; dispatch.merge_new([b"abc", b"b"])
    [(256, 99), (98,)]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from itertools import accumulate

import numpy as np

from netcl_lite.checks import count
from netcl_lite.text import device_merge

__all__ = ["GROUP_BYTES", "KERNEL_MIN_BYTES", "KERNEL_TEXT_MIN_BYTES", "Dispatcher", "utf8"]

#: A call whose new chunks hold at least this many UTF-8 bytes merges them with the kernel
#: (``kernels/bpe.cl``); below it the Python loop is faster than a launch. Measured by
#: ``benchmarks/bpe_threshold.py`` (its figures: ``benchmarks/results/tokenizer.md``).
KERNEL_MIN_BYTES = 1024
#: A call whose text holds at least this many UTF-8 bytes is split and merged on the device in
#: one pass (``DeviceMerger.merge_text``) when the tokenizer follows tiktoken's rule with
#: :data:`~netcl_lite.text.GPT4_PATTERN`; measured by ``benchmarks/bpe_threshold.py`` like the one above.
KERNEL_TEXT_MIN_BYTES = 2048
#: The most UTF-8 bytes of documents one device call takes (its buffers need ~33 bytes of device
#: memory a byte of text); a larger batch is cut, between documents, into calls of at most this.
#: A document larger than this takes a call of its own.
GROUP_BYTES = 1 << 22


def utf8(text: str, name: str = "text") -> bytes:
    """``text``'s UTF-8 bytes, or a ``ValueError`` naming ``name`` and the first lone surrogate.

    >>> utf8("a\\udc80", "text[3]")
    Traceback (most recent call last):
    ...
    ValueError: text[3] has a lone surrogate '\\udc80' at index 1, which UTF-8 cannot encode; repair the string (it often comes from decoding bytes with errors='surrogateescape')
    """
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{name} has a lone surrogate {text[exc.start]!r} at index {exc.start}, which UTF-8 "
                         f"cannot encode; repair the string (it often comes from decoding bytes with "
                         f"errors='surrogateescape')") from None


class Dispatcher:
    """Host or device for one tokenizer's vocabulary; builds and keeps its :class:`DeviceMerger`.

    ``byte_ids[b]``: the id of byte ``b``; ``encode_piece(bytes) -> ids``: the Python loop
    (:func:`~netcl_lite.text.byte_pair.chunk_encoder`). Then exactly one of ``tokens``
    (tiktoken's rule: every token's bytes by id, or :func:`~netcl_lite.text.device_merge.pack_tokens`
    of them) or ``merges`` (a merge list; ``largest_id``: the vocabulary's largest id).
    ``whole_text``: the device may split a whole text (GPT-4's pattern under tiktoken's rule).
    """

    def __init__(self, byte_ids: Sequence[int], encode_piece: Callable[[bytes], list[int]], *,
                 tokens=None, merges: Sequence[tuple[int, int, int]] | None = None, largest_id: int = 0,
                 whole_text: bool = False):
        if (tokens is None) == (merges is None):
            raise TypeError("Dispatcher: pass exactly one of tokens (tiktoken's rule) or merges (a list)")
        self.encode_piece = encode_piece
        self._byte_ids = byte_ids
        self._tokens = tokens if tokens is None or isinstance(tokens, device_merge.PackedTokens) \
            else device_merge.pack_tokens(tokens)
        self._merges = merges
        self._largest = len(self._tokens.offsets) - 2 if tokens is not None else largest_id
        self._whole_text = bool(whole_text) and tokens is not None
        self._merger: device_merge.DeviceMerger | None = None
        self.kernel_min_bytes = KERNEL_MIN_BYTES
        self.kernel_text_min_bytes = KERNEL_TEXT_MIN_BYTES

    @property
    def kernel_min_bytes(self) -> int | None:
        """New bytes from which a call's new chunks go to the merge kernel (``None``: never)."""
        return self._min_bytes

    @kernel_min_bytes.setter
    def kernel_min_bytes(self, value: int | None) -> None:
        if value is not None:
            value = count("kernel_min_bytes", value, 0,
                          "0: merge every call's new chunks on the device; None: never use the kernel")
        self._min_bytes = value
        # a text of fewer characters has fewer UTF-8 bytes (4 at most per character, 1 in ASCII
        # text): a compare or two keep a short call on the Python path
        self.min_chars = sys.maxsize if value is None else -(-value // 4)
        self.min_ascii = sys.maxsize if value is None else value
        self.short_chars = min(self.min_chars, getattr(self, "text_min_chars", sys.maxsize))

    @property
    def kernel_text_min_bytes(self) -> int | None:
        """UTF-8 bytes from which a whole call goes to the device (``None``: never)."""
        return self._text_min_bytes

    @kernel_text_min_bytes.setter
    def kernel_text_min_bytes(self, value: int | None) -> None:
        if value is not None:
            value = count("kernel_text_min_bytes", value, 0,
                          "0: split and merge every call on the device; None: never")
        self._text_min_bytes = value
        # at most 4 bytes a character: a shorter text never gets there
        self.text_min_chars = sys.maxsize if value is None or not self._whole_text else -(-value // 4)
        #: a text of fewer characters reaches neither threshold: its chunks are looked up and merged here
        self.short_chars = min(self.min_chars, self.text_min_chars)

    @property
    def whole_text(self) -> bool:
        """Whether the device can split and merge a whole text for this vocabulary."""
        return self._whole_text

    @property
    def built(self) -> device_merge.DeviceMerger | None:
        """The device's merger if a call has built it, else ``None`` (building nothing)."""
        return self._merger

    def merger(self) -> device_merge.DeviceMerger | None:
        """The kernel's tables, built on first use; ``None`` when this vocabulary's ids do not fit
        them (then both thresholds turn to ``None``)."""
        if self._merger is None:
            too_many = self._merges is not None and len(self._merges) > device_merge.MAX_PRIORITY + 1
            if self._largest > device_merge.MAX_ID or too_many:   # more ids or merges than the tables pack
                self.kernel_min_bytes = self.kernel_text_min_bytes = None
                return None
            if self._tokens is not None:   # tiktoken's rule: an index of the tokens by their bytes
                self._merger = device_merge.DeviceMerger(self._byte_ids, tokens=self._tokens)
            else:
                self._merger = device_merge.DeviceMerger(self._byte_ids, merges=self._merges)
        return self._merger

    def merge_new(self, pieces: list[bytes]) -> list[tuple[int, ...]]:
        """The ids of each piece (a chunk's UTF-8 bytes), in order: one launch of the merge kernel
        when they hold at least :attr:`kernel_min_bytes` (pieces longer than the kernel takes stay
        on the Python loop), else the Python loop."""
        limit = self._min_bytes
        if limit is not None and sum(map(len, pieces)) >= limit and (merger := self.merger()) is not None:
            if max(map(len, pieces)) <= device_merge.MAX_CHUNK:
                return merger.merge(pieces)
            fits = [p for p in pieces if len(p) <= device_merge.MAX_CHUNK]
            got = iter(merger.merge(fits))
            encode = self.encode_piece
            return [next(got) if len(p) <= device_merge.MAX_CHUNK else tuple(encode(p)) for p in pieces]
        return [tuple(ids) for ids in map(self.encode_piece, pieces)]

    def encode_text(self, text: str) -> list[int] | None:
        """The ids of a whole call on the device; ``None``: it stays on the host (shorter than
        :attr:`kernel_text_min_bytes`, longer than :data:`~netcl_lite.text.device_merge.MAX_TEXT_BYTES`,
        or no device table for this vocabulary)."""
        if not self._whole_text or self._text_min_bytes is None:
            return None
        data = utf8(text)
        if not self._text_min_bytes <= len(data) <= device_merge.MAX_TEXT_BYTES:
            return None
        if (merger := self.merger()) is None:
            return None
        ids, longs = merger.merge_text(data)
        if not longs:
            return ids.tolist()
        return self._spliced(data, ids, np.array([0, len(ids)]), longs)[0]

    def encode_documents(self, texts: list[str], encode_one: Callable[[int, str], list[int]]
                         ) -> list[list[int]] | None:
        """Each document's ids, on the device as one text per group of :data:`GROUP_BYTES` when
        together they hold at least :attr:`kernel_text_min_bytes`; ``None``: the batch stays on the
        host. ``encode_one(i, text)`` encodes on the host a document the device cannot take."""
        if not texts or not self._whole_text or self._text_min_bytes is None:
            return None
        try:
            datas = list(map(str.encode, texts))
        except (UnicodeEncodeError, TypeError):     # a lone surrogate, or no str: name the document
            datas = [utf8(text, f"text[{i}]") for i, text in enumerate(texts)]
        if sum(map(len, datas)) < self._text_min_bytes or (merger := self.merger()) is None:
            return None
        out: list[list[int]] = []
        begin, size = 0, 0
        for end, data in enumerate(datas):
            if size and size + len(data) > GROUP_BYTES:
                out += self._merge_group(merger, datas[begin:end])
                begin, size = end, 0
            size += len(data)
            if size > device_merge.MAX_TEXT_BYTES:      # this one document alone: the host's
                out.append(encode_one(end, texts[end]))
                begin, size = end + 1, 0
        if begin < len(datas):
            out += self._merge_group(merger, datas[begin:])
        return out

    def _merge_group(self, merger, datas: list[bytes]) -> list[list[int]]:
        data = b"".join(datas)
        ids, firsts, longs = merger.merge_documents(data, np.fromiter(accumulate(map(len, datas), initial=0),
                                                                      np.uint32, len(datas) + 1))
        if longs:
            ids, firsts = self._spliced(data, ids, firsts, longs)
        else:
            ids, firsts = ids.tolist(), firsts.tolist()
        return list(map(ids.__getitem__, map(slice, firsts[:-1], firsts[1:])))

    def _spliced(self, data: bytes, ids: np.ndarray, firsts, longs) -> tuple[list[int], list[int]]:
        """The Python loop's ids of each long chunk in its placeholder's place (an ``EMPTY`` id), and
        each document's first id moved by the ids added before it."""
        places = np.flatnonzero(ids == device_merge.EMPTY)
        pieces = [self.encode_piece(data[start:end]) for start, end in longs]
        grown = np.array([0, *accumulate(len(p) - 1 for p in pieces)], np.int64)   # ids added before a place
        firsts = (np.asarray(firsts, np.int64) + grown[np.searchsorted(places, firsts, side="left")]).tolist()
        flat, out, done = ids.tolist(), [], 0
        for place, piece in zip(places.tolist(), pieces):
            out += flat[done:place]
            out += piece
            done = place + 1
        out += flat[done:]
        return out, firsts
