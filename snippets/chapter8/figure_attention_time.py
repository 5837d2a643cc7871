"""Chapter 8: attention forward time against T, log-log, from benchmarks/results/kernels.json."""
import sys
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from report_kernels import ATTENTION_LABELS, attention_rows, keyed, load  # noqa: E402

matplotlib.rcParams["path.simplify"] = False  # keep every measured point in the SVG (the tests read them)
rows = attention_rows(load())
methods = keyed(rows, suffix="_ms")
fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True, facecolor="white")
described = []
for ax, causal in zip(axes, (False, True)):
    panel = "causal" if causal else "full"
    for m in methods:
        points = [(r["T"], r[m + "_ms"]) for r in rows if r["causal"] == causal and m + "_ms" in r]
        if not points:
            continue
        label = ATTENTION_LABELS.get(m, m)
        ax.plot(*zip(*points), marker="o", label=label, gid=f"{m}-{panel}")
        (t0, ms0), (t1, ms1) = points[0], points[-1]
        described.append(f"{label}{' causal' if causal else ''} {ms0:.1f} ms at T = {t0} to {ms1:.1f} ms at T = {t1}")
    ts = sorted({r["T"] for r in rows})
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(ts, [str(t) for t in ts])
    ax.set_xlabel("sequence length T")
    ax.set_title("causal mask" if causal else "no mask")
    ax.grid(True, which="major", alpha=0.3)
axes[0].set_ylabel("forward time (ms, median)")
r0 = rows[0]
fig.suptitle(f"attention forward, B={r0['B']}, H={r0['H']}, d={r0['d']}")
# One legend for both panels, under them: inside either it would cover curves.
handles, labels = axes[0].get_legend_handles_labels()
fig.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0.0),
           ncol=min(len(labels), 4), frameon=False)
alt = ("Attention forward time against sequence length, log-log, from benchmarks/results/kernels.json: "
       + "; ".join(described) + ".")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight")
