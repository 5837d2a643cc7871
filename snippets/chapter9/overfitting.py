import math

from netcl_lite import capstone
from netcl_lite.train import evaluate

run = capstone.run()
cfg, log = capstone.TRAINING, run.log
n = 64  # the same number of windows from each side, forward only
losses = {}
for name, ids in (("training", run.train_ids), ("held-out", run.held_out_ids)):
    nats, count = evaluate(run.model, ids, cfg.block_size, cfg.batch_size, max_windows=n)
    losses[name] = nats / count
    print(f"{name:9s} loss {losses[name]:.3f} nats per token over {count:,} tokens")
print(f"gap {losses['held-out'] - losses['training']:.3f} nats:"
      f" held-out perplexity {math.exp(losses['held-out']):.1f}"
      f" against {math.exp(losses['training']):.1f} on training text")

params, seen = log["parameters"], len(log["train"]) * log["tokens_per_step"]
print(f"{seen:,} tokens seen for {params:,} parameters: {seen / params:.1f} per parameter"
      f" ({len(run.train_ids) / params:.1f} distinct)")
