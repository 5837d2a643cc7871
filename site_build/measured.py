"""Render the measured sections of a page from ``benchmarks/results/kernels.json``.

A line ``<!-- kernels.json: NAME -->`` in a page becomes the section NAME of
``benchmarks/report_kernels.py`` (``SECTIONS``: the setup line, the tables, the
findings), rendered from the JSON at build time. The figures beside them are
drawn from the same file by ``snippets/chapter8/figure_*.py``. An unknown NAME
fails the build.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from . import markers
from .paths import ROOT

REPORT = ROOT / "benchmarks" / "report_kernels.py"
RESULTS = ROOT / "benchmarks" / "results" / "kernels.json"


class MeasuredSections:
    """The report module and its loaded results (the plugin reads them again when either file changed,
    so ``mkdocs serve`` picks up edits of both)."""

    def __init__(self, report: Path = REPORT):
        spec = importlib.util.spec_from_file_location("report_kernels", report)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.sections = module.SECTIONS
        results = getattr(module, "RESULTS", RESULTS.parent) / "kernels.json"
        try:
            self.report = module.load()
        except (OSError, ValueError, RecursionError) as err:   # emptied, truncated, not UTF-8, nested deeper
            # than json.loads recurses: not a JSON traceback
            shown = results.relative_to(ROOT).as_posix() if results.is_relative_to(ROOT) else str(results)
            raise ValueError(f"{shown}: the measured results that the pages' kernels.json sections render "
                             f"cannot be read ({type(err).__name__}: {err}); run benchmarks/bench_kernels.py "
                             f"again, or restore the file from git") from None

    def section(self, marker: markers.Marker) -> str:
        """The section a ``kernels.json`` marker names, rendered; an unknown name, or results the report
        cannot render (a field missing or of another type, roofline.json of another machine), fails the
        build naming the page and the marker's line."""
        name = marker.match["section"]
        if name not in self.sections:
            raise ValueError(f"{marker.where}: no measured section {name!r}; known: {sorted(self.sections)}")
        try:
            return self.sections[name](self.report).rstrip("\n")
        except Exception as err:                   # the report reads the results' fields as it renders
            raise ValueError(f"{marker.where}: {REPORT.relative_to(ROOT).as_posix()} cannot render the section "
                             f"{name!r} from {RESULTS.relative_to(ROOT).as_posix()}: {type(err).__name__}: {err}") from err

    def render(self, markdown: str, page: str, first_line: int = 1) -> str:
        """``markdown`` with each ``kernels.json`` marker replaced by its section (``page`` names errors)."""
        return markers.replace(markdown, page, {"kernels.json": self.section}, first_line)
