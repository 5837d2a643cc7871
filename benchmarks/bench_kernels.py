"""Kernel benchmark: GEMM and attention forward against their anchors, in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_kernels.py

(unsetting those two lets OpenBLAS pick its own kernel for this CPU; the JSON
records which one threadpoolctl says it runs). Options: ``--no-8192`` drops the
T = 8192 attention rows, ``--repeats N`` sets the interleaved rounds (default 5); ``--gemm-only
--out FILE`` runs only the GEMM rows (n = 1024 and 2048, or ``--sizes``) into FILE.

What is timed, each as the median of interleaved rounds, each round a warm burst of calls:
  * GEMM float32 n³ for n in (256, 512, 1024, 2048): ``ops.matmul`` on device tensors
    (packing included), once waiting for each result and once queued (the calls of a burst
    run ahead of the host and one wait ends it, as in a chain of device ops), and on NumPy
    arrays (NumPy in, NumPy out: the call a reader makes), against ``numpy`` ``a @ b``
    (OpenBLAS).
  * Attention forward, B=1, H=8, d=64, T in (512, 2048, 4096, 8192), causal and not:
    ``ops.flash_attention`` and ``ops.attention`` (ours, dense) on device tensors,
    a dense NumPy float32 reference, and torch's CPU ``scaled_dot_product_attention``.
    Every method's output is checked against flash before it is timed.
  * Memory: for ours, the bytes of device buffers the op works in besides its output
    (``track_allocations``: new buffers plus reused work buffers); for NumPy,
    tracemalloc's peak over the call. torch's CPU allocator is not visible from Python.

Writes ``benchmarks/results/kernels.json`` (device, CPU, date, threads, rows) and
prints a table. PoCL runs on every core; torch and OpenBLAS get the same count.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import time
import tracemalloc
from pathlib import Path

import numpy as np

from netcl_lite import ops
from netcl_lite.core.device import manager
from netcl_lite.core.kernels import vector_lanes
from netcl_lite.core.stream import sync
from netcl_lite.core.tensor import Tensor, track_allocations
from machine import cpu_name

RESULTS = Path(__file__).resolve().parent / "results" / "kernels.json"
DENSE_LIMIT_BYTES = 3 * 2**30      # skip dense methods whose score matrices need more than this


def pocl_target(device) -> str:
    """The CPU PoCL's LLVM compiles for, e.g. 'rocketlake', 'znver3', or 'skylake-avx512' where the
    library chose it (PoCL 3.0 names an AMD Zen 5 'generic'; ``netcl_lite.core.compiler_target``)."""
    from netcl_lite.core import compiler_target

    return compiler_target.target_of(device) or device.version


def sched_batch_threads() -> int | None:
    """How many of this process's threads run under SCHED_BATCH (the PoCL workers the library
    pinned: ``netcl_lite.core.device.let_host_thread_lead``); None where that is not visible."""
    try:
        return sum(os.sched_getscheduler(int(t)) == os.SCHED_BATCH for t in os.listdir("/proc/self/task"))
    except (OSError, AttributeError):
        return None


def blas_info() -> list[dict] | str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed (pip install threadpoolctl)"
    keep = ("internal_api", "version", "architecture", "num_threads", "threading_layer")
    return [{k: d.get(k) for k in keep} for d in threadpool_info()]


SETTLE_S = 0.3   # OpenBLAS and OpenMP worker threads spin ~0.1 s after a call: let them sleep
BURST_S = 0.1    # time each method in a burst of back-to-back calls at least this long


def timed(fn, finish=None) -> float:
    """Seconds per call of ``fn``, warm: after a pause (other libraries' threads go to sleep), one
    untimed call wakes this library's threads and caches, then a burst of calls is timed. A
    single call right after the pause would measure waking the cores, not the op (at n = 256
    that is most of the time). With ``finish``, the calls do not wait for their own results:
    ``finish()`` runs once after the burst, inside the timing (the queue runs ahead, as it does
    in a chain of device ops)."""
    time.sleep(SETTLE_S)
    t = time.perf_counter()
    fn()
    if finish is not None:
        finish()
    first = time.perf_counter() - t
    calls = max(1, min(50, int(BURST_S / max(first, 1e-6))))
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    if finish is not None:
        finish()
    return (time.perf_counter() - t) / calls


def interleaved(methods: dict, repeats: int) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Median seconds per call for each method over ``repeats`` rounds, and every round's figure,
    methods alternating within a round; each round times a warm burst (see :func:`timed`) after a
    short pause, so that one library's spinning worker threads do not steal the cores from the next
    one's. A method is a callable, or a pair (call, finish) timed with one ``finish()`` per burst."""
    methods = {name: m if isinstance(m, tuple) else (m, None) for name, m in methods.items()}
    for fn, finish in methods.values():
        fn()                                         # warm-up: kernel builds, caches, page faults
        if finish is not None:
            finish()
    times = {name: [] for name in methods}
    for _ in range(repeats):
        for name, (fn, finish) in methods.items():
            times[name].append(timed(fn, finish))
    return {name: statistics.median(ts) for name, ts in times.items()}, times


# -- GEMM ------------------------------------------------------------------------

def bench_gemm(queue, n: int, repeats: int) -> dict:
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    ta, tb = Tensor.from_host(queue, a), Tensor.from_host(queue, b)
    ours = ops.matmul(ta, tb).numpy()
    err = max(float(np.abs(ours - a @ b).max()), float(np.abs(ops.matmul(a, b) - a @ b).max()))
    med, rounds = interleaved({"ours": lambda: (ops.matmul(ta, tb), sync(queue)),
                               "ours_queued": (lambda: ops.matmul(ta, tb), lambda: sync(queue)),
                               "ours_numpy_io": lambda: ops.matmul(a, b), "numpy": lambda: a @ b}, repeats)
    flops = 2.0 * n**3
    row = {"op": "gemm", "n": n, "max_abs_diff_vs_numpy": err}
    for name, sec in med.items():
        row[f"{name}_ms"], row[f"{name}_gflops"] = sec * 1e3, flops / sec / 1e9
        row[f"{name}_ms_rounds"] = [t * 1e3 for t in rounds[name]]   # round i of every method: one round
    row["ratio_vs_numpy"] = med["numpy"] / med["ours"]
    row["ratio_ours_queued_vs_numpy"] = med["numpy"] / med["ours_queued"]
    row["ratio_ours_numpy_io_vs_numpy"] = med["numpy"] / med["ours_numpy_io"]
    return row


# -- attention -------------------------------------------------------------------

def numpy_dense(q, k, v, causal):
    """softmax(q kᵀ / sqrt(d)) v in float32 NumPy, the whole (H, T, T) score tensor at once."""
    s = q @ np.swapaxes(k, -1, -2)
    s *= np.float32(1 / np.sqrt(q.shape[-1]))
    if causal:
        t = s.shape[-1]
        s[..., np.triu(np.ones((t, t), bool), 1)] = -np.inf
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s @ v


def bench_attention(queue, t: int, causal: bool, repeats: int, torch) -> dict:
    h, d = 8, 64
    rng = np.random.default_rng(t + causal)
    q, k, v = (rng.standard_normal((1, h, t, d)).astype(np.float32) for _ in range(3))
    dq, dk, dvv = (Tensor.from_host(queue, x) for x in (q, k, v))
    out_bytes = h * t * d * 4
    score_bytes = h * t * t * 4                      # one fp32 score matrix per head
    row = {"op": "attention", "B": 1, "H": h, "d": d, "T": t, "causal": causal,
           "score_matrix_bytes": score_bytes}

    with track_allocations() as seen:
        flash = ops.flash_attention(dq, dk, dvv, causal=causal).numpy()
    row["flash_extra_bytes"] = seen.bytes + seen.scratch_bytes - out_bytes
    methods = {"flash": lambda: (ops.flash_attention(dq, dk, dvv, causal=causal), sync(queue))}
    checks = {}

    dense_ok = 2 * score_bytes <= DENSE_LIMIT_BYTES  # ours stores scores and weights
    if dense_ok:
        with track_allocations() as seen:
            dense = ops.attention(dq, dk, dvv, causal=causal).numpy()
        row["dense_extra_bytes"] = seen.bytes + seen.scratch_bytes - out_bytes
        checks["dense"] = dense
        methods["dense"] = lambda: (ops.attention(dq, dk, dvv, causal=causal), sync(queue))
    else:
        row["dense_skipped"] = f"needs {2 * score_bytes / 2**30:.0f} GiB for scores + weights"

    if score_bytes <= DENSE_LIMIT_BYTES:            # NumPy works in place on one score tensor
        tracemalloc.start()
        checks["numpy"] = numpy_dense(q, k, v, causal)
        row["numpy_extra_bytes"] = tracemalloc.get_traced_memory()[1] - out_bytes
        tracemalloc.stop()
        methods["numpy"] = lambda: numpy_dense(q, k, v, causal)
    else:
        row["numpy_skipped"] = f"needs {score_bytes / 2**30:.0f} GiB for the score tensor"

    if torch is not None:
        tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        with torch.no_grad():
            checks["torch"] = sdpa(tq, tk, tv, is_causal=causal).numpy()

        def run_torch():
            with torch.no_grad():
                sdpa(tq, tk, tv, is_causal=causal)
        methods["torch"] = run_torch

    for name, result in checks.items():
        diff = float(np.abs(result - flash).max())
        row[f"max_abs_diff_{name}_vs_flash"] = diff
        if diff > 1e-4:
            raise AssertionError(f"T={t} causal={causal}: {name} differs from flash by {diff}")

    med, rounds = interleaved(methods, repeats)
    flops = 4.0 * h * t * t * d * (0.5 if causal else 1.0)   # the useful half when causal
    for name, sec in med.items():
        row[f"{name}_ms"] = sec * 1e3
        row[f"{name}_gflops"] = flops / sec / 1e9
        row[f"{name}_ms_rounds"] = [t * 1e3 for t in rounds[name]]   # round i of every method: one round
    for name in ("dense", "numpy", "torch"):
        if name in med:
            row[f"flash_speedup_vs_{name}"] = med[name] / med["flash"]
    return row


# -- report ----------------------------------------------------------------------

def mib(x):
    return "—" if x is None else f"{x / 2**20:.1f}"


def ms(row, name):
    return f"{row[name + '_ms']:.1f}" if name + "_ms" in row else "skip"


def ratio(row, name):
    key = f"flash_speedup_vs_{name}"
    return f"{row[key]:.2f}×" if key in row else "—"


def print_table(report: dict) -> None:
    print(f"\ndevice: {report['device']}  |  CPU: {report['cpu']}  |  threads: {report['threads']}  |  "
          f"load average before/after: {report['loadavg_1min_before_after']}")
    print(f"OpenBLAS: {report['numpy_blas']}")
    print("\nGEMM float32 (ours includes packing; 'queued' = one wait per burst; 'np io' = NumPy arrays in and out)")
    print(f"{'n':>6} {'ours ms':>9} {'queued ms':>10} {'np io ms':>9} {'numpy ms':>9} {'ours GF/s':>10} "
          f"{'numpy GF/s':>11} {'ours/numpy':>11} {'queued/numpy':>13} {'np io/numpy':>12}")
    for r in report["rows"]:
        if r["op"] == "gemm":
            print(f"{r['n']:>6} {r['ours_ms']:>9.2f} {r['ours_queued_ms']:>10.2f} {r['ours_numpy_io_ms']:>9.2f} "
                  f"{r['numpy_ms']:>9.2f} {r['ours_gflops']:>10.0f} {r['numpy_gflops']:>11.0f} "
                  f"{r['ratio_vs_numpy']:>10.2f}× {r['ratio_ours_queued_vs_numpy']:>12.2f}× "
                  f"{r['ratio_ours_numpy_io_vs_numpy']:>11.2f}×")
    print("\nAttention forward, B=1 H=8 d=64 (ms; speedup = other time / flash time; MiB = extra memory)")
    print(f"{'T':>6} {'causal':>6} {'flash':>8} {'dense':>8} {'numpy':>8} {'torch':>8} "
          f"{'vs dense':>9} {'vs numpy':>9} {'vs torch':>9} {'flash MiB':>10} {'dense MiB':>10} {'numpy MiB':>10}")
    for r in report["rows"]:
        if r["op"] == "attention":
            print(f"{r['T']:>6} {r['causal']!s:>6} {ms(r, 'flash'):>8} {ms(r, 'dense'):>8} {ms(r, 'numpy'):>8} "
                  f"{ms(r, 'torch'):>8} {ratio(r, 'dense'):>9} {ratio(r, 'numpy'):>9} {ratio(r, 'torch'):>9} "
                  f"{mib(r.get('flash_extra_bytes')):>10} {mib(r.get('dense_extra_bytes')):>10} "
                  f"{mib(r.get('numpy_extra_bytes')):>10}")
    for r in report["rows"]:
        for key in ("dense_skipped", "numpy_skipped"):
            if key in r:
                print(f"  T={r['T']} causal={r['causal']}: {key.split('_')[0]} skipped ({r[key]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timed rounds per row (median)")
    parser.add_argument("--no-8192", action="store_true", help="leave out the T = 8192 attention rows")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="torch and OpenBLAS threads (PoCL's count comes from POCL_MAX_PTHREAD_COUNT)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--gemm-only", action="store_true",
                        help="only the GEMM rows (n = 1024 and 2048 unless --sizes), written to --out alone "
                             "(results/kernels.md and Chapter 8's figures stay as they are)")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="GEMM sizes n (default 256 512 1024 2048)")
    args = parser.parse_args()
    if args.gemm_only and args.out == RESULTS:
        parser.error("--gemm-only writes a partial run: give --out another file (results/kernels.json is Chapter 8's)")

    device = manager.default()
    threads = args.threads
    pocl_threads = int(os.environ.get("POCL_MAX_PTHREAD_COUNT", os.cpu_count() or 1))
    if pocl_threads != threads:
        print(f"warning: PoCL runs {pocl_threads} threads, torch and OpenBLAS {threads}; "
              f"set POCL_MAX_PTHREAD_COUNT={threads} for a fair comparison")
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        torch = None
        print("torch not installed (pip install torch==2.13.0): the torch column stays empty")
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    except ImportError:
        print("threadpoolctl not installed: OpenBLAS keeps its own thread count")
    env_seen = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "POCL_MAX_PTHREAD_COUNT") if k in os.environ}
    if env_seen:
        print(f"note: benchmarking with {env_seen} set")

    load_before = os.getloadavg()
    rows = []
    sizes = args.sizes or ((1024, 2048) if args.gemm_only else (256, 512, 1024, 2048))
    for n in sizes:
        rows.append(bench_gemm(device.queue, n, args.repeats))
        print(f"gemm {n}: {rows[-1]['ratio_vs_numpy']:.2f}× numpy on device tensors "
              f"({rows[-1]['ratio_ours_queued_vs_numpy']:.2f}× queued), "
              f"{rows[-1]['ratio_ours_numpy_io_vs_numpy']:.2f}× with NumPy in and out", flush=True)
    for t in () if args.gemm_only else (512, 2048, 4096) + (() if args.no_8192 else (8192,)):
        for causal in (False, True):
            rows.append(bench_attention(device.queue, t, causal, args.repeats, torch))
            print(f"attention T={t} causal={causal}: {rows[-1].get('flash_speedup_vs_torch', float('nan')):.2f}× torch", flush=True)

    report = {
        "device": device.name, "platform": device.platform, "cpu": cpu_name(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "threads": threads, "pocl_threads": pocl_threads, "repeats": args.repeats,
        "loadavg_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "statistic": "median of interleaved rounds (each a warm burst of calls)", "pocl_target": pocl_target(device.cl_device),
        "pocl_vector_lanes": vector_lanes(device.cl_device),
        "pocl_affinity": os.environ.get("POCL_AFFINITY"),      # "1": workers pinned (netcl_lite.core.device)
        "sched_batch_threads": sched_batch_threads(),          # pinned workers that yield to the host thread
        "numpy": np.__version__, "torch": None if torch is None else torch.__version__,
        "numpy_blas": blas_info(), "environment": env_seen, "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    if args.gemm_only:
        print(f"\nwrote {args.out}")
        return
    print_table(report)
    from report_kernels import write  # the Markdown tables the Chapter 8 page includes

    print(f"\nwrote {args.out} and {write(args.out)}")


if __name__ == "__main__":
    main()
