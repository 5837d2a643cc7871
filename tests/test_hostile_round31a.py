"""Hostile round 31a: the compressor's mixing parts fed values a hostile caller would pass.

``context_mixing.TreeSSE`` checked its ``p`` for NaNs, negative values and rows of zeros, but a row
holding an infinity came back as NaNs (inf / inf) with no error, and a row of tiny positive values
(all subnormal: a valid, unnormalized distribution) came back as infinities and NaNs, since each
subtree's mass is floored at 1e-300; a row of huge values overflowed its sums (a RuntimeWarning,
then an error that spoke of a NaN the caller never passed).

``adaptation.Adapter`` took a ``state`` whose moments were finite float64 past float32's range (a
training run's are float32); Adam's bias correction overflowed them (a RuntimeWarning) into
infinities and NaNs.

``context_mixing.GeometricMixer`` takes its parts' logs in float32: a part of 1e300 overflowed as it
was cast (a RuntimeWarning), then was refused as holding a NaN, an infinity or a negative value.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from netcl_lite.context_mixing import TreeSSE


def test_tree_sse_refuses_an_infinity_naming_it():
    p = np.zeros((1, 8))
    p[0, 3] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="p must hold finite probabilities, got an infinity"):
            TreeSSE(8)(p)


@pytest.mark.parametrize("vocab", [3, 8])
@pytest.mark.parametrize("value", [1e-320, 1e-250, 1e250, 1e308])
def test_tree_sse_of_a_row_scaled_far_from_one_is_the_row_normalized(vocab, value):
    """A row of equal tiny (subnormal) or huge values is the uniform distribution, as a row of ones is."""
    rows = np.vstack([np.full(vocab, value), np.full(vocab, 1.0 / vocab)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = TreeSSE(vocab)(rows)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-12)


def test_tree_sse_of_one_subnormal_value_puts_its_mass_there():
    p = np.zeros((1, 8))
    p[0, 5] = 1e-310
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = TreeSSE(8)(p)
    assert np.isfinite(out).all() and out[0].argmax() == 5
    np.testing.assert_allclose(out.sum(), 1.0, rtol=1e-12)


def test_tree_sse_leaves_an_ordinary_row_bit_for_bit_as_it_was():
    """Rows near 1 are not rescaled: the coder's probabilities keep their bits."""
    rng = np.random.default_rng(3)
    p = rng.random((3, 11))
    p /= p.sum(axis=1, keepdims=True)
    odd = np.vstack([p, np.full((1, 11), 1e-320)])
    np.testing.assert_array_equal(TreeSSE(11)(odd)[:3], TreeSSE(11)(p))


# -- adaptation: an optimizer state past float32's range -----------------------------------------------

@pytest.mark.parametrize("key", ["exp_avg", "exp_avg_sq"])
def test_adapter_refuses_a_state_past_float32_s_range_naming_it(queue, key):
    """A state's moments of 1.7e308 (finite float64) passed the state's checks; Adam's bias
    correction then overflowed them (a RuntimeWarning, an error under -W error) into infinities
    and NaNs. A training run's moments are float32, so such a state is none of its."""
    from netcl_lite.adaptation import AdaptConfig, Adapter
    from netcl_lite.nn import DecoderLM, LMConfig

    model = DecoderLM(LMConfig(vocab_size=64, hidden_size=16, intermediate_size=16, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8),
                      queue=queue, seed=2)
    params = model.parameters()
    state = {"step": 5, "exp_avg": {n: np.zeros(p.shape) for n, p in params.items()},
             "exp_avg_sq": {n: np.ones(p.shape) for n, p in params.items()}}
    name = sorted(params)[0]
    state[key][name] = np.full(params[name].shape, 1.7e308)
    with pytest.raises(ValueError, match=f"state {key}.{name} holds values past float32's range"):
        Adapter(model, 1, 0, AdaptConfig(optimizer="adam"), state=state)
    state[key][name] = np.full(params[name].shape, 3e38)          # within float32's range: taken
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Adapter(model, 1, 0, AdaptConfig(optimizer="adam"), state=state).restore()


# -- GeometricMixer: a part past float32's range ------------------------------------------------------

@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("value", [1e300, 1.7e308])
def test_geometric_mixer_names_a_part_past_float32_s_range_without_a_warning(which, value):
    """Its logs are float32: a part of 1e300 overflowed as it was cast (a RuntimeWarning, an error under
    -W error), then was refused as holding "a NaN, an infinity or a negative value", none of which it held."""
    from netcl_lite.context_mixing import GeometricMixer

    mixer = GeometricMixer(2, 3, [4], 6, True)
    parts = [np.full((2, 6), 1 / 6), np.full((2, 6), 1 / 6)]
    parts[which] = np.full((2, 6), value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="one past float32's range"):
            mixer.mix(parts, np.array([0, 1]), [(0, np.array([1, -1]), np.array([0, 3]))], np.array([0, 5]))
