"""Issue 58, an independent hostile check, round 20a: reproducers of defects in the compressor's host
models, its argument checks and its command line beyond the cases of earlier rounds
(tests/test_hostile*.py, tests/test_compression_hostile.py): a linear mixer that checked none of its
arguments, a stretch and a stream cache that passed a NaN through, a generator primer described as
"an array of shape ()".

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite import context_mixing as cm
from netcl_lite import ngram as ng

from cli_model import tiny_model

N_PARTS = len(ng.MIX_ORDERS) + 3


def _parts(b=2, v=10, n=N_PARTS):
    return [np.full((b, v), 1.0 / v) for _ in range(n)]


# -- ngram.Mixer: mix and update checked nothing --------------------------------------------------------

@pytest.mark.parametrize("n", [1, 3, N_PARTS - 1, N_PARTS + 1])
def test_mixer_refuses_a_wrong_number_of_parts(n):
    """``Mixer.mix`` mixed whatever number of parts came, with the first weights of each set: three
    parts gave a "distribution" summing to 0.65, silently. It keeps one weight per part of the
    compressor's mix and should refuse any other count, naming ``parts``."""
    with pytest.raises(ValueError, match=rf"parts must be a list of {N_PARTS} distributions.*got {n} parts"):
        ng.Mixer(ng.ORDERS).mix(_parts(n=n), np.zeros(2, np.int64), np.ones(2))


@pytest.mark.parametrize("reached", [np.array([ng.ORDERS + 1, 0]), np.array([-1, 0]), np.array([0.5, 0]),
                                     np.zeros(3, np.int64), np.int64(0)])
def test_mixer_refuses_a_reached_order_out_of_range(reached):
    """An order reached past the mixer's orders was an IndexError from NumPy, a float one another, and
    -1 silently took the last order's weights; each should be a ValueError naming ``reached``."""
    with pytest.raises(ValueError, match=r"reached must hold one int per stream \(2\) in \[0, 9\)"):
        ng.Mixer(ng.ORDERS).mix(_parts(), reached, np.ones(2))


@pytest.mark.parametrize("total", [np.array([np.nan, 1.0]), np.array([-1.0, 1.0]), np.ones(3)])
def test_mixer_refuses_a_total_that_is_no_count(total):
    with pytest.raises(ValueError, match="total must hold one finite count"):
        ng.Mixer(ng.ORDERS).mix(_parts(), np.zeros(2, np.int64), total)


def test_mixer_refuses_parts_of_other_shapes_and_a_nan_in_them():
    mixer = ng.Mixer(ng.ORDERS)
    parts = _parts()
    parts[3] = np.full((2, 11), 0.1)
    with pytest.raises(ValueError, match=r"parts\[3\] must be a float array of shape \(streams, vocab\)"):
        mixer.mix(parts, np.zeros(2, np.int64), np.ones(2))
    parts = _parts()
    parts[2][1, 4] = np.nan
    with pytest.raises(ValueError, match="parts must hold finite probabilities >= 0; one holds a NaN"):
        mixer.mix(parts, np.zeros(2, np.int64), np.ones(2))
    with pytest.raises(ValueError, match="update follows mix"):      # the refused mix left nothing to update
        mixer.update(np.array([1, 2]), parts[0], np.ones(2, bool))


@pytest.mark.parametrize("tokens", [np.array([10, 1]), np.array([-1, 1]), np.array([1, 2, 3])])
def test_mixer_update_refuses_tokens_out_of_range_or_of_another_count(tokens):
    """``Mixer.update`` indexed with the tokens unchecked: 10 (past a vocabulary of 10) was an IndexError,
    -1 silently read the last token's probability."""
    mixer = ng.Mixer(ng.ORDERS)
    mixed = mixer.mix(_parts(), np.zeros(2, np.int64), np.ones(2))
    before = mixer.w.copy()
    with pytest.raises(ValueError, match="tokens"):
        mixer.update(tokens, mixed, np.ones(2, bool))
    assert np.array_equal(mixer.w, before)
    with pytest.raises(ValueError, match=r"p_mix must be the \(streams, vocab\) = \(2, 10\) mixture"):
        mixer.update(np.array([1, 2]), mixed[:1], np.ones(2, bool))
    mixer.update(np.array([1, 2]), mixed, np.ones(2, bool))        # then the step's own update works
    assert np.allclose(mixer.w.sum(axis=2), 1)


# -- context_mixing.stretch and squash: a NaN passed through ------------------------------------------

@pytest.mark.parametrize("p", [np.array([np.nan, 0.5]), float("nan"), np.array([0.5, 1.5]), -0.1])
def test_stretch_refuses_a_nan_or_a_value_outside_0_1(p):
    """``stretch`` gave NaN for a NaN and for anything outside [0, 1] (with NumPy's warnings at most):
    a NaN that the mix would carry on. It should refuse them, naming ``p``."""
    with pytest.raises(ValueError, match=r"p must be probabilities in \[0, 1\]"):
        cm.stretch(p)


def test_stretch_and_squash_still_give_the_limits_and_invert_each_other():
    p = np.array([0.0, 0.25, 0.5, 1.0])
    st = cm.stretch(p)
    assert st[0] == -np.inf and st[-1] == np.inf and st[2] == 0.0
    assert np.allclose(cm.squash(st), p)
    with pytest.raises(ValueError, match="x must be real numbers"):
        cm.squash(np.array([0.0, np.nan]))


# -- context_mixing.StreamCache.predict: a NaN prior -----------------------------------------------------

@pytest.mark.parametrize("prior", [np.array([np.nan, 0.3, 0.3, 0.4]), np.array([np.inf, 0, 0, 0]),
                                   np.array([-0.5, 0.5, 0.5, 0.5])])
def test_stream_cache_refuses_a_prior_that_is_no_distribution(prior):
    """``StreamCache.predict(prior)`` put a NaN of ``prior`` into every stream's unigram and bigram,
    silently; the mix would then code with NaN. It should refuse, naming ``prior``."""
    with pytest.raises(ValueError, match="prior must hold finite probabilities >= 0"):
        cm.StreamCache(4, np.array([5, 5])).predict(prior)


def test_stream_cache_refuses_a_prior_of_another_size():
    """A prior of the wrong length was NumPy's broadcast error, which names no parameter."""
    with pytest.raises(ValueError, match=r"prior must be a float array of shape \(4,\)"):
        cm.StreamCache(4, np.array([5, 5])).predict(np.full(3, 1 / 3))


# -- compress: a generator as the primer -----------------------------------------------------------------

@pytest.mark.parametrize("primer, kind", [((i for i in range(5)), "a generator"), (iter([1, 2]), "a list_iterator"),
                                          ({1, 2, 3}, "a set"), ({1: 2}, "a dict")])
def test_compress_names_a_generator_primer_as_what_it_is(queue, primer, kind):
    """A generator passed as ``primer`` was refused as "an array of shape () and dtype object": NumPy's
    reading of it, which tells the caller nothing. The message should say a sequence or array of ids is
    wanted and name what came."""
    model, tok, _ = tiny_model(queue)
    with pytest.raises(ValueError, match=rf"primer must be a sequence or an array of token ids.*got {kind}"):
        cz.compress(b"some text", model, tok, primer=primer)


# -- context_mixing.GeometricMixer and TreeSSE: indices unchecked ---------------------------------------

def _geometric(boosts=()):
    return cm.GeometricMixer(2, 9, list(boosts), 10, True)


_ZERO = np.zeros(2, np.int64)
_P = [np.full((2, 10), 0.1), np.full((2, 10), 0.1)]


@pytest.mark.parametrize("call, match", [
    (lambda g: g.mix(_P * 2, _ZERO, [], _ZERO), r"parts must be a list of 2 distributions.*got 4 parts"),
    (lambda g: g.mix([_P[0], np.full((2, 11), 0.1)], _ZERO, [], _ZERO), r"parts\[1\] must be a float array"),
    (lambda g: g.mix(_P, np.array([9, 0]), [], _ZERO), r"context must hold one int per stream \(2\) in \[0, 9\)"),
    (lambda g: g.mix(_P, np.array([-1, 0]), [], _ZERO), r"context must hold .* from -1 to 0"),
    (lambda g: g.mix(_P, _ZERO, [], np.array([10, 0])), r"prev must hold one int per stream \(2\) in \[0, 10\)"),
    (lambda g: g.mix(_P, _ZERO, [], np.array([-1, 0])), r"prev must hold .* from -1 to 0"),
    (lambda g: g.mix(_P, _ZERO, [(1, np.array([1, 1]), _ZERO)], _ZERO), r"boosts\[0\] must be \(table, tokens, index\)"),
    (lambda g: g.mix(_P, _ZERO, [(0, np.array([1, 1]), np.array([4, 0]))], _ZERO), r"boosts\[0\]'s index must hold"),
    (lambda g: g.mix(_P, _ZERO, [(0, np.array([10, 1]), _ZERO)], _ZERO), r"boosts\[0\]'s tokens must hold .*\[-1, 10\)"),
    (lambda g: g.mix([np.full((2, 10), np.nan)] * 2, _ZERO, [], _ZERO), "parts must hold finite probabilities"),
    (lambda g: g.mix([np.full((2, 10), -0.1)] * 2, _ZERO, [], _ZERO), "parts must hold finite probabilities"),
])
def test_geometric_mixer_refuses_arguments_that_do_not_fit_its_weights(call, match):
    """``GeometricMixer.mix`` indexed its tables with its arguments unchecked: a context, a previous token,
    a boost's table, index or token past a table was an IndexError (a wrong number of parts NumPy's
    broadcast error), -1 silently read a table's last entry, and a NaN part gave a NaN distribution.
    Each should be a ValueError naming the argument."""
    g = _geometric([4])
    with pytest.raises(ValueError, match=match):
        call(g)
    with pytest.raises(ValueError, match="update follows mix"):         # a refused step left nothing to learn
        g.update(np.array([1, 2]), np.ones(2, bool))


@pytest.mark.parametrize("tokens", [np.array([10, 1]), np.array([-1, 1])])
def test_geometric_mixer_and_tree_sse_updates_refuse_tokens_past_the_vocabulary(tokens):
    """Their updates indexed by the coded tokens unchecked: 10 (a vocabulary of 10) was an IndexError in
    the mixer and moved a TreeSSE's entries silently (a leaf of its padded tree), -1 moved the mixer's
    weights toward the last token. Each should refuse them, naming ``tokens``, and keep the step to
    update with the right ones."""
    g = _geometric()
    g.mix(_P, _ZERO, [], _ZERO)
    sse = cm.TreeSSE(10)
    sse(_P[0])
    before = sse.table.copy()
    for model in (g, sse):
        with pytest.raises(ValueError, match=r"tokens must hold token ids in \[0, 10\)"):
            model.update(tokens, np.ones(2, bool))
        model.update(np.array([1, 2]), np.ones(2, bool))
    assert not np.array_equal(sse.table, before)


# -- compression's predictor: probabilities twice for one step ------------------------------------------

@pytest.mark.parametrize("mix", [False, True])
def test_predictor_refuses_a_second_probabilities_call_for_one_step(queue, mix):
    """``make_predictor(...).probabilities()`` called twice before ``advance`` fed the model the step's
    input twice: the model-only predictor's second answer differed from its first, and every later step
    of either mode differed from a fresh predictor's fed the same tokens, so a caller driving it so
    codes what the other side cannot decode. The second call should be refused, the predictor left as
    it was."""
    model, tok, primer = tiny_model(queue)
    lengths = np.array([6, 5])
    used, fresh = (cz.make_predictor(model, tok, lengths, 4, mix, primer) for _ in range(2))
    try:
        first = used.probabilities()
        with pytest.raises(ValueError, match=r"probabilities was called for this step already: call advance"):
            used.probabilities()
        assert np.array_equal(first, fresh.probabilities())
        for predictor in (used, fresh):
            predictor.advance(np.array([1, 2]))
        assert np.array_equal(used.probabilities(), fresh.probabilities())
    finally:
        used.close()
        fresh.close()


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_a_predictor_refuses_to_be_copied_saying_what_to_do(queue, how):
    """``copy.copy`` of a predictor made a second one sharing the first's key-value cache and mixer, so
    stepping either one moved the other's state, silently; ``deepcopy`` and ``pickle`` ended in
    "cannot pickle 'CommandQueue' object", which says nothing of the predictor. Each should be a
    TypeError saying that a predictor is made again with make_predictor."""
    import copy
    import pickle

    model, tok, primer = tiny_model(queue)
    predictor = cz.make_predictor(model, tok, np.array([6, 5]), 4, True, primer)
    try:
        with pytest.raises(TypeError, match="a predictor cannot be copied or pickled.*make_predictor"):
            {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": pickle.dumps}[how](predictor)
        predictor.probabilities()                      # the original still works
        predictor.advance(np.array([1, 2]))
    finally:
        predictor.close()


# -- sampling.repeated_ngram_bans: ids read by int() ------------------------------------------------------

@pytest.mark.parametrize("tokens, error, match", [
    ([5.7, 6, 7, 5.2, 6], TypeError, "tokens must be ints, got an element of type float"),
    (np.array([1.5, 2.5, 1.5]), TypeError, "tokens must be integers, got an array of float64"),
    ([True, False, True], TypeError, "tokens must be ints, got an element of type bool"),
    ("abc", TypeError, "tokens must be a sequence of int token ids, got str"),
    (None, TypeError, "tokens must be a sequence of int token ids, got NoneType"),
])
def test_repeated_ngram_bans_refuses_tokens_that_are_not_ids(tokens, error, match):
    """``repeated_ngram_bans`` read each token with ``int()``: 5.7 and 5.2 became the one id 5 (so
    [5.7, 6, 7, 5.2, 6] banned 7, silently), bools were ids 0 and 1, a str failed in int() ("invalid
    literal for int() with base 10: 'a'") and None as "'NoneType' object is not iterable", neither naming
    ``tokens``. Each should be refused naming it."""
    from netcl_lite.sampling import repeated_ngram_bans

    with pytest.raises(error, match=match):
        repeated_ngram_bans(tokens, 3)
    assert repeated_ngram_bans(np.array([5, 6, 7, 5, 6]), 3) == {7}
