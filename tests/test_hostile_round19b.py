"""Round 19b of the hostile check of the build plugin (``site_build``), citations aside: what a hostile
author, snippet or build still gets past it after round 18b. Each test asserts the behaviour the README
and issue 58 promise, and failed on the code before its fix (or is marked xfail, strict, saying why).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from site_render import render_page, rendered_page


# -- what a run reaches ---------------------------------------------------------------------------------------

def _from_a_checkout(tmp_path: Path) -> bool:
    from site_build import runner

    where = runner.run_code("import netcl_lite\nprint(netcl_lite.__file__)\n", tmp_path, timeout=60).stdout.strip()
    return (Path(where).parent.parent / "pyproject.toml").is_file()


@pytest.mark.parametrize("start", ["spawn", "forkserver"])
def test_a_multiprocessing_pool_a_snippet_starts_reaches_no_module_of_the_repository(tmp_path, start):
    """A snippet that shows a pool of workers under ``spawn`` or ``forkserver`` starts fresh interpreters.
    Not a defect before: multiprocessing gives its workers the parent's ``sys.path``, the repository's root
    taken off it; kept so that the prelude the workers now inherit (round 18b's fix) leaves a pool working
    and the library importable in it."""
    from site_build import runner

    if not _from_a_checkout(tmp_path):
        pytest.skip("netcl_lite is installed as a wheel, not from a repository")
    code = ("import importlib.util, multiprocessing\n\n"
            "def probe(name):\n    return importlib.util.find_spec(name) is not None\n\n"
            "if __name__ == '__main__':\n"
            f"    with multiprocessing.get_context({start!r}).Pool(1) as pool:\n"
            "        print(pool.map(probe, ['site_build', 'benchmarks', 'netcl_lite']))\n")
    run = runner.run_code(code, tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[False, False, True]", run.stdout


def test_a_python_started_with_a_copy_of_the_environment_reaches_no_module_of_the_repository(tmp_path):
    """``subprocess.run(..., env={**os.environ, ...})``, the usual way to show a command line with one more
    variable, gives the child a copy of the run's environment: it must hold what keeps the repository out."""
    from site_build import runner

    if not _from_a_checkout(tmp_path):
        pytest.skip("netcl_lite is installed as a wheel, not from a repository")
    probe = "import importlib.util; print(importlib.util.find_spec('site_build') is not None)"
    code = ("import os, subprocess, sys\n"
            f"subprocess.run([sys.executable, '-c', {probe!r}], env={{**os.environ, 'X': '1'}}, check=True)\n")
    run = runner.run_code(code, tmp_path, timeout=60)
    assert (run.returncode, run.stdout.strip()) == (0, "False"), run.stderr[-2000:]
