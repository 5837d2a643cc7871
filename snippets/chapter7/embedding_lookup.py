import numpy as np

from netcl_lite import ops

rng = np.random.default_rng(0)
vocab, d_model = 10_000, 8
# The embedding matrix E, V x D (learned in a real model, random here).
E = rng.standard_normal((vocab, d_model)).astype(np.float32)

ids = np.array([142, 8931, 25])
x = ops.embedding(E, ids)  # an OpenCL gather: row t of E for each id t
print("ids", ids.tolist(), "-> vectors of shape", x.shape)
assert np.array_equal(x, E[ids])  # a lookup is exactly row selection
