"""Chapter 9's training run: training loss per step and validation loss (drawn at build time)."""

import math
import sys

import matplotlib.pyplot as plt
import numpy as np

from netcl_lite import capstone

run = capstone.run()
train, evals = run.log["train"], run.log["eval"]
steps = np.array([r["step"] for r in train])
loss = np.array([r["loss"] for r in train])
smooth = np.convolve(loss, np.ones(10) / 10, mode="valid")

fig, ax = plt.subplots(figsize=(6.4, 3.6), facecolor="white")
ax.plot(steps, loss, color="#9fa8da", linewidth=0.8, label="training batch")
ax.plot(steps[9:], smooth, color="#303f9f", linewidth=1.6, label="training, mean of 10 steps")
ax.plot([e["step"] for e in evals], [e["loss"] for e in evals], "o-", color="#e65100",
        label="validation")
ax.axhline(math.log(run.model.config.vocab_size), color="grey", linestyle=":", linewidth=1,
           label="ln V (uniform guess)")
ax.set_xlabel("step")
ax.set_ylabel("cross-entropy (nats per token)")
ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the data
ax.grid(alpha=0.3)
final = evals[-1]
alt = (f"Training loss per step, its 10-step mean and the validation loss over {steps[-1]} steps: "
       f"validation loss from {evals[0]['loss']:.2f} at step 0 to {final['loss']:.2f} nats per token "
       f"at step {final['step']}, against ln V = {math.log(run.model.config.vocab_size):.2f}")
fig.savefig(sys.argv[1], format="svg", metadata={"Date": None, "Description": alt}, bbox_inches="tight")
