"""MkDocs hook: render the measured sections of a page from ``benchmarks/results/kernels.json``.

A line ``<!-- kernels.json: NAME -->`` in a page becomes the section NAME of
``benchmarks/report_kernels.py`` (``SECTIONS``: the setup line, the tables, the
findings), rendered from the JSON at build time. The figures beside them are
drawn from the same file by ``snippets/chapter8/figure_*.py``. An unknown NAME
fails the build.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_MARKER = re.compile(r"^<!-- kernels\.json: ([\w-]+) -->$", re.M)
_state: dict = {}


def on_pre_build(config) -> None:
    spec = importlib.util.spec_from_file_location("report_kernels", ROOT / "benchmarks" / "report_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # fresh on every build: mkdocs serve picks up edits
    _state.update(module=module, report=module.load())


def _section(m: re.Match, page) -> str:
    sections = _state["module"].SECTIONS
    if m.group(1) not in sections:
        raise ValueError(f"{page.file.src_uri}: no measured section {m.group(1)!r}; known: {sorted(sections)}")
    return sections[m.group(1)](_state["report"]).rstrip("\n")


def on_page_markdown(markdown: str, page, config, files) -> str:
    return _MARKER.sub(lambda m: _section(m, page), markdown)
