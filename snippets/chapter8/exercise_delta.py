import numpy as np

rng = np.random.default_rng(0)
T, d = 6, 4
s = rng.standard_normal((T, T))
p = np.exp(s - s.max(1, keepdims=True))
p /= p.sum(1, keepdims=True)
v, dout = rng.standard_normal((T, d)), rng.standard_normal((T, d))
o = p @ v
dp = dout @ v.T
print("sum_j A_ij dA_ij == dO_i . O_i for every row:",
      np.allclose((p * dp).sum(1), (dout * o).sum(1)))
