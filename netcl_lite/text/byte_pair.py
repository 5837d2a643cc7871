"""Applying merges to one chunk: repeatedly merge the adjacent pair of lowest priority, leftmost first.

The encoder works on token ids with a *pair table*: ``table[left_id]`` is a dict
``right_id -> value``, where ``value & 0xFFFFFFFF`` is the id the pair merges into and smaller
values merge first. (A list of small dicts, not one dict keyed by ``left << 32 | right``: a
merge step looks up the two new pairs around it, and ``table[left].get(right)`` builds no
big integer key; on multilingual text, where most chunks are new, that is ~20 % of the loop.)
Two rules fill the table:

* tiktoken's (:func:`rank_pair_table`): any two tokens whose bytes join into a token merge
  into it, at that token's rank; the rank is the id, so the value is the id itself;
* Hugging Face's (:func:`listed_pair_table`): only the listed merges, earliest first
  (value = position << 32 | id).

Among equal values the leftmost pair merges first, as in both libraries. Short chunks use a
flat list of pair values (C-level ``min``/``index``: O(n²), but n is small);
long ones a heap over a linked list of parts, O(n log n). :func:`merge_chunk` is the same
algorithm on bytes, the plain statement of tiktoken's rule that the tests compare against.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from heapq import heapify, heappop, heappush
from itertools import islice, pairwise, repeat
from operator import getitem

import numpy as np

from netcl_lite.text.token_splits import token_splits

__all__ = ["LONG_CHUNK", "NO_MERGE", "PairTable", "UnmadeTokenError", "chunk_encoder", "listed_pair_table", "merge_chunk",
           "merge_ids", "merge_ids_long", "rank_pair_table", "split_loop_table", "split_points",
           "token_lengths"]

#: Chunks at least this many bytes long take the heap path.
LONG_CHUNK = 160
#: Pair value of a pair that never merges (above every real value).
NO_MERGE = 1 << 62
_ID = 0xFFFFFFFF  # the merged id in a pair value
_BYTE = [bytes([b]) for b in range(256)]

#: ``table[left_id][right_id] -> value``; every id that can occur has a row (often empty).
PairTable = list[dict[int, int]]
_NO_PAIRS: dict[int, int] = {}   # the row of every id that starts no pair (tables are never written after)


class UnmadeTokenError(ValueError):
    """A token that no two lower-ranked tokens make; ``.rank`` says which (a file reader names its line)."""

    def __init__(self, token: bytes, rank: int):
        shown = repr(token) if len(token) <= 80 else f"{token[:80]!r}... ({len(token)} bytes)"
        super().__init__(f"token {shown} (rank {rank}) is not the merge of two lower-ranked tokens, "
                         f"so no merge could have made it")
        self.rank = rank


def rank_pair_table(token_bytes: Sequence[bytes]) -> PairTable:
    """tiktoken's rule: ``table[left][right] = id`` for every split of every token into two tokens.

    ``token_bytes[i]`` is the token of rank (= id) ``i``. Raises ``ValueError`` for a token past
    the 256 bytes that no two lower-ranked tokens make (:class:`UnmadeTokenError`).

    >>> rank_pair_table([b"a", b"b", b"ab"])
    [{1: 2}, {}, {}]

    The splits come from :func:`~netcl_lite.text.token_splits.token_splits`; the dict loop
    (:func:`split_loop_table`) is the plain statement, and takes the vocabularies it declines.

    >>> tokens = [bytes([b]) for b in range(256)] + [b"ab", b"bc", b"abc", b"bcbc", b"abcbc", b"\\0a"]
    >>> rank_pair_table(tokens) == split_loop_table(tokens)
    True
    """
    found = token_splits(token_bytes)
    if found is not None:
        return _table_of(len(token_bytes), *found, token_bytes)
    return split_loop_table(token_bytes)


def split_loop_table(token_bytes: Sequence[bytes]) -> PairTable:
    """:func:`rank_pair_table` by trying each split point of each token in a dict of the tokens."""
    ids = {t: i for i, t in enumerate(token_bytes)}
    get = ids.get
    table = [{} for _ in token_bytes]
    lengths = token_lengths(token_bytes)
    for token_id, token in enumerate(token_bytes):
        made = token_id < 256
        for k in split_points(len(token), lengths):
            left = get(token[:k])
            if left is not None and (right := get(token[k:])) is not None:
                table[left][right] = token_id
                made = made or (left < token_id and right < token_id)
        if not made:
            raise UnmadeTokenError(token, token_id)
    return table


def _table_of(n: int, left: np.ndarray, right: np.ndarray, merged: np.ndarray,
              token_bytes: Sequence[bytes]) -> PairTable:
    """The pair table of :func:`~netcl_lite.text.token_splits.token_splits`' arrays; raises for the
    lowest-ranked token past the 256 bytes that no split into two lower-ranked tokens makes."""
    made = np.zeros(n, bool)
    made[:256] = True
    made[merged[(left < merged) & (right < merged)]] = True
    if not made.all():
        rank = int(np.argmin(made))
        raise UnmadeTokenError(token_bytes[rank], rank)
    table = [_NO_PAIRS] * n
    if not len(left):
        return table
    order = np.argsort(left, kind="stable")
    left = left[order]
    firsts = np.flatnonzero(np.r_[True, left[1:] != left[:-1]])
    rights, merges = iter(right[order].tolist()), iter(merged[order].tolist())
    for row, count in zip(left[firsts].tolist(), np.diff(np.r_[firsts, len(left)]).tolist()):
        table[row] = dict(zip(islice(rights, count), islice(merges, count)))   # one row, at its size
    return table


def token_lengths(token_bytes: Sequence[bytes]) -> tuple[list[int], set[int]]:
    """The lengths that tokens have, sorted and as a set: only these can be a split's parts."""
    present = {len(t) for t in token_bytes}
    return sorted(present), present


def split_points(n: int, lengths: tuple[list[int], set[int]]):
    """Each k in 1..n-1 where a token of n bytes could split into two tokens (both lengths occur),
    ascending. Trying every k would cost the square of a token's length (each slice is hashed),
    which a file holding one huge token turns into minutes; this costs its length.

    >>> list(split_points(5, token_lengths([b"a", b"bc", b"abc", b"abcde"])))
    [2, 3]
    """
    ordered, present = lengths
    for k in ordered:
        if k >= n:
            return
        if n - k in present:
            yield k


def listed_pair_table(merges: Sequence[tuple[int, int, int]], size: int = 0) -> PairTable:
    """Hugging Face's rule: ``table[left][right] = position << 32 | merged`` for the listed merges only.

    ``size``: rows for ids ``0..size - 1`` at least (the vocabulary's size), so that any id
    the encoder meets has a row, even one no merge names.

    >>> listed_pair_table([(0, 1, 5), (5, 0, 6)])[:2]
    [{1: 5}, {}]
    >>> listed_pair_table([(0, 1, 5), (5, 0, 6)])[5] == {0: 1 << 32 | 6}
    True
    """
    none: dict[int, int] = {}     # one shared row for the ids no merge starts from (never written)
    table = [none] * max([size, *(max(m) + 1 for m in merges)])
    for k, (left, right, merged) in enumerate(merges):
        if table[left] is none:
            table[left] = {}
        table[left][right] = k << 32 | merged
    return table


def merge_ids(ids: list[int], pairs: PairTable, limit: int = NO_MERGE) -> list[int]:
    """Merge ``ids`` (in place, and returned) with a pair table; only values below ``limit`` merge.

    >>> merge_ids([0, 0, 0, 1], [{0: 2, 1: 3}, {}, {1: 4}, {}])
    [2, 3]

    (``0 0`` has the lowest value and the leftmost one merges first; then ``0 1``;
    ``2 3`` is no pair, so BPE stops.)
    """
    values = [pairs[left].get(right, NO_MERGE) for left, right in pairwise(ids)]
    while values:
        best = min(values)
        if best >= limit:
            break
        i = values.index(best)  # leftmost of the lowest value
        ids[i] = merged = best & _ID
        del ids[i + 1], values[i]
        if i:
            values[i - 1] = pairs[ids[i - 1]].get(merged, NO_MERGE)
        if i < len(values):
            values[i] = pairs[merged].get(ids[i + 1], NO_MERGE)
    return ids


def chunk_encoder(byte_ids: Sequence[int], pairs: PairTable,
                  ranked: bool = False) -> Callable[[bytes], list[int]]:
    """``encode(piece) -> ids``: BPE on one chunk's bytes. ``byte_ids[b]`` is the id of byte ``b``;
    ``ranked``: ``pairs`` is a :func:`rank_pair_table`, whose values are the merged ids themselves.

    This is the cold path of encoding (every chunk not seen before comes here), so the setup
    stays in C: a chunk's bytes become ids with one ``bytes.translate`` (when the byte ids
    are 0..255, as under tiktoken's rule), and its first pair values come from a table
    of all 65,536 byte pairs, one row per first byte (two C-level lookups per pair).
    The merge loop is :func:`merge_ids` without the limit, written out here to save a
    call per chunk; a last value that never merges keeps ``min`` from an empty list. Under
    tiktoken's rule the lowest value is the merged id: no mask, and no new int, a step.

    >>> encode = chunk_encoder(range(256), [{98: 256} if i == 97 else {} for i in range(257)])
    >>> encode(b"abc")
    [256, 99]
    """
    byte_ids = list(byte_ids)
    byte_rows = [list(map(pairs[left].get, byte_ids, repeat(NO_MERGE))) for left in byte_ids]
    to_ids = bytes(byte_ids) if max(byte_ids) < 256 else None  # None: a tokenizer.json's own byte ids
    byte_id, byte_row, no_merge, id_bits = byte_ids.__getitem__, byte_rows.__getitem__, NO_MERGE, _ID

    def encode_ranked(piece: bytes) -> list[int]:
        if len(piece) >= LONG_CHUNK:
            return merge_ids_long(list(map(byte_id, piece)), pairs)
        ids = list(piece.translate(to_ids)) if to_ids else list(map(byte_id, piece))
        values = list(map(getitem, map(byte_row, piece), piece[1:]))  # byte_rows[b1][b2]
        values.append(no_merge)  # len(values) == len(ids) from here on
        last = len(piece) - 1    # the index of the last id, counted down (no len() a step)
        while (best := min(values)) != no_merge:
            i = values.index(best)  # leftmost of the lowest value
            ids[i] = best
            del ids[i + 1], values[i]
            last -= 1
            if i:
                values[i - 1] = pairs[ids[i - 1]].get(best, no_merge)
            if i < last:
                values[i] = pairs[best].get(ids[i + 1], no_merge)
        return ids

    def encode(piece: bytes) -> list[int]:   # the same, for a merge list's values
        if len(piece) >= LONG_CHUNK:
            return merge_ids_long(list(map(byte_id, piece)), pairs)
        ids = list(piece.translate(to_ids)) if to_ids else list(map(byte_id, piece))
        values = list(map(getitem, map(byte_row, piece), piece[1:]))
        values.append(no_merge)
        last = len(piece) - 1
        while (best := min(values)) != no_merge:
            i = values.index(best)
            ids[i] = merged = best & id_bits
            del ids[i + 1], values[i]
            last -= 1
            if i:
                values[i - 1] = pairs[ids[i - 1]].get(merged, no_merge)
            if i < last:
                values[i] = pairs[merged].get(ids[i + 1], no_merge)
        return ids

    return encode_ranked if ranked else encode


def merge_ids_long(ids: list[int], pairs: PairTable) -> list[int]:
    """:func:`merge_ids` for long chunks: a heap of candidate pairs over a linked list of parts.

    >>> merge_ids_long([0, 0, 0, 1], [{0: 2, 1: 3}, {}, {1: 4}, {}])
    [2, 3]
    """
    n = len(ids)
    token = list(ids)  # token[i]: the token of the part starting at position i
    nxt = list(range(1, n + 1))  # next part's start; n past the end
    prev = list(range(-1, n - 1))
    alive = [True] * n
    heap = [(value, i, ids[i], ids[i + 1]) for i in range(n - 1)
            if (value := pairs[ids[i]].get(ids[i + 1])) is not None]
    heapify(heap)  # (value, left position, left token, right token): lowest value, leftmost first
    while heap:
        value, i, left, right = heappop(heap)
        if not alive[i] or (j := nxt[i]) >= n or token[i] != left or token[j] != right:
            continue  # stale: one side has merged since this entry was pushed
        token[i] = merged = value & _ID
        alive[j] = False
        nxt[i] = after = nxt[j]
        if after < n:
            prev[after] = i
            if (v := pairs[merged].get(token[after])) is not None:
                heappush(heap, (v, i, merged, token[after]))
        if (before := prev[i]) >= 0 and (v := pairs[token[before]].get(merged)) is not None:
            heappush(heap, (v, before, token[before], merged))
    out, i = [], 0
    while i < n:
        out.append(token[i])
        i = nxt[i]
    return out


def merge_chunk(piece: bytes, ranks: Mapping[bytes, int]) -> list[bytes]:
    """tiktoken's rule on bytes: merge the adjacent pair whose join has the lowest rank, leftmost first.

    >>> merge_chunk(b"aaab", {b"a": 0, b"b": 1, b"aa": 2, b"ab": 3, b"aab": 4})
    [b'aa', b'ab']

    (``aa`` has the lowest rank and the leftmost ``a a`` merges first; then ``a b``
    merges; ``aa ab`` is no token, so BPE stops.)
    """
    # --8<-- [start:encode_by_rank]
    parts = list(map(_BYTE.__getitem__, piece))
    get = ranks.get
    values = [get(left + right, NO_MERGE) for left, right in pairwise(parts)]
    while values and (best := min(values)) != NO_MERGE:
        i = values.index(best)
        parts[i] += parts.pop(i + 1)
        del values[i]
        if i:
            values[i - 1] = get(parts[i - 1] + parts[i], NO_MERGE)
        if i < len(values):
            values[i] = get(parts[i] + parts[i + 1], NO_MERGE)
    return parts
    # --8<-- [end:encode_by_rank]
