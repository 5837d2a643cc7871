# Step 4 — streamed attention is exact attention
import math

import numpy as np

from netcl_lite import budget, ops, reference

# (a) On the OpenCL device: tiled online softmax equals dense attention.
rng = np.random.default_rng(17)
Q = rng.normal(size=(7, 4)).astype(np.float32)
K = rng.normal(size=(9, 4)).astype(np.float32)
V = rng.normal(size=(9, 3)).astype(np.float32)
dense = ops.attention(Q, K, V)  # stores the 7 x 9 weights on the device
exact = reference.attention(*(x.astype(np.float64) for x in (Q, K, V)))
assert np.abs(dense - exact).max() < 1e-6
for block in [1, 2, 4, 9, 12]:  # 12 > 9 keys: one partial tile
    streamed = ops.flash_attention(Q, K, V, block_size=block)  # never 7 x 9
    delta = float(np.abs(streamed - dense).max())
    assert delta < 1e-6 and np.abs(streamed - exact).max() < 1e-6, delta
    print(f"block_size {block:>2}: max |flash - dense| < 1e-6 (float32)")

# (b) One fp16 score matrix vs Q, K, V and O, at head width 128.
d, fp16 = 128, 2
print(f"{'T':>6} {'score matrix (B)':>16} {'Q,K,V,O (B)':>12}"
      f" {'avoided write+read (B)':>23}")
for T in [512, 2048, 8192, 32768]:
    scores = budget.score_matrix_bytes(T, bytes_per_element=fp16)
    qkvo = 4 * T * d * fp16
    print(f"{T:>6} {scores:>16,} {qkvo:>12,} {2 * scores:>23,}")
largest = budget.score_matrix_bytes(32768, bytes_per_element=fp16)
assert largest == 32768**2 * 2 == 2_147_483_648
print("T = 32768:", budget.format_bytes(largest))


# (c) The accumulator retest: one query, scores 0 and log 3, values 2
# and 10, one key per tile.
def stream(scores, values, rescale_l=True, rescale_num=True):
    """Output, and the (m, l, numerator) state after each one-key tile."""
    # running max, sum of exp(s - m), sum of exp(s - m) * v
    m, l, num = -math.inf, 0.0, 0.0
    states = []
    for s, v in zip(scores, values):
        m_new = max(m, s)
        shrink = math.exp(m - m_new)  # moves old sums to the new maximum
        w = math.exp(s - m_new)  # this key's weight, relative to m_new
        l = (shrink if rescale_l else 1.0) * l + w
        num = (shrink if rescale_num else 1.0) * num + w * v
        m = m_new
        states.append((m, l, num))
    return num / l, states


scores, values = [0.0, math.log(3)], [2.0, 10.0]
out, states = stream(scores, values)
for tile, (m, l, num) in enumerate(states, 1):
    print(f"after tile {tile}: m = {m:.4f}, l = {l:.4f},", end=" ")
    print(f"numerator = {num:.4f}")
assert np.allclose(states, [(0, 1, 2), (math.log(3), 4 / 3, 32 / 3)])
weights = np.exp(scores) / np.exp(scores).sum()
dense_out = float(weights @ values)  # (1 * 2 + 3 * 10) / 4
print(f"streamed output {out:.4f}, dense output {dense_out:.4f}")
assert math.isclose(out, 8) and math.isclose(dense_out, 8)
only_l, _ = stream(scores, values, rescale_num=False)
only_num, _ = stream(scores, values, rescale_l=False)
print(f"rescale only the normalizer: {only_l:.4f}; "
      f"only the numerator: {only_num:.4f}")
assert math.isclose(only_l, 9) and math.isclose(only_num, 16 / 3)
