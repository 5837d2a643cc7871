"""Docstring examples (shown as code on the API reference pages) are doctests, and they pass."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy
import pytest

import netcl_lite
from site_build import docstrings
from site_build.paths import ROOT

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


@pytest.mark.parametrize("indent", ["", "    "])
def test_examples_render_as_code_at_any_indent(indent):
    """A module docstring indents its >>> example under a paragraph; it must still be a fence, not text."""
    import markdown

    text = f"A paragraph about the module.\n\n{indent}>>> 1 + 1\n{indent}2\n\nMore prose.\n"
    html = markdown.markdown(docstrings.markup(text), extensions=["pymdownx.superfences", "pymdownx.highlight"])
    assert "```" not in html, html
    assert '<span class="gp">&gt;&gt;&gt; </span>' in html, "the example is not highlighted as a console session"


def test_an_example_inside_a_fence_is_left_alone():
    text = "Prose.\n\n```python\n>>> 1 + 1\n```\n"
    assert docstrings.markup(text) == text


@pytest.mark.parametrize("role, identifier, shown", [
    (":func:`~netcl_lite.text.bpe.train_bpe`", "netcl_lite.text.bpe.train_bpe", "train_bpe"),
    (":mod:`netcl_lite.text`", "netcl_lite.text", "netcl_lite.text"),
    (":meth:`~netcl_lite.core.tensor.Tensor.reshape`", "netcl_lite.core.tensor.Tensor.reshape", "reshape"),
    (":exc:`ValueError`", "ValueError", "ValueError"),
])
def test_a_sphinx_role_becomes_an_optional_cross_reference_showing_the_same_name(role, identifier, shown):
    """The text a reader sees is the name in code (its last part after ``~``); the reference links it
    when a page renders the object and leaves it plain code otherwise (autorefs' ``optional``)."""
    out = docstrings.markup(f"See {role} here.")
    assert out == f'See <autoref identifier="{identifier}" optional>`{shown}`</autoref> here.'
    assert ":func:" not in out and ":mod:" not in out


def test_the_griffe_extension_rewrites_the_loaded_docstrings_and_resolves_names_in_their_scope():
    import griffe

    module = griffe.load("netcl_lite.ops.rope", extensions=griffe.load_extensions("site_build.docstrings"),
                         search_paths=[str(ROOT)])
    heads = module["rope_heads"].docstring.value
    assert ":func:`rope`" not in heads
    assert '<autoref identifier="netcl_lite.ops.rope.rope" optional>`rope`</autoref>' in heads
    assert "```pycon\n>>> x = np.arange(8.0)" in heads
