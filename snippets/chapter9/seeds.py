import json
import math
from pathlib import Path

from netcl_lite import capstone

# benchmarks/capstone_seeds.py trains the recipe once per seed and writes this file.
seeds = json.loads(Path("benchmarks/results/capstone_seeds.json").read_text())
assert seeds["recipe_hash"] == capstone.recipe_hash(), "rerun capstone_seeds.py"
runs = seeds["seeds"]
print(f"{len(runs)} seeds ({', '.join(runs)}), trained on {seeds['machine']}:")
for split in ("validation", "test"):
    values = ", ".join(f"{r[split]:.4f}" for r in runs.values())
    print(f"  {split:10s} {seeds[split]['mean']:.4f} ± {seeds[split]['sd']:.4f}"
          f" bits per byte ({values})")
m = capstone.measures(capstone.run())
ours = m["test"]["model"]
same = math.isclose(ours, runs["0"]["test"], rel_tol=1e-9)
print(f"this build's run, seed {capstone.TRAINING.seed}: {ours:.4f} on test,"
      + (" the same as seed 0 above" if same else f" against {runs['0']['test']:.4f}"
         " for seed 0 above (other arithmetic on this device)"))
