"""Each week's drill notebook is assembled from its snippet files and runs top to bottom."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

import doc_blocks

WEEKS = sorted({p.parent for p in doc_blocks.ROOT.glob("snippets/week*/drill_*.py")})


def test_there_are_drills():
    assert WEEKS, "no drill snippets found under snippets/week*/"


@pytest.mark.parametrize("week", WEEKS, ids=[w.name for w in WEEKS])
def test_drill_notebook_is_the_snippets_and_runs_top_to_bottom(week, built_site, tmp_path):
    path = doc_blocks.DOCS / "drills" / f"{week.name.replace('week', 'week-')}-drill.ipynb"
    assert path.is_file(), f"the build did not assemble {path}"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    steps = [p.read_text(encoding="utf-8").strip("\n") for p in sorted(week.glob("drill_*.py"))]
    assert code == steps, "the notebook's code cells differ from snippets/…/drill_*.py"
    for step in steps:  # every step is also on the week's page
        assert any(step.strip() in b.code for b in doc_blocks.runnable(doc_blocks.DOCS / f"{week.name.replace('week', 'week-')}.md")), "a drill step is not on its page"
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    rendered = (built_site / "drills" / path.stem / "index.html").read_text(encoding="utf-8")
    assert rendered.count("jp-CodeCell") >= len(steps)
    assert (built_site / "drills" / path.stem / path.name).is_file(), "no downloadable .ipynb next to the page"
