import math

import numpy as np

from netcl_lite import capstone

HEURISTIC = 20  # tokens per parameter for a compute-optimal run (Hoffmann et al.)
BELOW = 5  # this run must see fewer than HEURISTIC / BELOW tokens per parameter
SPLIT = 0.1  # the gap is split only where this share of the training tokens is undrawn
run = capstone.run()
log, curve = run.log, capstone.training_curve(run)
per_pass = len(run.train_ids) / log["tokens_per_step"]  # steps in one pass
# At each checkpoint the run scored the same windows, spread evenly over the
# training text and over the validation text, in nats per token; "drawn" is the
# share of those training tokens that some batch had already held by then.


def gap(c):
    return c["validation_loss"] - c["train_loss"]


def split(c):
    """The gap as other text (validation against training tokens not yet drawn)
    plus memorized (what the drawn tokens' lower loss takes off the training loss)."""
    other = c["validation_loss"] - c["train_loss_undrawn"]
    memorized = c["drawn"] * (c["train_loss_undrawn"] - c["train_loss_drawn"])
    return other, memorized


first = [c for c in curve if c["step"] <= per_pass][-1]  # the first pass's last
later = [c for c in curve if 1 - c["drawn"] >= SPLIT][-1]  # the last split measured
end = curve[-1]
print(" step  passes  drawn  validation  training    gap  other text  memorized")
for c in curve:
    if c["step"] % 120 and c is not first and c is not later:
        continue
    row = (f"{c['step']:5d}  {c['step'] / per_pass:6.2f}  {c['drawn']:5.0%}"
           f"  {c['validation_loss']:10.3f}  {c['train_loss']:8.3f}  {gap(c):5.3f}")
    if 0 < c["drawn"] <= 1 - SPLIT:
        assert math.isclose(sum(split(c)), gap(c), abs_tol=1e-9)
        row += "  {:10.3f}  {:9.3f}".format(*split(c))
    print(row)

print(f"the first pass's last checkpoint is step {first['step']}; the split is"
      f" measured up to step {later['step']},"
      f" where {1 - later['drawn']:.0%} was undrawn")
assert gap(end) - gap(first) > gap(first), "most of the final gap opens later"
assert split(first)[0] > 0, "validation costs more than unseen training text"
assert split(first)[0] > split(first)[1], "in the first pass it is mostly other text"
assert split(later)[1] > abs(split(later)[0]), "later it is mostly memorized"
assert split(later)[1] > split(first)[1], "memorization grew in the later passes"

# The last checkpoint is the finished model: the same windows scored again.
T, n = capstone.TRAINING.block_size, capstone.GAP_WINDOWS
for name, ids, key in (("training", run.train_ids, "train_loss"),
                       ("validation", capstone.split_ids(run, "validation"),
                        "validation_loss")):
    x, y, _ = capstone.spread_windows(ids, n, T)
    loss = float(run.model.loss(x, y).numpy())
    assert math.isclose(loss, end[key], rel_tol=1e-4)
print(f"finished model: validation perplexity {math.exp(end['validation_loss']):.1f}"
      f" against {math.exp(end['train_loss']):.1f} on training text")
last = np.mean([r["loss"] for r in log["train"][-10:]])
print(f"the last 10 training batches, each before its update: {last:.3f}")

params, seen = log["parameters"], len(log["train"]) * log["tokens_per_step"]
print(f"{seen:,} tokens seen for {params:,} parameters: {seen / params:.1f} per"
      f" parameter ({len(run.train_ids) / params:.1f} distinct)")
assert seen / params < HEURISTIC / BELOW, "fewer than a fifth of 20 per parameter"
