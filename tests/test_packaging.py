"""The wheel carries the OpenCL sources, so an installed netcl_lite finds its kernels."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

import doc_blocks


@pytest.mark.slow
def test_wheel_ships_every_kernel_source(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(doc_blocks.ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = tmp_path.glob("netcl_lite-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {p.name for p in (doc_blocks.ROOT / "kernels").iterdir() if p.suffix in (".cl", ".h")}
    shipped = {n.rsplit("/", 1)[1] for n in names if n.startswith("netcl_lite/kernels/")}
    assert sources and sources <= shipped, f"missing from the wheel: {sorted(sources - shipped)}"
    assert "netcl_lite/capstone_seeds.json" in names, "capstone.seed_results() reads it beside the module"
