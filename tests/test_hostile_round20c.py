"""Hostile input, round 20c: citations (``site_build.citations``) and the Bibliography page.

Each test is a case the build got wrong before its fix: the Bibliography's "Cited in" link to a page
whose file name holds ``)``, ``#``, ``?``, ``%`` or ``&`` ended early or pointed at another file; a citing
page whose front matter's title is empty or null was listed as an empty link or as "None"; and the
error for more works cited alike than the year has letters did not name the BibTeX file.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from urllib.parse import unquote, urlsplit

import pytest

from site_build import citations
from site_render import render_page

KEY = "vaswani2017attention"


def _vaswani() -> dict:
    return {k: w for k, w in citations.works().items() if k == KEY}


def _listed(tmp_path, src_uri: str, text: str, page=None) -> str:
    """The Bibliography's HTML when one page, ``docs/<src_uri>`` holding ``text``, cites the work."""
    source = tmp_path / "page.md"
    source.write_text(text, encoding="utf-8")
    files = SimpleNamespace(documentation_pages=lambda: [
        SimpleNamespace(src_uri=src_uri, abs_src_path=str(source), page=page)])
    return render_page(citations.bibliography(files, _vaswani()), page="bibliography.md")


# -- the "Cited in" links --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a)b.md", "notes/a#b.md", "a?b.md", "a%20b.md", "a&amp;b.md", "my page.md",
                                  "über/ç.md"])
def test_a_citing_page_s_link_leads_to_its_file_whatever_its_name(tmp_path, name):
    """The link to a citing page was its file's path as written: ``a)b.md`` ended the link's Markdown at
    its ``)`` (the link led to ``a``, "b.md)" shown after it), ``a#b.md`` and ``a?b.md`` led to ``a`` (a
    fragment, a query), ``a%20b.md`` to ``a b.md``, ``a&amp;b.md`` to ``a&b.md``. MkDocs decodes a
    link's target to find its file: the target is the path percent-encoded."""
    html = _listed(tmp_path, name, f"# The page\n\nAs [@{KEY}] shows.\n")
    links = re.findall(r'Cited in <a href="([^"]*)">([^<]*)</a>\.</li>', html)
    assert len(links) == 1 and links[0][1] == "The page", html
    target = urlsplit(links[0][0].replace("&amp;", "&"))       # as MkDocs reads a link's target
    assert unquote(target.path) == name and not target.query and not target.fragment, links
