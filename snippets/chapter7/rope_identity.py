import numpy as np

from netcl_lite import ops

rng = np.random.default_rng(3)
d = 8
q = rng.standard_normal((1, d)).astype(np.float32)
k = rng.standard_normal((1, d)).astype(np.float32)


def score(i, j):
    """Dot product of q rotated to position i and k rotated to position j."""
    return (ops.rope(q, offset=i) @ ops.rope(k, offset=j).T).item()


for i, j in [(0, 3), (4, 7), (100, 103), (4000, 4003), (5, 2), (1005, 1002)]:
    print(
        f"positions ({i:4d}, {j:4d})  offset j-i = {j - i:+d}"
        f"  score = {score(i, j):+.3f}"
    )

for pairs in ([(0, 3), (4, 7), (100, 103), (4000, 4003)], [(5, 2), (1005, 1002)]):
    scores = [score(i, j) for i, j in pairs]  # one offset per list
    assert max(scores) - min(scores) < 1e-3, \
        "the score depends on the positions only through the offset"
