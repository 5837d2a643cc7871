"""How close GEMM comes to the machine: a multiply-add ceiling beside the GEMM kernel and OpenBLAS.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/fma_ceiling.py [--repeats 7]

The ceiling is an OpenCL kernel that does nothing but independent vector multiply-adds
(24 accumulators of 16 lanes on AVX-512, 12 of 8 on AVX2, as many work-items as 16 per core), so its
GFLOP/s is what the cores sustain on FMAs at this moment, turbo and neighbours included.
A second kernel runs the GEMM micro-kernel's loop (per step: NV vector loads of B, MR
broadcasts of A, MR x NV multiply-adds, with ``matmul.TILES``' tile for the device: 6 x 4
vectors on AVX-512, four steps per loop trip as in the kernel) over 128 steps of data that
stay in L1: the most that instruction mix gets, with no cache misses and no packing.
Each round times, in turn:

  * the ceiling and the L1 loop (wall time of a burst, as in bench_kernels.py);
  * ``matmul_packed`` alone at n = 1024 and 2048 (OpenCL profiling events: the kernel,
    which copies B's panels into local memory itself, without the launch or the wait);
  * ``ops.matmul`` on device tensors (the whole call: the launch and the wait);
  * NumPy ``a @ b`` (OpenBLAS).

Each is reported as GFLOP/s and as a fraction of the ceiling measured in the same round
(medians over rounds), so a slow moment of a shared machine moves both sides together.
Writes ``benchmarks/results/fma_ceiling.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernels import cpu_name, pocl_target, timed

from netcl_lite import ops
from netcl_lite.core.device import manager
from netcl_lite.core.kernels import vector_lanes
from netcl_lite.core.stream import profile_kernels, sync
from netcl_lite.core.tensor import Tensor
from netcl_lite.ops.matmul import TILES

RESULTS = Path(__file__).resolve().parent / "results" / "fma_ceiling.json"
#: independent accumulators per lane count: three quarters of the vector registers (32 on
#: AVX-512, 16 on AVX2), enough to cover the FMA latency without spilling
ACCUMULATORS = {16: 24, 8: 12}

CEILING_SOURCE = """
__kernel void fma_ceiling(__global float *out, const int iters, const float c)
{
    VEC acc[ACC];
    #pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = (VEC)(get_global_id(0) * 1e-3f + i);
    const VEC b = (VEC)(0.999f);
    for (int it = 0; it < iters; ++it) {
        #pragma unroll
        for (int i = 0; i < ACC; ++i) acc[i] = acc[i] * b + c;
    }
    VEC s = acc[0];
    for (int i = 1; i < ACC; ++i) s += acc[i];
    out[get_global_id(0)] = s.s0;
}

__kernel void l1_tile_loop(__global const float *a, __global const VEC *b, __global float *out, const int iters)
{
    VEC acc[MR][NV];
    for (int r = 0; r < MR; ++r)
        for (int v = 0; v < NV; ++v) acc[r][v] = (VEC)(0.0f);
    #pragma unroll 4                                 // as matmul_packed's k loop
    for (int it = 0; it < iters; ++it) {
        const int k = it & 127;                     // 128 steps of A and B, all in L1
        VEC bv[NV];
        #pragma unroll
        for (int v = 0; v < NV; ++v) bv[v] = b[k * NV + v];
        #pragma unroll
        for (int r = 0; r < MR; ++r) {
            const float x = a[k * MR + r];
            #pragma unroll
            for (int v = 0; v < NV; ++v) acc[r][v] = x * bv[v] + acc[r][v];
        }
    }
    VEC s = acc[0][0];
    for (int r = 0; r < MR; ++r)
        for (int v = (r == 0); v < NV; ++v) s += acc[r][v];
    out[get_global_id(0)] = s.s0;
}
"""


class Ceiling:
    """One of the two kernels above, sized to run ~0.1 s per call."""

    def __init__(self, queue: cl.CommandQueue, lanes: int, name: str):
        self.queue, self.lanes = queue, lanes
        mr, nv = TILES[lanes]
        self.fmas = ACCUMULATORS[lanes] if name == "fma_ceiling" else mr * nv     # vector multiply-adds per step
        options = [f"-DVEC=float{lanes}", f"-DACC={ACCUMULATORS[lanes]}", f"-DMR={mr}", f"-DNV={nv}"]
        self.kernel = cl.Kernel(cl.Program(queue.context, CEILING_SOURCE).build(options=options), name)
        self.items = 16 * (os.cpu_count() or 1)
        self.out = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 4 * self.items)
        rng = np.random.default_rng(0)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        a, b = (rng.uniform(0, 1e-3, n).astype(np.float32) for n in (128 * mr, 128 * nv * lanes))
        self.args = ((self.out,) if name == "fma_ceiling" else
                     (cl.Buffer(queue.context, flags, hostbuf=a), cl.Buffer(queue.context, flags, hostbuf=b), self.out))
        self.extra = (np.float32(1e-4),) if name == "fma_ceiling" else ()
        self.iters = 1000
        self.run()                                   # PoCL compiles at the first launch
        while self.run() < 0.05:
            self.iters *= 2

    def run(self) -> float:
        t = time.perf_counter()
        self.kernel(self.queue, (self.items,), (1,), *self.args, np.int32(self.iters), *self.extra)
        self.queue.finish()
        return time.perf_counter() - t

    def flops(self) -> float:
        return 2.0 * self.items * self.iters * self.fmas * self.lanes


def kernel_seconds(queue, ta, tb) -> float:
    """matmul_packed's own time per call (profiling events), the mean over a burst of 3 after one
    untimed call: the first launch after other kernels or a pause runs on cold caches and waking
    workers (with B's panels copied inside the kernel, that first launch measured 20-35 % slower)."""
    ops.matmul(ta, tb)
    sync(queue)
    with profile_kernels(queue) as prof:
        for _ in range(3):
            ops.matmul(ta, tb)
    times = [ms / n for kernel, _, n, ms in prof.table() if kernel == "matmul.cl:matmul_packed"]
    return times[0] * 1e-3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(os.cpu_count() or 1)
    except ImportError:
        pass
    device = manager.default()
    queue = device.queue
    ceiling = Ceiling(queue, vector_lanes(device.cl_device), "fma_ceiling")
    l1_loop = Ceiling(queue, ceiling.lanes, "l1_tile_loop")
    rng = np.random.default_rng(0)
    cases = {}
    for n in (1024, 2048):
        a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        ta, tb = Tensor.from_host(queue, a), Tensor.from_host(queue, b)
        err = float(np.abs(ops.matmul(ta, tb).numpy() - a @ b).max())
        cases[n] = (a, b, ta, tb, err)

    rounds: dict[str, list[float]] = {}
    load_before = os.getloadavg()[0]
    for _ in range(args.repeats):
        peak = ceiling.flops() / timed(ceiling.run)
        rounds.setdefault("ceiling", []).append(peak)
        loop = l1_loop.flops() / timed(l1_loop.run)
        rounds.setdefault("l1_tile_loop", []).append(loop)
        rounds.setdefault("l1_tile_loop_of_ceiling", []).append(loop / peak)
        for n, (a, b, ta, tb, _) in cases.items():
            flops = 2.0 * n**3
            sample = {
                "kernel": flops / kernel_seconds(queue, ta, tb),
                "call": flops / timed(lambda ta=ta, tb=tb: (ops.matmul(ta, tb), sync(queue))),
                "numpy": flops / timed(lambda a=a, b=b: a @ b),
            }
            for name, gflops in sample.items():
                rounds.setdefault(f"{name}_{n}", []).append(gflops)
                rounds.setdefault(f"{name}_{n}_of_ceiling", []).append(gflops / peak)
    med = {name: statistics.median(values) for name, values in rounds.items()}
    report = {
        "device": device.name, "cpu": cpu_name(), "pocl_target": pocl_target(device.cl_device),
        "lanes": ceiling.lanes, "repeats": args.repeats,
        "loadavg_1min_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "statistic": "median over rounds; fractions are of the ceiling measured in the same round",
        "gflops_median": {k: v / 1e9 for k, v in med.items() if not k.endswith("_of_ceiling")},
        "fraction_of_ceiling_median": {k.removesuffix("_of_ceiling"): v for k, v in med.items() if k.endswith("_of_ceiling")},
        "max_abs_diff_vs_numpy": {n: case[4] for n, case in cases.items()},
        "rounds": rounds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")

    print(f"{device.name} ({report['cpu']}, PoCL target {report['pocl_target']}, {ceiling.lanes} lanes), "
          f"{args.repeats} rounds, load {report['loadavg_1min_before_after']}")
    print(f"multiply-add ceiling: {med['ceiling'] / 1e9:.0f} GFLOP/s (median; rounds "
          f"{min(rounds['ceiling']) / 1e9:.0f}-{max(rounds['ceiling']) / 1e9:.0f})")
    print(f"GEMM micro-kernel loop on L1 data: {med['l1_tile_loop'] / 1e9:.0f} GFLOP/s, "
          f"{med['l1_tile_loop_of_ceiling']:.0%} of the ceiling")
    print(f"{'n':>5} {'what':<34} {'GFLOP/s':>8} {'of ceiling':>11}")
    labels = {"kernel": "matmul_packed alone (events)", "call": "ops.matmul, device tensors", "numpy": "NumPy a @ b"}
    for n in cases:
        for name, label in labels.items():
            print(f"{n:>5} {label:<34} {med[f'{name}_{n}'] / 1e9:>8.0f} {med[f'{name}_{n}_of_ceiling']:>10.0%}")


if __name__ == "__main__":
    main()
