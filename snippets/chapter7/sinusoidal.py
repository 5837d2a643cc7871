import numpy as np

from netcl_lite import reference
from netcl_lite.nn import sinusoidal_positions

pe = sinusoidal_positions(128, 16)  # (positions, width): sin, cos, sin, cos, ...
assert np.abs(pe - reference.sinusoidal_positions(128, 16)).max() < 1e-6
np.set_printoptions(precision=3, suppress=True)
print("positions 0..2, first 6 of 16 coordinates:")
print(pe[:3, :6])

# PE(i) . PE(i + 3) = sum_c cos(3 theta_c): it depends on the offset 3 only.
theta = 10000.0 ** (-np.arange(8) * 2 / 16)  # theta_c for the 8 pairs
for i in (0, 10, 100):
    print(f"PE({i:3d}) . PE({i + 3:3d}) = {pe[i] @ pe[i + 3]:.3f}")
    assert abs(pe[i] @ pe[i + 3] - np.cos(3 * theta).sum()) < 1e-5, \
        "the dot products at offset 3 agree with the sum of cosines"
print(f"sum_c cos(3 theta_c)  = {np.cos(3 * theta).sum():.3f}")
