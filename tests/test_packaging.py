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
    tops = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert tops == {"netcl_lite"}, f"the wheel carries the library alone, not the site's build: {sorted(tops)}"


def test_the_build_is_one_plugin_registered_by_entry_point():
    """mkdocs.yml names no loose hooks: the build is site_build, which pyproject.toml registers under
    the mkdocs.plugins entry point and the site's configuration uses as a plugin."""
    import tomllib

    from mkdocs.config import load_config
    from mkdocs.plugins import BasePlugin

    project = tomllib.loads((doc_blocks.ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["mkdocs.plugins"] == {"site_build": "site_build.plugin:SiteBuild"}
    config = load_config(str(doc_blocks.ROOT / "mkdocs.yml"))
    assert not config.hooks and not (doc_blocks.DOCS / ".hooks").exists()
    plugin = config.plugins["site_build"]
    assert isinstance(plugin, BasePlugin) and type(plugin).__module__ == "site_build.plugin"
