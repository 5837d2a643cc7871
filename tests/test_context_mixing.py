"""The compressor's count models, match model and mixer (netcl_lite.ngram, .match, .context_mixing):
each against a plain reference or a property the coder relies on (normalized, deterministic,
learning in the right direction)."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest

from netcl_lite import context_mixing as cm
from netcl_lite import ngram as ng
from netcl_lite.match import MatchModel


def _reference_ngram(primer, streams, vocab, orders):
    """Interpolated absolute discounting from dict counts, written the plain way: the streams
    coded in lockstep, sharing their counts; per stream, the distribution before each token."""
    counts = {}
    unigram = np.bincount(primer, minlength=vocab).astype(float)
    for i in range(len(primer)):
        for k in range(1, min(orders, i) + 1):
            succ = counts.setdefault(tuple(primer[i - k:i]), {})
            succ[primer[i]] = succ.get(primer[i], 0) + 1
    out = [[] for _ in streams]
    for step in range(max(len(s) for s in streams)):
        active = [b for b, s in enumerate(streams) if step < len(s)]
        for b in active:
            history = list(streams[b][:step])
            n0, d0 = unigram.sum(), ng.DISCOUNT[0]
            p = (np.maximum(unigram - d0, 0) + d0 * np.count_nonzero(unigram) / vocab) / n0
            for k in range(1, min(orders, len(history)) + 1):
                succ = counts.get(tuple(history[-k:]))
                if succ:
                    c = np.zeros(vocab)
                    c[list(succ)] = list(succ.values())
                    d = ng.DISCOUNT[k]
                    p = (np.maximum(c - d, 0) + d * np.count_nonzero(c) * p) / c.sum()
            out[b].append(p)
        for b in active:
            history, t = list(streams[b][:step]), streams[b][step]
            unigram[t] += ng.ADDED_WEIGHT
            for k in range(1, min(orders, len(history)) + 1):
                succ = counts.setdefault(tuple(history[-k:]), {})
                succ[t] = succ.get(t, 0) + ng.ADDED_WEIGHT
    return out


@pytest.mark.parametrize("vocab,orders", [(7, 3), (300, 4), (1024, 8)])
def test_the_ngram_equals_the_plain_chain_on_every_stream(vocab, orders):
    """Over 150 steps: the coded counts move from the buffer to the main table twice."""
    rng = np.random.default_rng(vocab)
    primer = rng.integers(0, min(vocab, 9), 400)          # few distinct tokens: long contexts repeat
    streams = [rng.integers(0, min(vocab, 9), 150), rng.integers(0, min(vocab, 9), 131)]
    model = ng.NGram(primer, vocab, streams=2, orders=orders)
    expected = _reference_ngram(primer, streams, vocab, orders)
    for step in range(150):
        p, _, _ = model.predict()
        active = np.array([step < 150, step < 131])
        for b in np.flatnonzero(active):
            np.testing.assert_allclose(p[b], expected[b][step], rtol=1e-12, atol=1e-15)
        tokens = np.array([streams[0][step], streams[1][min(step, 130)]])
        model.update(tokens, active)


def test_successors_after_the_coded_counts_are_merged_are_still_the_most_recent(monkeypatch):
    monkeypatch.setattr(ng, "_MERGE_EVERY", 3)
    primer = np.array([1, 2, 3, 1, 2, 4, 5])
    model = ng.NGram(primer, 8, streams=2, orders=2)
    for t in ([1, 1], [2, 2], [6, 7], [1, 1], [2, 2], [5, 3], [1, 1], [2, 2]):
        model.predict()
        model.update(np.array(t), np.array([True, True]))
    model.predict()
    # "1 2" was followed by 6 and 7 (step 3), then 5 and 3 (step 6): stream 1's 3 came last
    assert model.successors[1].tolist() == [3, 3]


def test_successors_are_the_most_recent_followers_of_each_context():
    primer = np.array([1, 2, 3, 1, 2, 4, 5])
    model = ng.NGram(primer, 8, streams=1, orders=3)
    for t in (1, 2):
        model.predict()
        model.update(np.array([t]), np.array([True]))
    model.predict()
    # "2" was last followed by 4, "1 2" by 4; nothing coded yet overrides them
    assert model.successors[:2, 0].tolist() == [4, 4]
    model.update(np.array([6]), np.array([True]))         # "1 2" is now followed by 6 (coded)
    model.update(np.array([1]), np.array([True]))
    model.update(np.array([2]), np.array([True]))
    model.predict()
    assert model.successors[:2, 0].tolist() == [6, 6]


def test_a_pair_coded_over_and_over_is_buffered_once_so_a_step_s_work_does_not_grow():
    """The coded counts' buffer holds each (context, token) pair once: 32 streams coding one
    token for 60 steps leave one pair per order in it, not one per stream, step and order, so a
    lookup's work (the entries its ranges span) stays what varied text costs."""
    model = ng.NGram(np.arange(50) % 7, 8, streams=32, orders=4)
    same, active = np.full(32, 3), np.ones(32, bool)
    for _ in range(60):                          # under _MERGE_EVERY: all of it still in the buffer
        model.predict()
        model.update(same, active)
    buffered = model.counts.recent
    assert buffered.size <= 3, "one pair per order above the dense order 1"
    assert np.unique(buffered).size == buffered.size, "each pair is buffered once"
    # the counts and the successors are those of every addition: order 4 counted from the 5th step on, x 8
    p, reached, total = model.predict()
    assert reached.tolist() == [4] * 32 and total.tolist() == [float((60 - 4) * 32 * ng.ADDED_WEIGHT)] * 32
    assert model.successors[:, 0].tolist() == [3, 3, 3, 3]


def test_the_buffered_counts_sum_to_what_each_addition_adds(monkeypatch):
    """Counts kept once per pair in the buffer, and merged every few steps, give the plain
    chain's probabilities to the last bit of a float64 sum of whole numbers."""
    monkeypatch.setattr(ng, "_MERGE_EVERY", 5)
    rng = np.random.default_rng(7)
    primer = rng.integers(0, 4, 40)
    streams = [list(rng.integers(0, 3, 23)) for _ in range(3)]    # a small alphabet: pairs repeat
    expected = _reference_ngram(primer, streams, 6, 3)
    model = ng.NGram(primer, 6, streams=3, orders=3)
    model.dense = None                             # order 1 searched in the tables too
    for step in range(23):
        p, _, _ = model.predict()
        for b in range(3):
            np.testing.assert_allclose(p[b], expected[b][step], rtol=1e-12, atol=1e-15)
        model.update(np.array([s[step] for s in streams]), np.ones(3, bool))


def test_word_classes_fold_case_and_whitespace():
    cls, sep = ng.word_classes({0: b" The", 1: b"the\n", 2: b"  ", 3: b"cat", 4: b"x\t"}, 6)
    assert cls[0] == cls[1] != cls[3] and cls[2] == 0 and cls[5] == 0
    assert sep.tolist() == [0, 2, 1, 0, 1, 0]


def test_the_word_ngram_meets_a_phrase_across_a_line_break():
    pieces = {0: b" the", 1: b" linker", 2: b"\n", 3: b"linker", 4: b" will", 5: b" be"}
    primer = np.array([0, 1, 4, 5] * 20)                  # " the linker will be", on one line
    words = ng.WordNGram(primer, 6, streams=1, pieces=pieces, orders=2)
    unigram = np.bincount(primer, minlength=6).astype(float)
    for t in (0, 2, 3):                                    # " the\nlinker": wrapped
        p = words.predict(unigram)
        assert np.isclose(p.sum(), 1) and (p > 0).all()
        words.update(np.array([t]), np.array([True]))
    p = words.predict(unigram)[0]
    assert p.argmax() == 4 and p[4] > 0.5                  # "the linker" was followed by " will"


def test_the_word_ngram_learns_to_trust_a_context_that_keeps_being_right():
    pieces = {i: bytes([97 + i]) for i in range(6)}
    primer = np.array([0, 1, 2] * 50)
    words = ng.WordNGram(primer, 6, streams=1, pieces=pieces, orders=2)
    unigram = np.bincount(primer, minlength=6).astype(float)
    before = words.lam.copy()
    for t in [0, 1, 2] * 30:
        words.predict(unigram)
        words.update(np.array([t]), np.array([True]))
    assert (words.lam <= before).all() and (words.lam < before).any()   # λ: weight on the shorter context


def test_the_match_model_finds_the_longest_match_and_follows_it():
    primer = np.array([9, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 0])
    m = MatchModel(primer, np.array([6]), min_length=2)
    seen = []
    for t in [4, 1, 2, 3, 4, 5]:
        seen.append(m.predict())
        m.update(np.array([t]), np.array([True]))
    token, length = m.predict()
    # after "... 1 2 3 4 5" the primer's "3 4 5" (at its start) continues with 6
    assert token.tolist() == [6] and length[0] >= 3
    assert seen[0][0].tolist() == [-1] and seen[0][1].tolist() == [0]


def test_the_match_model_never_predicts_a_token_not_coded_yet():
    # stream 1 repeats stream 0's text; stream 0's next token is not coded when stream 1 looks
    m = MatchModel(np.zeros(0, np.int64), np.array([8, 8]), min_length=2)
    text = [3, 4, 5, 6, 7, 8, 9, 1]
    for step, t in enumerate(text):
        token, _ = m.predict()
        assert (token == -1).all() or set(token[token >= 0].tolist()) <= set(text[:step] + [t])
        m.update(np.array([t, t]), np.array([True, True]))


def test_stream_cache_counts_decay_as_stated():
    cache = cm.StreamCache(4, np.array([5, 5]))
    prior = np.full(4, 0.25)
    for t in ([1, 2], [1, 3], [2, 3]):
        cache.predict(prior)
        cache.update(np.array(t), np.array([True, True]))
    unigram, bigram = cache.predict(prior)
    g = cm.STREAM_DECAY
    counts0 = np.array([0, g * g + g, 1, 0])                   # stream 0 coded 1, 1, 2
    want = (counts0 + cm.STREAM_PRIOR * prior) / (counts0.sum() + cm.STREAM_PRIOR)
    np.testing.assert_allclose(unigram[0], want, rtol=1e-12)
    # stream 0's last token is 2, never followed yet: its bigram is the unigram; stream 1's last
    # is 3, followed by 3 once (one step ago, weight g)
    np.testing.assert_allclose(bigram[0], unigram[0], rtol=1e-12)
    follows = np.array([0, 0, 0, g])
    np.testing.assert_allclose(bigram[1], (follows + cm.STREAM_BIGRAM_PRIOR * unigram[1])
                               / (g + cm.STREAM_BIGRAM_PRIOR), rtol=1e-12)


def test_the_stream_bigram_looks_back_a_window_so_a_step_s_work_is_bounded(monkeypatch):
    """Only the last STREAM_WINDOW pairs count: one token repeated 40 steps, with a window of
    8, gives the bigram of 8 decayed pairs (a whole history's would weigh 39)."""
    monkeypatch.setattr(cm, "STREAM_WINDOW", 8)
    cache = cm.StreamCache(4, np.array([50]))
    prior = np.full(4, 0.25)
    for _ in range(40):
        cache.predict(prior)
        cache.update(np.array([2]), np.array([True]))
    unigram, bigram = cache.predict(prior)
    g = cm.STREAM_DECAY
    follows = np.zeros(4)
    follows[2] = sum(g ** k for k in range(1, 9))        # pairs 1..8 steps back
    np.testing.assert_allclose(bigram[0], (follows + cm.STREAM_BIGRAM_PRIOR * unigram[0])
                               / (follows.sum() + cm.STREAM_BIGRAM_PRIOR), rtol=1e-12)
    assert cm.STREAM_DECAY ** 4096 < 2e-18, "the window's first left-out pair weighs what the constant's comment says"


def test_the_geometric_mixer_starts_as_its_first_input_and_learns_toward_the_coded_token():
    rng = np.random.default_rng(0)
    parts = [rng.dirichlet(np.ones(8), size=3) for _ in range(3)]
    mixer = cm.GeometricMixer(3, 2, [4], 8, bias=True)
    context = np.array([0, 1, 1])
    p = mixer.mix(parts, context, [], np.zeros(3, np.int64))
    # the logs are float32: each off by at most 2^-24 of its size (≤ 30, the floor), ≤ 1.8e-6,
    # so p = exp(log p0) / Σ exp(log p0) is within e^(2 · 1.8e-6) − 1 < 4e-6 of p0, relatively
    np.testing.assert_allclose(p, parts[0], rtol=4e-6)
    tokens = np.array([5, 5, 5])
    before = p[:, 5].copy()
    for _ in range(5):
        p = mixer.mix(parts, context, [(0, np.array([5, -1, 5]), np.array([0, 0, 1]))], np.zeros(3, np.int64))
        mixer.update(tokens, np.ones(3, bool))
    p = mixer.mix(parts, context, [(0, np.array([5, -1, 5]), np.array([0, 0, 1]))], np.zeros(3, np.int64))
    assert (p[:, 5] > before).all() and np.allclose(p.sum(axis=1), 1)


def test_tree_sse_starts_as_the_identity_and_keeps_a_distribution():
    rng = np.random.default_rng(1)
    for vocab in (5, 64, 1000):
        p = rng.dirichlet(np.full(vocab, 0.5), size=4)
        p = np.maximum(p, 1e-3)
        p /= p.sum(axis=1, keepdims=True)                  # every node's odds within e^±8
        sse = cm.TreeSSE(vocab)
        np.testing.assert_allclose(sse(p), p, rtol=1e-9)
        tokens = rng.integers(0, vocab, 4)
        for _ in range(30):
            q = sse(p)
            sse.update(tokens, np.ones(4, bool))
        q = sse(p)
        assert np.allclose(q.sum(axis=1), 1) and (q > 0).all()
        assert (q[np.arange(4), tokens] > p[np.arange(4), tokens]).all()


def _run(mixer, model_p, tokens, lengths):
    out = []
    for step in range(int(lengths.max())):
        active = lengths > step
        p = mixer.predict(model_p[step])
        out.append(p)
        mixer.update(tokens[step], active)
    return out


def test_the_context_mixer_is_deterministic_and_normalized_with_every_technique():
    rng = np.random.default_rng(2)
    vocab, lengths = 40, np.array([30, 30, 29])
    pieces = {i: (b" " if i % 3 else b"") + bytes([97 + i % 26]) for i in range(vocab)}
    primer = rng.integers(0, vocab, 500)
    model_p = rng.dirichlet(np.ones(vocab), size=(30, 3))
    tokens = rng.integers(0, 6, (30, 3))
    for techniques in ((), cm.TECHNIQUES):
        a = _run(cm.ContextMixer(primer, vocab, lengths, pieces, techniques), model_p, tokens, lengths)
        b = _run(cm.ContextMixer(primer, vocab, lengths, pieces, techniques), model_p, tokens, lengths)
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
        assert all(np.allclose(x.sum(axis=1), 1) and (x > 0).all() for x in a)


def test_the_context_mixer_refuses_unknown_techniques():
    with pytest.raises(ValueError, match="unknown"):
        cm.ContextMixer(np.zeros(3, np.int64), 4, np.array([3]), {}, ("geometric", "magic"))
    with pytest.raises(ValueError, match="needs 'geometric'"):
        cm.ContextMixer(np.zeros(3, np.int64), 4, np.array([3]), {}, ("sse",))


def test_the_recorded_ablation_backs_the_choices_chapter_9_states():
    """benchmarks/results/mix_ablation.json (validation): the binary decomposition, either way,
    needed more bits than the linear mix; geometric mixing needed fewer."""
    import json
    from pathlib import Path

    out = json.loads((Path(__file__).parents[1] / "benchmarks/results/mix_ablation.json").read_text())
    assert out["split"] == "validation"
    rows, designs = out["rows"], out["designs"]
    linear = next(bpb for name, bpb in rows.items() if name.startswith("linear"))
    assert min(designs.values()) > linear, "the binary decomposition needs more bits than the linear mix"
    assert rows["+ geometric mixing in the log domain"] < linear


def _mixer(**kwargs):
    pieces = MappingProxyType({i: b"a" for i in range(16)})      # as a tokenizer's vocab is: a read-only view
    args = dict(primer=np.arange(40) % 7, vocab=16, lengths=np.array([5, 5]), pieces=pieces)
    args.update(kwargs)
    return cm.ContextMixer(**args)


@pytest.mark.parametrize("kwargs, error, says", [
    ({"vocab": 0}, ValueError, "vocab must be a positive int"),
    ({"vocab": 16.0}, ValueError, "vocab must be a positive int"),
    ({"primer": np.array([0.5, 1.5])}, TypeError, "primer must be a 1-D array of integer token ids"),
    ({"primer": "abc"}, TypeError, "primer must be a 1-D array of integer token ids"),
    ({"primer": np.array([3, 16])}, ValueError, r"primer must hold token ids in \[0, 16\)"),
    ({"primer": np.array([-1, 3])}, ValueError, r"primer must hold token ids in \[0, 16\)"),
    ({"lengths": np.array([], np.int64)}, ValueError, "lengths must give at least one stream"),
    ({"lengths": np.array([-3])}, ValueError, "lengths must hold token counts"),
    ({"lengths": np.array([[5]])}, TypeError, "lengths must be a 1-D array"),
    ({"pieces": None}, TypeError, "pieces must be a mapping"),
    ({"techniques": "geometric"}, TypeError, r"techniques must be a collection .*pass \('geometric',\)"),
])
def test_a_context_mixer_with_a_bad_argument_is_refused_naming_it(kwargs, error, says):
    """No NumPy broadcast error, AttributeError or one-letter technique names: the parameter, and what to pass."""
    with pytest.raises(error, match=says):
        _mixer(**kwargs)


def test_a_context_mixer_refuses_bad_steps_naming_the_argument():
    """A NaN distribution ended in an IndexError from the secondary estimation, a token outside the
    vocabulary in one from the counts, a distribution of the wrong width in a broadcast error."""
    mixer = _mixer()
    with pytest.raises(ValueError, match="update follows predict"):
        mixer.update(np.array([1, 2]), np.array([True, True]))
    with pytest.raises(ValueError, match="p_model must hold finite probabilities"):
        mixer.predict(np.full((2, 16), np.nan))
    with pytest.raises(ValueError, match=r"p_model must be a float array of shape \(2, 16\)"):
        mixer.predict(np.full((2, 10), 0.1))
    with pytest.raises(ValueError, match=r"p_model must be a float array of shape \(2, 16\)"):
        mixer.predict([[1 / 16] * 16] * 2)
    mixer.predict(np.full((2, 16), 1 / 16))
    with pytest.raises(ValueError, match=r"tokens must hold token ids in \[0, 16\)"):
        mixer.update(np.array([1, 16]), np.array([True, True]))
    with pytest.raises(ValueError, match="one per stream"):
        mixer.update(np.array([1, 2]), np.array([1, 1]))
    with pytest.raises(ValueError, match="one per stream"):
        mixer.update(np.array([1]), np.array([True]))
    mixer.update(np.array([1, 2]), np.array([True, True]))
    assert np.isfinite(mixer.predict(np.full((2, 16), 1 / 16))).all()


@pytest.mark.parametrize("make, error, says", [
    (lambda: ng.NGram(np.arange(20) % 5, 0, 1), ValueError, "vocab must be a positive int"),
    (lambda: ng.NGram(np.arange(20) % 5, 8, 0), ValueError, "streams must be a positive int"),
    (lambda: ng.NGram(np.array([5000, 1]), 8, 1), ValueError, r"primer must hold token ids in \[0, 8\)"),
    (lambda: ng.NGram(np.array([0.5, 1.5]), 8, 1), TypeError, "primer must be a 1-D array of integer"),
    (lambda: ng.NGram(np.arange(20) % 5, 8, 1, orders=16), ValueError, r"orders must be an int in \[1, 16\)"),
    (lambda: ng.NGram(np.arange(20) % 5, 8, 1, orders=0), ValueError, r"orders must be an int in \[1, 16\)"),
    (lambda: ng.WordNGram(np.arange(20) % 5, 8, 1, {}, orders=100), ValueError, r"orders must be an int in \[1, 16\)"),
    (lambda: ng.WordNGram(np.arange(20) % 5, 8, 1, None), TypeError, "pieces must be a mapping"),
    (lambda: MatchModel(np.arange(50) % 7, np.array([-5])), ValueError, "lengths must hold token counts"),
    (lambda: MatchModel(np.arange(50) % 7, np.array([], np.int64)), ValueError, "at least one stream"),
    (lambda: MatchModel(np.array([0.5, 1.7]), np.array([5])), TypeError, "primer must be a 1-D array of integer"),
    (lambda: MatchModel("abc", np.array([5])), TypeError, "primer must be a 1-D array of integer"),
    (lambda: MatchModel(np.arange(50) % 7, np.array([5]), min_length=0), ValueError, "min_length must be an int"),
])
def test_the_count_and_match_models_refuse_bad_arguments_naming_them(make, error, says):
    """An order past 15 no longer fits the 4 bits its keys tag it with (contexts of two orders would
    share counts, silently); ids outside the vocabulary, float ids, no streams or a negative length
    were taken, or failed in a NumPy broadcast."""
    with pytest.raises(error, match=says):
        make()


def test_the_size_limits_take_every_size_the_compressor_codes():
    """checks.coder_sizes refuses sizes no input has; the largest input compress codes is within them."""
    from netcl_lite import checks
    from netcl_lite import compression as cz

    n_tokens = cz.MAX_INPUT_BYTES                       # a token spells at least one byte
    lengths = cz.segments(n_tokens, cz.stream_count(n_tokens))
    checks.coder_sizes(vocab=cm.MAX_VOCAB, lengths=lengths, orders=ng.ORDERS, pieces={0: b"a"})
    checks.coder_sizes(vocab=cm.MAX_VOCAB, streams=cz.STREAMS, orders=ng.MAX_ORDERS)
    with pytest.raises(ValueError, match="lengths must give at most MAX_STREAM_TOKENS"):
        checks.coder_sizes(lengths=np.array([checks.MAX_STREAM_TOKENS // 2 + 1] * 2))


def test_the_stream_cache_keeps_a_window_not_the_input_and_predicts_as_the_whole_history_would(monkeypatch):
    """Its memory is the window's, whatever the streams' lengths; its bigram is the one of the
    whole history's last STREAM_WINDOW pairs, summed as a plain loop sums them (random tokens,
    three streams of ragged lengths, a window of 8 wrapped round the ring several times)."""
    monkeypatch.setattr(cm, "STREAM_WINDOW", 8)
    rng = np.random.default_rng(3)
    lengths = np.array([41, 40, 40])
    short, long_ = cm.StreamCache(5, np.array([10])), cm.StreamCache(5, np.array([10**6]))
    assert short.history.shape == long_.history.shape == (1, 2 * 9), "the ring's size depends on the window alone"
    cache = cm.StreamCache(5, lengths)
    prior = np.full(5, 0.2)
    coded = [[] for _ in lengths]
    g = cm.STREAM_DECAY
    for step in range(int(lengths.max())):
        unigram, bigram = cache.predict(prior)
        for b, past in enumerate(coded):
            if not step < lengths[b]:
                continue
            follows = np.zeros(5)
            for i in range(max(0, len(past) - 1 - 8), len(past) - 1):
                if past[i] == past[-1]:
                    follows[past[i + 1]] += g ** (len(past) - 1 - i)
            want = (follows + cm.STREAM_BIGRAM_PRIOR * unigram[b]) / (follows.sum() + cm.STREAM_BIGRAM_PRIOR)
            np.testing.assert_allclose(bigram[b], want, rtol=1e-12)
        tokens = rng.integers(0, 3, lengths.size)
        active = lengths > step
        for b in np.flatnonzero(active):
            coded[b].append(int(tokens[b]))
        cache.update(tokens, active)


@pytest.mark.parametrize("seed", range(4))
def test_add_in_order_adds_as_np_add_at_does_bit_for_bit(seed):
    """Repeated rows added in rounds give np.add.at's sums to the last bit (the rows of one index
    in the order they come), on values whose sums round differently in another order."""
    from netcl_lite.match import add_in_order

    rng = np.random.default_rng(seed)
    table = rng.standard_normal((9, 17)) * 10.0 ** rng.integers(-8, 8, (9, 17))
    index = rng.integers(0, 9 if seed else 3, 40)                 # seed 0: every index many times
    values = rng.standard_normal((40, 17)) * 10.0 ** rng.integers(-8, 8, (40, 17))
    expected, got = table.copy(), table.copy()
    np.add.at(expected, index, values)
    add_in_order(got, index, values)
    assert expected.tobytes() == got.tobytes()
    once = rng.permutation(9)[:5]                                  # distinct indices: one round
    np.add.at(expected, once, values[:5])
    add_in_order(got, once, values[:5])
    assert expected.tobytes() == got.tobytes()


def test_add_in_order_refuses_mismatched_shapes():
    from netcl_lite.match import add_in_order

    table = np.zeros((4, 3))
    with pytest.raises(ValueError, match="index must be 1-D"):
        add_in_order(table, np.array([[0, 1]]), np.zeros((1, 2, 3)))
    with pytest.raises(ValueError, match="index must be 1-D"):
        add_in_order(table, np.array([0, 1]), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="index must be 1-D"):
        add_in_order(table, np.array([0, 1]), [[0.0] * 3] * 2)


@pytest.mark.parametrize("discount", [None, 0.5, 0.7])
def test_dense_rows_kept_up_to_date_equal_the_rows_computed_afresh(discount):
    """The dense order-1 tables' totals, distinct counts and discounted rows, kept up to date as
    tokens are added (repeated cells in one call included), hold the bits that computing them
    from the counts gives."""
    rng = np.random.default_rng(3)
    vocab, contexts = 7, 5
    primer = rng.integers(0, vocab, 60)
    keys = rng.permutation(1 << 20)[:contexts].astype(np.uint64)
    ctx_of = rng.integers(0, contexts, primer.size - 1)
    primed = ng._prime([keys[ctx_of]], [primer[1:]], 3, 1)          # order 1: context ctx_of[i], token primer[i + 1]
    tagged = ng._tag(1, keys, 3)
    dense = ng._DenseFirst(primed, tagged, vocab, discount, None if discount is None else 4.0)
    counts = np.zeros((contexts, vocab), np.int64)
    coded = np.zeros((contexts, vocab), np.int64)
    np.add.at(counts, (ctx_of, primer[1:]), 1)
    for _ in range(30):
        context = rng.integers(0, contexts, 6)
        tokens = rng.integers(0, vocab, 6)
        live = rng.random(6) < 0.8
        dense.add(context, tokens, 8)
        np.add.at(counts, (context, tokens), 8)
        np.add.at(coded, (context, tokens), 8)
        rows, n, u = dense.rows(context, live)
        merged = counts[context].astype(np.float64)
        merged[~live] = 0.0
        expected = merged if discount is None else np.maximum(merged - discount, 0.0)
        assert rows.tobytes() == expected.tobytes()
        assert n.tolist() == merged.sum(axis=1).tolist()
        assert u.tolist() == np.count_nonzero(merged, axis=1).tolist()
        assert dense.count(context, tokens).tolist() == counts[context, tokens].astype(float).tolist()
        if discount is not None:
            rows_c, nc, uc = dense.coded_rows(context, live)
            mine = coded[context].astype(np.float64)
            mine[~live] = 0.0
            assert rows_c.tobytes() == np.maximum(mine - 4.0, 0.0).tobytes()
            assert nc.tolist() == mine.sum(axis=1).tolist() and uc.tolist() == np.count_nonzero(mine, axis=1).tolist()


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 1000, 5000])
def test_sorted_search_finds_what_searchsorted_finds(size):
    """Through the sample of every SEARCH_BLOCK-th key, the left insertion point of every key: below the
    first, past the last, equal to a table key, between two, in a table with repeated keys."""
    rng = np.random.default_rng(size)
    table = np.sort(rng.integers(0, 1 << 40, size, dtype=np.uint64))
    if size > 100:
        table[10:200] = table[10]                        # a run of equal keys across blocks
        table = np.sort(table)
    keys = np.concatenate([table[rng.integers(0, size, 50)] if size else np.zeros(0, np.uint64),
                           rng.integers(0, 1 << 40, 50, dtype=np.uint64),
                           np.array([0, (1 << 40) + 5], np.uint64)])
    got = ng.sorted_search(table, table[::ng.SEARCH_BLOCK].copy(), keys)
    assert got.tolist() == np.searchsorted(table, keys).tolist()


def test_sorted_search_refuses_a_sample_of_another_table():
    table = np.arange(200, dtype=np.uint64)
    with pytest.raises(ValueError, match=f"sample its every {ng.SEARCH_BLOCK}-th key"):
        ng.sorted_search(table, table[::2 * ng.SEARCH_BLOCK].copy(), np.array([3], np.uint64))
    with pytest.raises(ValueError, match="table must be a 1-D array"):
        ng.sorted_search(table.reshape(10, 20), table[::ng.SEARCH_BLOCK].copy(), np.array([3], np.uint64))


@pytest.mark.parametrize("vocab", [5, 1024, (1 << 20) - 1])
def test_context_keys_by_one_product_equal_the_hash_built_token_by_token(vocab):
    """The keys of every order from one uint64 product with the powers of the base are the keys
    the hash built one token at a time gives, also where (vocab + 1)^order wraps past 2^64."""
    rng = np.random.default_rng(vocab)
    model = ng.NGram(rng.integers(0, vocab, 50), vocab, streams=6, orders=8)
    model.history = rng.integers(-1, vocab, (6, 8))
    out, h = [], np.zeros(6, np.uint64)
    for k in range(1, 9):
        h = ng._extend(h, np.maximum(model.history[:, -k], 0), vocab)
        out.append(ng._context_keys(h, model.token_bits))
    assert model._keys().tolist() == ng._tagged(out, model.token_bits).tolist()


def test_word_keys_by_one_product_equal_the_hash_built_word_by_word():
    rng = np.random.default_rng(5)
    pieces = {i: bytes([97 + i % 26]) * (1 + i % 3) + (b" " if i % 4 else b"\n") for i in range(40)}
    model = ng.WordNGram(rng.integers(0, 40, 300), 40, 5, pieces)
    model.words = rng.integers(-1, model.n_classes + 1, (5, model.orders))
    model.sep = rng.integers(0, 3, 5)
    out, h = [], np.zeros(5, np.uint64)
    for k in range(1, model.orders + 1):
        h = ng._word_hash(h, np.maximum(model.words[:, -k], 0), model.n_classes)
        out.append(ng._context_keys(ng._with_separator(h, model.sep), model.token_bits))
    assert model._keys().tolist() == ng._tagged(out, model.token_bits).tolist()


def test_insert_sorted_is_np_insert_for_every_column():
    rng = np.random.default_rng(2)
    old = np.sort(rng.integers(0, 100, 30)).astype(np.uint64)
    new = np.sort(rng.integers(0, 110, 12)).astype(np.uint64)
    at = np.searchsorted(old, new)
    weights, extra = rng.random(30), rng.random(12)
    keys, w = ng._insert_sorted(at, (old, new), (weights, extra))
    assert keys.tolist() == np.insert(old, at, new).tolist()
    assert w.tobytes() == np.insert(weights, at, extra).tobytes()


@pytest.mark.parametrize("vocab", [1000, 1024])
def test_tree_sse_gives_the_coder_a_contiguous_distribution(vocab):
    """The range coder takes C-contiguous rows: the SSE's output is, whether the vocabulary fills
    its tree (the output divided in place) or not (a slice of the leaves, copied by the division)."""
    rng = np.random.default_rng(vocab)
    p = rng.random((3, vocab))
    p /= p.sum(axis=1, keepdims=True)
    out = cm.TreeSSE(vocab)(p)
    assert out.flags.c_contiguous and out.shape == (3, vocab)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-12)
