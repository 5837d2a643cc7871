"""Round 18b of the hostile check of the build plugin (``site_build``), citations aside: what a hostile
author, snippet or build still gets past it after round 17b. Each test asserts the behaviour the README
and issue 58 promise, and failed on the code before its fix (or is marked xfail, strict, saying why).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from site_render import render_page, rendered_page


# -- what a run reaches ---------------------------------------------------------------------------------------

def _other_checkout(tmp_path: Path) -> Path:
    """A second checkout of the project, as an editable install of another clone or worktree puts on every
    interpreter's path: its own library, site_build and benchmarks."""
    other = tmp_path / "other clone"
    for package in ("netcl_lite", "site_build", "benchmarks"):
        (other / package).mkdir(parents=True)
        (other / package / "__init__.py").write_text("WHERE = 'the other clone'\n")
    (other / "pyproject.toml").write_text("[project]\nname = 'netcl-lite'\nversion = '0.0.1'\n")
    return other


def test_a_run_imports_the_library_its_key_covers_not_another_checkout_s(tmp_path):
    """The key of every run covers the library the build imports (``fingerprint.library_sources``), and
    "of the repository, only netcl_lite is importable, even from an editable install". A build from a
    second clone or a worktree whose venv's editable install points at another checkout (``pip install
    -e`` run in the first one) ran its snippets with that other checkout's library, ``site_build`` and
    ``benchmarks``: the prelude took only this repository's root off the path. Its outputs were those of
    another library, stored under this one's key."""
    from netcl_lite import fingerprint
    from site_build import runner

    env = runner.reader_env()
    env["PYTHONPATH"] += os.pathsep + str(_other_checkout(tmp_path))     # where the .pth would put it
    code = ("import importlib.util, netcl_lite\nprint(netcl_lite.__file__)\n"
            "print(importlib.util.find_spec('site_build'), importlib.util.find_spec('benchmarks'))\n")
    work = tmp_path / "work"
    work.mkdir()
    where, others = runner.run_code(code, work, timeout=60, env=env).stdout.splitlines()
    assert Path(where).parent == fingerprint.PACKAGE, where
    assert others == "None None", others


def test_a_python_a_snippet_starts_reaches_no_module_of_the_repository(tmp_path):
    """A snippet that shows the command line runs ``python -m ...`` itself (``subprocess``), and a
    ``multiprocessing`` pool under ``spawn`` or ``forkserver`` starts fresh interpreters too: those get the
    editable install's ``.pth`` and no prelude, so ``site_build`` and ``benchmarks`` are importable there,
    reading files no key covers."""
    from site_build import runner

    probe = "import importlib.util; print(importlib.util.find_spec('site_build') is not None)"
    where = runner.run_code("import netcl_lite\nprint(netcl_lite.__file__)\n", tmp_path, timeout=60).stdout.strip()
    code = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {probe!r}], check=True)\n"
    seen = runner.run_code(code, tmp_path, timeout=60).stdout.strip()
    if not (Path(where).parent.parent / "pyproject.toml").is_file():
        pytest.skip("netcl_lite is installed as a wheel, not from a repository")
    assert seen == "False"


# -- caches ---------------------------------------------------------------------------------------------------

def test_the_glossary_read_again_after_an_edit_that_keeps_its_size_and_time(tmp_path):
    """The glossary's terms are kept while the file is unchanged (``mkdocs serve`` renders many times).
    They were kept by the file's size and modification time only: an edit of the same length whose
    time was set back (``cp -p`` of another version, ``touch -r``, a tool that keeps times) left every
    tooltip and the Glossary page showing the old definitions for the rest of the session. The stages'
    own watch (``site_build/inputs.py``) sees such an edit (the status-change time, the inode)."""
    from site_build import glossary

    path = tmp_path / "glossary.yml"
    path.write_text("- term: kernel\n  definition: A function run on the device.\n", encoding="utf-8")
    st = path.stat()
    assert glossary.terms(path)[0].definition == "A function run on the device."
    path.write_text("- term: kernel\n  definition: A function run on the reader.\n", encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size
    assert glossary.terms(path)[0].definition == "A function run on the reader."


@pytest.mark.parametrize("data, says", [(b"- term: [kernel\n  definition: x\n", r"glossary\.yml:2: not valid YAML"),
                                        (b"- term: kernel\n  definition: caf\xe9\n", r"glossary\.yml: not UTF-8")])
def test_a_glossary_that_cannot_be_read_is_refused_naming_the_file_and_the_line(tmp_path, data, says):
    """Every build error names its file (and the line where there is one); the glossary's entries are
    refused naming ``glossary.yml``. A YAML syntax error reached the build as PyYAML's message, which
    names ``"<unicode string>"``, and bytes that are not UTF-8 as a bare UnicodeDecodeError: neither
    says which file is at fault (the build reads it for five pages' tooltips and the Glossary)."""
    from site_build import glossary

    path = tmp_path / "glossary.yml"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=f"^{says}") as caught:
        glossary.terms(path)
    assert "<unicode string>" not in str(caught.value)


# -- mathml: the line an error names -------------------------------------------------------------------------

@pytest.mark.parametrize("text, line", [
    ("# T\n\nGood \\(\\frac{1}{2}\\) here.\n\nBad \\(\\frac{\\) formula.\n", 5),
    ("# T\n\nGood $\\frac{1}{2}$ here.\n\nBad $\\frac{$ formula.\n", 5),
    ("# T\n\nText.\n\n> Bad \\(\\frac{a\n> b\\) formula.\n", 5),
    ("# T\n\nText.\n\nBad \\(\\frac{a &lt; \\) formula.\n", 5),
])
def test_a_formula_s_error_names_the_line_it_stands_on(tmp_path, monkeypatch, text, line):
    """A formula the converter refuses fails naming the page and its line, found by looking for its text
    in the page's file. The first place that text appears was named even inside an earlier, valid
    formula (``\\frac{`` in ``\\(\\frac{1}{2}\\)``: line 3); a formula that runs on in a block quote (its
    lines start ``>``) or holds a character reference the page wrote (``&lt;``) was not found, and the
    error named no line."""
    from site_build import mathml

    (tmp_path / "hostile.md").write_text(text, encoding="utf-8")
    monkeypatch.setattr(mathml, "DOCS", tmp_path)
    with pytest.raises(ValueError, match=rf"^docs/hostile\.md:{line}: cannot render math"):
        render_page(text)


# -- the execution cache --------------------------------------------------------------------------------------

def test_an_entry_another_build_removes_as_it_is_looked_up_is_a_miss(tmp_path, monkeypatch):
    """Two builds share one store (``NETCL_LITE_CACHE``), and a build removes an entry that does not match
    its digest. An entry removed by the other build between the lookup's check that it is a file and its
    read stopped this build with a bare FileNotFoundError naming the cache's file, not the page; it is a
    miss like any entry that is not there (the item runs again)."""
    import pathlib

    from site_build import store

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    store.store("build_output", "abc123", b"printed\n")
    assert store.lookup("build_output", "abc123") == b"printed\n"
    read = pathlib.Path.read_bytes

    def removed_first(self):
        if self.name == "abc123":
            self.unlink()                       # the other build, between is_file() and the read
        return read(self)

    monkeypatch.setattr(pathlib.Path, "read_bytes", removed_first)
    assert store.lookup("build_output", "abc123") is None
