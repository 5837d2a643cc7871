"""The kernels on a simulated GPU: Oclgrind (Debian's ``oclgrind``) runs a tiny model's training step
and generation, and every ops family at ragged shapes and two work-group sizes, and reports each
out-of-bounds access (private arrays indexed past their declared bounds included), data race and
barrier divergence. No GPU is lent to this project; this is how the kernels' portability is checked.
Every program builds the kernels as OpenCL C 1.2 (``-cl-std=CL1.2``, ``oclgrind/opencl12.py``), the
version Apple's OpenCL stops at, so a kernel that uses an OpenCL 2.0 feature fails to build here.

The ``oclgrind`` wrapper preloads its OpenCL runtime into the child process, so the child sees one
platform, "Oclgrind", whose device the library takes as a GPU; the parent keeps PoCL. Every program
runs under Oclgrind and on the default device, at once (the runs are independent): each must report
nothing, the ops' forwards must match their float64 references (checked in the child), and every
output and gradient must agree between the two devices to float32 precision.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.oclgrind

PROGRAMS = Path(__file__).resolve().parent / "oclgrind"
#: Oclgrind's flags: data-race detection (out-of-bounds checks are always on)
FLAGS = ["--data-races"]
RUNS = {                                     # name: (program, arguments before the output file)
    "tiny_lm": ("tiny_lm.py", []),
    "ops_native": ("ops_families.py", ["native"]),
    "ops_wide": ("ops_families.py", ["wide"]),
}


def oclgrind() -> str:
    """The ``oclgrind`` command; installed with apt-get when missing and we are root, else a failure
    that says what to install (a missing layer is not a passing one)."""
    found = shutil.which("oclgrind")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.fail("oclgrind is not installed; install Debian's package: apt-get install oclgrind")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "oclgrind"]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode:
            pytest.fail(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    found = shutil.which("oclgrind")
    assert found, "apt-get installed oclgrind but the command is not on PATH"
    return found


def error_count(log: str) -> int:
    """Oclgrind's reports in its log: each names the kernel it happened in."""
    return sum(1 for line in log.splitlines() if line.strip().startswith("Kernel:"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every program under Oclgrind and on the default device, all started together."""
    command = oclgrind()
    tmp = tmp_path_factory.mktemp("oclgrind")
    env = dict(os.environ, POCL_MAX_PTHREAD_COUNT="1")     # the PoCL runs share two cores with Oclgrind
    procs = {}
    start, cpu_before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    for name, (program, args) in RUNS.items():
        for device in ("oclgrind", "default"):
            out = tmp / f"{name}.{device}.npz"
            cmd = [sys.executable, str(PROGRAMS / program), *args, str(out)]
            log = tmp / f"{name}.{device}.log"
            if device == "oclgrind":
                cmd = [command, *FLAGS, "--log", str(log), *cmd]
            procs[name, device] = (subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                    text=True), out, log)
    done = {}
    for key, (proc, out, log) in procs.items():
        try:
            output, _ = proc.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            proc.kill()
            output = proc.communicate()[0] + "\n(killed after 900 s)"
        report = log.read_text(errors="replace") if log.exists() else ""
        done[key] = {"rc": proc.returncode, "output": output, "log": report, "file": out}
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"\nOclgrind layer: {time.monotonic() - start:.0f} s wall, "
          f"{cpu.ru_utime + cpu.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime:.0f} s CPU")
    return done


def _check(runs, name: str, tolerance: float) -> None:
    sim, native = runs[name, "oclgrind"], runs[name, "default"]
    assert native["rc"] == 0, native["output"][-3000:]
    assert sim["rc"] == 0, f"under Oclgrind:\n{sim['output'][-3000:]}\n{sim['log'][-3000:]}"
    assert sim["output"].splitlines()[-1].startswith("Oclgrind: "), "the child did not run on Oclgrind's device"
    for run in (sim, native):
        assert re.search(r"^OpenCL C 1\.2: [1-9]\d* programs built with -cl-std=CL1\.2$", run["output"], re.M), \
            f"{name}: the kernels were not built as OpenCL C 1.2:\n{run['output'][-2000:]}"
    assert sim["log"].strip() == "", (f"Oclgrind reported {error_count(sim['log'])} errors; the first:\n"
                                      f"{sim['log'][:4000]}")
    with np.load(sim["file"]) as a, np.load(native["file"]) as b:
        assert sorted(a.files) == sorted(b.files)
        for key in a.files:
            x, y = a[key], b[key]
            scale = 1 + float(np.max(np.abs(y), initial=0))
            assert x.shape == y.shape and float(np.max(np.abs(x - y), initial=0)) <= tolerance * scale, \
                f"{name}: {key} differs between Oclgrind and the default device: {x} vs {y}"


def test_error_count_reads_oclgrinds_report_format():
    report = ("Index (8) exceeds static array size (8)\n\tKernel: flash_attention_tiled\n\tEntity: Global(0,1,0)\n\n"
              "Invalid read of size 4 at global memory address 0x1000000000040\n\tKernel: matmul_packed\n")
    assert error_count(report) == 2 and error_count("") == 0


def test_every_ops_family_is_clean_and_agrees_at_the_librarys_work_group_sizes(runs):
    # same kernels, same float32 operations, summation order aside: a few ulps of values ~10
    _check(runs, "ops_native", 1e-5)


def test_every_ops_family_is_clean_and_agrees_at_gpu_work_group_sizes(runs):
    _check(runs, "ops_wide", 1e-5)


def test_a_tiny_model_trains_and_generates_cleanly(runs):
    # losses after two AdamW steps: Adam's first steps move each weight by ~lr·sign(g), so a
    # gradient within rounding of 0 may step either way; 1e-4 of the loss covers that at lr 1e-2
    _check(runs, "tiny_lm", 1e-4)
