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
        normal = math.erfc(sigmas / math.sqrt(2))  # P(|z| > sigmas), z standard normal
        # Exactly: given k, q.k is normal with variance s = |k|^2, and s has a
        # chi-square distribution with d degrees of freedom: average the tail over s.
        s = np.linspace(1.0, 8.0 * d, 20_001)
        log_density = ((d / 2 - 1) * np.log(s) - s / 2
                       - d / 2 * math.log(2) - math.lgamma(d / 2))
        tail = np.array([math.erfc(35 / math.sqrt(2 * v)) for v in s])
        exact = np.trapezoid(np.exp(log_density) * tail, s)
        se = math.sqrt(exact * (1 - exact) / n)  # standard error of a share of n pairs
        print(f"{'':11}|q.k| > 35 ({sigmas:.2f} std): {beyond:.2%} of pairs;",
              f"exact {exact:.2%}; normal {normal:.2%}")
        assert beyond < 0.01, "beyond 35 lies a fraction of a percent of pairs"
        assert abs(beyond - exact) < 4 * se, "the measured share matches the exact one"
        assert exact > normal, "the exact tail is a little heavier than the normal one"
