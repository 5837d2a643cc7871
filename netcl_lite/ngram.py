"""An adaptive token n-gram and the mixer that joins it to a language model's predictions.

:class:`NGram` counts which token followed each context of up to :data:`ORDERS` tokens, first
in primer ids (the training text), then in every token coded, and predicts with interpolated
absolute discounting; :class:`Mixer` mixes the model's distribution with the n-gram's
(several of its orders and a cache of the coded text alone), linearly, with weights learned
online per context bucket. Both run on the host in float64 over all streams at once, and
depend only on the tokens seen, so :mod:`netcl_lite.compression`'s two sides compute the same
probabilities. The constants were chosen on Chapter 9's validation split
(``benchmarks/results/capstone.md``).

    >>> ngram = NGram(np.array([1, 2, 3, 1, 2, 3]), vocab=5, streams=1, orders=2)
    >>> ngram.update(np.array([1]), np.array([True])); ngram.update(np.array([2]), np.array([True]))
    >>> p, reached, total = ngram.predict()
    >>> int(p[0].argmax()), int(reached[0]), float(total[0])      # "1 2" was followed by 3, twice
    (3, 2, 2.0)
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

import numpy as np

ORDERS = 8                     # longest context the n-gram counts, in tokens
DISCOUNT = (0.5, 0.5, 0.7, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8)    # absolute discount per order 0..ORDERS
ADDED_WEIGHT = 8               # what a coded token adds to its counts (a training token adds 1)
MIX_ORDERS = (1, 2, 4)         # the n-gram's distributions after these orders are mixed in too
LOG2_BUCKETS = 12              # weight sets per order reached and log2 of its count (capped)
MIX_RATE = 0.02                # step of the online weights (exponentiated gradient)
CACHE_DISCOUNT = 0.5           # the cache model's discount, in coded tokens
MIN_WEIGHT = 1e-4              # no weight falls below this, so p_i(x) / p(x) <= 1 / MIN_WEIGHT
MAX_EXPONENT = 30.0            # nor does one update move a weight by more than e^30
MIX_INIT = 0.6                 # the model's initial weight (the full n-gram 0.3, the rest share 0.1)


def _extend(h: np.ndarray, tokens: np.ndarray, vocab: int) -> np.ndarray:
    """Context hashes one token longer (to the left): exact while (vocab + 1)^order < 2^64."""
    with np.errstate(over="ignore"):
        return h * np.uint64(vocab + 1) + (tokens.astype(np.uint64) + np.uint64(1))


@dataclass(frozen=True)
class _Table:
    """Counts of one order: sorted distinct context hashes, each with a run of (token, count)."""
    contexts: np.ndarray       # (U,) uint64, sorted
    starts: np.ndarray         # (U + 1,) offsets into tokens/counts
    tokens: np.ndarray         # (E,) int64
    counts: np.ndarray         # (E,) float64


def _count(ids: np.ndarray, vocab: int, orders: int) -> tuple[np.ndarray, list[_Table]]:
    """Unigram counts (vocab,) and one :class:`_Table` per order 1..orders over ``ids``."""
    unigram = np.bincount(ids, minlength=vocab).astype(np.float64)
    tables = []
    h = np.zeros(ids.size, np.uint64)
    for k in range(1, orders + 1):
        # h[i]: the hash of ids[i - k : i], the context of ids[i] (positions i >= k)
        h = _extend(h[1:], ids[:max(ids.size - k, 0)], vocab)     # none left once k reaches the size
        nxt = ids[k:]
        order = np.lexsort((nxt, h))
        hs, ns = h[order], nxt[order]
        new_pair = np.ones(hs.size, bool)
        new_pair[1:] = (hs[1:] != hs[:-1]) | (ns[1:] != ns[:-1])
        at = np.flatnonzero(new_pair)
        counts = np.diff(np.append(at, hs.size)).astype(np.float64)
        pair_h, pair_t = hs[at], ns[at]
        new_ctx = np.ones(pair_h.size, bool)
        new_ctx[1:] = pair_h[1:] != pair_h[:-1]
        starts = np.append(np.flatnonzero(new_ctx), pair_h.size)
        tables.append(_Table(pair_h[new_ctx], starts, pair_t.astype(np.int64), counts))
    return unigram, tables


class NGram:
    """An adaptive token n-gram: counts of contexts up to ``orders`` tokens, from ``primer`` ids
    and then from every token coded, with interpolated absolute discounting.

    P_k(w) = (max(c_k(w) − D_k, 0) + D_k · u_k · P_{k−1}(w)) / n_k, where c_k counts w after the
    last k tokens, n_k = Σ c_k and u_k the distinct tokens seen there; an unseen context falls
    back to P_{k−1}; P_0 discounts the unigram counts against 1/vocab. A coded token counts
    :data:`ADDED_WEIGHT` times a training token: the text being coded predicts itself better
    than the training text does. :meth:`predict` gives every stream's distribution, those after
    the orders in :data:`MIX_ORDERS` and a cache model (the same chain over the coded tokens'
    counts alone) as ``snapshots``, and the order its context reached;
    :meth:`update` adds the coded tokens. Counts only grow by whole numbers, so both sides of a
    coder hold the same state after the same tokens, whatever the order of the streams.
    """

    def __init__(self, primer: np.ndarray, vocab: int, streams: int, orders: int = ORDERS):
        self.vocab, self.orders = vocab, orders
        self.unigram, self.tables = _primed_counts(primer, vocab, orders)
        self.unigram = self.unigram.copy()
        # per order: {context hash: the coded tokens that followed it}, one token packed into an int
        # (_packed) until a second distinct token follows, then {token: count}: most long contexts are
        # seen once, and an int takes a fifth of a dict's memory
        self.added: list[dict] = [{} for _ in range(orders)]
        self.history = np.full((streams, orders), -1, np.int64)  # last tokens, newest last; -1: none yet
        self.seen = np.zeros(streams, np.int64)

    def _contexts(self) -> list[np.ndarray]:
        """Per order k, each stream's context hash (uint64; meaningless where seen < k)."""
        out, h = [], np.zeros(self.history.shape[0], np.uint64)
        for k in range(1, self.orders + 1):
            h = _extend(h, np.maximum(self.history[:, -k], 0), self.vocab)
            out.append(h)
        return out

    def predict(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(probabilities (B, vocab) float64, order reached (B,), count there (B,)); also sets
        ``snapshots``: the distributions after each order of :data:`MIX_ORDERS`, then the chain
        over the coded tokens' counts alone (a cache model)."""
        b, v = self.history.shape[0], self.vocab
        n0 = self.unigram.sum()
        p0 = _discounted(np.full(v, 1.0 / v), self.unigram, DISCOUNT[0]) if n0 else np.full(v, 1.0 / v)
        p = np.broadcast_to(p0, (b, v)).copy()
        cached = p.copy()
        reached, total = np.zeros(b, np.int64), np.full(b, n0)
        snapshots = {}
        for k, (h, table, added) in enumerate(zip(self._contexts(), self.tables, self.added), start=1):
            live = np.flatnonzero(self.seen >= k)
            if not live.size:
                break
            coded = _coded_counts(added, h[live], v)
            counts = _table_counts(table, h[live], v) + coded
            for chain, c, d in ((p, counts, DISCOUNT[k]), (cached, coded, CACHE_DISCOUNT * ADDED_WEIGHT)):
                seen = c.sum(axis=1) > 0
                chain[live[seen]] = _discounted(chain[live[seen]], c[seen], d)
            n = counts.sum(axis=1)
            if not n.any():
                break
            reached[live[n > 0]], total[live[n > 0]] = k, n[n > 0]
            if k in MIX_ORDERS:
                snapshots[k] = p.copy()
        self.snapshots = [snapshots.get(k, p) for k in MIX_ORDERS] + [cached]   # unreached orders: the final p
        return p, reached, total

    def update(self, tokens: np.ndarray, active: np.ndarray) -> None:
        """Count ``tokens`` (B,) after each stream's context, for the ``active`` streams (bool (B,))."""
        rows = np.flatnonzero(active)
        np.add.at(self.unigram, tokens[rows], float(ADDED_WEIGHT))
        for k, h in enumerate(self._contexts(), start=1):
            added = self.added[k - 1]
            for r in rows[self.seen[rows] >= k].tolist():
                key, t = int(h[r]), int(tokens[r])
                succ = added.get(key)
                if succ is None:
                    added[key] = t << _COUNT_BITS | ADDED_WEIGHT
                elif isinstance(succ, int):
                    if succ >> _COUNT_BITS == t:
                        added[key] = succ + ADDED_WEIGHT
                    else:
                        added[key] = {succ >> _COUNT_BITS: succ & _COUNT_MASK, t: ADDED_WEIGHT}
                else:
                    succ[t] = succ.get(t, 0) + ADDED_WEIGHT
        self.history[rows] = np.concatenate([self.history[rows, 1:], tokens[rows, None]], axis=1)
        self.seen[rows] += 1


def _discounted(lower: np.ndarray, counts: np.ndarray, d: float) -> np.ndarray:
    """(max(c − d, 0) + d · u · lower) / n per row: counts (R, vocab) with n = Σ c > 0, u the
    tokens with c > 0, ``lower`` the next shorter context's distribution (R, vocab) or (vocab,)."""
    n = counts.sum(axis=-1, keepdims=True)
    u = np.count_nonzero(counts, axis=-1)[..., None]
    return (np.maximum(counts - d, 0) + d * u * lower) / n


def _table_counts(table: _Table, contexts: np.ndarray, vocab: int) -> np.ndarray:
    """(R, vocab) counts of the tokens that followed each of ``contexts`` (R,) in ``table``."""
    counts = np.zeros((contexts.size, vocab))
    if not table.contexts.size:
        return counts
    at = np.minimum(np.searchsorted(table.contexts, contexts), table.contexts.size - 1)
    found = table.contexts[at] == contexts
    lo = np.where(found, table.starts[at], 0)
    lengths = np.where(found, table.starts[at + 1], 0) - lo
    if lengths.sum():
        rows = np.repeat(np.arange(contexts.size), lengths)
        idx = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths) + np.repeat(lo, lengths)
        counts[rows, table.tokens[idx]] = table.counts[idx]
    return counts


#: a context's one coded successor so far is stored as ``token << _COUNT_BITS | count``
_COUNT_BITS = 40
_COUNT_MASK = (1 << _COUNT_BITS) - 1


def _coded_counts(added: dict, contexts: np.ndarray, vocab: int) -> np.ndarray:
    """(R, vocab) counts of the coded tokens that followed each of ``contexts`` (R,)."""
    counts = np.zeros((contexts.size, vocab))
    for r, key in enumerate(contexts.tolist()):
        seen = added.get(key)
        if seen is None:
            continue
        if isinstance(seen, int):
            counts[r, seen >> _COUNT_BITS] = seen & _COUNT_MASK
        else:
            counts[r, list(seen)] = list(seen.values())
    return counts


_COUNTED: dict[tuple, tuple] = {}
_COUNTED_LOCK = threading.Lock()


def _primed_counts(primer: np.ndarray, vocab: int, orders: int):
    """:func:`_count` of ``primer``, kept for the last two primers (counting takes a second or two).
    Threads share the kept counts (read only); the lock guards the keeping."""
    key = (hashlib.sha256(primer.astype(np.int32).tobytes()).digest(), primer.size, vocab, orders)
    with _COUNTED_LOCK:
        counted = _COUNTED.get(key)
    if counted is None:
        counted = _count(primer, vocab, orders)
        with _COUNTED_LOCK:
            while len(_COUNTED) >= 2:
                _COUNTED.pop(next(iter(_COUNTED)))
            _COUNTED[key] = counted
    return counted


class Mixer:
    """p = Σ w_i · p_i over the model's distribution, the n-gram's after each order of
    :data:`MIX_ORDERS`, the cache model's and the n-gram's final one: a linear mixture with one
    set of weights per (order reached, ⌊log2 count⌋), moved online by the exponentiated gradient
    of log p of the coded token (w_i ← w_i · exp(η (p_i(x) / p(x) − 1)), then normalized), so
    they stay a distribution."""

    def __init__(self, orders: int):
        parts = len(MIX_ORDERS) + 3               # the model, the snapshots, the cache, the n-gram
        self.w = np.full((orders + 1, LOG2_BUCKETS, parts), 0.1 / max(parts - 2, 1))
        self.w[..., 0], self.w[..., -1] = MIX_INIT, 0.9 - MIX_INIT
        self.w /= self.w.sum(axis=2, keepdims=True)

    def mix(self, parts, reached, total):
        self.bucket = (reached, np.minimum(np.floor(np.log2(np.maximum(total, 1))).astype(np.int64),
                                           LOG2_BUCKETS - 1))
        w = self.w[self.bucket]
        self.parts = parts
        p = w[:, :1] * parts[0]
        for i in range(1, len(parts)):
            p += w[:, i:i + 1] * parts[i]
        return p

    def update(self, tokens, p_mix, active):
        rows = np.flatnonzero(active)
        px = p_mix[rows, tokens[rows]]
        ratio = np.stack([part[rows, tokens[rows]] / px for part in self.parts], axis=1)
        step = np.zeros_like(self.w)
        np.add.at(step, (self.bucket[0][rows], self.bucket[1][rows]), ratio - 1)
        w = self.w * np.exp(np.clip(MIX_RATE * step, -MAX_EXPONENT, MAX_EXPONENT))
        w = np.maximum(w / w.sum(axis=2, keepdims=True), MIN_WEIGHT)    # every part keeps a say
        self.w = w / w.sum(axis=2, keepdims=True)
