"""Docstring examples (shown as code on the API reference pages) are doctests, and they pass."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import numpy
import pytest

import doc_blocks
import netcl_lite

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(netcl_lite.__path__, "netcl_lite.")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    # `np` is NumPy in every example, as on the pages; anything else an example imports itself.
    result = doctest.testmod(module, extraglobs={"np": numpy},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"


def test_no_docstring_example_is_skipped():
    """Every example runs on the device: none is marked to be skipped."""
    skipped = [name for name in MODULES
               if "+SKIP" in (importlib.import_module(name).__loader__.get_source(name) or "")]
    assert not skipped, f"docstring examples marked +SKIP in {skipped}"


def _docstring_markup():
    spec = importlib.util.spec_from_file_location("docstring_markup", doc_blocks.DOCS / ".hooks" / "docstring_markup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("indent", ["", "    "])
def test_examples_render_as_code_at_any_indent(indent):
    """A module docstring indents its >>> example under a paragraph; it must still be a fence, not text."""
    import markdown

    text = f"A paragraph about the module.\n\n{indent}>>> 1 + 1\n{indent}2\n\nMore prose.\n"
    extensions = ["pymdownx.superfences", "pymdownx.highlight", _docstring_markup().DoctestFences()]
    html = markdown.markdown(text, extensions=extensions)
    assert "```" not in html, html
    assert '<span class="gp">&gt;&gt;&gt; </span>' in html, "the example is not highlighted as a console session"
