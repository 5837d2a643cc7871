import numpy as np

from netcl_lite import ops

rng = np.random.default_rng(3)
d = 8
q = rng.standard_normal((1, d)).astype(np.float32)
k = rng.standard_normal((1, d)).astype(np.float32)


def score(m, n):
    """Dot product of q rotated to position m and k rotated to position n."""
    return (ops.rope(q, offset=m) @ ops.rope(k, offset=n).T).item()


for m, n in [(0, 3), (4, 7), (100, 103), (4000, 4003), (5, 2), (1005, 1002)]:
    print(
        f"positions ({m:4d}, {n:4d})  offset n-m = {n - m:+d}"
        f"  score = {score(m, n):+.3f}"
    )
