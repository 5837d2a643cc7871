"""Adaptive count models of the tokens that follow a context, and the linear mixer that joins them
to a language model's predictions.

:class:`NGram` counts which token followed each context of up to :data:`ORDERS` tokens, first in
primer ids (the training text), then in every token coded, and predicts with interpolated
absolute discounting; it also keeps each context's most recent successor (what a match model of
that order predicts). :class:`WordNGram` counts the same over word contexts (lower-cased,
whitespace stripped, the separator kept) and interpolates with weights learned online.
:class:`Mixer` mixes the model's distribution with the n-gram's (several of its orders and a
cache of the coded text alone), linearly, with weights learned online per context bucket.
All run on the host in float64 over all streams at once, and depend only on the tokens seen,
so :mod:`netcl_lite.compression`'s two sides compute the same probabilities. The constants were
chosen on Chapter 9's validation split (``benchmarks/results/capstone.md``).

    >>> ngram = NGram(np.array([1, 2, 3, 1, 2, 3]), vocab=5, streams=1, orders=2)
    >>> ngram.update(np.array([1]), np.array([True])); ngram.update(np.array([2]), np.array([True]))
    >>> p, reached, total = ngram.predict()
    >>> int(p[0].argmax()), int(reached[0]), float(total[0])      # "1 2" was followed by 3, twice
    (3, 2, 2.0)
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from . import checks
from .match import last_wins

ORDERS = 8                     # longest context the n-gram counts, in tokens
#: absolute discount per order 0..15 (:data:`MAX_ORDERS`): chosen for orders 0..ORDERS, from order 3 on
#: 0.8; the orders past ORDERS, which the n-gram also counts when asked, keep that 0.8
DISCOUNT = (0.5, 0.5, 0.7) + (0.8,) * 13
ADDED_WEIGHT = 8               # what a coded token adds to its counts (a training token adds 1)
MIX_ORDERS = (1, 2, 4)         # the n-gram's distributions after these orders are mixed in too
SUCCESSOR_ORDERS = 6           # contexts up to this order keep their most recent successor
LOG2_BUCKETS = 12              # weight sets per order reached and log2 of its count (capped)
MIX_RATE = 0.02                # step of the online weights (exponentiated gradient)
CACHE_DISCOUNT = 0.5           # the cache model's discount, in coded tokens
MIN_WEIGHT = 1e-4              # no weight falls below this, so p_i(x) / p(x) <= 1 / MIN_WEIGHT
MAX_EXPONENT = 30.0            # nor does one update move a weight by more than e^30
MIX_INIT = 0.6                 # the model's initial weight (the full n-gram 0.3, the rest share 0.1)
WORD_ORDERS = 4                # words of context :class:`WordNGram` counts
WORD_RATE = 0.05               # step of its learned interpolation weights
WORD_INIT = 0.3                # their starting value
DENSE_CELLS = 1 << 22          # order 1's counts are dense (contexts, vocab) int32 tables up to this size

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)     # an odd multiplier that spreads a hash's bits upward
_PACK = 40                                  # a coded context's one successor: token << _PACK | count
_PACK_MASK = (1 << _PACK) - 1


def _extend(h: np.ndarray, tokens: np.ndarray, vocab: int) -> np.ndarray:
    """Context hashes one token longer (to the left): exact while (vocab + 1)^order < 2^64 (beyond,
    they wrap, as unsigned array arithmetic does without a warning)."""
    return h * np.uint64(vocab + 1) + (tokens.astype(np.uint64) + np.uint64(1))


def _token_bits(vocab: int) -> int:
    return max(1, int(vocab - 1).bit_length())


def _context_keys(h: np.ndarray, token_bits: int) -> np.ndarray:
    """A context's key: its hash mixed and cut to 60 − ``token_bits`` bits, so that with its order
    in the 4 bits above (:func:`_tagged`) and a token in the bits below, a (context, token) pair
    fits 64 bits: ``(order << (60 − token_bits) | key) << token_bits | token``."""
    return (h * _GOLDEN) >> np.uint64(token_bits + 4)


def _tag(order: int, keys: np.ndarray, token_bits: int) -> np.ndarray:
    """Context keys of one order tagged with it in their top 4 bits (orders 1..15)."""
    return (np.uint64(order) << np.uint64(60 - token_bits)) | keys


#: the most orders a model counts: its keys tag the order in 4 bits (:func:`_tag`)
MAX_ORDERS = 15


def _check(primer, vocab, streams, orders) -> np.ndarray:
    """``primer`` as int64 ids, once ``vocab``, ``streams`` and ``orders`` are checked."""
    checks.positive_int("vocab", vocab, "the model's vocab_size")
    checks.positive_int("streams", streams)
    checks.int_in("orders", orders, 1, MAX_ORDERS + 1, "the order is kept in 4 bits of each key")
    return checks.id_array("primer", primer, vocab)


def _powers(base: int, orders: int) -> np.ndarray:
    """(orders, orders) uint64: base^(k − j) mod 2^64 at [j, k] for j ≤ k, 0 below: x @ this,
    for x (B, orders) whose column j is the (j + 1)-th newest symbol plus one, gives in column
    k − 1 the hash :func:`_extend` (or :func:`_word_hash`) builds from the k newest, newest
    first, as unsigned arithmetic wraps (a sum mod 2^64 in any order)."""
    m = np.zeros((orders, orders), np.uint64)
    for j in range(orders):
        for k in range(j, orders):
            m[j, k] = pow(base, k - j, 1 << 64)
    return m


def _tag_orders(keys: np.ndarray, token_bits: int) -> np.ndarray:
    """(K, B) context keys of orders 1..K (row k − 1: order k), each tagged with its order (:func:`_tag`)."""
    tags = np.arange(1, keys.shape[0] + 1, dtype=np.uint64) << np.uint64(60 - token_bits)
    return tags[:, None] | keys


def _tagged(keys: list[np.ndarray], token_bits: int) -> np.ndarray:
    """(K, B) context keys of orders 1..K, each tagged with its order (:func:`_tag`)."""
    return np.stack([_tag(k, h, token_bits) for k, h in enumerate(keys, start=1)])


@dataclass(frozen=True)
class _Primed:
    """Counts in the primer, every order in one table: the sorted tagged contexts, each with a
    run of (token, count) and the token that followed its last occurrence (-1 where not asked for)."""
    contexts: np.ndarray       # (U,) uint64, sorted tagged contexts
    starts: np.ndarray         # (U + 1,) offsets into tokens and counts
    tokens: np.ndarray         # (E,) int64
    counts: np.ndarray         # (E,) float64
    last: np.ndarray           # (U,) int64
    sample: np.ndarray         # every SEARCH_BLOCK-th context (:func:`sorted_search`)

    def find(self, keys: np.ndarray) -> np.ndarray:
        """``np.searchsorted(self.contexts, keys)``: where each of ``keys`` is or would go."""
        return sorted_search(self.contexts, self.sample, keys)


#: a sorted table's keys are searched in blocks of this many (:func:`sorted_search`)
SEARCH_BLOCK = 16


def sorted_search(table: np.ndarray, sample: np.ndarray, keys) -> np.ndarray:
    """``np.searchsorted(table, keys)`` (the left side) for a sorted 1-D ``table`` and ``sample`` =
    ``table[::SEARCH_BLOCK]``, for ``keys`` of any shape (a 0-d key too), as that gives: for an
    integer table and keys of a type it holds (the n-gram's uint64 contexts), the sample
    (1/SEARCH_BLOCK of the table, searched with fewer cache misses than the table) finds each key's
    block, then one gather of each block's keys and a count of those below the key finish: a couple
    of cache lines read per key, where a binary search over a table of millions misses the cache at
    most of its two dozen steps. Any other table or keys (floats, where a NaN sorts last; keys that
    would change as the table's type, a float key or a negative one in an unsigned table) take
    ``np.searchsorted`` itself."""
    if not isinstance(table, np.ndarray) or not isinstance(sample, np.ndarray) or table.ndim != 1 \
            or sample.shape != ((table.size + SEARCH_BLOCK - 1) // SEARCH_BLOCK,):
        raise ValueError(f"sorted_search: table must be a 1-D array and sample its every {SEARCH_BLOCK}-th "
                         f"key (table[::SEARCH_BLOCK]); got shapes {getattr(table, 'shape', None)} and "
                         f"{getattr(sample, 'shape', None)}")
    keys = np.asarray(keys)
    if table.dtype.kind not in "iu" or not np.can_cast(keys.dtype, table.dtype):
        return np.searchsorted(table, keys)
    shape = keys.shape
    keys = keys.astype(table.dtype, copy=False).reshape(-1)
    if not table.size or not keys.size:
        return np.zeros(shape, np.int64)
    # the last block whose first key is below the key: every key before it is below too, none after
    start = (sample.searchsorted(keys) - 1) * SEARCH_BLOCK          # -SEARCH_BLOCK: none below
    at = np.maximum(start, 0)[:, None] + np.arange(SEARCH_BLOCK)
    inside = at < table.size
    below = (table[np.minimum(at, table.size - 1)] < keys[:, None]) & inside
    return np.where(start < 0, 0, start + below.sum(axis=1)).reshape(shape)


def _sampled(table: np.ndarray) -> np.ndarray:
    """The sample :func:`sorted_search` takes for ``table``: a copy of every SEARCH_BLOCK-th key."""
    return table[::SEARCH_BLOCK].copy()


def _prime(keys: list[np.ndarray], nxt: list[np.ndarray], token_bits: int, last_orders: int) -> _Primed:
    """Count the pairs (``keys[k - 1][i]``, ``nxt[k - 1][i]``) of each order k, and the last
    successor of each context of orders up to ``last_orders``."""
    tb = np.uint64(token_bits)
    pairs, counts, lasts = [], [], []
    for k, (ctx, follow) in enumerate(zip(keys, nxt), start=1):
        ctx = _tag(k, ctx, token_bits)
        pair = (ctx << tb) | follow.astype(np.uint64)
        keep_last = k <= last_orders
        # the positions in pair order (any order among equal pairs): a context's run of pairs is
        # contiguous, and its latest occurrence is the largest position in that run
        at = np.argsort(pair) if keep_last else None
        pair = pair[at] if keep_last else np.sort(pair)
        new = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]]) if pair.size else np.zeros(0, np.int64)
        pairs.append(pair[new])
        counts.append(np.diff(np.r_[new, pair.size]).astype(np.float64))
        context = pair >> tb
        runs = _run_starts(context[1:] != context[:-1]) if pair.size else np.zeros(0, np.int64)
        lasts.append(follow[np.maximum.reduceat(at, runs)].astype(np.int64) if keep_last and runs.size
                     else np.full(runs.size, -1, np.int64))
    pair = np.concatenate(pairs) if pairs else np.zeros(0, np.uint64)     # orders in order: sorted
    ctx = pair >> tb
    new_ctx = np.flatnonzero(np.r_[True, ctx[1:] != ctx[:-1]]) if ctx.size else np.zeros(0, np.int64)
    contexts = ctx[new_ctx]
    return _Primed(contexts, np.r_[new_ctx, ctx.size], (pair & np.uint64((1 << token_bits) - 1)).astype(np.int64),
                   np.concatenate(counts) if counts else np.zeros(0),
                   np.concatenate(lasts) if lasts else np.zeros(0, np.int64), _sampled(contexts))


def _ranges(sorted_keys: np.ndarray, lo_keys: np.ndarray, hi_keys: np.ndarray):
    """(query of each entry, index of each entry) of the entries of ``sorted_keys`` in
    [lo_keys[q], hi_keys[q]) for every query q, in query order."""
    lo = sorted_keys.searchsorted(lo_keys)
    lengths = sorted_keys.searchsorted(hi_keys) - lo
    return _spans(lo, lengths)


def _spans(first: np.ndarray, lengths: np.ndarray):
    """(query of each entry, index of each entry) of the runs [first[q], first[q] + lengths[q]),
    in query order."""
    q = np.arange(first.size).repeat(lengths)
    return q, np.arange(q.size) + (first - lengths.cumsum() + lengths).repeat(lengths)


def _run_starts(differs: np.ndarray) -> np.ndarray:
    """Where each run of equal neighbours starts, given ``differs`` = x[1:] != x[:-1] (np.r_ costs more)."""
    return np.concatenate(([True], differs)).nonzero()[0]


def _insert_sorted(at: np.ndarray, *columns: tuple[np.ndarray, np.ndarray]) -> list[np.ndarray]:
    """``np.insert(old, at, new)`` for each (old, new) of ``columns``, the positions ``at``
    nondecreasing (as searchsorted gives for sorted keys): the new values land at at + 0, 1, 2...
    and the old ones fill the rest in order, the positions computed once for every column."""
    pos = at + np.arange(at.size)
    keep = np.ones(columns[0][0].size + at.size, bool)
    keep[pos] = False
    out = []
    for old, new in columns:
        joined = np.empty(keep.size, old.dtype)
        joined[keep] = old
        joined[pos] = new
        out.append(joined)
    return out


#: coding steps whose counts wait in a small sorted buffer before joining the coded table
_MERGE_EVERY = 64


class _Counts:
    """The tokens that followed each context of orders 1..K: counted in the primer
    (:class:`_Primed`, shared and read only) and in the coded text, all in sorted arrays of
    (tagged context, token) pair keys, so that one search serves every order and stream.

    The coded counts live in a main table (unique pair keys, counts; unique contexts with their
    last successor and the step it came) and a buffer of the latest steps' additions (each pair
    key once, with its summed weight and the step of its latest addition), kept sorted; every
    :data:`_MERGE_EVERY` steps the buffer joins the main table (a linear merge of sorted arrays)."""

    def __init__(self, primed: _Primed, token_bits: int):
        self.primed, self.tb = primed, np.uint64(token_bits)
        self.mask = np.uint64((1 << token_bits) - 1)
        self.pairs, self.counts = np.zeros(0, np.uint64), np.zeros(0)
        self.contexts, self.last = np.zeros(0, np.uint64), np.zeros(0, np.int64)

        self.recent, self.recent_weight = np.zeros(0, np.uint64), np.zeros(0)
        self.recent_step = np.zeros(0, np.int64)
        self.step = 0

    def lookup(self, keys: np.ndarray):
        """For tagged contexts ``keys`` (Q,): the primer's entries (query, token, count), the coded
        entries (query, token, count), each (query, token) once in each, and each context's most
        recent successor (Q,) (-1: never seen, or the primer's last successors were not kept)."""
        p, tb = self.primed, self.tb
        order = keys.argsort()                        # searched in order: each search starts where the last ended
        keys = keys[order]
        lo, hi = keys << tb, (keys + np.uint64(1)) << tb
        last = np.full(keys.size, -1, np.int64)
        first = length = np.zeros(keys.size, np.int64)
        if p.contexts.size:                           # one search: the context, its run, its last successor
            j = np.minimum(p.find(keys), p.contexts.size - 1)
            found = p.contexts[j] == keys
            first = np.where(found, p.starts[j], 0)
            length = np.where(found, p.starts[j + 1], 0) - first
            last[found] = p.last[j[found]]
        q, at = _spans(first, length)
        primed = (order[q], p.tokens[at], p.counts[at])
        if self.contexts.size:
            j = np.minimum(self.contexts.searchsorted(keys), self.contexts.size - 1)
            found = self.contexts[j] == keys
            last[found] = self.last[j[found]]
        qm, am = _ranges(self.pairs, lo, hi)
        qr, ar = _ranges(self.recent, lo, hi)
        if ar.size:                                 # the buffer's latest addition per context is the last
            step_token = self.recent_step[ar] * (1 << int(tb)) + (self.recent[ar] & self.mask).astype(np.int64)
            starts = _run_starts(qr[1:] != qr[:-1])
            latest = np.maximum.reduceat(step_token, starts)
            last[qr[starts]] = latest & int(self.mask)
        q_all = np.concatenate([qm, qr])
        pair_all = np.concatenate([self.pairs[am], self.recent[ar]])
        weight = np.concatenate([self.counts[am], self.recent_weight[ar]])
        if qr.size:                                 # the same pair in the table and the buffer: one entry
            by = np.lexsort((pair_all, q_all))
            q_all, pair_all, weight = q_all[by], pair_all[by], weight[by]
            new = _run_starts((q_all[1:] != q_all[:-1]) | (pair_all[1:] != pair_all[:-1]))
            weight = np.add.reduceat(weight, new) if new.size else weight
            q_all, pair_all = q_all[new], pair_all[new]
        coded = (order[q_all], (pair_all & self.mask).astype(np.int64), weight)
        unsorted = np.empty_like(last)
        unsorted[order] = last
        return primed, coded, unsorted

    def add(self, keys: np.ndarray, tokens: np.ndarray, weight: int) -> None:
        """Count ``tokens`` (Q,) after tagged contexts ``keys`` (Q,), each weighing ``weight``;
        within a call, a later one is the more recent. The buffer holds each pair once, with its
        summed weight and its latest step, so its size (and a lookup's work) is bounded by the
        distinct pairs of the latest steps, however often a text repeats one pair."""
        if not keys.size:
            self._tick()
            return
        new = (keys << self.tb) | tokens.astype(np.uint64)
        order = new.argsort(kind="stable")
        pairs = new[order]
        starts = _run_starts(pairs[1:] != pairs[:-1])
        ends = np.concatenate((starts[1:], [pairs.size]))
        added = (ends - starts).astype(np.float64) * float(weight)
        # the stable sort keeps a pair's additions in call order: its last is its latest
        latest = (self.step << 20) + order[ends - 1]     # < 2^20 a call
        pairs = pairs[starts]
        at = self.recent.searchsorted(pairs)
        have = at < self.recent.size
        have[have] = self.recent[at[have]] == pairs[have]
        self.recent_weight[at[have]] += added[have]          # whole numbers: the sum is exact
        self.recent_step[at[have]] = latest[have]
        fresh = ~have
        if fresh.any():
            self.recent, self.recent_weight, self.recent_step = _insert_sorted(
                at[fresh], (self.recent, pairs[fresh]), (self.recent_weight, added[fresh]),
                (self.recent_step, latest[fresh]))
        self._tick()

    def _tick(self) -> None:
        self.step += 1
        if self.step % _MERGE_EVERY == 0:
            self._merge()

    def _merge(self) -> None:
        """The buffer joins the main table."""
        if not self.recent.size:
            return
        starts = _run_starts(self.recent[1:] != self.recent[:-1])
        pairs = self.recent[starts]
        counts = np.add.reduceat(self.recent_weight, starts)
        at = self.pairs.searchsorted(pairs)
        have = at < self.pairs.size
        have[have] = self.pairs[at[have]] == pairs[have]
        self.counts[at[have]] += counts[have]
        self.pairs, self.counts = _insert_sorted(at[~have], (self.pairs, pairs[~have]), (self.counts, counts[~have]))
        # each context's last successor: the buffer's latest addition to it
        ctx = self.recent >> self.tb
        step_token = self.recent_step * (1 << int(self.tb)) + (self.recent & self.mask).astype(np.int64)
        c_starts = _run_starts(ctx[1:] != ctx[:-1])
        latest = np.maximum.reduceat(step_token, c_starts)
        uctx = ctx[c_starts]
        at = self.contexts.searchsorted(uctx)
        have = at < self.contexts.size
        have[have] = self.contexts[at[have]] == uctx[have]
        self.last[at[have]] = latest[have] & int(self.mask)
        self.contexts, self.last = _insert_sorted(at[~have], (self.contexts, uctx[~have]),
                                                  (self.last, latest[~have] & int(self.mask)))

        self.recent, self.recent_weight = np.zeros(0, np.uint64), np.zeros(0)
        self.recent_step = np.zeros(0, np.int64)


class _Lookup:
    """One step's counts for every (order, stream) whose context exists: ``order`` and ``row`` per
    query; the merged entries (``slot`` = order index · B + row, ``token``, ``count``), each
    (slot, token) once; the coded entries alone likewise (``coded``); ``n`` and ``u`` (K, B):
    the total and the distinct tokens of each context (0 where unseen); ``last`` per query."""

    def __init__(self, counts: _Counts, keys: np.ndarray, live: np.ndarray, scratch: np.ndarray):
        k, b = live.shape
        self.order, self.row = np.nonzero(live)
        slot = self.order * b + self.row
        primed, coded, self.last = counts.lookup(keys[self.order, self.row])
        v = scratch.shape[1]
        flat = scratch.reshape(-1)
        i_primed = slot[primed[0]] * v + primed[1]
        i_coded = slot[coded[0]] * v + coded[1]
        flat[i_primed] = primed[2]
        fresh = i_coded[flat[i_coded] == 0]               # coded tokens the primer never saw there
        flat[i_coded] += coded[2]
        i = np.concatenate([i_primed, fresh])
        self.count = flat[i]
        flat[i] = 0.0
        self.slot, self.token = i // v, i % v
        self.n = np.bincount(self.slot, self.count, minlength=k * b).reshape(k, b)
        self.u = np.bincount(self.slot, minlength=k * b).reshape(k, b)
        self.coded = (slot[coded[0]], coded[1], coded[2])


def _chain(p0: np.ndarray, slot, token, a, beta: np.ndarray, targets, first: np.ndarray | None = None) -> dict:
    """Distributions P_m for m in ``targets`` of the chain P_k = a_k + β_k · P_{k−1} from ``p0``
    (vocab,): order k has the entries (``slot`` = (k − 1) · B + row, ``token``, ``a``) and β_k =
    ``beta[k − 1]`` (B,). From one target m' to the next m: P_m = (Π_{m'<k≤m} β_k) P_{m'} +
    Σ_{m'<k≤m} (Π_{k<j≤m} β_j) a_k; dense (B, vocab) each. ``first``: order 1's a_1 as a dense
    (B, vocab) array (zero where it has no entry) instead of entries, overwritten; added before
    the entries of the orders above, as entries in order would be (adding zero changes no bit)."""
    b, v = beta.shape[1], p0.size
    order, flat = slot // b, (slot % b) * v + token
    out, done, p = {}, 0, p0[None, :]              # broadcast by the first product
    for m in sorted(targets):
        after = np.ones((m + 1 - done, b))            # after[j - done] = Π_{j<i≤m} β_i (orders 1-based),
        after[-2::-1] = beta[done:m][::-1].cumprod(axis=0)     # multiplied from β_m down, as a loop would
        p = after[0][:, None] * p
        if first is not None and done == 0:
            p += np.multiply(first, after[1][:, None], out=first)     # ``first``: the caller's scratch
        sel = ((order >= done) & (order < m)).nonzero()[0]
        np.add.at(p.reshape(-1), flat[sel], a[sel] * after[order[sel] + 1 - done, slot[sel] % b])
        out[m], done = p, m
    return out


class _DenseFirst:
    """Order 1's counts as dense (contexts, vocab) tables, a row per context (the last token, or the
    last word and separator): the primer's, the coded text's and each context's last successor.
    They hold the numbers :class:`_Counts` would hold for order 1 (whole counts, in int32: at most
    :data:`~netcl_lite.compression.MAX_PRIMER_TOKENS` plus :data:`ADDED_WEIGHT` per coded token),
    fetched as (B, vocab) rows instead of searched entry by entry; :func:`_dense_first` makes one
    where the contexts' keys do not collide.

    What a step reads is kept up to date as tokens are added, so that it costs a row gather, not
    passes over the rows: each row's total and distinct tokens (all counts and the coded text's
    alone; whole numbers, so their float64 sums are exact in any order), and the float64 table
    ``table`` of max(count − ``discount``, 0) per cell (the counts themselves when ``discount`` is
    None), with ``coded_table`` of max(coded count − ``coded_discount``, 0) when that is given:
    each cell computed by the same operations the rows were once computed by, so the same bits."""

    def __init__(self, primed: _Primed, keys: np.ndarray, vocab: int, discount: float | None = None,
                 coded_discount: float | None = None):
        # with no discount the float64 table is the counts, and no int32 tables are kept
        self.primer = np.zeros((keys.size, vocab), np.int32 if discount is not None else np.float64)
        self.coded = np.zeros((keys.size, vocab), np.int32) if discount is not None else None
        self.last = np.full(keys.size, -1, np.int64)
        if primed.contexts.size:
            j = np.minimum(primed.find(keys), primed.contexts.size - 1)
            found = primed.contexts[j] == keys
            first = np.where(found, primed.starts[j], 0)
            length = np.where(found, primed.starts[j + 1], 0) - first
            q = np.repeat(np.arange(keys.size), length)
            at = np.arange(q.size) - np.repeat(np.cumsum(length) - length, length) + np.repeat(first, length)
            self.primer[q, primed.tokens[at]] = primed.counts[at]
            self.last[found] = primed.last[j[found]]
        self.discount, self.coded_discount = discount, coded_discount
        merged = self.primer.astype(np.float64, copy=discount is not None)
        self.total = merged.sum(axis=1)
        self.distinct = np.count_nonzero(self.primer, axis=1)
        self.coded_total = np.zeros(keys.size)
        self.coded_distinct = np.zeros(keys.size, np.int64)
        self.table = merged if discount is None else np.maximum(merged - discount, 0.0)
        if discount is None:
            self.primer = None
        self.coded_table = None if coded_discount is None else np.zeros((keys.size, vocab))   # max(0 − d, 0) = 0

    def rows(self, context: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(``table``'s rows (B, vocab), each row's total (B,), its distinct tokens (B,)) of each
        stream's ``context``; zero in the rows that are not ``live`` (too few tokens seen for the order)."""
        rows = np.take(self.table, context, axis=0)
        if not live.all():
            rows[~live] = 0.0
        return rows, np.where(live, self.total[context], 0.0), np.where(live, self.distinct[context], 0)

    def coded_rows(self, context: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`rows` of ``coded_table`` and the coded text's totals and distinct tokens."""
        rows = np.take(self.coded_table, context, axis=0)
        if not live.all():
            rows[~live] = 0.0
        return rows, np.where(live, self.coded_total[context], 0.0), np.where(live, self.coded_distinct[context], 0)

    def count(self, context: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """All counts of ``tokens`` after ``context`` rows, float64."""
        if self.coded is None:
            return self.table[context, tokens]
        return (self.primer[context, tokens] + self.coded[context, tokens]).astype(np.float64)

    def add(self, context: np.ndarray, tokens: np.ndarray, weight: int) -> None:
        """Count ``tokens`` after the order-1 ``context`` rows; within a call, a later one is the more recent."""
        if not context.size:
            return
        if self.coded is not None:      # int32 cells: past 2^31 - 1 they wrapped to negative counts, silently
            room = np.iinfo(np.int32).max - weight * context.size
            if (self.primer[context, tokens].astype(np.int64) + self.coded[context, tokens]).max() > room:
                raise ValueError(f"the n-gram's order-1 counts of a context would pass {np.iinfo(np.int32).max:,} "
                                 f"(int32) with these tokens (each counts {weight}): it has counted over "
                                 f"{np.iinfo(np.int32).max // weight:,} coded tokens after one token; start a new NGram")
        np.add.at(self.total, context, float(weight))          # whole numbers: exact in any order
        last_wins(context, tokens, self.last)
        if self.coded is None:                                  # the table holds the counts
            self._count_new(context, tokens, self.table[context, tokens] == 0, self.distinct)
            np.add.at(self.table, (context, tokens), float(weight))
            return
        coded_before = self.coded[context, tokens]
        self._count_new(context, tokens, self.primer[context, tokens] + coded_before == 0, self.distinct)
        self._count_new(context, tokens, coded_before == 0, self.coded_distinct)
        np.add.at(self.coded, (context, tokens), weight)
        np.add.at(self.coded_total, context, float(weight))
        coded = self.coded[context, tokens]                   # a cell named twice gets its value twice
        merged = (self.primer[context, tokens] + coded).astype(np.float64)
        self.table[context, tokens] = np.maximum(merged - self.discount, 0.0)
        if self.coded_table is not None:
            self.coded_table[context, tokens] = np.maximum(coded.astype(np.float64) - self.coded_discount, 0.0)

    def _count_new(self, context: np.ndarray, tokens: np.ndarray, new: np.ndarray, distinct: np.ndarray) -> None:
        """One more distinct token in a row for each cell (``context``, ``tokens``) that was empty
        (``new``), a cell named twice counted once."""
        if new.any():
            cells = np.unique(context[new] * self.table.shape[1] + tokens[new])
            np.add.at(distinct, cells // self.table.shape[1], 1)


def _dense_first(primed: _Primed, keys: np.ndarray, vocab: int, discount: float | None = None,
                 coded_discount: float | None = None) -> _DenseFirst | None:
    """Order 1's dense tables for the contexts of tagged ``keys`` (row i: ``keys[i]``), or None
    when they would take over :data:`DENSE_CELLS` cells or two keys collide (two contexts sharing
    one's counts, which separate rows would not)."""
    if keys.size * vocab > DENSE_CELLS or np.unique(keys).size != keys.size:
        return None
    return _DenseFirst(primed, keys, vocab, discount, coded_discount)


class NGram:
    """An adaptive token n-gram: counts of contexts up to ``orders`` tokens, from ``primer`` ids
    and then from every token coded, with interpolated absolute discounting.

    P_k(w) = (max(c_k(w) − D_k, 0) + D_k · u_k · P_{k−1}(w)) / n_k, where c_k counts w after the
    last k tokens, n_k = Σ c_k and u_k the distinct tokens seen there; an unseen context falls
    back to P_{k−1}; P_0 discounts the unigram counts against 1/vocab. A coded token counts
    :data:`ADDED_WEIGHT` times a training token: the text being coded predicts itself better
    than the training text does. :meth:`predict` gives every stream's distribution, those after
    the orders in :data:`MIX_ORDERS` and a cache model (the same chain over the coded tokens'
    counts alone) as ``snapshots``, the order its context reached, and, as ``successors``, the
    most recent successor of each stream's context of orders 1..:data:`SUCCESSOR_ORDERS`;
    :meth:`update` adds the coded tokens. Counts only grow by whole numbers, so both sides of a
    coder hold the same state after the same tokens, whatever the order of the streams.
    Contexts are kept by a 64-bit hash (two contexts that collide share their counts, on both
    sides alike).
    """

    __copy__ = checks.whole_copy     # a shallow copy shared the arrays updated in place

    def __init__(self, primer: np.ndarray, vocab: int, streams: int, orders: int = ORDERS):
        checks.coder_sizes(vocab=vocab, streams=streams, orders=orders)      # before anything is sized by them
        primer = _check(primer, vocab, streams, orders)
        vocab, streams, orders = int(vocab), int(streams), int(orders)      # NumPy integers would wrap the hashes
        self.vocab, self.orders = vocab, orders
        self.token_bits = _token_bits(vocab)
        unigram, tables = _primed_counts(primer, vocab, orders)       # tables: a _Primed
        self.unigram = unigram.copy()
        self.counts = _Counts(tables, self.token_bits)
        self.dense = None                  # order 1's counts, when dense: a row per last token
        if orders:
            first = _extend(np.zeros(vocab, np.uint64), np.arange(vocab), vocab)
            self.dense = _dense_first(tables, _tag(1, _context_keys(first, self.token_bits), self.token_bits), vocab,
                                      DISCOUNT[1], CACHE_DISCOUNT * ADDED_WEIGHT)
        self.history = np.full((streams, orders), -1, np.int64)  # last tokens, newest last; -1: none yet
        self._powers = _powers(vocab + 1, orders)             # the hashes of :func:`_extend`, all orders at once
        self.seen = np.zeros(streams, np.int64)
        self._scratch = np.zeros((orders * streams, vocab))
        self._step_keys = None             # the context keys :meth:`predict` used, until :meth:`update`

    def _keys(self) -> np.ndarray:
        """(orders, B) each stream's context key of each order, tagged (meaningless where seen < k)."""
        newest_first = np.maximum(self.history[:, ::-1], 0).astype(np.uint64) + np.uint64(1)
        return _tag_orders(_context_keys((newest_first @ self._powers).T, self.token_bits), self.token_bits)

    def predict(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(probabilities (B, vocab) float64, order reached (B,), count there (B,)); also sets
        ``snapshots``: the distributions after each order of :data:`MIX_ORDERS`, then the chain
        over the coded tokens' counts alone (a cache model); ``successors`` (orders, B): the
        token that last followed each stream's context of each order (-1: none); ``p0``: the
        order-0 distribution (vocab,)."""
        b, v, k = self.history.shape[0], self.vocab, self.orders
        n0 = self.unigram.sum()
        self.p0 = p0 = (np.maximum(self.unigram - DISCOUNT[0], 0)
                        + DISCOUNT[0] * np.count_nonzero(self.unigram) / v) / n0 if n0 else np.full(v, 1.0 / v)
        if not k:
            p = np.broadcast_to(p0, (b, v)).copy()
            self.snapshots = [p] * len(MIX_ORDERS) + [p.copy()]
            self.successors = np.zeros((0, b), np.int64)
            return p, np.zeros(b, np.int64), np.full(b, n0)
        self._step_keys = keys = self._keys()
        live = self.seen[None, :] >= np.arange(1, k + 1)[:, None]
        dense = self.dense
        if dense is not None:                # order 1 from its dense rows, the orders above searched
            live1, live[0] = live[0].copy(), False
            context = np.maximum(self.history[:, -1], 0)
            table1, n1, u1 = dense.rows(context, live1)
            coded1, nc1, uc1 = dense.coded_rows(context, live1)
        look = _Lookup(self.counts, keys, live, self._scratch)
        d = np.asarray(DISCOUNT[1:k + 1])[:, None]
        n, u = look.n, look.u
        c_slot, c_token, c_count = look.coded
        nc = np.bincount(c_slot, c_count, minlength=k * b).reshape(k, b)
        uc = np.bincount(c_slot, minlength=k * b).reshape(k, b)
        dc = CACHE_DISCOUNT * ADDED_WEIGHT
        first = first_c = None
        if dense is not None:
            n[0], u[0], nc[0], uc[0] = n1, u1, nc1, uc1
            # a row of no counts holds zeros: divided by 1 rather than left out, the same zeros
            first = np.divide(table1, np.where(n1 > 0, n1, 1.0)[:, None], out=table1)
            first_c = np.divide(coded1, np.maximum(nc1, 1.0)[:, None], out=coded1)
        beta = np.where(n > 0, d * u / np.where(n > 0, n, 1.0), 1.0)
        dk = d[look.slot // b, 0]
        a = np.maximum(look.count - dk, 0.0) / n.reshape(-1)[look.slot]
        reach = sorted({m for m in MIX_ORDERS if m <= k} | {k})
        dist = _chain(p0, look.slot, look.token, a, beta, reach, first)
        p = dist[k]
        beta_c = np.where(nc > 0, dc * uc / np.where(nc > 0, nc, 1.0), 1.0)
        a_c = np.maximum(c_count - dc, 0.0) / np.maximum(nc.reshape(-1)[c_slot], 1.0)
        cached = _chain(p0, c_slot, c_token, a_c, beta_c, [k], first_c)[k]
        self.snapshots = [dist.get(m, p) for m in MIX_ORDERS] + [cached]
        has = n > 0
        reached = np.where(has.any(axis=0), k - np.argmax(has[::-1], axis=0), 0)
        total = np.where(reached > 0, n[np.maximum(reached - 1, 0), np.arange(b)], n0)
        self.successors = np.full((min(SUCCESSOR_ORDERS, k), b), -1, np.int64)
        kept = look.order < SUCCESSOR_ORDERS
        self.successors[look.order[kept], look.row[kept]] = look.last[kept]
        if dense is not None and SUCCESSOR_ORDERS:
            self.successors[0] = np.where(live1, dense.last[context], -1)
        return p, reached, total

    def update(self, tokens: np.ndarray, active: np.ndarray) -> None:
        """Count ``tokens`` (B,) after each stream's context, for the ``active`` streams (bool (B,))."""
        tokens, active = checks.step_ids(tokens, active, self.history.shape[0], self.vocab)
        rows = np.flatnonzero(active)
        if self.orders:
            keys = self._step_keys if self._step_keys is not None else self._keys()
            order, row = np.nonzero((self.seen[None, rows] >= np.arange(1, self.orders + 1)[:, None]))
            if self.dense is not None:          # order 1 (the first rows, streams in order) in its dense rows
                one = rows[row[order == 0]]
                self.dense.add(self.history[one, -1], tokens[one], ADDED_WEIGHT)
                order, row = order[order > 0], row[order > 0]
            self.counts.add(keys[order, rows[row]], tokens[rows[row]], ADDED_WEIGHT)
        np.add.at(self.unigram, tokens[rows], float(ADDED_WEIGHT))     # after dense.add, which may refuse
        self.history[rows] = np.concatenate([self.history[rows, 1:], tokens[rows, None]], axis=1)
        self.seen[rows] += 1
        self._step_keys = None


_COUNTED: dict[tuple, tuple] = {}
_COUNTED_LOCK = threading.Lock()


#: whether a long primer's counts may be read from the cache (:func:`_stored_counts`); False once
#: :func:`forget_primed_counts` was called in this process
_STORED_READ = True


def forget_primed_counts() -> None:
    """Drop the primers' counts kept between calls (:class:`NGram`'s and :class:`WordNGram`'s),
    so that the next call counts its primer again, and from then on never reads a primer's counts
    stored in the cache (:data:`STORED_MIN_IDS`): a timing that compares with a primed classical
    coder, which reads its primer on every call, wants this."""
    global _STORED_READ
    _STORED_READ = False
    with _COUNTED_LOCK:
        _COUNTED.clear()
        _WORDS_COUNTED.clear()


def _kept(store: dict, key, count):
    """``store[key]``, counted by ``count()`` when it is not kept yet; the last two are kept.
    Threads share what is kept (read only); the lock guards the keeping."""
    with _COUNTED_LOCK:
        counted = store.get(key)
    if counted is None:
        counted = count()
        with _COUNTED_LOCK:
            while len(store) >= 2:
                store.pop(next(iter(store)))
            store[key] = counted
    return counted


def _primed_counts(primer: np.ndarray, vocab: int, orders: int):
    """The unigram counts (vocab,) and the :class:`_Primed` of orders 1..orders of ``primer``,
    kept for the last two primers (counting takes a second or so)."""
    def count():
        ids = np.asarray(primer, np.int64)
        tb = _token_bits(vocab)
        keys, h = [], np.zeros(ids.size, np.uint64)
        for k in range(1, orders + 1):
            # h[i]: the hash of ids[i - k : i], the context of ids[i] (positions i >= k)
            h = _extend(h[1:], ids[:max(ids.size - k, 0)], vocab)     # none left once k reaches the size
            keys.append(_context_keys(h, tb))
        primed = _prime(keys, [ids[k:] for k in range(1, orders + 1)], tb, SUCCESSOR_ORDERS)
        return np.bincount(ids, minlength=vocab).astype(np.float64), primed

    digest = hashlib.sha256(primer.astype(np.int32).tobytes()).digest()
    key = (digest, primer.size, vocab, orders)
    if primer.size < STORED_MIN_IDS:
        return _kept(_COUNTED, key, count)
    return _kept(_COUNTED, key, lambda: _stored_counts(digest, primer.size, vocab, orders, count))


#: a primer of at least this many ids has its counts kept on disk too (:func:`_stored_counts`): the
#: compressor's default primer, Chapter 9's training text, counted in each process that codes with it
#: (every call of the command line); counting a shorter primer takes less than reading its entry
STORED_MIN_IDS = 1 << 17
#: the first line of a stored count starts so, then the SHA-256 of the arrays that follow it
_STORED_DIGEST = b"netcl-lite ngram counts 1 sha256="
#: the arrays of a stored count, in the order they are written: the key, the unigram counts, then
#: :class:`_Primed`'s fields but ``sample`` (made again from ``contexts``), ``starts`` as run lengths
_STORED_ARRAYS = ("key", "unigram", "contexts", "runs", "tokens", "counts", "last")


def _stored_key(digest: bytes, size: int, vocab: int, orders: int) -> str:
    """The key a primer's counts are stored under: this file (the counting code), NumPy's version, the
    primer's ids (their SHA-256 and number), the vocabulary size and the orders."""
    from pathlib import Path

    from .fingerprint import key

    source = Path(__file__).read_bytes() + b"\0n-gram counts of %d ids %s, vocab %d, orders %d" % (
        size, digest.hex().encode(), vocab, orders)
    return key(source, shared=f"n-gram primer counts with numpy {np.__version__}")


def _stored_counts(digest: bytes, size: int, vocab: int, orders: int, count):
    """``count()`` (the unigram counts and the :class:`_Primed` of a primer), read from the cache
    (:func:`netcl_lite.fingerprint.cache_root`, ``ngram/<key>``) when an entry for this key is there,
    else counted and stored there. The cache is only a shortcut: an entry that does not match its
    digest, was written for another key (copied or renamed), holds arrays that are not such counts, or
    cannot be read (a pipe, a device, a folder, another user's) is a miss, counted again and replaced;
    a cache that cannot be reached or written (``NETCL_LITE_CACHE`` relative, a file, read-only) is
    no error here: the counts are returned all the same. ``NETCL_LITE_RERUN=1`` counts again, as does
    every call after :func:`forget_primed_counts` (each stores what it counted)."""
    from .fingerprint import cache_root, rerun_forced

    try:
        item = _stored_key(digest, size, vocab, orders)
        path = cache_root() / "ngram" / item
    except (OSError, ValueError):
        return count()
    if _STORED_READ and not rerun_forced():
        kept = _read_counts(path, item, vocab, size, orders)
        if kept is not None:
            return kept
    counted = count()
    _write_counts(path, item, *counted)
    return counted


#: the most bytes a stored count is read up to (about 50 bytes per primer id; the primer holds at most
#: compression.MAX_PRIMER_TOKENS ids)
MAX_STORED_BYTES = 1 << 30


def _stored_positions(size: int, orders: int) -> int:
    """How many (context, token) pairs orders 1..orders of a primer of ``size`` ids count: the most
    contexts, pairs, or the sum of the pair counts, that its stored count can honestly hold."""
    return sum(max(size - k, 0) for k in range(1, orders + 1))


#: each stored array: its dtype, and whether its length is the vocabulary's (else at most the pairs')
_STORED_DTYPES = {"key": np.uint8, "unigram": np.float64, "contexts": np.uint64, "runs": np.uint32,
                  "tokens": np.int32, "counts": np.uint32, "last": np.int32}


def _stored_array(archive, name: str, most: int):
    """The 1-D array ``name`` of a stored count (a zip archive of .npy members, as np.savez writes),
    or None when it is not there, is not of its dtype, or its header says it holds more than ``most``
    elements: the header is read first, and then only the bytes it promises, so a small member that
    would inflate to far more (deflated zeros) costs nothing to refuse."""
    import zipfile

    from .files import npy_header

    want = np.dtype(_STORED_DTYPES[name])
    try:
        with archive.open(name + ".npy") as f:
            shape, dtype = npy_header(f)                 # ValueError: a version NumPy does not write
            if dtype != want or len(shape) != 1 or not 0 <= shape[0] <= most:
                return None
            data = f.read(shape[0] * want.itemsize)
    except (KeyError, OSError, ValueError, EOFError, zipfile.BadZipFile, RuntimeError, NotImplementedError):
        return None
    if len(data) != shape[0] * want.itemsize:
        return None
    return np.frombuffer(data, want)


def _read_counts(path, item: str, vocab: int, size: int | None = None, orders: int = ORDERS):
    """The counts stored at ``path`` for the key ``item``, or None (see :func:`_stored_counts`).
    ``size`` (the primer's number of ids) and ``orders`` bound what the entry may hold; the key, a
    few bytes, is read and checked before anything else is unpacked, and no array is unpacked beyond
    what the entry's own bytes hold stored (np.savez stores them uncompressed) or the primer can give."""
    import io
    import zipfile

    from .files import read_regular

    try:
        raw = read_regular(path, MAX_STORED_BYTES, "a stored n-gram count")
    except (OSError, ValueError):                    # none there, or no regular file to read
        return None
    head, newline, body = raw.partition(b"\n")
    del raw
    if not newline or head != _STORED_DIGEST + hashlib.sha256(body).hexdigest().encode():
        return None
    pairs = len(body)                                # no more elements than the entry holds bytes
    if size is not None:
        pairs = min(pairs, _stored_positions(size, orders))
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return None                                  # a digest-matching body that is no such archive
    with archive:
        key = _stored_array(archive, "key", len(item.encode()))
        if key is None or key.tobytes() != item.encode():
            return None                              # written for another key
        arrays = {"key": key}
        for name in _STORED_ARRAYS[1:]:
            arrays[name] = _stored_array(archive, name, vocab if name == "unigram" else pairs)
            if arrays[name] is None:
                return None
    _, unigram, contexts, runs, tokens, counts, last = (arrays[name] for name in _STORED_ARRAYS)
    if (unigram.shape != (vocab,) or not runs.size == last.size == contexts.size or tokens.size != counts.size
            or int(runs.sum(dtype=np.int64)) != tokens.size
            or (tokens.size and (tokens.min() < 0 or tokens.max() >= vocab))
            or (last.size and (last.min() < -1 or last.max() >= vocab))
            or (contexts.size > 1 and not (contexts[1:] > contexts[:-1]).all())):
        return None                                  # not counts of this vocab
    # The values: unigram counts are whole numbers >= 0 adding up to the primer's size; a pair is
    # stored only where it was counted (at least once), and the pair counts add up to the primer's positions.
    if (not np.isfinite(unigram).all() or (unigram < 0).any() or (unigram != np.floor(unigram)).any()
            or (counts.size and counts.min() < 1)
            or (size is not None and ((unigram > size).any() or unigram.sum() != size
                                      or int(counts.sum(dtype=np.int64)) != _stored_positions(size, orders)))):
        return None
    starts = np.zeros(runs.size + 1, np.int64)
    np.cumsum(runs, out=starts[1:])
    return unigram.copy(), _Primed(contexts.copy(), starts, tokens.astype(np.int64), counts.astype(np.float64),
                                   last.astype(np.int64), _sampled(contexts))


def _write_counts(path, item: str, unigram: np.ndarray, primed: _Primed) -> None:
    """Store the counts at ``path`` for the key ``item``, whole (a temporary file renamed over the name,
    which replaces a link there rather than writing through it), or not at all: a cache that cannot
    be written changes nothing. The file is not flushed to disk: one cut short fails its digest."""
    import io
    import os

    from .files import temporary_name

    if primed.counts.size and primed.counts.max() >= 2**32:
        return                                       # more than MAX_PRIMER_TOKENS: never so here
    arrays = dict(key=np.frombuffer(item.encode(), np.uint8), unigram=unigram, contexts=primed.contexts,
                  runs=np.diff(primed.starts).astype(np.uint32), tokens=primed.tokens.astype(np.int32),
                  counts=primed.counts.astype(np.uint32), last=primed.last.astype(np.int32))
    out = io.BytesIO()
    np.savez(out, **{name: arrays[name] for name in _STORED_ARRAYS})
    body = out.getvalue()
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temporary_name(path)
        with open(tmp, "xb") as f:
            f.write(_STORED_DIGEST + hashlib.sha256(body).hexdigest().encode() + b"\n")
            f.write(body)
        os.replace(tmp, path)
        tmp = None
    except (OSError, ValueError):
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


class Mixer:
    """p = Σ w_i · p_i over the model's distribution, the n-gram's after each order of
    :data:`MIX_ORDERS`, the cache model's and the n-gram's final one: a linear mixture with one
    set of weights per (order reached, ⌊log2 count⌋), moved online by the exponentiated gradient
    of log p of the coded token (w_i ← w_i · exp(η (p_i(x) / p(x) − 1)), then normalized), so
    they stay a distribution."""

    def __init__(self, orders: int):
        checks.int_in("orders", orders, 1, MAX_ORDERS + 1, "the n-gram's orders, whose weights it keeps")
        parts = len(MIX_ORDERS) + 3               # the model, the snapshots, the cache, the n-gram
        self.w = np.full((orders + 1, LOG2_BUCKETS, parts), 0.1 / max(parts - 2, 1))
        self.w[..., 0], self.w[..., -1] = MIX_INIT, 0.9 - MIX_INIT
        self.w /= self.w.sum(axis=2, keepdims=True)
        self.parts = None                  # what :meth:`mix` mixed, until :meth:`update`

    def mix(self, parts, reached, total):
        """The mixture (B, vocab) of ``parts``, one (B, vocab) distribution per part the weights
        keep (the model, the snapshots after :data:`MIX_ORDERS`, the cache, the n-gram), with the
        weight set of each stream's order ``reached`` (B,) and ``total`` (B,), the count seen there.
        :meth:`update` reads the parts at the coded tokens, so they are kept as they are (not copied:
        six (B, vocab) arrays a step) until then; a caller that reuses an array of its own for the
        next step before :meth:`update` passes a copy (:class:`~netcl_lite.context_mixing.ContextMixer`
        copies the model's distribution)."""
        n_parts = self.w.shape[2]
        if not isinstance(parts, (list, tuple)) or len(parts) != n_parts:
            got = f"{len(parts)} parts" if isinstance(parts, (list, tuple)) else type(parts).__name__
            raise ValueError(f"parts must be a list of {n_parts} distributions (the model, the n-gram after orders "
                             f"{', '.join(map(str, MIX_ORDERS))}, the cache, the n-gram), got {got}")
        # a mask was carried into the mixture, or dropped; an np.matrix's * was a matrix product
        parts = [checks.plain_array(f"parts[{i}]", part) for i, part in enumerate(parts)]
        shape = getattr(parts[0], "shape", None)
        for i, part in enumerate(parts):
            if not isinstance(part, np.ndarray) or part.ndim != 2 or part.dtype.kind != "f" or part.shape != shape:
                shown = f"{part.dtype} of shape {part.shape}" if isinstance(part, np.ndarray) else type(part).__name__
                raise ValueError(f"parts[{i}] must be a float array of shape (streams, vocab), as parts[0] "
                                 f"{shape}, got {shown}")
        b = shape[0]
        if b and not shape[1]:                  # no token to mix: the checks below would reduce nothing
            raise ValueError(f"parts must be distributions over a vocabulary of at least one token, got shape "
                             f"{shape}")
        checks.not_masked("reached", reached)     # asarray drops the mask: a masked-out value picked a weight set
        checks.not_masked("total", total)
        reached = np.asarray(reached)
        if reached.shape != (b,) or (b and (reached.dtype.kind not in "iu" or reached.min() < 0
                                            or reached.max() >= self.w.shape[0])):
            raise ValueError(f"reached must hold one int per stream ({b}) in [0, {self.w.shape[0]}) (the order "
                             f"each stream's context reached), got {reached.dtype} of shape {reached.shape}"
                             + (f" from {reached.min()} to {reached.max()}" if reached.size and reached.ndim
                                and reached.dtype.kind in "iuf" else ""))
        total = np.asarray(total)
        if total.shape != (b,) or total.dtype.kind not in "iuf" or (b and not (total.min() >= 0
                                                                             and np.isfinite(total.max()))):
            raise ValueError(f"total must hold one finite count >= 0 per stream ({b}) (what the context reached "
                             f"has seen), got {total.dtype} of shape {total.shape}")
        self.bucket = (reached.astype(np.int64, copy=False),
                       np.minimum(np.floor(np.log2(np.maximum(total, 1))).astype(np.int64), LOG2_BUCKETS - 1))
        w = self.w[self.bucket]
        p = w[:, :1] * parts[0]
        term = np.empty_like(p)
        for i in range(1, len(parts)):
            p += np.multiply(w[:, i:i + 1], parts[i], out=term)
        # two reductions, no temporaries: a NaN fails both, an infinity or a negative value one
        if b and not (p.min() >= 0 and np.isfinite(p.max())):
            self.parts = None
            raise ValueError("parts must hold finite probabilities >= 0; one holds a NaN, an infinity or a "
                             "negative value (check the model and the counts that gave it)")
        self.parts = tuple(parts)          # the caller's list may change; its arrays are read as they are
        return p

    def update(self, tokens, p_mix, active):
        """Move the weights toward the parts that gave the coded ``tokens`` most; follows :meth:`mix`,
        ``p_mix`` the mixture it returned."""
        if self.parts is None:
            raise ValueError("update follows mix: call mix(parts, reached, total) for the step first (once per update)")
        b, v = self.parts[0].shape
        tokens, active = checks.step_ids(tokens, active, b, v)
        p_mix = checks.plain_array("p_mix", p_mix)     # its mask would be ignored; an np.matrix read as its array
        # a complex mixture moved the weights by its real parts, a bool one as if every token had probability 1
        if not isinstance(p_mix, np.ndarray) or p_mix.shape != (b, v) or p_mix.dtype.kind != "f":
            shown = f"{p_mix.dtype} of shape {p_mix.shape}" if isinstance(p_mix, np.ndarray) else type(p_mix).__name__
            raise ValueError(f"p_mix must be the (streams, vocab) = {(b, v)} mixture mix returned (floats), "
                             f"got {shown}")
        rows = np.flatnonzero(active)
        px = p_mix[rows, tokens[rows]]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):   # refused next, by name
            ratio = np.stack([part[rows, tokens[rows]] / px for part in self.parts], axis=1)
        # a NaN here would stay in the weights for good, and a negative px is finite: change nothing
        if not (np.isfinite(ratio).all() and (px > 0).all()):
            raise ValueError("p_mix must be the mixture mix returned, > 0 and finite at each coded token; it "
                             "gives a coded token a NaN, 0 or a negative value (a token the mixture gave no "
                             "chance cannot be coded), or the parts changed since mix")
        step = np.zeros_like(self.w)
        np.add.at(step, (self.bucket[0][rows], self.bucket[1][rows]), ratio - 1)
        w = self.w * np.exp(np.clip(MIX_RATE * step, -MAX_EXPONENT, MAX_EXPONENT))
        w = np.maximum(w / w.sum(axis=2, keepdims=True), MIN_WEIGHT)    # every part keeps a say
        self.w = w / w.sum(axis=2, keepdims=True)
        self.parts = None




# -- word contexts ------------------------------------------------------------------------------

def word_classes(pieces: dict[int, bytes], vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """(class (vocab,), separator (vocab,)) of each token id, from its bytes ``pieces[id]``: the
    class numbers the token's text lower-cased with its whitespace stripped (1, 2, ...; 0 for a
    token of whitespace alone, or an id ``pieces`` lacks); the separator says what the token ends
    with: 2 a newline (and maybe indentation), 1 other whitespace, 0 none.

        >>> cls, sep = word_classes({0: b" The", 1: b"the", 2: b"\\n", 3: b"x "}, 4)
        >>> cls.tolist(), sep.tolist()
        ([1, 1, 0, 2], [0, 0, 2, 1])
    """
    checks.coder_sizes(vocab=vocab, pieces=pieces)     # before the (vocab,) arrays are made
    vocab = int(vocab)
    cls, sep, names = np.zeros(vocab, np.int64), np.zeros(vocab, np.int64), {}
    for i, piece in sorted(pieces.items()):
        if not 0 <= i < vocab:
            continue
        word = piece.strip().lower()
        cls[i] = names.setdefault(word, len(names) + 1) if word else 0
        tail = piece[len(piece.rstrip()):]
        sep[i] = 2 if b"\n" in tail else 1 if tail else 0
    return cls, sep


def _word_hash(h: np.ndarray, classes: np.ndarray, n_classes: int) -> np.ndarray:
    return h * np.uint64(n_classes + 1) + (classes.astype(np.uint64) + np.uint64(1))


def _with_separator(h: np.ndarray, sep: np.ndarray) -> np.ndarray:
    return h * np.uint64(4) + sep.astype(np.uint64)


def _qn(n: np.ndarray) -> np.ndarray:
    """A weighted count's bucket: 0 for none, else 1 + ⌊log2 n⌋, at most 11."""
    return np.where(n > 0, np.minimum(1 + np.floor(np.log2(np.maximum(n, 1.0))), 11), 0).astype(np.int64)


_U_EDGES = np.array([1, 2, 3, 4, 6, 10])


def _qu(u: np.ndarray) -> np.ndarray:
    """A count of distinct tokens' bucket: 1, 2, 3, 4-5, 6-9, 10+ -> 0..5 (none -> 0)."""
    return np.maximum(np.searchsorted(_U_EDGES, u, side="right") - 1, 0)


class WordNGram:
    """Counts of the tokens that follow each word context, primed and adaptive like :class:`NGram`:
    a context is the last 1..``orders`` words (tokens lower-cased, whitespace stripped, tokens of
    whitespace alone skipped; :func:`word_classes`) and the separator the last token ended with,
    so a phrase wrapped over two lines, or capitalised at a sentence's start, meets its counts.

    It interpolates P_k = (1 − λ) c_k / n_k + λ P_{k−1} from P_0 = (1 − λ) c_0 / n_0 + λ / vocab
    (c_0: the unigram counts given to :meth:`predict`), with λ learned online per (order,
    ⌊log2 n_k⌋, distinct tokens u_k) bucket: after each token, λ moves toward the posterior
    probability that the token came from the shorter context, λ P_{k−1}(x) / P_k(x) (an online
    EM step).
    """

    __copy__ = checks.whole_copy     # a shallow copy shared the arrays updated in place

    def __init__(self, primer: np.ndarray, vocab: int, streams: int, pieces: dict[int, bytes],
                 orders: int = WORD_ORDERS):
        checks.coder_sizes(vocab=vocab, streams=streams, orders=orders, pieces=pieces)     # before anything is sized
        primer = _check(primer, vocab, streams, orders)
        if not isinstance(pieces, Mapping):
            raise TypeError(f"pieces must be a mapping of token id -> bytes (the tokenizer's vocab), "
                            f"got {type(pieces).__name__}")
        vocab, streams, orders = int(vocab), int(streams), int(orders)      # NumPy integers would wrap the hashes
        self.vocab, self.orders = vocab, orders
        self.classes, self.separators = word_classes(pieces, vocab)
        self.n_classes = int(self.classes.max())
        self.token_bits = _token_bits(vocab)
        primed = _primed_words(primer, self)
        self.counts = _Counts(primed, self.token_bits)
        # order 1's counts, when dense: a row per (last word's class, separator), row class * 4 + separator
        first = _word_hash(np.zeros(self.n_classes + 1, np.uint64), np.arange(self.n_classes + 1), self.n_classes)
        first = _with_separator(np.repeat(first, 4), np.tile(np.arange(4), self.n_classes + 1))
        self.dense = _dense_first(primed, _tag(1, _context_keys(first, self.token_bits), self.token_bits), vocab)
        self.words = np.full((streams, orders), -1, np.int64)     # last word classes, newest last
        self._powers = _powers(self.n_classes + 1, orders)
        self.n_words = np.zeros(streams, np.int64)
        self.sep = np.zeros(streams, np.int64)
        self.lam = np.full((orders + 1, 12, _U_EDGES.size), WORD_INIT)
        self._scratch = np.zeros((orders * streams, vocab))
        self._look = None                  # what :meth:`predict` looked up, until :meth:`update`

    def _keys(self) -> np.ndarray:
        newest_first = np.maximum(self.words[:, ::-1], 0).astype(np.uint64) + np.uint64(1)
        h = _with_separator(newest_first @ self._powers, self.sep[:, None])      # (B, orders), as _word_hash builds
        return _tag_orders(_context_keys(h.T, self.token_bits), self.token_bits)

    def predict(self, unigram: np.ndarray) -> np.ndarray:
        """(B, vocab) float64: every stream's distribution, from the counts ``unigram`` (vocab,) up:
        finite and >= 0 (ValueError otherwise, and nothing changes)."""
        b, v, k = self.words.shape[0], self.vocab, self.orders
        # checked before any state is touched: a refused call leaves the last predict's for update
        # its mask was carried into every stream's distribution; an np.matrix is read as its array
        unigram = checks.plain_array("unigram", unigram)
        if not isinstance(unigram, np.ndarray) or unigram.shape != (v,) or unigram.dtype.kind not in "iuf":
            shown = (f"{unigram.dtype} of shape {unigram.shape}" if isinstance(unigram, np.ndarray)
                     else type(unigram).__name__)
            raise ValueError(f"unigram must be an array of shape ({v},) (the counts of each token), got {shown}")
        if v and not (unigram.min() >= 0 and np.isfinite(unigram.max())):
            raise ValueError("unigram must hold finite counts >= 0; it holds a NaN, an infinity or a negative "
                             "value (a NaN would reach every stream's prediction and the weights λ)")
        with np.errstate(over="ignore"):     # an overflow is refused next, by name
            # summed in float64: integer counts summed in their own dtype wrapped past 2^63, silently
            n0 = float(unigram.sum(dtype=np.float64))
        if not math.isfinite(n0):            # counts each finite, their sum past float64's range
            raise ValueError("unigram's counts sum past float64's largest value; give counts (each token's "
                             "number of occurrences), not values near float64's range")
        self._bucket0 = (0, int(_qn(np.array([n0]))[0]), int(_qu(np.array([np.count_nonzero(unigram)]))[0]))
        lam0 = self.lam[self._bucket0]
        self._unigram = unigram / n0 if n0 else np.zeros(v)
        self._p0 = (1 - lam0) * self._unigram + lam0 / v if n0 else np.full(v, 1.0 / v)
        self._step_keys = keys = self._keys()
        live = self.n_words[None, :] >= np.arange(1, k + 1)[:, None]
        dense, first = self.dense, None
        if dense is not None:                # order 1 from its dense rows, the orders above searched
            live1, live[0] = live[0].copy(), False
            merged, n1, u1 = dense.rows(self._first_context(), live1)
        look = _Lookup(self.counts, keys, live, self._scratch)
        n = look.n
        if dense is not None:
            n[0], look.u[0] = n1, u1
        bucket = (np.arange(1, k + 1)[:, None], _qn(n), _qu(look.u))
        lam = np.where(n > 0, self.lam[bucket], 1.0)
        ml = look.count / n.reshape(-1)[look.slot]
        if dense is not None:
            self._merged = merged
            first = (1 - lam[0])[:, None] * np.divide(merged, np.where(n1 > 0, n1, 1.0)[:, None])
        self._look, self._lam_now, self._bucket = look, lam, bucket
        return _chain(self._p0, look.slot, look.token, (1 - lam.reshape(-1)[look.slot]) * ml, lam, [k], first)[k]

    def _first_context(self) -> np.ndarray:
        """Each stream's order-1 row in :attr:`dense`: its last word's class · 4 + its separator."""
        return np.maximum(self.words[:, -1], 0) * 4 + self.sep

    def update(self, tokens: np.ndarray, active: np.ndarray) -> None:
        """Learn λ from the coded ``tokens`` (B,) of the ``active`` streams, then count them; each
        step's update follows its :meth:`predict` (ValueError otherwise)."""
        tokens, active = checks.step_ids(tokens, active, self.words.shape[0], self.vocab)
        if self._look is None:
            raise ValueError("update follows predict: call predict(unigram) for the step first (once per update)")
        rows = np.flatnonzero(active)
        x = tokens[rows]
        b, k = self.words.shape[0], self.orders
        look, lam, bucket = self._look, self._lam_now, self._bucket
        px = self._p0[x]
        if self._unigram.any():                  # order 0: one bucket for every stream
            self._learn(np.full(rows.size, np.ravel_multi_index(self._bucket0, self.lam.shape)),
                        self._unigram[x], self.lam[self._bucket0], px)
        hit = look.token == tokens[look.slot % b]
        cx = np.bincount(look.slot[hit], look.count[hit], minlength=k * b).reshape(k, b)
        if self.dense is not None:
            cx[0] = self._merged[np.arange(b), tokens]
        flat_bucket = np.ravel_multi_index(np.broadcast_arrays(*bucket), self.lam.shape)
        for j in range(k):
            counted = look.n[j, rows] > 0
            r = rows[counted]
            px[counted] = self._learn(flat_bucket[j, r], cx[j, r] / look.n[j, r], lam[j, r], px[counted])
        order, row = np.nonzero(self.n_words[None, rows] >= np.arange(1, k + 1)[:, None])
        if self.dense is not None:              # order 1 (the first rows, streams in order) in its dense rows
            one = rows[row[order == 0]]
            self.dense.add(self._first_context()[one], tokens[one], ADDED_WEIGHT)
            order, row = order[order > 0], row[order > 0]
        self.counts.add(self._step_keys[order, rows[row]], tokens[rows[row]], ADDED_WEIGHT)
        cls = self.classes[x]
        word = rows[cls > 0]
        self.words[word] = np.concatenate([self.words[word, 1:], cls[cls > 0, None]], axis=1)
        self.n_words[word] += 1
        self.sep[rows] = self.separators[x]
        self._look = None

    def _learn(self, idx: np.ndarray, ml: np.ndarray, lam: np.ndarray, lower: np.ndarray) -> np.ndarray:
        """One online EM step on the weights ``idx`` (flat indices into ``lam``) from the coded
        tokens' probabilities under the counts (``ml``) and the shorter context (``lower``);
        returns their probabilities under the interpolation, the next order's ``lower``."""
        pk = (1 - lam) * ml + lam * lower
        target = lam * lower / pk                     # posterior: the shorter context gave the token
        flat = self.lam.reshape(-1)
        cnt = np.bincount(idx, minlength=flat.size)
        t = np.flatnonzero(cnt)
        mean = np.bincount(idx, target, minlength=flat.size)[t] / cnt[t]
        flat[t] = np.clip(flat[t] + np.minimum(WORD_RATE * cnt[t], 0.5) * (mean - flat[t]), 1e-3, 0.999)
        return pk


_WORDS_COUNTED: dict[tuple, list] = {}


def _primed_words(primer: np.ndarray, model: WordNGram) -> _Primed:
    """The word orders' :class:`_Primed` of ``primer``, kept for the last two primers."""
    def count():
        ids = np.asarray(primer, np.int64)
        cls = model.classes[ids]
        words = np.flatnonzero(cls > 0)
        y = cls[words]
        before = np.searchsorted(words, np.arange(ids.size))          # words before position i
        sep = np.r_[0, model.separators[ids[:-1]]] if ids.size else np.zeros(0, np.int64)
        keys, follows, g = [], [], np.zeros(y.size + 1, np.uint64)
        for k in range(1, model.orders + 1):
            # g[j]: the hash of the j words before a position, newest first, once j >= k
            g = np.r_[np.zeros(k, np.uint64), _word_hash(g[k:], y[:y.size + 1 - k], model.n_classes)] \
                if y.size + 1 > k else np.zeros(y.size + 1, np.uint64)
            at = np.flatnonzero(before >= k)
            keys.append(_context_keys(_with_separator(g[before[at]], sep[at]), model.token_bits))
            follows.append(ids[at])
        return _prime(keys, follows, model.token_bits, 0)

    key = (hashlib.sha256(primer.astype(np.int32).tobytes()).digest(), model.classes.tobytes(),
           model.separators.tobytes(), model.vocab, model.orders)
    return _kept(_WORDS_COUNTED, key, count)
