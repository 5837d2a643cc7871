import math

import numpy as np

from netcl_lite import capstone

run = capstone.run()
cfg, log = capstone.TRAINING, run.log
T, n = cfg.block_size, 64  # 64 windows spread evenly over each text, forward only
losses = {}
for name, ids in (("training", run.train_ids),
                  ("validation", capstone.split_ids(run, "validation"))):
    starts = np.linspace(0, len(ids) - T - 1, n).astype(int)
    x = np.stack([ids[s:s + T] for s in starts])
    y = np.stack([ids[s + 1:s + T + 1] for s in starts])
    losses[name] = float(run.model.loss(x, y).numpy())
    print(f"{name:10s} loss {losses[name]:.3f} nats per token over {y.size:,} tokens")
gap = losses["validation"] - losses["training"]
print(f"gap {gap:.3f} nats: validation perplexity {math.exp(losses['validation']):.1f}"
      f" against {math.exp(losses['training']):.1f} on training text")
last = np.mean([r["loss"] for r in log["train"][-10:]])
print(f"the last 10 training batches, each before its update: {last:.3f}")

params, seen = log["parameters"], len(log["train"]) * log["tokens_per_step"]
print(f"{seen:,} tokens seen for {params:,} parameters: {seen / params:.1f} per"
      f" parameter ({len(run.train_ids) / params:.1f} distinct)")
