"""Where the time of one ``ops.matmul`` on device tensors goes when the caller waits for it.

    python benchmarks/call_timeline.py [--sizes 64 256 512 1024 --calls 60]

A call followed by a wait (``sync``) is timed as the benchmarks time it, in a burst of
back-to-back waited calls, and split with the host clock and the kernel's OpenCL profiling
timestamps. PoCL's CPU driver stamps its events with ``CLOCK_MONOTONIC_RAW``, the clock
read here, so both sets of times are on one axis (the script checks this first with a
marker event: its ``queued`` stamp must fall between two host readings around the enqueue).

Per size, medians over the calls (the first tenth left out as warm-up):

* ``python``: from the call's start until the kernel is queued: the op's argument checks,
  the output buffer, the launch plan and setting the kernel's arguments;
* ``enqueue``: from then until the op returns (PoCL's ``clEnqueueNDRangeKernel``, which
  wakes its worker threads when the queue was idle, and what the op does after it);
* ``to start``: from the kernel being queued to its first work-group starting (it overlaps
  ``enqueue``: both count from the moment the kernel is queued);
* ``kernel``: the kernel's run, start to end;
* ``back``: from the kernel's end until ``sync`` returns (the status word's read, which
  waits behind the kernel in the in-order queue, and the host thread waking up);
* ``total``: the whole waited call; ``kernel share`` = kernel / total.

NumPy's ``a @ b`` is timed beside it in the same kind of burst, for scale. Nothing here is
a pass/fail test.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import netcl_lite as nl
from netcl_lite import ops
from netcl_lite.core.stream import stream_of, sync

CLOCK = time.CLOCK_MONOTONIC_RAW
PHASES = ("python", "enqueue", "to start", "kernel", "back", "total")


def now() -> int:
    return time.clock_gettime_ns(CLOCK)


def check_clock(queue) -> None:
    """Refuse to split times if PoCL's event stamps are not on this script's clock."""
    import pyopencl as cl  # noqa: PLC0415

    inside = 0
    for _ in range(20):
        before = now()
        event = cl.enqueue_marker(queue)
        after = now()
        event.wait()
        inside += before <= event.profile.queued <= after
    if inside < 15:
        raise SystemExit("the device's profiling timestamps are not on CLOCK_MONOTONIC_RAW; "
                         "this split needs PoCL's CPU driver")


def timeline(queue, n: int, calls: int) -> dict[str, float]:
    rng = np.random.default_rng(n)
    a, b = (nl.Tensor.from_host(queue, rng.standard_normal((n, n)).astype(np.float32)) for _ in range(2))
    stream = stream_of(queue)
    rows = []
    ops.matmul(a, b)
    sync(queue)
    for _ in range(calls):
        stream.profile = []
        t0 = now()
        ops.matmul(a, b)
        t1 = now()
        sync(queue)
        t2 = now()
        events, stream.profile = stream.profile, None
        kernels = [event.profile for label, _, event in events if label.endswith("matmul_packed")]
        if len(kernels) != 1:
            raise SystemExit(f"expected one matmul_packed launch per call at n = {n}, got {len(events)} launches")
        k = kernels[0]
        rows.append((k.queued - t0, t1 - k.queued, k.start - k.queued, k.end - k.start, t2 - k.end, t2 - t0))
    rows = rows[calls // 10:]
    return {name: statistics.median(r[i] for r in rows) / 1e3 for i, name in enumerate(PHASES)}


def numpy_us(n: int, calls: int) -> float:
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    a @ b
    times = []
    for _ in range(calls):
        t0 = now()
        a @ b
        times.append(now() - t0)
    return statistics.median(times[calls // 10:]) / 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 512, 1024])
    ap.add_argument("--calls", type=int, default=60)
    args = ap.parse_args()
    if args.calls < 10 or any(n < 64 for n in args.sizes):
        ap.error("--calls must be at least 10 and every size at least 64 (smaller products take another kernel)")
    device = nl.device()
    queue = device.queue
    check_clock(queue)
    print(f"{device.name}; waited ops.matmul on device tensors, n x n x n, medians of {args.calls} calls (µs)")
    print(f"{'n':>6} " + " ".join(f"{p:>9}" for p in PHASES) + "  kernel share   NumPy a @ b")
    for n in args.sizes:
        t = timeline(queue, n, args.calls)
        time.sleep(0.3)                                   # let our workers sleep before OpenBLAS runs
        ref = numpy_us(n, args.calls)
        time.sleep(0.3)
        print(f"{n:>6} " + " ".join(f"{t[p]:9.1f}" for p in PHASES)
              + f"  {t['kernel'] / t['total']:11.0%}   {ref:10.1f}")


if __name__ == "__main__":
    main()
