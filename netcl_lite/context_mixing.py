"""Context mixing as PAQ does it, over a 1,024-token vocabulary: what the compressor's mixed mode
predicts from the model's distribution and the counts of the text.

:class:`ContextMixer` joins, for every stream at once:

* the model's distribution and the adaptive token n-gram's (:class:`~netcl_lite.ngram.NGram`),
  first mixed linearly (:class:`~netcl_lite.ngram.Mixer`);
* a word n-gram (:class:`~netcl_lite.ngram.WordNGram`) and each stream's own recent tokens
  (:class:`StreamCache`);
* what a match model predicts: the most recent successor of each context of 1 to
  :data:`~netcl_lite.ngram.SUCCESSOR_ORDERS` tokens and the longest earlier match
  (:class:`~netcl_lite.match.MatchModel`);

in a log-linear (geometric) mixer, p(x) ∝ exp(Σ_i w_i log p_i(x) + Σ_j v_j [x = t_j] + b_prev(x))
(:class:`GeometricMixer`): the multi-symbol form of PAQ's logistic mixing (Mahoney 2005), with
weight sets selected by the order the n-gram's context reached, learned online by the gradient of
the coded token's log-probability, and an online bias per previous token. Then secondary
estimation (:class:`TreeSSE`): each token is a path of binary decisions down a tree of the
vocabulary, and an adaptive probability map (APM) refines each decision's probability. Every
part is NumPy (float64, but for the geometric mixer's logs and their weighted sums, float32) over
arrays that depend only on the tokens coded, the same code on both sides of the coder, with no
reduction whose order depends on threads. The constants were chosen
on Chapter 9's validation split (``benchmarks/results/capstone.md``).
"""

from __future__ import annotations

import itertools

from collections.abc import Mapping

import numpy as np

from . import checks
from .match import MatchModel, add_in_order
from .ngram import ORDERS, SUCCESSOR_ORDERS, Mixer, NGram, WordNGram

#: what the mixer uses, in the order the ablation adds them (``benchmarks/mix_ablation.py``):
#: ``geometric`` mixes in the log domain on top of the linear mix; ``sse`` adds secondary
#: estimation; ``match`` the match model's predictions; ``words`` the word n-gram; ``streams``
#: each stream's own recent tokens; ``bias`` the online bias per previous token
TECHNIQUES = ("geometric", "sse", "match", "words", "streams", "bias")

GEOMETRIC_RATE = 0.001      # step of the log-linear weights
BOOST_RATE = 0.02           # step of the weights of the match model's predicted tokens
BIAS_RATE = 0.2             # step of the bias per previous token
LOG_FLOOR = -30.0           # an input's log-probability is taken as at least this
STREAM_DECAY = 0.99         # a stream's token seen k steps ago counts 0.99^k in its own caches
STREAM_WINDOW = 4096        # the bigram cache looks this many steps back (0.99^4096 < 2e-18): bounded work a step
STREAM_PRIOR = 5.0          # the unigram cache's prior weight (the n-gram's order-0 distribution)
STREAM_BIGRAM_PRIOR = 2.0   # the bigram cache's prior weight (the unigram cache)
MATCH_BUCKETS = 20          # match lengths 0..11 each, then every 4 up to 43+
SSE_BINS = 33               # the APM's interpolation points over stretch(p) in [-8, 8]
#: the largest vocabulary the mixer takes: its bias per previous token is a (vocab, vocab) float64
#: table (128 MiB at 4,096, filled as previous tokens occur), which has to stay within the
#: compressor's memory bound; a larger model codes with the model alone (``mix=False``)
MAX_VOCAB = 4096
SSE_RATE = 0.02             # step of the APM's entries
SSE_WEIGHT = 0.7            # the output is this much the APM's, the rest the input (stretch domain)
SSE_DEPTH = 4               # levels of the vocabulary's tree whose decisions it refines


def _reals(name: str, value, what: str) -> np.ndarray:
    """``value`` as a float array, or ValueError naming ``name`` for anything that is not real numbers
    (a NaN included: it would come back as NaN, silently), TypeError for a NumPy masked array (its mask
    would be ignored, the values under it computed as if they were there)."""
    checks.not_masked(name, value)
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must be {what}; NumPy cannot read it as an array ({exc})") from None
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be {what}, got an array of {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must be {what}, got a NaN in it")
    return arr


def stretch(p: np.ndarray) -> np.ndarray:
    """ln(p / (1 − p)), the logistic domain PAQ mixes in: −inf at 0, +inf at 1; ValueError for a
    NaN or a value outside [0, 1], which have none."""
    p = _reals("p", p, "probabilities in [0, 1]")
    if p.size and not (p.min() >= 0 and p.max() <= 1):
        raise ValueError(f"p must be probabilities in [0, 1], got values from {p.min()} to {p.max()}")
    with np.errstate(divide="ignore"):
        return np.log(p / (1 - p))


def squash(x: np.ndarray) -> np.ndarray:
    """The inverse of :func:`stretch`: 1 / (1 + e^−x) (0 at −inf, 1 at +inf); ValueError for a NaN."""
    x = _reals("x", x, "real numbers (stretched probabilities)")
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


class StreamCache:
    """Each stream's own recent tokens: a unigram and a bigram of its coded tokens, a token seen
    k steps ago weighing :data:`STREAM_DECAY`^k. A stream codes one stretch of the text, so these
    see the current module's names, which the n-gram's counts (over every stream and the
    training text) dilute.

    unigram(x) = (c(x) + α P0(x)) / (Σ c + α); bigram(x) = (c(prev, x) + β unigram(x)) / (Σ c(prev, ·) + β)

    The bigram counts the pairs of the last :data:`STREAM_WINDOW` steps, so a step's work is
    bounded however long or repetitive the text is (older pairs would weigh under 2e-18), and so
    is its memory: each stream keeps its last :data:`STREAM_WINDOW` + 1 tokens in a ring, written
    twice (at slot i and i + R of a row of 2R, R = :data:`STREAM_WINDOW` + 1), so that the window
    is always one contiguous slice, oldest first.
    """

    __copy__ = checks.whole_copy     # a shallow copy shared the arrays updated in place

    def __init__(self, vocab: int, lengths: np.ndarray):
        checks.coder_sizes(vocab=vocab, lengths=lengths)            # before anything is sized by them
        b = checks.id_array("lengths", lengths, what="token counts, one per stream").size   # a list has no .size
        self.window = STREAM_WINDOW
        self.ring = self.window + 1
        self.counts = np.zeros((b, vocab))
        # int16 ids where they fit (the mixer's vocabulary is at most MAX_VOCAB): the window's compare
        # reads a quarter of int64's bytes
        self.history = np.zeros((b, 2 * self.ring), np.int16 if vocab <= 1 << 15 else np.int64)
        self.decay = STREAM_DECAY ** np.arange(self.ring)
        self.step = 0

    def predict(self, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(unigram, bigram), each (B, vocab), from ``prior`` (vocab,): finite and >= 0 (a NaN in it would
        be in every stream's prediction)."""
        b, v = self.counts.shape
        # its mask would be carried into every stream's prediction; an np.matrix is read as its array
        prior = checks.plain_array("prior", prior)
        if not isinstance(prior, np.ndarray) or prior.shape != (v,) or prior.dtype.kind not in "iuf":
            shown = f"{prior.dtype} of shape {prior.shape}" if isinstance(prior, np.ndarray) else type(prior).__name__
            raise ValueError(f"prior must be a float array of shape ({v},) (a distribution over the vocabulary), "
                             f"got {shown}")
        if not (prior.min() >= 0 and prior.max() <= 1 + 1e-6):   # (rounding aside) a value past 1 could overflow to inf
            raise ValueError("prior must hold finite probabilities >= 0 (and <= 1); it holds a NaN, an infinity, "
                             "a negative value or one over 1")
        unigram = (self.counts + STREAM_PRIOR * prior) / (self.counts.sum(axis=1, keepdims=True) + STREAM_PRIOR)
        t = self.step
        if t >= 2:       # pairs (i, i + 1), t - 1 - window <= i < t - 1, whose first is the last token
            lo = max(0, t - self.ring)
            seen = self.history[:, lo % self.ring:lo % self.ring + t - lo]     # steps lo .. t - 1, in order
            rows, at = np.nonzero(seen[:, :-1] == seen[:, -1:])
            follows = np.bincount(rows * v + seen[rows, at + 1], self.decay[t - 1 - lo - at],
                                  minlength=b * v).reshape(b, v)     # summed in order, as np.add.at does
        else:
            follows = np.zeros((b, v))
        follows = follows.astype(np.float64, copy=False)      # bincount of no pairs: int zeros
        n = follows.sum(axis=1, keepdims=True)
        follows += STREAM_BIGRAM_PRIOR * unigram
        return unigram, np.divide(follows, n + STREAM_BIGRAM_PRIOR, out=follows)

    def update(self, tokens: np.ndarray, active: np.ndarray) -> None:
        """Count the ``active`` streams' ``tokens`` (B,), the older counts decayed."""
        tokens, active = checks.step_ids(tokens, active, self.counts.shape[0], self.counts.shape[1])
        rows = np.flatnonzero(active)
        if rows.size == active.size:          # the usual step: in place, no rows copied out and back
            self.counts *= STREAM_DECAY
        else:
            self.counts[rows] *= STREAM_DECAY
        self.counts[rows, tokens[rows]] += 1.0
        slot = self.step % self.ring
        self.history[:, [slot, slot + self.ring]] = np.where(active, tokens, 0)[:, None]   # a finished stream: 0
        self.step += 1


def _match_bucket(length: np.ndarray) -> np.ndarray:
    return np.where(length < 12, length, np.minimum(12 + (length - 12) // 4, MATCH_BUCKETS - 1))


def check_vocab(vocab: int) -> None:
    """A ValueError when a model's ``vocab`` is more than the mixer takes (:data:`MAX_VOCAB`), or is
    no positive int (a NaN compared as under it)."""
    checks.positive_int("vocab", vocab, "the model's vocab_size")
    if vocab > MAX_VOCAB:
        raise ValueError(f"the model's vocab_size={vocab:,} is more than the mixed mode takes "
                         f"(context_mixing.MAX_VOCAB = {MAX_VOCAB:,}: its bias per previous token needs "
                         f"vocab_size² × 8 bytes); code with the model alone: mix=False "
                         f"(--model-only on the command line)")


class GeometricMixer:
    """p(x) ∝ exp(Σ_i w_i[c] log p_i(x) + boosts + b_prev(x)), the log-linear mixture of the
    input distributions p_i with weights per context c (the n-gram's order reached), plus, for
    each predicted token t_j (a match model's), a weight v_j[c_j] added to its score, and an
    online bias per previous token. Every weight moves by the gradient of log p(x) of the coded
    token: w_i[c] += η (log p_i(x) − E_p log p_i); v_j += η' ([x = t_j] − p(t_j));
    b[prev] += η'' (onehot(x) − p). The first input's weight starts at 1, the others at 0."""

    __copy__ = checks.whole_copy     # a shallow copy shared the arrays updated in place

    def __init__(self, inputs: int, contexts: int, boosts: list[int], vocab: int, bias: bool):
        inputs = checks.positive_int("inputs", inputs, "distributions mixed")
        contexts = checks.positive_int("contexts", contexts, "weight sets")
        vocab = checks.positive_int("vocab", vocab, "the model's vocab_size")
        checks.flag("bias", bias)
        if isinstance(boosts, (str, bytes)) or not isinstance(boosts, (list, tuple)) \
                or not all(checks._is_int(size) and size > 0 for size in boosts):
            raise TypeError(f"boosts must be a list of positive ints (each boost table's size), got {boosts!r:.200}")
        for name, cells in (("contexts × inputs", contexts * inputs), *((f"boosts[{i}]", int(size))
                                                                       for i, size in enumerate(boosts))):
            if cells > checks.MAX_TABLE_CELLS:
                raise ValueError(f"{name} makes a table of {cells:,} float64 cells, over MAX_TABLE_CELLS = "
                                 f"{checks.MAX_TABLE_CELLS:,} (1 GiB): pass fewer")
        if bias:                           # a (vocab, vocab) table: the mixed mode's bound
            check_vocab(vocab)
        self.w = np.zeros((contexts, inputs))
        self.w[:, 0] = 1.0
        self.v = [np.zeros(size) for size in boosts]
        self.bias = np.zeros((vocab, vocab)) if bias else None
        self.vocab = vocab
        self._state = None                 # what :meth:`mix` computed, until :meth:`update`

    def _check_step(self, parts, context, boosts, prev) -> None:
        """ValueError naming the argument of :meth:`mix` that does not fit the weights: they are
        indexed by it, so an id past a table was an IndexError and -1 silently the table's last."""
        inputs, v = self.w.shape[1], self.vocab
        if not isinstance(parts, (list, tuple)) or len(parts) != inputs:
            got = f"{len(parts)} parts" if isinstance(parts, (list, tuple)) else type(parts).__name__
            raise ValueError(f"parts must be a list of {inputs} distributions (the inputs the mixer was made "
                             f"for), got {got}")
        b = parts[0].shape[0] if isinstance(parts[0], np.ndarray) and parts[0].ndim == 2 else None
        for i, part in enumerate(parts):
            if not isinstance(part, np.ndarray) or part.dtype.kind != "f" or b is None or part.shape != (b, v):
                shown = f"{part.dtype} of shape {part.shape}" if isinstance(part, np.ndarray) else type(part).__name__
                raise ValueError(f"parts[{i}] must be a float array of shape (streams, {v}), the same for every "
                                 f"part, got {shown}")

        def ids(name, value, high, low=0, what=""):
            arr = np.asarray(value)
            if arr.shape != (b,) or arr.dtype.kind not in "iu" or (b and (arr.min() < low or arr.max() >= high)):
                span = (f" from {arr.min()} to {arr.max()}" if arr.ndim == 1 and arr.size
                        and arr.dtype.kind in "iuf" else "")
                raise ValueError(f"{name} must hold one int per stream ({b}) in [{low}, {high}){what}, got "
                                 f"{arr.dtype} of shape {arr.shape}{span}")
            return arr

        ids("context", context, self.w.shape[0], what=" (each stream's weight set)")
        ids("prev", prev, v, what=" (each stream's previous token)")
        if not isinstance(boosts, (list, tuple)):
            raise ValueError(f"boosts must be a list of (table, tokens, index), got {type(boosts).__name__}")
        for j, boost in enumerate(boosts):
            if not isinstance(boost, (list, tuple)) or len(boost) != 3 or not checks._is_int(boost[0]) \
                    or not 0 <= boost[0] < len(self.v):
                raise ValueError(f"boosts[{j}] must be (table, tokens, index) with table in [0, {len(self.v)}) "
                                 f"(the boost tables the mixer was made with), got {boost!r:.200}")
            ids(f"boosts[{j}]'s tokens", boost[1], v, low=-1, what=" (-1 for none)")
            ids(f"boosts[{j}]'s index", boost[2], self.v[boost[0]].size, what=" (into its table's weights)")

    def mix(self, parts: list, context: np.ndarray, boosts: list, prev: np.ndarray) -> np.ndarray:
        """``parts``: (B, vocab) distributions; ``context`` (B,): each stream's weight set;
        ``boosts``: (table, tokens (B,) with -1 for none, index (B,) into that table's weights);
        ``prev``: each stream's previous token.

        The inputs' logs are float32, in one (B, inputs, vocab) array kept for :meth:`update`, and
        their weighted sum one ``einsum`` (its own loops, no BLAS: the same order on every call).
        A float32 log is off by at most 2^-24 of its size, under 2e-6 above the floor of −30 (a
        probability too small for float32 is below e^−30 and floored either way), far below what
        moves a coded bit; the passes read half the bytes and the logs take under half the time
        (``benchmarks/results/tried.md``)."""
        if isinstance(parts, (list, tuple)):     # a masked part refused, an np.matrix read as its array
            parts = [checks.plain_array(f"parts[{i}]", part) for i, part in enumerate(parts)]
        self._check_step(parts, context, boosts, prev)
        # copies of what was checked, kept for update: a caller that reuses its arrays before update
        # would otherwise move other weights than the ones mixed (-1 silently the last)
        context, prev = np.array(context), np.array(prev)
        boosts = [(int(table), np.array(tokens), np.array(index)) for table, tokens, index in boosts]
        b, v = parts[0].shape
        if getattr(self, "_logs", None) is None or self._logs.shape != (b, len(parts), v):
            self._logs = np.empty((b, len(parts), v), np.float32)     # kept for update, reused each step
        logs = self._logs
        # a zero (or a float32 underflow): -inf, floored next; a negative value: NaN, and a value past
        # float32's range: inf (it overflowed as it was cast), each refused below by name
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for i, p in enumerate(parts):
                np.log(p, out=logs[:, i], dtype=np.float32, casting="unsafe")
        np.maximum(logs, np.float32(LOG_FLOOR), out=logs)
        s = np.einsum("bi,biv->bv", self.w[context].astype(np.float32), logs).astype(np.float64)
        if self.bias is not None:
            s += self.bias[prev]
        rows_of = []
        for table, tokens, index in boosts:
            rows = np.flatnonzero(tokens >= 0)
            s[rows, tokens[rows]] += self.v[table][index[rows]]
            rows_of.append(rows)
        top = s.max(axis=1, keepdims=True)
        if not np.isfinite(top).all():    # a row's max: NaN for a NaN in it, inf for an infinity
            self._state = None
            raise ValueError("parts must hold finite probabilities >= 0; one holds a NaN, an infinity, a "
                             "negative value or one past float32's range (check the model and the counts "
                             "that gave it)")
        s -= top
        p = np.exp(s, out=s)
        p /= p.sum(axis=1, keepdims=True)
        self._state = logs, context, boosts, rows_of, prev, p
        return p.copy()             # the caller's to edit: update reads the mixer's own

    def update(self, tokens: np.ndarray, active: np.ndarray) -> None:
        """Move the weights by the gradient of the coded ``tokens``' log-probability; follows :meth:`mix`."""
        if self._state is None:
            raise ValueError("update follows mix: call mix(...) for the step first (once per update)")
        logs, context, boosts, rows_of, prev, p = self._state
        tokens, active = checks.step_ids(tokens, active, p.shape[0], self.vocab)
        self._state = None
        rows = np.flatnonzero(active)
        x = tokens[rows]
        every = rows.size == p.shape[0]               # the usual step: no rows to copy out
        pr = p if every else p[rows]
        expected = np.einsum("bv,biv->bi", pr.astype(np.float32), logs if every else logs[rows])
        grad = (logs[rows, :, x] - expected).astype(np.float64)
        np.add.at(self.w, context[rows], GEOMETRIC_RATE * grad)
        for (table, predicted, index), r in zip(boosts, rows_of):
            r = r[active[r]]
            np.add.at(self.v[table], index[r], BOOST_RATE * ((predicted[r] == tokens[r]) - p[r, predicted[r]]))
        if self.bias is not None:          # b[prev] += η (onehot(x) − p), stream by stream in order
            grad = pr * -BIAS_RATE
            grad[np.arange(rows.size), x] += BIAS_RATE
            add_in_order(self.bias, prev[rows], grad)       # row by row in order, as a loop adds


class TreeSSE:
    """Secondary estimation over a binary tree of the vocabulary: token x is the path of
    ⌈log2 vocab⌉ decisions given by its id's bits, node n's decision has probability
    P(right) = P(right subtree) / P(subtree), and an APM (an adaptive probability map, Mahoney 2005)
    indexed by the node's depth and its stretched probability, interpolated between
    :data:`SSE_BINS` points, refines it; the output, in the stretch domain, is
    (1 − :data:`SSE_WEIGHT`) · st(p) + :data:`SSE_WEIGHT` · APM(st(p)). The nodes of the top
    :data:`SSE_DEPTH` levels are refined; each subtree below keeps its shape and takes the
    probability its path now has. After a token, only the entries of the nodes on its path move
    toward what was decided."""

    __copy__ = checks.whole_copy     # a shallow copy shared the arrays updated in place

    def __init__(self, vocab: int, depth: int | None = None):
        checks.coder_sizes(vocab=vocab)                 # a call pads each row to 2^⌈log2 vocab⌉ leaves
        vocab = int(vocab)
        if depth is not None:
            checks.positive_int("depth", depth, "levels of the tree refined; None for SSE_DEPTH")
        self.bits = max(1, int(vocab - 1).bit_length())
        self.depth = min(self.bits, SSE_DEPTH if depth is None else depth)
        self.vocab = vocab
        self.node_depth = np.repeat(np.arange(self.depth), 1 << np.arange(self.depth))
        self.table = np.tile(np.linspace(-8.0, 8.0, SSE_BINS), (self.depth, 1))
        self._state = None                 # what the call computed, until :meth:`update`

    def __call__(self, p: np.ndarray) -> np.ndarray:
        p = checks.plain_array("p", p)     # a mask was carried into the output; an np.matrix failed in max(keepdims=)
        if not isinstance(p, np.ndarray) or p.ndim != 2 or p.shape[1] != self.vocab or p.dtype.kind != "f" \
                or not p.shape[0]:
            shown = f"{p.dtype} of shape {p.shape}" if isinstance(p, np.ndarray) else type(p).__name__
            raise ValueError(f"p must be a float array of shape (streams, {self.vocab}) (a distribution per "
                             f"stream over the vocabulary, at least one stream), got {shown}")
        b = p.shape[0]
        # in float64, as the mixer's distributions are (no copy of those): a float16 or float32 p summed
        # its subtrees in its own precision, and the bounds below (1e±200) overflowed as they were cast to it
        p = p.astype(np.float64, copy=False)
        # a negative value came out as a negative chance, a row of zeros as NaNs, an infinity as NaNs
        # (inf / inf), silently (a NaN is named by the NaN test below)
        top = p.max(axis=1, keepdims=True)
        if p.size and (p.min() < 0 or not (top > 0).all()) and not np.isnan(p).any():
            raise ValueError("p must hold probabilities >= 0, each row some of them above 0; it holds a "
                             "negative value or a row of zeros: the distribution it refines is broken")
        if p.size and np.isinf(top).any():
            raise ValueError("p must hold finite probabilities, got an infinity in it: the distribution it "
                             "refines is broken")
        odd = (top < 1e-200) | (top > 1e200)
        if odd.any():
            # a row of subnormal values came out as infinities and NaNs (its subtrees' masses are floored
            # at 1e-300), one of huge values overflowed its sums: such a row is scaled to a maximum of 1
            # first (the output is normalized, so it is the same distribution); other rows stay as they are
            p = np.where(odd, p / np.where(odd, top, 1.0), p)
        if self.vocab == 1 << self.bits:                 # a full tree: the leaves are p
            leaves = p
        else:
            leaves = np.zeros((b, 1 << self.bits))
            leaves[:, :self.vocab] = p
        groups = leaves.reshape(b, 1 << self.depth, -1).sum(axis=2)          # the subtrees below
        levels = [np.maximum(groups, 1e-300)]
        for _ in range(self.depth - 1):
            levels.append(levels[-1][:, ::2] + levels[-1][:, 1::2])
        logs = [np.log(level) for level in reversed(levels)]                 # logs[d]: 2^(d + 1) subtrees
        st = np.concatenate([lg[:, 1::2] - lg[:, ::2] for lg in logs], axis=1)   # (B, nodes), heap order
        pos = (np.clip(st, -8.0, 8.0) + 8.0) * ((SSE_BINS - 1) / 16.0)
        if np.isnan(pos).any():            # a NaN in p (a node's stretch, one per node: a cheap test)
            raise ValueError("p must hold probabilities, got a NaN in it: the distribution it refines is broken")
        i = np.minimum(pos.astype(np.int64), SSE_BINS - 2)
        f = pos - i
        d = self.node_depth[None, :]
        apm = (1 - f) * self.table[d, i] + f * self.table[d, i + 1]
        x = (1 - SSE_WEIGHT) * st + SSE_WEIGHT * apm
        self._state = i, f, apm
        log_right, log_left = -np.logaddexp(0, -x), -np.logaddexp(0, x)      # log squash(±x)
        acc = np.zeros((b, 1))
        for depth in range(self.depth):
            s = slice((1 << depth) - 1, (1 << (depth + 1)) - 1)
            acc = np.stack([acc + log_left[:, s], acc + log_right[:, s]], axis=2).reshape(b, -1)
        scale = np.exp(acc - logs[-1])                                       # new / old, per subtree
        # the new total is Σ over subtrees of scale · the subtree's old mass, so one pass over the
        # leaves scales and normalizes them
        scale /= (scale * groups).sum(axis=1, keepdims=True)
        out = (leaves.reshape(b, scale.shape[1], -1) * scale[:, :, None]).reshape(b, -1)[:, :self.vocab]
        # a slice of the leaves (a tree wider than the vocabulary) gets a contiguous array of its
        # own, as the coder needs
        return out if out.flags.c_contiguous else np.ascontiguousarray(out)

    def update(self, tokens: np.ndarray, active: np.ndarray) -> None:
        """Move the entries of the coded ``tokens``' paths toward their decisions; follows a call."""
        if self._state is None:
            raise ValueError("update follows a call: call the TreeSSE on the step's distribution first "
                             "(once per update)")
        i, f, apm = self._state
        tokens, active = checks.step_ids(tokens, active, i.shape[0], self.vocab)
        self._state = None
        rows = np.flatnonzero(active)
        d = np.arange(self.depth)
        nodes = (1 << d) - 1 + (tokens[rows, None] >> (self.bits - d))        # (R, depth)
        bits = (tokens[rows, None] >> (self.bits - 1 - d)) & 1
        r = rows[:, None]
        err = SSE_RATE * (bits - squash(apm[r, nodes]))
        dd = np.broadcast_to(d, nodes.shape)
        np.add.at(self.table, (dd, i[r, nodes]), err * (1 - f[r, nodes]))
        np.add.at(self.table, (dd, i[r, nodes] + 1), err * f[r, nodes])


class ContextMixer:
    """Everything the mixed mode predicts besides the model, for streams of ``lengths`` tokens:
    :meth:`predict` takes the model's distributions (B, vocab) and returns the coded ones;
    :meth:`update` takes the step's tokens. ``pieces``: each token id's bytes (the tokenizer's
    vocabulary), for the word n-gram; ``techniques``: which of :data:`TECHNIQUES` to use (all by
    default; none is the linear mix alone)."""

    __copy__ = checks.whole_copy     # a shallow copy shared the arrays updated in place

    def __init__(self, primer: np.ndarray, vocab: int, lengths: np.ndarray, pieces: dict[int, bytes],
                 techniques=TECHNIQUES):
        checks.coder_sizes(vocab=vocab, lengths=lengths, pieces=pieces)         # before anything is sized by them
        vocab = checks.positive_int("vocab", vocab, "the model's vocab_size")
        check_vocab(vocab)
        primer = checks.id_array("primer", primer, vocab)
        lengths = checks.id_array("lengths", lengths, what="token counts, one per stream")
        if lengths.size == 0:
            raise ValueError("lengths must give at least one stream's token count, got none")
        if not isinstance(pieces, Mapping):
            raise TypeError(f"pieces must be a mapping of token id -> bytes (the tokenizer's vocab), "
                            f"got {type(pieces).__name__}")
        if isinstance(techniques, str):
            raise TypeError(f"techniques must be a collection of names from {TECHNIQUES}, got the "
                            f"string {techniques!r} (pass ({techniques!r},))")
        try:        # read once (an iterator or a generator too), and never without end
            techniques = tuple(itertools.islice(techniques, 4 * len(TECHNIQUES) + 1))
        except TypeError:
            raise TypeError(f"techniques must be a collection of names from {TECHNIQUES}, got "
                            f"{type(techniques).__name__} {techniques!r:.80}") from None
        if len(techniques) > 4 * len(TECHNIQUES):
            raise ValueError(f"techniques: more than {4 * len(TECHNIQUES)} names; name each of {TECHNIQUES} "
                             f"at most once")
        if not all(isinstance(t, str) for t in techniques):
            raise TypeError(f"techniques must be names (str) from {TECHNIQUES}, got {techniques!r:.200}")
        unknown = set(techniques) - set(TECHNIQUES)
        if unknown:
            raise ValueError(f"techniques: unknown {sorted(unknown)}; choose from {TECHNIQUES}")
        on = set(techniques)
        if on and "geometric" not in on:
            raise ValueError("techniques: every technique but the linear mix needs 'geometric'")
        b = lengths.size
        self.vocab = vocab
        self.on = on
        self.ngram = NGram(primer, vocab, b)
        self.linear = Mixer(ORDERS)
        self.words = WordNGram(primer, vocab, b, pieces) if "words" in on else None
        self.match = MatchModel(primer, lengths) if "match" in on else None
        self.streams = StreamCache(vocab, lengths) if "streams" in on else None
        if "geometric" in on:
            inputs = 4 + (self.words is not None) + 2 * (self.streams is not None)
            boosts = [SUCCESSOR_ORDERS * (ORDERS + 1), MATCH_BUCKETS] if "match" in on else []
            self.geometric = GeometricMixer(inputs, ORDERS + 1, boosts, vocab, "bias" in on)
        self.sse = TreeSSE(vocab) if "sse" in on else None
        self.prev = np.zeros(b, np.int64)
        self._prepared = None
        self._linear = None                # the linear mix :meth:`predict` made, until :meth:`update`

    def prepare(self) -> None:
        """What the step's prediction needs besides the model's: the counts' distributions, the
        streams' caches, the match model's predictions. :meth:`predict` calls it when the caller
        has not (the compressor calls it while the model's step runs on the device); one made
        between :meth:`predict` and :meth:`update` is from before the step's tokens, and
        :meth:`update` drops it."""
        ng = self.ngram
        q, reached, total = ng.predict()
        parts = [q, ng.snapshots[-1]]
        if self.words is not None:
            parts.append(self.words.predict(ng.unigram))
        if self.streams is not None:
            parts.extend(self.streams.predict(ng.p0))
        boosts = []
        if self.match is not None:        # table 0: successors, per (order, order reached); 1: the long match
            boosts = [(0, successor, k * (ORDERS + 1) + reached) for k, successor in enumerate(ng.successors)]
            token, length = self.match.predict()
            boosts.append((1, token, _match_bucket(length)))
        self._prepared = parts, boosts, reached, total

    def predict(self, p_model: np.ndarray) -> np.ndarray:
        """(B, vocab) float64: the distribution each stream's next token is coded with."""
        shape = (self.prev.size, self.vocab)
        # a mask was ignored, the values under it mixed in; an np.matrix's * was a matrix product in the mix
        p_model = checks.plain_array("p_model", p_model)
        if not isinstance(p_model, np.ndarray) or p_model.shape != shape or p_model.dtype.kind != "f":
            got = f"{p_model.dtype} of shape {p_model.shape}" if isinstance(p_model, np.ndarray) else type(p_model).__name__
            raise ValueError(f"p_model must be a float array of shape {shape} (streams, vocab), got {got}")
        # two reductions, no temporaries: a NaN fails both, an infinity, a negative value or one past 1
        # one (a value past 1 came back in the linear mix's rows, summing past 1, or overflowed the
        # geometric mix, refused there as its "parts"); 1e-6 leaves a float32 softmax's rounding
        if not (p_model.min() >= 0 and p_model.max() <= 1 + 1e-6):
            raise ValueError("p_model must hold finite probabilities in [0, 1]; it holds a NaN, an infinity, a "
                             "negative value or one over 1 (check the model's weights)")
        if self._prepared is None:
            self.prepare()
        (q, cache, *others), boosts, reached, total = self._prepared
        self._prepared = None
        ng = self.ngram
        # the linear mix's update reads its parts at the coded tokens: a copy of the caller's p_model
        # (the other parts are the n-gram's, made anew each step), so a caller that reuses its array
        # before update changes nothing learned
        p = self.linear.mix([p_model.copy(), *ng.snapshots[:-1], cache, q], reached, total)
        self._linear = p
        if not self.on:
            return p.copy()         # the caller's to edit: update reads the mixer's own
        p = self.geometric.mix([p, p_model, q, cache, *others], reached, boosts, self.prev)
        return self.sse(p) if self.sse is not None else p

    def update(self, tokens: np.ndarray, active: np.ndarray) -> None:
        """Learn from the step's ``tokens`` (B,) of the ``active`` streams (bool (B,)), then count them."""
        tokens = checks.id_array("tokens", tokens, self.vocab)
        checks.not_masked("active", active)      # asarray drops the mask: a masked-out stream was coded as active
        active = np.asarray(active)
        if tokens.size != self.prev.size or active.shape != tokens.shape or active.dtype != np.bool_:
            raise ValueError(f"tokens and active must be 1-D, one per stream ({self.prev.size}), active of "
                             f"bools; got {tokens.size} tokens and active {active.dtype} of shape {active.shape}")
        if self._linear is None:
            raise ValueError("update follows predict: call predict(p_model) for the step first (once per update)")
        if self.match is not None:          # before any part learns: a refused step leaves them all as they were
            self.match.refuse_finished(active)
        self.linear.update(tokens, self._linear, active)
        if self.on:
            self.geometric.update(tokens, active)
        for part in (self.sse, self.words, self.match, self.streams):
            if part is not None:
                part.update(tokens, active)
        self.ngram.update(tokens, active)
        self.prev = np.where(active, tokens, self.prev)
        self._linear = None
        # a prepare() between predict and update counted the state before this step's tokens: the
        # next predict prepares again
        self._prepared = None
