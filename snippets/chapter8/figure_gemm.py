"""Chapter 8: GEMM GFLOP/s, ours against its anchors, from the benchmark JSON."""
import sys
from pathlib import Path

import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from report_kernels import GEMM_LABELS, gemm_rows, keyed, load  # noqa: E402

rows = gemm_rows(load())
methods = keyed(rows, suffix="_gflops")
width = 0.8 / len(methods)
fig, ax = plt.subplots(figsize=(7, 3.8), facecolor="white")
described = []
for i, m in enumerate(methods):
    have = [(x, r) for x, r in enumerate(rows) if m + "_gflops" in r]
    xs = [x + (i - (len(methods) - 1) / 2) * width for x, _ in have]
    bars = ax.bar(xs, [r[m + "_gflops"] for _, r in have], width, label=GEMM_LABELS.get(m, m))
    ax.bar_label(bars, fmt="%.0f", fontsize=8)
    for bar, (_, r) in zip(bars.patches, have):
        bar.set_gid(f"{m}-{r['n']}")
    described += [f"{GEMM_LABELS.get(m, m)} {r[m + '_gflops']:.0f} GFLOP/s at n = {r['n']}" for _, r in have]
ax.set_xticks(range(len(rows)), [f"{r['n']}³" for r in rows])
ax.set_xlabel("float32 matrix product, n x n times n x n")
ax.set_ylabel("GFLOP/s (median)")
ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside the bars
alt = "GEMM throughput from benchmarks/results/kernels.json: " + "; ".join(described) + "."
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight")
