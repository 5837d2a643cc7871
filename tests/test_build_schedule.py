"""The build's schedule: what runs ahead of the pages on every core, and what runs alone; and how
pytest-xdist hands the tests to its workers."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import scope

from site_build import capstone_run, markers
from site_build.paths import DOCS, ROOT

#: what reads a clock, written independently of capstone_run.TIMES
_CLOCK = re.compile(r"\btime\.\w+\(|perf_counter|process_time|timeit")


def _marked() -> list[str]:
    return sorted({m["path"] for page in DOCS.rglob("*.md")
                   for m in markers.BUILD_OUTPUT.finditer(page.read_text(encoding="utf-8"))})


@pytest.fixture
def commands(monkeypatch):
    ran = []

    def record(cmd, **kwargs):
        ran.append(cmd[2:])
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(capstone_run.subprocess, "run", record)
    return ran


def test_what_runs_ahead_reads_no_clock_and_every_timed_snippet_waits_for_its_page(commands, monkeypatch):
    monkeypatch.setattr(capstone_run.store, "lookup", lambda kind, key: None)       # nothing stored yet
    capstone_run.run_ahead(lanes=1)
    assert commands[0] == [capstone_run._MEASURES], "the measures start first"
    assert commands[-1] == [capstone_run._FIGURES_AND_NOTEBOOKS]
    ahead = {args[1] for args in commands if args[0] == capstone_run._SNIPPET}
    assert len(commands) == len(ahead) + 2
    timed = set(_marked()) - ahead
    for path in ahead:
        assert not _CLOCK.search((ROOT / path).read_text(encoding="utf-8")), f"{path} reads a clock yet runs ahead"
    for path in timed:
        assert _CLOCK.search((ROOT / path).read_text(encoding="utf-8")), f"{path} reads no clock yet waits for its page"
    assert "snippets/chapter9/coders.py" in timed and "snippets/chapter9/mixing.py" in ahead


def test_a_stored_output_is_not_run_ahead(commands, monkeypatch):
    monkeypatch.setattr(capstone_run.store, "lookup", lambda kind, key: b"stored\n")
    capstone_run.run_ahead(lanes=2)
    assert sorted(map(tuple, commands)) == sorted([(capstone_run._MEASURES,), (capstone_run._FIGURES_AND_NOTEBOOKS,)])


def test_a_forced_rerun_runs_nothing_ahead(commands, monkeypatch, tmp_path):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path))
    monkeypatch.setenv("NETCL_LITE_RERUN", "1")
    capstone_run.train()
    assert commands == [["from netcl_lite import capstone; capstone.run(progress=True)"]]


@pytest.mark.slow
def test_under_xdist_each_test_file_runs_whole_in_one_worker(tmp_path):
    """``pytest -n`` hands a worker a whole test file (tests/conftest.py's ``scope``), so a file's
    module fixtures (a reader's venv, the Oclgrind runs) are made once. Two small files on two
    workers: every test of a file reports from one worker."""
    files = ["tests/test_masks.py", "tests/test_install_hints.py"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}     # not this run's worker
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider",
                           f"--basetemp={tmp_path / 'run'}", *files],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    workers = {}
    for worker, path in re.findall(r"^\[(gw\d+)\] \[ *\d+%\] PASSED (\S+?)::", proc.stdout, re.M):
        workers.setdefault(path, set()).add(worker)
    assert sorted(workers) == sorted(files), proc.stdout[-3000:]
    assert all(len(w) == 1 for w in workers.values()), f"a file's tests ran on several workers: {workers}"


def test_the_browser_pages_are_the_only_tests_handed_out_one_by_one():
    assert scope("tests/test_reader.py::test_block[chapter-9.md]") == "tests/test_reader.py"
    assert scope("tests/test_oclgrind.py::test_a_tiny_model_trains_and_generates_cleanly") == "tests/test_oclgrind.py"
    page = "tests/test_browser.py::test_page_renders_offline_in_chromium[print_page/index.html]"
    assert scope(page) == page
