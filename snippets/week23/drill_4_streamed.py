# Step 4 — streamed attention is exact attention
import math

import numpy as np

from netcl_lite import budget, ops


def stream(scores, values, block=1, rescale_l=True, rescale_a=True):
    """One query's online softmax over keys, `block` keys per tile.

    Plain float64 Python. scores: one number per key; values: one row of
    numbers per key. Returns the output row and the (m, l, a) state after
    each tile: the running maximum, the normalizer and the accumulator.
    """
    m, l, a = -math.inf, 0.0, [0.0] * len(values[0])
    states = []
    for start in range(0, len(scores), block):
        tile = scores[start : start + block]
        rows = values[start : start + block]
        m_new = max(m, *tile)
        # moves the old sums to the new maximum
        shrink = math.exp(m - m_new)
        # this tile's weights, relative to the new maximum
        w = [math.exp(s - m_new) for s in tile]
        l = (shrink if rescale_l else 1.0) * l + sum(w)
        a = [
            (shrink if rescale_a else 1.0) * ac
            + sum(wi * row[c] for wi, row in zip(w, rows))
            for c, ac in enumerate(a)
        ]
        m = m_new
        states.append((m, l, a))
    return [ac / l for ac in a], states


def dense(scores, values):
    """The same query's softmax over all scores at once, then the mean."""
    top = max(scores)
    w = [math.exp(s - top) for s in scores]
    return [
        sum(wi * row[c] for wi, row in zip(w, values)) / sum(w)
        for c in range(len(values[0]))
    ]


# (a) 7 queries, 9 keys, head width 4, values of width 3. In float64 the streamed
#     recurrence and the dense softmax agree to 1e-12 for every block size; the
#     OpenCL kernel (float32) does the same to float32 rounding.
rng = np.random.default_rng(17)
Q, K = rng.normal(size=(7, 4)), rng.normal(size=(9, 4))
V = rng.normal(size=(9, 3))
S = [  # the 7 x 9 scores, row by row
    [sum(a * b for a, b in zip(q, k)) / math.sqrt(len(q)) for k in K.tolist()]
    for q in Q.tolist()
]
reference = [dense(row, V.tolist()) for row in S]
Q32, K32, V32 = (x.astype(np.float32) for x in (Q, K, V))
dense32 = ops.attention(Q32, K32, V32)  # stores the 7 x 9 weights on the device
for block in [1, 2, 4, 9, 12]:  # 12 > 9 keys: one partial tile
    streamed = [stream(row, V.tolist(), block)[0] for row in S]
    delta = float(np.abs(np.array(streamed) - np.array(reference)).max())
    assert delta < 1e-12, "float64: streamed equals dense to 1e-12 for every block size"
    flash32 = ops.flash_attention(Q32, K32, V32, block_size=block)  # never 7 x 9
    gap32 = float(np.abs(flash32 - dense32).max())
    # float32 rounding; part (c) shows what a missed rescale costs
    assert gap32 < 1e-6, "the kernel matches dense attention to float32 rounding"
    print(f"key block {block:>2}: float64 max |streamed - dense| = {delta:.1e}")
    print(f"              float32 kernel max |flash - dense| = {gap32:.1e}")

# (b) One fp16 score matrix vs Q, K, V and O, at head width 128.
d, fp16 = 128, 2
print(
    f"{'T':>6} {'score matrix (B)':>16} {'Q,K,V,O (B)':>12}"
    f" {'avoided write+read (B)':>23}"
)
for T in [512, 2048, 8192, 32768]:
    scores = budget.score_matrix_bytes(T, bytes_per_element=fp16)
    qkvo = 4 * T * d * fp16
    print(f"{T:>6} {scores:>16,} {qkvo:>12,} {2 * scores:>23,}")
largest = budget.score_matrix_bytes(32768, bytes_per_element=fp16)
assert largest == 32768**2 * 2 == 2_147_483_648
print("T = 32768:", budget.format_bytes(largest))

# (c) The accumulator retest: one query, scores 0 and log 3, values 2
#     and 10, one key per tile.
scores, values = [0.0, math.log(3)], [[2.0], [10.0]]
(out,), states = stream(scores, values)
for tile, (m, l, (a,)) in enumerate(states, 1):
    print(f"after tile {tile}: m = {m:.4f}, l = {l:.4f}, a = {a:.4f}")
flat = [(m, l, a) for m, l, (a,) in states]
assert np.allclose(flat, [(0, 1, 2), (math.log(3), 4 / 3, 32 / 3)])
(dense_out,) = dense(scores, values)  # (1 * 2 + 3 * 10) / 4
print(f"streamed output {out:.4f}, dense output {dense_out:.4f}")
assert math.isclose(out, 8) and math.isclose(dense_out, 8)
(only_l,), _ = stream(scores, values, rescale_a=False)
(only_a,), _ = stream(scores, values, rescale_l=False)
print(
    f"rescale only the normalizer l: {only_l:.4f};",
    f"only the accumulator a: {only_a:.4f}",
)
assert math.isclose(only_l, 9) and math.isclose(only_a, 16 / 3)
