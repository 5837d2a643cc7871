"""Docstring examples (shown as code on the API reference pages) are doctests, and they pass."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy
import pytest

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
