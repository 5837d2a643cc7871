"""Chapter 8: the roofline in benchmarks/results/roofline.json, kernels as points."""
import json
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

bench = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(bench))
from roofline import traffic  # noqa: E402  (Chapter 8's traffic model, as the benchmark applies it)

report = json.loads((bench / "results" / "roofline.json").read_text())
for name, p in report["points"].items():   # a results file from an older model is refused, not drawn
    if (p["flops"], p["bytes"]) != traffic(name, **p["shape"]):
        raise ValueError(f"roofline.json's {name} point disagrees with the traffic model: rerun benchmarks/roofline.py")
peak, bw = report["ceiling_gflops"], report["bandwidth_gbs"]
ridge = peak / bw
intensity = np.geomspace(0.5, 4000, 400)
roof = np.minimum(peak, intensity * bw)

fig, ax = plt.subplots(figsize=(7, 4.2), facecolor="white")
ax.loglog(intensity, roof, color="0.2", lw=2)
ax.axvline(ridge, color="0.6", lw=1, ls=":")
# the two roof labels sit well above the ceiling, where no point (at most at its roof) and no
# point's number can reach them, whatever the measurement
LABEL_Y = peak * 1.9
ax.text(ridge * 0.87, LABEL_Y, f"ridge {ridge:.1f} FLOP/byte", fontsize=8,
        color="0.35", ha="right")
ax.text(0.7, 0.7 * bw / 4, f"memory: {bw:.1f} GB/s x intensity", fontsize=8,
        color="0.25")
ax.text(ridge * 3, LABEL_Y, f"multiply-add ceiling {peak:.0f} GFLOP/s", fontsize=8,
        color="0.25")
labels = {"gemm": "GEMM, n = 1024", "dense_attention": "dense attention, T = 2048",
          "flash_attention": "flash attention, T = 2048"}
described, key = [], []
for tag, (name, p) in enumerate(report["points"].items(), start=1):
    color = "C0" if "attention" in name else "C1"
    ax.plot(p["intensity"], p["gflops"], "o", color=color, ms=7)
    ax.annotate(str(tag), (p["intensity"], p["gflops"]), xytext=(5, 4),
                textcoords="offset points", fontsize=9, fontweight="bold")
    key.append(f"{tag}  {labels[name]}: {p['intensity']:.1f} FLOP/byte, "
               f"{p['gflops']:.0f} GFLOP/s")
    described.append(f"{labels[name]} at {p['intensity']:.1f} FLOP/byte runs at "
                     f"{p['gflops']:.0f} GFLOP/s")
# the key sits in the empty corner under the ceiling and right of the memory roof
ax.text(0.98, 0.04, "\n".join(key), transform=ax.transAxes, ha="right", va="bottom",
        fontsize=8, multialignment="left",
        bbox=dict(boxstyle="round", facecolor="white", edgecolor="0.8"))
ax.set_xlim(0.5, 4000)
ax.set_ylim(0.1, peak * 4)
ax.set_xlabel("arithmetic intensity (FLOPs per byte of main-memory traffic, float32)")
ax.set_ylabel("GFLOP/s (median)")
ax.set_title(f"{report['cpu']}, PoCL target {report['pocl_target']}, "
             f"{report['threads']} cores", fontsize=9)
alt = (f"A roofline measured on {report['cpu']}: a multiply-add ceiling of "
       f"{peak:.0f} GFLOP/s and a copy bandwidth of {bw:.1f} GB/s meet at "
       f"{ridge:.1f} FLOPs per byte; "
       + "; ".join(described) + ".")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt},
            bbox_inches="tight")
