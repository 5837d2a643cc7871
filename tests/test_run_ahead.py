"""The host runs ahead of the device by a bounded amount: 100 training steps of a D = 128 block
that never read a value back grow the process's peak RSS by at most the default bound, 64 MiB.

What grows is what the queued ops hold alive (their operands). The stream releases it at a sync,
or, past the bound, the oldest half of it once the device has run those ops (it waits for them
then, whether they ran long ago or not), so the growth follows from the ops the host enqueues and
the bound, not from how fast the device is or how loaded the machine is. Past the bound the
newer ops stay queued: the device is never left without work by it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from netcl_lite.core import stream
from netcl_lite.core.tensor import Tensor

PROBE = Path(__file__).resolve().parent / "run_ahead_probe.py"

SMALL = 4 << 20       # a bound the unbounded loop passes many times over
#: more than the operands of any one op of the probe's block hold (the most, the SwiGLU backward's
#: three 8 x 64 x 384 float32 arrays, is 2.25 MiB): the bound is checked as an op opens, so the ops
#: held can pass it by that op's operands
ONE_OP = 4 << 20


@pytest.mark.slow
def test_a_loop_without_read_back_stays_within_the_pending_bound():
    env = dict(os.environ, POCL_MAX_PTHREAD_COUNT="1")
    runs = {limit: subprocess.Popen([sys.executable, str(PROBE), *([] if limit is None else [str(limit)])],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for limit in (None, SMALL, 1 << 40)}
    growth, pending = {}, {}
    for limit, proc in runs.items():
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-3000:]
        growth[limit], pending[limit] = (float(v) for v in out.strip().splitlines()[-1].split())
    report = {"RSS growth, MiB": growth, "peak pending, MiB": pending}
    for limit, bound in ((None, stream.PENDING_BYTES), (SMALL, SMALL)):
        # the loop reaches the bound (so it is what stops it) and goes no further than one op past it
        assert bound < pending[limit] * 2**20 <= bound + ONE_OP, report
        assert growth[limit] <= bound / 2**20, report
    # the same loop with the bound lifted holds more than the default bound allows, and the probe's
    # RSS sees growth past the small bound: the probe can see what a bound stops
    assert pending[1 << 40] * 2**20 > stream.PENDING_BYTES, report
    assert growth[1 << 40] > SMALL / 2**20, report


def test_the_pending_bound_is_configurable_and_checked():
    previous = stream.set_pending_limit(1 << 20)
    try:
        assert stream.PENDING_BYTES == 1 << 20 and previous == 64 << 20
    finally:
        stream.set_pending_limit(previous)
    for bad in (-1, 1.5, True, "64"):
        with pytest.raises(ValueError, match="nbytes must be a non-negative int"):
            stream.set_pending_limit(bad)


def test_the_peak_pending_bytes_count_each_buffer_once_and_outlive_a_sync(queue):
    s = stream.Stream(queue)
    a, b = (Tensor.from_host(queue, np.zeros(n, np.float32)) for n in (1000, 3000))
    view = a.reshape(10, 100)                         # the same buffer as a
    assert s.peak_pending_bytes == 0
    s.begin("first", {"x": a, "y": b})
    s.begin("second", {"x": view, "y": b, "n": 3})    # nothing new held
    assert s.peak_pending_bytes == a.nbytes + b.nbytes
    s.sync()
    s.begin("after the sync", {"x": a})               # held again, below the peak
    assert s.peak_pending_bytes == a.nbytes + b.nbytes
    s.peak_pending_bytes = 0
    s.begin("after a reset", {"y": b})
    assert s.peak_pending_bytes == a.nbytes + b.nbytes   # a and b both held since the sync
    s.sync()


def test_the_peak_pending_bytes_stay_within_the_bound_plus_one_op(queue):
    s = stream.Stream(queue)
    buffers = [Tensor.from_host(queue, np.zeros(256, np.float32)) for _ in range(12)]   # 1 KiB each
    previous = stream.set_pending_limit(3 << 10)
    try:
        for i in range(0, 12, 2):
            s.begin(f"op {i}", {"x": buffers[i], "y": buffers[i + 1]})
    finally:
        stream.set_pending_limit(previous)
        s.sync()
    # held before each op: 0, 2, 4 KiB (past 3 KiB: the next op syncs first), 0, 2, 4
    assert s.peak_pending_bytes == 4 << 10


def test_past_the_bound_the_oldest_ops_are_released_and_the_newest_stay_queued(queue):
    from netcl_lite import ops

    s = stream.stream_of(queue)
    s.sync()
    xs = [Tensor.from_host(queue, np.ones(1 << 16, np.float32)) for _ in range(12)]     # 256 KiB each
    previous = stream.set_pending_limit(1 << 20)
    try:
        outs = [ops.scale(x, 2.0) for x in xs]                        # each op holds its input
        assert s._ops, "the bound drained the queue"
        assert s._held_bytes <= (1 << 20) + xs[0].nbytes
        released = [r for r in s._ops if not r.operands]
        assert released and len(released) < len(s._ops), "the oldest ops' operands go, the newest stay"
    finally:
        stream.set_pending_limit(previous)
    assert all(np.array_equal(o.numpy(), np.full(1 << 16, 2.0, np.float32)) for o in outs)


def test_a_failure_before_a_release_is_still_named(queue):
    from netcl_lite import ops
    from netcl_lite.core.stream import NonFiniteError

    s = stream.stream_of(queue)
    s.sync()
    bigs = [Tensor.from_host(queue, np.full(1 << 16, 3e38, np.float32)) for _ in range(13)]
    previous = stream.set_pending_limit(1 << 20)
    try:
        with pytest.raises(NonFiniteError, match="scale produced inf or NaN from finite inputs"):
            ops.scale(bigs[0], 10.0)                                  # overflows: reported by its kernel
            for big in bigs[1:]:                                      # past the bound: a release checks it
                ops.scale(big, 0.5)
            pytest.fail("no release checked the status word within 12 ops past the bound")
        assert not s._ops
    finally:
        stream.set_pending_limit(previous)
