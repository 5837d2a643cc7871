"""Round 15b of the hostile check of the build plugin (``site_build``): what a hostile author, a hostile
bibliography, glossary, dirty-build record or configuration still gets past it after round 14b. Each
test asserts the behaviour the README and issue 58 promise; each failed on the code before its fix, and
the citation check reads what is prose as Python-Markdown reads it (a code span begun inside math, a tag
or a comment is code).
"""

from __future__ import annotations

import html as html_module
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from site_build import build_output, citations, generated, glossary
from site_render import bibliography_of as _bibliography, rendered_page as _rendered_page, render_page

ROOT = Path(__file__).resolve().parent.parent
KEY = "vaswani2017attention"
NO_FILES = SimpleNamespace(documentation_pages=lambda: [])


# -- citations: math that arithmatex reads after an escaped backslash ----------------------------------------

@pytest.mark.parametrize("text", [f"A \\\\$x @{KEY} y$ b.\n", f"Text \\({{a \\\\) @{KEY} b}}\\) end.\n"])
def test_a_citation_in_math_that_follows_an_escaped_backslash_is_left_to_the_math(text):
    """Arithmatex reads ``\\\\`` as an escaped backslash, so ``\\\\$x … y$`` is ``$…$`` math after a
    backslash, and inside ``\\(a \\\\) … \\)`` the ``\\\\`` is a pair, not the formula's end. The citation
    scan reads ``$`` after a backslash as escaped and ends ``\\(`` math at the first ``\\)``: the
    citation there becomes its link's Markdown inside the formula, and the converter refuses it in an
    error that names no line. The citation should be left to the math, or the build fail naming the
    page and the line. (The pair stands in a group: a line break outside every group and environment
    is refused in its own right, since the converter drops it.)"""
    try:
        page = render_page(text)
    except ValueError as err:
        assert str(err).startswith("docs/hostile.md:1:"), err
        return
    assert "<math" in page and "bibliography.md#" not in page, page


# -- citations: what is text, what is a link ----------------------------------------------------------------

def test_a_citation_inside_a_raw_link_whose_attribute_holds_its_end_tag_fails_naming_the_line():
    """A citation inside a raw HTML ``<a>`` fails naming the line (round 14b). The element's end is
    searched from the end of ``<a``, inside its own attributes: ``title='</a>'`` ends it there, and
    the citation after the start tag becomes a link nested in the link."""
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:2:"):
        render_page(f"Text\nSee <a title='</a>' href=\"chapter-8.md\">as @{KEY} said</a> here.\n")


def test_a_link_reference_definition_after_a_narrative_citation_stays_a_definition():
    """``@key [locator]`` allows any blank between the key and the bracket, a newline too: a link reference
    definition on the line under a citation (Python-Markdown reads one inside a paragraph) becomes
    the citation's locator, the page shows ": chapter-8.md", and every link that used the reference
    shows as its Markdown, "[the appendix][app]"."""
    text = f"As shown by @{KEY}\n[app]: chapter-8.md\n\nSee [the appendix][app].\n"
    try:
        page = render_page(text)
    except ValueError as err:
        assert str(err).startswith("docs/hostile.md:"), err
        return
    assert '<a href="chapter-8.md">the appendix</a>' in page, page


def test_a_shortcut_reference_link_after_a_narrative_citation_stays_a_link():
    """Round 14b kept ``[text](url)`` and ``[text][ref]`` after ``@key`` links; the shortcut form, ``[text]``
    with ``[text]: url`` defined on the page, is still read as the locator: the link is gone and its
    text shows inside the citation, "Vaswani et al. (2017, appendix)"."""
    text = f"As shown by @{KEY} [appendix], attention works.\n\n[appendix]: chapter-8.md\n"
    try:
        page = render_page(text)
    except ValueError as err:
        assert str(err).startswith("docs/hostile.md:1:"), err
        return
    assert '<a href="chapter-8.md">appendix</a>' in page, page


@pytest.mark.parametrize("html", [f"<plaintext>as @{KEY} said", f"<noembed>as @{KEY} said</noembed>",
                                  f"<noframes>as [@{KEY}]</noframes>"])
def test_a_citation_inside_another_raw_text_element_fails_naming_the_line(html):
    """Round 14b refused citations in ``<xmp>`` and ``<title>``, whose text is raw: the other raw text
    elements still get the link, ``<plaintext>`` (its text, to the page's end, shows the link's tags
    as text), ``<noembed>`` and ``<noframes>`` (raw text a browser does not show)."""
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:2:"):
        render_page(f"Text\n{html} here.\n")


def test_a_key_after_an_escaped_backslash_is_cited_or_refused():
    """``\\@`` is the escape that shows an ``@`` and cites nothing; ``\\\\`` is an escaped backslash, so in
    ``C:\\\\@key`` the key follows a backslash the page shows. The scan takes the ``@`` as escaped all
    the same: the page shows "C:\\@vaswani2017attention", no link and no error, where anything that
    looks like a citation and is not one fails naming the line."""
    try:
        page = render_page(f"A path C:\\\\@{KEY} here.\n")
    except ValueError as err:
        assert str(err).startswith("docs/hostile.md:1:"), err
        return
    assert "bibliography.md#" in page, page


# -- the table of contents and the page's title ----------------------------------------------------------------

@pytest.mark.parametrize("heading", ["The `\\(x\\)` code", "The \\\\(x\\\\) text"])
def test_a_heading_s_code_is_not_a_formula_in_the_table_of_contents(heading):
    """The table of contents gets the heading's formulas as MathML by finding ``\\(…\\)`` in its title, the
    heading's text with its tags stripped: a heading that shows ``\\(x\\)`` as code, or as text
    (``\\\\(``), shows a formula in the table of contents."""
    page = _rendered_page(f"# A page\n\n## {heading}\n\nText.\n")
    assert "<math" not in page.content, page.content
    titles = [item.title for top in page.toc for item in [top, *top.children]]
    assert not any("<math" in title for title in titles), titles


def test_a_formula_in_the_first_heading_is_not_raw_latex_in_the_page_title():
    """The first heading gives the page its title (the browser's tab, the navigation, the header): the
    heading and the table of contents get MathML, the title keeps the LaTeX, "The \\(O(n)\\) page"."""
    page = _rendered_page("# The \\(O(n)\\) page\n\n## Sub\n\nText.\n")
    assert "\\(" not in (page.title or ""), page.title


def test_a_formula_in_a_heading_s_toc_label_is_rendered_or_refused():
    """``## Heading { data-toc-label="Short \\(x\\)" }``: arithmatex turns the formula inside the braces
    into its span before attr_list reads them, so the heading and the table of contents show the
    attribute list as text, a formula inside it. It should label the entry, or fail naming the page."""
    try:
        page = _rendered_page("# A page\n\n## Heading { data-toc-label=\"Short \\(x\\)\" }\n\nText.\n")
    except ValueError as err:
        assert str(err).startswith("docs/hostile.md"), err
        return
    titles = [item.title for top in page.toc for item in [top, *top.children]]
    assert "data-toc-label" not in page.content and not any("data-toc-label" in t for t in titles), titles


# -- the Bibliography page ------------------------------------------------------------------------------------

def test_dollars_in_an_entry_are_not_math_on_the_bibliography_page(tmp_path, monkeypatch):
    """Authors, titles, venues and notes are escaped as Markdown, but not ``$``: a title "Paying $5 for
    attention" and a note "At 5$ each" make ``$5 … 5$`` arithmatex math, and the entry shows a formula
    of its letters in place of its title, its venue and its note."""
    known = _bibliography(tmp_path, monkeypatch, "@article{smith2020x, author = {Smith, Ann}, "
                                                 "title = {Paying $5 for attention}, journal = {J}, year = {2020}, "
                                                 "note = {At 5$ each}}")
    page = render_page(citations.bibliography(NO_FILES, known))
    assert "<math" not in page, page


def test_a_less_than_sign_in_a_title_shows_as_written(tmp_path, monkeypatch):
    """The entry's text is escaped with a backslash before each of ``\\`*_[]<>#|``; Python-Markdown has
    no escape for ``<``, so the page shows the backslash: "Why x \\< y matters"."""
    known = _bibliography(tmp_path, monkeypatch, "@article{smith2020x, author = {Smith, Ann}, "
                                                 "title = {Why x < y matters}, journal = {J}, year = {2020}}")
    page = render_page(citations.bibliography(NO_FILES, known))
    item = re.search(r"<li[^>]*>(.*?)</li>", page, re.S).group(1)
    assert "Why x < y matters" in html_module.unescape(re.sub(r"<[^>]+>", "", item)), item


# -- the glossary page ----------------------------------------------------------------------------------------

def _glossary_page(entries) -> str:
    return render_page(glossary.glossary(entries=tuple(entries)))


@pytest.mark.parametrize("term", [": colon", "    code"])
def test_a_term_that_reads_as_another_block_is_shown_as_written(term):
    """Round 14b escaped a term's list marker; a term that starts with ``: `` is read as a definition of
    nothing (the whole entry becomes a paragraph, "{ #term-colon }" shown), one that starts with four
    blanks as an indented code block (the definition is left without its term)."""
    page = _glossary_page([glossary.Term(term=term, definition="A definition.", forms=(term.strip(),))])
    dt = re.search(r"<dt[^>]*>(.*?)</dt>", page, re.S)
    assert dt is not None and html_module.unescape(dt.group(1)).strip() == term.strip(), page


@pytest.mark.parametrize("definition", ["??? note", "/// caption", '=== "Tab"'])
def test_a_definition_that_reads_as_a_block_is_shown_as_written(definition):
    """A definition shows as written (``_as_written``); one that starts like a pymdownx block, ``??? note``
    (details), ``/// caption`` (blocks.caption) or ``=== "Tab"`` (tabbed), becomes an empty block of
    that kind in the ``<dd>``, its text gone."""
    page = _glossary_page([glossary.Term(term="attention", definition=definition, forms=("attention",))])
    dd = re.search(r"<dd>(.*?)</dd>", page, re.S)
    assert dd is not None and html_module.unescape(re.sub(r"<[^>]+>", "", dd.group(1))).strip() == definition, page


# -- glossary tooltips ---------------------------------------------------------------------------------------

TOKENIZER = (glossary.Term(term="tokenizer", definition="Splits text into tokens.", forms=("tokenizer",)),)


@pytest.mark.parametrize("hidden", ["<noscript>A tokenizer here.</noscript>",
                                    "<template><p>A tokenizer here.</p></template>",
                                    '<video src="v.mp4"><p>A tokenizer here.</p></video>'])
def test_the_tooltip_goes_on_the_first_use_the_reader_sees(hidden):
    """The first use of a term gets the tooltip, later ones stay plain. ``<noscript>`` (raw text when
    scripts run, as the theme needs), ``<template>`` and a ``<video>``'s fallback are never shown: the
    tooltip goes there, and the first use the reader sees has none."""
    content, _ = glossary.mark_first_uses(f"{hidden}<p>The tokenizer.</p>", TOKENIZER)
    assert content.endswith('<p>The <abbr class="glossary" title="Splits text into tokens.">tokenizer</abbr>.</p>'), content


@pytest.mark.parametrize("opened", ["<code>x", '<a href="x.html">link'])
def test_an_element_a_browser_reopens_in_the_next_paragraph_gets_no_tooltip(opened):
    """``_OpenElements`` takes ``</p>`` to end a ``<code>`` or ``<a>`` left open in it; a browser closes
    it there but reopens it in the next paragraph (HTML's active formatting elements): the term there
    is code or a link's text, and gets a tooltip inside it. (Markdown writes this for raw HTML such
    as ``Text <code>x`` followed by a new paragraph.)"""
    content, marked = glossary.mark_first_uses(f"<p>Text {opened}</p>\n<p>The tokenizer.</p>", TOKENIZER)
    assert marked == 0, content


@pytest.mark.parametrize("svg", ["<svg><title>A curve</svg>", "<svg><style>.a{}</svg>"])
def test_an_svg_s_title_or_style_is_not_raw_text(svg):
    """``<title>`` and ``<style>`` are raw text in HTML, but inside ``<svg>`` (foreign content) they are
    ordinary elements that ``</svg>`` closes. Left unclosed there, the glossary reads the rest of the
    page as their text, and no later term gets its tooltip."""
    content, marked = glossary.mark_first_uses(f"<p>{svg} The tokenizer.</p>", TOKENIZER)
    assert marked == 1, content


def test_plaintext_gets_no_tooltip():
    """``<plaintext>`` makes the rest of the page text (no tag ends it): a tooltip there shows as its
    markup, ``<abbr class="glossary" …>``, as round 14b found for ``<xmp>``."""
    content, marked = glossary.mark_first_uses("<p>Text</p><plaintext>The tokenizer.", TOKENIZER)
    assert marked == 0 and "<abbr" not in content, content


# -- mkdocs build --dirty: the record on disk ------------------------------------------------------------------

def test_a_deeply_nested_dirty_record_is_no_record(tmp_path, monkeypatch):
    """A record that is missing or unreadable is no record: every page is rendered. A damaged one that
    nests JSON arrays deep (``[`` repeated) raises ``RecursionError`` from ``json.loads``, which the
    loader does not catch: the dirty build stops with a traceback naming no page."""
    from site_build.dirty_pages import DirtyPages

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    site = tmp_path / "site"
    site.mkdir()
    record = DirtyPages.record_path(site)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("[" * 200_000, encoding="utf-8")
    pages = DirtyPages(dirty=True)
    pages.invalidate(NO_FILES, site)
    assert pages.digests == {}


# -- the drill notebook's wheel address ------------------------------------------------------------------------

def test_the_drill_notebook_reads_the_site_url_mkdocs_reads(tmp_path, monkeypatch):
    """``site_address`` reads the first ``site_url:`` line; MkDocs reads mkdocs.yml as YAML, where a key
    given twice takes its last value: the site is served from one address and the notebook installs
    the wheel from another. It should use MkDocs' value, or fail naming mkdocs.yml."""
    from mkdocs.config import load_config

    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text("site_name: x\nsite_url: https://old.example/\n"
                                         "site_url: https://example.org/book/\n", encoding="utf-8")
    monkeypatch.setattr(generated, "ROOT", tmp_path)
    served = load_config(str(tmp_path / "mkdocs.yml")).site_url
    try:
        address = generated.site_address()
    except ValueError as err:
        assert "mkdocs.yml" in str(err), err
        return
    assert address == served, (address, served)


def test_a_dirty_build_with_a_page_that_cannot_be_read_leaves_the_error_to_mkdocs(tmp_path, monkeypatch):
    """MkDocs lists a ``docs/x.md`` that is a symbolic link to nothing among the pages, and reports it
    when it reads the page ("Error reading page 'x.md'"). Under ``--dirty`` the plugin's ``on_files``
    reads every page first for its digest (``Path.read_bytes``) and stops the build with a
    FileNotFoundError traceback. It should leave the page to MkDocs, or fail naming it."""
    from site_build.dirty_pages import DirtyPages

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "x.md").symlink_to(tmp_path / "nowhere.md")
    page = SimpleNamespace(src_uri="x.md", abs_src_path=str(tmp_path / "docs" / "x.md"),
                           abs_dest_path=str(tmp_path / "site" / "x" / "index.html"))
    try:
        DirtyPages(dirty=True).invalidate(SimpleNamespace(documentation_pages=lambda: [page]), tmp_path / "site")
    except ValueError as err:
        assert "x.md" in str(err), err


# -- the apparatus markers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("page, marker", [("glossary.md", "<!-- glossary -->"),
                                          ("bibliography.md", "<!-- bibliography -->")])
def test_an_apparatus_marker_given_twice_fails_naming_the_line(page, marker, monkeypatch):
    """``<!-- glossary -->`` and ``<!-- bibliography -->`` are each replaced by every entry
    (``str.replace``): given twice on their page, each term and work is listed twice, with the same
    ``id`` twice (``#term-bpe``, ``#vaswani2017attention``: every link goes to the first). The second
    should fail naming the page and its line, as a needs-extra note given twice does."""
    whole = citations.bibliography
    monkeypatch.setattr(citations, "bibliography", lambda files, known=None: whole(NO_FILES, known))
    with pytest.raises(ValueError, match=rf"^docs/{re.escape(page)}:5:"):
        render_page(f"# Title\n\n{marker}\n\n{marker}\n", page=page)


# -- figures: the caption ------------------------------------------------------------------------------------

@pytest.mark.parametrize("caption", ["/// caption\n///\n", "/// caption\n   \n///\n"])
def test_a_figure_with_an_empty_caption_fails_naming_the_line(tmp_path, monkeypatch, caption):
    """A figure needs a caption under it, "what to see in it" (``CAPTION_RULE``); a ``/// caption`` block
    with nothing in it passes, and the page shows the figure over an empty ``<figcaption>``."""
    from site_render import figure_root

    figure_root(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:[345]:"):
        render_page(f"# T\n\n![A curve](figures/hostile/f.svg)\n{caption}\nText.\n")


def test_a_caption_never_closed_fails_naming_the_line(tmp_path, monkeypatch):
    """A ``/// caption`` block ends at its ``///``; left open, pymdownx.blocks runs it to the page's end:
    every later heading, paragraph and figure of the page is inside the ``<figcaption>`` (the table of
    contents links into a caption). It should fail naming the page and the caption's line."""
    from site_render import figure_root

    figure_root(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    try:
        page = render_page("# T\n\n![A curve](figures/hostile/f.svg)\n/// caption\nThe curve.\n\n"
                           "## Next\n\nMore text.\n")
    except ValueError as err:
        assert str(err).startswith("docs/hostile.md:"), err
        return
    caption = re.search(r"<figcaption>(.*?)</figcaption>", page, re.S).group(1)
    assert "<h2" not in caption and "More text" not in caption, caption


# -- the glossary's "see" -----------------------------------------------------------------------------------

@pytest.mark.parametrize("see", ["chapter-7.md) [x](https://evil.example/", "https://evil.example/x"])
def test_a_see_that_is_not_a_page_is_refused_naming_the_file(see):
    """``see`` is "the page that explains it" (docs/glossary.yml); the Glossary page links it as
    ``[Chapter 7](<relpath of see>)``, the value unchecked and unescaped: a ``)`` ends the link early
    and what follows is the page's Markdown (an empty link, then a link to another host), and an
    address of another host becomes the broken relative link ``https:/evil.example/x`` (MkDocs only
    reports such a link at INFO, so ``--strict`` passes). A value that is not a page should be refused
    naming glossary.yml."""
    try:
        term = glossary._term({"term": "attention", "definition": "A definition.", "see": see}, 0)
        page = render_page(glossary.glossary(entries=(term,)), page="glossary.md")
    except ValueError as err:
        assert "glossary" in str(err), err
        return
    dd = re.search(r"<dd>(.*?)</dd>", page, re.S).group(1)
    assert "evil.example" not in dd, dd


# -- citations: a code span that starts inside what the scan took for math ------------------------------------

@pytest.mark.parametrize("text", [f"Text $a`b$ then @{KEY} and `c` end.\n",
                                  f"Text \\(a`b\\) then @{KEY} and `c` end.\n",
                                  f'Text <span title="a`b">x</span> then @{KEY} and `c` end.\n',
                                  f"Text <!-- a`b --> then @{KEY} and `c` end.\n",
                                  f"Text <kbd>a`b</kbd> then @{KEY} and `c` end.\n"])
def test_a_citation_inside_a_code_span_that_starts_in_a_skipped_span_shows_no_link_markdown(text):
    """The scan reads ``$a`b$`` (or ``\\(a`b\\)``) as math, a tag, a comment or a ``<kbd>`` as not prose,
    and the citation after it as prose; Markdown reads inline code first (before math and raw HTML),
    from the backtick inside that span to the next one, so the citation
    stands in code: its link's Markdown shows there, "[Vaswani et al. (2017)](bibliography.md#…)",
    and the check on the rendered page skips code, so no error names it. The citation should stay
    as typed in the code, or the build fail naming the page and the line."""
    try:
        page = render_page(text)
    except ValueError as err:
        assert str(err).startswith("docs/hostile.md:1:"), err
        return
    assert "](bibliography.md" not in page, page


# -- mathml: the line an error names -------------------------------------------------------------------------

@pytest.mark.parametrize("above", ["The code `\\frac{` here.", "<!-- \\frac{ -->"])
def test_a_formula_s_error_names_the_formula_s_line(tmp_path, monkeypatch, above):
    """The MathML stage names the line of a formula it cannot convert by finding the formula's text in
    the page's file (``_line_of``): the first place it appears, inline code or an HTML comment above
    the formula included. The error points the author at line 3, where nothing is wrong; the formula
    stands on line 5."""
    from site_build import mathml

    text = f"# T\n\n{above}\n\nBad \\(\\frac{{\\) formula.\n"
    (tmp_path / "hostile.md").write_text(text, encoding="utf-8")
    monkeypatch.setattr(mathml, "DOCS", tmp_path)
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:5:"):
        render_page(text)


@pytest.mark.parametrize("source, line", [
    (f"The key `@{KEY}` in code.\n\nText\n<span title=\"@{KEY}\">x</span> and more.\n", 4),
    (f"<!-- @{KEY} -->\n\nText <span title=\"@{KEY}\">x</span> more.\n", 3),
])
def test_a_citation_the_rendered_page_shows_as_typed_fails_naming_its_own_line(source, line):
    """``check_rendered`` named the line of the first ``@key`` in the page's Markdown, inline code and HTML
    comments included, where the citation cannot be the culprit; the one that shows as typed (here in a
    raw tag's attribute, a tooltip) stands below. (Found with ``\\begin{Bmatrix}``, which the citation
    scan then read as math and arithmatex did not: the scan now reads math as arithmatex does.)"""
    html = f"<p>The key <code>@{KEY}</code> in code.</p><p>Text <span title=\"@{KEY}\">x</span> more.</p>"
    with pytest.raises(ValueError, match=rf"^docs/hostile\.md:{line}:"):
        citations.check_rendered(html, "hostile.md", source)


@pytest.mark.parametrize("text", [f"\\begin{{Bmatrix}}\n@{KEY}\n\\end{{Bmatrix}}\n", f"Text \\begin{{x}} @{KEY} \\end{{x}} more.\n"])
def test_an_environment_arithmatex_does_not_read_as_math_is_prose_to_the_citations(text):
    """Arithmatex reads ``\\begin{env}`` as math only for a lower-case environment that starts a block: an
    upper-case one, or one inside a line, is text, and a citation in it a citation."""
    page = render_page(text)
    assert "bibliography.md#" in page and "<math" not in page, page


# -- the execution cache ------------------------------------------------------------------------------------

@pytest.mark.parametrize("change", ["trailing newline", "CRLF"])
def test_a_build_output_that_reads_its_own_file_runs_again_when_the_file_changes(tmp_path, monkeypatch, change):
    """A build output runs the snippet's bytes as they are (a copy, ``read_bytes``), but its key is the
    text read with universal newlines and its trailing blank lines stripped. A snippet that reads its
    own file (``__file__``: a compression example measuring its own source, say) prints another size
    once a blank line is added at its end or its line endings become CRLF, and the store still serves
    the old one."""
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "store"))
    monkeypatch.delenv("NETCL_LITE_RERUN", raising=False)
    snippet = tmp_path / "own_size.py"
    code = "data = open(__file__, 'rb').read()\nprint(len(data), 'bytes')\n"
    snippet.write_bytes(code.encode())
    first = build_output.BuildOutputs(lambda: "shared").cached_output(str(snippet))
    assert first.strip() == f"{len(code)} bytes", first
    changed = code + "\n" if change == "trailing newline" else code.replace("\n", "\r\n")
    snippet.write_bytes(changed.encode())
    shown = build_output.BuildOutputs(lambda: "shared").cached_output(str(snippet))
    assert shown.strip() == f"{len(changed)} bytes", shown


def test_a_figure_s_key_covers_the_benchmarks_its_helper_reads(tmp_path, monkeypatch):
    """A figure's key covers the benchmark reports and results "for the scripts that name them": it
    looks for the word ``benchmarks`` in the script's own text. A script that draws from a helper
    module beside it (covered), the helper reading ``benchmarks/results/``, is keyed without the
    results: after a new benchmark run the store serves the old figure."""
    root = tmp_path
    (root / "benchmarks" / "results").mkdir(parents=True)
    results = root / "benchmarks" / "results" / "kernels.json"
    results.write_text('{"gflops": 1}\n', encoding="utf-8")
    folder = root / "snippets" / "chapter99"
    folder.mkdir(parents=True)
    (folder / "helper.py").write_text(
        "import json, pathlib\n"
        "ROOT = pathlib.Path(__file__).resolve().parents[2]\n"
        "def measured():\n    return json.loads((ROOT / 'benchmarks' / 'results' / 'kernels.json').read_text())\n",
        encoding="utf-8")
    script = folder / "figure_speed.py"
    script.write_text("import sys\nfrom helper import measured\n"
                      "open(sys.argv[1], 'w').write(f'<svg><desc>{measured()}</desc></svg>')\n", encoding="utf-8")
    monkeypatch.setattr(generated, "ROOT", root)
    before = generated.figure_key(script, "shared")
    results.write_text('{"gflops": 2}\n', encoding="utf-8")
    assert generated.figure_key(script, "shared") != before
