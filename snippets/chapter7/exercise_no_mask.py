import numpy as np

from netcl_lite import reference

Q = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
K = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
V = np.array([[10.0, 1.0], [20.0, 2.0], [30.0, 3.0]])
for causal in (True, False):
    out, weights = reference.attention(Q, K, V, causal=causal, return_weights=True)
    print("causal" if causal else "no mask", "weights:")
    print(weights.round(3))
