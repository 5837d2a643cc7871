"""The glossary (one source for the page and the tooltips) and the source pages, without building the site."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import doc_blocks
from site_build import glossary, source_pages
from site_build.paths import ROOT


def test_the_glossary_has_forty_terms_each_defined_and_each_form_belonging_to_one():
    terms = glossary.terms()
    assert len(terms) >= 40, f"{len(terms)} terms"
    assert len({t.term.lower() for t in terms}) == len(terms), "a term is listed twice"
    for t in terms:
        assert len(t.definition) > 30 and t.definition[-1] in ".)", f"{t.term}: {t.definition!r}"
        assert not re.search(r"[*`\[\]<>]", t.definition), f"{t.term}: a tooltip is plain text, no Markdown"
        if t.see:
            assert (doc_blocks.DOCS / t.see).is_file(), f"{t.term}: see {t.see}, no such page"


def test_each_term_is_marked_once_at_its_first_use_in_running_text():
    terms = (glossary.Term("softmax", "Normalized exponentials.", ("softmax",)),
             glossary.Term("KV cache", "Keys and values kept.", ("KV cache",)))
    html = ('<h2 id="s">The softmax</h2><p>Code <code>softmax(x)</code>, a <a href="#">softmax link</a>, '
            '<math><mi>softmax</mi></math>, <figure><img alt="softmax"><figcaption>softmax</figcaption></figure>'
            '</p><p>Softmax first, then softmax again; the KV cache, a KV-cache-like word.</p>')
    out, marked = glossary.mark_first_uses(html, terms)
    assert marked == 2
    assert out.count("<abbr") == 2
    assert '<abbr class="glossary" title="Normalized exponentials.">Softmax</abbr> first, then softmax again' in out
    assert '<abbr class="glossary" title="Keys and values kept.">KV cache</abbr>, a KV-cache-like' in out
    head = html.index("</figure></p>")
    assert out[:head] == html[:head], "a tooltip went into a heading, code, a link, math or a figure"


def test_a_term_with_an_ampersand_or_angle_brackets_is_marked_as_the_page_spells_it():
    """The page's HTML spells ``&``, ``<`` and ``>`` as character references (Markdown writes
    ``Q&A`` as ``Q&amp;A``): a form holding them is found there, marked once, its text unchanged."""
    import markdown

    terms = (glossary.Term("Q&A", "Questions and answers.", ("Q&A",)),
             glossary.Term("<unk>", "The unknown token.", ("<unk>",)),
             glossary.Term("a < b", "A comparison.", ("a < b",)),
             glossary.Term("x->y", "An arrow.", ("x->y",)))
    page = markdown.markdown("A Q&A on the &lt;unk&gt; token, where a < b and x->y hold; "
                             "later Q&A, &lt;unk&gt; and a < b again.")
    assert "Q&amp;A" in page and "&lt;unk&gt;" in page and "a &lt; b" in page and "x-&gt;y" in page
    out, marked = glossary.mark_first_uses(page, terms)
    assert marked == 4, out
    for shown, title in (("Q&amp;A", "Questions and answers."), ("&lt;unk&gt;", "The unknown token."),
                         ("a &lt; b", "A comparison."), ("x-&gt;y", "An arrow.")):
        assert out.count(f'<abbr class="glossary" title="{title}">{shown}</abbr>') == 1, (shown, out)
    assert re.sub(r"</?abbr[^>]*>", "", out) == page



@pytest.mark.parametrize("html, skipped", [
    # an option's end tag left out, as HTML allows: the next option, the optgroup or </select> ends it
    ('<select><option>softmax<option>softmax</select><p>softmax here</p>', 2),
    ('<select><optgroup label="g"><option>softmax<optgroup label="h"><option>softmax</select><p>softmax here</p>', 2),
    # a definition list's terms without their end tags
    ('<dl><dt>softmax<dd>a word<dt>softmax</dl><p>softmax here</p>', 2),
    # a <samp> left open in raw HTML ends with the paragraph around it, as a browser ends it (a <code> or
    # <a> is a formatting element, which a browser reopens in the next paragraph: round 15b)
    ('<p>code <samp>softmax(x)</p><p>softmax here</p>', 1),
    ('<div><p><kbd>softmax</div><p>softmax here</p>', 1),
])
def test_an_element_left_unclosed_where_html_allows_it_stops_skipping_where_a_browser_closes_it(html, skipped):
    """Tooltips are not put inside code, options or terms of a definition list, but an element whose
    end tag is left out (HTML's optional end tags, or an author's unclosed <code>) ends where a
    browser ends it: the running text after it still gets its first use marked, once."""
    terms = (glossary.Term("softmax", "Normalized exponentials.", ("softmax",)),)
    out, marked = glossary.mark_first_uses(html, terms)
    assert marked == 1 and out.endswith('<p><abbr class="glossary" title="Normalized exponentials.">softmax</abbr> here</p>'), out
    assert out.count("softmax") == skipped + 1


def test_an_end_tag_with_nothing_open_of_its_name_is_ignored():
    terms = (glossary.Term("softmax", "Normalized exponentials.", ("softmax",)),)
    out, marked = glossary.mark_first_uses("<p></code></a>x</p><pre><code>softmax</code></pre><p>softmax</p>", terms)
    assert marked == 1 and "<code>softmax</code>" in out and out.endswith(
        '<p><abbr class="glossary" title="Normalized exponentials.">softmax</abbr></p>'), out


@pytest.mark.parametrize("reference", ["&times;", "&#215;", "&#xD7;", "&#XD7;", "&times"])
def test_a_term_is_never_marked_inside_a_character_reference_a_tag_or_an_attribute(reference):
    """``times`` in ``3&times;4`` is part of a character reference (named, decimal, hexadecimal, or a
    legacy name without its ``;``), and in a tag's name or attribute it is markup: the first use in
    running text is the one marked, and the page's text is otherwise unchanged."""
    import html as html_lib

    terms = (glossary.Term("times", "How often.", ("times",)), glossary.Term("x", "A name.", ("x", "xD7", "XD7", "215")))
    page = (f'<p>3{reference} 4 <img alt="times" title="times x"> <span class="times" data-x="x">'
            f'many times</span>, x{reference}2.</p>')
    out, marked = glossary.mark_first_uses(page, terms)
    assert out.count('<abbr class="glossary" title="How often.">times</abbr>') == 1, out
    assert 'many <abbr class="glossary" title="How often.">times</abbr></span>' in out, out
    assert '<abbr class="glossary" title="A name.">x</abbr>' + reference + "2" in out, out
    assert marked == 2
    assert re.sub(r"</?abbr[^>]*>", "", out) == page
    shown = re.sub(r"<[^>]+>", "", out)
    assert html_lib.unescape(shown).startswith("3× 4 "), shown


def test_a_form_in_two_terms_is_refused(tmp_path):
    source = tmp_path / "glossary.yml"
    source.write_text("- term: a\n  forms: [x]\n  definition: one thing.\n- term: b\n  forms: [x]\n  definition: another.\n")
    with pytest.raises(ValueError, match="'x' belongs to both 'a' and 'b'"):
        glossary.terms(source)
    source.write_text("- term: a\n  meaning: no definition\n")
    with pytest.raises(ValueError, match="unknown keys"):
        glossary.terms(source)


def test_the_glossary_page_lists_every_term_with_its_anchor():
    text = glossary.glossary()
    for t in glossary.terms():
        assert f"{{ #{t.anchor} }}" in text and t.definition.split()[0] in text


def test_each_glossary_page_gets_a_tooltip_for_most_of_its_terms():
    """On the chapters, at least twenty tooltips in all (the pages' Markdown rendered as the site does it
    is the browser tests' business; here the prose is searched for the forms)."""
    pattern, _ = glossary._pattern(glossary.terms())
    found = {page: {m.group(0) for m in pattern.finditer((doc_blocks.DOCS / page).read_text(encoding="utf-8"))}
             for page in glossary.TOOLTIP_PAGES}
    chapters = sum(len(v) for k, v in found.items() if k.startswith("chapter-"))
    assert chapters >= 20, found


def test_a_source_page_numbers_anchors_and_links_back_to_its_excerpts():
    pages = {"chapter-x.md": '```{.c .excerpt title="kernels/bpe.cl"}\n--8<-- "kernels/bpe.cl:bpe_split"\n```\n'}
    shown = source_pages.excerpts(pages)
    (page, first, last), = shown["kernels/bpe.cl"]
    assert page == "chapter-x.md" and 1 < first < last
    listing = source_pages.listing("kernels/bpe.cl", [(first, last)])
    lines = (ROOT / "kernels/bpe.cl").read_text(encoding="utf-8").splitlines()
    assert listing.count('class="line"') == len(lines)
    assert f'<span class="line" id="L{first}" data-n="{first}"><span class="range-anchor" id="L{first}-L{last}">' in listing
    text = source_pages.markdown("kernels/bpe.cl", shown["kernels/bpe.cl"], "w.whl")
    assert "search:\n  exclude: true" in text and "[Chapter x](../../chapter-x.md)" in text
    assert f"(#L{first}-L{last})" in text and source_pages.PLACEHOLDER in text
    plain = re.sub(r"<[^>]+>", "", listing)
    import html
    assert html.unescape(plain) == "".join(lines), "the listing's text is not the file's"


def test_a_dirty_build_renders_a_source_page_again_only_when_it_changed(tmp_path):
    page = source_pages.SourcePage("source/x.py.md", src_dir=None, dest_dir=str(tmp_path), use_directory_urls=True)
    page.content_string, page.listing = "# x\n", "<pre>1</pre>"
    page.dest_uri = "source/x.py.html"
    assert page.is_modified()                                   # no HTML yet
    dest = Path(page.abs_dest_path)
    dest.parent.mkdir(parents=True)
    dest.write_text("<html>")
    assert page.is_modified()                                   # not rendered in this session
    source_pages.SourcePage.rendered[page.abs_dest_path] = page._made_from()
    assert not page.is_modified()
    page.listing = "<pre>2</pre>"
    assert page.is_modified()


@pytest.mark.parametrize("entry, says", [
    ("  forms: tokenizer\n  definition: Splits text.\n", "forms must be a non-empty list"),
    ("  forms: {tokenizer: 1}\n  definition: Splits text.\n", "forms must be a non-empty list"),
    ("  forms: []\n  definition: Splits text.\n", "forms must be a non-empty list"),
    ("  definition:\n", "definition must be non-empty text, got None"),
    ("  definition: [splits, text]\n", "definition must be non-empty text"),
    ("  definition: Splits text.\n  expansion:\n", "expansion must be text, got None"),
    ("  definition: Splits text.\n  see:\n", "see must be text, got None"),
])
def test_an_entry_whose_field_has_the_wrong_type_is_refused_naming_the_field(tmp_path, entry, says):
    """YAML reads ``forms: x`` as a string (not a list of one form) and an empty value as null: each is
    refused, never split into one-letter forms or shown as the text 'None'."""
    source = tmp_path / "glossary.yml"
    source.write_text("- term: tokenizer\n" + entry)
    with pytest.raises(ValueError, match=re.escape(says)):
        glossary.terms(source)
    source.write_text("- term:\n  definition: Splits text.\n")
    with pytest.raises(ValueError, match="term must be non-empty text, got None"):
        glossary.terms(source)


@pytest.mark.parametrize("first, second", [("token", "token"), ("Token", "token"), ("KV cache", "KV-cache")])
def test_two_terms_with_one_anchor_are_refused(tmp_path, first, second):
    """The same term twice, or two whose anchors agree, would give the Glossary page two elements with
    one id and the tooltips the first definition alone."""
    source = tmp_path / "glossary.yml"
    source.write_text(f"- term: {first}\n  definition: one.\n- term: {second}\n  definition: two.\n")
    with pytest.raises(ValueError, match=f"{first!r} and {second!r} share the anchor #term-"):
        glossary.terms(source)


def test_a_page_that_is_not_utf8_is_left_for_mkdocs_to_name(tmp_path, monkeypatch):
    """The source pages' excerpt scan and the Bibliography's list of citing pages read every page
    (at on_files, and on the Bibliography page's turn): a page that is not UTF-8 stopped the build
    there with a bare UnicodeDecodeError naming no page, before MkDocs read it and said which page."""
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import get_files

    from site_build import citations, generated

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nAs [@vaswani2017attention] showed.\n")
    (docs / "bad.md").write_bytes(b"# Bad \xff page\n")
    config = MkDocsConfig()
    config.load_dict({"site_name": "t", "docs_dir": str(docs), "site_dir": str(tmp_path / "site")})
    config.validate()
    files = get_files(config)
    source_pages.add_pages(files, config, [], "netcl_lite.whl")
    assert "Cited in [Good](good.md)." in citations.bibliography(files)
    monkeypatch.setattr(generated, "DOCS", docs)
    assert generated.pages_showing("[@vaswani2017attention]") == ["docs/good.md"]


def test_an_html_element_inside_svg_ends_the_svg_as_a_browser_reads_it():
    """``<svg>…<p>`` ends the SVG (HTML's breakout start tags end foreign content): the paragraph is
    HTML text, where a term's first use gets its tooltip; inside an integration point
    (``<foreignObject>``) HTML stays inside the SVG."""
    from site_build import glossary

    term = glossary.terms()[0]
    page = f"<svg><text>a</text><p>the {term.forms[0]} here</p>"
    assert glossary.mark_first_uses(page)[1] == 1
    inside = f"<svg><text>the {term.forms[0]}</text></svg>"
    assert glossary.mark_first_uses(inside)[1] == 0


def test_a_see_page_removed_after_the_glossary_was_read_fails_naming_the_term(tmp_path, monkeypatch):
    """The file's terms are read once while it is unchanged (``mkdocs serve``); the page a term's
    ``see`` names is looked for again each time the Glossary page is made, so one deleted since
    fails naming the glossary and the term, not as a broken link naming neither."""
    from site_build import glossary

    (tmp_path / "gone.md").write_text("# Gone\n", encoding="utf-8")
    monkeypatch.setattr(glossary, "DOCS", tmp_path)
    term = glossary._term({"term": "attention", "definition": "A definition.", "see": "gone.md"}, 0)
    assert "gone.md" in glossary.glossary(entries=(term,))
    (tmp_path / "gone.md").unlink()
    with pytest.raises(ValueError, match=r"glossary\.yml: attention: see names 'gone\.md'"):
        glossary.glossary(entries=(term,))
