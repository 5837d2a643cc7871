"""A wider Chapter 9 model trained for the committed recipe's seconds: what it would cost and give.

    python benchmarks/wider_recipe.py [--width 192] [--step-ratio R] [--speed-rounds 3] [--seed 0]

For the planners of the recipe (issue 56, "spend the time saved"); nothing here changes the recipe.
The wider model is the recipe's scaled as ``step_shapes.scaled`` scales it (heads of 32 features,
K/V heads half as many, SwiGLU 2.5 x width), with the committed batch (32 windows of 64 tokens).

1. Its step costs ``R`` times the committed step (``--step-ratio``; by default the median over rounds
   of ``results/step_shapes.json``'s per-round ratio of process CPU per step for that row, measured in
   one process with the committed row). Trained for the committed recipe's seconds it gets ``960 / R`` steps; the
   schedule keeps its shape (20 warmup steps, the peak held, a straight line to 0 over the last 30 %
   of the steps after warmup) and its peak rate unless ``--learning-rate`` gives another; ``--steps``
   trains another number of steps (e.g. the committed width for the whole budget). Within the 300 s budget on the slowest kind, projected as
   ``training_budget.py`` projects the committed recipe (its last projection, times R), it could
   train ``960 x 300 / (projection x R)`` steps.
2. The wider model is trained so (``capstone._train_into``, seed ``--seed``, no measures between
   steps) and scored on validation as the page scores its run (the whole validation text, windows
   every ``EVAL_STRIDE``); the committed recipe's run with the same seed beside it
   (``capstone.run()`` for seed 0, the page's run; another seed trains it here). The test split is
   not read.
3. The compressor's model-only speed (``compression.compress`` / ``decompress`` with ``mix=False``)
   on the validation text, both models, ``--speed-rounds`` interleaved rounds, median kB/s; each
   file is decompressed and compared.

Runs are deterministic, so the bits per byte do not depend on the load; seconds and speeds do.
Writes ``benchmarks/results/wider_recipe.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernels import pocl_target  # noqa: E402
from machine import cpu_name  # noqa: E402
from step_shapes import RESULTS as SHAPES, scaled  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "wider_recipe.json"
BUDGET = Path(__file__).resolve().parent / "results" / "training_budget.json"


def step_ratio(width: int, batch: int, block: int) -> float:
    """Median per-round ratio of (width, batch, block)'s process CPU per step to the committed row's, from
    step_shapes.json (CPU time: on a machine shared with other work, wall-time ratios follow the other jobs)."""
    rows = json.loads(SHAPES.read_text(encoding="utf-8"))["rows"]
    for row in rows:
        if (row["width"], row["batch_size"], row["block_size"]) == (width, batch, block):
            return statistics.median(row["step_cpu_ms_over_committed_per_round"])
    raise ValueError(f"{SHAPES.name} holds no row for width {width}, {batch}x{block}; run step_shapes.py first")


def schedule(training, steps: int):
    """The committed schedule's shape over ``steps`` steps: same warmup, decay over the same share."""
    share = training.decay_steps / (training.max_steps - training.warmup_steps)
    return dataclasses.replace(training, max_steps=steps,
                               decay_steps=round(share * (steps - training.warmup_steps)))


def model_only_speeds(text: bytes, models: dict, rounds: int) -> dict:
    """name -> kB/s of compress and decompress (medians over interleaved rounds), every round's seconds, the
    file's bits per byte; each file decompressed and compared."""
    from netcl_lite import compression as cz

    times = {name: ([], []) for name in models}
    sizes = {}
    for r in range(rounds):
        names = list(models)
        for name in names[r % len(names):] + names[:r % len(names)]:
            model, tok = models[name]
            began = time.perf_counter()
            blob = cz.compress(text, model, tok, mix=False)
            mid = time.perf_counter()
            back = cz.decompress(blob, model, tok)
            times[name][0].append(mid - began)
            times[name][1].append(time.perf_counter() - mid)
            sizes[name] = len(blob)
            if back != text:
                raise RuntimeError(f"{name}: the model-only file did not round-trip")
    return {name: {"compress_kB_s": len(text) / statistics.median(c) / 1e3,
                   "decompress_kB_s": len(text) / statistics.median(d) / 1e3,
                   "compress_s": c, "decompress_s": d, "file_bits_per_byte": 8 * sizes[name] / len(text)}
            for name, (c, d) in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=192)
    ap.add_argument("--step-ratio", type=float, default=None, help="wider step / committed step (default: step_shapes.json)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--speed-rounds", type=int, default=3, help="0: no speeds")
    ap.add_argument("--learning-rate", type=float, default=None, help="the wider model's peak rate (default: the recipe's)")
    ap.add_argument("--steps", type=int, default=None, help="the wider model's steps (default: 960 / the step ratio)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.speed_rounds < 0:
        raise ValueError("--speed-rounds must be >= 0")
    if args.learning_rate is not None and not args.learning_rate > 0:
        raise ValueError("--learning-rate must be > 0")

    from netcl_lite import capstone
    from netcl_lite.core.device import manager
    from netcl_lite.nn import DecoderLM
    from netcl_lite.text import BPETokenizer

    queue = manager.default().queue
    training = capstone.TRAINING
    ratio = args.step_ratio or step_ratio(args.width, training.batch_size, training.block_size)
    if ratio <= 0:
        raise ValueError("--step-ratio must be > 0")
    same_seconds = round(training.max_steps / ratio)
    budget = json.loads(BUDGET.read_text(encoding="utf-8"))["runs"][-1]
    projected = budget["projected_slowest_seconds"]
    within_budget = int(training.max_steps * capstone.TRAINING_BUDGET_SECONDS / (projected * ratio))
    if args.steps is not None and args.steps <= training.warmup_steps:
        raise ValueError(f"--steps must exceed the {training.warmup_steps} warmup steps")
    wide_training = schedule(training, args.steps or same_seconds)
    if args.learning_rate is not None:
        wide_training = dataclasses.replace(wide_training, learning_rate=args.learning_rate)
    d = capstone.data()
    validation_text = d.validation_text

    load = [os.getloadavg()[0]]
    if args.seed == 0:
        committed = capstone.run(queue)
        committed_folder, committed_seconds = committed.directory, committed.log["train"][-1]["seconds"]
    tmp = tempfile.TemporaryDirectory()
    if args.seed != 0:
        committed_folder = Path(tmp.name) / "committed"
        capstone._train_into(committed_folder, d, queue, progress=False, seed=args.seed, curve=False)
        committed_seconds = json.loads((committed_folder / "log.json").read_text())["train"][-1]["seconds"]
    wide_folder = Path(tmp.name) / "wide"
    original = dict(capstone.MODEL)
    capstone.MODEL.update(scaled(args.width))           # model_config reads it; restored below
    try:
        capstone._train_into(wide_folder, d, queue, progress=False, seed=args.seed, training=wide_training,
                             curve=False)
    finally:
        capstone.MODEL.clear()
        capstone.MODEL.update(original)
    wide_log = json.loads((wide_folder / "log.json").read_text())
    wide_seconds = wide_log["train"][-1]["seconds"]
    load.append(os.getloadavg()[0])

    models, scores = {}, {}
    for name, folder in (("committed", committed_folder), (f"width {args.width}", wide_folder)):
        tok = BPETokenizer.load(Path(folder) / "tokenizer.json")
        model = DecoderLM.from_pretrained(folder, queue=queue)
        ids = capstone._ids(tok, validation_text)
        scores[name] = capstone.bits_per_byte(model, ids, tok, training.block_size, stride=capstone.EVAL_STRIDE)
        models[name] = (model, tok)
        print(f"{name}: validation {scores[name]:.4f} bits per byte", flush=True)
    speeds = model_only_speeds(validation_text.encode("utf-8"), models, args.speed_rounds) if args.speed_rounds else {}
    load.append(os.getloadavg()[0])
    tmp.cleanup()

    report = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_name(), "pocl_target": pocl_target(queue.device), "cpus": os.cpu_count(),
        "loadavg_1min_before_training_after_speeds": [round(v, 2) for v in load],
        "under_load": max(load) > (os.cpu_count() or 1),
        "recipe_hash": capstone.recipe_hash(), "text_sha256": capstone.text_digest(d), "seed": args.seed,
        "width": args.width, "model": {**original, **scaled(args.width)},
        "step_ratio": ratio, "step_ratio_source": "--step-ratio" if args.step_ratio else SHAPES.name,
        "committed_steps": training.max_steps, "same_seconds_steps": same_seconds,
        "slowest_kind_projection_committed_s": projected,
        "slowest_kind_projection_wide_960_steps_s": projected * ratio,
        "steps_within_budget_on_slowest_kind": within_budget,
        "wide_training": dataclasses.asdict(wide_training),
        "train_seconds_here": {"committed": committed_seconds, f"width {args.width}": wide_seconds},
        "validation_bits_per_byte": scores,
        "wide_log": {"train_loss_every_50_steps": [(r["step"], r["loss"]) for r in wide_log["train"][::50]],
                     "held_out_curve": wide_log["eval"]},
        "model_only_speed_validation": speeds,
        "speed_rounds": args.speed_rounds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"step ratio {ratio:.2f}: {same_seconds} steps in the committed seconds; {within_budget} within "
          f"{capstone.TRAINING_BUDGET_SECONDS} s on the slowest kind (committed projected {projected:.0f} s)")
    for name in models:
        speed = (f"; model-only {speeds[name]['compress_kB_s']:.1f} kB/s compress, "
                 f"{speeds[name]['decompress_kB_s']:.1f} decompress") if speeds else ""
        print(f"{name}: {scores[name]:.4f} bits per byte{speed}")


if __name__ == "__main__":
    main()
