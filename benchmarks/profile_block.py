"""Where a decoder block's time goes: every kernel of one forward + backward, timed on the device.

    python benchmarks/profile_block.py [--dim 256 --heads 4 --kv-heads 4 --seq 256 --batch 4 --hidden 704]

Runs bench_block's block once to warm up (builds, codegen), then once under
``profile_kernels`` (OpenCL profiling events), and prints each kernel's launches
and total device time, largest first, beside the wall time of the whole step.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import netcl_lite as nl
from netcl_lite.core.stream import profile_kernels, sync
from netcl_lite.nn.transformer import DecoderBlock


def step(block, x, r):
    block.zero_grad()               # as bench_block's timed step: gradients start from nothing
    with nl.Tape():
        out = block(nl.tensor(x))
    out.backward(grad=r)
    sync(out.queue)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("dim", 256), ("heads", 4), ("kv-heads", 4), ("seq", 256), ("batch", 4), ("hidden", 704)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--kernel", choices=("flash", "dense"), default="flash")
    a = ap.parse_args()
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
