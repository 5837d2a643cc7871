import numpy as np

from netcl_lite import reference
from netcl_lite.nn import sinusoidal_positions

pe = sinusoidal_positions(128, 16)  # (positions, width): sin, cos, sin, cos, ...
assert np.abs(pe - reference.sinusoidal_positions(128, 16)).max() < 1e-6
np.set_printoptions(precision=3, suppress=True)
print("positions 0..2, first 6 of 16 coordinates:")
print(pe[:3, :6])

# PE(p) . PE(p + k) = sum_i cos(k theta_i): it depends on the offset k only.
for p in (0, 10, 100):
    print(f"PE({p:3d}) . PE({p + 3:3d}) = {pe[p] @ pe[p + 3]:.3f}")
theta = 10000.0 ** (-np.arange(8) * 2 / 16)
print(f"sum_i cos(3 theta_i)  = {np.cos(3 * theta).sum():.3f}")
