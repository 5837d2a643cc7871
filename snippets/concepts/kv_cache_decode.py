import numpy as np

import netcl_lite.autograd as ag
from netcl_lite.budget import kv_cache_bytes
from netcl_lite.core.device import manager
from netcl_lite.nn.transformer import DecoderBlock, KVCache

queue = manager.default().queue
B, T, D, H, G = 1, 12, 64, 4, 2  # grouped K/V: 2 groups for 4 heads
block = DecoderBlock(
    queue,
    dim=D,
    n_heads=H,
    n_kv_heads=G,
    hidden=128,
    max_seq_len=16,
    norm="pre",
    seed=0,
)
x = np.random.default_rng(0).standard_normal((B, T, D)).astype(np.float32)

# All 12 positions at once, causal.
full = block(ag.tensor(x, requires_grad=False)).value.numpy()

cache = KVCache(
    queue, layers=1, batch=B, n_kv_heads=G, head_dim=D // H, max_seq_len=16
)
# One position at a time, reusing the cached K/V of the earlier ones.
steps = []
for t in range(T):
    x_t = ag.tensor(x[:, t : t + 1], requires_grad=False)
    steps.append(block(x_t, cache=cache).value.numpy())
incremental = np.concatenate(steps, axis=1)

same = np.allclose(incremental, full, atol=1e-4)
print("cached decoding equals the full forward:", same)
assert same, "cached decoding reproduces the full forward"
print(
    f"cache holds {cache.nbytes:,} bytes = kv_cache_bytes(...) = "
    f"{kv_cache_bytes(1, G, D // H, 16, batch=B, bytes_per_element=4):,}"
)
try:
    for t in range(5):  # 12 + 5 > max_seq_len = 16
        block(ag.tensor(x[:, :1], requires_grad=False), cache=cache)
except ValueError as err:
    print("ValueError:", err)
