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
