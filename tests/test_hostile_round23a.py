"""Issue 58, an independent hostile check, round 23a: the context mixer's public stretch and squash
take a NumPy masked array's values under its mask as if they were there (the mask silently ignored),
where the compressor refuses a masked array by name."""
from __future__ import annotations

import numpy as np
import pytest

from netcl_lite.context_mixing import squash, stretch


@pytest.mark.parametrize("fn, name", [(stretch, "p"), (squash, "x")])
def test_stretch_and_squash_refuse_a_masked_array_naming_it(fn, name):
    values = np.ma.array([0.25, 0.5], mask=[True, False])
    with pytest.raises(TypeError, match=rf"^{name} must not be a masked array"):
        fn(values)
    assert np.allclose(fn(values.compressed()), fn(np.array([0.5])))      # the values meant still work


def test_id_checks_refuse_a_masked_array_naming_it():
    """checks.id_array (the counts' and the match model's primer, a step's tokens) took the values under
    the mask; checks.token_ids (decode) turned them into None."""
    from netcl_lite.checks import id_array, token_ids
    from netcl_lite.match import MatchModel
    from netcl_lite.ngram import NGram

    ids = np.ma.array([3, 1], mask=[True, False])
    with pytest.raises(TypeError, match=r"^primer must not be a masked array"):
        id_array("primer", ids, 4)
    with pytest.raises(TypeError, match=r"^ids must not be a masked array"):
        token_ids(ids)
    with pytest.raises(TypeError, match=r"^primer must not be a masked array"):
        NGram(ids, 4, 1)
    with pytest.raises(TypeError, match=r"^lengths must not be a masked array"):
        MatchModel(np.array([1, 2]), np.ma.array([2], mask=[True]))
    assert token_ids(ids.compressed()) == [1] and id_array("primer", ids.compressed(), 4).tolist() == [1]
