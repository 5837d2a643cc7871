"""Hostile input, round 19c: citations (``site_build.citations``) and the Bibliography page.

Each test is a case the build got wrong before its fix: a citing page whose heading holds ``&`` or ``<``
was listed on the Bibliography as "A &amp; B"; an identifier holding ``</li>`` ended its entry's list
item early (the rest of the entry outside it, a paragraph inside the list); a locator holding HTML or
an autolink put a tag or a link inside the citation's link (a link in a link, a paragraph closed
inside it); and an entry whose title reads as nothing was listed as "*.*".
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from site_build import citations
from site_render import bibliography_of, render_page, rendered_page

NO_FILES = SimpleNamespace(documentation_pages=lambda: [])
KEY = "vaswani2017attention"


def _entry(key: str, author: str, title: str = "T", year: str = "2020", more: str = "") -> str:
    return (f"@article{{{key}, author = {{{author}}}, title = {{{title}}}, journal = {{J}}, year = {{{year}}}"
            f"{more}}}\n")


def _vaswani() -> dict:
    return {k: w for k, w in citations.works().items() if k == KEY}


# -- the pages the Bibliography lists ---------------------------------------------------------------------------

@pytest.mark.parametrize("heading, shown", [("Tokens & attention", "Tokens &amp; attention"),
                                            ("Why a<b holds", "Why a&lt;b holds")])
def test_a_citing_page_s_title_shows_as_its_heading_does(tmp_path, heading, shown):
    """MkDocs' title of a page named by its first heading is HTML (``Tokens &amp; attention``); the
    Bibliography escaped it again as text, so the page was listed as "Tokens &amp;amp; attention", which
    reads "Tokens &amp; attention", whether MkDocs had read the page or not."""
    text = f"# {heading}\n\nAs [@{KEY}] shows.\n"
    source = tmp_path / "page.md"
    source.write_text(text, encoding="utf-8")
    read = rendered_page(text)
    for page in (read, None):
        files = SimpleNamespace(documentation_pages=lambda page=page: [
            SimpleNamespace(src_uri="page.md", abs_src_path=str(source), page=page)])
        html = render_page(citations.bibliography(files, _vaswani()), page="bibliography.md")
        assert f'Cited in <a href="page.md">{shown}</a>.' in html, html


# -- an entry's identifiers -------------------------------------------------------------------------------------

@pytest.mark.parametrize("identifier", ["10.1000/a</li>b", "10.1000/a</ul>b", "10.1000/a<![CDATA[b",
                                        "10.1000/a<?x b"])
def test_an_identifier_holding_html_stays_in_its_entry(tmp_path, monkeypatch, identifier):
    """An identifier is shown as code; one holding ``</li>`` ended its entry's list item inside the code
    (the Bibliography's list is raw HTML, read before the code), so the rest of the entry stood outside
    it, a paragraph inside the list, and ``<![CDATA[`` put the next entry inside this one."""
    bibliography_of(tmp_path, monkeypatch, _entry("smith2020x", "Smith, Ann", more=f", doi = {{{identifier}}}")
                    + _entry("zeta2020x", "Zeta, Zoe"))
    html = render_page(citations.bibliography(NO_FILES, citations.works()), page="bibliography.md")
    items = re.findall(r'<li id="(\w+)">(.*?)</li>', html, re.S)
    assert [k for k, _ in items] == ["smith2020x", "zeta2020x"] and html.count("</li>") == 2, html
    escaped = identifier.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert f"<code>doi:{escaped}</code>." in items[0][1], html
    assert "<p>" not in html, html


# -- a locator ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("citation", [
    f"[@{KEY}, <http://example.org/p3>]",
    f'[@{KEY}, <a href="http://example.org">p. 3</a>]',
    f"@{KEY} [<http://example.org/p3>]",
    f"[@{KEY}, <b>p. 3]",
    f"[@{KEY}, </p><p>p. 3]",
    f"[@{KEY}, <button>p. 3</button>]",
])
def test_a_locator_holding_html_or_an_autolink_fails_naming_the_line(citation):
    """A locator stands inside the citation's link; one holding an autolink or a raw ``<a>`` made a link
    inside the link (a browser ends the citation's link there), an unclosed ``<b>`` a tag the link does
    not close, ``</p><p>`` a link across two paragraphs, a ``<button>`` a control inside a link: each
    with no error."""
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:5: .*locator.*HTML"):
        render_page(f"# T\n\nText.\n\nSee {citation} here.\n")


def test_a_locator_may_show_html_in_code_or_as_references():
    """A locator's code span, a comment and character references are no HTML there: they still cite."""
    html = render_page(f"# T\n\nSee [@{KEY}, `<b>` <!-- x -->] and @{KEY} [&lt;p. 3&gt;].\n")
    assert html.count(f'href="bibliography.md#{KEY}"') == 2, html
    assert "<code>&lt;b&gt;</code>" in html and "&lt;p. 3&gt;)" in html, html


def test_a_locator_s_backslash_before_a_tag_is_no_escape():
    """Python-Markdown has no escape for ``<``: ``\\<b>`` keeps its backslash and the tag."""
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:3: .*locator holds HTML \('<b>'\)"):
        render_page(f"# T\n\nSee @{KEY} [\\<b>p. 3].\n")


# -- an entry's text ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field, value", [("title", "{}"), ("title", "{ {} }")])
def test_an_entry_whose_title_reads_as_nothing_is_refused_naming_the_file(tmp_path, monkeypatch, field, value):
    """``title = {{}}`` passed the check that an entry has a title (its field is not empty), and the
    Bibliography listed the work as "Ann Smith (2020). *.* J.", every citation's title "…(2020). . J."."""
    with pytest.raises(ValueError, match=r"references\.bib: the entry 'smith2020x' .*title"):
        bibliography_of(tmp_path, monkeypatch, _entry("smith2020x", "Smith, Ann", title=value))
