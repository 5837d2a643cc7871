"""MkDocs hook: make the files that are drawn or assembled from code, before MkDocs collects the pages.

* Figures: every ``snippets/<page>/figure_<name>.py`` is run with an output
  path and writes ``docs/figures/<page>/<name>.svg`` from netcl_lite's own
  results (or, for Chapter 8, from the benchmark JSON), so a figure cannot
  drift from the code any more than a printed number can. Each script states
  what it drew, numbers included, in the SVG's description; that text becomes
  the ``alt`` of the figure's ``<img>``, so no alt text is typed by hand.
* Drill notebooks: ``snippets/<week>/drill_<n>_<topic>.py`` are the one source
  of each drill. The page includes them one by one; this hook assembles them,
  in order, into ``docs/drills/<week>-drill.ipynb`` for download (rendered and
  executed by mkdocs-jupyter).

Both outputs are git-ignored and rewritten only when their content changes,
so ``mkdocs serve`` does not rebuild in a loop.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = ROOT / "snippets"
DOCS = ROOT / "docs"
FIGURES = DOCS / "figures"
_DESCRIPTION = re.compile(r"<dc:description>(.*?)</dc:description>", re.S)
_FIGURE_IMG = re.compile(r'<img\b[^>]*\bsrc="(?:[^"]*/)?figures/([\w-]+/[\w-]+)\.svg"[^>]*>')
_ALT = re.compile(r'\balt="[^"]*"')

_RUN_FIGURES = r"""
import runpy, sys
import matplotlib
matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "netcl-lite"      # stable element ids: unchanged figures stay byte-identical
matplotlib.rcParams["svg.fonttype"] = "path"           # text as paths: no font request from the page
for script, out in zip(sys.argv[1::2], sys.argv[2::2]):
    sys.argv = [script, out]
    runpy.run_path(script, run_name="__main__")
"""


def _write_if_changed(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


def build_figures() -> None:
    scripts = sorted(SNIPPETS.glob("*/figure_*.py"))
    if not scripts:
        return
    with tempfile.TemporaryDirectory() as tmp:
        pairs = []
        for script in scripts:
            pairs += [str(script), str(Path(tmp) / f"{script.parent.name}--{script.stem[len('figure_'):]}.svg")]
        env = dict(os.environ, MPLBACKEND="Agg")
        proc = subprocess.run([sys.executable, "-c", _RUN_FIGURES, *pairs], cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"a figure script failed:\n{proc.stderr[-4000:]}")
        for out in Path(tmp).glob("*.svg"):
            page, name = out.stem.split("--")
            svg = out.read_text(encoding="utf-8")
            svg = "\n".join(line for line in svg.splitlines() if "<dc:date>" not in line)  # no build date
            _write_if_changed(DOCS / "figures" / page / f"{name}.svg", svg.encode("utf-8"))


def figure_description(svg: Path) -> str | None:
    """The text a figure script gave as its SVG description (its alt text), or None."""
    m = _DESCRIPTION.search(svg.read_text(encoding="utf-8"))
    return " ".join(html.unescape(m.group(1)).split()) if m else None


def _with_alt(m: re.Match) -> str:
    svg = FIGURES / f"{m.group(1)}.svg"
    alt = figure_description(svg) if svg.is_file() else None
    if alt is None:
        raise ValueError(f"{svg.relative_to(ROOT)}: a generated figure must describe itself "
                         f"(savefig(..., metadata={{'Description': ...}})); it becomes the alt text")
    return _ALT.sub(lambda _: f'alt="{html.escape(alt)}"', m.group(0), count=1)


def _cell(kind: str, text: str, cell_id: str) -> dict:
    cell = {"cell_type": kind, "id": cell_id, "metadata": {}, "source": text.strip("\n").splitlines(keepends=True)}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def drill_notebook(week_dir: Path) -> dict:
    """The notebook for one week's drill: a title cell, then a heading and a code cell per step."""
    steps = sorted(week_dir.glob("drill_*.py"))
    title = f"# {week_dir.name.replace('week', 'Week ')} drill\n\nEach step runs on its own; run them top to bottom. Needs `netcl_lite`, which is not on PyPI: install it from a clone of the project's repository, with `pip install -e .` run in the clone's root (inside a virtual environment)."
    cells = [_cell("markdown", title, "title")]
    for n, step in enumerate(steps, 1):
        code = step.read_text(encoding="utf-8")
        first = code.splitlines()[0] if code else ""
        heading = first.lstrip("# ").strip() if first.startswith("#") else step.stem
        cells += [_cell("markdown", f"## {heading}", f"step-{n}-heading"), _cell("code", code, f"step-{n}")]
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def build_drills() -> None:
    for week_dir in sorted(p for p in SNIPPETS.glob("week*") if any(p.glob("drill_*.py"))):
        nb = drill_notebook(week_dir)
        data = (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
        _write_if_changed(DOCS / "drills" / f"{week_dir.name.replace('week', 'week-')}-drill.ipynb", data)


def on_pre_build(config) -> None:
    build_figures()
    build_drills()


def on_page_content(content: str, page, config, files) -> str:
    return _FIGURE_IMG.sub(_with_alt, content)
