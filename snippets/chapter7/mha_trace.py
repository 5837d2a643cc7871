import numpy as np

from netcl_lite import ops, reference

rng = np.random.default_rng(0)
B, T, D, h = 2, 4, 12, 3
d = D // h  # head width 4
X = rng.standard_normal((B, T, D)).astype(np.float32)
Wq, Wk, Wv, Wo = (
    rng.standard_normal((D, D)).astype(np.float32) / np.sqrt(D)
    for _ in range(4)
)


def split_heads(t):  # (B, T, D) -> (B, h, T, d)
    return t.reshape(B, T, h, d).transpose(0, 2, 1, 3)


Q, K, V = (split_heads(ops.matmul(X, W)) for W in (Wq, Wk, Wv))
heads, weights = ops.attention(Q, K, V, return_weights=True)
# (B, h, T, d) -> (B, T, D): concatenate the heads
concat = heads.transpose(0, 2, 1, 3).reshape(B, T, D)
out = ops.matmul(concat, Wo)

for name, t in [
    ("Q, K, V per head", Q),
    ("scores / weights", weights),
    ("head outputs", heads),
    ("concatenated", concat),
    ("after W_O", out),
]:
    print(f"{name:18s} {t.shape}")

expected = (
    reference.attention(Q, K, V).transpose(0, 2, 1, 3).reshape(B, T, D) @ Wo
)
assert np.allclose(out, expected, atol=1e-5)
print("projection weights 4*D^2 =", sum(W.size for W in (Wq, Wk, Wv, Wo)))
