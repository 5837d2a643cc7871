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


# -- a citing page's title ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("front, line", [('title: ""', 3), ("title:", 3), ("title: '   '", 3), ("title: [a, b]", 3),
                                         ("title: ~", 3), ("title: 2020", 3), ("title: yes", 3)])
def test_a_citing_page_whose_title_is_no_text_fails_naming_its_line(tmp_path, front, line):
    """The Bibliography lists each citing page by its title; a front matter's empty title made an empty
    link ("Cited in ."), a null one the link "None", a list "['a', 'b']", ``yes`` "True" and ``2020`` a
    number YAML read, each with no error. The page's title is text, not blank: the error names the page
    and the title's line and says to quote it."""
    with pytest.raises(ValueError, match=rf"^docs/notes/p\.md:{line}: .*title.*quote"):
        _listed(tmp_path, "notes/p.md", f"---\nauthor: A\n{front}\n---\n\nAs [@{KEY}] shows.\n")


def test_a_read_page_whose_title_is_no_text_fails_too(tmp_path):
    """MkDocs gives a page the front matter's title as YAML read it (None for ``title:``); once read, the
    page was listed by the title computed again from its source, "None"."""
    read = SimpleNamespace(title=None, meta={"title": None})
    with pytest.raises(ValueError, match=r"^docs/p\.md:2: .*title"):
        _listed(tmp_path, "p.md", f"---\ntitle:\n---\n\nAs [@{KEY}] shows.\n", page=read)


def test_a_front_matter_title_that_is_text_is_listed_as_written(tmp_path):
    html = _listed(tmp_path, "p.md", f"---\ntitle: '2020: a year'\n---\n\nAs [@{KEY}] shows.\n")
    assert 'Cited in <a href="p.md">2020: a year</a>.' in html, html


# -- the year's letters -----------------------------------------------------------------------------------------

def test_more_works_cited_alike_than_letters_fails_naming_the_file(tmp_path):
    """27 works by one author in one year cannot be told apart by a letter; the error said so without
    naming the BibTeX file or an entry."""
    source = tmp_path / "refs.bib"
    source.write_text("".join(f"@article{{smith2020w{i}, author = {{Smith, Ann}}, title = {{T{i}}}, journal = {{J}}, "
                              f"year = {{2020}}}}\n" for i in range(27)), encoding="utf-8")
    with pytest.raises(ValueError, match=r"refs\.bib: 27 entries would be cited as Smith \(2020\).*'smith2020w0'"):
        citations.works(source)
