"""Hostile input, round 37: three limitations earlier rounds noticed and left, now fixed.

1. A glossary entry whose ``see:`` names a draft (``draft_docs`` of ``mkdocs.yml``) was accepted:
   ``mkdocs serve`` shows drafts, but ``mkdocs build`` leaves them out, so the built Glossary linked a
   page the site does not have. It is refused, naming the entry, as an excluded page is.
2. A snippet that ends on an uncaught ``KeyboardInterrupt`` exited 1 under the snippet runner's
   wrapper, where ``python <script>`` ends by SIGINT (a shell's 130): the wrapper now ends as Python
   does, its output flushed first (and, as Python, exits 1 for a subclass of it).
3. ``match.last_wins`` given two-dimensional slots failed inside NumPy with a message about neither
   argument; it names both.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest


def test_glossary_see_refuses_a_draft_page(tmp_path, monkeypatch):
    from site_build import glossary, paths

    (tmp_path / "mkdocs.yml").write_text("site_name: t\ndraft_docs: |\n  drafts/\n", encoding="utf-8")
    docs = tmp_path / "docs"
    (docs / "drafts").mkdir(parents=True)
    (docs / "drafts" / "intro.md").write_text("# Intro\n", encoding="utf-8")
    (docs / "intro.md").write_text("# Intro\n", encoding="utf-8")
    source = docs / "glossary.yml"
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    monkeypatch.setattr(glossary, "DOCS", docs)
    monkeypatch.setattr(glossary, "SOURCE", source)
    source.write_text("- term: kernel\n  definition: A function run on a device.\n  see: intro.md\n",
                      encoding="utf-8")
    glossary.glossary("glossary.md", glossary.terms(source))       # a page the build keeps: accepted
    source.write_text("- term: kernel\n  definition: A function run on a device.\n  see: drafts/intro.md\n",
                      encoding="utf-8")
    with pytest.raises(ValueError, match="kernel.*draft_docs"):
        glossary.glossary("glossary.md", glossary.terms(source))


@pytest.mark.parametrize("ending", ["raise KeyboardInterrupt", "raise SystemExit(3)", "raise ValueError('no')",
                                    "class Stop(KeyboardInterrupt):\n    pass\nraise Stop"])
def test_a_snippet_ends_under_the_wrapper_as_it_ends_under_python(tmp_path, ending):
    from site_build.runner import python_command

    script = tmp_path / "snippet.py"
    script.write_text(f"import sys\nprint('before', end='')\nsys.stdout.write(' and after')\n{ending}\n",
                      encoding="utf-8")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    wrapped = subprocess.run(python_command(script), capture_output=True, text=True, timeout=60)
    assert (wrapped.returncode, wrapped.stdout) == (plain.returncode, plain.stdout), (wrapped, plain)
    assert wrapped.stderr.splitlines()[-1:] == plain.stderr.splitlines()[-1:]


def test_last_wins_names_slots_of_the_wrong_shape():
    from netcl_lite.match import last_wins

    table = np.zeros(8, np.int64)
    with pytest.raises(ValueError, match="slots and values"):
        last_wins(np.array([[1, 2], [3, 4]]), np.array([5, 6]), table)
    with pytest.raises(ValueError, match="slots and values"):
        last_wins(np.array([1, 2]), np.array([5, 6, 7]), table)
    last_wins(np.array([1, 2, 1]), np.array([5, 6, 7]), table)
    assert table.tolist() == [0, 7, 6, 0, 0, 0, 0, 0]
