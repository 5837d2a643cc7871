"""Hostile round 32a: the compressor's host building blocks (n-gram counts, word n-gram, match model,
stream cache, mixer) called directly with values at their boundaries."""

from __future__ import annotations

import numpy as np
import pytest

from netcl_lite.ngram import WordNGram

PIECES = {0: b" the", 1: b"cat", 2: b"\n", 3: b" sat", 4: b"x "}
PRIMER = np.array([0, 1, 3, 2, 0, 1, 4, 0, 1])


@pytest.mark.parametrize("unigram", [np.array([2**62, 2**62, 0, 0, 0], np.int64),
                                     np.array([2**63, 2**63, 1, 0, 0], np.uint64)],
                         ids=["int64", "uint64"])
def test_word_ngram_of_integer_counts_whose_sum_wraps_is_still_a_distribution(unigram):
    # integer counts were summed in their own dtype: past 2^63 the sum wrapped (to a negative
    # or tiny total), silently, and every stream's "distribution" held negative values or summed to 10^19
    p = WordNGram(PRIMER, 5, 1, PIECES, 2).predict(unigram)
    assert p.min() >= 0
    assert p.sum() == pytest.approx(1.0)
    same = WordNGram(PRIMER, 5, 1, PIECES, 2).predict(unigram.astype(np.float64))
    np.testing.assert_allclose(p, same)


from netcl_lite.ngram import MIX_ORDERS, Mixer  # noqa: E402

PARTS = len(MIX_ORDERS) + 3


def _mixed():
    mixer = Mixer(3)
    parts = [np.full((2, 4), 0.25) for _ in range(PARTS)]
    return mixer, mixer.mix(parts, np.array([0, 1]), np.array([1, 0]))


@pytest.mark.parametrize("which", ["reached", "total"])
def test_mixer_mix_refuses_a_masked_reached_or_total_naming_it(which):
    # the mask was dropped: a masked-out stream's order or count picked its weight set as if given
    args = {"reached": np.array([0, 1]), "total": np.array([1, 0])}
    args[which] = np.ma.array(args[which], mask=[False, True])
    with pytest.raises(TypeError, match=which):
        Mixer(3).mix([np.full((2, 4), 0.25) for _ in range(PARTS)], **args)


def test_mixer_update_refuses_a_masked_p_mix_naming_it():
    mixer, p = _mixed()
    with pytest.raises(TypeError, match="p_mix"):
        mixer.update(np.array([1, 2]), np.ma.array(p, mask=True), np.array([True, True]))


def test_mixer_update_refuses_a_negative_p_mix_and_changes_nothing():
    # a negative probability at the coded token passed the finiteness check: the weights moved
    # by a ratio below -1, and the step was spent
    mixer, p = _mixed()
    before = mixer.w.copy()
    with pytest.raises(ValueError, match="p_mix"):
        mixer.update(np.array([1, 2]), -p, np.array([True, True]))
    np.testing.assert_array_equal(mixer.w, before)
    mixer.update(np.array([1, 2]), p, np.array([True, True]))      # the step can still be taken
    fresh, q = _mixed()
    fresh.update(np.array([1, 2]), q, np.array([True, True]))
    np.testing.assert_array_equal(mixer.w, fresh.w)


def test_mixer_update_of_a_subnormal_p_mix_raises_no_warning(recwarn):
    # part / 5e-324 overflowed with a RuntimeWarning (np.errstate let "over" through) before the refusal
    mixer, p = _mixed()
    with pytest.raises(ValueError, match="p_mix"):
        mixer.update(np.array([1, 2]), np.full_like(p, 5e-324), np.array([True, True]))
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


from netcl_lite import masks  # noqa: E402


@pytest.mark.parametrize("call", [
    lambda m: masks.encoder(m),
    lambda m: masks.cross(m, 2),
    lambda m: masks.cross(2, m),
], ids=["encoder", "cross-target", "cross-source"])
def test_masks_refuse_a_masked_valid_array(call):
    # asarray dropped the mask: a masked-out flag was read as the value under it
    with pytest.raises(TypeError, match="masked"):
        call(np.ma.array([True, False], mask=[False, True]))


@pytest.mark.parametrize("call", [lambda m: masks.combine(m), lambda m: masks.render(m)], ids=["combine", "render"])
def test_masks_refuse_a_masked_mask(call):
    with pytest.raises(TypeError, match="masked"):
        call(np.ma.array(np.ones((2, 2), bool), mask=[[False, True], [False, False]]))


from netcl_lite import checks  # noqa: E402


@pytest.mark.parametrize("value", [2**63, 2**64 - 1])
def test_id_array_without_a_bound_refuses_uint64_ids_past_int64_rather_than_wrapping_them(value):
    # the int64 copy wrapped them to negative ids (2^64 - 1 to -1), which it promises never to give
    with pytest.raises(ValueError, match="lengths"):
        checks.id_array("lengths", np.array([3, value], np.uint64))
    assert checks.id_array("lengths", np.array([3, 2**63 - 1], np.uint64)).tolist() == [3, 2**63 - 1]


def test_dtype_is_names_a_value_without_a_dtype():
    with pytest.raises(TypeError, match="x must be a float32 Tensor, got list"):
        checks.dtype_is("x", [1.0], "float32")
