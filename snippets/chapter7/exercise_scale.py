import numpy as np

rng = np.random.default_rng(0)
d, sigma = 64, 2.0
q = rng.normal(0.0, sigma, (200_000, d))
k = rng.normal(0.0, sigma, (200_000, d))
dots = (q * k).sum(axis=1)
print(f"Var(q.k) / (d sigma^4)          = {dots.var() / (d * sigma**4):.2f}")
print(f"Var(q.k / (sigma^2 sqrt(d)))    = {(dots / (sigma**2 * np.sqrt(d))).var():.2f}")
print(f"Var(q.k / sqrt(d)), the usual   = {(dots / np.sqrt(d)).var():.2f}")
