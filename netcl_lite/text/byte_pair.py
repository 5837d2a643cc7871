"""Applying learned merges to one chunk: repeatedly merge the adjacent pair of lowest rank.

``ranks`` maps token bytes to rank (= token id for the byte-level tokens). A
pair's rank is the rank of its concatenated bytes, and among equal ranks the
leftmost pair merges first: tiktoken's rule, so both give identical ids.
Short chunks use two flat lists (C-level ``min``/``index``, O(n^2) but tiny);
long ones a heap over a linked list of parts, O(n log n). The encoder's hot
path, :func:`merge_ids`, works on ids with a table of every way each token
splits into two tokens, so a step is an int-keyed lookup, not a bytes concat.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from itertools import pairwise

__all__ = ["LONG_CHUNK", "merge_chunk", "merge_ids", "pair_table", "split_token"]

#: Chunks at least this many bytes long take the heap path.
LONG_CHUNK = 160
_NO_RANK = 1 << 62
_BYTE = [bytes([b]) for b in range(256)]


def merge_chunk(piece: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """Split ``piece`` into the token byte strings BPE gives it.

    >>> merge_chunk(b"aaab", {b"a": 0, b"b": 1, b"aa": 2, b"ab": 3, b"aab": 4})
    [b'aa', b'ab']

    (``aa`` has the lowest pair rank and the leftmost ``a a`` merges first;
    then ``a b`` merges; ``aa ab`` is no token, so BPE stops.)
    """
    if len(piece) >= LONG_CHUNK:
        return _merge_long(piece, ranks)
    return _merge_short(piece, ranks)


def pair_table(token_bytes: list[bytes], ranks: dict[bytes, int]) -> dict[int, int]:
    """``left_id << 32 | right_id -> id`` for every split of every token into two tokens.

    >>> pair_table([b"a", b"b", b"ab"], {b"a": 0, b"b": 1, b"ab": 2}) == {0 << 32 | 1: 2}
    True
    """
    table = {}
    for token_id, token in enumerate(token_bytes):
        for k in range(1, len(token)):
            left, right = ranks.get(token[:k]), ranks.get(token[k:])
            if left is not None and right is not None:
                table[left << 32 | right] = token_id
    return table


def merge_ids(ids: list[int], pairs: dict[int, int]) -> list[int]:
    """:func:`merge_chunk` on token ids (modified in place and returned); ``pairs`` from :func:`pair_table`.

    >>> merge_ids([0, 0, 0, 1], {0 << 32 | 0: 2, 0 << 32 | 1: 3, 2 << 32 | 1: 4})
    [2, 3]
    """
    get = pairs.get
    pair_ranks = [get(left << 32 | right, _NO_RANK) for left, right in pairwise(ids)]
    while pair_ranks:
        best = min(pair_ranks)
        if best == _NO_RANK:
            break
        i = pair_ranks.index(best)  # leftmost of the lowest rank; the merged token's id is that rank
        ids[i] = best
        del ids[i + 1], pair_ranks[i]
        if i:
            pair_ranks[i - 1] = get(ids[i - 1] << 32 | best, _NO_RANK)
        if i < len(pair_ranks):
            pair_ranks[i] = get(best << 32 | ids[i + 1], _NO_RANK)
    return ids


def _merge_short(piece: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    parts = list(map(_BYTE.__getitem__, piece))
    get = ranks.get
    pair_ranks = [get(left + right, _NO_RANK) for left, right in pairwise(parts)]
    while pair_ranks:
        best = min(pair_ranks)
        if best == _NO_RANK:
            break
        i = pair_ranks.index(best)  # leftmost of the lowest rank
        parts[i] += parts.pop(i + 1)
        del pair_ranks[i]
        if i:
            pair_ranks[i - 1] = get(parts[i - 1] + parts[i], _NO_RANK)
        if i < len(pair_ranks):
            pair_ranks[i] = get(parts[i] + parts[i + 1], _NO_RANK)
    return parts


def _merge_long(piece: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    n = len(piece)
    end = list(range(1, n + 1))  # end[i]: where the part starting at byte i ends; -1 once absorbed
    start_before = list(range(-1, n - 1))  # start of the part to the left of the part at i
    get = ranks.get
    heap = [(rank, i, i + 1, i + 2) for i in range(n - 1)
            if (rank := get(piece[i:i + 2])) is not None]
    heapify(heap)  # entries (rank, left start, right start, right end); lowest rank, leftmost first
    while heap:
        rank, i, mid, stop = heappop(heap)
        if end[i] != mid or end[mid] != stop:
            continue  # stale: one side has merged since this entry was pushed
        end[i], end[mid] = stop, -1
        if stop < n:
            start_before[stop] = i
            after = end[stop]
            if (rank := get(piece[i:after])) is not None:
                heappush(heap, (rank, i, stop, after))
        left = start_before[i]
        if left >= 0 and (rank := get(piece[left:stop])) is not None:
            heappush(heap, (rank, left, i, stop))
    parts, i = [], 0
    while i < n:
        parts.append(piece[i:end[i]])
        i = end[i]
    return parts


def split_token(token: bytes, ranks: dict[bytes, int], rank: int) -> list[bytes]:
    """BPE on ``token``'s bytes using only ranks below ``rank`` (recovers the merge that made it).

    >>> split_token(b"aab", {b"a": 0, b"b": 1, b"aa": 2, b"ab": 3, b"aab": 4}, 4)
    [b'aa', b'b']
    """
    below = {piece: r for piece in _subpieces(token) if (r := ranks.get(piece)) is not None and r < rank}
    return merge_chunk(token, below)


def _subpieces(token: bytes):
    n = len(token)
    return (token[i:j] for i in range(n) for j in range(i + 1, n + 1))
