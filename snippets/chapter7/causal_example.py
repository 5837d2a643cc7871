import numpy as np

from netcl_lite import ops

Q = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
K = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
V = np.array([[10.0, 1.0], [20.0, 2.0], [30.0, 3.0]])

# One call on the OpenCL device: scores, causal mask, row softmax, weights @ V.
out, weights = ops.attention(Q, K, V, causal=True, return_weights=True)

np.set_printoptions(precision=3, suppress=True)
print("scaled scores QK^T/sqrt(2):")
print(Q @ K.T / np.sqrt(2))
print("attention weights A:")
print(weights)
print("output O = A V:")
print(out)

# Each row of A sums to 1, and nothing flows from the future.
assert np.allclose(weights.sum(axis=1), 1.0)
assert np.all(np.triu(weights, k=1) == 0.0)
