"""Round 21c of the hostile check of the build plugin's apparatus: the glossary as a hostile author
writes it (its YAML, its forms, its ``see``), the tooltips' reading of a page's HTML, and the glossary's
anchors in the printable book. Each test asserts the behaviour the README and issue 58 promise, and
failed on the code before its fix.
"""

from __future__ import annotations

import pytest

from site_build import apparatus, glossary
from site_render import render_page


# -- the glossary file -----------------------------------------------------------------------------------------

def test_a_form_as_written_wins_over_another_term_s_capitalized_form():
    """A form starting lower case is also matched capitalized, at a sentence's start. When another term
    lists that capitalized spelling as its own form ("mamba" the snake, "Mamba" the model), the earlier
    term's capitalized variant took it: every "Mamba" got the snake's definition, and the model's never
    showed. No error named the clash either."""
    snake = glossary.Term(term="mamba snake", definition="A snake.", forms=("mamba",))
    model = glossary.Term(term="Mamba", definition="A state space model.", forms=("Mamba",))
    content, marked = glossary.mark_first_uses("<p>Mamba is a model; a mamba bites.</p>", (snake, model))
    assert content == ('<p><abbr class="glossary" title="A state space model.">Mamba</abbr> is a model; a '
                       '<abbr class="glossary" title="A snake.">mamba</abbr> bites.</p>'), content
    assert marked == 2


@pytest.mark.parametrize("key", ["1", "null", "yes"])
def test_an_entry_with_a_key_yaml_reads_as_no_text_is_refused_naming_the_file(key):
    """An entry with an unknown key that YAML reads as a number, null or a boolean, beside another unknown
    key, failed with ``TypeError: '<' not supported between instances of 'int' and 'str'`` (sorting the
    unknown keys), naming neither the file nor the entry."""
    text = f"- {{term: tok, definition: A unit., {key}: x, extra: y}}\n"
    with pytest.raises(ValueError, match=r"glossary\.yml.*\(tok\).*unknown keys") as err:
        glossary._load(text)
    assert "extra" in str(err.value)


@pytest.mark.parametrize("text, line", [
    ("- term: token\n  definition: One unit.\n  definition: Two units.\n", 3),
    ("- {term: token, definition: One unit., term: tokens}\n", 1),
    ("- term: token\n  forms: [token]\n  definition: x\n  forms: [tokens]\n", 4),
])
def test_a_key_given_twice_in_an_entry_is_refused_naming_the_line(text, line):
    """YAML keeps the last of a key given twice in one mapping: an entry's second ``definition`` (or
    ``term``, ``forms``) replaced the first with no error, and the page showed the one the author did not
    expect."""
    with pytest.raises(ValueError, match=rf"^glossary\.yml:{line}: the key '\w+' is given twice"):
        glossary._load(text)


def test_a_merge_key_may_still_be_overridden():
    """YAML's merge key brings another entry's keys, which the entry's own may override: that is no key
    given twice."""
    loaded = glossary._load("- &base {term: token, definition: One unit.}\n- <<: *base\n  term: tokens\n")
    assert [t.term for t in loaded] == ["token", "tokens"] and loaded[1].definition == "One unit."


@pytest.mark.parametrize("field", ["definition", "term", "expansion"])
@pytest.mark.parametrize("char", ["\\0", "\\x02", "\\e", "\\x7f", "\\x9b"])
def test_a_control_character_in_an_entry_is_refused_naming_the_term(field, char):
    """YAML's escapes write control characters no page can show: Python-Markdown drops U+0002 and U+0003
    (its placeholders' marks) from the Glossary page, while the tooltip kept them, and U+0000 reached the
    HTML, which a browser reads as an error. The page and the tooltip said different things."""
    entry = {"term": "token", "definition": "One unit.", "expansion": "tk"}
    entry[field] = f"to{char}ken"
    text = "- {" + ", ".join(f'{k}: "{v}"' for k, v in entry.items()) + "}\n"
    with pytest.raises(ValueError, match=rf"glossary\.yml: entry 0 .*{field} holds the control character U\+00"):
        glossary._load(text)


def test_a_see_page_s_name_is_shown_as_written(tmp_path, monkeypatch):
    """The link to a ``see`` page is named from its file's name, which may hold Markdown's characters:
    ``_private_.md`` showed as an emphasized "private", its underscores gone."""
    monkeypatch.setattr(glossary, "DOCS", tmp_path)
    (tmp_path / "_private_.md").write_text("# P\n", encoding="utf-8")
    entry = glossary.Term(term="token", definition="One unit.", forms=("token",), see="_private_.md")
    page = render_page("# Glossary\n\n" + glossary.glossary("glossary.md", (entry,)))
    assert ">_private_</a>" in page and "<em>" not in page, page


# -- the tooltips: HTML as a browser reads it ------------------------------------------------------------------

@pytest.mark.parametrize("empty", ["<!-->", "<!--->"])
def test_an_empty_comment_ends_where_html_ends_it(empty):
    """``<!-->`` and ``<!--->`` are whole (empty) comments in HTML, and Python-Markdown keeps them in the
    page: the glossary read a comment from there to the next ``-->``, and the text between, which the
    reader sees, got no tooltip (the first use the reader sees went without one)."""
    tok = (glossary.Term(term="tokenizer", definition="Splits text.", forms=("tokenizer",)),)
    content, marked = glossary.mark_first_uses(f"<p>{empty}The tokenizer. <!-- note --></p>", tok)
    assert content == (f'<p>{empty}The <abbr class="glossary" title="Splits text.">tokenizer</abbr>. '
                       f'<!-- note --></p>'), content


# -- the printable book ----------------------------------------------------------------------------------------

def test_a_link_to_a_glossary_term_leads_to_it_in_the_printable_book(tmp_path):
    """print-site rewrites a link to ``glossary.md#term-token`` as ``#glossary-term-token`` but prefixes
    only headings', footnotes' and list items' anchors: the Glossary's ``<dt id="term-token">`` kept its
    own, and the book's repair unwrapped the link as broken, so the term was plain text there."""
    book = ('<section class="print-page" id="glossary" heading-number="1"><dl>\n'
            '<dt id="term-token">token</dt><dd>One unit.</dd></dl></section>\n'
            '<section class="print-page" id="chapter-7" heading-number="2">'
            '<p>A <a href="#glossary-term-token">token</a>; a <a href="#chapter-7-nowhere">gone</a>.</p></section>')
    path = tmp_path / apparatus.PRINT_PAGE
    path.parent.mkdir(parents=True)
    path.write_text(book, encoding="utf-8")
    assert apparatus.repair_print_page(tmp_path) == 1
    assert path.read_text(encoding="utf-8") == book.replace("#glossary-term-token", "#term-token").replace(
        '<a href="#chapter-7-nowhere">gone</a>', "gone")


# -- the rendered page's citation check ------------------------------------------------------------------------

@pytest.mark.parametrize("custom", ["<code-x>b</code-x>", "<pre-view>b</pre-view>", "<math-field>b</math-field>"])
def test_a_custom_element_named_like_code_does_not_hide_the_rest_of_the_page(custom):
    """The rendered page's check leaves out code and math, found by the name's start: ``<code-x>`` (a
    custom element, raw HTML that Markdown keeps) was taken for ``<code>``, and with no ``</code>`` after it
    the rest of the page was left unchecked: a citation typed in a later tag's attribute, which the check
    names otherwise, showed as typed in the tooltip with no error."""
    with pytest.raises(ValueError, match=r"docs/chapter-7\.md:5: the citation of @vaswani2017attention shows as typed"):
        render_page(f"# T\n\nA {custom} c\n\nText <span title=\"@vaswani2017attention\">y</span>.\n",
                    page="chapter-7.md")
