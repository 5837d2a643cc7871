"""Hostile round 28c: the book's apparatus as the build makes it.

Covers :mod:`site_build.offline`'s check for requests to another host, on tags whose
unquoted attribute values hold a quote character (HTML keeps such a quote as part of the
value; it opens no quoted string); :mod:`site_build.citations` on a BibTeX entry holding LaTeX math
(shown as typed); :mod:`site_build.docstrings` on Sphinx role forms it did not read (the domain
written out, a call's parentheses, ``!``), which the page showed as typed.
"""

from __future__ import annotations

from site_build.offline import remote_references


def test_apostrophe_in_unquoted_value_does_not_hide_the_tag():
    """An unquoted ``alt=it's`` made the tag scanner read the apostrophe as an opening quote that
    never closed, so the whole ``<img>`` was skipped and its ``src`` of another host went unreported."""
    assert remote_references("<img alt=it's src=//evil.example/x.png>") == ["//evil.example/x.png"]


def test_double_quote_in_unquoted_value_does_not_hide_the_tag():
    """The same with a '"' inside an unquoted value: the image request to another host was missed."""
    assert remote_references('<p><img alt=a"b src=//evil.example/x.png></p>') == ["//evil.example/x.png"]


def test_quote_in_attribute_name_does_not_hide_the_tag():
    """A quote in an attribute's name (HTML keeps it in the name) hid the tag's later ``src``."""
    assert remote_references("<img data-x'y src=//evil.example/x.png>") == ["//evil.example/x.png"]


def _entry_file(tmp_path, title: str):
    path = tmp_path / "references.bib"
    path.write_text("@article{smith2020bound, author = {Smith, John}, year = {2020},\n"
                    f"  title = {{{title}}}, journal = {{J}}}}\n", encoding="utf-8")
    return path


def test_math_in_a_bibliography_title_fails_naming_the_entry(tmp_path):
    """A title with LaTeX math (``On $O(n^2)$ time``) was read as plain text: the Bibliography and
    every citation's link title showed ``$O(n^2)$``, dollars and caret as typed."""
    import pytest

    from site_build import citations

    with pytest.raises(ValueError, match=r"smith2020bound.*LaTeX math '\$O\(n\^2\)\$'"):
        citations.works(_entry_file(tmp_path, "On $O(n^2)$ time"))


def test_a_plain_title_and_a_lone_dollar_still_load(tmp_path):
    """A single '$' is a dollar sign, not math: the entry loads as before."""
    from site_build import citations

    assert citations.works(_entry_file(tmp_path, "Costs under 5$ a day"))["smith2020bound"].title \
        == "Costs under 5$ a day"


def test_a_role_with_its_domain_written_out_leaves_no_stray_text():
    """``:py:func:`a.b``` matched from its ``:func:``, so the page showed a stray ``:py`` before the link."""
    from site_build.docstrings import markup

    assert markup("See :py:func:`a.b` here.") == 'See <autoref identifier="a.b" optional>`a.b`</autoref> here.'


def test_a_role_naming_a_call_is_a_cross_reference():
    """``:func:`a.train()``` (Sphinx allows the parentheses) matched no role: the page showed
    ``:func:`` as typed before the code."""
    from site_build.docstrings import markup

    assert markup(":func:`a.train()`") == '<autoref identifier="a.train" optional>`a.train()`</autoref>'


def test_a_role_marked_not_to_link_shows_its_name_in_code():
    """``:class:`!Thing``` (Sphinx: the name, no link) matched no role: the page showed ``:class:``
    and the ``!`` as typed."""
    from site_build.docstrings import markup

    assert markup("a :class:`!Thing` b") == "a `Thing` b"
