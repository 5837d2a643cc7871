"""Where the build reads and writes: the repository that holds this package (an editable install)."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets"
DOCS = ROOT / "docs"
FIGURES = DOCS / "figures"


@functools.lru_cache(maxsize=4)
def pyproject_version(text: str) -> str:
    """``[project].version`` of a pyproject.toml whose text is ``text``: the version the wheel carries."""
    try:
        project = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"pyproject.toml: not valid TOML ({err})") from err
    version = project.get("version") if isinstance(project, dict) else None
    if not isinstance(version, str) or not version:
        raise ValueError("pyproject.toml: no version in [project]; set [project].version to a string")
    return version
