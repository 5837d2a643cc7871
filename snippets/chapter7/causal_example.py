import numpy as np

import netcl_lite as nl

Q = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
K = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
V = np.array([[10.0, 1.0], [20.0, 2.0], [30.0, 3.0]])
np.set_printoptions(precision=3, suppress=True)

# Every stage is an OpenCL kernel; NumPy arrays go in and come out.
S = nl.ops.matmul(Q, K, transpose_b=True)          # raw scores Q K^T
Z = nl.ops.scale(S, 1 / np.sqrt(2))                # divided by sqrt(d_k)
L = nl.ops.apply_mask(Z, causal=True)              # -inf above the diagonal
E = nl.ops.exp(L)                                  # e^-inf = 0
sums = nl.ops.sum(E, axis=-1)                      # one normalizer per row
A = nl.ops.softmax(Z, causal=True)                 # the fused kernel
O = nl.ops.matmul(A, V)

print("raw scores QK^T:", S, sep="\n")
print("masked logits QK^T/sqrt(2) + M:", L, sep="\n")
print("exponentials:", E, sep="\n")
print("row sums:", sums)
print(f"row 1 as a ratio: 1 : {E[1, 1] / E[1, 0]:.2f}")
print("weights A = exponentials / row sums:", A, sep="\n")
print("output O = A V:", O, sep="\n")

# The fused softmax kernel equals the stages; one attention call
# equals them all; and nothing flows from the future.
assert np.allclose(A, E / sums[:, None], atol=1e-6)
assert np.allclose(O, nl.ops.attention(Q, K, V, causal=True), atol=1e-5)
assert np.all(np.triu(A, k=1) == 0.0)
