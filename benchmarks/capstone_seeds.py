"""Chapter 9's recipe trained with several seeds: how much its bits per byte vary from run to run.

    python benchmarks/capstone_seeds.py [--seeds 0 1 2]

Each seed sets both the initial weights and the order of the training windows; everything
else is the recipe in ``netcl_lite/capstone.py``. Seed 0 is the recipe's own seed, the run
the page shows. Each run is scored as the page scores its run (``capstone.measures``: the
whole validation and test texts, windows every ``EVAL_STRIDE`` tokens). The result goes to
``benchmarks/results/capstone_seeds.json``, keyed by ``capstone.recipe_hash()`` and
``capstone.text_digest()`` (the text depends on the Python version): a test and the page's
block fail when either changes and the file was not made again. The seconds are those of
the training steps on the machine named in the file, under the load it had then.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import tempfile
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "capstone_seeds.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args()
    if len(set(args.seeds)) < 3:
        ap.error("give at least 3 distinct seeds: a spread needs them")

    from netcl_lite import capstone
    from netcl_lite.core.device import manager
    from netcl_lite.nn import DecoderLM
    from netcl_lite.text import BPETokenizer

    queue = manager.default().queue
    d = capstone.data()
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            folder = Path(tmp) / f"seed-{seed}"
            capstone._train_into(folder, d, queue, progress=True, seed=seed)
            tok = BPETokenizer.load(folder / "tokenizer.json")
            log = json.loads((folder / "log.json").read_text(encoding="utf-8"))
            model = DecoderLM.from_pretrained(folder, queue=queue)
            train_ids, held = capstone._stored_ids(folder, tok, d)
            run = capstone.Run(model, tok, d, train_ids, held, log, folder)
            bpb = {split: capstone.bits_per_byte(model, capstone.split_ids(run, split), tok,
                                                 capstone.TRAINING.block_size, stride=capstone.EVAL_STRIDE)
                   for split in ("validation", "test")}      # as capstone.measures scores the page's run
            runs[str(seed)] = {**bpb, "train_seconds": log["train"][-1]["seconds"]}
            print(f"seed {seed}: validation {runs[str(seed)]['validation']:.4f}, "
                  f"test {runs[str(seed)]['test']:.4f} bits per byte, "
                  f"{runs[str(seed)]['train_seconds']:.0f} s of training steps", flush=True)
    summary = {split: {"mean": statistics.mean(r[split] for r in runs.values()),
                       "sd": statistics.stdev(r[split] for r in runs.values())}
               for split in ("validation", "test")}
    out = {"recipe_hash": capstone.recipe_hash(),
           "text_sha256": capstone.text_digest(d),     # the three splits, as the page checks them
           "machine": capstone.machine(queue),
           "date": datetime.date.today().isoformat(),
           "seeds": runs, **summary}
    RESULTS.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    for split in ("validation", "test"):
        print(f"{split}: {summary[split]['mean']:.4f} ± {summary[split]['sd']:.4f} bits per byte")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
