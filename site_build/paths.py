"""Where the build reads and writes: the repository that holds this package (an editable install)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets"
DOCS = ROOT / "docs"
FIGURES = DOCS / "figures"
