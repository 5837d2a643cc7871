import numpy as np

from netcl_lite import ops

rng = np.random.default_rng(2)
# 5 tokens, no positional information
X = rng.standard_normal((5, 4)).astype(np.float32)
perm = np.array([3, 0, 4, 1, 2])

out = ops.attention(X, X, X)
out_perm = ops.attention(X[perm], X[perm], X[perm])
print(
    "permuted input gives permuted output:",
    np.allclose(out_perm, out[perm], atol=1e-6),
)
print(
    "... but not the same output:        ",
    np.allclose(out_perm, out, atol=1e-6),
)

causal = ops.attention(X, X, X, causal=True)
causal_perm = ops.attention(X[perm], X[perm], X[perm], causal=True)
print(
    "with a causal mask, still permuted?  ",
    np.allclose(causal_perm, causal[perm], atol=1e-6),
)
assert np.allclose(out_perm, out[perm], atol=1e-6), \
    "without a mask, the outputs follow the permutation"
assert not np.allclose(causal_perm, causal[perm], atol=1e-6), \
    "a causal mask breaks the symmetry"
