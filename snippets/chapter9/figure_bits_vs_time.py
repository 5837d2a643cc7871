"""Chapter 9: the model's held-out bits per byte against training time, beside primed xz and PPMd."""

import math
import sys

import matplotlib.pyplot as plt

from netcl_lite import capstone
from netcl_lite.train import eval_windows

run = capstone.run()
cfg, log = capstone.TRAINING, run.log
m = capstone.held_out_measures(run)
# The evaluations during training cover the first eval_windows held-out windows:
# their targets spell this many bytes.
_, targets = eval_windows(run.held_out_ids, cfg.block_size)
window_bytes = len(run.tokenizer.decode_bytes(targets[: cfg.eval_windows].ravel().tolist()))
tokens = targets[: cfg.eval_windows].size
seconds = {r["step"]: r["seconds"] for r in log["train"]}
t = [seconds.get(e["step"], 0.0) for e in log["eval"]]
bpb = [e["loss"] / math.log(2) * tokens / window_bytes for e in log["eval"]]

fig, ax = plt.subplots(figsize=(6.4, 3.6), facecolor="white")
ax.plot(t, bpb, "o-", color="#303f9f", label=f"DecoderLM, first {cfg.eval_windows} held-out windows")
ax.plot([t[-1]], [m["model"]], "s", color="#1b5e20", label="DecoderLM, whole held-out text")
for name, color in (("lzma", "#e65100"), ("ppmd", "#6a1b9a")):
    label = "xz -9e" if name == "lzma" else f"PPMd order {m['primed']['ppmd order']}"
    ax.axhline(m["primed"][name], color=color, linestyle="--", linewidth=1.2, label=f"{label}, primed")
ax.set_ylim(min(m["primed"]["ppmd"], m["model"]) - 0.2, max(3.5, m["primed"]["lzma"] + 0.5))
ax.set_xlabel("seconds of training")
ax.set_ylabel("held-out bits per byte")
ax.legend(frameon=False, fontsize=8)
ax.grid(alpha=0.3)
alt = (f"Held-out bits per byte against seconds of training: the model falls to {bpb[-1]:.2f} on the first "
       f"{cfg.eval_windows} windows after {t[-1]:.0f} s and codes the whole held-out text at {m['model']:.3f}, "
       f"against {m['primed']['lzma']:.3f} for primed xz and {m['primed']['ppmd']:.3f} for primed PPMd")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight")
