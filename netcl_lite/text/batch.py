"""Encoding and decoding many documents in one call: :class:`~netcl_lite.text.BPETokenizer`'s batch API.

tiktoken's ``encode_ordinary_batch``, ``encode_batch`` and ``decode_batch`` take a list of
documents and return one list of ids (or one string) per document, exactly what a loop of
single calls returns. The tokenizer's methods of those names come here.

Where a tokenizer sends a long single call to the device whole (GPT-4's pattern under
tiktoken's rule, :attr:`~netcl_lite.text.BPETokenizer.kernel_text_min_bytes`), a batch whose
documents together hold that many UTF-8 bytes goes there too, as one text with each
document's byte offset (:meth:`~netcl_lite.text.dispatch.Dispatcher.encode_documents`):
the device's split restarts at each document's start, so no chunk, and no merge, crosses from
one document into the next, and a chunk that many documents share is merged once. Batches of
more than :data:`~netcl_lite.text.dispatch.GROUP_BYTES` take a few such calls. Every other batch
is a loop of single calls in this thread, sharing the tokenizer's chunk cache.

``num_threads`` is accepted and checked as tiktoken's is, and changes nothing: the device
call already spreads the merges over the device's threads, and Python's loop would hold the
interpreter's lock in any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from netcl_lite.checks import count
from netcl_lite.text.dispatch import Dispatcher, utf8
from netcl_lite.text.patterns import split_budget
from netcl_lite.text.specials import SpecialTokens

__all__ = ["check_texts", "decode_batch", "encode_batch", "encode_ordinary_batch"]

Encode = Callable[[str], list[int]]


def check_texts(texts, name: str = "text") -> list[str]:
    """``texts`` as a list of ``str``, or a ``TypeError`` naming what is wrong and where."""
    if isinstance(texts, (str, bytes, bytearray)) or not isinstance(texts, Iterable):
        raise TypeError(f"{name} must be a list of str (one per document), got {type(texts).__name__}; "
                        f"wrap a single text as [text]")
    texts = texts if isinstance(texts, list) else list(texts)
    if not set(map(type, texts)) <= {str}:
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"{name}[{i}] must be a str, got {type(text).__name__}; decode bytes "
                                f"first (text = data.decode('utf-8'))")
    return texts


def encode_ordinary_batch(encode: Encode, dispatch: Dispatcher, texts, num_threads: int = 8
                          ) -> list[list[int]]:
    """``[encode(t) for t in texts]`` (``encode``: a tokenizer's ``encode_ordinary``), on the device
    in one call where ``dispatch`` sends it."""
    texts = check_texts(texts)
    count("num_threads", num_threads, 1, "tiktoken's default is 8")
    encode_one = _naming(encode)
    with split_budget(sum(map(len, texts))):   # the documents share one time limit, not one each
        done = dispatch.encode_documents(texts, encode_one)
        return done if done is not None else list(map(encode_one, range(len(texts)), texts))


def _naming(encode: Encode) -> Callable[[int, str], list[int]]:
    """``encode_one(i, text)``: ``encode(text)``, its errors naming the document's index."""

    def encode_one(i: int, text: str) -> list[int]:
        try:
            return encode(text)
        except ValueError as exc:   # a lone surrogate: say which document
            raise ValueError(f"text[{i}]: {exc}") from None

    return encode_one


def encode_batch(encode: Encode, dispatch: Dispatcher, specials: SpecialTokens, texts, num_threads: int = 8,
                 allowed_special=frozenset(), disallowed_special="all") -> list[list[int]]:
    """A tokenizer's ``encode`` of each of ``texts``: every document checked for disallowed special
    tokens first (the error names the document and the token), then the text between the allowed
    ones encoded as one :func:`encode_ordinary_batch`."""
    texts = check_texts(texts)
    count("num_threads", num_threads, 1, "tiktoken's default is 8")
    allowed = specials.allowed(allowed_special, disallowed_special, texts, batch=True)
    if not allowed:
        return encode_ordinary_batch(encode, dispatch, texts)
    layouts = [specials.split(text, allowed) for text in texts]   # plain pieces and special ids
    pieces = [part for parts in layouts for part in parts if isinstance(part, str)]
    try:
        encoded = iter(encode_ordinary_batch(encode, dispatch, pieces))
    except ValueError:
        for i, text in enumerate(texts):      # a lone surrogate: name its document, not its piece
            utf8(text, f"text[{i}]")
        raise
    out = []
    for parts in layouts:
        ids = []
        for part in parts:
            if isinstance(part, str):
                ids += next(encoded)
            else:
                ids.append(part)
        out.append(ids)
    return out


def decode_batch(decode: Callable[[Iterable[int], str], str], batch, errors: str = "replace",
                 num_threads: int = 8) -> list[str]:
    """``[decode(ids, errors) for ids in batch]``; an error names the document."""
    if isinstance(batch, (str, bytes, bytearray)) or not isinstance(batch, Iterable):
        raise TypeError(f"batch must be a list of token-id lists (one per document), got "
                        f"{type(batch).__name__}")
    if not isinstance(errors, str):
        raise TypeError(f"errors must be a str such as 'replace' or 'strict', got {type(errors).__name__}")
    count("num_threads", num_threads, 1, "tiktoken's default is 8")
    out = []
    for i, ids in enumerate(batch):
        try:
            out.append(decode(ids, errors))
        except UnicodeDecodeError as exc:
            exc.add_note(f"in batch[{i}]")
            raise
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"batch[{i}]: {exc}") from None
    return out
