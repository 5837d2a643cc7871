"""Where Chapter 9's training step goes: every kernel of one step on one timeline.

    python benchmarks/profile_step.py [--steps 3] [--top 30]

The step is the capstone's (``netcl_lite.capstone``: forward, loss, backward, global-norm
clipping, AdamW, the loss and norm read back once), as ``netcl_lite.train.train`` runs it, on
the recipe's model and batch.
After two untimed steps (builds, codegen, pools), ``--steps`` steps run under
``profile_kernels`` (OpenCL profiling events); per step it reports:

* ``wall``: the step's time on the host clock;
* ``kernels``: the sum of the kernels' own times (start to end), and ``launches``;
* ``busy``: the time some kernel was running (the union of their intervals), and ``idle``,
  the rest of the step: the device waiting for the host (Python, launches, read-backs);

and a table of kernels by total time (all steps together, per step), largest first, with each
kernel's share, and the longest stretches the device sat idle (after which op, before which).
The events' stamps are PoCL's ``CLOCK_MONOTONIC_RAW``, the clock read here (as
``call_timeline.py`` checks).

``--replay`` measures instead what each launch costs in CPU time: every launch of one step is
run again alone, many times over, and charged the process's CPU time (``process_time``: PoCL's
workers and the host thread); beside it, the whole step's CPU time and the multiply-add ceiling's
work per CPU second (``fma_ceiling.py``'s kernel). On a machine shared with other work, CPU time
moves far less than wall time, so this is the view to compare changes with when it is loaded.
A replayed kernel finds its data in cache, so the sum of the replays falls short of the step's
CPU time by the misses, the host's Python and what the workers spend between kernels.

``--sequence`` replays instead all of one step's launches in their order, back to back with one
wait, ``--steps`` times (the Python of the step left out): per kernel, the sum over its launches of
each launch's fastest run (profiling events), so each kernel meets its data as the step leaves it;
beside it, the process CPU time of a whole replay (fastest and median) and the host thread's CPU
time of a real step (fastest and median over as many steps). Run with ``POCL_MAX_PTHREAD_COUNT=1``,
the fastest runs are the figure a loaded machine disturbs least: one worker, whose kernels' times
add up.
Nothing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import cpu_name  # noqa: E402

CLOCK = time.CLOCK_MONOTONIC_RAW


def build_step(queue, seed: int = 0, model_changes: dict | None = None, batch_size: int | None = None,
               block_size: int | None = None, step_class=None):
    """(step, model, tokens): a callable running one training step of the capstone's recipe on
    random ids as ``netcl_lite.train.train`` runs it (the loss and the clipped norm read back
    once, at the end), returning the loss; the model; tokens per step. ``model_changes`` (LMConfig
    fields), ``batch_size`` and ``block_size`` replace the recipe's (the model's positions follow
    ``block_size``); ``step_class`` replaces ``RecordedStep`` (same constructor)."""
    from netcl_lite import capstone
    from netcl_lite.core.tensor import read
    from netcl_lite.nn import DecoderLM, LMConfig
    from netcl_lite.optim import AdamW
    from netcl_lite.train import RecordedStep, WindowLoader, parameter_groups

    cfg = capstone.TRAINING
    if batch_size is not None or block_size is not None:
        cfg = dataclasses.replace(cfg, batch_size=batch_size or cfg.batch_size, block_size=block_size or cfg.block_size)
    shape = {**capstone.MODEL, **(model_changes or {})}
    shape["max_position_embeddings"] = max(shape["max_position_embeddings"], cfg.block_size)
    model = DecoderLM(LMConfig(vocab_size=capstone.VOCAB_SIZE, **shape), queue=queue, seed=seed)
    ids = np.random.default_rng(seed).integers(0, capstone.VOCAB_SIZE, 200_000)
    loader = WindowLoader(ids, cfg.batch_size, cfg.block_size, seed=seed)
    opt = AdamW(parameter_groups(model, cfg.weight_decay), lr=1e-4, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
    forward_backward = (step_class or RecordedStep)(model, cfg.grad_clip, cfg.batch_size, cfg.block_size)

    def step() -> float:
        x, y = loader.next_batch()
        loss, clip = forward_backward(x, y)
        opt.step(norm=clip)
        opt.zero_grad()
        value, _ = read(loss, clip)
        return float(value)
    return step, model, cfg.batch_size * cfg.block_size


def matmul_flops_per_step(model, tokens: int) -> float:
    """6 × (parameters in products) × tokens: forward 2, backward 4 multiply-add FLOPs per
    weight per token (norm gains are not products; the tied table is the head's product)."""
    params = sum(p.size for name, p in model.parameters().items() if len(p.shape) == 2)
    return 6.0 * params * tokens


def cpu_seconds(queue, fn, reps: int) -> float:
    """Process CPU seconds per call of ``fn`` over ``reps`` calls after one untimed, waiting for the
    queue every 16 calls (so that the queue never grows long)."""
    fn()
    queue.finish()
    began = time.process_time()
    for i in range(reps):
        fn()
        if i % 16 == 15:
            queue.finish()
    queue.finish()
    return (time.process_time() - began) / reps


def record_launches(queue, step) -> list[tuple]:
    """Run ``step`` once, recording each kernel launch, the eager ops' (``Stream.launch``) and a
    recorded step's replayed ones (``Replay.run``), in order: (label ``file:kernel``, op name, global
    size, local size, a callable that enqueues the launch again and returns its event)."""
    from netcl_lite.core import replay as replay_module
    from netcl_lite.core import stream as stream_module

    launches = []
    launch, run = stream_module.Stream.launch, replay_module.Replay.run

    def recording(self, filename, name, global_size, local_size, *args, options=()):
        launches.append((filename, name, global_size, local_size, args, options, self._ops[-1].name if self._ops else ""))
        return launch(self, filename, name, global_size, local_size, *args, options=options)

    def replaying(self):
        for command in self.commands:
            if command[0] == "kernel":
                _, kernel, global_size, local_size, label, op = command
                launches.append((label, op, global_size, local_size,
                                 lambda k=kernel, g=global_size, ls=local_size: cl.enqueue_nd_range_kernel(queue, k, g, ls)))
        return run(self)
    stream_module.Stream.launch, replay_module.Replay.run = recording, replaying
    try:
        step()
    finally:
        stream_module.Stream.launch, replay_module.Replay.run = launch, run
    queue.finish()
    kernels = stream_module.stream_of(queue)._kernels
    out = []
    for entry in launches:
        if len(entry) == 7:                   # an eager launch: its kernel object, its arguments set anew
            filename, name, gs, ls, args, options, op = entry
            kernel = kernels[(filename, name, options)]
            out.append((f"{filename}:{name}", op, gs, ls, lambda k=kernel, g=gs, l_=ls, a=args: k(queue, g, l_, *a)))
        else:
            out.append(entry)
    return out


def print_table(totals: dict, total: float, top: int, unit: str) -> None:
    """A Markdown table of ``totals`` ((kernel, op) → each launch's ms), largest sum first."""
    print(f"| kernel | op | launches | {unit} | share |\n|---|---|---|---|---|")
    rows = sorted(((k, op, len(v), sum(v)) for (k, op), v in totals.items()), key=lambda r: -r[3])
    for kernel, op, n, ms in rows[:top]:
        print(f"| {kernel} | {op} | {n} | {ms:.2f} | {ms / total:.0%} |")


def sequence(queue, step, model, tokens, repeats: int, top: int) -> None:
    """Print each kernel's time per step, all launches of one step replayed in order (``--sequence``)."""
    launches = record_launches(queue, step)
    fastest = [float("inf")] * len(launches)
    replay_cpu = []
    for _ in range(repeats):
        began = time.process_time()
        events = [enqueue() for *_, enqueue in launches]
        queue.finish()
        replay_cpu.append(time.process_time() - began)
        for i, e in enumerate(events):
            fastest[i] = min(fastest[i], (e.profile.end - e.profile.start) * 1e-6)
    host = []
    for _ in range(repeats):
        began = time.thread_time()
        step()
        host.append(time.thread_time() - began)
    totals: dict[tuple[str, str], list[float]] = {}
    for (label, op, *_), ms in zip(launches, fastest):
        totals.setdefault((label, op.split(" (")[0]), []).append(ms)
    total = sum(fastest)
    flops = matmul_flops_per_step(model, tokens)
    print(f"{len(launches)} launches, {repeats} replays of the step's launches in sequence: kernels {total:.1f} ms "
          f"(each launch's fastest run, events; {flops / total / 1e6:.0f} GFLOP/s of 6·params·tokens); "
          f"a replay's process CPU {min(replay_cpu) * 1e3:.1f} ms fastest, {statistics.median(replay_cpu) * 1e3:.1f} "
          f"median; a real step's host thread {min(host) * 1e3:.1f} ms fastest, {statistics.median(host) * 1e3:.1f} median")
    print_table(totals, total, top, "ms")


def replay(queue, step, model, tokens, top: int) -> None:
    """Print each kernel's CPU time per step, each launch of one step replayed alone (``--replay``)."""
    from fma_ceiling import Ceiling

    from netcl_lite.core.kernels import vector_lanes

    launches = record_launches(queue, step)
    ceiling = Ceiling(queue, vector_lanes(queue.device), "fma_ceiling")
    peak = ceiling.flops() / cpu_seconds(queue, ceiling.run, 10)
    costs: dict[tuple[str, str], list[float]] = {}
    for label, op, _, _, enqueue in launches:
        seconds = cpu_seconds(queue, enqueue, 40)
        costs.setdefault((label, op.split(" (")[0]), []).append(seconds)
    whole = cpu_seconds(queue, step, 5)
    total = sum(sum(v) for v in costs.values())
    flops = matmul_flops_per_step(model, tokens)
    print(f"CPU ms per step: the step {whole * 1e3:.1f}, its {len(launches)} launches replayed alone "
          f"{total * 1e3:.1f}; the products' FLOPs at the ceiling ({peak / 1e9:.0f} GFLOP per CPU second) "
          f"{flops / peak * 1e3:.1f}, so the step does {flops / peak / whole:.1%} of the ceiling's work per CPU second")
    print_table({key: [1e3 * sec for sec in v] for key, v in costs.items()}, total * 1e3, top, "CPU ms")


def union_ms(intervals) -> float:
    """Milliseconds covered by at least one (start, end) interval, in ns."""
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total * 1e-6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--replay", action="store_true", help="CPU time per kernel, each launch replayed alone")
    ap.add_argument("--sequence", action="store_true",
                    help="time per kernel, the step's launches replayed in order --steps times (fastest runs)")
    args = ap.parse_args()

    import netcl_lite as nl
    from netcl_lite.core.stream import stream_of, sync

    dev = nl.device()
    queue = dev.queue
    run, model, tokens = build_step(queue)
    for _ in range(2):
        run()
    if args.replay:
        print(f"{dev.name} ({cpu_name()}); load {os.getloadavg()[0]:.2f}")
        replay(queue, run, model, tokens, args.top)
        return
    if args.sequence:
        print(f"{dev.name} ({cpu_name()}); load {os.getloadavg()[0]:.2f}; "
              f"POCL_MAX_PTHREAD_COUNT={os.environ.get('POCL_MAX_PTHREAD_COUNT', 'unset')}")
        sequence(queue, run, model, tokens, args.steps, args.top)
        return
    stream = stream_of(queue)
    load_before = os.getloadavg()[0]
    steps = []
    totals: dict[tuple[str, str], list[float]] = {}
    gap_totals: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.steps):
        sync(queue)
        time.sleep(0.2)
        stream.profile = []
        began = time.clock_gettime_ns(CLOCK)
        run()
        ended = time.clock_gettime_ns(CLOCK)
        records, stream.profile = stream.profile, None
        intervals = [(e.profile.start, e.profile.end) for _, _, e in records]
        kernel_ms = sum(e - s for s, e in intervals) * 1e-6
        wall = (ended - began) * 1e-6
        busy = union_ms(intervals)
        steps.append({"wall": wall, "kernels": kernel_ms, "busy": busy, "idle": wall - busy,
                      "launches": len(records)})
        stamps = [(e.profile.start, e.profile.end, op) for _, op, e in records]
        gaps = [(b[0] - a[1], a[2], b[2]) for a, b in zip(stamps, stamps[1:])]
        gaps.append((stamps[0][0] - began, "(step starts)", stamps[0][2]))
        gaps.append((ended - stamps[-1][1], stamps[-1][2], "(step ends)"))
        for ns, before, after in gaps:
            gap_totals.setdefault((before, after), []).append(ns * 1e-6)
        for kernel, op, e in records:
            totals.setdefault((kernel, op), []).append((e.profile.end - e.profile.start) * 1e-6)
    load_after = os.getloadavg()[0]
    flops = matmul_flops_per_step(model, tokens)
    med = {k: statistics.median(s[k] for s in steps) for k in steps[0]}
    print(f"{dev.name} ({cpu_name()}); load {load_before:.2f} -> {load_after:.2f}; "
          f"{model.num_parameters():,} parameters, {tokens} tokens a step; medians of {args.steps} steps")
    print(f"wall {med['wall']:.1f} ms ({flops / med['wall'] / 1e6:.0f} GFLOP/s of 6·params·tokens), "
          f"kernels {med['kernels']:.1f} ms in {med['launches']:.0f} launches, busy {med['busy']:.1f} ms, "
          f"idle {med['idle']:.1f} ms")
    rows = sorted(((k, op, len(v) / args.steps, sum(v) / args.steps) for (k, op), v in totals.items()),
                  key=lambda r: -r[3])
    total = sum(r[3] for r in rows)
    print("| kernel | op | launches | ms | share |\n|---|---|---|---|---|")
    for kernel, op, n, ms in rows[:args.top]:
        print(f"| {kernel} | {op} | {n:.0f} | {ms:.2f} | {100 * ms / total:.0f}% |")
    gap_rows = sorted(((a, b, sum(v) / args.steps, len(v) / args.steps) for (a, b), v in gap_totals.items()),
                      key=lambda r: -r[2])
    print("\n| idle after | before | ms | times |\n|---|---|---|---|")
    for a, b, ms, n in gap_rows[:args.top]:
        print(f"| {a} | {b} | {ms:.2f} | {n:.0f} |")
    if len(rows) > args.top:
        rest = rows[args.top:]
        print(f"| ({len(rest)} more) | | {sum(r[2] for r in rest):.0f} | {sum(r[3] for r in rest):.2f} | "
              f"{100 * sum(r[3] for r in rest) / total:.0f}% |")


if __name__ == "__main__":
    main()
