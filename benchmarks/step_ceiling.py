"""Chapter 9's training step as a fraction of the machine's multiply-add ceiling, measured together.

    python benchmarks/step_ceiling.py [--rounds 7 --steps 8]

The step is the capstone recipe's (``netcl_lite.capstone``: its model, B=32 windows of T=64
tokens, forward, loss, backward, global-norm clipping, AdamW) as ``netcl_lite.train.train`` runs it,
the loss and the norm read back once at its end (``profile_step.build_step``). Its work is
counted as 6 x (parameters in products) x tokens FLOPs, the usual estimate (attention's scores,
the norms and the optimizer are not in it).

Each round times, in turn, ``fma_ceiling.py``'s multiply-add kernel (a pause, then a warm burst)
and a burst of ``--steps`` training steps back to back (the median step of the burst); the
fraction of the ceiling is taken per round, from the two measured moments apart, and reported
as the median over rounds, with the launches per step and the machine: CPU (name, family, model),
PoCL's compiler target, vector lanes, the load average before and after. On a machine shared with
other work the times move with the load; the fraction moves less, since a loaded moment slows both.
Beside it, the same in CPU time (``fraction_per_cpu_s``: the step's products' FLOPs per CPU second of
the process, PoCL's workers and the host thread, over the ceiling kernel's): what the step does
with the cores it gets, which a loaded machine disturbs least; on a quiet machine the two agree
but for the time the cores sit idle within a step. Writes ``benchmarks/results/step_ceiling.json``.
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
from bench_kernels import pocl_target, timed  # noqa: E402
from fma_ceiling import Ceiling  # noqa: E402
from machine import cpu_name  # noqa: E402
from profile_step import build_step, cpu_seconds, matmul_flops_per_step  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "step_ceiling.json"


def launches_per_step(queue, step) -> int:
    """Kernel launches one call of ``step`` enqueues (counted by the stream's profiling list)."""
    from netcl_lite.core.stream import stream_of

    stream = stream_of(queue)
    stream.profile = []
    try:
        step()
        return len(stream.profile)
    finally:
        stream.profile = None


def ceiling_round(queue, ceiling, step, flops: float, steps: int) -> dict:
    """One round: the ceiling (a pause, a warm burst; then its work per CPU second), a pause, then
    ``steps`` calls of ``step`` back to back. The step's wall time is the burst's median, its CPU time
    the process's per step; fractions are ``flops`` per step over the ceiling's, by wall time and per
    CPU second."""
    peak = ceiling.flops() / timed(ceiling.run)
    peak_cpu = ceiling.flops() / cpu_seconds(queue, ceiling.run, 3)
    time.sleep(0.3)
    times, cpu = [], time.process_time()
    for _ in range(steps):
        began = time.perf_counter()
        step()
        times.append(time.perf_counter() - began)
    step_cpu = (time.process_time() - cpu) / steps
    sec = statistics.median(times)
    return {"ceiling_gflops": peak / 1e9, "step_ms": sec * 1e3, "step_gflops": flops / sec / 1e9,
            "fraction": flops / sec / peak, "ceiling_gflop_per_cpu_s": peak_cpu / 1e9,
            "step_cpu_ms": step_cpu * 1e3, "fraction_per_cpu_s": flops / step_cpu / peak_cpu}



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=8, help="training steps per round (their median is the round's)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()

    import netcl_lite as nl
    from netcl_lite.core.kernels import vector_lanes

    device = nl.device()
    queue = device.queue
    ceiling = Ceiling(queue, vector_lanes(device.cl_device), "fma_ceiling")
    step, model, tokens = build_step(queue)
    for _ in range(3):
        step()                                            # builds, codegen, buffer pools
    launches = launches_per_step(queue, step)
    flops = matmul_flops_per_step(model, tokens)

    load_before = os.getloadavg()[0]
    rounds = {"ceiling_gflops": [], "step_ms": [], "step_gflops": [], "fraction": [],
              "ceiling_gflop_per_cpu_s": [], "step_cpu_ms": [], "fraction_per_cpu_s": []}
    for _ in range(args.rounds):
        for key, value in ceiling_round(queue, ceiling, step, flops, args.steps).items():
            rounds[key].append(value)
    load_after = os.getloadavg()[0]
    med = {k: statistics.median(v) for k, v in rounds.items()}
    report = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": device.name, "cpu": cpu_name(), "pocl_target": pocl_target(device.cl_device),
        "lanes": ceiling.lanes, "cpus": os.cpu_count(),
        "loadavg_1min_before_after": [round(load_before, 2), round(load_after, 2)],
        "model_parameters": model.num_parameters(), "tokens_per_step": tokens,
        "flops_per_step": flops, "launches_per_step": launches,
        "rounds": args.rounds, "steps_per_round": args.steps,
        "statistic": "median over rounds; a round's step is the median of its burst, its fraction uses "
                     "the ceiling measured just before it",
        "median": med, "per_round": rounds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{device.name} ({report['cpu']}, PoCL target {report['pocl_target']}, {ceiling.lanes} lanes); "
          f"load {report['loadavg_1min_before_after']}; {args.rounds} rounds of {args.steps} steps")
    print(f"step: {model.num_parameters():,} parameters, {tokens} tokens, {flops / 1e9:.2f} GFLOP "
          f"(6 x product parameters x tokens), {launches} launches")
    print(f"ceiling {med['ceiling_gflops']:.0f} GFLOP/s (rounds {min(rounds['ceiling_gflops']):.0f}-"
          f"{max(rounds['ceiling_gflops']):.0f}); step {med['step_ms']:.1f} ms, {med['step_gflops']:.0f} GFLOP/s; "
          f"fraction of the ceiling {med['fraction']:.1%} (rounds {min(rounds['fraction']):.1%}-"
          f"{max(rounds['fraction']):.1%})")
    print(f"per CPU second: ceiling {med['ceiling_gflop_per_cpu_s']:.0f} GFLOP, step {med['step_cpu_ms']:.1f} ms of CPU, "
          f"{med['fraction_per_cpu_s']:.1%} of the ceiling's work")


if __name__ == "__main__":
    main()
