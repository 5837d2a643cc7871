# Step 3 — a compute budget under C ≈ 6 N N_tok (N parameters, N_tok tokens)
import math

from netcl_lite import scaling

RATIO = 20  # tokens per parameter: a heuristic from one study's regime

print(f"{'compute C (FLOPs)':>17} {'N (billions)':>12}", end=" ")
print(f"{'N_tok (billions)':>16}  N_tok/N")
for compute in [1e21, 1e23, 1e24, 1e25]:
    n, d = scaling.allocation(compute, tokens_per_parameter=RATIO)
    recomputed = scaling.training_compute(n, d)  # 6 N N_tok
    assert math.isclose(recomputed, compute, rel_tol=1e-12)
    print(f"{compute:17.0e} {n / 1e9:12.1f} {d / 1e9:16.0f} {d / n:8.0f}")

n1, d1 = scaling.allocation(1e21, tokens_per_parameter=RATIO)
n2, d2 = scaling.allocation(1e23, tokens_per_parameter=RATIO)
print(f"x100 compute -> N x{n2 / n1:.0f}, N_tok x{d2 / d1:.0f}")
assert math.isclose(n2 / n1, 10) and math.isclose(d2 / d1, 10)

# Descriptive arithmetic on published sizes: a ratio is not a verdict.
# GPT-3 (Brown et al., 2020), Chinchilla (Hoffmann et al., 2022), Llama 3 8B (2024)
published = [(175e9, 300e9), (70e9, 1.4e12), (8e9, 15e12)]
for n, d in published:
    ratio, compute = d / n, scaling.training_compute(n, d)
    print(f"N {n / 1e9:>3.0f}B, N_tok {d / 1e12:>4.1f}T: "
          f"{ratio:6.1f} tokens/parameter, C ~ {compute:.2e} FLOPs")
ratios = [d / n for n, d in published]
assert 1e3 <= max(ratios) / min(ratios) < 1e4, \
    "the ratios span three orders of magnitude"

# Invented costs, one currency, per million output units served. Both
# models are assumed good enough for the task.
large = {"train": 100, "per_unit": 4}
small = {"train": 160, "per_unit": 1}
units = scaling.break_even(large["train"], small["train"],
                           large["per_unit"], small["per_unit"])
print(f"break-even at {units:g} million units")
assert units == 20
cost = {}
for millions in [10, 20, 100]:
    a = scaling.lifetime_cost(**large, units=millions)
    b = scaling.lifetime_cost(**small, units=millions)
    cost[millions] = a, b
    print(f"{millions:>3} million units: large {a:>3}, small {b:>3}")
assert cost[10][1] > cost[10][0], "at 10 million units the small one has not paid back"
assert abs(cost[100][1] / cost[100][0] - 0.5) < 0.05, \
    "at 100 million units the small model costs about half as much"
