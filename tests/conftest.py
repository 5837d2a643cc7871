"""Shared fixtures: the OpenCL device, and one strict build of the site per test session.

``--page NAME`` (``chapter-7``, ``week-22``, ``concepts/transformer``…; repeatable) runs
one page's tests only: its code blocks and their outputs, its excerpts, its drill
notebook, and the tests of a module that names the page in ``PAGE``. It leaves out
everything that needs the whole site built (the strict build, links, the browser) and
says so at the end; the full ``pytest`` runs those.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent

# CI explores the same examples every run (a failure reproduces; nothing flaps on a
# lucky draw); local runs keep Hypothesis' random exploration.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_addoption(parser):
    parser.addoption("--page", action="append", default=[], metavar="NAME",
                     help="run only the tests of this page (its path under docs/ without .md, e.g. chapter-7)")


def page_of(item) -> str | None:
    """The page a collected test belongs to, or None: from its ``page`` (a docs/ path) or ``week``
    (a snippets/weekNN folder) parameter, else from its module's ``PAGE``."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if isinstance(params.get("page"), Path):
        return params["page"].relative_to(ROOT / "docs").with_suffix("").as_posix()
    if isinstance(params.get("week"), Path):
        return params["week"].name.replace("week", "week-")
    page = getattr(getattr(item, "module", None), "PAGE", None)
    return page.relative_to(ROOT / "docs").with_suffix("").as_posix() if isinstance(page, Path) else None


def pytest_ignore_collect(collection_path, config):
    """Under ``--page``, test files that never read a page (no ``doc_blocks``) are not even imported:
    collecting the whole suite takes longer than one page's tests."""
    if config.getoption("--page") and collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        return "doc_blocks" not in collection_path.read_text(encoding="utf-8")
    return None


#: fixtures that build the site (and everything it runs: Chapter 9's training, the coders, the
#: notebooks) or a reader's virtual environment: a test that needs one is slow
SLOW_FIXTURES = frozenset({"built_site", "jupyter_python"})


def is_slow(item) -> bool:
    """Whether a collected test builds the site or a virtual environment, runs the kernels under
    Oclgrind's simulator, or runs a page block that uses Chapter 9's capstone (which trains the
    model when its run is not stored yet)."""
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or item.get_closest_marker("oclgrind"):
        return True
    block = getattr(getattr(item, "callspec", None), "params", {}).get("block")
    return "capstone" in getattr(block, "code", "")


#: test files whose tests pytest-xdist may spread over its workers one by one: their fixtures (a
#: browser, a tab) take a second to make again; every other file runs in one worker, so its fixtures
#: (a reader's venv, the Oclgrind runs, a trained model) are made once
SPREAD_FILES = frozenset({"test_browser.py"})
#: the longest tests (several minutes each on a 2-core machine), started first so that no worker is
#: left running one of them alone at the end: a reader running Chapter 9's blocks from the wheel,
#: and the printable book in the browser
LONG_FIRST = ("test_reader.py::test_every_copyable_block_runs_from_the_wheel_outside_the_repository",
              "test_browser.py::test_page_renders_offline_in_chromium[print_page/",
              "test_browser.py::test_page_meets_wcag_aa_in_dark_mode[print_page/")


def scope(nodeid: str) -> str:
    """What pytest-xdist hands a worker whole: a test's file, or the test alone in :data:`SPREAD_FILES`."""
    path = nodeid.split("::", 1)[0]
    return nodeid if path.rsplit("/", 1)[-1] in SPREAD_FILES else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadscope`` (``pyproject.toml``), pytest-xdist's own scheduler with the unit of
    :func:`scope`: it hands out whole files, and the tests of :data:`SPREAD_FILES` one by one. (Its
    ``loadgroup`` mode reads ``xdist_group`` marks by rewriting the tests' node ids, which pytest 9.2
    ignores: every test became a unit of its own and each worker made a file's fixtures again.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope(nodeid)

    return FileScheduling(config, log)


def _schedule(items) -> None:
    """Order the tests as pytest-xdist hands out their :func:`scope` units (``--no-loadscope-reorder``):
    the units that hold a :data:`LONG_FIRST` test first, then the others by size, largest first."""
    size, first = {}, {}
    for item in items:
        unit = scope(item.nodeid)
        size[unit] = size.get(unit, 0) + 1
        rank = next((i for i, long in enumerate(LONG_FIRST) if long in item.nodeid), len(LONG_FIRST))
        first[unit] = min(first.get(unit, rank), rank)
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (first[scope(item.nodeid)], -size[scope(item.nodeid)], order[id(item)]))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
    _schedule(items)
    pages = config.getoption("--page")
    if not pages:
        return
    known = {p.relative_to(ROOT / "docs").with_suffix("").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    unknown = sorted(set(pages) - known)
    if unknown:
        raise pytest.UsageError(f"--page {', '.join(unknown)}: no such page; the pages are {sorted(known)}")
    keep = [i for i in items if page_of(i) in pages and "built_site" not in getattr(i, "fixturenames", ())]
    left_out = [i for i in items if i not in keep]
    config.hook.pytest_deselected(items=left_out)
    items[:] = keep
    config._page_left_out = sum("built_site" in getattr(i, "fixturenames", ()) and page_of(i) in pages
                                for i in left_out)


def pytest_terminal_summary(terminalreporter, config):
    if config.getoption("--page"):
        left = getattr(config, "_page_left_out", None)   # None: counted in -n workers, not here
        count = "" if left is None else f" ({left} of this page's tests need the built site)"
        terminalreporter.write_line(
            f"--page {' '.join(config.getoption('--page'))}: ran this page's blocks, outputs, excerpts and "
            f"notebook; NOT the site build, links or browser{count}. Run the full pytest before you push.",
            yellow=True, bold=True)


@pytest.fixture(scope="session")
def device():
    from netcl_lite.core.device import manager

    return manager.default()


@pytest.fixture(scope="session")
def queue(device):
    return device.queue


def _shared_dir(tmp_path_factory) -> Path:
    """A folder every process of this run shares: under ``pytest -n`` (pytest-xdist) the workers'
    common parent of their temporary folders, else this process's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _build_site(out: Path) -> dict:
    """``mkdocs build --strict`` into ``out`` (without --quiet, which hides warnings from strict mode):
    its exit code and log. A fresh clone's build trains Chapter 9's model and runs its coders: about
    7 minutes on a quiet 2-core Zen 3, more on an older or busy machine, so the limit (there to stop
    a hung build) is 40 minutes."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    try:
        proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=2400)
    except subprocess.TimeoutExpired as err:
        return {"returncode": None, "log": f"mkdocs build --strict ran past {err.timeout} s"}
    return {"returncode": proc.returncode, "log": proc.stdout + proc.stderr}


@pytest.fixture(scope="session", autouse=True)
def _site_built_before_any_test(request, tmp_path_factory):
    """When a selected test needs the built site, the site is built before any test of the run starts,
    once for all ``pytest -n`` workers (the first takes a lock and builds, the others wait on it):
    the build measures what its pages print (training time, generation and coding speeds), so it
    runs alone, never beside other tests (within it, only what measures no time runs on every core
    at once: :func:`site_build.capstone_run.run_ahead`)."""
    if not any("built_site" in getattr(item, "fixturenames", ()) for item in request.session.items):
        return
    shared = _shared_dir(tmp_path_factory)
    with open(shared / "site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        outcome = shared / "site.json"
        if not outcome.is_file():
            outcome.write_text(json.dumps(_build_site(shared / "site")), encoding="utf-8")


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The site as ``mkdocs build --strict`` made it for this run (see ``_site_built_before_any_test``)."""
    shared = _shared_dir(tmp_path_factory)
    outcome = json.loads((shared / "site.json").read_text(encoding="utf-8"))
    log = outcome["log"]
    if outcome["returncode"] != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{log[-6000:]}")
    warnings = [line for line in log.splitlines() if line.startswith("WARNING")]
    assert not warnings, "\n".join(warnings)
    return shared / "site"


@pytest.fixture(scope="session")
def corpus_cache(tmp_path_factory) -> Path:
    """A cache folder holding only the primer's stored corpus (the standard library's docstrings),
    parsed once per run for all ``pytest -n`` workers (the first takes a lock and parses, the others
    wait and read it). Tests that damage a cache's corpus copy it in (``cli_model.seed_corpus``)
    instead of parsing the library again for every test."""
    shared = _shared_dir(tmp_path_factory)
    folder = shared / "corpus-cache"
    with open(shared / "corpus-cache.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not folder.is_dir():
            partial = shared / "corpus-cache.partial"
            env = {**os.environ, "PYTHONPATH": str(ROOT), "NETCL_LITE_CACHE": str(partial)}
            subprocess.run([sys.executable, "-c", "from netcl_lite import corpus; corpus.stdlib_documents()"],
                           env=env, check=True, timeout=600)
            partial.rename(folder)
    return folder


from text_cases import cl100k, small, texts, trained  # noqa: E402, F401 (fixtures several modules share)


@pytest.fixture
def generated_tree(tmp_path, monkeypatch):
    """A scratch tree for the build's figure and notebook stage (``site_build.generated``): its own
    docs folder, figures folder and execution cache, so a hostile figure script touches nothing real."""
    from netcl_lite import fingerprint
    from site_build import generated

    docs = tmp_path / "docs"
    docs.mkdir()
    monkeypatch.setattr(generated, "DOCS", docs)
    monkeypatch.setattr(generated, "FIGURES", docs / "figures")
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    return tmp_path
