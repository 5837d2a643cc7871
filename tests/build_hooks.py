"""The build's MkDocs hooks (``docs/.hooks/*.py``), loaded as modules for the tests that call them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

HOOKS = Path(__file__).resolve().parent.parent / "docs" / ".hooks"


def load_hook(name: str):
    """A fresh module of ``docs/.hooks/<name>.py`` (its own state, as a new build would have)."""
    spec = importlib.util.spec_from_file_location(f"{name}_hook", HOOKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
