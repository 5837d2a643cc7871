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
    except RecursionError:                      # arrays or tables nested deeper than tomllib recurses
        raise ValueError("pyproject.toml: not valid TOML (nested deeper than it can be read)") from None
    version = project.get("version") if isinstance(project, dict) else None
    if not isinstance(version, str) or not version:
        raise ValueError("pyproject.toml: no version in [project]; set [project].version to a string")
    # the wheel's file name and its metadata carry the version as hatchling normalizes it (PEP 440):
    # '1.0-RC1' is built as netcl_lite-1.0rc1-...; the raw text would name a wheel never built
    from packaging.version import InvalidVersion, Version
    try:
        return str(Version(version))
    except InvalidVersion:
        raise ValueError(f"pyproject.toml: [project].version {version!r:.80} is not a PEP 440 version, which "
                         f"the wheel needs; set it to one such as '0.1.0'") from None
