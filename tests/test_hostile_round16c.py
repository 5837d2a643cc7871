"""Hostile input, round 16c: the citation check that reads the page with the site's Markdown.

Each test is a case that the check (``site_build.citations.places``: the page read once with marks at
each ``@`` and bracket) got wrong: a mark that highlighting split, work that grew with the square of
the marks, a citation whose link Markdown made math of what follows it, an error naming another line,
raw HTML read as prose, a page that used up the characters marks begin with, a Bibliography entry's
``@`` read as a citation, and a table of contents taken for a link.
"""

from __future__ import annotations

import re
import time

import pytest

from site_build import citations
from site_render import bibliography_of, render_page

KEY = "vaswani2017attention"


# -- a mark is found where highlighting splits it ---------------------------------------------------------

@pytest.mark.parametrize("lang", ["cobol", "fortranfixed"])
def test_an_at_sign_in_code_that_highlighting_cuts_by_columns_stays_as_written(lang):
    """Fixed-format lexers cut a line by its columns; the mark after the ``@`` fell across two of their
    spans, was found nowhere, and the page failed ("stands where Markdown shows no text")."""
    text = f"Some code:\n\n```{lang}\n  @baz and @{KEY} here\n```\n"
    assert citations.render(text, "chapter-7.md") == text


# -- linear time ------------------------------------------------------------------------------------------

def _seconds(text: str) -> float:
    """The least CPU time of three checks of ``text``: one run can take a pause that is not the check's."""
    times = []
    for _ in range(3):
        start = time.process_time()
        try:
            citations.check(text, "hostile.md")
        except ValueError:
            pass
        times.append(time.process_time() - start)
    return min(times)


@pytest.mark.parametrize("unit, before, after, n", [
    ("@foo ", "![", "](x.svg)", 1000),                     # an image's alt text
    ("@foo ", '[x](y "', '")', 1000),                       # a link's title
    ("@foo ", "A paragraph\n{: title=\"", '" }', 1000),    # an attribute list
], ids=["alt-text", "link-title", "attribute-list"])
def test_many_marks_in_one_attribute_take_linear_time(unit, before, after, n):
    """Each mark in an attribute looked through every mark of the attribute again: 4x the text took
    16x the time."""
    citations.works()
    page = lambda k: f"# P\n\n{before}{unit * k}{after}\n"   # noqa: E731
    small, large = _seconds(page(n)), _seconds(page(4 * n))
    assert large < 8 * max(small, 0.05), (small, large)


def test_an_error_quotes_a_long_bracket_cut_short():
    """Every mark in a long bracket quoted the whole bracket in its error: errors whose size grew with
    the square of the bracket's length (16,000 marks in an image's alt text took 2 s and 1 GB)."""
    page = f"# P\n\n![{'@foo ' * 2000}](x.svg)\n"
    errors = citations._read(page, None)[2]
    assert len(errors) == 2000
    assert max(len(why) for _, why in errors) < 1000
    assert "\u2026" in errors[0][1]


# -- the rendered citation does not change what Markdown reads around it ------------------------------------

@pytest.mark.parametrize("text", [f"See \\[@{KEY}] and \\(x\\) after.", f"See \\[@{KEY}] here."])
def test_a_citation_after_a_backslash_fails_naming_the_line(text):
    """``\\[`` is an escaped bracket (or arithmatex's opening of display math): the citation's ``(``
    after the backslash made ``\\(``, arithmatex took the link's Markdown and the rest of the line for
    a formula, and the math stage failed naming no line ("Invalid parameter number")."""
    with pytest.raises(ValueError, match=r"^docs/chapter-7.md:3: .*backslash"):
        citations.render(f"# Title\n\n{text}\n", "chapter-7.md")
    out = citations.render(f"# Title\n\nAn escaped backslash \\\\[@{KEY}] cites.\n", "chapter-7.md")
    assert f"bibliography.md#{KEY}" in out


def test_a_citation_whose_bracket_is_escaped_fails_naming_its_line():
    """The check's mark before the ``]`` of ``[@key, p. 3\\]`` came between the backslash and the bracket,
    so the check read a bracket that Markdown does not; the citation's link never closed, and the
    rendered page failed naming the line of another citation of the key."""
    with pytest.raises(ValueError, match=r"^docs/chapter-7.md:5: .*escaped '\]'"):
        citations.render(f"# Title\n\nSee @{KEY} first.\n\nThen [@{KEY}, p. 3\\] here.\n", "chapter-7.md")


# -- each error names the line -----------------------------------------------------------------------------

def test_a_citation_the_rendered_page_shows_as_typed_is_named_on_its_own_line():
    """The check of the rendered page named the first line that cites the key, though that one became
    a link: ``_@key_`` (emphasis, which the check before rendering does not take for a citation) on a
    later line is the one shown as typed."""
    page = f"# Title\n\nSee [@{KEY}] first.\n\nThen _@{KEY}_ again.\n"
    with pytest.raises(ValueError, match=r"^docs/hostile.md:5: .*shows as typed"):
        render_page(page)


def test_a_citation_in_raw_html_inside_a_markdown_block_fails_naming_its_line():
    """Inside ``<div markdown>``, a ``<p>`` without the attribute is raw HTML that Markdown does not read;
    the check took its text for prose, and the rendered page failed naming the line that cites the key
    first ("did not become a link")."""
    page = f"# Title\n\nSee [@{KEY}] first.\n\n<div markdown>\n<p>Raw @{KEY} here</p>\n</div>\n"
    with pytest.raises(ValueError, match=r"^docs/chapter-7.md:6: .* stands in raw HTML"):
        citations.check(page, "chapter-7.md")
    assert f"bibliography.md#{KEY}" in citations.render(
        f"<div markdown>\n<p markdown>Read @{KEY} here</p>\n</div>\n", "chapter-7.md")


# -- marks --------------------------------------------------------------------------------------------------

def test_a_page_holding_the_characters_marks_begin_with_is_read_as_any_other():
    """The first characters a mark could begin with are 768 private-use characters; a page holding
    all of them failed with an error naming no page."""
    odd = "".join(chr(c) for first in (0xE000, 0xF0000, 0x100000) for c in range(first, first + 256))
    text = f"`{odd}` {odd} and [@{KEY}].\n"
    out = citations.render(text, "chapter-7.md")
    assert out.count(f"bibliography.md#{KEY}") == 1 and out.startswith(f"`{odd}` {odd} and ("), out[-200:]


def test_a_citation_in_a_heading_cites_on_a_page_with_a_table_of_contents():
    """``[TOC]`` copies each heading's text into a link of the table of contents; the check took the
    copy of a heading's citation for a citation in a link's text and failed."""
    page = f"# Title\n\n[TOC]\n\n## As @{KEY} showed\n\nText.\n"
    html = render_page(page)
    assert html.count(f'href="bibliography.md#{KEY}"') == 1, html


# -- the Bibliography page ----------------------------------------------------------------------------------

def test_an_at_sign_in_an_entry_shows_as_written_on_the_bibliography_page(tmp_path, monkeypatch):
    """An entry's text is the Bibliography page's Markdown: a title "Replying to @someone" was read as a
    near miss of a citation, and the build failed naming a line of docs/bibliography.md that the page
    does not have."""
    from site_build import apparatus

    known = bibliography_of(tmp_path, monkeypatch, "@article{smith2020x, author = {Smith, Ann}, title = "
                                                   "{Replying to @someone}, journal = {J}, year = {2020}, "
                                                   "note = {See @smith2020x and [@smith2020x]}}")
    monkeypatch.setattr(apparatus, "entries", lambda marker, page, files: citations.bibliography(_NoFiles(), known))
    html = render_page("# Bibliography\n\n<!-- bibliography -->\n", page="bibliography.md")
    shown = re.sub(r"<[^>]+>", "", html)
    assert "Replying to &#64;someone" in shown or "Replying to @someone" in shown, html
    assert "See &#64;smith2020x and [&#64;smith2020x]" in shown or "See @smith2020x and [@smith2020x]" in shown, html


class _NoFiles:
    def documentation_pages(self):
        return []
