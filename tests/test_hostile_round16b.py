"""Round 16b of the hostile check of the build plugin (``site_build``), citations aside: what a hostile
author or glossary still gets past it after round 15b. Each test asserts the behaviour the README and
issue 58 promise, and failed on the code before its fix.
"""

from __future__ import annotations

import pytest

from site_build import citations, glossary, measured
from site_render import render_page

ROTARY = glossary.Term(term="RoPE", definition="Rotates query and key pairs.",
                       forms=("RoPE", "rotary position embedding"))
EMBEDDING = glossary.Term(term="embedding", definition="A learned vector per token id.", forms=("embedding",))


# -- the glossary's tooltips -----------------------------------------------------------------------------------

@pytest.mark.parametrize("gap", ["\n", "  ", "\n  "])
def test_a_form_of_several_words_is_found_across_a_line_break(gap):
    """A form of several words (``rotary position embedding``, ``merge rule``) is matched in the page's
    HTML as written, one space between its words; a paragraph that breaks its line between them keeps
    that newline in the HTML, where a reader sees a space. The first use then got no tooltip, the next
    one did, and the last word alone, itself a term, got that term's definition instead."""
    content, marked = glossary.mark_first_uses(
        f"<p>We use rotary position{gap}embedding here; rotary position embedding again.</p>", (ROTARY, EMBEDDING))
    assert content == (f'<p>We use <abbr class="glossary" title="Rotates query and key pairs.">rotary position{gap}'
                       f'embedding</abbr> here; rotary position embedding again.</p>'), content
    assert marked == 1


def test_an_empty_glossary_marks_nothing():
    """docs/glossary.yml may hold no term (it is read as an empty list, and the Glossary page lists
    none); the pattern of no form matched the empty string, and every page that gets tooltips failed
    with ``KeyError: ''``, naming no page."""
    assert glossary.mark_first_uses("<p>Hi, you!</p>", ()) == ("<p>Hi, you!</p>", 0)


# -- the apparatus markers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("page, marker", [("glossary.md", "<!-- glossary -->"),
                                          ("bibliography.md", "<!-- bibliography -->")])
@pytest.mark.parametrize("shown", ["The page holds `{marker}` once.\n", "```text\n{marker}\n```\n"])
def test_an_apparatus_marker_in_code_is_shown_as_written(page, marker, shown, monkeypatch):
    """The README: inside code (a fenced block, inline code) a marker is text, shown as written. The
    Glossary's and the Bibliography's marker was replaced by every entry wherever its text stood
    (``str.replace``), in code too: the code span or block was cut open by the list of entries."""
    whole = citations.bibliography
    monkeypatch.setattr(citations, "bibliography", lambda files, known=None: whole(
        type("NoFiles", (), {"documentation_pages": lambda self: []})(), known))
    page_html = render_page(f"# Title\n\n{shown.format(marker=marker)}\n{marker}\n", page=page)
    escaped = marker.replace("<", "&lt;").replace(">", "&gt;")
    assert escaped in page_html, page_html
    assert page_html.count("<dl>" if page == "glossary.md" else 'id="vaswani2017attention"') == 1, page_html


# -- Chapter 8's measured sections ----------------------------------------------------------------------------

@pytest.mark.parametrize("section", ["setup", "gemm", "findings"])
def test_results_a_section_cannot_render_fail_naming_the_page_and_the_line(section):
    """Every build error names the page (issue 58). A measured section is rendered from
    benchmarks/results/kernels.json by the report's own functions, which read its fields as they go: a
    field missing from the results ended the build with a bare ``KeyError: 'rows'``, naming no page."""
    sections = measured.MeasuredSections()
    sections.report = {"device": "cpu"}
    with pytest.raises(ValueError, match=rf"^docs/chapter-8\.md:3: <!-- kernels\.json: {section} -->: .*kernels\.json"):
        sections.render(f"Text\n\n<!-- kernels.json: {section} -->\n", "docs/chapter-8.md")
