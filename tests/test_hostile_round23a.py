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
