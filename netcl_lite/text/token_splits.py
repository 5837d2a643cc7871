"""Every way each token splits into two tokens, found for a whole vocabulary at once with NumPy.

tiktoken's rule merges any two adjacent tokens whose bytes join into a token, so the pair table
(:func:`~netcl_lite.text.byte_pair.rank_pair_table`) needs every split of every token whose two
parts are tokens: for cl100k_base, 233,378 of 543,574 split points. Looking each part up in a
dict of 100,000 byte strings costs a cache miss or three a lookup, enough for such a loop to be
most of a tokenizer's load time. Here each part is a 64-bit polynomial hash, matched to the tokens'
own hashes by binary searches over sorted arrays (the parts sorted too, so the searches walk
forward). The bytes of every match are then compared, so a hash collision can cost a match,
never forge one; a vocabulary in which two tokens hash alike (or one too large for the arrays)
is left to the exact loop.

    >>> left, right, merged = token_splits([b"a", b"b", b"ab", b"abb"])
    >>> left.tolist(), right.tolist(), merged.tolist()
    ([0, 2], [1, 1], [2, 3])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["MAX_SPLIT_TOKEN", "token_splits"]

#: Vocabularies with a longer token take the exact loop (real ones stop near 128 bytes).
MAX_SPLIT_TOKEN = 256
_MAX_BYTES = 1 << 26               # all tokens' bytes together: the arrays take ~40 bytes a byte
_BASE = np.uint64(0x100000001B3)   # odd: the hash of a slice follows from two prefix hashes


def token_splits(token_bytes: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(left, right, merged)`` id arrays: ``token_bytes[left] + token_bytes[right] == token_bytes[merged]``,
    one entry per such split, in order of ``merged`` then split point; ``None``: use the exact loop."""
    n = len(token_bytes)
    size = np.fromiter(map(len, token_bytes), np.int64, n)
    if n < 2 or size.min() < 1 or size.max() > MAX_SPLIT_TOKEN or size.sum() > _MAX_BYTES:
        return None
    raw = np.frombuffer(b"".join(token_bytes), np.uint8)
    start = np.cumsum(size) - size
    with np.errstate(over="ignore"):   # the hashes wrap around modulo 2**64 by design
        prefix = _prefix_hashes(raw, start, size)   # prefix[p]: hash of its token's bytes up to p
        whole = prefix[start + size - 1]
        by_hash = np.argsort(whole)
        hashes = whole[by_hash]
        if np.any(hashes[1:] == hashes[:-1]):
            return None                              # two tokens hash alike
        # every split point k (1 <= k < size) where both parts have a length some token has
        cuts = size - 1
        merged = np.repeat(np.arange(n), cuts)
        k = np.arange(len(merged)) - np.repeat(np.cumsum(cuts) - cuts, cuts) + 1
        occurs = np.zeros(MAX_SPLIT_TOKEN + 1, bool)
        occurs[size] = True
        keep = occurs[k] & occurs[size[merged] - k]
        merged, k = merged[keep], k[keep]
        left_hash = prefix[start[merged] + k - 1]
        left = _ids_of(left_hash, by_hash, hashes)
        hit = left >= 0
        merged, k, left, left_hash = merged[hit], k[hit], left[hit], left_hash[hit]
        powers = np.cumprod(np.full(MAX_SPLIT_TOKEN + 1, _BASE, np.uint64))   # powers[i]: base ** (i + 1)
        right = _ids_of(whole[merged] - left_hash * powers[size[merged] - k - 1], by_hash, hashes)
    hit = (right >= 0) & (size[left] == k) & (size[right] == size[merged] - k)
    merged, k, left, right = merged[hit], k[hit], left[hit], right[hit]
    same = _same_bytes(raw, start, size, merged, k, left, right)
    return left[same], right[same], merged[same]


def _prefix_hashes(raw: np.ndarray, start: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Each byte's hash of its token's bytes so far: one pass per byte position, longest tokens first."""
    prefix = raw.astype(np.uint64) + np.uint64(1)   # + 1: a leading zero byte changes the hash
    longest_first = np.argsort(-size, kind="stable")
    starts = start[longest_first]
    at_least = np.cumsum(np.bincount(size, minlength=MAX_SPLIT_TOKEN + 2)[::-1])[::-1]   # tokens of >= s B
    for j in range(1, int(size.max())):
        at = starts[:at_least[j + 1]] + j
        prefix[at] += prefix[at - 1] * _BASE
    return prefix


def _ids_of(keys: np.ndarray, by_hash: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """The id of the token whose hash is each key, or -1. ``hashes``: the tokens' hashes sorted,
    ``by_hash``: their ids in that order. Sorted keys make the binary searches walk forward."""
    order = np.argsort(keys)
    at = np.minimum(np.searchsorted(hashes, keys[order]), len(hashes) - 1)
    hit = hashes[at] == keys[order]
    out = np.full(len(keys), -1, np.int64)
    out[order[hit]] = by_hash[at[hit]]
    return out


def _same_bytes(raw, start, size, merged, k, left, right) -> np.ndarray:
    """Whether each ``merged`` token's bytes are ``left``'s then ``right``'s (``k`` bytes, then the rest)."""
    m = size[merged]
    first = np.cumsum(m) - m
    within = np.arange(int(m.sum())) - np.repeat(first, m)
    in_left = within < np.repeat(k, m)
    source = np.where(in_left, np.repeat(start[left], m), np.repeat(start[right] - k, m)) + within
    equal = raw[np.repeat(start[merged], m) + within] == raw[source]
    return np.logical_and.reduceat(equal, first) if len(first) else np.zeros(0, bool)
