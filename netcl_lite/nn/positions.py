"""Fixed sinusoidal position encodings (Vaswani et al., 2017), added to token embeddings.

Unlike RoPE (:func:`netcl_lite.ops.rope`), which rotates queries and keys inside
attention, these vectors are added to the input once. Both use the same
frequencies ``θ_i = base^(-2i/d)``: row ``p`` of the table is what RoPE makes of
the vector ``(0, 1, 0, 1, ...)`` at position ``p``, with each pair's order swapped.
"""

from __future__ import annotations

import numpy as np

from ..checks import nonnegative_int, positive_int, positive_real
from ..ops.rope import rope_tables

__all__ = ["sinusoidal_positions"]


# --8<-- [start:sinusoidal_positions]
def sinusoidal_positions(seq_len: int, dim: int, base: float = 10000.0) -> np.ndarray:
    """The (seq_len, dim) float32 table ``PE[p, 2i] = sin(p θ_i)``, ``PE[p, 2i+1] = cos(p θ_i)``.

    ``θ_i = base^(-2i/dim)``: pair 0 turns by one radian per position, the last pair
    slowest. ``dim`` must be even (a sine and a cosine per frequency).

    >>> sinusoidal_positions(2, 2, base=1.0).round(6)           # (sin p, cos p) for p = 0, 1
    array([[0.      , 1.      ],
           [0.841471, 0.540302]], dtype=float32)
    """
    seq_len, dim = nonnegative_int("seq_len", seq_len), positive_int("dim", dim)
    if dim % 2:
        raise ValueError(f"dim must be even (one sine and one cosine per frequency), got {dim}")
    positive_real("base", base)
    cos, sin = rope_tables(seq_len, dim, 0, base)    # (T, d/2) each, angles in float64
    table = np.empty((seq_len, dim), np.float32)
    table[:, 0::2], table[:, 1::2] = sin, cos
    return table
# --8<-- [end:sinusoidal_positions]
