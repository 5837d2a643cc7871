"""Hostile round 29a: the compressor's host models as objects with state.

Covers ``copy.copy`` of each of them mid-stream (ContextMixer, StreamCache, GeometricMixer, TreeSSE,
MatchModel, NGram, WordNGram): a shallow copy shared the arrays (and, for ContextMixer, the sub-models)
that a step updates in place, so coding on the copy moved the original too; and ContextMixer.predict
given a p_model holding values over 1; NGram's int32 order-1 counts wrapping past 2^31 - 1 after a
long run; and MatchModel (and ContextMixer) with an empty primer and one stream of 0 tokens.
Guards, which passed before: a shallow copy of ngram.Mixer (its update rebinds its weights), a deepcopy or pickle round trip of a ContextMixer mid-stream, and
two runs of the same input (each bit for bit as one uninterrupted run)."""
import copy
import pickle

import numpy as np
import pytest

from netcl_lite.context_mixing import ContextMixer, GeometricMixer, StreamCache, TreeSSE
from netcl_lite.match import MatchModel
from netcl_lite.ngram import Mixer, NGram, WordNGram

V = 16
_RNG = np.random.default_rng(29)
PRIMER = _RNG.integers(0, V, 300)
LENGTHS = np.array([20, 20])
TOKENS = [_RNG.integers(0, V, 2) for _ in range(20)]
ACTIVE = np.ones(2, bool)
PIECES = {i: (b" a" if i % 3 == 0 else b"b" + bytes([97 + i])) for i in range(V)}


def _p(t):
    p = np.random.default_rng(t).random((2, V))
    return p / p.sum(axis=1, keepdims=True)


def _mixer_step(m, t):
    out = m.predict(_p(t)).copy()
    m.update(TOKENS[t], ACTIVE)
    return [out]


def _cache_step(m, t):
    out = [x.copy() for x in m.predict(np.full(V, 1 / V))]
    m.update(TOKENS[t], ACTIVE)
    return out


def _match_step(m, t):
    out = [x.copy() for x in m.predict()]
    m.update(TOKENS[t], ACTIVE)
    return out


def _ngram_step(m, t):
    out = [m.predict()[0].copy()]
    m.update(TOKENS[t], ACTIVE)
    return out


def _words_step(m, t):
    out = [m.predict(np.full(V, 1 / V)).copy()]
    m.update(TOKENS[t], ACTIVE)
    return out


def _sse_step(m, t):
    out = [m(_p(t)).copy()]
    m.update(TOKENS[t], ACTIVE)
    return out


def _geometric_step(m, t):
    out = [m.mix([_p(t), _p(t + 100)], np.zeros(2, np.int64), [(0, TOKENS[t], np.zeros(2, np.int64))],
                 np.zeros(2, np.int64)).copy()]
    m.update(TOKENS[t], ACTIVE)
    return out


def _linear_step(m, t):
    parts = [_p(t + k) for k in range(m.w.shape[2])]
    p = m.mix(parts, np.zeros(2, np.int64), np.full(2, 5.0))
    m.update(TOKENS[t], p, ACTIVE)
    return [p.copy()]


PARTS = {
    "ContextMixer": (lambda: ContextMixer(PRIMER, V, LENGTHS, PIECES), _mixer_step),
    "StreamCache": (lambda: StreamCache(V, LENGTHS), _cache_step),
    "MatchModel": (lambda: MatchModel(PRIMER, LENGTHS, min_length=2), _match_step),
    "NGram": (lambda: NGram(PRIMER, V, 2), _ngram_step),
    "WordNGram": (lambda: WordNGram(PRIMER, V, 2, PIECES), _words_step),
    "TreeSSE": (lambda: TreeSSE(V), _sse_step),
    "GeometricMixer": (lambda: GeometricMixer(2, 3, [4], V, True), _geometric_step),
    "Mixer": (lambda: Mixer(3), _linear_step),
}


def _run(m, step, steps):
    return [step(m, t) for t in steps]        # each step's outputs


def _same(a, b):
    return len(a) == len(b) and all(len(x) == len(y) and all(np.array_equal(u, w) for u, w in zip(x, y))
                                    for x, y in zip(a, b))


@pytest.mark.parametrize("name", sorted(PARTS))
def test_a_shallow_copy_mid_stream_leaves_the_original_as_it_was(name):
    """copy.copy of a host model after 10 steps shared its arrays (a ContextMixer even its n-gram,
    match model and caches): 5 steps coded on the copy moved the original's counts, weights or step
    in place, so the original then predicted other distributions than an uninterrupted run (a
    ContextMixer refused its own next steps: its match model's step had run past the streams'
    lengths). The encoder and the decoder would part ways silently. copy.copy is now a deep copy."""
    make, step = PARTS[name]
    reference = _run(make(), step, range(20))
    original = make()
    _run(original, step, range(10))
    twin = copy.copy(original)
    _run(twin, step, range(10, 15))
    assert _same(_run(original, step, range(10, 20)), reference[10:])
    assert _same(_run(twin, step, range(15, 20)), reference[15:])


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_context_mixer_copied_mid_stream_goes_on_as_the_original(how):
    """Guard: a deep copy or a pickled round trip of a ContextMixer after 10 steps predicts the next
    10 steps bit for bit as the original does, and as one uninterrupted run."""
    make, step = PARTS["ContextMixer"]
    reference = _run(make(), step, range(20))
    m = make()
    _run(m, step, range(10))
    twin = copy.deepcopy(m) if how == "deepcopy" else pickle.loads(pickle.dumps(m))
    assert _same(_run(twin, step, range(10, 20)), reference[10:])
    assert _same(_run(m, step, range(10, 20)), reference[10:])


def test_two_context_mixers_on_the_same_input_agree_bit_for_bit():
    """Guard: two ContextMixers made and fed alike give the same bits at every step."""
    make, step = PARTS["ContextMixer"]
    assert _same(_run(make(), step, range(20)), _run(make(), step, range(20)))


_SMALL = np.random.default_rng(0).integers(0, V, 200)


@pytest.mark.parametrize("techniques,value", [((), 2.0), ((), 1e300), (("geometric",), 1e300),
                                              (("geometric", "sse"), 1e300)])
def test_context_mixer_refuses_a_p_model_past_one_naming_it(techniques, value):
    """ContextMixer.predict took a p_model holding values over 1 (finite, so its check passed): with
    the linear mix alone it returned rows summing to 19.6 (2.0 everywhere) or 9.6e300 (1e300), no
    distribution, silently; with the geometric mix, 1e300 overflowed and the ValueError named
    'parts', an argument of an inner mixer the caller never passed. It now names p_model."""
    cm = ContextMixer(_SMALL, V, np.array([5]), PIECES, techniques=techniques)
    with pytest.raises(ValueError, match="p_model must hold finite probabilities in"):
        cm.predict(np.full((1, V), value))
    assert cm.predict(np.full((1, V), 1 / V)).sum() == pytest.approx(1.0)    # still usable after


def test_ngram_refuses_order_one_counts_past_int32_instead_of_wrapping():
    """NGram keeps order 1's counts in int32 cells (8 per coded token) with no bound on the steps fed
    to it: after 2^28 coded tokens after one token (262,144 steps of 1,024 streams, minutes) a cell
    wrapped past 2^31 - 1 to a negative count, silently, and predict then gave the token that
    follows most often a probability near 0 after that token (the cache snapshot's row all zeros).
    The state is built here next to the bound; update now refuses naming the limit, and leaves the
    counts as they were."""
    ng = NGram(np.array([0, 1, 2, 3] * 10), 4, 1024, orders=1)
    tokens, active = np.zeros(1024, np.int64), np.ones(1024, bool)
    ng.predict()
    ng.update(tokens, active)
    d = ng.dense                         # the state of a long run: the cell and its row's sums alike
    grow = np.iinfo(np.int32).max - 8 * 1024 * 2 + 1 - int(d.coded[0, 0])
    d.coded[0, 0] += grow
    d.total[0] += grow
    d.coded_total[0] += grow
    d.table[0, 0] = max(float(d.primer[0, 0]) + float(d.coded[0, 0]) - d.discount, 0.0)
    d.coded_table[0, 0] = max(float(d.coded[0, 0]) - d.coded_discount, 0.0)
    ng.predict()
    ng.update(tokens, active)            # still fits: 2^31 - 1 - 8191
    before = ng.dense.coded.copy(), ng.dense.total.copy(), ng.unigram.copy()
    p = ng.predict()[0]
    assert p[0, 0] > 0.99
    with pytest.raises(ValueError, match="int32"):
        ng.update(tokens, active)
    assert np.array_equal(ng.dense.coded, before[0]) and np.array_equal(ng.dense.total, before[1])
    assert np.array_equal(ng.unigram, before[2])


def test_match_model_and_context_mixer_with_no_text_predict_no_match():
    """A MatchModel made with an empty primer and one stream of 0 tokens (both accepted) raised
    IndexError ("index 0 is out of bounds for axis 0 with size 0") from predict: it read its text at
    the pointer even where no match was. A ContextMixer made so did the same. Both now predict no
    match (-1, length 0)."""
    m = MatchModel(np.zeros(0, np.int64), np.array([0]))
    token, length = m.predict()
    assert token.tolist() == [-1] and length.tolist() == [0]
    cm = ContextMixer(np.zeros(0, np.int64), V, np.array([0]), PIECES)
    q = cm.predict(np.full((1, V), 1 / V))
    assert q.shape == (1, V) and q.sum() == pytest.approx(1.0)
