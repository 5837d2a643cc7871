import math

from netcl_lite import capstone

# benchmarks/capstone_seeds.py trained the recipe once per seed, as run() trains it,
# and committed what it measured; this block reads that file, it trains nothing.
seeds = capstone.seed_results()
assert seeds["recipe_hash"] == capstone.recipe_hash(), "rerun capstone_seeds.py"
# The text depends on the Python version: the file records a digest of the three
# splits it trained and scored on, and this Python's library must give the same.
assert seeds["text_sha256"] == capstone.text_digest(), "rerun capstone_seeds.py"
runs = seeds["seeds"]
print(f"{len(runs)} seeds ({', '.join(runs)}), trained {seeds['date']} on"
      f" {seeds['machine']}; text {seeds['text_sha256']}, as here")
print(f"mean ± sample standard deviation over the n = {len(runs)} seeds:")
for split in ("validation", "test"):
    values = ", ".join(f"{r[split]:.4f}" for r in runs.values())
    print(f"  {split:10s} {seeds[split]['mean']:.4f} ± {seeds[split]['sd']:.4f}"
          f" bits per byte ({values})")
run = capstone.run()
ours = capstone.bits_per_byte(run.model, capstone.split_ids(run, "test"), run.tokenizer,
                              capstone.TRAINING.block_size, stride=capstone.EVAL_STRIDE)
seed = str(capstone.TRAINING.seed)
if math.isclose(ours, runs[seed]["test"], rel_tol=1e-9):
    print(f"this build's run is seed {seed} above: {ours:.4f} on test")
else:
    print(f"this build's run, seed {seed}: {ours:.4f} on test, against"
          f" {runs[seed]['test']:.4f} above (other arithmetic or library code here)")
