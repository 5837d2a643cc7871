"""Round 31b, an independent hostile check of how the build plugin runs snippets and keeps what they
made: the runner, the execution cache, the shipped wheel and the page events."""

from __future__ import annotations

import os
import stat

import pytest

from site_build import plugin, shipped_wheel
from site_render import render_page


def test_a_served_site_makes_its_wheel_again_when_a_wheel_file_becomes_executable(tmp_path, monkeypatch):
    """Hatchling writes each file's mode into the wheel (644 or 755 as the owner's executable bit
    says), and the wheel's cache key covers it (:func:`shipped_wheel.sources_digest`); but under
    ``mkdocs serve`` the plugin reused the wheel of the last build while the files it is made from kept
    their bytes, so after ``chmod +x`` on a library file the site went on shipping the wheel with the
    old mode, which a fresh build would not."""
    source = tmp_path / "module.py"
    source.write_text("x = 1\n", encoding="utf-8")
    made = []

    def site_files():
        made.append(shipped_wheel._recorded(source, True))
        return made[-1]

    monkeypatch.setattr(shipped_wheel, "wheel_sources", lambda: [source])
    monkeypatch.setattr(shipped_wheel, "site_files", site_files)
    build = plugin.SiteBuild()

    def wheel():
        return build.inputs.value("wheel", shipped_wheel.wheel_sources(), shipped_wheel.site_files)

    assert wheel().endswith("644")
    assert wheel().endswith("644") and len(made) == 1            # unchanged: reused
    os.chmod(source, os.stat(source).st_mode | stat.S_IXUSR)
    assert wheel().endswith("755"), "the wheel of the file's old mode was reused"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A scratch project whose page shows snippets of ``snippets/hostile/`` as the build does, with a
    cache of its own."""
    from netcl_lite import fingerprint
    from site_build import build_output, includes

    root = tmp_path / "project"
    (root / "snippets" / "hostile").mkdir(parents=True)
    monkeypatch.chdir(root)
    monkeypatch.setattr(build_output, "ROOT", root)
    monkeypatch.setattr(build_output, "marker_path",
                        lambda path, page, root=root: includes.marker_path(path, page, root=root))
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    return root


def _printing_page(root, name: str, text: str) -> str:
    from site_build import markers

    path = f"snippets/hostile/{name}"
    (root / path).write_text(f"import sys\nsys.stdout.write({text!r})\n", encoding="utf-8")
    return (f'# Hostile\n\n```python\n--8<-- "{path}"\n```\n\n{markers.build_output(path, True)}\n\n'
            f"After the output.\n")


@pytest.mark.parametrize("text, hidden", [
    ("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n", "3"),
    ("| step | loss |\n|---|---|\n| 1 | 0.5 | diverged |\n| 2 | 0.4 |\n", "diverged"),
    ("| a |\n|---|\n| 1 | 2\n", "2"),
])
def test_a_printed_table_row_with_more_cells_than_its_header_fails_instead_of_losing_them(project, text, hidden):
    """Markdown's tables keep as many cells in a row as the header has and drop the rest: a snippet
    whose row printed one cell more had that cell, with what it said, left off the page without a word,
    which then showed other than what was printed. The build fails, naming the page, the line of the
    marker, the snippet and the row."""
    from site_build import build_output

    with pytest.raises(build_output.BuildOutputError) as caught:
        render_page(_printing_page(project, "ragged.py", text))
        pytest.fail(f"the page showed the printed table without {hidden!r}")
    message = str(caught.value)
    assert message.startswith("docs/hostile.md:7: ") and "snippets/hostile/ragged.py" in message, message
    assert "more cells" in message and hidden in message, message


def test_a_printed_table_whose_rows_have_fewer_or_blank_extra_cells_still_shows(project):
    """What no cell loses still shows: a short row (its missing cells left empty) and a row ending in
    an empty cell (``||``)."""
    shown = render_page(_printing_page(project, "short.py", "| a | b |\n|---|---|\n| 1 |\n| 2 | 3 ||\n"))
    assert "<td>1</td>" in shown and "<td>3</td>" in shown


def test_an_entry_the_build_cannot_read_is_a_miss_that_runs_again_not_a_crash(tmp_path, monkeypatch, caplog):
    """Builds may share a cache (``NETCL_LITE_CACHE``): an entry another user wrote with a mode this
    one cannot read raised ``PermissionError`` out of the lookup and stopped the build with a traceback,
    where an entry that cannot be written (or one that does not match its digest) is a logged miss."""
    from pathlib import Path

    from site_build import store

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    store.store("build_output", "abc123", b"printed\n")
    assert store.lookup("build_output", "abc123") == b"printed\n"
    entry = tmp_path / "cache" / "executed" / "build_output" / "abc123"
    read_bytes = Path.read_bytes

    def refused(self):
        if self == entry:
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", refused)
    assert store.lookup("build_output", "abc123") is None
    assert str(entry) in caplog.text and "Permission denied" in caplog.text


@pytest.mark.parametrize("line", ['--8<-- "snippets/hostile/other.txt"', "    --8<-- 'snippets/hostile/other.txt'",
                                  ';--8<-- "snippets/hostile/other.txt"', "--8<--\nsnippets/hostile/other.txt\n--8<--"])
def test_a_build_output_snippet_holding_an_include_line_fails_naming_it(project, line):
    """The page includes a build output's snippet with ``pymdownx.snippets``, which expands an include
    line inside it (in a string, say) and drops the ``;`` of an escaped one, while the build runs the
    file as written: the page showed code whose output is not the one shown under it."""
    from site_build import build_output, markers

    (project / "snippets" / "hostile" / "other.txt").write_text("SHOWN ON THE PAGE\n", encoding="utf-8")
    path = "snippets/hostile/nested.py"
    (project / path).write_text(f'text = """\n{line}\n"""\nprint(text.strip())\n', encoding="utf-8")
    page = f'# Hostile\n\n```python\n--8<-- "{path}"\n```\n\n{markers.build_output(path)}\n\nAfter the output.\n'
    with pytest.raises(build_output.BuildOutputError) as caught:
        render_page(page)
        pytest.fail("the page showed the include expanded over an output of the line as written")
    message = str(caught.value)
    assert message.startswith("docs/hostile.md:7: ") and f"{path}:2" in message and "include" in message, message


def test_a_drill_notebook_runs_in_this_interpreter_s_kernel_not_a_python3_kernelspec_installed_elsewhere(
        tmp_path, monkeypatch):
    """The drill notebooks run in a kernel named ``python3``, which Jupyter looks up in the user's and
    ``JUPYTER_PATH``'s kernel folders before ipykernel's own: a spec that ``ipykernel install --user`` left
    there from another environment ran them under that environment's interpreter and packages (and
    its ``env``), none of which the notebook's key records."""
    import json
    import sys

    from site_build import generated

    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "another environment's", "language": "python", "env": {"FROM_ANOTHER_SPEC": "yes"}}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    source = json.dumps({"cells": [{"cell_type": "code", "id": "c", "metadata": {}, "execution_count": None,
                                    "outputs": [], "source": "import os\nprint(os.environ.get('FROM_ANOTHER_SPEC'))"}],
                         "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                     "name": "python3"}},
                         "nbformat": 4, "nbformat_minor": 5})
    ran = json.loads(generated.execute_notebook(source))
    assert "".join(ran["cells"][0]["outputs"][0]["text"]) == "None\n"


@pytest.mark.parametrize("session, code", [
    # printed lines that start like the continuation prompt, after a complete statement
    (">>> print('... and 3 more')\n... and 3 more\n>>> x = 1\n", "print('... and 3 more')\nx = 1\n"),
    (">>> for i in range(2):\n...     print('... step', i)\n...\n... step 0\n... step 1\n",
     "for i in range(2):\n    print('... step', i)\n"),
    # real continuations are still copied, to the blank line that ends a block
    (">>> total = (1 +\n...          2)\n>>> total\n3\n", "total = (1 +\n         2)\ntotal\n"),
    (">>> def f():\n...     return 1\n...\n>>> f()\n1\n", "def f():\n    return 1\n\nf()\n"),
])
def test_a_session_s_copy_keeps_only_the_lines_the_interpreter_prompted_for(session, code):
    """A ``>>>`` session's copy button copied every line starting with ``... ``, printed ones too: a
    session whose output printed such a line copied it as code, and the copied code failed when run
    (``NameError`` or ``SyntaxError``). A ``... `` line is code only where the interpreter asks for one:
    the statement above it is not complete."""
    import html

    from site_build import copyable

    assert copyable.pycon_code(html.escape(session)) == code
