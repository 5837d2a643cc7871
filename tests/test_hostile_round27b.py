"""Round 27b, an independent hostile check of the build plugin: pyproject.toml's version as the
wheel carries it (:func:`site_build.paths.pyproject_version`), what includes bring into a page
(:mod:`site_build.brought`, :mod:`site_build.includes`), and pages with odd names, front matter,
line endings and markers, called through the plugin's functions on small pages."""

from __future__ import annotations

import pytest

from site_build import paths

HEAD = '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n[project]\nname = "netcl_lite"\n'


@pytest.mark.parametrize("raw, normal", [("1.0-RC1", "1.0rc1"), ("v0.1.0", "0.1.0"), ("0.1.0-post1", "0.1.0.post1"),
                                         (" 0.1.0 ", "0.1.0"), ("01.2", "1.2")])
def test_the_version_is_the_one_hatchling_names_the_wheel_with(raw, normal):
    """A version PEP 440 accepts but writes otherwise was returned as written: the build looked for
    netcl_lite-1.0-RC1-py3-none-any.whl where hatchling wrote netcl_lite-1.0rc1-..., and failed asking
    whether hatchling is installed; the drill notebook compared the installed '1.0rc1' with '1.0-RC1'
    and installed the wheel again each time (or at a link the site does not serve)."""
    assert paths.pyproject_version(HEAD + f'version = "{raw}"\n') == normal


@pytest.mark.parametrize("raw", ['1.0"; import os #', "1.0/../x", "é" * 3, "1" * 5 + "x" * 5000])
def test_a_version_that_is_no_pep_440_version_is_refused_by_name(raw):
    """A version hatchling refuses (a quote, a slash, letters) was returned as written and put into a
    Python string of the drill notebook's first cell and into the wheel's file name (a quote ended the
    string; a slash made the name a path)."""
    import json
    with pytest.raises(ValueError, match=r"pyproject\.toml: \[project\]\.version .* is not a PEP 440 version"):
        paths.pyproject_version(HEAD + f"version = {json.dumps(raw)}\n")
