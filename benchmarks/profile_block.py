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
"""

from __future__ import annotations

import argparse
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


BLOCK = dict(dim=256, heads=4, kv_heads=4, seq=256, batch=4, hidden=704)      # bench_block's block
ATTENTION = dict(batch=1, heads=8, seq=2048, head_dim=64)                     # roofline.py's shape


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("dim", "heads", "kv-heads", "seq", "batch", "hidden", "head-dim"):
        ap.add_argument(f"--{name}", type=int)
    ap.add_argument("--kernel", choices=("flash", "dense"), default="flash")
    ap.add_argument("--attention", action="store_true", help="profile dense attention alone, at roofline.py's shape")
    ap.add_argument("--repeats", type=int, default=7, help="calls profiled with --attention (median)")
    a = ap.parse_args()
    for key, value in (ATTENTION if a.attention else BLOCK).items():
        if getattr(a, key) is None:
            setattr(a, key, value)
    if a.attention:
        if a.repeats < 1:
            raise ValueError(f"--repeats must be >= 1, got {a.repeats}")
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
