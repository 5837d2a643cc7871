"""Hostile input, round 17c: citations (``site_build.citations``) and the Bibliography page.

Each test is a case the build got wrong before its fix: a citation in a formula's text failed the
build though math is the math's, an ``@`` with an invisible character before its key was shown as a
citation's text without a word, a link's title (the full reference) was read as Markdown, and an
entry's character reference showed as the character it names, and an entry's LaTeX command the
reader does not know (``\\emph``) showed as typed.
"""

from __future__ import annotations

import html as _html
import re
from types import SimpleNamespace

import pytest

from site_build import citations
from site_render import bibliography_of, render_page

KEY = "vaswani2017attention"
NO_FILES = SimpleNamespace(documentation_pages=lambda: [])


# -- math is the math's, in the rendered page too ------------------------------------------------------------

@pytest.mark.parametrize("formula", [f"$\\text{{@{KEY}}}$", f"\\(\\textrm{{see @{KEY}}}\\)",
                                     f"\n\n$$\n\\text{{as @{KEY} has it}}\n$$\n\n"],
                         ids=["dollar", "paren", "display"])
def test_a_citation_in_a_formula_s_text_is_left_to_the_math(formula):
    """The README: a citation inside math is the math's. The check before rendering leaves it, but the
    check of the rendered page read the MathML's ``<mtext>`` as the page's text and failed the build
    ("shows as typed ... cite it in plain text")."""
    html = render_page(f"# Title\n\nThe formula {formula} stands.\n")
    assert f"@{KEY}" in re.sub(r"<[^>]+>", "", html), html
    assert "bibliography.md#" not in html, html


# -- an at sign and its key, with an invisible character between ----------------------------------------------

@pytest.mark.parametrize("invisible", ["\u200b", "\u200d", "\u2060", "\u00ad", "\ufeff", "\u0301"],
                         ids=["zero-width-space", "zero-width-joiner", "word-joiner", "soft-hyphen", "bom",
                              "combining-acute"])
@pytest.mark.parametrize("form", ["See @{i}{key} here.", "See [@{i}{key}] here.", "See [-@{i}{key}, p. 2]."],
                         ids=["narrative", "bracketed", "year-only"])
def test_an_at_sign_with_an_invisible_character_before_its_key_fails_naming_the_line(invisible, form):
    """``@``, a zero-width or combining character, then a key reads as a citation, but no citation
    pattern took it and no near miss either (a near miss's ``@`` must be followed by a word's
    character): the page showed the text of a citation that cites nothing, with no error."""
    text = f"# Title\n\nFirst line.\n{form.format(i=invisible, key=KEY)}\n"
    with pytest.raises(ValueError, match=r"^docs/chapter-7.md:4: .*looks like a citation"):
        citations.render(text, "chapter-7.md")
    shown = f"`@{invisible}{KEY}` in code, or \\@{invisible}{KEY} escaped"
    assert citations.render(shown, "chapter-7.md").startswith(f"`@{invisible}{KEY}` in code, or &#64;")


# -- a citation's link title is the full reference, as written --------------------------------------------------

@pytest.mark.parametrize("title, shown", [
    ("A `code` title", "A `code` title"),
    ("Costs of $x$ and $y$", "Costs of $x$ and $y$"),
    ("Back \\textbackslash{} slash", "Back \\ slash"),
    ("Said \"twice\"", "Said \"twice\""),
    ("Fish &amp; chips", "Fish &amp; chips"),
], ids=["backticks", "dollars", "backslash", "quote", "entity"])
def test_a_citation_s_title_shows_the_reference_as_written(tmp_path, monkeypatch, title, shown):
    """Each citation is a link titled with the full reference, which its Markdown held as a link title:
    Markdown read code spans, math and escapes there (``A `code` title`` showed as "A code title",
    ``$x$`` as ``\\(x\\)``) and character references (``&amp;`` showed as "&")."""
    known = bibliography_of(tmp_path, monkeypatch, "@article{smith2020x, author = {Smith, Ann}, title = {" + title
                            + "}, journal = {J}, year = {2020}, doi = {10.1234/a`b}}")
    html = render_page("# Title\n\nSee [@smith2020x] and @smith2020x [p. 3].\n")
    titles = [_html.unescape(t) for t in re.findall(r'<a href="bibliography.md#smith2020x" title="([^"]*)"', html)]
    assert titles == [known["smith2020x"].reference().strip()] * 2, (titles, html)
    if shown is not None:
        assert shown in titles[0] and "doi:10.1234/a`b." in titles[0], titles


def test_a_character_reference_in_an_entry_shows_as_written_on_the_bibliography_page(tmp_path, monkeypatch):
    """The Bibliography page shows an entry's text as written; ``&amp;`` and ``&#64;`` there were passed to
    the page as HTML and showed as "&" and "@"."""
    known = bibliography_of(tmp_path, monkeypatch, "@article{smith2020x, author = {Smith, Ann}, title = "
                                                   "{Fish &amp; chips &#64; &lt;sea&gt;}, journal = {J}, year = {2020}}")
    html = render_page(citations.bibliography(NO_FILES, known), page="bibliography.md")
    shown = _html.unescape(re.sub(r"<[^>]+>", "", html))
    assert "Fish &amp; chips &#64; &lt;sea&gt;." in shown, html


# -- an entry's LaTeX the site cannot read -----------------------------------------------------------------------

@pytest.mark.parametrize("title", ["An \\emph{emphasised} word", "See \\url{x.org}", "Paying \\$5"])
def test_an_entry_s_latex_command_the_site_cannot_show_is_refused_naming_the_file(tmp_path, monkeypatch, title):
    """The LaTeX reader knows accents and escapes, not commands such as ``\\emph``: the Bibliography page
    and every citation's title showed "An \\emph emphasised word"."""
    with pytest.raises(ValueError, match=r"references\.bib: the entry 'smith2020x' holds the LaTeX command"):
        bibliography_of(tmp_path, monkeypatch, "@article{smith2020x, author = {Smith, Ann}, title = {" + title
                        + "}, journal = {J}, year = {2020}}")
