"""Each week's drill notebook is assembled from its snippet files and runs top to bottom; the
build executed it and shows its outputs."""

from __future__ import annotations

import json

import nbformat
import pytest

import doc_blocks
from site_build import generated

WEEKS = sorted({p.parent for p in doc_blocks.ROOT.glob("snippets/week*/drill_*.py")})


def _notebook_name(week) -> str:
    return f"{week.name.replace('week', 'week-')}-drill.ipynb"


def test_there_are_drills():
    assert WEEKS, "no drill snippets found under snippets/week*/"


def test_a_tenth_drill_step_comes_after_the_ninth(tmp_path):
    """Steps are ordered by their number: drill_10_… after drill_9_…, not between drill_1_… and
    drill_2_… as the file names sort."""
    week = tmp_path / "week99"
    week.mkdir()
    for n in (1, 2, 9, 10, 11):
        (week / f"drill_{n}_step.py").write_text(f"# Step {n}\nprint({n})\n")
    nb = generated.drill_notebook(week)
    headings = [c["source"][0] for c in nb["cells"] if c["id"].endswith("-heading") and c["id"] != "install-heading"]
    assert headings == ["## Step 1", "## Step 2", "## Step 9", "## Step 10", "## Step 11"], headings


def test_a_step_numbered_in_other_than_ascii_digits_counts_as_unnumbered(tmp_path):
    """``"²".isdigit()`` holds but ``int("²")`` raises: the order reads ASCII digits only, so a step
    named with a superscript or another script's digit comes after the numbered ones, by name."""
    week = tmp_path / "week99"
    week.mkdir()
    names = ["drill_\u00b2_x.py", "drill_10_b.py", "drill_\u0661_y.py", "drill_2_a.py", "drill_x.py"]
    for name in names:
        (week / name).write_text("# Step\nprint(1)\n", encoding="utf-8")
    assert [p.name for p in generated.drill_steps(week)] == [
        "drill_2_a.py", "drill_10_b.py", *sorted(["drill_\u00b2_x.py", "drill_\u0661_y.py", "drill_x.py"])]


def test_a_steps_heading_is_its_first_comment_line_without_the_hashes(tmp_path):
    week = tmp_path / "week99"
    week.mkdir()
    (week / "drill_1_a.py").write_text("## Step 1 — the mask  \nprint(1)\n")
    (week / "drill_2_b.py").write_text("#\tStep 2: 3 # 4\fx\nprint(2)\n")
    nb = generated.drill_notebook(week)
    headings = ["".join(c["source"]) for c in nb["cells"] if c["id"] in ("step-1-heading", "step-2-heading")]
    # ASCII punctuation is backslash-escaped, so the Markdown cell shows the line as written
    assert headings == ["## Step 1 — the mask", "## Step 2\\: 3 \\# 4\fx"], headings


@pytest.mark.parametrize("week", WEEKS, ids=[w.name for w in WEEKS])
def test_drill_notebook_is_the_snippets_in_order(week):
    """The notebook a reader downloads is the install cell, then the week's drill steps in order, each
    also shown on the week's page. The build executes it top to bottom, once per run
    (test_the_build_ran_the_drill_and_offers_it_with_its_outputs checks every cell ran without error)."""
    nb = nbformat.reads(json.dumps(generated.drill_notebook(week)), as_version=4)   # sources joined, as a reader's Jupyter does
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    steps = [p.read_text(encoding="utf-8").strip("\n")
             for p in sorted(week.glob("drill_*.py"), key=lambda p: int(p.name.split("_")[1]))]
    assert code[0] == generated.install_cell().strip("\n"), "the first code cell does not install the wheel"
    assert code[1:] == steps, "the notebook's code cells after the install differ from snippets/…/drill_*.py"
    for step in steps:  # every step is also on the week's page
        assert any(step.strip() in b.code for b in doc_blocks.runnable(doc_blocks.DOCS / f"{week.name.replace('week', 'week-')}.md")), "a drill step is not on its page"


@pytest.mark.parametrize("week", WEEKS, ids=[w.name for w in WEEKS])
def test_the_build_ran_the_drill_and_offers_it_with_its_outputs(week, built_site):
    name = _notebook_name(week)
    built = json.loads((doc_blocks.DOCS / "drills" / name).read_text(encoding="utf-8"))
    text = lambda cells: ["".join(c["source"]) for c in cells]  # noqa: E731 (a list or a str, per nbformat)
    assert text(built["cells"]) == text(generated.drill_notebook(week)["cells"]), "the built notebook is not this week's drill"
    code = [c for c in built["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] for c in code), "a drill cell was not executed by the build"
    assert all(o["output_type"] != "error" for c in code for o in c["outputs"])
    assert any(c["outputs"] for c in code), "the built drill shows no output"
    split = [i for i, c in enumerate(code) if sum(o["output_type"] == "stream" for o in c["outputs"]) > 1]
    assert not split, f"code cells {split} show their printed text in several boxes"
    page = built_site / "drills" / name.removesuffix(".ipynb")
    rendered = (page / "index.html").read_text(encoding="utf-8")
    assert rendered.count("jp-CodeCell") >= len(code)
    assert rendered.count("jp-OutputArea-output") >= 1, "the rendered drill shows no output"
    assert (page / name).is_file(), "no downloadable .ipynb next to the page"
