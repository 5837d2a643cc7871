"""Where a decoder block's time goes: every kernel of one forward + backward, timed on the device.

    python benchmarks/profile_block.py [--dim 256 --heads 4 --kv-heads 4 --seq 256 --batch 4 --hidden 704]
    python benchmarks/profile_block.py --attention [--batch 1 --heads 8 --seq 2048 --head-dim 64 --repeats 7]

Runs bench_block's block once to warm up (builds, codegen), then once under
``profile_kernels`` (OpenCL profiling events), and prints each kernel's launches
and total device time, largest first, beside the wall time of the whole step.

``--attention`` profiles dense ``ops.attention`` alone instead, at the roofline's shape
(``benchmarks/roofline.py``): each launch of its path in order (the scores product, the
softmax pass, the weighted-values product), the median of ``--repeats`` calls, each
pass beside its share of Chapter 8's traffic model (``dense_passes``); ``roofline.py``
records the same profile in ``results/roofline.json``.

``--step`` profiles Chapter 9's training step instead (``profile_step.build_step``: the capstone's
model and batch, forward, loss, backward, clipping, AdamW): every launch of one step, recorded as the
eager step enqueues it, is replayed in order ``--repeats`` times and keeps its fastest run (events);
launches are grouped by kernel, op and the op's operand shapes, and a product's row gives its
(M, N, K) and GFLOP/s, so the slow shapes stand out. ``--merges`` times, at the step's shapes,
products that the step runs separately against the one concatenated product that would replace them
(fastest of ``--repeats``, the pairs interleaved): the evidence for fusing projections.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import sys
from pathlib import Path

import numpy as np

import netcl_lite as nl
from netcl_lite import ops
from netcl_lite.core.stream import profile_kernels, sync
from netcl_lite.nn.transformer import DecoderBlock


def step(block, x, r):
    block.zero_grad()               # as bench_block's timed step: gradients start from nothing
    with nl.Tape():
        out = block(nl.tensor(x))
    out.backward(grad=r)
    sync(out.queue)


def dense_launches(queue, q, k, v) -> list[tuple[str, float]]:
    """(kernel, device ms) of each launch of one dense ``ops.attention(q, k, v)``, in launch order."""
    with profile_kernels(queue) as prof:
        ops.attention(q, k, v)
        records = list(prof.stream.profile)          # (kernel, op, event) in launch order
    return [(kernel, (event.profile.end - event.profile.start) * 1e-6) for kernel, _, event in records]


def phases(launches: list[tuple[str, float]]) -> list[tuple[str, str, float]]:
    """(phase, kernel, ms): the softmax pass by its kernel's name, the products before and after it
    as the scores and the weighted values. Anything else is named "other" rather than guessed."""
    soft = [i for i, (kernel, _) in enumerate(launches) if "softmax" in kernel]
    if len(soft) != 1:
        raise RuntimeError(f"expected one softmax launch in dense attention, got {launches}")
    named = []
    for i, (kernel, ms) in enumerate(launches):
        product = any(word in kernel for word in ("matmul", "gemm", "attention_scores", "attention_apply"))
        phase = ("softmax" if i == soft[0] else "scores" if product and i < soft[0]
                 else "weighted values" if product else "other")
        named.append((phase, kernel, ms))
    return named


def dense_profile(queue, q, k, v, repeats: int) -> list[dict]:
    """Each phase of dense attention: its kernels and the median over ``repeats`` calls of its device ms
    (all its launches of one call added), with every call's figure kept."""
    for _ in range(2):                               # builds, codegen, first touches
        ops.attention(q, k, v)
        sync(queue)
    calls = [phases(dense_launches(queue, q, k, v)) for _ in range(repeats)]
    order = list(dict.fromkeys(phase for phase, _, _ in calls[0]))
    rows = []
    for phase in order:
        per_call = [sum(ms for p, _, ms in call if p == phase) for call in calls]
        kernels = sorted({kernel for p, kernel, _ in calls[0] if p == phase})
        rows.append({"phase": phase, "kernels": kernels, "ms": statistics.median(per_call), "calls_ms": per_call})
    return rows


def attention_main(a) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "snippets" / "chapter8"))
    from traffic_model import dense_passes                  # Chapter 8's traffic model

    dev = nl.device()
    rng = np.random.default_rng(0)
    shape = (a.batch, a.heads, a.seq, a.head_dim)
    q, k, v = (nl.Tensor.from_host(dev.queue, rng.standard_normal(shape).astype(np.float32)) for _ in range(3))
    rows = dense_profile(dev.queue, q, k, v, a.repeats)
    model = {name: (flops, 4 * (reads + writes)) for name, flops, reads, writes in dense_passes(a.seq, a.head_dim)}
    heads = a.batch * a.heads
    total = sum(r["ms"] for r in rows)
    print(f"{dev.name}: dense ops.attention B={a.batch} H={a.heads} T={a.seq} d={a.head_dim}, "
          f"median of {a.repeats} calls; kernels {total:.1f} ms")
    print("| phase | kernels | ms | share | GFLOP/s | GB/s (model bytes) |\n|---|---|---|---|---|---|")
    for r in rows:
        flops, nbytes = (heads * x for x in model.get(r["phase"], (0, 0)))
        print(f"| {r['phase']} | {', '.join(r['kernels'])} | {r['ms']:.2f} | {100 * r['ms'] / total:.0f}% "
              f"| {flops / r['ms'] / 1e6:.0f} | {nbytes / r['ms'] / 1e6:.1f} |")


def step_launches(queue):
    """(launches, step, model, tokens): each launch of one eager training step of the capstone's
    recipe, in order, as (label, op with its operand shapes, (M, N, K) of a product or None,
    a callable that enqueues it again and returns its event)."""
    import importlib

    from netcl_lite.core import stream as stream_module

    matmul_module = importlib.import_module("netcl_lite.ops.matmul")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from profile_step import build_step

    step, model, tokens = build_step(queue)
    launches, shapes = [], []
    launch, how = stream_module.Stream.launch, matmul_module._how

    def shaped_how(sa, sb, transpose_a, transpose_b, *rest):
        shapes.append(matmul_module.matmul_shapes(sa, sb, transpose_a, transpose_b)[1:])
        return how(sa, sb, transpose_a, transpose_b, *rest)

    def recording(self, filename, name, global_size, local_size, *args, options=()):
        op = self._ops[-1] if self._ops else None
        desc = "" if op is None else op.name + " " + " ".join(
            f"{key}{tuple(getattr(value, 'shape', ()))}" for key, value in op.operands.items())
        mnk = shapes[-1] if op is not None and op.name == "matmul" and shapes else None
        launches.append((f"{filename}:{name}", desc, mnk, global_size, local_size, args, options))
        return launch(self, filename, name, global_size, local_size, *args, options=options)

    stream_module.Stream.launch, matmul_module._how = recording, shaped_how
    try:
        step()                                      # the first step runs eagerly (and is recorded)
    finally:
        stream_module.Stream.launch, matmul_module._how = launch, how
    queue.finish()
    kernels = stream_module.stream_of(queue)._kernels
    out = []
    for label, desc, mnk, gs, ls, args, options in launches:
        kernel = kernels[(*label.split(":"), options)]
        out.append((label, desc, mnk, lambda k=kernel, g=gs, l_=ls, a=args: k(queue, g, l_, *a)))
    return out, step, model, tokens


def step_main(a) -> None:
    """Print the step's launches grouped by kernel, op and shapes (``--step``)."""
    dev = nl.device()
    launches, _, model, tokens = step_launches(dev.queue)
    fastest = [float("inf")] * len(launches)
    for _ in range(a.repeats):
        events = [enqueue() for *_, enqueue in launches]
        dev.queue.finish()
        for i, e in enumerate(events):
            fastest[i] = min(fastest[i], (e.profile.end - e.profile.start) * 1e-6)
    groups: dict[tuple, list[float]] = {}
    for (label, desc, mnk, _), ms in zip(launches, fastest):
        groups.setdefault((label, desc, mnk), []).append(ms)
    total = sum(fastest)
    print(f"{dev.name}: one training step of the capstone's recipe ({model.num_parameters():,} parameters, "
          f"{tokens} tokens), {len(launches)} launches replayed in order {a.repeats} times, each launch's "
          f"fastest run: kernels {total:.1f} ms; load {os.getloadavg()[0]:.2f}")
    print("| kernel | op and operands | M x N x K | launches | ms | share | GFLOP/s |\n|---|---|---|---|---|---|---|")
    for (label, desc, mnk), v in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
        ms = sum(v)
        product = mnk is not None and label.endswith(("matmul_packed", "matmul_tall"))   # not a pack or a join
        rate = f"{2 * math.prod(mnk) * len(v) / ms / 1e6:.0f}" if product else ""
        print(f"| {label} | {desc} | {' x '.join(map(str, mnk)) if mnk else ''} | {len(v)} | {ms:.2f} "
              f"| {100 * ms / total:.0f}% | {rate} |")


#: (name, the products the step runs, the one product that would replace them): each product as
#: (a's shape, b's shape, transpose_a, transpose_b), at the capstone's shapes (2,048 rows, width
#: 128, SwiGLU hidden 320, 4 query heads and 2 K/V heads of 32). The step adds the second and third
#: input-gradient products to the gradient gathered so far (``matmul_add``); here all are plain products
MERGES = (
    ("W1, W3 forward", [((2048, 128), (128, 320), False, False)] * 2, ((2048, 128), (128, 640), False, False)),
    ("W1, W3 input gradient", [((2048, 320), (128, 320), False, True)] * 2, ((2048, 640), (128, 640), False, True)),
    ("W1, W3 weight gradients", [((2048, 128), (2048, 320), True, False)] * 2,
     ((2048, 128), (2048, 640), True, False)),
    ("Wq, Wk, Wv forward", [((2048, 128), (128, 128), False, False)] + [((2048, 128), (128, 64), False, False)] * 2,
     ((2048, 128), (128, 256), False, False)),
    ("Wq, Wk, Wv input gradient", [((2048, 128), (128, 128), False, True)] + [((2048, 64), (128, 64), False, True)] * 2,
     ((2048, 256), (128, 256), False, True)),
    ("Wk, Wv weight gradients", [((2048, 128), (2048, 64), True, False)] * 2, ((2048, 128), (2048, 128), True, False)),
    ("Wq, Wk, Wv weight gradients", [((2048, 128), (2048, 128), True, False)] + [((2048, 128), (2048, 64), True, False)] * 2,
     ((2048, 128), (2048, 256), True, False)),
)


def merges_main(a) -> None:
    """Print separate products against their concatenation (``--merges``)."""
    dev = nl.device()
    rng = np.random.default_rng(0)
    tensor = lambda shape: nl.Tensor.from_host(dev.queue, rng.standard_normal(shape).astype(np.float32))

    def run(products) -> float:
        with profile_kernels(dev.queue) as prof:
            for sa, sb, ta, tb in products:
                ops.matmul(operands[sa, 0], operands[sb, 1], transpose_a=ta, transpose_b=tb)
            sync(dev.queue)
            return sum((e.profile.end - e.profile.start) * 1e-6 for _, _, e in prof.stream.profile)

    operands = {}
    for _, separate, merged in MERGES:
        for sa, sb, _, _ in separate + [merged]:
            operands.setdefault((sa, 0), tensor(sa))
            operands.setdefault((sb, 1), tensor(sb))
    best = {name: [float("inf"), float("inf")] for name, *_ in MERGES}
    for r in range(a.repeats + 2):                      # two untimed rounds: builds, codegen, pools
        for name, separate, merged in MERGES:
            for j, products in enumerate((separate, [merged])):
                ms = run(products)
                if r >= 2:
                    best[name][j] = min(best[name][j], ms)
    print(f"{dev.name}: separate products against one concatenated product, fastest of {a.repeats} "
          f"(interleaved); load {os.getloadavg()[0]:.2f}")
    print("| products | separate ms | concatenated ms | ratio |\n|---|---|---|---|")
    for name, (sep, one) in best.items():
        print(f"| {name} | {sep:.3f} | {one:.3f} | {one / sep:.2f} |")


BLOCK = dict(dim=256, heads=4, kv_heads=4, seq=256, batch=4, hidden=704)      # bench_block's block
ATTENTION = dict(batch=1, heads=8, seq=2048, head_dim=64)                     # roofline.py's shape


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("dim", "heads", "kv-heads", "seq", "batch", "hidden", "head-dim"):
        ap.add_argument(f"--{name}", type=int)
    ap.add_argument("--kernel", choices=("flash", "dense"), default="flash")
    ap.add_argument("--attention", action="store_true", help="profile dense attention alone, at roofline.py's shape")
    ap.add_argument("--repeats", type=int, default=7,
                    help="calls profiled with --attention (median); replays with --step and --merges (fastest)")
    ap.add_argument("--step", action="store_true", help="Chapter 9's training step, launch by launch with shapes")
    ap.add_argument("--merges", action="store_true", help="the step's separate products against concatenated ones")
    a = ap.parse_args()
    if a.repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {a.repeats}")
    if a.step or a.merges:
        (step_main if a.step else merges_main)(a)
        return
    for key, value in (ATTENTION if a.attention else BLOCK).items():
        if getattr(a, key) is None:
            setattr(a, key, value)
    if a.attention:
        attention_main(a)
        return
    dev = nl.device()
    block = DecoderBlock(dev.queue, a.dim, a.heads, a.kv_heads, a.hidden, max_seq_len=a.seq, kernel=a.kernel)
    rng = np.random.default_rng(0)
    x = nl.Tensor.from_host(dev.queue, rng.standard_normal((a.batch, a.seq, a.dim)).astype(np.float32))
    r = nl.Tensor.from_host(dev.queue, rng.standard_normal((a.batch, a.seq, a.dim)).astype(np.float32))
    for _ in range(2):
        step(block, x, r)
    t0 = time.perf_counter()
    with profile_kernels(dev.queue) as prof:
        step(block, x, r)
    wall = (time.perf_counter() - t0) * 1e3
    rows = prof.table()
    total = sum(ms for *_, ms in rows)
    print(f"{dev.name}: forward + backward of DecoderBlock D={a.dim} h={a.heads} g={a.kv_heads} "
          f"hidden={a.hidden} T={a.seq} B={a.batch} ({a.kernel}); wall {wall:.1f} ms, kernels {total:.1f} ms")
    print("| kernel | op | launches | ms | share |\n|---|---|---|---|---|")
    for kernel, op, n, ms in rows:
        print(f"| {kernel} | {op} | {n} | {ms:.2f} | {100 * ms / total:.0f}% |")


if __name__ == "__main__":
    main()
