"""What the kernel and gradient tests share: float32 inputs, ragged sizes, random attention
cases, and the float64 finite-difference gradient check.

``gradcheck`` runs an op on the device under a Tape, pulls back a random
output gradient R, and compares each input's float32 gradient with the float64
finite-difference gradient of ``sum(f64(inputs) * R)`` (same float32-rounded
inputs). The differences run in float64 with h = 1e-6: truncation (~h²) and
cancellation (~1e-16/h) stay below 1e-9 relative, so the error budget is the
device's float32 rounding alone. A forward and backward chain whose longest
inner sum has n terms carries about n·u (u = 2⁻²⁴) error relative to the
magnitudes it sums; with a few such stages and cancellation in between we allow
``tol = 16·(n + 16)·u`` of the gradient's largest entry (1e-4 at n = 100).
A wrong rule is off by O(1), so the check keeps its power.
"""

from __future__ import annotations

import numpy as np

from netcl_lite import autograd as ag
from netcl_lite import ops, reference
from netcl_lite.core import kernels
from netcl_lite.testing import EPS32, assert_close, matmul_atol

#: sizes around tile and work-group edges (tiles of 4, 6, 8, 16, 64 ...)
RAGGED = [1, 2, 3, 5, 7, 13, 17, 31, 33, 63, 65, 100]


def f32(x):
    return np.asarray(x, np.float32)


def built_options(file: str, name: str, having: str | None = None) -> set[str]:
    """Every build option kernel ``name`` of ``kernels/<file>`` has been compiled with so far, over
    the builds that include option ``having`` (all builds by default). The kernel cache is keyed
    by the options, so this is how a test shows that it ran the build it names."""
    return {o for (_, f, options, n) in kernels._kernels
            if (f, n) == (file, name) and (having is None or having in options) for o in options}


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def check_matmul_transposes(rng, cases, batches, what=""):
    """``ops.matmul`` on each (m, k, n) case with a's and b's batch axes, under all four transposes,
    against the float64 reference within ``matmul_atol``."""
    for (m, k, n), (ba, bb) in zip(cases, batches, strict=True):
        for ta, tb in [(False, False), (True, False), (False, True), (True, True)]:
            a = f32(rng.standard_normal(ba + ((k, m) if ta else (m, k))))
            b = f32(rng.standard_normal(bb + ((n, k) if tb else (k, n))))
            got = ops.matmul(a, b, transpose_a=ta, transpose_b=tb)
            aa = np.swapaxes(a, -1, -2) if ta else a
            bt = np.swapaxes(b, -1, -2) if tb else b
            assert_close(got, reference.matmul(a, b, transpose_a=ta, transpose_b=tb), rtol=0,
                         atol=matmul_atol(aa, bt), what=f"{what} {a.shape}x{b.shape} ta={ta} tb={tb}")


def random_dims(rng, n, k, high=130):
    """n draws of k sizes: half from ragged sizes around tile edges, half uniform."""
    for i in range(n):
        yield tuple(int(rng.choice(RAGGED)) if i % 2 else int(rng.integers(1, high)) for _ in range(k))


def qkv(rng, batch, heads, groups, tq, tk, d, dv, scale=1.0):
    return (f32(rng.standard_normal((batch, heads, tq, d)) * scale),
            f32(rng.standard_normal((batch, groups, tk, d))),
            f32(rng.standard_normal((batch, groups, tk, dv))))


def random_attention_case(rng, i):
    """(q, k, v, mask, causal): a random shape and mask kind; every fifth case is MQA.

    Masks cycle through none, key padding (B, 1, 1, Tk), a rectangular (Tq, Tk) mask and
    causal (end-aligned when Tq < Tk), every other causal case with key padding too.
    """
    tq, tk = (int(rng.choice(RAGGED)) if i % 2 else int(rng.integers(1, 90)) for _ in range(2))
    d = int(rng.choice([1, 3, 8, 13, 16, 24, 33, 64]))
    dv = int(rng.choice([1, 5, 8, 16, 31, 64]))
    heads = int(rng.choice([1, 2, 4, 6]))
    groups = 1 if i % 5 == 0 else int(rng.choice([g for g in (1, 2, 3, 6) if heads % g == 0]))
    q, k, v = qkv(rng, int(rng.integers(1, 3)), heads, groups, tq, tk, d, dv)
    mask, causal = None, False
    kind = i % 4
    if kind == 1:                                  # padding over keys: (B, 1, 1, Tk)
        mask = rng.random((q.shape[0], 1, 1, tk)) < 0.7
        mask[..., int(rng.integers(tk))] = True
    elif kind == 2:                                # rectangular cross-attention mask (Tq, Tk)
        mask = rng.random((tq, tk)) < 0.5
        mask[np.arange(tq), rng.integers(0, tk, tq)] = True
    elif kind == 3 and tq <= tk:                   # causal, end-aligned when Tq < Tk
        causal = True
        if i % 8 == 3:                             # ... plus padding that keeps the first key
            mask = rng.random((q.shape[0], 1, 1, tk)) < 0.8
            mask[..., 0] = True
    return q, k, v, mask, causal


def tol_for(n: int) -> float:
    """Allowed error relative to the gradient's largest entry for inner sums of n terms."""
    return 16 * (n + 16) * EPS32


def fd_grad(f64, args, i, r, h=1e-6):
    """∂/∂args[i] of Σ f64(*args)·r by central differences, all in float64."""
    args = [np.array(a, np.float64) for a in args]
    x, g = args[i], np.empty(np.shape(args[i]))
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + h
        up = np.sum(f64(*args) * r)
        x[idx] = old - h
        down = np.sum(f64(*args) * r)
        x[idx] = old
        g[idx] = (up - down) / (2 * h)
    return g


def gradcheck(f_ag, f64, *inputs, n: int, which=None, seed=0, what=""):
    """Check the device gradient of every input in ``which`` (default all) against float64 differences."""
    rng = np.random.default_rng(seed)
    inputs = [np.asarray(x, np.float32) for x in inputs]
    with ag.Tape() as tape:
        nodes = [ag.tensor(x) for x in inputs]
        out = f_ag(*nodes)
    expected = f64(*inputs)
    assert out.shape == np.shape(expected), f"{what}: output shape {out.shape} != {np.shape(expected)}"
    if out.value.size == 1 and out.shape == ():
        r32, grad = np.float32(1.0), None
    else:
        r32 = rng.standard_normal(out.shape).astype(np.float32)
        grad = r32
    tape.backward(out, grad=grad)
    for i in range(len(inputs)) if which is None else which:
        g64 = fd_grad(f64, inputs, i, np.float64(r32))
        got = nodes[i].grad.numpy()
        scale = np.abs(g64).max()
        assert_close(got, g64, rtol=0, atol=tol_for(n) * scale + 1e-30, what=f"{what} d/d input {i}")


def record_launches(monkeypatch) -> list[tuple[str, tuple]]:
    """(kernel name, build options) of every launch from here to the test's end, in order: the
    list fills as ``Stream.launch`` runs (patched for the test)."""
    from netcl_lite.core.stream import Stream

    launched = []
    launch = Stream.launch
    monkeypatch.setattr(Stream, "launch", lambda self, f, name, *rest, **kw: (
        launched.append((name, kw.get("options", ()))), launch(self, f, name, *rest, **kw)))
    return launched


def runs_on_one_and_two_pocl_threads(queue, child_source: str, timeout: int = 900) -> list[dict]:
    """The JSON the program ``child_source`` prints last, from two fresh processes: one PoCL thread
    (compute unit) and two (``POCL_MAX_PTHREAD_COUNT``). The program reports the device's compute
    units as "units"; this checks them (1, 2) and drops them, so the two dicts compare equal when
    nothing else differs. Skips where the device is not PoCL's CPU driver."""
    import json
    import os
    import subprocess
    import sys

    import pyopencl as cl
    import pytest

    if queue.device.platform.name != "Portable Computing Language" or not queue.device.type & cl.device_type.CPU:
        pytest.skip("POCL_MAX_PTHREAD_COUNT sets the compute units of PoCL's CPU driver only")
    runs = []
    for threads in ("1", "2"):
        env = dict(os.environ, POCL_MAX_PTHREAD_COUNT=threads)
        proc = subprocess.run([sys.executable, "-c", child_source], env=env, capture_output=True, text=True,
                              timeout=timeout)
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert (runs[0].pop("units"), runs[1].pop("units")) == (1, 2)
    return runs

