from netcl_lite import capstone

# Trains the recipe (a few minutes on two cores), or loads the identical run if
# this exact code already trained it on this device.
run = capstone.run()
train, evals = run.log["train"], run.log["eval"]
tokens = len(train) * run.log["tokens_per_step"]
seconds = train[-1]["seconds"]
print(f"{len(train)} steps, {tokens:,} tokens, {run.log['parameters']:,} parameters")
print(f"{seconds:.0f} s of training steps: {tokens / seconds:,.0f} tokens/s on")
print(f"  {capstone.machine()},")
load = capstone.training_load(run)
print("  1-minute load average {:.1f} when training began, {:.1f} when it ended"
      .format(*load))
budget = capstone.TRAINING_BUDGET_SECONDS
print(f"  (the recipe's sizing target: {budget} s on the slowest"
      " machine the tests run on)")
print(f"{tokens / len(run.train_ids):.1f} passes over the {len(run.train_ids):,}"
      " training tokens")
print(" step  train loss (mean of 10)  validation loss")
for e in evals:
    recent = [r["loss"] for r in train if e["step"] - 10 < r["step"] <= e["step"]]
    shown = f"{sum(recent) / len(recent):.3f}" if recent else "  -  "
    print(f"{e['step']:5d}  {shown:>23s}  {e['loss']:15.3f}")
assert evals[-1]["loss"] < evals[0]["loss"] - 2.0  # it learned
assert all(b["loss"] < a["loss"] for a, b in zip(evals, evals[1:])), \
    "the validation loss fell at every evaluation"
