# Step 3 — the square-root scale, masks, permutations and RoPE
import math
from itertools import product

import numpy as np

from netcl_lite import ops

# (a) Dot products of independent unit-variance vectors have variance d;
#     dividing by sqrt(d) brings it back to 1.
rng = np.random.default_rng(0)
raw, scaled = [], []  # the mean largest softmax weight per query, for each d
for d in [8, 64, 512]:
    q = rng.normal(size=(100, 1, d))  # 100 queries
    k = rng.normal(size=(100, 20, d))  # 20 keys each
    dots = (q * k).sum(-1)  # (100, 20) raw scores
    raw.append(ops.softmax(dots).max(-1).mean())
    scaled.append(ops.softmax(dots / math.sqrt(d)).max(-1).mean())
    print(
        f"d {d:>3}: variance/d {dots.var() / d:.2f},",
        f"mean max weight raw {raw[-1]:.2f}, scaled {scaled[-1]:.2f}",
    )
assert raw[0] < raw[1] < raw[2], "unscaled, the largest weight grows toward 1 with d"
assert max(scaled) - min(scaled) < 0.05, "scaled, the largest weight stays put"

# (b) Exact, no sampling: every q, k in {-1, +1}^2 (independent, mean 0, variance 1).
signs = list(product([-1, 1], repeat=2))
dots = np.array([np.dot(q, k) for q in signs for k in signs])
assert dots.mean() == 0 and dots.var() == 2
assert dots.var() / 2 == 1  # Var(x / sqrt 2) = Var(x) / 2
print(
    "d 2, all 16 sign pairs: mean",
    dots.mean(),
    "variance",
    dots.var(),
    "scaled variance",
    dots.var() / 2,
)

# (c) How often does |q.k| exceed 35 at d = 128 (standard deviation sqrt(128) = 11.3)?
d, n = 128, 200_000
q, k = rng.normal(size=(n, d)), rng.normal(size=(n, d))
measured = np.mean(np.abs(np.einsum("ij,ij->i", q, k)) > 35)
normal = math.erfc(35 / math.sqrt(d) / math.sqrt(2))  # two-sided normal tail
print(f"d 128: 35 is {35 / math.sqrt(d):.2f} standard deviations")
print(
    f"  P(|q.k| > 35): measured {measured:.2%} of {n:,} pairs,"
    f" normal approximation {normal:.2%}"
)
assert measured < 0.01, "a fraction of a percent: rare, not routine"
assert abs(measured - normal) < 0.0005, "close to the normal approximation"

# (d) Causal attention on the OpenCL device.
Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
K = Q.copy()
V = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
out, weights = ops.attention(Q, K, V, causal=True, return_weights=True)
assert np.allclose(weights.sum(axis=1), 1.0)
assert np.all(np.triu(weights, k=1) == 0.0)  # nothing from the future
assert np.array_equal(out[0], V[0])  # query 0 sees only key 0
weights = weights.astype(float)
print("causal weights:", np.round(weights, 3).tolist())
print(
    "row sums:",
    np.round(weights.sum(axis=1), 6).tolist(),
    " first output:",
    out[0].astype(float).tolist(),
)

# (e) A query that may see no key has no defined softmax: rejected, not turned into NaN.
mask = np.tril(np.ones((3, 3), dtype=bool))
mask[1] = False
try:
    ops.attention(Q, K, V, mask=mask)
except ValueError as err:
    print("ValueError:", err)

# (f) Permuting the inputs permutes the outputs (equivariance), without a mask...
perm = np.array([2, 0, 1])
plain = ops.attention(Q, K, V)
assert np.allclose(ops.attention(Q[perm], K[perm], V[perm]), plain[perm], atol=1e-6), \
    "without a mask the outputs follow the permutation"
print(
    "no mask: outputs follow the permutation:",
    True,
    "| outputs unchanged:",
    bool(np.allclose(plain[perm], plain)),
)
# ... but a causal mask is tied to positions, so it breaks the symmetry.
permuted_causal = ops.attention(Q[perm], K[perm], V[perm], causal=True)
follows = bool(np.allclose(permuted_causal, out[perm], atol=1e-6))
print("causal mask: outputs follow the permutation:", follows)
assert not follows, "with a causal mask the outputs do not follow the permutation"

# (g) RoPE on the device: q rotated to position i, k to position j;
#     their score depends on j - i only.
rng = np.random.default_rng(1)
q, k = rng.normal(size=8), rng.normal(size=8)  # one query and one key, head width 8
qs = ops.rope(np.tile(q, (8, 1)))  # (8, 8): row i is q rotated to position i
ks = ops.rope(np.tile(k, (8, 1)))  # row j is k rotated to position j
scores = qs @ ks.T  # scores[i, j]
for shift in range(-7, 8):  # constant along every diagonal j - i
    diagonal = np.diagonal(scores, shift)
    assert np.allclose(diagonal, diagonal[0], atol=1e-5), "constant along each diagonal"
print("scores[i, j] for positions 0..7 (constant along each diagonal):")
print(np.round(scores.astype(float), 2))
print(f"without rotation every entry is q.k = {q @ k:.2f}")
far = (
    ops.rope(q[None], offset=100) @ ops.rope(k[None], offset=103).T
)  # i = 100, j = 103
assert np.isclose(far[0, 0], scores[0, 3], atol=1e-4), "(100, 103) scores as (0, 3)"
print(
    f"(i, j) = (0, 3): {scores[0, 3]:.3f}   (100, 103): {far[0, 0]:.3f}",
    f"  (3, 0): {scores[3, 0]:.3f}",
)
