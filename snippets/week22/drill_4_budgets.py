# Step 4 — head budgets and KV-cache bytes
import numpy as np

from netcl_lite import budget

# Fixed width D: more heads means narrower heads, never more projection weights.
D = 512
for heads in [1, 2, 8, 32, 128]:
    width = D // heads
    assert heads * width == D
    weights = budget.attention_parameters(D, heads)
    assert weights == 4 * D * D  # Wq, Wk, Wv, Wo: four D x D matrices, no biases
    print(f"heads {heads:>3}  width {width:>3}  projection weights {weights:,}")

# The cache of a large model: 80 layers, head width 128, fp16 (2 bytes per element).
for seq_len in [2048, 32768]:
    mha = budget.kv_cache_bytes(layers=80, kv_heads=64, head_dim=128, seq_len=seq_len)
    gqa = budget.kv_cache_bytes(layers=80, kv_heads=8, head_dim=128, seq_len=seq_len)
    assert mha == 8 * gqa, "eight KV groups cut the count by exactly eight"
    print(f"length {seq_len:>6,}")
    print(f"  64 KV heads: {budget.format_bytes(mha)}")
    print(f"   8 KV heads: {budget.format_bytes(gqa)}")

# The formula is the size of the array it describes:
# (K/V, layers, heads, length, width).
cache = np.zeros((2, 3, 4, 5, 6), dtype=np.float32)
small = budget.kv_cache_bytes(
    layers=3, kv_heads=4, head_dim=6, seq_len=5, bytes_per_element=4
)
assert small == cache.nbytes
print("3 layers, 4 heads, length 5, width 6, fp32:", small, "bytes")
empty = budget.kv_cache_bytes(
    layers=3, kv_heads=4, head_dim=6, seq_len=0, bytes_per_element=4
)
assert empty == 0
print("length 0:", empty, "bytes")
# A negative shape is a bug upstream, not a size: refused with a ValueError.
try:
    budget.kv_cache_bytes(layers=3, kv_heads=4, head_dim=6, seq_len=-5)
except ValueError as err:
    print("ValueError:", err)
