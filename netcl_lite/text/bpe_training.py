"""Learning byte-level merges from chunk counts, with incremental pair counts.

Recounting every pair after every merge costs O(corpus) per merge. Here each
distinct chunk is one "word" (a list of token ids) with its frequency, and
three structures are kept up to date instead:

* ``counts``: pair -> weighted count over all words;
* ``where``:  pair -> indices of the words that contain (or once contained) it;
* a max-heap of ``(-count, left bytes, right bytes, left id, right id)``.

Merging ``(a, b) -> c`` visits only the words in ``where[(a, b)]`` and
adjusts the counts of the pairs around each merge site. Counts of old pairs
only fall and new pairs all contain ``c``, so the heap is lazy: a popped entry
whose count is out of date is pushed back with the current count.

Tie rule: the highest count wins; among equal counts, the lexically smallest
pair of byte strings (left bytes, then right bytes), the same rule as
:class:`~netcl_lite.text.WordBPE` and the Week 22 drill. Training stops early
when the best count falls below ``min_frequency`` (default 2: merging a pair
seen once only renames a single occurrence).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from heapq import heapify, heappop, heappush
from itertools import pairwise

from netcl_lite.text.progress import Progress

__all__ = ["count_chunks", "learn_merges"]

Pair = tuple[int, int]


def learn_merges(chunk_counts: Mapping[bytes, int], num_merges: int, *, min_frequency: int = 2,
                 progress: bool | None = None) -> list[tuple[Pair, int]]:
    """Learn up to ``num_merges`` merges over byte chunks; ids 0..255 are bytes, merges get 256, 257, ...

    Returns the trace: ``((left_id, right_id), weighted_count)`` in merge order.

    >>> learn_merges({b"abab": 2, b"ab": 1}, 5)
    [((97, 98), 5), ((256, 256), 2)]
    """
    vocab = [bytes([b]) for b in range(256)]  # id -> bytes
    known = set(vocab)
    words = [list(piece) for piece in chunk_counts if len(piece) > 1]
    freqs = [f for piece, f in chunk_counts.items() if len(piece) > 1]
    # --8<-- [start:count_pairs]
    counts: dict[Pair, int] = defaultdict(int)
    where: dict[Pair, set[int]] = defaultdict(set)
    for i, word in enumerate(words):
        f = freqs[i]
        for pair in pairwise(word):
            counts[pair] += f
            where[pair].add(i)
    # --8<-- [end:count_pairs]
    # subtle: a pair's count never rises once it exists (a pair is only ever created by the merge
    # that makes its newer token), so a pair below min_frequency can never merge: not queued.
    heap = [(-c, vocab[a], vocab[b], a, b) for (a, b), c in counts.items() if c >= min_frequency]
    heapify(heap)
    trace: list[tuple[Pair, int]] = []
    bar = Progress(progress)
    # --8<-- [start:merge_step]
    while len(trace) < num_merges and heap:
        neg, left, right, a, b = heappop(heap)
        count = counts.get((a, b), 0)
        if count != -neg:  # stale: the pair lost occurrences since it was pushed
            if count > 0:
                heappush(heap, (-count, left, right, a, b))
            continue
        if count < min_frequency:
            break
        merged = left + right
        if merged in known:
            # subtle: these bytes already are a token, reached by another split; a second id
            # for the same bytes would break bytes -> rank, so this pair never merges (it is
            # not pushed back).
            continue
        new_id = len(vocab)
        vocab.append(merged)
        known.add(merged)
        trace.append(((a, b), count))
        for pair in _merge_everywhere(words, freqs, counts, where, a, b, new_id, min_frequency):
            heappush(heap, (-counts[pair], vocab[pair[0]], vocab[pair[1]], *pair))
        bar.update(f"BPE training: merge {len(trace)}/{num_merges} (count {count})")
    # --8<-- [end:merge_step]
    bar.close(f"BPE training: {len(trace)} merges")
    return trace


# --8<-- [start:merge_everywhere]
def _merge_everywhere(words, freqs, counts, where, a: int, b: int, new_id: int, min_frequency: int):
    """Replace ``a b`` by ``new_id`` in every word that has it; return the new pairs that may merge.

    Counts may fall to zero and stay in ``counts`` (deleting costs more than it saves). Every
    new pair contains ``new_id``, so none existed before: they are gathered apart and added
    last; only those seen ``min_frequency`` times are indexed in ``where`` (no other can merge).
    """
    new_counts: dict[Pair, int] = defaultdict(int)
    new_where: dict[Pair, set[int]] = defaultdict(set)
    distinct = a != b
    for i in where.pop((a, b)):
        word = words[i]
        n = len(word)
        once = distinct and word.count(a) == 1
        if once:  # the common case, without building a list of sites
            s = word.index(a)
            sites = [s] if s + 1 < n and word[s + 1] == b else None
        else:
            sites = _merge_sites(word, a, b)
        if not sites:
            continue  # stale index: an earlier merge consumed this word's occurrences
        f = freqs[i]
        if len(sites) == 1:  # by far the most common case: one site, two neighbours at most
            s = sites[0]
            if s:
                left = word[s - 1]
                pair = (left, a)
                counts[pair] -= f
                if once and (holders := where.get(pair)):  # the word's only (left, a) is gone
                    holders.discard(i)
                pair = (left, new_id)
                new_counts[pair] += f
                new_where[pair].add(i)
            if s + 2 < n:
                right = word[s + 2]
                pair = (b, right)
                counts[pair] -= f
                if once and word.count(b) == 1 and (holders := where.get(pair)):
                    holders.discard(i)
                pair = (new_id, right)
                new_counts[pair] += f
                new_where[pair].add(i)
            word[s:s + 2] = (new_id,)
            continue
        last = len(word) - 1
        done = -1  # pair positions k (the pair word[k], word[k + 1]) already handled
        for s in sites:  # the neighbours of each site lose a pair; (a, b) itself goes below
            for k in (s - 1, s + 1):
                if done < k < last and k >= 0:
                    done = k
                    counts[word[k], word[k + 1]] -= f
        merged, prev = [], 0
        for s in sites:
            merged += word[prev:s]
            merged.append(new_id)
            prev = s + 2
        merged += word[prev:]
        words[i] = merged
        last = len(merged) - 1
        done = -1
        for j, s in enumerate(sites):
            q = s - j  # where this site's new token sits in the merged word
            for k in (q - 1, q):
                if done < k < last and k >= 0:
                    done = k
                    pair = (merged[k], merged[k + 1])
                    new_counts[pair] += f
                    new_where[pair].add(i)
    counts.pop((a, b), None)  # every occurrence merged: no (a, b) is left anywhere
    counts.update(new_counts)
    frequent = [pair for pair, count in new_counts.items() if count >= min_frequency]
    for pair in frequent:
        where[pair] = new_where[pair]
    return frequent


def _merge_sites(word: list[int], a: int, b: int) -> list[int]:
    """Start positions of non-overlapping ``a b`` pairs, left to right.

    >>> _merge_sites([1, 1, 1, 2, 1, 1], 1, 1)
    [0, 4]
    """
    last = len(word) - 1
    todo = word.count(a) - (word[last] == a)  # occurrences of a with a right neighbour
    sites, k = [], 0
    while todo > 0:
        k = word.index(a, k)  # C-level scan to the next a
        todo -= 1
        if word[k + 1] == b:
            sites.append(k)
            if a == b and k + 1 < last:
                todo -= 1  # that b was an a with a right neighbour too
            k += 2
        else:
            k += 1
    return sites
# --8<-- [end:merge_everywhere]


def count_chunks(texts: Iterable[str], split: Callable[[str], list[str]], progress: bool | None = None
                 ) -> dict[bytes, int]:
    """How often each chunk occurs in ``texts`` (``split``: the pre-split), keyed by its UTF-8 bytes.
    The texts are streamed: a generator of many megabytes is never held as one string.

    >>> count_chunks(["ab ab", "ab"], str.split)
    {b'ab': 3}
    """
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise TypeError(f"train_from_iterator: iterator must yield texts (e.g. a list of str), "
                        f"got {type(texts).__name__}; wrap a single text as [text]")
    bar = Progress(progress)
    counts: Counter[str] = Counter()
    read = 0
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"train_from_iterator: item {index} must be a str, got {type(text).__name__}")
        counts.update(split(text))
        read += len(text)
        bar.update(f"BPE training: counted {index + 1} texts, {read / 1e6:.1f} M characters")
    bar.close()
    chunk_counts = {}
    for chunk, n in counts.items():
        try:
            chunk_counts[chunk.encode("utf-8")] = n
        except UnicodeEncodeError:
            raise ValueError(f"train_from_iterator: the texts contain a lone surrogate in "
                             f"{chunk!r}, which UTF-8 cannot encode; clean the text first") from None
    return chunk_counts
