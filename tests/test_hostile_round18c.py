"""Hostile input, round 18c: citations (``site_build.citations``) and the Bibliography page.

Each test is a case the build got wrong before its fix: a citation in a table whose reference holds a
``|`` split the row, an entry's ``%`` dropped the rest of its text, a citation dropped its authors'
particles (``van``, ``de la``), an accented surname sorted after Z, and a drill notebook's code was
read as a page's Markdown prose. A page MkDocs had not read yet (outside the nav, after the
Bibliography) was listed on the Bibliography by its path, not its title.
"""

from __future__ import annotations

import html as _html
import json
import re
from types import SimpleNamespace

import pytest

from site_build import citations
from site_render import bibliography_of, render_page

NO_FILES = SimpleNamespace(documentation_pages=lambda: [])


def _entry(key: str, author: str, title: str = "T", year: str = "2020") -> str:
    return f"@article{{{key}, author = {{{author}}}, title = {{{title}}}, journal = {{J}}, year = {{{year}}}}}\n"


# -- a citation in a table -----------------------------------------------------------------------------------

def test_a_citation_in_a_table_whose_reference_holds_a_pipe_stays_in_its_cell(tmp_path, monkeypatch):
    """A citation's link title is the full reference; a ``|`` there split the table's row inside the
    link's Markdown: the cell showed a broken link and the next cell the rest of the title, with no
    error."""
    known = bibliography_of(tmp_path, monkeypatch, _entry("smith2020x", "Smith, Ann", "Yes | No"))
    html = render_page("# T\n\n| a | b |\n|---|---|\n| see [@smith2020x] | x |\n")
    cells = re.findall(r"<td>(.*?)</td>", html)
    assert len(cells) == 2 and cells[1] == "x", html
    titles = [_html.unescape(t) for t in re.findall(r'<a href="bibliography.md#smith2020x" title="([^"]*)"', html)]
    assert titles == [known["smith2020x"].reference().strip()], html


# -- an entry's text ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["title = {Fifty % off}", "note = {Up 5% a year}", "author = {Smith%, Ann}"])
def test_an_entry_s_unescaped_percent_is_refused_not_read_as_a_comment(tmp_path, monkeypatch, field):
    """LaTeX reads ``%`` as a comment's start: a title "Fifty % off" showed as "Fifty" on every citation's
    title and on the Bibliography page, the rest dropped with no error."""
    entry = _entry("smith2020x", "Smith, Ann")
    name = field.split(" =")[0]
    entry = re.sub(rf"{name} = \{{[^}}]*\}}", field, entry) if f"{name} =" in entry else entry.replace(
        "year", f"{field}, year")
    with pytest.raises(ValueError, match=r"references\.bib: the entry 'smith2020x' .*'%'"):
        bibliography_of(tmp_path, monkeypatch, entry)
    known = bibliography_of(tmp_path, monkeypatch, _entry("smith2020x", "Smith, Ann", "Fifty \\% off"))
    assert known["smith2020x"].title == "Fifty % off"


# -- the authors a citation names ------------------------------------------------------------------------------

@pytest.mark.parametrize("author, who", [
    ("van Dijk, Jan", "van Dijk"),
    ("Jan van Dijk", "van Dijk"),
    ("van Dijk, Jan and de la Fuente, Ana", "van Dijk & de la Fuente"),
    ("von Neumann, John and Smith, Ann and Jones, Bob", "von Neumann et al."),
])
def test_a_citation_names_a_surname_with_its_particle(tmp_path, monkeypatch, author, who):
    """``van Dijk, Jan`` is cited "van Dijk (2020)", as the reference names him ("Jan van Dijk"); the
    citation showed "Dijk (2020)" and "(Dijk & Fuente, 2020)"."""
    known = bibliography_of(tmp_path, monkeypatch, _entry("dijk2020x", author))
    assert known["dijk2020x"].who == who
    html = render_page("# T\n\nAs @dijk2020x showed.\n")
    assert f">{who} (2020)</a>" in html.replace("&amp;", "&"), html


def test_the_bibliography_sorts_accented_surnames_among_the_others(tmp_path, monkeypatch):
    """Entries are sorted by first author: "Ávila" and "Émery" came after "Zhang", since an accented
    letter's code point is above every ASCII letter."""
    known = bibliography_of(tmp_path, monkeypatch, "".join([
        _entry("zhang2020x", "Zhang, Li"), _entry("avila2020x", "{\\'A}vila, Ana"),
        _entry("emery2020x", "\u00c9mery, Paul"), _entry("baker2020x", "Baker, Bob"),
        _entry("dijk2020x", "van Dijk, Jan")]))
    page = citations.bibliography(NO_FILES, known)
    assert re.findall(r'<li id="([a-z0-9]+)"', page) == ["avila2020x", "baker2020x", "emery2020x",
                                                         "dijk2020x", "zhang2020x"], page


# -- a drill notebook's page -----------------------------------------------------------------------------------

def _notebook(tmp_path, code: str) -> str:
    from site_build import generated

    week = tmp_path / "week99"
    week.mkdir()
    (week / "drill_1_cache.py").write_text(code, encoding="utf-8")
    return json.dumps(generated.drill_notebook(week), indent=1)


def test_a_drill_notebook_s_code_is_not_read_as_citations(tmp_path):
    """MkDocs gives a notebook's page its JSON as the page's Markdown; the citation check read it as
    prose, so a drill step with a decorator (``@functools.cache``, which the notebook shows as code)
    failed the build as a near miss of a citation."""
    from site_build import apparatus

    notebook = _notebook(tmp_path, "# Step 1 - a cache\nimport functools\n\n\n@functools.cache\ndef f():\n"
                                   "    return 1  # see [@vaswani2017attention]\n")
    apparatus.check_markdown(notebook, "drills/week-99-drill.ipynb")
    assert apparatus.render_markdown(notebook, "drills/week-99-drill.ipynb", None) == notebook


def test_a_notebook_that_shows_a_key_only_in_code_is_not_listed_as_citing_it(tmp_path, monkeypatch):
    """The Bibliography lists under each work the pages that cite it; a drill notebook whose code holds
    ``[@vaswani2017attention]`` in a comment (shown as code) was listed, its JSON read as Markdown."""
    notebook = tmp_path / "week-99-drill.ipynb"
    notebook.write_text(_notebook(tmp_path, "# Step 1 - a cache\nx = 1  # see [@vaswani2017attention]\n"),
                        encoding="utf-8")
    page = SimpleNamespace(src_uri="drills/week-99-drill.ipynb", abs_src_path=str(notebook),
                           page=SimpleNamespace(title="Week 99 drill (notebook)"))
    files = SimpleNamespace(documentation_pages=lambda: [page])
    known = {k: w for k, w in citations.works().items() if k == "vaswani2017attention"}
    assert "Cited in" not in citations.bibliography(files, known)


# -- the pages the Bibliography lists ---------------------------------------------------------------------------

def test_a_page_not_yet_read_is_listed_by_its_title_as_the_others_are(tmp_path):
    """The Bibliography names each page that cites a work by its title; a page outside the nav that MkDocs
    reads after the Bibliography (``proofs.md``, with ``# Proofs of the bounds``) has no page yet and
    was listed as "proofs", while one read before it was listed by its heading."""
    source = tmp_path / "proofs.md"
    source.write_text("# Proofs of the bounds\n\nAs [@vaswani2017attention] shows.\n", encoding="utf-8")
    page = SimpleNamespace(src_uri="proofs.md", abs_src_path=str(source), page=None)
    files = SimpleNamespace(documentation_pages=lambda: [page])
    known = {k: w for k, w in citations.works().items() if k == "vaswani2017attention"}
    assert "Cited in [Proofs of the bounds](proofs.md)." in citations.bibliography(files, known)
