import numpy as np

from netcl_lite import ops

rng = np.random.default_rng(1)
d, n_queries, n_keys = 512, 64, 16
q = rng.standard_normal((n_queries, d))
k = rng.standard_normal((n_keys, d))  # each query scores the same 16 keys

raw = ops.softmax(q @ k.T)  # unscaled logits: std ~ sqrt(512) ~ 22.6
scaled = ops.softmax(q @ k.T / np.sqrt(d))  # scaled logits: std ~ 1
print(f"mean largest weight per row, raw:    {raw.max(axis=1).mean():.3f}")
print(f"mean largest weight per row, scaled: {scaled.max(axis=1).mean():.3f}")
assert raw.max(axis=1).mean() > 0.9, "unscaled, one key takes over 90% of a row"
