import math

scores, values = [2.0, 0.0, 4.0], [1.0, 5.0, 3.0]

# The dense answer, to check your hand computation against.
weights = [math.exp(s) for s in scores]
print(f"dense output {sum(w * v for w, v in zip(weights, values)) / sum(weights):.4f}")

# Your turn: stream the keys one at a time, keeping (m, l, a), and print the
# state after each key. Start from m = -inf, l = 0, a = 0.
