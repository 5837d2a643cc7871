import math

scores, values = [2.0, 0.0, 4.0], [1.0, 5.0, 3.0]
m, l, a = -math.inf, 0.0, 0.0
for s, v in zip(scores, values):
    m_new = max(m, s)
    alpha = math.exp(m - m_new)  # 0 for the first key, 1 when the maximum stays
    l = alpha * l + math.exp(s - m_new)
    a = alpha * a + math.exp(s - m_new) * v
    m = m_new
    print(f"after score {s}: m = {m}, l = {l:.4f}, a = {a:.4f}")
weights = [math.exp(x) for x in scores]
dense = sum(w * v for w, v in zip(weights, values)) / sum(weights)
print(f"streamed {a / l:.4f}, dense {dense:.4f}")
assert math.isclose(a / l, dense)
