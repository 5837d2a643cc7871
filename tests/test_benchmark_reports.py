"""The benchmark tables the pages include are exactly what the results JSON says."""

from __future__ import annotations

import importlib.util
import json

import doc_blocks

RESULTS = doc_blocks.ROOT / "benchmarks" / "results"


def _report_module():
    spec = importlib.util.spec_from_file_location("report_kernels", doc_blocks.ROOT / "benchmarks" / "report_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kernels_markdown_matches_json():
    report = json.loads((RESULTS / "kernels.json").read_text())
    assert report["rows"], "no benchmark rows"
    assert (RESULTS / "kernels.md").read_text() == _report_module().markdown(report), (
        "benchmarks/results/kernels.md is stale: run python benchmarks/report_kernels.py"
    )


def test_chapter_8_includes_the_measured_tables():
    assert '--8<-- "benchmarks/results/kernels.md"' in (doc_blocks.DOCS / "chapter-8.md").read_text()
