import math

import numpy as np

rng = np.random.default_rng(0)
n = 100_000

# Unit-variance, independent components: the assumptions of the derivation.
for d in (8, 64, 128, 512):
    q = rng.standard_normal((n, d))
    k = rng.standard_normal((n, d))
    dots = np.einsum("nd,nd->n", q, k)
    print(
        f"d_k={d:3d}  Var(q.k)/d_k = {dots.var() / d:.3f}   std = {dots.std():5.2f}   "
        f"Var(q.k/sqrt(d_k)) = {(dots / np.sqrt(d)).var():.3f}"
    )
    if d == 128:
        beyond = np.mean(np.abs(dots) > 35)
        sigmas = 35 / np.sqrt(d)
        # P(|z| > sigmas) for a standard normal z
        normal_tail = math.erfc(sigmas / math.sqrt(2))
        print(f"{'':11}|q.k| > 35 ({sigmas:.2f} std):", end=" ")
        print(f"{beyond:.2%} of pairs; normal tail {normal_tail:.2%}")
        assert beyond < 0.01  # rare: a fraction of a percent, not routine
