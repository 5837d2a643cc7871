"""Issue 58, an independent hostile check, round 25a: reproducers of defects in the compressor's
host models beyond the cases of earlier rounds (tests/test_hostile*.py,
tests/test_compression_hostile.py): a word n-gram whose ``predict`` took its unigram counts
unchecked.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import numpy as np
import pytest

from netcl_lite import ngram as ng

PIECES = {i: bytes([97 + i]) if i % 3 else b" " for i in range(6)}
PRIMER = np.array([1, 2, 0, 4, 5, 0, 1, 2, 0, 4] * 3)


def _words():
    return ng.WordNGram(PRIMER, 6, streams=2, pieces=PIECES, orders=2)


# -- ngram.WordNGram.predict: the unigram counts ----------------------------------------------------------

@pytest.mark.parametrize("bad", [np.nan, np.inf, -5.0])
def test_word_ngram_refuses_unigram_counts_that_are_no_counts(bad):
    """``WordNGram.predict(unigram)`` took a NaN or an infinity into every stream's distribution (NaN
    returned, silently) and a NaN on into the learned weights λ at the next update, for good; a
    negative count gave "probabilities" from it. It should refuse them, naming ``unigram``, and leave
    the weights as they were."""
    words = _words()
    unigram = np.array([bad, 1, 1, 1, 1, 1.0])
    before = words.lam.copy()
    with pytest.raises(ValueError, match="unigram must hold finite counts >= 0"):
        words.predict(unigram)
    with pytest.raises(ValueError, match="update follows predict"):      # nothing was looked up
        words.update(np.array([1, 2]), np.ones(2, bool))
    assert np.array_equal(words.lam, before)


@pytest.mark.parametrize("unigram", [np.ones(5), np.ones(7), np.ones((1, 6)), [1.0] * 6, np.array(["a"] * 6)],
                         ids=["short", "long", "2d", "list", "str"])
def test_word_ngram_refuses_unigram_counts_of_another_shape_naming_them(unigram):
    """A unigram of 5 or 7 counts (vocab 6) was NumPy's broadcast error, which names no parameter; one
    of shape (1, 6) returned a (1, 2, 6) "distribution" and the next update an IndexError; a list an
    AttributeError."""
    with pytest.raises(ValueError, match=r"unigram must be an array of shape \(6,\)"):
        _words().predict(unigram)


def test_a_refused_predict_leaves_the_last_predict_for_its_update():
    """A predict refused half-way overwrote the order-0 distribution of the step's earlier predict but
    not its lookup, so the update that followed learned from a mix of the two. A refused call must
    change nothing: the update then learns exactly what it would have without it."""
    unigram = np.bincount(PRIMER, minlength=6).astype(float)
    plain, probed = _words(), _words()
    for words in (plain, probed):
        words.predict(unigram)
    with pytest.raises(ValueError, match="unigram"):
        probed.predict(np.ones(5))
    for words in (plain, probed):
        words.update(np.array([1, 2]), np.ones(2, bool))
    assert np.array_equal(plain.lam, probed.lam)
    assert np.array_equal(plain.predict(unigram), probed.predict(unigram))


# -- ngram.Mixer.update: a coded token without a finite chance ---------------------------------------------

N_PARTS = len(ng.MIX_ORDERS) + 3


def _parts(b=2, v=10):
    return [np.full((b, v), 1.0 / v) for _ in range(N_PARTS)]


@pytest.mark.parametrize("spoil", ["nan in p_mix", "no chance for the token", "a part changed since mix"])
def test_mixer_update_refuses_a_coded_token_without_a_finite_chance_and_keeps_its_weights(spoil):
    """``Mixer.update`` divided each part's probability of the coded token by the mixture's: a NaN
    there, a token to which every part (so the mixture) gave 0 (0 / 0), or a part set to NaN after
    ``mix`` turned every weight of the bucket into NaN, silently and for good; every later mixture
    was NaN. It should refuse, naming ``p_mix``, and leave the weights and the step as they were."""
    mixer = ng.Mixer(ng.ORDERS)
    parts = _parts()
    if spoil == "no chance for the token":
        for part in parts:
            part[:, 1] = 0
            part /= part.sum(axis=1, keepdims=True)
    p = mixer.mix(parts, np.zeros(2, np.int64), np.ones(2))
    given = p.copy()
    if spoil == "nan in p_mix":
        given[0, 1] = np.nan
    if spoil == "a part changed since mix":
        parts[3][0, 1] = np.nan
    before = mixer.w.copy()
    with pytest.raises(ValueError, match="p_mix must be the mixture mix returned"):
        mixer.update(np.array([1, 1]), given, np.ones(2, bool))
    assert np.array_equal(mixer.w, before)
    if spoil == "nan in p_mix":                        # the step's own update still works
        mixer.update(np.array([1, 1]), p, np.ones(2, bool))
        assert np.isfinite(mixer.w).all() and np.allclose(mixer.w.sum(axis=2), 1)


def test_mixer_refuses_parts_over_an_empty_vocabulary_naming_them():
    """Parts of shape (2, 0) reached NumPy's "zero-size array to reduction operation minimum", which
    names no parameter."""
    with pytest.raises(ValueError, match="parts must be distributions over a vocabulary of at least one token"):
        ng.Mixer(ng.ORDERS).mix([np.zeros((2, 0)) for _ in range(N_PARTS)], np.zeros(2, np.int64), np.ones(2))
