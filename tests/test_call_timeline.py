"""benchmarks/call_timeline.py keeps working as the library changes: its split of a waited call
is on one clock and adds up (a short run; the timings themselves are the benchmark's business)."""

from __future__ import annotations

import importlib.util

import pyopencl as cl
import pytest

import doc_blocks


def _timeline_module():
    path = doc_blocks.ROOT / "benchmarks" / "call_timeline.py"
    spec = importlib.util.spec_from_file_location("call_timeline", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_waited_call_splits_into_phases_that_add_up(queue):
    if not queue.device.type & cl.device_type.CPU:
        pytest.skip("the split reads PoCL's CPU-driver timestamps (CLOCK_MONOTONIC_RAW)")
    timeline = _timeline_module()
    timeline.check_clock(queue)
    t = timeline.timeline(queue, 64, 10)
    assert set(t) == set(timeline.PHASES)
    assert all(t[p] > 0 for p in timeline.PHASES), t
    # each phase is a median over calls, so the parts need not sum exactly; but the call
    # cannot be shorter than its Python, its kernel and its way back together
    assert t["total"] >= 0.9 * (t["python"] + t["kernel"] + t["back"]), t
