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


# -- what a run leaves behind ---------------------------------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_a_snippet_that_daemonizes_leaves_nothing_running_and_does_not_hold_the_build(tmp_path):
    """A snippet that starts a daemon (fork, ``setsid``, fork again: the usual way) leaves its process
    group, which is all the runner killed: the daemon ran on after the build (here for a minute), and as
    it held the snippet's stdout and stderr open, the build waited for the readers (5 s each) before it
    went on. What a run starts does not outlive it, whatever group or session it moves to."""
    import time

    from site_build import runner

    pids = tmp_path / "pids"
    code = ("import os, sys, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            f"        open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
            "        time.sleep(60)\n"
            "    os._exit(0)\n"
            "os.wait()\n"
            f"while not os.path.exists({str(pids)!r}):\n    time.sleep(0.01)\n"
            "print('started')\n")
    snippet = tmp_path / "daemon.py"
    snippet.write_text(code, encoding="utf-8")
    began = time.monotonic()
    assert runner.run_snippet(snippet, limit=1 << 16, timeout=30) == "started\n"
    took = time.monotonic() - began
    pid = int(pids.read_text())
    deadline = time.monotonic() + 2
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(pid):
        os.kill(pid, 9)
        pytest.fail(f"the snippet's daemon (pid {pid}) outlived its run")
    assert took < 4, f"the build waited {took:.1f} s on what the snippet left holding its output"
