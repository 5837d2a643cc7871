"""Where a fresh clone's first ``mkdocs build --strict`` spends its time, stage by stage.

With an empty execution cache (a new folder unless ``--cache`` names one) it runs the build's stages
as the build runs them and times each process by wall clock and CPU seconds: Chapter 9's training
run; each task run ahead of the pages, ``--lanes`` at a time (:func:`site_build.capstone_run.run_ahead`,
with the lane it ran in); each build-output snippet that reads a clock, alone, in page order (the
build runs them at their places in the pages); then ``mkdocs build --strict`` itself, which finds
all of that stored and renders the pages. A task's CPU seconds over its wall seconds say how many
cores it kept busy: what the other lane or core did not use is where a shared machine's time goes
idle. The test command (``pytest -n auto``) runs this same build before any test, alone.

    python benchmarks/build_stages.py                       # a scratch cache and site, removed after
    python benchmarks/build_stages.py --out benchmarks/results/build_stages.json

Timings depend on the machine and its load (run it on a quiet one): ``--out`` records the CPU's
name and the load average before and after each task beside the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

from machine import cpu_name

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from site_build import capstone_run, markers  # noqa: E402
from site_build.includes import marker_path  # noqa: E402
from site_build.paths import DOCS, pages  # noqa: E402


class Timed:
    """Stands in for ``subprocess`` in :mod:`site_build.capstone_run`: runs each command as it would
    and records its wall and CPU seconds (its own, from ``wait4``) and the thread (lane) it ran in."""

    DEVNULL = subprocess.DEVNULL

    def __init__(self, stage: str, t0: float):
        self.stage, self.t0, self.rows, self.lanes = stage, t0, [], {}
        self.lock = threading.Lock()

    def run(self, args, **kwargs):
        began, load = time.perf_counter(), os.getloadavg()[0]
        proc = subprocess.Popen(args, **kwargs)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        ended = time.perf_counter()
        with self.lock:
            lane = self.lanes.setdefault(threading.get_ident(), len(self.lanes))
            self.rows.append({"stage": self.stage, "task": _name(args), "lane": lane,
                              "start_s": round(began - self.t0, 1), "wall_s": round(ended - began, 1),
                              "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "rc": proc.returncode,
                              "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2)})
        print(json.dumps(self.rows[-1]), file=sys.stderr, flush=True)
        return subprocess.CompletedProcess(args, proc.returncode)


def _name(args) -> str:
    """What a command of the build runs, in a few words."""
    code = " ".join(str(a) for a in args[2:])
    if "capstone.run(" in code and "measures" not in code:
        return "Chapter 9's training run"
    if "measures(" in code:
        return "Chapter 9's measures"
    if "build_figures" in code:
        return "figures and drill notebooks"
    if "cached_output" in code:
        return str(args[-1])
    if "mkdocs" in code:
        return "mkdocs build --strict (everything above stored)"
    return code[-80:]


def timed_snippets() -> list[str]:
    """The build-output snippets that read a clock, in page order: the build runs them at their places."""
    found = []
    for page in pages(DOCS):
        name = f"docs/{page.relative_to(DOCS)}"
        for m in markers.find(page.read_text(encoding="utf-8-sig"), name):
            if m.kind == "build-output" and m.match["path"] not in found:
                if capstone_run.TIMES.search(marker_path(m.match["path"], name).read_text(encoding="utf-8")):
                    found.append(m.match["path"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, help="the execution cache to fill (default: a new empty folder)")
    parser.add_argument("--lanes", type=int, default=os.cpu_count() or 1, help="processes run ahead at once")
    parser.add_argument("--out", type=Path, help="write the rows and the totals here as JSON")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="build-stages-"))
    cache = (args.cache or scratch / "cache").resolve()
    cache.mkdir(parents=True, exist_ok=True)
    os.environ["NETCL_LITE_CACHE"] = str(cache)
    os.environ.pop("NETCL_LITE_RERUN", None)
    load, t0, rows = os.getloadavg(), time.perf_counter(), []
    try:
        real = capstone_run.subprocess
        for stage, step in (("training", lambda: capstone_run.subprocess.run(
                                 [sys.executable, "-c", capstone_run._TRAIN], cwd=ROOT, stdout=subprocess.DEVNULL)),
                            ("ahead", lambda: capstone_run.run_ahead(args.lanes))):
            timer = Timed(stage, t0)
            capstone_run.subprocess = types.SimpleNamespace(run=timer.run, DEVNULL=subprocess.DEVNULL)
            try:
                step()
            finally:
                capstone_run.subprocess = real
            rows += timer.rows
        timer = Timed("timed", t0)
        for path in timed_snippets():
            timer.run([sys.executable, "-c", capstone_run._SNIPPET, path], cwd=ROOT,
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows += timer.rows
        timer = Timed("render", t0)
        timer.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(scratch / "site")],
                  cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                  env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
        rows += timer.rows
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    failed = [r["task"] for r in rows if r["rc"]]
    stages = {}
    for stage in ("training", "ahead", "timed", "render"):
        mine = [r for r in rows if r["stage"] == stage]
        wall = max(r["start_s"] + r["wall_s"] for r in mine) - min(r["start_s"] for r in mine)
        stages[stage] = {"wall_s": round(wall, 1), "cpu_s": round(sum(r["cpu_s"] for r in mine), 1)}
    total = sum(s["wall_s"] for s in stages.values())
    for stage, s in stages.items():
        print(f"{stage:9s} {s['wall_s']:7.1f} s wall {s['cpu_s']:7.1f} s CPU ({s['cpu_s'] / s['wall_s']:.2f} cores)")
    print(f"{'all':9s} {total:7.1f} s wall; load average {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
    if failed:
        print(f"failed: {failed}")
    if args.out:
        args.out.write_text(json.dumps({"machine": cpu_name(), "load_before": load[0], "lanes": args.lanes,
                                        "stages": stages, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
