"""Issue 58, an independent hostile check, round 23c: citations (``site_build.citations``) and the
Bibliography page.

Each test is a case the build got wrong before its fix: a LaTeX control symbol the LaTeX reader does
not know (a thin space ``\\,``, ``\\;``, ``\\!``, the italic correction ``\\/``, ``\\@``, a line break
``\\\\``) stayed in an entry's text as typed, so the Bibliography page and every citation's title showed
"A\\,B" with its backslash, and the build said nothing.
"""

from __future__ import annotations

import pytest

from site_build import citations


@pytest.mark.parametrize("symbol", ["\\,", "\\;", "\\!", "\\/", "\\@", " \\\\ "])
def test_an_entry_s_latex_control_symbol_the_site_cannot_show_is_refused_naming_the_file(tmp_path, symbol):
    """``\\emph`` was refused (round 17c) but a control symbol, a backslash and one non-letter, was not:
    the title "A\\,B" was shown with its backslash on the Bibliography page."""
    source = tmp_path / "references.bib"
    source.write_text("@article{smith2020x, author = {Smith, Ann}, title = {A" + symbol + "B}, journal = {J},"
                      " year = {2020}}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"references\.bib: the entry 'smith2020x' holds the LaTeX command"):
        citations.works(source)


def test_an_entry_s_known_escapes_and_accents_still_show(tmp_path):
    """The fix refuses only what the reader leaves: escapes and accents it reads still show."""
    source = tmp_path / "references.bib"
    source.write_text("@article{smith2020x, author = {Smith, Ann}, title = {Fish \\& chips \\_ \\% na\\\"ive"
                      " caf\\'e\\ bar}, journal = {J}, year = {2020}}\n", encoding="utf-8")
    assert citations.works(source)["smith2020x"].title == "Fish & chips _ % naïve café bar"
