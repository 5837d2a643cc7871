"""Encoding and decoding many documents in one call: :class:`~netcl_lite.text.BPETokenizer`'s batch API.

tiktoken's ``encode_ordinary_batch``, ``encode_batch`` and ``decode_batch`` take a list of
documents and return one list of ids (or one string) per document, exactly what a loop of
single calls returns. The tokenizer's methods of those names come here.

Where a tokenizer sends a long single call to the device whole (GPT-4's pattern under
tiktoken's rule, :attr:`~netcl_lite.text.BPETokenizer.kernel_text_min_bytes`), a batch whose
documents together hold that many UTF-8 bytes goes there too, as one text with each
document's byte offset (:meth:`~netcl_lite.text.device_merge.DeviceMerger.merge_documents`):
the device's split restarts at each document's start, so no chunk, and no merge, crosses from
one document into the next, and a chunk that many documents share is merged once. Batches
of more than :data:`GROUP_BYTES` take a few such calls. Every other batch is a loop of single
calls in this thread, sharing the tokenizer's chunk cache.

``num_threads`` is accepted and checked as tiktoken's is, and changes nothing: the device
call already spreads the merges over the device's threads, and Python's loop would hold the
interpreter's lock in any thread.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from itertools import accumulate

import numpy as np

from netcl_lite.text import device_merge

__all__ = ["GROUP_BYTES", "decode_batch", "encode_batch", "encode_ordinary_batch"]

#: The most UTF-8 bytes of documents one device call takes (its buffers need ~33 bytes of device
#: memory a byte of text); a larger batch is cut, between documents, into calls of at most this.
#: A document larger than this takes a call of its own.
GROUP_BYTES = 1 << 22


def check_texts(texts, name: str = "text") -> list[str]:
    """``texts`` as a list of ``str``, or a ``TypeError`` naming what is wrong and where."""
    if isinstance(texts, (str, bytes, bytearray)) or not isinstance(texts, Iterable):
        raise TypeError(f"{name} must be a list of str (one per document), got {type(texts).__name__}; "
                        f"wrap a single text as [text]")
    texts = texts if isinstance(texts, list) else list(texts)
    if not set(map(type, texts)) <= {str}:
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"{name}[{i}] is {type(text).__name__}, expected str; decode bytes "
                                f"first (text = data.decode('utf-8'))")
    return texts


def check_threads(num_threads) -> None:
    if isinstance(num_threads, bool) or not isinstance(num_threads, numbers.Integral):
        raise TypeError(f"num_threads must be an int, got {type(num_threads).__name__}")
    if num_threads < 1:
        raise ValueError(f"num_threads={num_threads} must be at least 1 (tiktoken's default is 8)")


def encode_ordinary_batch(tok, texts, num_threads: int = 8) -> list[list[int]]:
    """``[tok.encode_ordinary(t) for t in texts]``, on the device in one call where it pays."""
    texts = check_texts(texts)
    check_threads(num_threads)
    if tok._text_on_device and tok._kernel_text_min_bytes is not None and texts:
        datas = utf8(texts)
        if sum(map(len, datas)) >= tok._kernel_text_min_bytes and (merger := tok._device_merger()) is not None:
            return on_device(tok, merger, texts, datas)
    return list(map(ordinary_one(tok), range(len(texts)), texts))


def ordinary_one(tok):
    """``encode(i, text)``: one document by ``encode_ordinary``, its errors naming its index."""
    encode = tok.encode_ordinary

    def encode_one(i: int, text: str) -> list[int]:
        try:
            return encode(text)
        except ValueError as exc:   # a lone surrogate: say which document
            raise ValueError(f"text[{i}]: {exc}") from None

    return encode_one


def utf8(texts: list[str]) -> list[bytes]:
    try:
        return list(map(str.encode, texts))
    except UnicodeEncodeError:
        for i, text in enumerate(texts):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(f"text[{i}] has a lone surrogate {text[exc.start]!r} at index {exc.start}, "
                                 f"which UTF-8 cannot encode; repair the string (it often comes from "
                                 f"decoding bytes with errors='surrogateescape')") from None
        raise


def on_device(tok, merger, texts: list[str], datas: list[bytes]) -> list[list[int]]:
    """The documents in calls of up to :data:`GROUP_BYTES` to ``merger.merge_documents``; one larger
    than the device takes (:data:`~netcl_lite.text.device_merge.MAX_TEXT_BYTES`) on the host."""
    out: list[list[int]] = []
    begin, size = 0, 0
    for end, data in enumerate(datas):
        if size and size + len(data) > GROUP_BYTES:
            out += merge_group(tok, merger, datas[begin:end])
            begin, size = end, 0
        size += len(data)
        if size > device_merge.MAX_TEXT_BYTES:      # this one document alone: the host's
            out.append(ordinary_one(tok)(end, texts[end]))
            begin, size = end + 1, 0
    if begin < len(datas):
        out += merge_group(tok, merger, datas[begin:])
    return out


def merge_group(tok, merger, datas: list[bytes]) -> list[list[int]]:
    data = b"".join(datas)
    ids, firsts, longs = merger.merge_documents(data, np.fromiter(accumulate(map(len, datas), initial=0),
                                                                  np.uint32, len(datas) + 1))
    if longs:   # chunks longer than the kernel takes: the Python loop's ids in each placeholder's place
        ids, firsts = splice_longs(tok, data, ids, firsts, longs)
    else:
        ids, firsts = ids.tolist(), firsts.tolist()
    return list(map(ids.__getitem__, map(slice, firsts[:-1], firsts[1:])))


def splice_longs(tok, data: bytes, ids: np.ndarray, firsts: np.ndarray, longs) -> tuple[list[int], list[int]]:
    places = np.flatnonzero(ids == device_merge.EMPTY)
    pieces = [tok._encode_piece(data[start:end]) for start, end in longs]
    grown = np.array([0, *accumulate(len(p) - 1 for p in pieces)], np.int64)   # ids added before each place
    firsts = (firsts.astype(np.int64) + grown[np.searchsorted(places, firsts, side="left")]).tolist()
    flat, out, done = ids.tolist(), [], 0
    for place, piece in zip(places.tolist(), pieces):
        out += flat[done:place]
        out += piece
        done = place + 1
    out += flat[done:]
    return out, firsts


def encode_batch(tok, texts, num_threads: int = 8, allowed_special=frozenset(),
                 disallowed_special="all") -> list[list[int]]:
    """``[tok.encode(t, ...) for t in texts]``: every document checked for disallowed special
    tokens first (the error names the document and the token), then the text between the allowed
    ones encoded as one :func:`encode_ordinary_batch`."""
    texts = check_texts(texts)
    check_threads(num_threads)
    allowed = tok._special_set("allowed_special", allowed_special)
    if disallowed_special == "all":
        disallowed = frozenset(tok._special) - allowed
    else:
        disallowed = tok._special_set("disallowed_special", disallowed_special)
    if disallowed:
        search = tok._special_re(disallowed).search
        for i, text in enumerate(texts):
            if found := search(text):
                raise ValueError(
                    f"text[{i}] contains the special token {found.group()!r} at index {found.start()}, "
                    f"which this call does not allow; pass allowed_special={{{found.group()!r}}} (or \"all\") "
                    f"if the text is trusted, or use encode_ordinary_batch() to encode it as plain text")
    if not allowed:
        return encode_ordinary_batch(tok, texts)
    finditer, special = tok._special_re(allowed).finditer, tok._special
    pieces, layout = [], []          # the plain text between specials, and each document's parts
    for text in texts:
        parts, start = [], 0
        for found in finditer(text):
            parts.append(len(pieces))
            pieces.append(text[start:found.start()])
            parts.append(-1 - special[found.group()])     # a special id, kept apart from piece numbers
            start = found.end()
        parts.append(len(pieces))
        pieces.append(text[start:])
        layout.append(parts)
    try:
        encoded = encode_ordinary_batch(tok, pieces)
    except ValueError:
        utf8(texts)      # a lone surrogate: name its document, not its piece
        raise
    out = []
    for parts in layout:
        ids = []
        for part in parts:
            if part >= 0:
                ids += encoded[part]
            else:
                ids.append(-1 - part)
        out.append(ids)
    return out


def decode_batch(tok, batch, errors: str = "replace", num_threads: int = 8) -> list[str]:
    """``[tok.decode(ids, errors) for ids in batch]``; an error names the document."""
    if isinstance(batch, (str, bytes, bytearray)) or not isinstance(batch, Iterable):
        raise TypeError(f"batch must be a list of token-id lists (one per document), got {type(batch).__name__}")
    if not isinstance(errors, str):
        raise TypeError(f"errors must be a str such as 'replace' or 'strict', got {type(errors).__name__}")
    check_threads(num_threads)
    out = []
    for i, ids in enumerate(batch):
        try:
            out.append(tok.decode(ids, errors))
        except UnicodeDecodeError as exc:
            exc.add_note(f"in batch[{i}]")
            raise
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"batch[{i}]: {exc}") from None
    return out
