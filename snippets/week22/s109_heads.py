from fractions import Fraction

import numpy as np

from netcl_lite import budget, ops

B, T, D, H = 2, 4, 12, 3
d = D // H  # head width: d_k = d_v = 4
rng = np.random.default_rng(0)
x = rng.normal(size=(B, T, D))
Wq, Wk, Wv, Wo = (rng.normal(size=(D, D)) / np.sqrt(D) for _ in range(4))


def split_heads(t):  # (B, T, heads*d) -> (B, heads, T, d)
    return t.reshape(B, T, -1, d).transpose(0, 2, 1, 3)


q, k, v = (split_heads(x @ W) for W in (Wq, Wk, Wv))
heads, weights = ops.attention(
    q, k, v, return_weights=True
)  # all heads, one OpenCL call
merged = heads.transpose(0, 2, 1, 3).reshape(B, T, D)  # concatenate the heads
y = merged @ Wo
print(
    "x",
    x.shape,
    "-> q, k, v",
    q.shape,
    "-> scores",
    weights.shape,
    "-> heads",
    heads.shape,
)
print("concatenated", merged.shape, "-> after Wo", Wo.shape, ":", y.shape)

# GQA with one K/V group (G = 1): K and V project to G*d = 4 columns; all query
# heads share them.
G = 1
k1, v1 = (split_heads(x @ W[:, : G * d]) for W in (Wk, Wv))
print(
    "GQA G=1: q", q.shape, "k, v", k1.shape, "-> heads", ops.attention(q, k1, v1).shape
)

mha = budget.attention_parameters(D, H)
gqa = budget.attention_parameters(D, H, n_kv_heads=G)
print("MHA weights 4*D^2:", mha, "=", 4 * D * D)
print("GQA weights 2*D^2 + 2*D*G*d:", gqa, "=", 2 * D * D + 2 * D * G * d)
# Cached K/V values per token and layer (one byte per element): 2*H*d for MHA,
# 2*G*d for GQA.
mha_cache = budget.kv_cache_bytes(
    1, kv_heads=H, head_dim=d, seq_len=1, bytes_per_element=1
)
gqa_cache = budget.kv_cache_bytes(
    1, kv_heads=G, head_dim=d, seq_len=1, bytes_per_element=1
)
print(
    f"cached values per token: {mha_cache} -> {gqa_cache} (/{mha_cache // gqa_cache});",
    f"projection weights: x{Fraction(gqa, mha)}",
)
