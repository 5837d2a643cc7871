"""Chapter 9's training budget: the recipe's training-step seconds here, and projected on the slowest kind.

    python benchmarks/training_budget.py [--rounds 1]

``capstone.TRAINING_BUDGET_SECONDS`` is a sizing target: the recipe's training steps (the time
``train`` counts, which leaves out the tokenizer, the kernels' compilation and the measures between
steps) should take at most that long on the slowest kind of machine the tests run on (``SLOWEST``).
That machine is not this one, so the script measures here and projects:

1. It trains the recipe as ``capstone.run()`` does, with this checkout's code, in a fresh process.
2. In the same round it trains the recipe with the code of ``SLOWEST["commit"]``, the code whose
   training seconds were recorded on the slowest kind (``SLOWEST["train_seconds"]``), also in a
   fresh process, with a fresh PoCL kernel cache (the recorded CI builds started without one).
3. In each round, the step ratio = this code's step time / that code's step time, a run's step
   time being the 10th percentile of its steps after the first: on a shared machine other work
   lengthens steps unevenly, and a low percentile is the least touched by it (the totals are
   recorded too). The order alternates round by round.
4. Projected seconds on the slowest kind = the slowest of its recorded seconds × the median of
   the rounds' step ratios. This assumes the code's speed-up from that commit to this one is the
   same on both kinds. The recorded seconds of the slowest kind include the kernels' compilation
   in their first step, which this code does before its timed steps, so the projection errs high.
5. The verdict: "within" or "above" the budget when at least two rounds ran and their step
   ratios agree within ``AGREE``; otherwise "unsettled", the load having moved the rounds apart.

Appends the run (machine with its CPU family and model, PoCL target, load averages before and
after each run, the recipe's hash, both codes' timings, the step ratios, the projection and the
verdict) to ``benchmarks/results/training_budget.json``; a test checks that the last run was made
with the current recipe and recomputes its projection and verdict, which the page states.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "training_budget.json"

#: the slowest kind the tests have run on, and its recorded training seconds for the recipe's
#: 960 steps (T = 64, B = 32), all with the code of one commit (benchmarks/results/machines.md)
SLOWEST = {
    "cpu": "AMD EPYC (family 23, model 1)",
    "pocl_target": "znver1",
    "logical_cpus": 2,
    "commit": "a5f4cb8bfae72a2d67f1ef8df180ad6f552debf8",
    "date": "2026-12-02",
    "train_seconds": {"CI build in a clean clone": 245.1, "CI build, a second clean clone": 257.0,
                      "alone on the machine": 273.7},
    "source": "benchmarks/results/machines.md (Zen 1 section) and the recipe's comment at that commit",
}

#: trains the recipe with whichever netcl_lite is first on sys.path and prints its step seconds
DRIVER = """
import json, sys, tempfile
from pathlib import Path
import netcl_lite
from netcl_lite import capstone
from netcl_lite.core.device import manager
queue = manager.default().queue
with tempfile.TemporaryDirectory() as tmp:
    capstone._train_into(Path(tmp) / "run", capstone.data(), queue, False)
    log = json.loads((Path(tmp) / "run" / "log.json").read_text(encoding="utf-8"))
steps = [r["seconds"] for r in log["train"]]
each = [b - a for a, b in zip([0.0] + steps, steps)]
later = sorted(each[1:])           # the first step may hold the kernels' compilation
print(json.dumps({"package": str(Path(netcl_lite.__file__).parent), "steps": len(steps),
                  "train_seconds": steps[-1], "first_step_seconds": each[0],
                  "fastest_step_seconds": later[0], "p10_step_seconds": later[len(later) // 10],
                  "median_step_seconds": later[len(later) // 2]}))
"""


def _train(code: Path, cache: Path, pocl_cache: Path | None) -> dict:
    """The DRIVER run with the package in ``code`` (a checkout's root) in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(code), "NETCL_LITE_CACHE": str(cache)}
    if pocl_cache is not None:
        env["POCL_CACHE_DIR"] = str(pocl_cache)
    load = os.getloadavg()[0]
    done = subprocess.run([sys.executable, "-c", DRIVER], cwd=code, env=env, check=True,
                          capture_output=True, text=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(result["package"]).resolve() != (code / "netcl_lite").resolve():
        raise RuntimeError(f"the run imported {result['package']}, not the code in {code}")
    return {**result, "load_before": load, "load_after": os.getloadavg()[0]}


def _extract(commit: str, into: Path) -> Path:
    """The files of ``commit`` (git archive), without touching this checkout."""
    blob = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    return into


#: the largest ratio between two rounds' step ratios for the run to give a verdict
AGREE = 1.25


def step_ratios(run: dict) -> list[float]:
    """Per round, this code's step time over that code's (each the 10th percentile of a run's
    steps after the first)."""
    return [ours["p10_step_seconds"] / theirs["p10_step_seconds"]
            for ours, theirs in zip(run["this_code"], run["reference_code"], strict=True)]


def projection(run: dict, slowest: dict = SLOWEST) -> float:
    """The slowest kind's projected training seconds for this code: its slowest recorded seconds
    with ``slowest["commit"]``'s code, times the median of the rounds' step ratios."""
    return max(slowest["train_seconds"].values()) * statistics.median(step_ratios(run))


def verdict(run: dict, budget: float, slowest: dict = SLOWEST) -> str:
    """"within" or "above" the budget, or "unsettled" when fewer than two rounds ran or their step
    ratios differ by more than ``AGREE`` times."""
    ratios = step_ratios(run)
    if len(ratios) < 2 or max(ratios) > AGREE * min(ratios):
        return "unsettled"
    return "within" if projection(run, slowest) <= budget else "above"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if args.rounds < 2:
        ap.error("--rounds must be at least 2: a verdict needs two rounds that agree")
    from machine import cpu_name          # benchmarks/ is the script's folder
    from netcl_lite import capstone
    from netcl_lite.core import compiler_target
    from netcl_lite.core.device import manager

    device = manager.default().queue.device
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "netcl_lite", "kernels"], cwd=ROOT,
                                check=True, capture_output=True, text=True).stdout.strip())
    run = {"date": datetime.date.today().isoformat(), "cpu": cpu_name(), "logical_cpus": os.cpu_count(),
           "pocl_target": compiler_target.target_of(device), "device": device.name.strip(),
           "recipe_hash": capstone.recipe_hash(), "commit": commit, "uncommitted_changes": dirty,
           "steps": capstone.TRAINING.max_steps, "this_code": [], "reference_code": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        old = _extract(SLOWEST["commit"], tmp / "reference")
        for r in range(args.rounds):
            order = (("reference_code", old), ("this_code", ROOT))
            for name, code in order if r % 2 == 0 else order[::-1]:
                fresh = tmp / f"pocl-{name}-{r}" if name == "reference_code" else None
                result = _train(code, tmp / f"cache-{name}", fresh)
                run[name].append(result)
                print(f"round {r + 1}, {name}: {result['train_seconds']:.1f} s of training steps "
                      f"(load {result['load_before']:.2f} -> {result['load_after']:.2f})", flush=True)
    run["step_ratios"] = step_ratios(run)
    run["projected_slowest_seconds"] = projection(run)
    run["budget_seconds"] = capstone.TRAINING_BUDGET_SECONDS
    run["verdict"] = verdict(run, capstone.TRAINING_BUDGET_SECONDS)
    record = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {"runs": []}
    record["slowest_kind"] = SLOWEST
    record["method"] = __doc__.split("\n\n", 2)[2].split("\n\nAppends")[0]
    record["runs"].append(run)
    RESULTS.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    here = statistics.median(r["train_seconds"] for r in run["this_code"])
    print(f"{run['cpu']}, PoCL target {run['pocl_target']}: {here:.1f} s of training steps here; "
          f"projected on the slowest kind ({SLOWEST['cpu']}, {SLOWEST['pocl_target']}): "
          f"{run['projected_slowest_seconds']:.0f} s against the budget of {run['budget_seconds']} s "
          f"(step ratios {', '.join(f'{r:.2f}' for r in run['step_ratios'])}: {run['verdict']})")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
