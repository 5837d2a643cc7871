"""Hostile round 34e: math signs paired across raw HTML (a ``$`` in an attribute, a comment or CDATA with
one after it, a formula that ends inside raw code, math inside raw ``<svg>``/``<math>``), which turned tags
and comments into text; citations as an image's alt text; the BibTeX works cached by modification time and
size; ``attributionsrc`` unreported by the offline check; a dirty build keeping the Glossary's link to a
deleted page; the snippet wrapper's globals (``__builtins__``, ``__loader__``) and a ``BaseException``'s
traceback; the indented-code scanner kept across an edit of mkdocs.yml's extensions. Each test asserts the
correct behaviour and fails on the code of this round."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from site_render import render_page


class _Spans(HTMLParser):
    def __init__(self):
        super().__init__()
        self.spans: list[dict] = []

    def handle_starttag(self, tag, attrs):
        if tag == "span":
            self.spans.append(dict(attrs))


@pytest.mark.parametrize("page, title", [
    ('# T\n\nA <span title="a $b">c$ d</span> e.\n', "a $b"),
    ("# T\n\nA <span title='price $x'>y$</span>.\n", "price $x"),
    ('# T\n\nA $x <span title="y$">z</span>.\n', "y$"),
    ('# T\n\nA <span title="\\(a">b\\)</span>.\n', "\\(a"),
])
def test_a_dollar_in_an_attribute_and_one_in_the_element_s_text_leave_the_tag_a_tag(page, title):
    """A browser reads ``<span title="a $b">`` as a tag whose title is ``a $b``; arithmatex read
    ``$b">c$`` as a formula, the tag's start became the text ``&lt;span title="a`` on the page and the
    MathML swallowed the attribute's quote and the tag's ``>`` (the raw-HTML rule blanks formulas before
    it looks for tags, so it never saw this one's). The tag must stay a tag (its title as written), or the
    build fail naming the page."""
    try:
        html = render_page(page)
    except (ValueError, RuntimeError) as err:       # a refusal naming the page is fine too
        assert "hostile.md" in str(err)
        return
    body = html[html.find("</h1>"):]
    assert "&lt;span" not in body, body
    parser = _Spans()
    parser.feed(body)
    assert [s.get("title") for s in parser.spans] == [title], body



def test_a_formula_that_starts_in_prose_and_ends_inside_raw_code_leaves_the_tags_alone():
    """``<span>$a</span> <code>b$</code>``: arithmatex read ``$a</span> <code>b$`` as one formula, so the
    page's ``</span>`` and ``<code>`` became MathML operators (``<mo>&lt;</mo><mo>/</mo><mi>s</mi>…``) and a
    stray ``</code>`` was left, the span never closed. The closing ``$`` stands in raw code, which the rule
    leaves as written: no formula may end there (or the build must fail naming the page)."""
    page = "# T\n\nA <span>$a</span> <code>b$</code>.\n"
    try:
        html = render_page(page)
    except (ValueError, RuntimeError) as err:
        assert "hostile.md" in str(err)
        return
    body = html[html.find("</h1>"):]
    assert "<math" not in body, body
    assert body.count("<code>") == body.count("</code>") == 1 and "</span>" in body, body



@pytest.mark.parametrize("page, hidden", [
    ("# T\n\nA <!-- note: costs $5 --> and b$ here.\n", "note: costs"),
    ("# T\n\nA <![CDATA[ $a ]]> b$.\n", "CDATA"),
])
def test_a_dollar_in_a_comment_paired_with_one_after_it_leaves_the_comment_hidden(page, hidden):
    """``<!-- note: costs $5 --> and b$``: arithmatex read ``$5 --> and b$`` as a formula, the comment's
    ``-->`` became MathML operators and its ``<!--`` was escaped, so the author's hidden note showed on the
    page as text (``<!-- note: costs`` and a formula). What a comment holds stays hidden."""
    try:
        html = render_page(page)
    except (ValueError, RuntimeError) as err:
        assert "hostile.md" in str(err)
        return
    body = html[html.find("</h1>"):]
    assert "&lt;!" not in body and "<math" not in body, body


@pytest.mark.parametrize("page, kept", [
    ("# T\n\nA <svg><title>$a$</title></svg> here.\n", "<title>$a$</title>"),
    ("# T\n\nA <math><mi>$a$</mi></math> here.\n", "<mi>$a$</mi>"),
])
def test_math_signs_inside_raw_svg_or_mathml_stay_as_written(page, kept):
    """Inside raw ``<svg>`` (a title, a tooltip's text) or raw ``<math>`` the text is not prose: the build
    put MathML there (a ``<math>`` inside an SVG title, or inside another ``<math>``), which a browser
    shows as nothing or as broken math."""
    try:
        html = render_page(page)
    except (ValueError, RuntimeError) as err:
        assert "hostile.md" in str(err)
        return
    assert kept in html, html[html.find("</h1>"):]


# -- 2. the bibliography read again after an edit ----------------------------------------------------


def _bib(path, title: str) -> None:
    path.write_text("@article{smith2020word,\n  author = {Smith, Ann},\n  year = {2020},\n"
                    f"  title = {{{title}}},\n  journal = {{J}}\n}}\n", encoding="utf-8")


def test_an_edit_of_the_bibtex_file_that_keeps_its_size_and_time_is_read(tmp_path):
    """``citations.works`` kept each file's works by its modification time and size: an edit that keeps
    both (a title's letter changed and the time set back, as ``cp -p``, ``rsync -t`` or an archive's
    extraction leave a file) was served the old works for the rest of a ``mkdocs serve`` session, while
    the dirty record (which reads the status-change time and the inode too) rendered the citing pages
    again, with the old titles. The glossary keys its terms by the file's text for this reason."""
    import os

    from site_build import citations

    bib = tmp_path / "references.bib"
    _bib(bib, "Attention")
    st = bib.stat()
    assert citations.works(bib)["smith2020word"].title == "Attention"
    _bib(bib, "Retention")
    os.utime(bib, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert bib.stat().st_size == st.st_size
    assert citations.works(bib)["smith2020word"].title == "Retention", "the works of the file before the edit"


# -- 3. citations in an image's alt text ------------------------------------------------------------


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images: list[dict] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))


@pytest.mark.parametrize("page", [
    "# T\n\n![@bahdanau2015neural](a.png)\n",
    "# T\n\nsee ![@bahdanau2015neural, p. 3](a.png) here\n",
])
def test_a_bracketed_citation_as_an_image_s_alt_text_keeps_the_image_or_fails(page):
    """``![@key](a.png)``: the citation stage read ``[@key]`` as a citation and wrote a link in its place, so
    the image became the text ``!(Bahdanau et al., 2015)(a.png)`` on the page, with no image and no error
    (the check of the rendered page found the citation a link). An alt text is an attribute: the build must
    fail naming the page (as for a citation in a link's text or an image's title) or keep the image."""
    try:
        html = render_page(page)
    except (ValueError, RuntimeError) as err:
        assert "hostile.md" in str(err)
        return
    body = html[html.find("</h1>"):]
    parser = _Images()
    parser.feed(body)
    assert [i.get("src") for i in parser.images] == ["a.png"], body
    assert "(a.png)" not in body, body


def test_a_citation_in_an_attribute_list_s_alt_after_an_image_fails_naming_the_page():
    """``![x](a.png){: alt='@key' }`` sets the image's alt to ``@key``; the citation stage put a link in the
    braces, whose quotes broke the attribute list, so the page shows ``{: alt='<a …>' }`` as text after the
    image. The same with ``title=`` fails naming the page; ``alt=`` must too (or be left as written)."""
    page = "# T\n\n![x](a.png){: alt='@bahdanau2015neural' }\n"
    try:
        html = render_page(page)
    except (ValueError, RuntimeError) as err:
        assert "hostile.md" in str(err)
        return
    body = html[html.find("</h1>"):]
    assert "{:" not in body, body


# -- 4. the offline check ----------------------------------------------------------------------------


@pytest.mark.parametrize("tag", [
    '<img src="a.png" attributionsrc="//evil.example/x">',
    '<a href="#k" attributionsrc="https://evil.example/r">k</a>',
])
def test_an_attributionsrc_of_another_host_is_reported(tag):
    """Chromium's attribution reporting sends a background request to the URL an ``attributionsrc``
    attribute names (on ``<img>`` and ``<script>`` as the element loads, on ``<a>`` as it is followed); the
    check read ``src``, ``href``, ``ping``… but not this one, so the request went unreported."""
    from site_build.offline import remote_references

    assert remote_references(tag) != [], "a request to another host went unreported"


# -- 5. a dirty build after the page a glossary entry's "see" names is deleted ---------------------------


def test_under_dirty_the_glossary_is_rendered_again_when_the_page_an_entry_sees_is_deleted(tmp_path, monkeypatch):
    """The Glossary page links each entry's ``see`` page, after checking that the page exists (a full build
    fails once it is gone: "no page of the site now"). The check looks at the file (``is_file``) without
    opening it, so the dirty record of the Glossary page neither names nor reads it: after the page is
    deleted, ``mkdocs serve --dirty`` keeps the Glossary's HTML, whose link now leads nowhere, and the
    build passes."""
    import types

    from site_build import dirty_pages, glossary

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "glossary.md").write_text("# Glossary\n\n<!-- glossary -->\n", encoding="utf-8")
    (docs / "chapter-7.md").write_text("# Chapter 7\n", encoding="utf-8")
    source = docs / "glossary.yml"
    source.write_text("- term: token\n  definition: a piece of text\n  see: chapter-7.md\n", encoding="utf-8")
    monkeypatch.setattr(glossary, "DOCS", docs)
    monkeypatch.setattr(glossary, "SOURCE", source)
    monkeypatch.setattr(dirty_pages, "ROOT", tmp_path)
    html = tmp_path / "site" / "glossary" / "index.html"
    html.parent.mkdir(parents=True)
    file = types.SimpleNamespace(src_uri="glossary.md", abs_src_path=str(docs / "glossary.md"),
                                 abs_dest_path=str(html))
    files = types.SimpleNamespace(documentation_pages=lambda: [file])

    pages = dirty_pages.DirtyPages(dirty=True)

    def build() -> None:
        pages.invalidate(files)
        if not html.exists():
            pages.rendering("glossary.md")
            html.write_text(glossary.glossary("glossary.md", glossary.terms(source)), encoding="utf-8")
            pages.rendered()

    build()
    assert "chapter-7.md" in html.read_text(encoding="utf-8")
    build()
    assert html.exists()                                # nothing changed: kept
    (docs / "chapter-7.md").unlink()
    pages.invalidate(files)
    assert not html.exists(), "the Glossary kept its link to a page that is gone; a full build fails there"


# -- 6. the snippet wrapper runs a script as python <script> runs it -----------------------------------


@pytest.mark.parametrize("code", [
    "print(__builtins__.len([1, 2]))\n",                  # python <script>: the builtins module; the wrapper: a dict
    "print(type(__loader__).__name__)\n",                 # python <script>: SourceFileLoader; the wrapper: None
])
def test_a_snippet_sees_the_globals_python_gives_a_script(tmp_path, code):
    """The wrapper (``runner._MAIN``) runs a snippet with ``runpy.run_path``, whose globals differ from a
    script's: ``__builtins__`` is the builtins dict, not the module (``__builtins__.len`` fails with
    AttributeError at build time, though the block runs for a reader who pastes it into a file), and
    ``__loader__`` is None. What the snippet prints must be what ``python <script>`` prints."""
    import subprocess
    import sys

    from site_build import runner

    script = tmp_path / "s.py"
    script.write_text(code, encoding="utf-8")
    expected = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    assert runner.run_snippet(script, timeout=60) == expected


def test_the_traceback_of_an_uncaught_base_exception_starts_at_the_snippet(tmp_path):
    """``raise KeyboardInterrupt`` or a ``BaseException`` subclass: the wrapper trims only ``Exception``'s
    traceback, so the build's error showed its own frames (``File "<string>", line 6``, three of
    ``<frozen runpy>``) before the snippet's, where ``python <script>`` shows the script's alone."""
    from site_build import runner

    script = tmp_path / "s.py"
    script.write_text('class Stop(BaseException):\n    pass\n\n\nraise Stop("x")\n', encoding="utf-8")
    with pytest.raises(runner.SnippetError) as err:
        runner.run_snippet(script, timeout=60)
    assert "Stop: x" in str(err.value)
    assert "runpy" not in str(err.value) and '"<string>"' not in str(err.value), str(err.value)


# -- 7. the code-block scanners after mkdocs.yml's extensions change ------------------------------------


def test_the_indented_code_scanner_follows_an_edit_of_mkdocs_yml_s_extensions(tmp_path, monkeypatch):
    """``markers._indented_code_scanner`` (and ``_rendered_places``, by the page's text alone) was made once
    per process from mkdocs.yml's extensions: after ``admonition`` is added under ``mkdocs serve`` (which
    reloads mkdocs.yml and builds again in the same process), a marker inside ``!!! note`` still read as an
    indented code block, so the build showed it as text and ran nothing, where a fresh build runs it. The
    citations' reader is keyed by mkdocs.yml for this reason; the scanners must be too."""
    from site_build import markers, paths

    def config(extensions: str) -> None:
        (tmp_path / "mkdocs.yml").write_text(f"site_name: t\nmarkdown_extensions:\n{extensions}", encoding="utf-8")

    def clear() -> None:
        markers._indented_code_scanner.cache_clear()
        markers._rendered_places.cache_clear()

    lines = ["# T", "", "!!! note", "", "    <!-- build-output: snippets/t/x.py -->", ""]
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    clear()
    try:
        config("  - attr_list\n")
        assert markers.indented_code(lines, {4: 4}) == {4}            # no admonition: an indented code block
        config("  - attr_list\n  - admonition\n")
        seen = markers.indented_code(lines, {4: 4})
        clear()
        assert markers.indented_code(lines, {4: 4}) == set()          # what a fresh build reads
        assert seen == set(), "the scanner read the page with the extensions mkdocs.yml had before"
    finally:
        clear()
