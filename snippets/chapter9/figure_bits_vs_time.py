"""Chapter 9: the model's validation bits per byte against seconds of training, beside the primed coders."""

import math
import sys

import matplotlib.pyplot as plt

from netcl_lite import capstone

run = capstone.run()
valid = capstone.measures(run)["validation"]
curve = capstone.training_curve(run)   # the whole validation text, as measures() scores it
t = [c["seconds"] for c in curve]
bpb = [c["bits_per_byte"] for c in curve]
assert math.isclose(bpb[-1], valid["model"], rel_tol=1e-9)   # the last point is the reported number

coders = {"xz": "xz -9e", "ppmd": f"PPMd order {valid['primed']['ppmd order']}", "zpaq": "zpaq -m5"}
fig, ax = plt.subplots(figsize=(7.2, 4.0), facecolor="white")
ax.plot(t, bpb, "o-", color="#303f9f", markersize=3, label="DecoderLM")
colors = {"xz": "#e65100", "ppmd": "#6a1b9a", "zpaq": "#00796b"}
for name, label in coders.items():
    ax.axhline(valid["primed"][name], color=colors[name], linestyle="--", linewidth=1.1,
               label=f"{label}, primed ({valid['primed'][name]:.3f})")
low = min(min(bpb), *(valid["primed"][n] for n in coders))
ax.set_ylim(low - 0.1, max(bpb) + 0.1)
ax.set_xlabel("seconds of training steps (measures and start-up left out)")
ax.set_ylabel("validation bits per byte")
ax.legend(frameon=False, fontsize=8, loc="upper right")
ax.grid(alpha=0.3)
below = [n for n in coders if valid["model"] < valid["primed"][n]]
alt = (f"Validation bits per byte against seconds of training steps: the model starts at {bpb[0]:.2f} "
       f"and ends at {bpb[-1]:.3f} after {t[-1]:.0f} s, measured {len(curve)} times; the primed coders are "
       f"horizontal lines at " + ", ".join(f"{coders[n]} {valid['primed'][n]:.3f}" for n in coders)
       + f"; the model ends below {', '.join(coders[n] for n in below) or 'none of them'}")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight")
