"""Round 28a, an independent hostile check of how the build runs code and shows what it printed
(:mod:`site_build.runner`, :mod:`site_build.build_output`, :mod:`site_build.generated`), called through
the plugin's functions on small inputs. Covered here: what a figure script leaves at the path it is
given to save its figure to, when that is not a regular file it wrote (a link, a FIFO, a folder); a
page block run by ``runner.run_code`` that leaves a daemon holding its stdout; a build-output snippet
saved between the read its cache key is made of and the read that runs it; a drill notebook's cell
that prints without end.
Each test asserts the correct behaviour, and failed on the code before its fix."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from site_build import generated


def _script(tmp_path: Path) -> Path:
    script = tmp_path / "snippets" / "chapter99" / "figure_odd.py"
    script.parent.mkdir(parents=True)
    script.write_text("pass\n")
    return script


def test_a_figure_path_that_is_a_fifo_fails_instead_of_waiting_forever(tmp_path):
    """A figure script that made its output path a FIFO (``os.mkfifo(sys.argv[1])``) and ended left
    the build waiting forever: the written figure was read with ``read_text``, which blocks opening a
    FIFO no one writes. It should fail at once, naming the script and the figure."""
    out = tmp_path / "figure.svg"
    os.mkfifo(out)
    got: list = []

    def read():
        try:
            got.append(generated._written_svg(_script(tmp_path), out))
        except Exception as err:                                     # noqa: BLE001 - what it raised is checked
            got.append(err)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(20)
    if reader.is_alive():                          # unblock the old code's open, so the thread ends
        with open(out, "wb"):
            pass
        reader.join(5)
        pytest.fail("reading a figure path that is a FIFO waited on it")
    assert isinstance(got[0], RuntimeError)
    assert "figure_odd.py" in str(got[0]) and "figures/chapter99/odd.svg" in str(got[0])
    assert "not a regular file" in str(got[0])


def test_a_figure_path_that_is_a_folder_fails_naming_the_script(tmp_path):
    """A figure script that made its output path a folder ended the build in ``IsADirectoryError``, a
    traceback naming neither the script nor the page that shows its figure."""
    out = tmp_path / "figure.svg"
    out.mkdir()
    with pytest.raises(RuntimeError, match=r"figure_odd\.py \(drawing figures/chapter99/odd\.svg\) wrote what is "
                                           r"not a regular file"):
        generated._written_svg(_script(tmp_path), out)


def test_a_figure_path_that_is_a_link_to_another_file_is_not_shown(tmp_path):
    """A figure script that linked its output path to a file outside its run (``os.symlink``) had that
    file read and shown on the site as its figure: a file no key covers, anywhere the build's user may
    read. A figure is a regular file the script wrote; a link is refused, naming the script."""
    elsewhere = tmp_path / "elsewhere.svg"
    elsewhere.write_text("<svg><dc:description>not drawn by the script</dc:description></svg>")
    out = tmp_path / "figure.svg"
    out.symlink_to(elsewhere)
    with pytest.raises(RuntimeError, match=r"figure_odd\.py \(drawing figures/chapter99/odd\.svg\) wrote what "
                                           r"cannot be read as a file .*not a link"):
        generated._written_svg(_script(tmp_path), out)


def test_a_figure_path_linked_to_an_endless_device_is_not_read_without_end(tmp_path):
    """A figure script that linked its output path to ``/dev/zero`` passed the size check (a device's
    size is 0) and the build read it until memory ran out. Run here in a child with 1 GiB of memory,
    so the old code's reading ends in MemoryError there, not in the test machine's memory."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    out = tmp_path / "figure.svg"
    out.symlink_to("/dev/zero")
    script = _script(tmp_path)
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            "from pathlib import Path\n"
            "from site_build import generated\n"
            "try:\n"
            f"    generated._written_svg(Path({str(script)!r}), Path({str(out)!r}))\n"
            "except RuntimeError as err:\n"
            "    print(err)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "figure_odd.py" in run.stdout and "not a link" in run.stdout


# -- runner.run_python / run_code: a run that ends leaving a process that holds its stdout -----------------

_DAEMON = """import os, time
print('printed', flush=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(120)
    os._exit(0)
"""


def test_a_block_that_leaves_a_daemon_holding_stdout_is_not_reported_as_too_long(tmp_path):
    """``run_code`` (how the doc tests run each page block) waited on the block's stdout until its
    timeout when the block ended at once but left a daemon (fork, ``setsid``, fork) holding it: a block
    that took a moment was reported as ``TimeoutExpired``, after the whole timeout. The build's own runs
    (``run_bounded``) kill what a run leaves once it ends; this run should too, and return what it
    printed."""
    from site_build import runner

    run = runner.run_code(_DAEMON, tmp_path, timeout=30)
    assert (run.returncode, run.stdout) == (0, "printed\n")


def test_run_code_still_keeps_all_of_a_long_stderr_and_times_out(tmp_path):
    """What the change above keeps: run_code returns the whole of stderr (a failing block's traceback)
    and raises TimeoutExpired for a block that runs past its timeout."""
    import subprocess as sp

    from site_build import runner

    run = runner.run_code("import sys\nsys.stderr.write('e' * 9000 + 'end')\nraise SystemExit(3)\n", tmp_path,
                          timeout=30)
    assert run.returncode == 3 and len(run.stderr) == 9003 and run.stderr.endswith("end")
    with pytest.raises(sp.TimeoutExpired):
        runner.run_code("import time\ntime.sleep(60)\n", tmp_path, timeout=2)


# -- build_output.BuildOutputs.cached_output: the key and the run of the same bytes -----------------------

def test_a_snippet_saved_while_its_output_is_looked_up_is_not_stored_under_its_old_key(tmp_path, monkeypatch):
    """``cached_output`` read the snippet twice: once for its key, once more to run it. A save between
    the two (an editor under ``mkdocs serve``) stored what the new code printed under the old code's
    key, so the old code, restored, showed the new code's output from then on, with no run. The key
    and the run should be of the same bytes."""
    from site_build import build_output, store

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "store"))
    snippet = tmp_path / "snippet.py"
    old = "print('old code')\n"
    snippet.write_text(old)
    looked_up = store.lookup

    def save_meanwhile(kind, key):
        snippet.write_text("print('new code')\n")            # saved after the key was made of the old bytes
        return looked_up(kind, key)

    monkeypatch.setattr(store, "lookup", save_meanwhile)
    outputs = build_output.BuildOutputs(lambda: "shared")
    shown = outputs.cached_output(str(snippet))
    monkeypatch.setattr(store, "lookup", looked_up)
    kept = store.lookup("build_output", build_output.code_key(old, "shared"))
    assert kept in (None, b"old code\n"), f"the old code's key holds {kept!r}"
    assert shown == "old code\n"


# -- generated.execute_notebook: a drill cell that prints without end -----------------------------------------

def test_a_drill_cell_that_prints_without_end_is_stopped_at_the_output_limit(tmp_path):
    """A drill notebook's cell was checked against ``NOTEBOOK_OUTPUT_LIMIT`` only once it ended: one that
    printed without end was kept running to its 600 s timeout while the build held every line it
    printed (gigabytes: 3.7 GB of the build's memory after 40 s of ``print('x' * 1000)``). It should be
    stopped once it passes the limit, naming the cell."""
    import json
    import time

    cell = ("import time\nt = time.monotonic()\nwhile time.monotonic() - t < 30:\n    print('x' * 1000)\n")
    source = json.dumps({
        "cells": [{"cell_type": "code", "id": "flood", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": cell}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5})
    started = time.monotonic()
    with pytest.raises(ValueError, match=r"the cell flood put [\d,]+ bytes of output into the notebook \(stopped there\)"):
        generated.execute_notebook(source)
    assert time.monotonic() - started < 25, "the cell ran on past the limit"


def test_a_drill_cell_that_prints_many_short_lines_under_the_limit_still_runs(tmp_path):
    """What the bound keeps: many short prints (each its own output until merged) under the limit."""
    import json

    source = json.dumps({
        "cells": [{"cell_type": "code", "id": "lines", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": "for i in range(3000):\n    print(i, flush=True)\n"}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5})
    outputs = json.loads(generated.execute_notebook(source))["cells"][0]["outputs"]
    assert "".join(outputs[0]["text"]).split() == [str(i) for i in range(3000)]


def test_a_drill_cell_whose_last_outputs_lag_fails_the_build_instead_of_losing_them(tmp_path, monkeypatch):
    """nbclient waits ``iopub_timeout`` seconds after a cell's reply for its last outputs, then by
    default logs a warning and drops them: on a busy machine a cell that prints thousands of lines lost
    its last lines (a CI run showed 2,964 of 3,000). With no wait at all, the notebook either has every
    line or the build fails naming the wait; never the outputs cut short."""
    import json

    from nbclient.exceptions import CellTimeoutError

    monkeypatch.setattr(generated, "NOTEBOOK_IOPUB_WAIT", 0)
    source = json.dumps({
        "cells": [{"cell_type": "code", "id": "lines", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": "for i in range(3000):\n    print(i, flush=True)\n"}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5})
    try:
        outputs = json.loads(generated.execute_notebook(source))["cells"][0]["outputs"]
    except CellTimeoutError as err:
        assert "IOPub" in str(err)
        return
    assert "".join(outputs[0]["text"]).split() == [str(i) for i in range(3000)]
