"""Round 14b of the hostile check of the build plugin (``site_build``): what a hostile author, a
hostile bibliography, glossary or configuration still gets past it. Each test asserts the behaviour
the README and issue 58 promise; each failed on the code before its fix.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from site_build import build_output, citations, generated, glossary
from site_render import bibliography_of as _bibliography, rendered_page as _rendered_page, render_page

ROOT = Path(__file__).resolve().parent.parent
KEY = "vaswani2017attention"
NO_FILES = SimpleNamespace(documentation_pages=lambda: [])


# -- citations.bibliography: an identifier is code, its backticks included -----------------------------------

@pytest.mark.parametrize("field", ["doi = {10.1234/x`<img/src=//evil.example/x.png>`}",
                                   "isbn = {978`<img/src=//evil.example/x.png>`}"])
def test_an_identifier_holding_a_backtick_is_shown_as_written(tmp_path, monkeypatch, field):
    """The Bibliography page shows each identifier in a code span, ```doi:…```, with the field as the
    file holds it. A DOI that holds backticks (``10\\.\\d{4,9}/\\S+``, what tests/test_bibliography.py
    checks, takes it) closes that span early: what follows is raw HTML on the page, here an image
    loaded from another host. It should show as written, or be refused naming the file."""
    known = _bibliography(tmp_path, monkeypatch, "@article{smith2020x, author = {Smith, Ann}, title = {A title}, "
                                                 "journal = {J}, year = {2020}, " + field + "}")
    try:
        page = render_page(citations.bibliography(NO_FILES, known))
    except ValueError as err:
        assert "references.bib" in str(err)
        return
    assert "<img" not in page, page


# -- citations: the year is text too ---------------------------------------------------------------------------

def test_a_year_that_is_not_a_year_is_refused_or_shown_as_written(tmp_path, monkeypatch):
    """Authors, titles and venues are escaped as Markdown; the year is put into each citation's link text
    and into the Bibliography's entry as it is, so markup there becomes the page's HTML (an image from
    another host on every page that cites the work). A year that is not a year should be refused
    naming the file, or shown as written."""
    try:
        known = _bibliography(tmp_path, monkeypatch, "@article{smith2020x, author = {Smith, Ann}, title = {A title}, "
                                                     "journal = {J}, year = {2020 <img src=\"//evil.example/y.png\">}, "
                                                     "doi = {10.1234/x}}")
        pages = [render_page("As [@smith2020x] and @smith2020x show.\n"),
                 render_page(citations.bibliography(NO_FILES, known))]
    except ValueError as err:
        assert "references.bib" in str(err)
        return
    assert not any("<img" in page for page in pages), pages


@pytest.mark.parametrize("author", ["{others}", "{{}}"])
def test_an_entry_without_a_named_author_is_refused_naming_the_file(tmp_path, monkeypatch, author):
    """An entry without an author is refused naming the file (round 4). One whose author field names no
    one, ``author = {others}`` or ``author = {{}}``, passes that check: citing the first stops the build
    with an IndexError naming neither the page nor the file, the second is cited as "(, 2020)"."""
    entry = f"@article{{smith2020x, author = {author}, title = {{T}}, journal = {{J}}, year = {{2020}}, doi = {{10.1/x}}}}"
    with pytest.raises(Exception) as raised:
        _bibliography(tmp_path, monkeypatch, entry)
        render_page("As [@smith2020x] shows.\n")
    assert isinstance(raised.value, ValueError) and "references.bib" in str(raised.value), repr(raised.value)


# -- citations in math, after a narrative citation, in raw HTML ----------------------------------------------

@pytest.mark.parametrize("text", [f"Text $a [@{KEY}] b$ here.\n", f"$$\n@{KEY}\n$$\n",
                                  f"\\begin{{align*}}\n[@{KEY}]\n\\end{{align*}}\n"])
def test_a_citation_inside_dollar_math_is_left_to_the_math(text):
    """The README: code, math and comments are left alone, and ``\\(@key\\)`` is (it renders as math).
    The site's arithmatex also reads ``$…$``, ``$$…$$`` and ``\\begin{…}`` blocks as math, but the
    citation scan knows only ``\\(`` and ``\\[``: the citation there becomes its link's Markdown
    inside the formula, and the converter refuses that, in an error that names no line."""
    page = render_page(text)
    assert "<math" in page and "bibliography.md#" not in page, page


@pytest.mark.parametrize("text, kept", [
    (f"As shown by @{KEY} [in its appendix](chapter-8.md), attention works.\n", '<a href="chapter-8.md">'),
    (f"As shown by @{KEY} [in its appendix][app], attention works.\n\n[app]: chapter-8.md\n",
     '<a href="chapter-8.md">in its appendix</a>'),
    (f"As shown by @{KEY} [^1], attention works.\n\n[^1]: A note.\n", 'href="#fn:1"'),
])
def test_a_link_after_a_narrative_citation_stays_a_link(text, kept):
    """``@key [locator]`` takes the bracket after the key as the locator, also when the bracket is a
    link's text or a footnote reference: the link's target is left as text after the citation
    ("Vaswani et al. (2017, in its appendix)(chapter-8.md)") and the footnote loses its reference. The
    link should stay a link, or the build fail naming the page and the line."""
    try:
        page = render_page(text)
    except ValueError as err:
        assert str(err).startswith("docs/hostile.md:1:"), err
        return
    assert kept in page, page


@pytest.mark.parametrize("html", [f'<a href="chapter-8.md">as @{KEY} said</a>', f'<a href="chapter-8.md">[@{KEY}]</a>',
                                  f"<select><option>@{KEY}</option></select>", f"<xmp>@{KEY}</xmp>",
                                  f"<title>[@{KEY}]</title>"])
def test_a_citation_inside_raw_html_that_holds_no_link_fails_naming_the_line(html):
    """The README: a citation inside a link fails the build, naming the page and the line. In a raw
    HTML ``<a>`` it becomes a link nested in a link (the browser closes the outer one there); in an
    ``<option>`` the browser drops the link, and in ``<xmp>`` or ``<title>`` (raw text) it shows its
    tags as text."""
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:2:"):
        render_page(f"Text\n{html} here.\n")


@pytest.mark.parametrize("at", ["\uff20", "\ufe6b"])
def test_a_citation_with_a_compatibility_at_sign_fails_naming_the_line(at):
    """Markers read full-width letters as the letters they are (NFKC) and refuse the near miss; a
    citation typed with U+FF20 FULLWIDTH or U+FE6B SMALL COMMERCIAL AT (an input method's @) shows
    as typed, not linked, where any other near miss fails naming the page and the line."""
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:1:"):
        render_page(f"As {at}{KEY} shows.\n")


# -- mathml: numbered environments ---------------------------------------------------------------------------

def test_numbered_equations_are_numbered_in_order_or_refused():
    """The converter numbers ``equation`` and ``align`` itself, but each formula goes to it alone
    (``convert_with_local_state``): a page's three numbered equations all show "(1)", and ``\\eqref``
    to a labelled one shows "(??)". They should be numbered (1), (2), (3) with the reference resolved,
    or fail the build naming the page."""
    text = ("\\[\n\\begin{equation}\\label{first} a = b \\end{equation}\n\\]\n\n"
            "\\begin{align}\nc &= d\n\\end{align}\n\n"
            "\\[\n\\begin{equation} e = f \\end{equation}\n\\]\n\nAs \\(\\eqref{first}\\) says.\n")
    try:
        page = render_page(text)
    except ValueError as err:
        assert str(err).startswith("docs/hostile.md"), err
        return
    numbers = re.findall(r"<mtext>\((\S+?)\)</mtext>", page)
    assert numbers[:3] == ["1", "2", "3"] and "??" not in page, numbers


# -- mathml: the table of contents ---------------------------------------------------------------------------

def test_a_formula_in_a_heading_is_not_raw_latex_in_the_table_of_contents():
    """The heading itself gets MathML, but the table of contents, which the theme draws in the left
    sidebar (toc.integrate), keeps the heading's LaTeX: the reader sees ``The \\(O(n^2)\\) cost``."""
    page = _rendered_page("# A page\n\n## The \\(O(n^2)\\) cost\n\nText.\n")
    assert "<math" in page.content
    titles = [item.title for top in page.toc for item in [top, *top.children]]
    assert not any("\\(" in title for title in titles), titles


# -- glossary -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("html, later", [
    ("<xmp>the tokenizer</xmp>", ""),
    ("<script>var shown = '<code>';</script>", " The tokenizer."),
    ("<textarea><pre></textarea>", " The tokenizer."),
    ("<title><a></title>", " The tokenizer."),
])
def test_raw_text_elements_get_no_tooltip_and_end_where_the_browser_ends_them(html, later):
    """``<script>``, ``<style>``, ``<textarea>``, ``<title>`` and ``<xmp>`` hold text, not tags, up to their
    own end tag. The glossary reads a tag in that text as a tag: a ``<code>`` in a script's string
    opens a code element that never closes, so no later term gets its tooltip; and ``<xmp>`` is not
    skipped, so its text shows the tooltip's markup as text."""
    page = render_page(f"Text {html}{later}\n", page="chapter-7.md")
    if later:
        assert page.count('<abbr class="glossary"') == 1, page
    else:
        xmp = re.search(r"<xmp>.*?</xmp>", page, re.S).group(0)
        assert "<abbr" not in xmp, xmp


def _glossary_page(entries) -> str:
    return render_page(glossary.glossary(entries=tuple(entries)))


def test_a_definition_s_citation_syntax_is_shown_as_written_or_refused():
    """A definition is plain text, the tooltip's, and the Glossary page shows it as written
    (``_as_written``). A key in it is made a citation link there (the citation stage runs on the
    whole page), while the tooltip on the chapters shows "@vaswani2017attention"."""
    entry = glossary.Term(term="attention", definition=f"Introduced by @{KEY} for translation.",
                          forms=("attention",))
    try:
        page = _glossary_page([entry])
    except ValueError as err:
        assert "glossary" in str(err), err
        return
    assert "bibliography.md#" not in page, page


@pytest.mark.parametrize("term", ["- delta", "1. first layer"])
def test_a_term_that_reads_as_a_block_is_shown_as_written(term):
    """Round 13 escaped a term's inline Markdown; a term that starts like a list item still turns into one:
    "- delta" becomes a bullet list holding "delta", "1. first layer" a numbered one (and the
    definition list is split around them). The term should be its <dt>'s text, as written."""
    entry = glossary.Term(term=term, definition="A definition.", forms=(term,))
    page = _glossary_page([entry])
    dt = re.search(r"<dt[^>]*>(.*?)</dt>", page, re.S)
    import html as html_module
    assert dt is not None and html_module.unescape(dt.group(1)) == term, page


# -- generated: the drill notebook's wheel address -----------------------------------------------------------

@pytest.mark.parametrize("line", ['site_url: "https://example.org/book/"', "site_url: 'https://example.org/book/'",
                                  "site_url: https://example.org/book", ""])
def test_the_drill_notebook_installs_the_wheel_at_the_site_s_address(tmp_path, monkeypatch, line):
    """MkDocs reads ``site_url`` as YAML and ends it with a slash (the needs-extra notes use that
    value). The notebook's install cell takes the text after ``site_url:`` as it stands: quoted, the
    quotes go into the URL (double quotes make the cell a syntax error), without a slash the wheel's
    name is glued to the last folder, and without a site_url the build stops with an AttributeError.
    The cell should name the wheel under the address the site is served from, or the build fail
    naming mkdocs.yml."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "mkdocs.yml").write_text(f"site_name: x\n{line}\n", encoding="utf-8")
    monkeypatch.setattr(generated, "ROOT", tmp_path)
    from site_build.paths import pyproject_version

    version = pyproject_version((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    try:
        cell = generated.install_cell()
    except ValueError as err:
        assert "mkdocs.yml" in str(err) and not line, err
        return
    expected = f'WHEEL = "https://example.org/book/netcl_lite-{version}-py3-none-any.whl"'
    assert expected in cell.split("\n"), [l for l in cell.split("\n") if l.startswith("WHEEL")]


# -- the execution cache ------------------------------------------------------------------------------------

def test_a_figure_s_key_covers_the_files_under_its_folder(tmp_path):
    """A figure's key covers "every other file in its own folder", read by the script through
    ``__file__`` (Chapter 8's scripts reach benchmarks/ that way); a data file in a subfolder of
    that folder (``snippets/<page>/data/points.csv``) is read the same way but left out of the key,
    so the figure is served from the store after the data changed."""
    folder = tmp_path / "chapter99"
    (folder / "data").mkdir(parents=True)
    script = folder / "figure_points.py"
    script.write_text("import sys, pathlib\n"
                      "points = (pathlib.Path(__file__).parent / 'data' / 'points.csv').read_text()\n"
                      "open(sys.argv[1], 'w').write(f'<svg><desc>{points}</desc></svg>')\n", encoding="utf-8")
    (folder / "data" / "points.csv").write_text("1,2\n", encoding="utf-8")
    before = generated.figure_key(script, "shared")
    (folder / "data" / "points.csv").write_text("3,4\n", encoding="utf-8")
    assert generated.figure_key(script, "shared") != before


def test_a_build_output_whose_line_numbers_moved_runs_again(tmp_path, monkeypatch):
    """The key of a build output strips the code's leading blank lines, "which change nothing it does";
    they change every line number it prints (a traceback printed to stdout, a frame's line): after a
    blank line is added at the top, the store serves the old numbers, which a fresh run no longer
    prints."""
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "store"))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    snippet = tmp_path / "lines.py"
    code = "import traceback, sys\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc(file=sys.stdout)\n"
    snippet.write_text(code, encoding="utf-8")
    outputs = build_output.BuildOutputs(lambda: "shared")
    assert 'line 3,' in outputs.cached_output(str(snippet))
    snippet.write_text("\n" + code, encoding="utf-8")
    shown = build_output.BuildOutputs(lambda: "shared").cached_output(str(snippet))
    assert 'line 4,' in shown, shown


# -- scans that read the page again from each of many places ----------------------------------------------

def test_many_needs_extra_markers_in_a_row_are_checked_in_linear_time():
    """Each needs-extra marker looks down the page, past blank lines and the other notes, for its python
    block: a run of n notes reads n^2/2 lines before any note's extra is checked (4,000 lines, about
    120 KB: 9 s here; 40,000: some 15 minutes). Found once for the run, it takes milliseconds."""
    from site_build import markers

    text = "\n".join(f"<!-- needs-extra: e{i} -->" for i in range(4000)) + "\n```python\nx = 1\n```\n"
    start = time.process_time()
    markers.find(text, "docs/hostile.md")
    assert time.process_time() - start < 2.0, time.process_time() - start


def test_many_unclosed_formula_spans_are_read_in_linear_time():
    """The MathML stage finds formulas with ``<span class="arithmatex">\\((.*?)\\)</span>``: from each such
    opening never closed (raw HTML may hold them: an HTML block is passed through as written) the
    pattern reads on to the page's end. 5,000 of them, 140 KB, take about 10 s here; 20,000, minutes."""
    from site_build import mathml

    page = "<div>" + '<span class="arithmatex">\\(' * 5000 + "</div>"
    start = time.process_time()
    assert mathml.render(page, "hostile.md") == page
    assert time.process_time() - start < 2.0, time.process_time() - start


def test_many_unclosed_pycon_blocks_are_read_in_linear_time():
    """``copyable.render_content`` finds each ``>>>`` session with ``<div class="language-pycon highlight"``
    ``(>.*?<code>)(.*?)(</code>)``: with no ``</code>`` after them (raw HTML the page passes through), each
    opening tries every later ``<code>`` and reads on to the page's end from each: 400 of them, 18 KB,
    take about 5 s here, 2,000 (90 KB) some ten minutes."""
    from site_build import copyable

    page = '<div class="language-pycon highlight"><code>&gt;&gt;&gt; x' * 400
    start = time.process_time()
    assert copyable.render_content(page) == page
    assert time.process_time() - start < 1.0, time.process_time() - start


def test_a_figure_s_description_is_read_in_linear_time(tmp_path):
    """The alt text is the SVG's ``<dc:description>(.*?)</dc:description>``; an SVG of openings never
    closed (a figure script writes what it likes, up to FIGURE_LIMIT = 2 MiB) is read to its end from
    each: 8,000 of them, 130 KB, take about 4 s here, and 2 MiB some twenty minutes, on every page
    render that shows the figure."""
    svg = tmp_path / "f.svg"
    svg.write_text("<svg>" + "<dc:description>" * 8000 + "</svg>", encoding="utf-8")
    start = time.process_time()
    assert generated.figure_description(svg) is None
    assert time.process_time() - start < 1.0, time.process_time() - start


def test_a_drill_step_s_heading_is_read_in_linear_time(tmp_path, monkeypatch):
    """A step's first line must be a heading, ``#+ (\\w.*?)[ \\t]*`` read whole: a lazy ``.*?`` before
    ``[ \\t]*`` tries the blanks again from each place, so a heading of 60,000 blanks and then a word
    takes about 7 s here (a megabyte, half an hour) before the notebook is assembled."""
    week = tmp_path / "week99"
    week.mkdir()
    (week / "drill_1_x.py").write_text("# Step 1" + " " * 60_000 + "x\nprint(1)\n", encoding="utf-8")
    monkeypatch.setattr(generated, "install_cell", lambda: "print('install')\n")
    start = time.process_time()
    generated.drill_notebook(week)
    assert time.process_time() - start < 1.0, time.process_time() - start
