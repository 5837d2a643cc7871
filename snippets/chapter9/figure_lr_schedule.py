"""Chapter 9's learning-rate schedule: linear warmup, then the recipe's decay down to min_lr (drawn at build time)."""

import sys

import matplotlib.pyplot as plt

from netcl_lite import capstone
from netcl_lite.train import learning_rate_at

cfg = capstone.TRAINING
steps = range(cfg.max_steps + 1)
lr = [learning_rate_at(s, cfg) for s in steps]

fig, ax = plt.subplots(figsize=(6.4, 2.8), facecolor="white")
ax.plot(list(steps), lr, color="#303f9f", linewidth=1.6)
ax.axvline(cfg.warmup_steps, color="grey", linestyle=":", linewidth=1)
ax.annotate(f"warmup ends, step {cfg.warmup_steps}", (cfg.warmup_steps, cfg.learning_rate),
            xytext=(8, -14), textcoords="offset points", fontsize=9)
ax.set_xlabel("step")
ax.set_ylabel("learning rate")
ax.grid(alpha=0.3)
decay_from = cfg.max_steps - (cfg.decay_steps or cfg.max_steps - cfg.warmup_steps)
if decay_from > cfg.warmup_steps:
    ax.axvline(decay_from, color="grey", linestyle=":", linewidth=1)
    ax.annotate(f"decay starts, step {decay_from}", (decay_from, cfg.learning_rate / 2),
                xytext=(-8, 0), textcoords="offset points", fontsize=9, ha="right", va="center")
held = f"holds until step {decay_from}, " if decay_from > cfg.warmup_steps else ""
alt = (f"Learning rate against step: a linear rise from {lr[0]:.1e} to {cfg.learning_rate:.0e} over the first "
       f"{cfg.warmup_steps} steps, {held}then a {'straight-line' if cfg.decay == 'linear' else 'cosine'} descent to "
       f"{cfg.min_lr:g} at step {cfg.max_steps}")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight")
