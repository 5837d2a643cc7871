"""Chapter 9's recipe table: the committed recipe against variants of its schedule, on validation.

    python benchmarks/capstone_recipes.py [--seeds 0 1 2] [--only NAME ...] [--resume]

Each variant changes only ``capstone.TRAINING``'s schedule (the same data, tokenizer and model
shape) and is trained with every seed given (the initial weights and the windows' order), the
same seeds for every row, so that a row's difference from the committed recipe can be taken
seed by seed (paired). Each run is scored as the page scores its run on the validation split:
the whole validation text, windows every ``EVAL_STRIDE`` tokens. The test split is not read.
Runs are deterministic, so the bits per byte do not depend on the machine's load; the seconds do.

Writes ``benchmarks/results/capstone_recipes.json`` after every run (``--resume`` keeps the runs
already there when the recipe, the text and the rows are the same): per row and seed the
validation bits per byte, per row their mean and sample standard deviation, and per variant
the mean and sample standard deviation of its per-seed differences from the committed recipe
(and the same for every pair of rows), and whether a two-sided paired t-test at the 5 % level
tells the difference from seed noise (with 3 seeds: |mean| > 4.30 · sd / sqrt(3)). ``--resume`` with every run already there trains
nothing and only writes the summary again.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import statistics
import tempfile
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "capstone_recipes.json"
COMMITTED = "committed"

#: the two-sided 5 % point of Student's t with 2 degrees of freedom, for 3 paired seeds: its
#: distribution function is 1/2 + t / (2 sqrt(2 + t^2)), so t = q sqrt(2 / (1 - q^2)) at q = 0.95
T_CRITICAL_3_SEEDS = 0.95 * math.sqrt(2 / (1 - 0.95 ** 2))


def separated(difference: dict) -> bool | None:
    """Whether a paired difference over 3 seeds is told apart from seed noise by a two-sided paired
    t-test at the 5 % level: |mean| > T_CRITICAL_3_SEEDS · sd / sqrt(3). None for another seed count."""
    n = len(difference["differences"])
    if n != 3:
        return None
    return abs(difference["mean"]) > T_CRITICAL_3_SEEDS * difference["sd"] / math.sqrt(n)


def variants(training) -> dict:
    """name: TrainConfig, the committed recipe first."""
    after_warmup = training.max_steps - training.warmup_steps
    return {
        COMMITTED: training,
        "decay over the last 20 %": dataclasses.replace(training, decay_steps=round(0.2 * after_warmup)),
        "a straight line to 0 from the end of warmup": dataclasses.replace(training, decay_steps=0),
        "a cosine to a tenth of the peak": dataclasses.replace(training, decay="cosine", decay_steps=0,
                                                               min_lr=training.learning_rate / 10),
        "a cosine to 0": dataclasses.replace(training, decay="cosine", decay_steps=0, min_lr=0.0),
    }


def _paired(runs: dict, name: str, base: str, seeds: list) -> dict:
    """Row ``name`` minus row ``base`` seed by seed, with the mean and sample sd of the differences."""
    diff = {s: runs[name]["validation"][s] - runs[base]["validation"][s] for s in seeds}
    out = {"differences": diff, "mean": statistics.mean(diff.values()),
           "sd": statistics.stdev(diff.values()) if len(diff) > 1 else None}
    return {**out, "separated_at_5_percent": separated(out) if out["sd"] else None}


def summary(runs: dict) -> dict:
    """Per row: mean and sample sd of its seeds' bits per byte; per variant: the per-seed differences
    from the committed row (variant − committed) with their mean and sample sd; the same for every
    pair of rows (later row − earlier row, in the table's order). Over the seeds every row has."""
    seeds = sorted(set.intersection(*(set(r["validation"]) for r in runs.values())), key=int)
    rows = {}
    for name, row in runs.items():
        values = [row["validation"][s] for s in seeds]
        rows[name] = {"mean": statistics.mean(values), "sd": statistics.stdev(values) if len(values) > 1 else None}
    names = list(runs)
    paired = {name: _paired(runs, name, COMMITTED, seeds) for name in names if name != COMMITTED and COMMITTED in runs}
    pairs = {f"{b} − {a}": _paired(runs, b, a, seeds) for i, a in enumerate(names) for b in names[i + 1:]}
    return {"seeds_in_summary": [int(s) for s in seeds], "rows": rows, "paired_with_committed": paired,
            "paired_between_rows": pairs}


def main() -> None:
    from netcl_lite import capstone
    from netcl_lite.core.device import manager
    from netcl_lite.nn import DecoderLM
    from netcl_lite.text import BPETokenizer

    table = variants(capstone.TRAINING)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--only", nargs="+", choices=sorted(table), default=sorted(table))
    ap.add_argument("--resume", action="store_true", help="keep the runs the results file already holds")
    args = ap.parse_args()
    queue = manager.default().queue
    d = capstone.data()
    configs = {name: dataclasses.asdict(table[name]) for name in table if name in args.only}
    out = {"recipe_hash": capstone.recipe_hash(), "text_sha256": capstone.text_digest(d),
           "machine": capstone.machine(queue), "date": datetime.date.today().isoformat(),
           "seeds": args.seeds, "configs": configs, "runs": {}}
    if args.resume and RESULTS.is_file():
        old = json.loads(RESULTS.read_text(encoding="utf-8"))
        if all(old.get(k) == out[k] for k in ("recipe_hash", "text_sha256", "configs")):
            out["runs"], out["date"], out["machine"] = old["runs"], old["date"], old["machine"]
    print(f"machine: {out['machine']}; recipe {out['recipe_hash']}, text {out['text_sha256']}")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:                       # seed by seed: an interrupted run leaves whole pairs
            for name in configs:
                row = out["runs"].setdefault(name, {"validation": {}, "train_seconds": {}})
                if str(seed) in row["validation"]:
                    continue
                folder = Path(tmp) / "run"
                capstone._train_into(folder, d, queue, progress=False, seed=seed, training=table[name],
                                     curve=False)
                tok = BPETokenizer.load(folder / "tokenizer.json")
                model = DecoderLM.from_pretrained(folder, queue=queue)
                ids = capstone._ids(tok, d.validation_text)
                bpb = capstone.bits_per_byte(model, ids, tok, table[name].block_size, stride=capstone.EVAL_STRIDE)
                log = json.loads((folder / "log.json").read_text(encoding="utf-8"))
                row["validation"][str(seed)] = bpb
                out["date"], out["machine"] = datetime.date.today().isoformat(), capstone.machine(queue)
                row["train_seconds"][str(seed)] = log["train"][-1]["seconds"]
                if len(out["runs"]) == len(configs) and all(r["validation"] for r in out["runs"].values()):
                    out.update(summary(out["runs"]))
                RESULTS.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
                print(f"| {name} | seed {seed} | {bpb:.4f} | {row['train_seconds'][str(seed)]:.0f} s |", flush=True)
    out.update(summary(out["runs"]))
    RESULTS.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    for name, row in out["rows"].items():
        diff = out["paired_with_committed"].get(name)
        paired = f"; − committed {diff['mean']:+.4f} ± {diff['sd']:.4f}" if diff else ""
        print(f"{name}: {row['mean']:.4f} ± {row['sd']:.4f}{paired}")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
