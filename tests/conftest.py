"""Shared fixtures: the OpenCL device, and one strict build of the site per test session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent

# CI explores the same examples every run (a failure reproduces; nothing flaps on a
# lucky draw); local runs keep Hypothesis' random exploration.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def device():
    from netcl_lite.core.device import manager

    return manager.default()


@pytest.fixture(scope="session")
def queue(device):
    return device.queue


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """``mkdocs build --strict`` (without --quiet, which hides warnings from strict mode)."""
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{log[-6000:]}")
    warnings = [line for line in log.splitlines() if line.startswith("WARNING")]
    assert not warnings, "\n".join(warnings)
    return out
