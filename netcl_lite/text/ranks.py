"""tiktoken's vocabulary format: ``mergeable_ranks``, token bytes -> rank, and the merges behind it.

tiktoken stores no merge list: a token's rank is both its id and its merge
priority. The merge that made a token is recovered by running BPE on the
token's own bytes with only the lower ranks: it must end in exactly two
tokens, and the token is their merge.
"""

from __future__ import annotations

from collections.abc import Mapping

from netcl_lite.text.byte_pair import split_token

__all__ = ["merges_from_ranks"]


def merges_from_ranks(mergeable_ranks: Mapping[bytes, int]) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """Return ``(base_bytes, merges)``: the byte of ids 0..255, and ``(left, right)`` for ids 256, 257, ...

    >>> base, merges = merges_from_ranks({bytes([b]): b for b in range(256)} | {b"hi": 256, b"hi!": 257})
    >>> merges
    ((104, 105), (256, 33))
    """
    if not isinstance(mergeable_ranks, Mapping):
        raise TypeError(f"mergeable_ranks must be a mapping bytes -> rank, got "
                        f"{type(mergeable_ranks).__name__}")
    by_rank: dict[int, bytes] = {}
    for token, rank in mergeable_ranks.items():
        if not isinstance(token, bytes) or not token or type(rank) is not int:
            raise ValueError(f"mergeable_ranks: entry {token!r}: {rank!r} is not non-empty bytes -> int")
        if rank in by_rank:
            raise ValueError(f"mergeable_ranks: {by_rank[rank]!r} and {token!r} share rank {rank}")
        by_rank[rank] = token
    n = len(by_rank)
    if n < 256 or set(by_rank) != set(range(n)):
        missing = sorted(set(range(max(n, 256))) - set(by_rank))[:10]
        raise ValueError(f"mergeable_ranks: ranks must be contiguous 0..N-1 with N >= 256 "
                         f"(missing e.g. {missing})")
    if any(len(by_rank[r]) != 1 for r in range(256)):
        raise ValueError("mergeable_ranks: ranks 0..255 must be the 256 single bytes")
    merges = []
    for rank in range(256, n):
        token = by_rank[rank]
        parts = split_token(token, mergeable_ranks, rank)
        if len(parts) != 2:
            raise ValueError(f"mergeable_ranks: token {token!r} (rank {rank}) is not the merge of "
                             f"two lower-ranked tokens; BPE on its bytes with ranks < {rank} gives "
                             f"{parts}")
        merges.append((mergeable_ranks[parts[0]], mergeable_ranks[parts[1]]))
    return tuple(by_rank[r][0] for r in range(256)), tuple(merges)
