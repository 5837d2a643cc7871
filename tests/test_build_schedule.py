"""The build's schedule: what runs ahead of the pages on every core, and what runs alone."""

from __future__ import annotations

import re
import subprocess

import pytest

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
