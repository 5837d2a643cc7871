"""A roofline of this machine: the multiply-add ceiling, the memory bandwidth, and kernels on it.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/roofline.py [--repeats 15]

Everything comes from one run on one machine, round by round, so that the roof and the
points under it share the same moment of a shared machine:

  * the ceiling: ``fma_ceiling.py``'s kernel of independent vector multiply-adds (GFLOP/s);
  * the bandwidth: an OpenCL copy of a 1 GiB buffer into another, in 16-float vectors,
    counted as STREAM counts a copy (bytes read + bytes written, GB/s), with NumPy's
    ``np.copyto`` of the same buffers as its anchor in the same round; the roof is the
    better of the two medians (``bandwidth_source`` says which);
  * the points: ``ops.matmul`` at n = 1024 and, at B = 1, H = 8, T = 2048, d = 64,
    ``ops.attention`` (dense) and ``ops.flash_attention`` on device tensors (GFLOP/s);
  * dense attention pass by pass (``profile_block.py --attention``: the scores product, the
    softmax pass, the weighted-values product, by OpenCL profiling events), and the same
    OpenCL copy at the size of the score tensor (B H T² floats into as many: the bytes the
    softmax pass reads and writes), to see whether those bytes come from memory or cache.

A point's arithmetic intensity is its FLOPs over the bytes it must move between main
memory and the cores (float32), from Chapter 8's traffic model
(``snippets/chapter8/traffic_model.py``; :func:`traffic`):

  * GEMM: read A and B, write C, ``3 n²`` numbers (the packed panels stay in cache);
  * dense attention: the model's "standard" row: read Q, K, V and write O (``4 T d`` per
    head), write the scores, read them for the softmax, write the weights and read them
    for ``A V`` (``4 T²`` per head);
  * flash attention: the model's "K, V in cache" row: read Q, K, V and write O once
    (``4 T d`` per head): a head's K and V (``2 T d`` numbers, 1 MiB here) stay in cache
    while its query rows stream past.

Writes ``benchmarks/results/roofline.json`` (CPU, PoCL target, caches, load, medians, rounds).
Chapter 8 renders its roofline section from that file and ``kernels.json``, which must come
from the same machine: run ``bench_kernels.py`` and this script one after the other.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "snippets" / "chapter8"))
from bench_kernels import cpu_name, pocl_target, timed  # noqa: E402
from fma_ceiling import Ceiling  # noqa: E402
from profile_block import dense_launches, phases  # noqa: E402
from traffic_model import dense_passes, flops as head_flops, traffic as head_traffic  # noqa: E402

from netcl_lite import ops  # noqa: E402
from netcl_lite.core.device import manager  # noqa: E402
from netcl_lite.core.kernels import vector_lanes  # noqa: E402
from netcl_lite.core.stream import sync  # noqa: E402
from netcl_lite.core.tensor import Tensor  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "roofline.json"
COPY_BYTES = 2**30                   # beyond the last-level cache: the bytes come from memory
GEMM_N = 1024
ATTENTION = dict(B=1, H=8, T=2048, d=64)

COPY_SOURCE = """
__kernel void stream_copy(__global const float16 *src, __global float16 *dst, const int per_item)
{
    const size_t start = get_global_id(0) * (size_t)per_item;
    for (int i = 0; i < per_item; ++i)
        dst[start + i] = src[start + i];
}
"""


def caches() -> list[dict]:
    """The caches the OS reports for CPU 0 (Linux sysfs): level, type, bytes and the CPUs sharing
    each; empty where it says nothing. In a virtual machine these are the hypervisor's figures."""
    found = []
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            text = (index / "size").read_text().strip()
            scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
            found.append({"level": int((index / "level").read_text()), "type": (index / "type").read_text().strip(),
                          "bytes": int(text.rstrip("KMG")) * scale,
                          "shared_cpu_list": (index / "shared_cpu_list").read_text().strip()})
        except (OSError, ValueError):
            continue
    return found


def last_level_cache_bytes() -> int | None:
    """The largest cache the OS reports for CPU 0, or None where it says nothing."""
    return max((c["bytes"] for c in caches()), default=None)


def traffic(op: str, **shape) -> tuple[float, float]:
    """(FLOPs, bytes moved to and from main memory) of one call, float32; see the module doc."""
    if op not in ("gemm", "dense_attention", "flash_attention"):
        raise ValueError(f"op must be 'gemm', 'dense_attention' or 'flash_attention', got {op!r}")
    if op == "gemm":
        n = shape["n"]
        return 2.0 * n**3, 4.0 * 3 * n * n
    heads, t, d = shape["B"] * shape["H"], shape["T"], shape["d"]
    method = "standard" if op == "dense_attention" else "K, V in cache"
    return float(heads * head_flops(t, d)), 4.0 * heads * sum(head_traffic(method, t, d))


def pass_traffic(**shape) -> dict[str, tuple[float, float]]:
    """Dense attention pass by pass: {pass: (FLOPs, bytes)} of one call, float32, from the model."""
    heads = shape["B"] * shape["H"]
    return {name: (float(heads * f), 4.0 * heads * (r + w)) for name, f, r, w in dense_passes(shape["T"], shape["d"])}


class StreamCopy:
    """The copy kernel over two buffers of ``nbytes``; each work-item copies a contiguous run."""

    def __init__(self, queue: cl.CommandQueue, nbytes: int = COPY_BYTES):
        if nbytes % (4 * 16 * 256 * 16):
            raise ValueError(f"nbytes must be a multiple of {4 * 16 * 256 * 16} (whole work-groups), got {nbytes}")
        self.queue, self.nbytes = queue, nbytes
        n = nbytes // 4
        self.host_src = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        self.host_dst = np.empty_like(self.host_src)
        mf = cl.mem_flags
        self.src = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=self.host_src)
        self.dst = cl.Buffer(queue.context, mf.READ_WRITE, nbytes)
        self.kernel = cl.Kernel(cl.Program(queue.context, COPY_SOURCE).build(), "stream_copy")
        self.per_item = 256                          # 16 KiB per work-item
        self.items = n // 16 // self.per_item
        self.run()
        check = np.empty_like(self.host_src)
        cl.enqueue_copy(queue, check, self.dst)
        if not np.array_equal(check, self.host_src):
            raise RuntimeError("stream_copy did not copy its buffer exactly")

    def run(self) -> None:
        self.kernel(self.queue, (self.items,), (16,), self.src, self.dst, np.int32(self.per_item))
        self.queue.finish()

    def numpy_copy(self) -> None:
        np.copyto(self.host_dst, self.host_src)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {args.repeats}")
    device = manager.default()
    queue = device.queue
    ceiling = Ceiling(queue, vector_lanes(device.cl_device), "fma_ceiling")
    copy = StreamCopy(queue)
    score_bytes = 4 * ATTENTION["B"] * ATTENTION["H"] * ATTENTION["T"] ** 2
    score_copy = StreamCopy(queue, score_bytes)      # what the softmax pass reads (S) and writes (A)
    llc = last_level_cache_bytes()
    if llc is not None and 2 * COPY_BYTES <= llc:
        raise RuntimeError(f"the copy's {2 * COPY_BYTES} bytes fit the {llc}-byte cache: raise COPY_BYTES")
    rng = np.random.default_rng(0)
    a, b = (Tensor.from_host(queue, rng.standard_normal((GEMM_N, GEMM_N)).astype(np.float32))
            for _ in range(2))
    shape = (ATTENTION["B"], ATTENTION["H"], ATTENTION["T"], ATTENTION["d"])
    q, k, v = (Tensor.from_host(queue, rng.standard_normal(shape).astype(np.float32)) for _ in range(3))
    dense, flash = ops.attention(q, k, v).numpy(), ops.flash_attention(q, k, v).numpy()
    if not np.allclose(dense, flash, atol=1e-5):
        raise RuntimeError("dense and flash attention disagree; fix that before timing them")
    points = {
        "gemm": (lambda: (ops.matmul(a, b), sync(queue)), traffic("gemm", n=GEMM_N)),
        "dense_attention": (lambda: (ops.attention(q, k, v), sync(queue)),
                            traffic("dense_attention", **ATTENTION)),
        "flash_attention": (lambda: (ops.flash_attention(q, k, v), sync(queue)),
                            traffic("flash_attention", **ATTENTION)),
    }
    passes = pass_traffic(**ATTENTION)
    kernels_of: dict[str, list[str]] = {}
    rounds: dict[str, list[float]] = {}
    load_before = os.getloadavg()[0]
    for _ in range(args.repeats):
        rounds.setdefault("ceiling_gflops", []).append(ceiling.flops() / timed(ceiling.run) / 1e9)
        rounds.setdefault("copy_gbs", []).append(2 * COPY_BYTES / timed(copy.run) / 1e9)
        rounds.setdefault("numpy_copy_gbs", []).append(2 * COPY_BYTES / timed(copy.numpy_copy) / 1e9)
        rounds.setdefault("score_copy_gbs", []).append(2 * score_bytes / timed(score_copy.run) / 1e9)
        for name, (fn, (flops, _)) in points.items():
            rounds.setdefault(f"{name}_gflops", []).append(flops / timed(fn) / 1e9)
        sync(queue)
        per_call: dict[str, float] = {}
        for phase, kernel, ms in phases(dense_launches(queue, q, k, v)):
            if phase not in passes:
                raise RuntimeError(f"dense attention ran {kernel} outside the model's passes {sorted(passes)}")
            per_call[phase] = per_call.get(phase, 0.0) + ms
            kernels_of.setdefault(phase, [])
            kernels_of[phase] += [kernel] if kernel not in kernels_of[phase] else []
        if set(per_call) != set(passes):
            raise RuntimeError(f"dense attention ran the passes {sorted(per_call)}, the model has {sorted(passes)}")
        for phase, ms in per_call.items():
            rounds.setdefault(f"dense_{phase}_ms", []).append(ms)
    med = {name: statistics.median(values) for name, values in rounds.items()}
    report = {
        "device": device.name, "cpu": cpu_name(), "pocl_target": pocl_target(device.cl_device),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "threads": os.cpu_count(), "repeats": args.repeats,
        "loadavg_1min_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "statistic": "median over rounds, each a warm burst of calls",
        "ceiling_gflops": med["ceiling_gflops"],
        # the roof is the better of the two copies: what this machine's memory has shown it sustains
        "bandwidth_gbs": max(med["copy_gbs"], med["numpy_copy_gbs"]),
        "bandwidth_source": "opencl_copy" if med["copy_gbs"] >= med["numpy_copy_gbs"] else "numpy_copy",
        "opencl_copy_gbs": med["copy_gbs"],
        "numpy_copy_gbs": med["numpy_copy_gbs"],
        "copy_bytes": COPY_BYTES,
        "caches": caches(),
        "last_level_cache_bytes": last_level_cache_bytes(),
        "traffic_model": "snippets/chapter8/traffic_model.py, float32",
        # the softmax pass's bytes (read S, write A) copied alone: memory or cache at that size
        "score_copy": {"bytes": score_bytes, "gbs": med["score_copy_gbs"]},
        # dense attention pass by pass, each with its share of the model's FLOPs and traffic
        "passes_statistic": "median over rounds of one call's device time per pass (OpenCL profiling events)",
        "dense_attention_passes": [
            {"phase": phase, "kernels": kernels_of[phase], "ms": med[f"dense_{phase}_ms"],
             "flops": flops, "bytes": nbytes}
            for phase, (flops, nbytes) in passes.items()
        ],
        "points": {
            name: {"shape": {"n": GEMM_N} if name == "gemm" else ATTENTION,
                   "flops": flops, "bytes": nbytes, "intensity": flops / nbytes,
                   "gflops": med[f"{name}_gflops"]}
            for name, (_, (flops, nbytes)) in points.items()
        },
        "rounds": rounds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    ridge = report["ceiling_gflops"] / report["bandwidth_gbs"]
    print(f"{device.name} ({report['cpu']}, PoCL target {report['pocl_target']}), "
          f"{args.repeats} rounds, load {report['loadavg_1min_before_after']}")
    print(f"ceiling {report['ceiling_gflops']:.0f} GFLOP/s; OpenCL copy {report['opencl_copy_gbs']:.1f} GB/s, "
          f"NumPy copy {report['numpy_copy_gbs']:.1f} GB/s; roof {report['bandwidth_gbs']:.1f} GB/s, "
          f"ridge {ridge:.1f} FLOP/byte")
    for name, p in report["points"].items():
        roof = min(report["ceiling_gflops"], p["intensity"] * report["bandwidth_gbs"])
        print(f"  {name:<16} {p['intensity']:7.1f} FLOP/byte {p['gflops']:7.1f} GFLOP/s "
              f"= {p['gflops'] / roof:.0%} of its roof")
    print(f"copy of {score_bytes / 2**20:.0f} MiB (the score tensor): {report['score_copy']['gbs']:.1f} GB/s")
    for p in report["dense_attention_passes"]:
        print(f"  dense {p['phase']:<16} {p['ms']:7.2f} ms  {p['flops'] / p['ms'] / 1e6:6.1f} GFLOP/s "
              f"{p['bytes'] / p['ms'] / 1e6:6.1f} GB/s of model traffic  ({', '.join(p['kernels'])})")


if __name__ == "__main__":
    main()
