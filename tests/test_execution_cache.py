"""The build's execution cache cannot serve a stale output: every input that could change an
output changes its key, and a changed key runs the item again."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from build_hooks import load_hook
from netcl_lite import execution_cache as cache

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def library_copy(tmp_path, monkeypatch):
    """The key reads a copy of the library (every .py and kernel), which the test may edit."""
    copies = []
    for path in cache.library_sources():
        rel = path.relative_to(ROOT)
        copy = tmp_path / "library" / rel
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
        copies.append(copy)
    monkeypatch.setattr(cache, "library_sources", lambda: copies)
    return {c.relative_to(tmp_path / "library").as_posix(): c for c in copies}


def test_the_key_reads_every_library_source_and_kernel():
    listed = {p.relative_to(ROOT).as_posix() for p in cache.library_sources()}
    expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / "netcl_lite").rglob("*.py")}
    expected |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "kernels").iterdir() if p.suffix in (".cl", ".h")}
    assert listed == expected
    assert any(name.endswith(".cl") for name in listed) and "netcl_lite/ops/matmul.py" in listed


@pytest.mark.parametrize("edited", ["kernels/matmul.cl", "kernels/common.h", "netcl_lite/ops/matmul.py",
                                    "netcl_lite/text/bpe.py", "netcl_lite/execution_cache.py"])
def test_editing_a_kernel_or_a_library_file_changes_the_key(library_copy, edited):
    before = cache.key("print(1)\n")
    assert cache.key("print(1)\n") == before, "the key must be deterministic"
    path = library_copy[edited]
    path.write_bytes(path.read_bytes() + b"\n")      # even a blank line
    assert cache.key("print(1)\n") != before


def test_the_source_the_files_it_reads_the_packages_and_the_device_choice_change_the_key(tmp_path, monkeypatch):
    shared = cache.context()
    base = cache.key("print(1)\n", shared=shared)
    assert cache.key("print(2)\n", shared=shared) != base
    data = tmp_path / "results.json"
    data.write_text("{}")
    with_data = cache.key("print(1)\n", [data], shared=shared)
    assert with_data != base
    data.write_text('{"T": 1}')
    assert cache.key("print(1)\n", [data], shared=shared) != with_data
    monkeypatch.setenv("NETCL_LITE_POCL_CPU", "haswell")          # a compiler target is a different output
    assert cache.context() != shared
    monkeypatch.delenv("NETCL_LITE_POCL_CPU")
    monkeypatch.setattr(cache, "PACKAGES", cache.PACKAGES + ("pytest",))
    assert cache.context() != shared
    env = cache.environment()
    assert "numpy==" in env and "pyopencl==" in env and sys.version in env
    import pyopencl as cl

    for device in (d for p in cl.get_platforms() for d in p.get_devices()):
        assert cache.device_description(device) in env


def test_a_snippet_a_figure_and_a_drill_change_their_keys(tmp_path):
    snippet = tmp_path / "bits.py"
    snippet.write_text("print(1)\n")
    build_output = load_hook("build_output")
    key = build_output.snippet_key(str(snippet))
    snippet.write_text("print(2)\n")
    assert build_output.snippet_key(str(snippet)) != key

    generated = load_hook("generated")
    figure = ROOT / "snippets" / "chapter8" / "figure_gemm.py"
    reads = generated.figure_reads(figure)
    assert ROOT / "benchmarks" / "results" / "kernels.json" in reads, "a Chapter 8 figure is drawn from kernels.json"
    assert generated.figure_reads(ROOT / "snippets" / "week22" / "figure_rope.py") == []
    week = tmp_path / "week99"
    week.mkdir()
    (week / "drill_1_x.py").write_text("# Step 1\nprint(1)\n")
    first = cache.key(str(generated.drill_notebook(week)))
    (week / "drill_1_x.py").write_text("# Step 1\nprint(3)\n")
    assert cache.key(str(generated.drill_notebook(week))) != first


def test_a_build_output_runs_once_per_key_and_again_after_an_edit_or_a_forced_rerun(tmp_path, monkeypatch,
                                                                                    library_copy):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "store"))
    runs = tmp_path / "runs.txt"
    snippet = tmp_path / "counted.py"
    source = f"open({str(runs)!r}, 'a').write('x')\nprint('value', {{}})\n"
    snippet.write_text(source.format(1))
    hook = load_hook("build_output")
    hook.on_pre_build(None)
    assert hook.cached_output(str(snippet)) == "value 1\n"
    assert hook.cached_output(str(snippet)) == "value 1\n" and runs.read_text() == "x", "a hit must not run"
    snippet.write_text(source.format(2))
    assert hook.cached_output(str(snippet)) == "value 2\n" and runs.read_text() == "xx"
    library_copy["kernels/softmax.cl"].write_text("// edited\n")
    hook.on_pre_build(None)                        # a new build sees the edited library
    assert hook.cached_output(str(snippet)) == "value 2\n" and runs.read_text() == "xxx"
    monkeypatch.setenv(cache.RERUN, "1")
    assert hook.cached_output(str(snippet)) == "value 2\n" and runs.read_text() == "xxxx"


def test_store_and_lookup(tmp_path, monkeypatch):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path))
    assert cache.lookup("figure", "abc") is None
    cache.store("figure", "abc", b"<svg/>")
    assert cache.lookup("figure", "abc") == b"<svg/>"
    assert (tmp_path / "executed" / "figure" / "abc").is_file()
    monkeypatch.setenv(cache.RERUN, "1")
    assert cache.lookup("figure", "abc") is None
    with pytest.raises(ValueError, match="kind must be a plain name"):
        cache.store("../x", "abc", b"")


def test_a_source_checkout_keeps_the_store_in_its_own_cache_folder(monkeypatch):
    monkeypatch.delenv("NETCL_LITE_CACHE", raising=False)
    assert cache.cache_root() == ROOT / ".cache" / "netcl_lite"      # git-ignored: a fresh clone runs everything
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert "/.cache/" in ignored


def test_keys_name_files_the_same_in_a_checkout_and_an_installed_wheel():
    """A wheel keeps the kernels inside the package; a key names them ``kernels/<file>`` either
    way, so an install of the same files finds what a checkout stored (and the reverse)."""
    from netcl_lite.core.kernels import kernel_dir

    assert cache._file_name(kernel_dir() / "matmul.cl") == "kernels/matmul.cl"
    assert cache._file_name(cache.PACKAGE / "ops" / "matmul.py") == "netcl_lite/ops/matmul.py"
    names = [cache._file_name(p) for p in cache.library_sources()]
    assert len(names) == len(set(names)) and "kernels/matmul.cl" in names


def test_the_training_run_keys_on_the_packages_the_library_computes_with_only():
    """The build's plotting and Jupyter packages change figures and notebooks, not a training run:
    the capstone's key leaves them out (a reader's install without them finds the run), the
    build's keeps them."""
    run = cache.environment(packages=cache.RUN_PACKAGES)
    build = cache.environment()
    assert "matplotlib" not in run and "ipykernel" not in run
    assert "matplotlib" in build and "numpy==" in run and "pyopencl==" in run
