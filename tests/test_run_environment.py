"""What the build's runs (snippets, figures, notebooks, Chapter 9's children) see of the build's
environment: the variables that change what a run prints and that no cache key holds are left out or
pinned (site_build.runner.reader_env), and each run's matplotlib folder is its own, removed after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from site_build import capstone_run, runner

#: a snippet that prints what it sees of the variables below, the local time of the epoch, the locale
#: a call that reads the environment's locale gets, and its matplotlib folder
REPORT = ("import locale, os, time\n"
          "print(sorted((k, v) for k, v in os.environ.items() if k in {names!r}))\n"
          "print(time.strftime('%Y-%m-%d %H:%M', time.localtime(0)))\n"
          "print(locale.setlocale(locale.LC_ALL, ''))\n"
          "print(os.environ['MPLCONFIGDIR'])\n")
BUILD = {"TZ": "Asia/Tokyo", "LANG": "C", "LC_ALL": "C", "LC_NUMERIC": "C", "LANGUAGE": "de",
         "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Haswell",
         "NPY_DISABLE_CPU_FEATURES": "AVX2", "MPLBACKEND": "pdf", "ATEN_CPU_CAPABILITY": "default"}


def test_a_snippet_sees_a_pinned_locale_and_time_zone_and_no_thread_counts(tmp_path, monkeypatch):
    for name, value in BUILD.items():
        monkeypatch.setenv(name, value)
    run = runner.run_as_snippet(REPORT.format(names=set(BUILD)).encode(), tmp_path, 60)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    seen, epoch, chosen, folder = run.stdout.decode().splitlines()
    assert seen == "[('LC_ALL', 'C.UTF-8'), ('TZ', 'UTC')]", seen
    assert epoch == "1970-01-01 00:00", "the build's time zone reached the snippet"
    assert chosen == "C.UTF-8", chosen
    assert not Path(folder).exists(), "the run's matplotlib folder outlived it"
    assert all(f"{name}={value}" not in runner.HOW for name, value in BUILD.items() if name not in runner.FIXED)
    assert "LC_ALL=C.UTF-8" in runner.HOW and "TZ=UTC" in runner.HOW and "OMP_" in runner.HOW


def test_each_run_gets_its_own_matplotlib_folder_removed_after_it(tmp_path):
    first, second = runner.reader_env(), runner.reader_env()
    assert first["MPLCONFIGDIR"] != second["MPLCONFIGDIR"]
    assert not any(any(Path(e["MPLCONFIGDIR"]).iterdir()) for e in (first, second))
    script = tmp_path / "writes.py"
    script.write_text("import os, pathlib\npathlib.Path(os.environ['MPLCONFIGDIR'], 'matplotlibrc')"
                      ".write_text('lines.linewidth: 9\\n')\nprint(os.environ['MPLCONFIGDIR'])\n", encoding="utf-8")
    proc = runner.run_python(script, env=first)
    assert proc.returncode == 0 and proc.stdout.strip() == first["MPLCONFIGDIR"], proc.stderr
    assert not Path(first["MPLCONFIGDIR"]).exists(), "run_python left its run's folder behind"
    bounded = runner.run_bounded([sys.executable, str(script)], tmp_path, second, 60, 1 << 16)
    assert bounded.returncode == 0 and not Path(second["MPLCONFIGDIR"]).exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    runner.release({"MPLCONFIGDIR": str(mine)})
    assert mine.is_dir(), "release removes only the folders reader_env made"


def test_chapter_9_s_children_run_in_the_runs_fixed_environment(monkeypatch):
    """The training child and the run-ahead children get the environment every run gets, not the build's."""
    seen = []

    def record(command, **how):
        seen.append(how.get("env"))
        return subprocess.CompletedProcess(command, 0)

    run_ahead = capstone_run.run_ahead
    monkeypatch.setattr(capstone_run.subprocess, "run", record)
    monkeypatch.setattr(capstone_run, "run_ahead", lambda: None)
    monkeypatch.setattr(capstone_run, "untimed_snippets", lambda: [])
    monkeypatch.setattr(capstone_run.store, "context", lambda: "")
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    capstone_run.train()
    run_ahead(lanes=1)
    assert len(seen) == 3, seen                       # training, Chapter 9's measures, figures and notebooks
    for env in seen:
        assert env is not None and "PYTHONHASHSEED" not in env and "OMP_NUM_THREADS" not in env
        assert env["PYTHONUTF8"] == "1" and env["TZ"] == "UTC" and not Path(env["MPLCONFIGDIR"]).exists()
        assert env.get("NETCL_LITE_CACHE") == os.environ.get("NETCL_LITE_CACHE"), "the cache's place reaches them"
