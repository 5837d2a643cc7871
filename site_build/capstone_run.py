"""Train Chapter 9's model before anything else runs, with a progress bar.

Chapter 9's blocks and figures all read one training run (``netcl_lite.capstone.run``),
which trains once per change of the code or the recipe and is reused after that. The
first build after a change waits for it (at most 300 s of training on two CPU cores);
this stage makes that wait visible: it trains in a child process whose progress bar
goes to the terminal, before the figures and pages that read the run are made. A run
that is already there loads in a second or two; ``NETCL_LITE_RERUN=1`` deletes the
stored runs first, so the model trains anew (as in a fresh clone). The variable is read
strictly (:func:`netcl_lite.files.env_flag`): ``0``, ``false``, ``no`` or ``off`` keep the
runs, and a value that is neither yes nor no stops the build before anything is deleted.
The plugin calls :func:`train` only when the run's inputs changed since its last call in
the same process (:class:`site_build.inputs.InputWatch`).

Once the model is trained, :func:`run_ahead` fills the execution cache with what the build will
show and that measures no time, on every core at once: Chapter 9's measures (the coders' sizes and
PPMd's order search), the figures, the drill notebooks and each build-output snippet that reads no
clock. The training run and every snippet that times something (:data:`TIMES`) run alone: the
training before, the timed snippets after, at their places in the pages, so what they print is
measured on a machine the build does not share. What runs ahead is stored under the keys the
later stages look up, so they find it; what fails ahead runs again at its place, which reports the
error as it always does. Under ``NETCL_LITE_RERUN=1`` nothing runs ahead: every stage runs again at
its place anyway.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from netcl_lite import fingerprint

from . import build_output, markers, runner, store
from .includes import PathError, marker_path
from .paths import DOCS, ROOT, SNIPPETS, pages

_TRAIN = "from netcl_lite import capstone; capstone.run(progress=True)"


def train() -> None:
    """Make Chapter 9's training run, or load the one this code already made, in a child process."""
    if fingerprint.rerun_forced():
        shutil.rmtree(fingerprint.cache_root() / "capstone", ignore_errors=True)
    print("Chapter 9: training its language model, or loading the run this code already made",
          file=sys.stderr)
    proc = _run_child([_TRAIN], stdout=subprocess.DEVNULL)
    if proc.returncode:
        raise RuntimeError("docs/chapter-9.md: Chapter 9's training run, which its blocks and figures read, "
                           "failed; its error is printed above")
    if not fingerprint.rerun_forced():           # a forced rerun runs every stage at its place anyway
        run_ahead()


def _run_child(args: list[str], **streams) -> subprocess.CompletedProcess:
    """``python -c *args`` in the repository (whose ``site_build`` it imports from there), in the fixed
    environment every run of the build gets (:func:`site_build.runner.reader_env`): what these children
    compute and store (the training run, Chapter 9's measures, figures, notebooks, build outputs) must
    follow from what the execution cache keys on, as what the same stages compute at their places
    does. The cache's place (``NETCL_LITE_CACHE``), the ``NETCL_LITE_*`` and ``POCL_*`` choices (in the
    key) and ``PATH`` reach them as they reach every run."""
    env = runner.reader_env()
    try:
        return subprocess.run([sys.executable, "-c", *args], cwd=ROOT, env=env, **streams)
    finally:
        runner.release(env)


#: a snippet that reads a clock (or times the coders) prints what it measured: it never runs beside
#: other work
TIMES = re.compile(r"^[ \t]*(?:import|from)[ \t]+[^\n#]*\b(?:time|datetime|timeit|resource)\b"   # a clock module
                   r"|\b(?:perf_counter|process_time|monotonic|thread_time|getrusage|coder_speeds)\b", re.M)
#: a script that reads Chapter 9's measures
_READS_MEASURES = re.compile(r"\bmeasures\(")
_MEASURES = "from netcl_lite import capstone; capstone.measures(capstone.run())"
_FIGURES_AND_NOTEBOOKS = ("from site_build import generated, store; shared = store.context(); "
                          "generated.build_figures(shared); generated.build_drills(shared)")
_SNIPPET = "import sys; from site_build import build_output; build_output.BuildOutputs().cached_output(sys.argv[1])"


def untimed_snippets() -> list[str]:
    """The build-output snippets of the pages (paths, in page order) that read no clock."""
    found = []
    for page in pages(DOCS):
        name = f"docs/{page.relative_to(DOCS)}"
        try:                                           # as the build finds them: none inside fenced code
            shown = [m.match for m in markers.find(page.read_text(encoding="utf-8-sig"), name)
                     if m.kind == "build-output"]
        except (markers.MarkerError, UnicodeDecodeError):
            continue                                   # the page reports it at its place
        for m in shown:
            try:
                text = marker_path(m["path"], name).read_text(encoding="utf-8")
            except (PathError, OSError, UnicodeDecodeError):
                continue                               # its place in the page reports it
            if not TIMES.search(text) and m["path"] not in found:
                found.append(m["path"])
    return found


def run_ahead(lanes: int | None = None) -> None:
    """Run what the build will show that measures no time, ``lanes`` processes at a time (None: one per
    core), each storing its output in the execution cache; what fails is left to its place.

    Chapter 9's measures start first; the figures, which read them at once, wait for them. The
    snippets that read them (the ablation) start at once, since they read them last, after minutes
    of their own work: the measures are deterministic and written whole, so a snippet that reached
    them first would compute the same numbers again, never other ones."""
    lanes = (os.cpu_count() or 1) if lanes is None else lanes
    figures_wait = any(_READS_MEASURES.search(p.read_text(encoding="utf-8", errors="replace"))
                       for p in SNIPPETS.glob("*/figure_*.py"))
    shared, reading, others = store.context(), [], []
    for path in untimed_snippets():
        text = (ROOT / path).read_text(encoding="utf-8")
        if store.lookup("build_output", build_output.snippet_key(path, shared)) is None:  # not stored yet
            (reading if _READS_MEASURES.search(text) else others).append((path, [_SNIPPET, path], False))
    tasks = [("Chapter 9's measures", [_MEASURES], False), *reading, *others,
             ("figures and drill notebooks", [_FIGURES_AND_NOTEBOOKS], figures_wait)]
    measured = threading.Event()
    failed = []

    def run(task):
        name, args, waits = task
        if waits:
            measured.wait()
        try:
            proc = _run_child(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if proc.returncode:
                failed.append(name)
        finally:
            if args[0] == _MEASURES:
                measured.set()

    store.log.info(f"execution cache: running {len(tasks)} untimed stages ahead, {lanes} at a time")
    with ThreadPoolExecutor(max(1, lanes)) as pool:
        list(pool.map(run, tasks))
    if failed:
        store.log.info(f"execution cache: {', '.join(failed)} failed ahead; each runs again at its place")
