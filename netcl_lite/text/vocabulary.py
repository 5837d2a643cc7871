"""What every tokenizer file describes: a byte-level BPE vocabulary, in any id layout.

A trained tokenizer and a netcl_lite model file number tokens by merge order (the 256
bytes, then one id per merge); a tiktoken file numbers them by rank; a ``tokenizer.json``
may put special tokens first. :class:`Vocabulary` holds any of these, and says which of
the two merge rules applies (see :mod:`~netcl_lite.text.byte_pair`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Vocabulary"]


@dataclass(frozen=True)
class Vocabulary:
    """A byte-level BPE vocabulary: tokens by id, the merge rule, special tokens, the pre-split pattern.

    >>> v = Vocabulary(None, {i: bytes([i]) for i in range(256)} | {256: b"hi"}, {"<|end|>": 257})
    >>> v.merge_list is None, v.whole_chunks   # tiktoken's rule
    (True, True)
    """

    pattern: str | None
    #: id -> bytes of every byte-level token; the 256 single bytes are among them
    tokens: dict[int, bytes]
    #: string -> id; no byte-level token has these ids
    special_tokens: dict[str, int] = field(default_factory=dict)
    #: ``None``: tiktoken's rule (ids are ranks 0..N-1, ids 0..255 the bytes; two adjacent tokens
    #: whose bytes join into a token merge into it, lowest rank first). Otherwise Hugging Face's
    #: rule: only these ``(left, right, merged)`` pairs merge, earliest in the list first.
    merge_list: tuple[tuple[int, int, int], ...] | None = None
    #: a chunk whose bytes are one token becomes that token without merging
    #: (tiktoken always; ``ignore_merges`` in a tokenizer.json)
    whole_chunks: bool = True
    #: tiktoken's rule only: the ``(left, right)`` that made ids 256, 257, ... when known
    #: (training, netcl_lite model files); ``None``: derived on first use
    merges: tuple[tuple[int, int], ...] | None = None

    def text_tokens(self) -> dict[str, tuple[int]]:
        """``{text: (id,)}`` of every byte-level token that is whole UTF-8 text (a token that ends
        inside a character is never a chunk on its own): the seed of a tokenizer's chunk cache.

        >>> Vocabulary(None, {0: b"a", 1: b"\\xe2", 2: b"\\xe2\\x82\\xac"}).text_tokens()
        {'a': (0,), '€': (2,)}
        """
        seed = {}
        for i, token in self.tokens.items():
            try:
                seed[token.decode("utf-8")] = (i,)
            except UnicodeDecodeError:
                pass
        return seed
