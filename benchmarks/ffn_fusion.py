"""Chapter 9's training step with its feed-forward layers fused against the same step with them apart,
alternating in one process.

    python benchmarks/ffn_fusion.py [--rounds 12 --steps 5]

"fused" is the step as the library runs it: ``FeedForward`` calls ``autograd.swiglu_linear`` (gate,
up and SwiGLU in one launch; backward, SwiGLU's gradients and x's gradient in one launch,
``ops.swiglu_input_grad``). "apart" is the same recipe (``profile_step.build_step``, same seed) with
``FeedForward`` patched to the composition it replaced: ``linear(swiglu(linear(x, W1), linear(x, W3)),
W2)``, whose backward runs SwiGLU's gradients as a pass and x's gradient as two products. Each step is
recorded on its first call and replayed after it, as ``train`` runs it. The rounds alternate which
runs first; each round runs ``--steps`` steps of each and charges each its wall time (median of the
burst) and the process's CPU time (PoCL's workers and the host thread, per step). Reported: medians
over rounds, and the per-round ratio fused / apart of each. Both run in one process in the same
minutes, so load from other work falls on both; on a shared machine the CPU ratio is the figure to
read; ``under_load`` marks a run whose load average exceeded the CPU count. Writes
``benchmarks/results/ffn_fusion.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernels import pocl_target  # noqa: E402
from machine import cpu_name  # noqa: E402
from profile_step import build_step  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "ffn_fusion.json"


def alternating_rounds(steps: dict, rounds: int, per_round: int) -> tuple[dict, dict]:
    """(wall, cpu): per name of ``steps`` (callables), per round, the median wall ms of a burst of
    ``per_round`` calls and the process's CPU ms per call; round r starts at the r-th name (mod their
    count) and goes round in order, so each takes its turn going first."""
    names = list(steps)
    wall = {name: [] for name in names}
    cpu = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times, began_cpu = [], time.process_time()
            for _ in range(per_round):
                began = time.perf_counter()
                steps[name]()
                times.append(time.perf_counter() - began)
            cpu[name].append((time.process_time() - began_cpu) / per_round * 1e3)
            wall[name].append(statistics.median(times) * 1e3)
    return wall, cpu



def apart(self, x, residual=None):
    """FeedForward's forward as three nodes (the composition ``swiglu_linear`` replaced)."""
    from netcl_lite import autograd as ag
    from netcl_lite.nn.transformer import _input

    x = _input(x, self.dim, queue=self.queue)
    p = self._params
    return ag.linear(ag.swiglu(ag.linear(x, p["w1"]), ag.linear(x, p["w3"])), p["w2"], residual)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.rounds < 1 or args.steps < 1:
        raise ValueError("--rounds and --steps must be >= 1")

    import netcl_lite as nl
    from netcl_lite.nn.transformer import FeedForward

    device = nl.device()
    steps = {"fused": build_step(device.queue)[0]}
    fused_call = FeedForward.__call__
    FeedForward.__call__ = apart
    try:
        steps["apart"] = build_step(device.queue)[0]
        for _ in range(3):                      # records the apart step with the patch in place
            steps["apart"]()
    finally:
        FeedForward.__call__ = fused_call
    for _ in range(3):
        steps["fused"]()
    losses = {name: step() for name, step in steps.items()}

    load_before = os.getloadavg()[0]
    wall, cpu = alternating_rounds({"apart": steps["apart"], "fused": steps["fused"]}, args.rounds, args.steps)
    load_after = os.getloadavg()[0]
    ratio = {"wall": [f / a for f, a in zip(wall["fused"], wall["apart"])],
             "cpu": [f / a for f, a in zip(cpu["fused"], cpu["apart"])]}
    report = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": device.name, "cpu": cpu_name(), "pocl_target": pocl_target(device.cl_device),
        "cpus": os.cpu_count(), "loadavg_1min_before_after": [round(load_before, 2), round(load_after, 2)],
        "under_load": max(load_before, load_after) > (os.cpu_count() or 1),    # other work shared the cores
        "rounds": args.rounds, "steps_per_round": args.steps,
        "statistic": "medians over rounds; a round's wall figure is the median step of its burst, its CPU "
                     "figure the burst's process CPU per step; ratios fused / apart per round",
        "loss_after_warmup": losses,
        "median": {"wall_ms": {k: statistics.median(v) for k, v in wall.items()},
                   "cpu_ms": {k: statistics.median(v) for k, v in cpu.items()},
                   "ratio_wall": statistics.median(ratio["wall"]), "ratio_cpu": statistics.median(ratio["cpu"])},
        "per_round": {"wall_ms": wall, "cpu_ms": cpu, "ratio": ratio},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    med = report["median"]
    print(f"{device.name} ({report['cpu']}, PoCL target {report['pocl_target']}); load "
          f"{report['loadavg_1min_before_after']}; {args.rounds} rounds of {args.steps} steps each")
    print(f"wall ms: fused {med['wall_ms']['fused']:.1f}, apart {med['wall_ms']['apart']:.1f}; "
          f"ratio {med['ratio_wall']:.3f} (rounds {min(ratio['wall']):.3f}-{max(ratio['wall']):.3f})")
    print(f"CPU ms:  fused {med['cpu_ms']['fused']:.1f}, apart {med['cpu_ms']['apart']:.1f}; "
          f"ratio {med['ratio_cpu']:.3f} (rounds {min(ratio['cpu']):.3f}-{max(ratio['cpu']):.3f})")


if __name__ == "__main__":
    main()
