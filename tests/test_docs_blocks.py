"""Every python block on every page runs in a fresh interpreter and prints what the page shows."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect

import pytest

import doc_blocks
from site_build import build_output, markers, runner

CASES = [
    pytest.param(page, i, block, id=f"{page.relative_to(doc_blocks.DOCS)}:{block.lineno}")
    for page in doc_blocks.pages()
    for i, block in enumerate(doc_blocks.runnable(page))
]


def _clean(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))


def test_pages_have_runnable_blocks():
    assert CASES, "no runnable python block found on any page: the doc tests would test nothing"


@pytest.fixture(scope="session")
def build_context(tmp_path_factory) -> str:
    """The key context of the build's runs (:func:`site_build.store.context`), computed as the blocks
    below run: by this interpreter, in a fresh process with the reader's environment, on the device
    it chooses (from the repository, where ``site_build`` is: a reader's run reaches the library
    alone). A block the build already ran with the same inputs is not run again."""
    import subprocess
    import sys

    env = runner.reader_env()
    try:
        proc = subprocess.run([sys.executable, "-c", "from site_build import store\nprint(store.context(), end='')\n"],
                              cwd=doc_blocks.ROOT, env=env, capture_output=True, text=True)
    finally:
        runner.release(env)
    assert proc.returncode == 0, f"the key context could not be computed:\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.parametrize("page, index, block", CASES)
def test_block_runs_and_prints_what_the_page_shows(page, index, block, tmp_path, build_context):
    # as a reader runs it (netcl_lite installed, nothing else), or what that run printed when the
    # store holds it under the same code, library, packages, device and variables
    proc = build_output.run_stored(block.code, tmp_path, build_context, f"{page.name}:{block.lineno}")
    assert proc.returncode == 0, f"block at {page.name}:{block.lineno} failed:\n{proc.stderr[-4000:]}"
    if block.expected_output is not None:
        assert _clean(proc.stdout) == _clean(block.expected_output), (
            f"output of the block at {page.name}:{block.lineno} differs from the page"
        )


@functools.lru_cache(maxsize=1)
def imported_by_tests() -> frozenset[str]:
    """Dotted names of the library modules whose code tests/test_*.py import.

    ``import a.b`` gives a.b; ``from a.b import c`` gives a.b and the module that defines
    ``c`` (``c`` itself when it is a submodule), so a function re-exported by a package
    counts for the module it lives in, and the package alone counts for nothing below it.
    """
    names = set()
    for path in doc_blocks.ROOT.glob("tests/test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
                if node.module.split(".")[0] != "netcl_lite":
                    continue
                package = importlib.import_module(node.module)
                for alias in node.names:
                    value = getattr(package, alias.name, None)
                    if inspect.ismodule(value):
                        names.add(value.__name__)
                    elif getattr(value, "__module__", None):
                        names.add(value.__module__)
    return frozenset(names)


def test_imported_by_tests_names_defining_modules_not_their_packages():
    tested = imported_by_tests()
    # tests import sinusoidal_positions from netcl_lite.nn; it is defined in netcl_lite.nn.positions
    assert {"netcl_lite.optim", "netcl_lite.nn.positions"} <= tested
    assert "netcl_lite.ops.no_such_module" not in tested
    assert "netcl_lite.nn.no_such_module" not in tested


@pytest.mark.parametrize("page", doc_blocks.pages(), ids=lambda p: str(p.relative_to(doc_blocks.DOCS)))
def test_excerpts_are_real_sections_of_tested_files(page):
    """An excerpt is only a `--8<--` include of a section of the library, never retyped code."""
    tested = imported_by_tests()
    for body, opener in doc_blocks.excerpts(page):
        m = markers.include_line(body) if "\n" not in body else None
        assert m and m.ranges is None, f"{page.name}: excerpt {opener} must be a single --8<-- include, got:\n{body}"
        path, section = m.path, m.section
        assert path.startswith(("netcl_lite/", "kernels/")), f"{page.name}: excerpt of {path} is not library code"
        source = (doc_blocks.ROOT / path).read_text(encoding="utf-8")
        if section:
            assert all(bound in source for bound in markers.section_bounds(section)), f"{path} has no section {section}"
        module = path[:-3].replace("/", ".") if path.endswith(".py") else None
        if module:
            assert module in tested, f"{path}: no test module imports {module}"


def test_rendered_python_blocks_equal_executed_blocks(built_site):
    """Per page: python blocks in the built HTML = runnable blocks the doc tests ran + excerpts."""
    mismatches = []
    for page in doc_blocks.pages():
        html = doc_blocks.rendered_page(built_site, page).read_text(encoding="utf-8")
        runnable, excerpt = doc_blocks.count_rendered_python(html)
        expected_runnable = len(doc_blocks.runnable(page))
        expected_excerpt = len(doc_blocks.excerpts(page, python_only=True))
        if (runnable, excerpt) != (expected_runnable, expected_excerpt):
            mismatches.append(f"{page.name}: rendered {runnable} runnable + {excerpt} excerpts, tests ran {expected_runnable} and checked {expected_excerpt}")
    assert not mismatches, "\n".join(mismatches)
