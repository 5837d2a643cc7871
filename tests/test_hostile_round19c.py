"""Hostile input, round 19c: citations (``site_build.citations``) and the Bibliography page.

Each test is a case the build got wrong before its fix: a citing page whose heading holds ``&`` or ``<``
was listed on the Bibliography as "A &amp; B".
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

