"""Every work the site names is cited by key, every key is in ``docs/references.bib``, and every
entry there is complete (authors, year, title, venue, an identifier) and cited somewhere.

The pages are read as Markdown, outside code, math and comments. A work named in prose the old way,
``Dao et al. (2022``, ``(Ziv & Lempel, 1977)``, ``Sennrich, Haddow and Birch, *Title*`` or a year
alone in parentheses, is listed by :func:`uncited_mentions` with its page and line: convert each to
a key (README, "Citations") until the list is empty.
"""

from __future__ import annotations

import re

import pytest

import doc_blocks
from site_build import citations

NAME = r"[A-Z][A-Za-zÀ-ÿ'’-]+(?: (?:de|De|van|von|Van|Von|Le|La) [A-Z][A-Za-zÀ-ÿ'’-]+)?"
#: (what it is, a pattern): a work named without its key
OLD_STYLE = [
    ("Author et al. (YYYY / Author et al., YYYY", rf"\b{NAME} et al\.(?:'s)?,? \(?(?:19|20)\d\d"),
    ("(Author, YYYY) / (Author & Author, YYYY)", rf"\({NAME}(?:,? (?:&|and) {NAME})?(?: et al\.)?,? (?:19|20)\d\d"),
    ("Author & Author (YYYY", rf"\b{NAME} (?:&|and) {NAME}(?:'s)?,? \((?:19|20)\d\d"),
    ("a year alone in parentheses", r"\((?:19|20)\d\d[a-z]?(?:,[^)\n]*)?\)"),
    ("Author et al., *Title*", rf"\b{NAME} et al\.,? \*"),
    ("Author, Author and Author, *Title*", rf"\b{NAME}(?:, {NAME})* (?:&|and) {NAME}, \*"),
]
REQUIRED_VENUE = ("journal", "booktitle", "publisher", "institution", "howpublished")
IDENTIFIERS = ("doi", "eprint", "isbn", "number")


def _pages() -> dict[str, str]:
    return {p.relative_to(doc_blocks.DOCS).as_posix(): p.read_text(encoding="utf-8") for p in doc_blocks.pages()}


def uncited_mentions(pages: dict[str, str]) -> list[str]:
    """``page:line: what: text`` for each work a page names in prose without a citation key."""
    found = []
    for page, text in pages.items():
        for start, end in citations.prose_spans(text):
            prose = citations.NARRATIVE.sub("", citations.BRACKETED.sub("", text[start:end]))
            base = text.count("\n", 0, start) + 1
            for what, pattern in OLD_STYLE:
                for m in re.finditer(pattern, prose):
                    line = base + prose.count("\n", 0, m.start())
                    found.append(f"docs/{page}:{line}: {what}: {m.group(0)!r}")
    return sorted(set(found))


def test_the_mention_finder_finds_each_old_style_and_passes_keys():
    text = ("Dao et al. (2022, *F*) and (Ziv & Lempel, 1977) and Kuhn & De Mori (1990) and the BWT (1994),\n"
            "Vaswani et al., *Attention*, and Sennrich, Haddow and Birch, *NMT*, (Vaswani et al., 2017).\n"
            "Keys: [@dao2022flashattention, Theorem 2], @xiong2020layer, [-@burrows1994block].\n"
            "`Dao et al. (2022` in code, and \\(x (2020)\\) in math, stay.\n")
    found = uncited_mentions({"x.md": text})
    assert [f.split(": ", 1)[0] for f in found] == ["docs/x.md:1"] * 5 + ["docs/x.md:2"] * 4, found
    assert not [f for f in found if ":3:" in f or ":4:" in f]


def test_no_page_names_a_work_without_its_citation_key():
    left = uncited_mentions(_pages())
    assert not left, (f"{len(left)} works named without a citation key; cite each by key (README, "
                      "'Citations'):\n" + "\n".join(left))


def test_every_key_a_page_cites_is_in_the_bibliography():
    known = citations.works()
    missing = sorted({f"docs/{page}: @{key}" for page, text in _pages().items()
                      for key in citations.cited_keys(text) if key not in known})
    assert not missing, f"keys not in {citations.SOURCE.name}:\n" + "\n".join(missing)


def test_every_entry_is_complete():
    from pybtex.database import parse_file

    bib = parse_file(str(citations.SOURCE))
    problems = []
    for key, entry in bib.entries.items():
        fields = {k.lower(): v for k, v in entry.fields.items()}
        if not re.fullmatch(citations.KEY, key):
            problems.append(f"{key}: a key is authorYEARword, lower case ({citations.KEY})")
        if not entry.persons.get("author"):
            problems.append(f"{key}: no author")
        if not re.fullmatch(r"(?:19|20)\d\d", fields.get("year", "")):
            problems.append(f"{key}: no year")
        elif fields["year"] not in key:
            problems.append(f"{key}: the key's year is not the entry's year {fields['year']}")
        if not fields.get("title", "").strip():
            problems.append(f"{key}: no title")
        if not any(fields.get(v, "").strip() for v in REQUIRED_VENUE):
            problems.append(f"{key}: no venue ({', '.join(REQUIRED_VENUE)})")
        if fields.get("eprint") and fields.get("archiveprefix", "").lower() != "arxiv":
            problems.append(f"{key}: an eprint needs archiveprefix = {{arXiv}}")
        if fields.get("eprint") and not re.fullmatch(r"\d{4}\.\d{4,5}", fields["eprint"]):
            problems.append(f"{key}: {fields['eprint']!r} is not an arXiv id")
        if fields.get("doi") and not re.fullmatch(r"10\.\d{4,9}/\S+", fields["doi"]):
            problems.append(f"{key}: {fields['doi']!r} is not a DOI")
        report_number = entry.type == "techreport" and fields.get("number")
        if not (any(fields.get(i) for i in IDENTIFIERS if i != "number") or report_number
                or (entry.type in ("techreport", "misc") and fields.get("noidentifier", "").strip())):
            problems.append(f"{key}: no identifier (doi, eprint, isbn or a report's number; a report "
                            "without one says why in noidentifier)")
        if "url" in fields:
            problems.append(f"{key}: a url (the site links to no other host; give a DOI or arXiv id)")
    assert not problems, "incomplete entries in references.bib:\n" + "\n".join(problems)


def test_every_entry_is_cited_on_some_page():
    cited = {key for text in _pages().values() for key in citations.cited_keys(text)}
    uncited = sorted(set(citations.works()) - cited)
    assert not uncited, f"entries of {citations.SOURCE.name} that no page cites: {uncited}"


def test_the_works_the_chapters_rely_on_are_in_the_bibliography():
    known = citations.works()
    wanted = {
        "mahoney2005adaptive": "2005", "shkarin2002ppm": "2002", "schuster2012japanese": "2012",
        "kudo2018subword": "2018", "kudo2018sentencepiece": "2018", "deletang2024language": "2024",
        "krause2018dynamic": "2018", "krause2019dynamic": "2019", "holtzman2020curious": "2020",
        "williams2009roofline": "2009", "milakov2018online": "2018", "rabe2021self": "2021",
        "dao2024flashattention2": "2024", "dao2022flashattention": "2022", "rissanen1976generalized": "1976",
        "witten1987arithmetic": "1987", "cleary1984data": "1984", "wu2016google": "2016",
        "devlin2019bert": "2019", "loshchilov2019decoupled": "2019", "kaplan2020scaling": "2020",
        "hoffmann2022training": "2022", "hu2024minicpm": "2024", "hagele2024scaling": "2024",
        "su2024roformer": "2024", "shazeer2019fast": "2019", "ainslie2023gqa": "2023",
        "vaswani2017attention": "2017", "sennrich2016neural": "2016", "radford2019language": "2019",
        "zhang2019root": "2019", "shazeer2020glu": "2020", "press2017using": "2017",
        "khandelwal2020generalization": "2020", "kuhn1990cache": "1990", "ziv1977universal": "1977",
        "burrows1994block": "1994",
    }
    assert {k: known[k].year for k in wanted if k in known} == wanted


@pytest.mark.parametrize("source, shown", [
    ("[@vaswani2017attention]", "([Vaswani et al., 2017]("),
    ("[@kuhn1990cache; @zhang2019root]", "([Kuhn & De Mori, 1990]("),
    ("@xiong2020layer", "[Xiong et al. (2020)]("),
    ("@dao2022flashattention [Theorem 2]", "[Dao et al. (2022, Theorem 2)]("),
    ("[@dao2022flashattention, Theorem 2]", "([Dao et al., 2022, Theorem 2]("),
    ("[-@burrows1994block]", "([1994]("),
    ("[@shazeer2019fast]", "([Shazeer, 2019]("),
])
def test_a_citation_becomes_a_link_to_its_entry(source, shown):
    out = citations.render(f"Text {source}.\n", "concepts/transformer.md")
    assert shown in out, out
    assert "(../bibliography.md#" in out


def test_code_and_math_keep_their_at_signs_and_an_unknown_key_fails():
    text = "```python\n@decorator2020x\n```\n`[@vaswani2017attention]` and \\([@a2020b]\\)\n"
    assert citations.render(text, "chapter-7.md") == text
    with pytest.raises(ValueError, match=r"docs/chapter-7.md:1: cites @nobody2020nothing"):
        citations.render("As [@nobody2020nothing] showed.", "chapter-7.md")


@pytest.mark.parametrize("entry, says", [
    ("@misc{smith2020x, title={T}, howpublished={web}, year={2020}}", "'smith2020x' lacks author"),
    ("@book{smith2020x, editor={Smith, A.}, title={T}, publisher={P}, year={2020}}", "'smith2020x' lacks author"),
    ("@article{smith2020x, author={Smith, A.}, title={T}, journal={J}}", "'smith2020x' lacks year"),
    ("@article{smith2020x, author={Smith, A.}, journal={J}, year={2020}}", "'smith2020x' lacks title"),
    ("@article{Smith_2020:x, author={Smith, A.}, title={T}, journal={J}, year={2020}}", "key no page can cite"),
    ("@article{smith2020x, author={Smith, A.}, title={T}, journal={J}, year={2020}", "syntax error"),
    ("@article{smith2020x, author={A. Smith}, title={T}, journal={J}, year={2020}}\n" * 2, "repeated"),
])
def test_an_entry_that_cannot_be_cited_or_shown_is_refused_naming_the_file(tmp_path, entry, says):
    """An entry without an author failed with an IndexError, one without a year was cited as
    '(Smith, )', one whose key does not look like authorYEARword could never be cited, and a syntax
    error did not name the file: each is a ValueError naming the file and what is wrong."""
    source = tmp_path / "references.bib"
    source.write_text(entry + "\n")
    with pytest.raises(ValueError, match=f"^{re.escape(str(source))}: .*{re.escape(says)}"):
        citations.works(source)


KEY = "vaswani2017attention"


@pytest.mark.parametrize("text", [
    f"Inline <code>[@{KEY}]</code> and <KBD>@{KEY}</KBD> and <samp>-@{KEY}</samp>.\n",
    f"Before\n<pre>\n[@{KEY}]\n@{KEY}\n</pre>\nafter.\n",
    f"A paragraph.\n\n    indented code [@{KEY}] and @{KEY}\n\n    more code @{KEY}\n",
    f"- an item\n\n    its paragraph\n\n        code in the item @{KEY}\n",
    f"!!! note\n\n    the note\n\n        code in the note [@{KEY}]\n",
    f"    ```\n    an indented fence, closed longer @{KEY}\n    `````\n",
])
def test_text_in_code_of_every_kind_stays_as_written(text):
    """Raw HTML code elements and indented code blocks (also inside a list item or an admonition) are
    code: a citation there is text, shown as written. (A fence closed by a longer one is no code to
    Python-Markdown: the page is refused for it, naming the line.)"""
    assert citations.render(text, "chapter-7.md") == text


def test_prose_indented_under_a_list_item_or_an_admonition_still_cites():
    for text in (f"- an item\n\n    its paragraph [@{KEY}]\n", f"!!! note\n\n    the note @{KEY}\n",
                 f"??? question \"Q\"\n    the answer [@{KEY}]\n", f"1. first\n\n    then @{KEY}\n"):
        assert f"bibliography.md#{KEY}" in citations.render(text, "chapter-7.md"), text


@pytest.mark.parametrize("near, says", [
    ("[@near-miss]", "'[@near-miss]' looks like a citation"),
    (f"[@{KEY.capitalize()}]", "looks like a citation"),
    (f"[see @{KEY}]", f"'[see @{KEY}]' is not a citation"),
    (f"[@{KEY}, @xiong2020layer]", "is not a citation"),
    (f"[@{KEY}", "is not a citation"),
    (f"[ @{KEY} ]", "is not a citation"),
    ("-@burrows1994block", "'-@burrows1994block' looks like a citation"),
    ("@vaswani-attention", "looks like a citation"),
    ("(@vaswani)", "'@vaswani' looks like a citation"),
    ("[@nobody2020nothing]", "cites @nobody2020nothing, which is not in docs/references.bib"),
])
def test_a_near_miss_citation_fails_naming_the_page_and_the_line(near, says):
    text = f"# Title\n\nA line.\n\n```\ncode @{KEY}\n```\nAs {near} showed, and more.\n"
    with pytest.raises(ValueError, match=rf"^docs/chapter-7.md:12: .*{re.escape(says)}"):
        citations.render(text, "chapter-7.md", first_line=5)
    assert citations.render(f"`{near}` in code\n", "chapter-7.md") == f"`{near}` in code\n"


@pytest.mark.parametrize("line, where", [
    (f"See [the paper [@{KEY}]](https://example.org).", "a link's text"),
    (f"See [the paper [@{KEY}]][ref].\n\n[ref]: https://example.org", "a link's text"),
    (f"See [the paper by @{KEY}](https://example.org).", "a link's text"),
    (f'See [x](https://example.org "by @{KEY}").', "a link's target or title"),
    (f'See [x](https://example.org "see [@{KEY}]").', "a link's target or title"),
])
def test_a_citation_inside_a_link_fails_naming_the_page_and_the_line(line, where):
    """A citation becomes a Markdown link, which a link's text or title cannot hold: the page showed
    the citation's Markdown inside the link's text, or the title's quote ended early and the rest
    of the link spilled onto the page. Next to a link, or in an image's alt text, it still cites."""
    with pytest.raises(ValueError, match=rf"^docs/chapter-7.md:7: .* stands inside {re.escape(where)}"):
        citations.render(f"# Title\n\n{line}\n", "chapter-7.md", first_line=5)
    for fine in (f"[x](https://example.org) and [@{KEY}], [y](z) @{KEY}.", f"![a figure [@{KEY}]](x.svg)",
                 f"A list [a, b] then [@{KEY}].", f"Text[^1].\n\n[^1]: From [@{KEY}]."):
        assert "bibliography.md#" in citations.render(fine + "\n", "chapter-7.md"), fine


def test_e_mail_addresses_paths_and_link_targets_are_not_near_misses():
    text = "Write to a.b@example.org, see [the list](mailto:list@example.org) or docs/@scope/x.\n"
    assert citations.render(text, "chapter-7.md") == text


@pytest.mark.parametrize("text, line", [
    (f'See [x][r].\n\n[r]: https://example.org\n    "by [@{KEY}]"', 10),       # the title on the next line
    (f"The HTML way.\n\n*[HTML]: Hyper @{KEY}", 9),
    (f'A *word*{{ title="@{KEY}" }} here.', 7),
])
def test_a_citation_where_markdown_reads_an_attribute_or_a_target_fails_naming_the_line(text, line):
    with pytest.raises(ValueError, match=rf"^docs/chapter-7.md:{line}: .* stands inside "):
        citations.render(f"# Title\n\n{text}\n", "chapter-7.md", first_line=5)


def test_many_citations_on_one_line_are_placed_in_linear_time():
    """20,000 citations on one line: each asks which place it stands in; the line is read once."""
    import time

    line = f"[@{KEY}] " * 20_000
    start = time.process_time()
    citations.check(f"# Title\n\n{line}\n", "chapter-7.md")
    assert time.process_time() - start < 5.0


@pytest.mark.parametrize("text", [f"See [@{KEY} words] here.", f"See [@{KEY}```] here.", f"See [@{KEY}; @{KEY} x]."])
def test_words_after_a_key_in_brackets_fail_naming_the_line_not_with_a_type_error(text):
    with pytest.raises(ValueError, match=rf"^docs/chapter-7.md:7: .* is not a citation"):
        citations.render(f"# Title\n\n{text}\n", "chapter-7.md", first_line=5)


@pytest.mark.parametrize("text", [f"A note[^1][@{KEY}].\n\n[^1]: The note.", f"See [x]@{KEY}.", f"An image !@{KEY}."])
def test_a_citation_right_after_a_bracket_or_a_bang_fails_naming_the_line(text):
    """Its link's '[' (or the bracketed form's '(') would join the ']' or '!' before it into one
    link or image, whose Markdown the page would show."""
    with pytest.raises(ValueError, match=rf"^docs/chapter-7.md:7: .* follows '[\]!]' directly"):
        citations.render(f"# Title\n\n{text}\n", "chapter-7.md", first_line=5)


def test_random_pages_either_fail_naming_the_page_or_show_every_citation_as_a_link():
    """The page's checks before rendering emulate Markdown; this one reads what the reader gets.
    Random mixes of citations with links, attributes, raw HTML, code, footnotes and blocks: each page
    either fails naming the page, or its HTML holds no citation's Markdown and no key as typed, in
    text or attributes, outside code."""
    import html
    import random

    from site_render import render_page

    pieces = [f"[@{KEY}]", f"@{KEY}", f"[-@{KEY}]", "[x]", "(", ")", "{", "}", "*[HTML]: ", "[r]: https://e.org ",
              '"', "'", "`", "<kbd>", "</kbd>", "<span title='", "'>", "</span>", "**b**", "\n", "\n\n", "> ",
              "- ", "|", "<!--", "-->", "\\", "![i](x.svg ", "[t](", "a ", " ", ":", "    ", "\\(", "\\)", "^[",
              "]", "[^1]", "[^1]: ", '<abbr title="', '">', "</abbr>", "{: ", "<div markdown>", "</div>", "```\n"]
    rng, refused = random.Random(58), 0
    for _ in range(150):
        body = "".join(rng.choice(pieces) for _ in range(rng.randrange(2, 14)))
        try:
            out = render_page(f"# Hostile\n\nIntro.\n\n{body}\n")
        except ValueError as err:
            assert str(err).startswith("docs/hostile.md"), (body, str(err))
            refused += 1
            continue
        # code to its end tag, or to the end of its paragraph, where a browser ends an unclosed one
        shown = re.sub(r"<(code|kbd|pre)\b.*?(?:</\1>|(?=</p>)|$)", "", out, flags=re.S | re.I)
        assert "](bibliography.md" not in shown, (body, out)
        assert not re.search(rf"(?<![\w./\\-])-?@{KEY}", html.unescape(shown)), (body, out)
    assert 0 < refused < 150


def test_a_page_may_show_a_citation_s_markdown_in_code():
    from site_render import render_page

    page = render_page(f"# P\n\nIt becomes `[Vaswani et al., 2017](bibliography.md#{KEY})`, and `@{KEY}` is a key.\n")
    assert f"bibliography.md#{KEY})</code>" in page


def test_a_backslash_before_an_at_shows_the_at_alone_and_cites_nothing():
    """``\\@key`` is an escaped ``@``: the page shows ``@key`` (Python-Markdown alone would keep the
    backslash), no link is made, and the check of the rendered page reads it as escaped; ``\\\\`` stays
    a backslash's escape, and a citation beside an escaped ``@`` still becomes a link. (``\\\\@key``, an
    escaped backslash before a key, fails naming the line: tests/test_hostile_round15b.py.)"""
    import markdown as md

    text = f"Type \\@{KEY} to cite it, a path C:\\\\ home, and cite [@{KEY}].\n"
    out = citations.render(text, "chapter-7.md")
    assert f"&#64;{KEY} to cite" in out and "\\@" not in out.replace("\\\\@", "")
    assert out.count(f"bibliography.md#{KEY}") == 1
    html = md.markdown(out)
    assert f"@{KEY} to cite" in __import__("html").unescape(html) and f"\\@{KEY}" not in html
    citations.check_rendered(html, "chapter-7.md", text)
    with pytest.raises(ValueError, match="shows as typed"):     # typed without the escape: still caught
        citations.check_rendered(f"<p>see @{KEY}</p>", "chapter-7.md", text)


def test_what_is_prose_is_what_python_markdown_makes_text():
    """The check reads the page as the build's Markdown does: a citation in an HTML block that Markdown
    does not read fails naming its line; one in an image's alt text cites (Markdown shows the link as
    its text); one in a code span that Markdown starts inside a tag's attribute stays as typed."""
    with pytest.raises(ValueError, match=r"^docs/chapter-7.md:4: '@vaswani2017attention' stands in raw HTML"):
        citations.render(f"# Title\n\n<div>\n@{KEY} said\n</div>\n", "chapter-7.md")
    assert f"bibliography.md#{KEY}" in citations.render(f"# Title\n\n<div markdown>\n@{KEY} said\n</div>\n",
                                                           "chapter-7.md")
    text = f'Text <span title="a`b">x</span> then @{KEY} and `c` end.\n'
    assert citations.render(text, "chapter-7.md") == text


@pytest.mark.parametrize("odd", ["\ue000", "\ue000\ue100\ue100\ue100", "".join(map(chr, range(0xE000, 0xE100)))])
def test_a_page_holding_private_use_characters_is_read_as_any_other(odd):
    """The marks the check puts at each place begin with a private-use character the page does not
    hold: text that looks like a mark, in code or in prose, changes nothing."""
    text = f"`{odd} @{KEY}` and {odd} [@{KEY}] and `{odd}`\n"
    out = citations.render(text, "chapter-7.md")
    assert out.count("bibliography.md#") == 1 and out.startswith(f"`{odd} @{KEY}` and {odd} ("), out
