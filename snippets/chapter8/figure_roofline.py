"""Chapter 8: the roofline in benchmarks/results/roofline.json, kernels as points."""
import json
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

path = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "roofline.json"
report = json.loads(path.read_text())
peak, bw = report["ceiling_gflops"], report["bandwidth_gbs"]
ridge = peak / bw
intensity = np.geomspace(0.5, 4000, 400)
roof = np.minimum(peak, intensity * bw)

fig, ax = plt.subplots(figsize=(7, 4.2), facecolor="white")
ax.loglog(intensity, roof, color="0.2", lw=2)
ax.axvline(ridge, color="0.6", lw=1, ls=":")
ax.text(ridge * 1.15, 1.3, f"ridge {ridge:.1f} FLOP/byte", fontsize=8, color="0.35")
ax.text(0.7, 0.7 * bw / 4, f"memory: {bw:.1f} GB/s x intensity", fontsize=8,
        color="0.25")
ax.text(ridge * 3, peak * 1.25, f"multiply-add ceiling {peak:.0f} GFLOP/s", fontsize=8,
        color="0.25")
labels = {"gemm": "GEMM n = 1024", "dense_attention": "dense attention",
          "flash_attention": "flash attention"}
offsets = {"gemm": (-9, -6), "dense_attention": (9, 0), "flash_attention": (-9, -12)}
described = []
for name, p in report["points"].items():
    color = "C0" if "attention" in name else "C1"
    ax.plot(p["intensity"], p["gflops"], "o", color=color, ms=7)
    ax.annotate(f"{labels[name]}: {p['gflops']:.0f} GFLOP/s",
                (p["intensity"], p["gflops"]), xytext=offsets[name],
                textcoords="offset points", fontsize=8,
                ha="right" if offsets[name][0] < 0 else "left",
                va="top" if offsets[name][1] < 0 else "center")
    described.append(f"{labels[name]} at {p['intensity']:.1f} FLOP/byte runs at "
                     f"{p['gflops']:.0f} GFLOP/s")
ax.set_xlim(0.5, 4000)
ax.set_ylim(1, peak * 2.2)
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
