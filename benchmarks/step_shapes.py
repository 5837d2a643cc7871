"""Chapter 9's training step at shapes around the recipe, each as a fraction of the multiply-add ceiling.

    python benchmarks/step_shapes.py [--widths 128 192 256] [--batches 32x64 64x64 32x128]
                                     [--rounds 5 --steps 4]

What ``step_ceiling.py`` measures for the committed recipe, for a grid of model widths and batch
shapes in one process: the committed shape (width 128, 32 windows of 64 tokens) is one row of the
grid, the anchor the others are read against. A width scales the recipe's model as the recipe is
built (``scaled``): heads of 32 features, half as many K/V heads, a SwiGLU 2.5 times the width; the
layers, the vocabulary and everything else as committed. A batch shape ``BxT`` is B windows of T
tokens (the positions follow T). Each shape's step is ``profile_step.build_step``'s (forward,
loss, backward, clipping, AdamW, the loss and norm read back once, recorded and replayed as
``train`` runs it) on random ids.

Per round, the shapes in turn (the order rotating round by round), each timed right after its own
measure of the ceiling (``fma_ceiling.py``'s kernel: a pause, then a warm burst): a burst of
``--steps`` steps, the median step's wall time, and the process's CPU time per step (PoCL's
workers and the host thread) against the ceiling's work per CPU second. Reported per shape: the
medians over rounds of ms per step, the fraction of the ceiling (6 x product parameters x tokens
per step, as ``step_ceiling.py`` counts it) by wall time and per CPU second, launches per step,
FLOPs per step, and attention's FLOPs (``capstone.step_flops``; not in the fraction) for scale.
On a machine shared with other work the times move with the load; the fractions per round move
less. Writes ``benchmarks/results/step_shapes.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernels import pocl_target  # noqa: E402
from fma_ceiling import Ceiling  # noqa: E402
from machine import cpu_name  # noqa: E402
from profile_step import build_step, matmul_flops_per_step  # noqa: E402
from step_ceiling import ceiling_round, launches_per_step  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "step_shapes.json"
HEAD_WIDTH = 32          # the recipe's 128 / 4 heads
FFN_RATIO = 2.5          # the recipe's 320 / 128


def scaled(width: int) -> dict:
    """LMConfig changes for the recipe's model at ``width``: heads of HEAD_WIDTH features, half as
    many K/V heads (grouped-query attention as committed), SwiGLU width FFN_RATIO x width."""
    if width % (2 * HEAD_WIDTH):
        raise ValueError(f"width must be a multiple of {2 * HEAD_WIDTH} (heads of {HEAD_WIDTH}, K/V heads half "
                         f"as many), got {width}")
    heads = width // HEAD_WIDTH
    return {"hidden_size": width, "num_attention_heads": heads, "num_key_value_heads": heads // 2,
            "intermediate_size": int(FFN_RATIO * width)}


def batch_shape(text: str) -> tuple[int, int]:
    """``"32x64"`` -> (32, 64): windows per step and tokens per window."""
    try:
        b, t = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a batch shape is BxT, e.g. 32x64; got {text!r}") from None
    if b < 1 or t < 1:
        raise argparse.ArgumentTypeError(f"B and T must be >= 1, got {text!r}")
    return b, t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[128, 192, 256])
    ap.add_argument("--batches", type=batch_shape, nargs="+", default=[(32, 64), (64, 64), (32, 128)])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=4, help="training steps per shape and round (their median is the round's)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.rounds < 1 or args.steps < 1:
        raise ValueError("--rounds and --steps must be >= 1")

    import netcl_lite as nl
    from netcl_lite import capstone
    from netcl_lite.core.kernels import vector_lanes

    device = nl.device()
    queue = device.queue
    ceiling = Ceiling(queue, vector_lanes(device.cl_device), "fma_ceiling")
    committed = (capstone.MODEL["hidden_size"], capstone.TRAINING.batch_size, capstone.TRAINING.block_size)
    grid = [(w, b, t) for w in args.widths for b, t in args.batches]
    if committed not in grid:
        grid.insert(0, committed)                       # the anchor is always measured
    shapes = {}
    for w, b, t in grid:
        step, model, tokens = build_step(queue, model_changes=scaled(w), batch_size=b, block_size=t)
        for _ in range(3):
            step()                                      # builds, codegen, the recording, pools
        launches = launches_per_step(queue, step)
        shapes[(w, b, t)] = {"step": step, "model": model, "tokens": tokens, "launches": launches,
                             "flops": matmul_flops_per_step(model, tokens)}
        print(f"built width {w}, {b}x{t}: {model.num_parameters():,} parameters, {launches} launches", flush=True)

    load_before = os.getloadavg()[0]
    per_round = {s: {} for s in shapes}
    order = list(shapes)
    for r in range(args.rounds):
        for s in order[r % len(order):] + order[:r % len(order)]:
            entry = shapes[s]
            for key, value in ceiling_round(queue, ceiling, entry["step"], entry["flops"], args.steps).items():
                per_round[s].setdefault(key, []).append(value)
        print(f"round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.1f}", flush=True)
    load_after = os.getloadavg()[0]

    rows = []
    for (w, b, t), entry in shapes.items():
        rec = per_round[(w, b, t)]
        med = {k: statistics.median(v) for k, v in rec.items()}
        rows.append({
            "width": w, "batch_size": b, "block_size": t, "committed": (w, b, t) == committed,
            "model": {k: v for k, v in entry["model"].config.to_dict().items()
                      if k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                               "num_key_value_heads", "vocab_size")},
            "parameters": entry["model"].num_parameters(), "tokens_per_step": entry["tokens"],
            "flops_per_step": entry["flops"],
            "attention_flops_per_step": sum(v for k, v in capstone.step_flops(entry["model"].config, b, t).items()
                                            if k.startswith("attention")),
            "launches_per_step": entry["launches"],
            "median": med,
            "step_ms_over_committed_per_round": [m / a for m, a in zip(rec["step_ms"], per_round[committed]["step_ms"])],
            "step_cpu_ms_over_committed_per_round": [m / a for m, a in zip(rec["step_cpu_ms"],
                                                                           per_round[committed]["step_cpu_ms"])],
            "per_round": rec,
        })
        row = rows[-1]
        print(f"width {w:3d} {b:3d}x{t:<3d} {entry['model'].num_parameters():>9,} params {entry['launches']:3d} launches "
              f"{entry['flops'] / 1e9:6.2f} GFLOP  {med['step_ms']:7.1f} ms "
              f"({statistics.median(row['step_ms_over_committed_per_round']):4.2f}x), CPU {med['step_cpu_ms']:7.1f} ms "
              f"({statistics.median(row['step_cpu_ms_over_committed_per_round']):4.2f}x)  "
              f"fraction {med['fraction']:.1%} (rounds {min(rec['fraction']):.1%}-{max(rec['fraction']):.1%})  "
              f"per CPU s {med['fraction_per_cpu_s']:.1%} (rounds {min(rec['fraction_per_cpu_s']):.1%}-"
              f"{max(rec['fraction_per_cpu_s']):.1%})", flush=True)
    report = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": device.name, "cpu": cpu_name(), "pocl_target": pocl_target(device.cl_device),
        "lanes": ceiling.lanes, "cpus": os.cpu_count(),
        "loadavg_1min_before_after": [round(load_before, 2), round(load_after, 2)],
        "under_load": max(load_before, load_after) > (os.cpu_count() or 1),
        "rounds": args.rounds, "steps_per_round": args.steps,
        "scaling": f"heads of {HEAD_WIDTH} features, K/V heads half as many, SwiGLU {FFN_RATIO} x width",
        "statistic": "median over rounds; a round's step is the median of its burst, its fraction uses the "
                     "ceiling measured just before it; the shapes' order rotates round by round",
        "flops": "6 x parameters in products x tokens (attention's products apart, not in the fraction)",
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
