"""Chapter 9's learning-rate schedule: linear warmup, then a cosine down to min_lr (drawn at build time)."""

import sys

import matplotlib.pyplot as plt

from netcl_lite import capstone
from netcl_lite.optim import cosine_schedule

cfg = capstone.TRAINING
steps = range(cfg.max_steps + 1)
lr = [cosine_schedule(s, max_lr=cfg.learning_rate, warmup_steps=cfg.warmup_steps,
                      total_steps=cfg.max_steps, min_lr=cfg.min_lr) for s in steps]

fig, ax = plt.subplots(figsize=(6.4, 2.8), facecolor="white")
ax.plot(list(steps), lr, color="#303f9f", linewidth=1.6)
ax.axvline(cfg.warmup_steps, color="grey", linestyle=":", linewidth=1)
ax.annotate(f"warmup ends, step {cfg.warmup_steps}", (cfg.warmup_steps, cfg.learning_rate),
            xytext=(8, -14), textcoords="offset points", fontsize=9)
ax.set_xlabel("step")
ax.set_ylabel("learning rate")
ax.grid(alpha=0.3)
alt = (f"Learning rate against step: a linear rise from {lr[0]:.1e} to {cfg.learning_rate:.0e} over the first "
       f"{cfg.warmup_steps} steps, then a cosine descent to {cfg.min_lr:.0e} at step {cfg.max_steps}")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight")
