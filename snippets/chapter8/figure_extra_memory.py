"""Chapter 8: extra memory of each attention method against T, log-log, from the benchmark JSON."""
import sys
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from report_kernels import ATTENTION_LABELS, attention_rows, keyed, load  # noqa: E402

matplotlib.rcParams["path.simplify"] = False  # keep every measured point in the SVG (the tests read them)
rows = attention_rows(load())
fig, ax = plt.subplots(figsize=(7, 4.2), facecolor="white")
described = []


def measured(m, causal):
    return [(r["T"], r[m + "_extra_bytes"] / 2**20) for r in rows
            if r["causal"] == causal and r.get(m + "_extra_bytes") and m + "_skipped" not in r]


for m in keyed(rows, suffix="_extra_bytes"):
    for causal, style in ((False, "-"), (True, "--")):
        points = measured(m, causal)
        if not points or (causal and points == measured(m, False)):  # a causal line only where it differs
            continue
        label = ATTENTION_LABELS.get(m, m) + (", causal" if causal else "")
        ax.plot(*zip(*points), style, marker="o", label=label, gid=f"{m}-{'causal' if causal else 'full'}")
        (t0, a), (t1, b) = points[0], points[-1]
        described.append(f"{label} {a:.1f} MiB at T = {t0} to {b:.1f} MiB at T = {t1}")
ts = sorted({r["T"] for r in rows})
ax.set_xscale("log", base=2)
ax.set_yscale("log", base=2)
ax.set_xticks(ts, [str(t) for t in ts])
ax.set_xlabel("sequence length T")
ax.set_ylabel("extra memory beyond inputs and output (MiB)")
ax.grid(True, which="major", alpha=0.3)
ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside the data
alt = ("Extra memory of each attention method against sequence length, log-log, from "
       "benchmarks/results/kernels.json: " + "; ".join(described) + ".")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight")
