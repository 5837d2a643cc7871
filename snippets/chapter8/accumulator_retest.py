import math

# One query, two keys with scores 0 and log(3), scalar values 2 and 10,
# streamed one key per tile. The running state is (m, l, a): the maximum so
# far, the normalizer sum exp(score - m) and the accumulator sum exp(score - m) * value.
scores, values = [0.0, math.log(3.0)], [2.0, 10.0]


def stream(rescale_l=True, rescale_a=True):
    m, l, a = -math.inf, 0.0, 0.0
    for s, v in zip(scores, values):
        m_new = max(m, s)
        alpha = math.exp(
            m - m_new
        )  # shrinks the old state when the maximum rises
        l = (alpha if rescale_l else 1.0) * l + math.exp(s - m_new)
        a = (alpha if rescale_a else 1.0) * a + math.exp(s - m_new) * v
        m = m_new
        print(
            f"  after key with score {s:.4f}: m = {m:.4f}, l = {l:.4f}, a = {a:.4f}"
        )
    return a / l


dense = sum(math.exp(s) * v for s, v in zip(scores, values)) / sum(
    math.exp(s) for s in scores
)
print("both accumulators rescaled:")
out = stream()
print(f"streamed output {out:.4f}, dense weighted mean {dense:.4f}")
print(f"only l rescaled -> {stream(rescale_a=False):.4f}")
print(f"only a rescaled -> {stream(rescale_l=False):.4f}")
assert math.isclose(out, 8.0) and math.isclose(dense, 8.0)
