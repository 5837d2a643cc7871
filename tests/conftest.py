"""Shared fixtures: the OpenCL device, and one strict build of the site per test session.

``--page NAME`` (``chapter-7``, ``week-22``, ``concepts/transformer``…; repeatable) runs
one page's tests only: its code blocks and their outputs, its excerpts, its drill
notebook, and the tests of a module that names the page in ``PAGE``. It leaves out
everything that needs the whole site built (the strict build, links, the browser) and
says so at the end; the full ``pytest`` runs those.
"""

from __future__ import annotations

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


def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
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
        terminalreporter.write_line(
            f"--page {' '.join(config.getoption('--page'))}: ran this page's blocks, outputs, excerpts and "
            f"notebook; NOT the site build, links or browser ({config._page_left_out} of this page's tests need "
            "the built site). Run the full pytest before you push.", yellow=True, bold=True)


@pytest.fixture(scope="session")
def device():
    from netcl_lite.core.device import manager

    return manager.default()


@pytest.fixture(scope="session")
def queue(device):
    return device.queue


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """``mkdocs build --strict`` (without --quiet, which hides warnings from strict mode). A fresh
    clone's build trains Chapter 9's model and runs its coders: 10 minutes on a quiet 2-core Zen 3,
    more on an older or busy machine, so the limit (there to stop a hung build) is 40 minutes."""
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=2400,
    )
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{log[-6000:]}")
    warnings = [line for line in log.splitlines() if line.startswith("WARNING")]
    assert not warnings, "\n".join(warnings)
    return out


from text_cases import cl100k, small, texts, trained  # noqa: E402, F401 (fixtures several modules share)
