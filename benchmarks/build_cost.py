"""What a full ``mkdocs build`` costs on this checkout against another commit, in the same run.

The other commit's files are taken out of git into a temporary folder and built from there with
the same virtual environment (its ``site_build`` and ``netcl_lite`` put first on the path, so the
plugin and the library are that commit's). Each side is built once untimed (so both find their
figures, outputs and training run in the execution cache), then ``--rounds`` times, alternating,
each timed by wall clock and by the CPU seconds of the build process. The report is the medians
and the ratios of this checkout to the other commit.

    python benchmarks/build_cost.py --base main                  # this checkout against main
    python benchmarks/build_cost.py --base main --out benchmarks/results/build_cost.json

Timings depend on the machine and its load: ``--out`` records the CPU's name and the load average
beside the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from machine import cpu_name

ROOT = Path(__file__).resolve().parents[1]


def build(source: Path, site: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``mkdocs build --strict`` of ``source`` into ``site``."""
    env = dict(os.environ, PYTHONPATH=str(source))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                          cwd=source, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"mkdocs build of {source} failed:\n{proc.stderr[-3000:]}")
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="main", help="the commit to compare with (any git revision)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, help="also write the timings as JSON here")
    args = parser.parse_args()
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    commit = subprocess.run(["git", "rev-parse", args.base], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, capture_output=True, check=True).stdout
        archive_path = Path(tmp) / "base.tar"
        archive_path.write_bytes(archive)
        with tarfile.open(archive_path) as tar:
            tar.extractall(base, filter="data")
        sides = {"this checkout": ROOT, f"base {commit[:10]}": base}
        load_before = os.getloadavg()
        for name, source in sides.items():            # untimed: fill the execution cache for each side
            build(source, Path(tmp) / "warm")
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, source in sides.items():
                times[name].append(build(source, Path(tmp) / "site"))
        load_after = os.getloadavg()
    medians = {name: {"wall_s": statistics.median(w for w, _ in t), "cpu_s": statistics.median(c for _, c in t)}
               for name, t in times.items()}
    mine, other = medians["this checkout"], medians[f"base {commit[:10]}"]
    report = {"cpu": cpu_name(), "load_before": load_before, "load_after": load_after, "base": commit,
              "rounds": args.rounds, "medians": medians,
              "ratio_wall": mine["wall_s"] / other["wall_s"], "ratio_cpu": mine["cpu_s"] / other["cpu_s"],
              "rounds_s": {name: t for name, t in times.items()}}
    for name, m in medians.items():
        print(f"{name:>20}: {m['wall_s']:6.1f} s wall, {m['cpu_s']:6.1f} s CPU (median of {args.rounds})")
    print(f"this checkout / base: {report['ratio_wall']:.2f}x wall, {report['ratio_cpu']:.2f}x CPU "
          f"(load {load_before[0]:.1f} before, {load_after[0]:.1f} after)")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
