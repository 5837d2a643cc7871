# Step 2 — decoding knobs on one distribution
import math

import numpy as np

from netcl_lite import sampling

# A made-up next-token distribution, not logits from a model.
logits = np.log([0.4, 0.3, 0.2, 0.1])


def entropy(p):
    """In nats; a one-hot distribution gives exactly 0."""
    return sum(x * math.log(1 / x) for x in p if x > 0)


settings = {
    "baseline": {},
    "cold τ=0.5": {"temperature": 0.5},
    "hot τ=2": {"temperature": 2.0},
    "k=2": {"top_k": 2},
    "p=0.6": {"top_p": 0.6},
    "k=2 then p=0.6": {"top_k": 2, "top_p": 0.6},
    "k=2 then p=0.55": {"top_k": 2, "top_p": 0.55},
}
print(f"{'setting':<16} {'distribution':<30} entropy (nats)")
h, p = {}, {}
for name, kwargs in settings.items():
    p[name] = sampling.distribution(logits, **kwargs)
    h[name] = entropy(p[name])
    assert math.isclose(p[name].sum(), 1.0)
    print(f"{name:<16} {str(np.round(p[name], 3).tolist()):<30} {h[name]:.3f}")
assert h["cold τ=0.5"] < h["baseline"] < h["hot τ=2"], \
    "cooling lowers the entropy and heating raises it"
for name in ("cold τ=0.5", "hot τ=2"):
    assert list(np.argsort(-p[name])) == [0, 1, 2, 3], "temperature keeps the ranking"

# The order: temperature -> top-k -> renormalize -> top-p -> renormalize.
dist = sampling.distribution
assert np.allclose(dist(logits, top_k=2), [4 / 7, 3 / 7, 0, 0])
# 4/7 already reaches 0.55, so the nucleus keeps one token:
assert np.allclose(dist(logits, top_k=2, top_p=0.55), [1, 0, 0, 0]), \
    "k=2 then p=0.55 keeps only the first token"
# Equal logits: exactly k tokens, lower index first.
assert np.allclose(dist([0.0, 0.0, 0.0], top_k=2), [0.5, 0.5, 0])
assert np.allclose(dist(logits, top_p=1.0), [0.4, 0.3, 0.2, 0.1])

try:
    dist(logits, temperature=0)
except ValueError as err:
    print("temperature 0:", err)
print("greedy picks token", sampling.greedy(logits))

# Two steps over tokens A=0, B=1: greedy is best per step, not per sequence.
BOS = 9
next_token = {(BOS,): [0.6, 0.4],        # first token
              (BOS, 0): [0.51, 0.49],  # after A
              (BOS, 1): [0.99, 0.01]}  # after B
paths = {a + b: next_token[(BOS,)][i] * next_token[(BOS, i)][j]
         for i, a in enumerate("AB") for j, b in enumerate("AB")}
print("joint probabilities:", {k: round(v, 4) for k, v in paths.items()})
first = sampling.greedy(np.log(next_token[(BOS,)]))
second = sampling.greedy(np.log(next_token[(BOS, first)]))
greedy_path = "AB"[first] + "AB"[second]
best = max(paths, key=paths.get)
print(f"greedy {greedy_path} {paths[greedy_path]:.3f}", end=" ")
print(f"vs best joint {best} {paths[best]:.3f}")
assert (greedy_path, best) == ("AA", "BA") and paths["BA"] > paths["AA"], \
    "the best joint sequence is not the greedy one"

beams = sampling.beam_search(lambda prefix: np.log(next_token[prefix]),
                             beam_width=2, max_steps=2, bos=BOS)
top = beams[0]
found = "".join("AB"[t] for t in top.tokens)
print(f"beam width 2 finds {found} {math.exp(top.log_prob):.3f}")
assert top.tokens == (1, 0), "beam width 2 finds the best joint sequence"
