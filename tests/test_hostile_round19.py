"""Issue 58, round 19 (the lead's part): defects noticed in earlier rounds and left, each reproduced here
and failing on the code before its fix.

Each test asserts the correct behaviour.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from cli_model import TEXT, environment as _env, listing as _listing, write_model_folder


@pytest.fixture(scope="module")
def model_dir(queue, tmp_path_factory):
    return write_model_folder(queue, tmp_path_factory.mktemp("round19") / "model")


# -- a worker count the system cannot start ---------------------------------------------------------------

def test_a_worker_count_past_what_the_system_starts_is_named_not_an_abort(model_dir, tmp_path):
    """PoCL starts every worker a worker-count variable asks for as its device starts; at 32,000 the
    system refuses a thread (the maps ``vm.max_map_count`` allows run out) and PoCL aborts the process
    (SIGABRT, exit status 134, "PTHREAD ERROR in pthread_scheduler_init"), past any Python handler. The
    command line must name the variable and exit with status 1, writing nothing."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    out = tmp_path / "out.nclz"
    proc = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", str(src), str(out),
                           "--model", str(model_dir)], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, env=_env(POCL_MAX_PTHREAD_COUNT="32000", POCL_AFFINITY=None))
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-600:])
    assert "POCL_MAX_PTHREAD_COUNT" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-600:]
    assert _listing(tmp_path) == ["in.txt"]


@pytest.mark.parametrize("value, refused", [("4096", False), ("4097", True), (" +40000", True), ("0", False)])
def test_the_worker_count_bound_is_the_stated_one(monkeypatch, value, refused):
    """The library's own check (the device is made only after it): a count up to MAX_POCL_WORKERS
    passes, one past it is named with the bound, as PoCL's ``atoi`` reads it (space and sign)."""
    from netcl_lite.core import device

    monkeypatch.setenv("POCL_CPU_MAX_CU_COUNT", value)
    problem = device.worker_count_problem()
    if refused:
        assert problem is not None and "POCL_CPU_MAX_CU_COUNT" in problem and "4,096" in problem, problem
    else:
        assert problem is None, problem
