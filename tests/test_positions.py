"""Sinusoidal position encodings against the float64 formula, their rotation identity, bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

from netcl_lite import reference
from netcl_lite.nn import sinusoidal_positions
from netcl_lite.testing import assert_close


@pytest.mark.parametrize("seq_len, dim, base", [(1, 2, 10000.0), (7, 6, 10000.0), (129, 64, 10000.0),
                                                (300, 18, 500.0), (0, 4, 10000.0)])
def test_table_matches_the_float64_formula(seq_len, dim, base):
    got = sinusoidal_positions(seq_len, dim, base=base)
    assert got.shape == (seq_len, dim) and got.dtype == np.float32
    # angles are formed in float64 and rounded once: one float32 step of a value in [-1, 1]
    assert_close(got, reference.sinusoidal_positions(seq_len, dim, base), rtol=0, atol=2 ** -23,
                 what=f"sinusoidal_positions({seq_len}, {dim}, {base})")


def test_a_fixed_offset_is_the_same_rotation_at_every_position():
    pe = reference.sinusoidal_positions(200, 16)
    offset, theta = 5, 10000.0 ** (-np.arange(8) * 2 / 16)
    c, s = np.cos(offset * theta), np.sin(offset * theta)
    sin_p, cos_p = pe[:-offset, 0::2], pe[:-offset, 1::2]
    # sin(a + b) = sin a cos b + cos a sin b; cos(a + b) = cos a cos b - sin a sin b
    assert np.allclose(pe[offset:, 0::2], sin_p * c + cos_p * s, atol=1e-12)
    assert np.allclose(pe[offset:, 1::2], cos_p * c - sin_p * s, atol=1e-12)
    got = sinusoidal_positions(200, 16)
    assert np.allclose((got[:, 0::2] ** 2 + got[:, 1::2] ** 2), 1.0, atol=1e-6)   # each pair on the unit circle


@pytest.mark.parametrize("kwargs, message", [
    (dict(seq_len=-1, dim=4), "seq_len must be a non-negative int"),
    (dict(seq_len=3.0, dim=4), "seq_len must be a non-negative int"),
    (dict(seq_len=3, dim=0), "dim must be a positive int"),
    (dict(seq_len=3, dim=5), "dim must be even"),
    (dict(seq_len=3, dim=4, base=0.0), "base must be a positive finite number"),
    (dict(seq_len=3, dim=4, base=float("nan")), "base must be a positive finite number"),
])
def test_bad_inputs_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sinusoidal_positions(**kwargs)
