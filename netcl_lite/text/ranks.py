"""tiktoken's vocabulary format: ``mergeable_ranks``, token bytes -> rank, and the merges behind it.

tiktoken stores no merge list: a token's rank is both its id and its merge
priority, and encoding needs nothing else (see :func:`~netcl_lite.text.byte_pair.rank_pair_table`).
The merge that made a token is recovered only when someone asks for it
(:func:`derive_merges`): the split of its bytes into two lower-ranked tokens
that BPE itself reaches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from netcl_lite.text.byte_pair import PairTable, merge_ids, split_points, token_lengths

__all__ = ["check_ranks", "derive_merges"]


def check_ranks(mergeable_ranks: Mapping[bytes, int]) -> list[bytes]:
    """Check tiktoken-style ranks and return the tokens in rank order (index = rank = id).

    Ranks must run 0..N-1 without gaps, and ranks 0..255 must be the 256 single bytes (in
    any order). Every error is a ``ValueError`` naming the offending entry.

    >>> check_ranks({bytes([b]): b for b in range(256)} | {b"hi": 256})[-2:]
    [b'\\xff', b'hi']
    """
    if not isinstance(mergeable_ranks, Mapping):
        raise TypeError(f"mergeable_ranks must be a mapping bytes -> rank, got "
                        f"{type(mergeable_ranks).__name__}")
    by_rank: list[bytes | None] = [None] * len(mergeable_ranks)
    for token, rank in mergeable_ranks.items():
        if not isinstance(token, bytes) or not token or type(rank) is not int:
            raise ValueError(f"mergeable_ranks: entry {token!r}: {rank!r} is not non-empty bytes -> int")
        if not 0 <= rank < len(by_rank):
            raise ValueError(f"mergeable_ranks: {token!r} has rank {rank}, but {len(by_rank)} tokens "
                             f"need ranks 0..{len(by_rank) - 1} without gaps")
        if by_rank[rank] is not None:
            raise ValueError(f"mergeable_ranks: {by_rank[rank]!r} and {token!r} share rank {rank}")
        by_rank[rank] = token
    # no gaps now: len(by_rank) distinct ranks, each in 0..len - 1
    if len(by_rank) < 256 or any(len(by_rank[r]) != 1 for r in range(256)):
        raise ValueError("mergeable_ranks: ranks 0..255 must be the 256 single bytes (in any order)")
    return by_rank


def derive_merges(token_bytes: Sequence[bytes], pairs: PairTable) -> tuple[tuple[int, int], ...]:
    """``(left, right)`` for ids 256, 257, ...: the two lower-ranked tokens each token is made of.

    ``pairs`` is the vocabulary's :func:`~netcl_lite.text.byte_pair.rank_pair_table`. Most
    tokens split into two lower-ranked tokens in more than one way; the merge is the split
    that BPE reaches on the token's own bytes with the lower ranks. (A token that BPE cannot
    reach, which tiktoken emits only for a chunk equal to it, gets its leftmost split.)

    >>> from netcl_lite.text.byte_pair import rank_pair_table
    >>> tokens = [bytes([b]) for b in range(256)] + [b"ab", b"bc", b"abc"]
    >>> derive_merges(tokens, rank_pair_table(tokens))
    ((97, 98), (98, 99), (256, 99))
    """
    ids = {t: i for i, t in enumerate(token_bytes)}
    byte_ids = [ids[bytes([b])] for b in range(256)]
    get = ids.get
    merges = []
    lengths = token_lengths(token_bytes)
    for rank in range(256, len(token_bytes)):
        token = token_bytes[rank]
        splits = [(left, right) for k in split_points(len(token), lengths)
                  if (left := get(token[:k], rank)) < rank and (right := get(token[k:], rank)) < rank]
        if len(splits) > 1:
            reached = merge_ids(list(map(byte_ids.__getitem__, token)), pairs, limit=rank)
            if len(reached) == 2:
                splits[0] = tuple(reached)
        merges.append(splits[0])
    return tuple(merges)
