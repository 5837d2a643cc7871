"""The recipe's model (width 128) trained on another batch shape for the committed recipe's seconds.

    python benchmarks/batch_recipe.py [--shapes 64x64 32x128] [--seeds 0] [--lr-scale 1.0]

For the planners of the recipe (issue 56); nothing here changes the recipe. A batch shape is
``WINDOWSxTOKENS`` (the recipe's is 32x64); a shape with longer windows trains a model whose
``max_position_embeddings`` is its window.

1. Each shape's step costs ``R`` times the recipe's step: the median over rounds of the per-round
   ratio of process CPU per step, as ``step_shapes.py`` measured it in one process beside the
   recipe's row (``--ratios-from``, by default ``results/step_shapes_batches_quiet.json``), or
   ``--step-ratio SHAPE=R``. For the recipe's seconds it trains ``960 / R`` steps; warmup and decay
   scale with the steps (20 of 960 warmup, the last 30 % after warmup a straight line to 0); the peak
   rate is the recipe's times ``--lr-scale``.
2. Each run is ``capstone._train_into`` (seed ``--seeds``, no measures between steps), scored on
   validation as the page scores its run (``capstone.bits_per_byte``, the recipe's 64-token windows
   every ``EVAL_STRIDE``) and, for longer windows, also with the model's own window. The recipe's own
   seeds come from ``results/capstone_seeds.json`` when its recipe hash is the present one. The test
   split is not read.

Runs are deterministic, so the bits per byte do not depend on the load; seconds do.
Writes ``benchmarks/results/batch_recipe.json`` (rows are added to an existing file with the same recipe hash).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import resource
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import cpu_name  # noqa: E402

HERE = Path(__file__).resolve().parent / "results"
RESULTS = HERE / "batch_recipe.json"
RATIOS = HERE / "step_shapes_batches_quiet.json"
SEEDS = HERE / "capstone_seeds.json"


def parse_shape(text: str) -> tuple[int, int]:
    """'64x64' -> (64, 64): windows per step, tokens per window."""
    try:
        batch, block = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"a shape is WINDOWSxTOKENS such as 64x64, got {text!r}") from None
    if batch < 1 or block < 1:
        raise ValueError(f"a shape's windows and tokens must be >= 1, got {text!r}")
    return batch, block


def shape_ratio(path: Path, batch: int, block: int) -> tuple[float, dict]:
    """Median per-round process-CPU ratio to the recipe's step for width 128 at (batch, block), and the row."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for row in data["rows"]:
        if (row["width"], row["batch_size"], row["block_size"]) == (128, batch, block):
            return statistics.median(row["step_cpu_ms_over_committed_per_round"]), row
    raise ValueError(f"{path.name} holds no width-128 row for {batch}x{block}: give --step-ratio {batch}x{block}=R "
                     f"or run step_shapes.py --widths 128 --batches {batch}x{block}")


def scaled_schedule(training, steps: int, learning_rate: float, batch: int, block: int):
    """The recipe's schedule stretched to ``steps``: warmup and decay the same shares of the steps."""
    warmup = max(1, round(training.warmup_steps * steps / training.max_steps))
    share = training.decay_steps / (training.max_steps - training.warmup_steps)
    return dataclasses.replace(training, max_steps=steps, warmup_steps=warmup,
                               decay_steps=round(share * (steps - warmup)), learning_rate=learning_rate,
                               batch_size=batch, block_size=block)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", default=["64x64", "32x128"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--lr-scale", type=float, nargs="+", default=[1.0])
    ap.add_argument("--ratios-from", type=Path, default=RATIOS)
    ap.add_argument("--step-ratio", nargs="*", default=[], help="SHAPE=R, overriding --ratios-from")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if any(not s > 0 for s in args.lr_scale):
        raise ValueError("--lr-scale values must be > 0")
    given = {}
    for item in args.step_ratio:
        shape, _, value = item.partition("=")
        given[parse_shape(shape)] = float(value)
        if not given[parse_shape(shape)] > 0:
            raise ValueError(f"--step-ratio {item}: R must be > 0")

    from netcl_lite import capstone
    from netcl_lite.core.device import manager
    from netcl_lite.nn import DecoderLM
    from netcl_lite.text import BPETokenizer

    queue = manager.default().queue
    training = capstone.TRAINING
    d = capstone.data()
    report = {"rows": []}
    if args.out.exists():
        old = json.loads(args.out.read_text(encoding="utf-8"))
        if old.get("recipe_hash") == capstone.recipe_hash():
            report = old
    seeds = json.loads(SEEDS.read_text(encoding="utf-8"))
    if seeds["recipe_hash"] == capstone.recipe_hash():
        report["recipe_seeds_validation"] = {k: v["validation"] for k, v in seeds["seeds"].items()}
        report["recipe_seeds_train_seconds"] = {k: v["train_seconds"] for k, v in seeds["seeds"].items()}
    report.update({"recipe_hash": capstone.recipe_hash(), "text_sha256": capstone.text_digest(d),
                   "cpu": cpu_name(), "cpus": os.cpu_count(), "ratios_from": args.ratios_from.name})

    original = dict(capstone.MODEL)
    for text in args.shapes:
        batch, block = parse_shape(text)
        if (batch, block) in given:
            ratio, row = given[(batch, block)], None
        else:
            ratio, row = shape_ratio(args.ratios_from, batch, block)
        steps = round(training.max_steps / ratio)
        for scale in args.lr_scale:
            config = scaled_schedule(training, steps, training.learning_rate * scale, batch, block)
            for seed in args.seeds:
                load = [os.getloadavg()[0]]
                with tempfile.TemporaryDirectory() as tmp:
                    folder = Path(tmp) / "run"
                    capstone.MODEL["max_position_embeddings"] = max(block, original["max_position_embeddings"])
                    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
                    try:
                        capstone._train_into(folder, d, queue, progress=False, seed=seed, training=config,
                                             curve=False)
                    finally:
                        capstone.MODEL.clear()
                        capstone.MODEL.update(original)
                    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
                    load.append(os.getloadavg()[0])
                    log = json.loads((folder / "log.json").read_text(encoding="utf-8"))
                    tok = BPETokenizer.load(folder / "tokenizer.json")
                    model = DecoderLM.from_pretrained(folder, queue=queue)
                    ids = capstone._ids(tok, d.validation_text)
                    scores = {"recipe_window": capstone.bits_per_byte(model, ids, tok, training.block_size,
                                                                      stride=capstone.EVAL_STRIDE)}
                    if block != training.block_size:
                        scores["own_window"] = capstone.bits_per_byte(model, ids, tok, block,
                                                                      stride=capstone.EVAL_STRIDE)
                entry = {"shape": f"{batch}x{block}", "seed": seed, "lr_scale": scale,
                         "step_cpu_ratio": ratio, "steps": steps,
                         "training": dataclasses.asdict(config),
                         "step_fraction_per_cpu_s_quiet": row["median"]["fraction_per_cpu_s"] if row else None,
                         "train_seconds_here": log["train"][-1]["seconds"],
                         "process_cpu_s_whole_run": (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
                         "loadavg_1min_before_after": [round(v, 2) for v in load],
                         "validation_bits_per_byte": scores,
                         "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
                report["rows"] = [r for r in report["rows"]
                                  if (r["shape"], r["seed"], r["lr_scale"]) != (entry["shape"], seed, scale)]
                report["rows"].append(entry)
                args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
                print(f"{batch}x{block} lr x{scale} seed {seed}: {steps} steps, validation "
                      + ", ".join(f"{k} {v:.4f}" for k, v in scores.items())
                      + f" bits per byte; {entry['train_seconds_here']:.0f} s of steps, load {load}", flush=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
