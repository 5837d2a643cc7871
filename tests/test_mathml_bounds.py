"""The build's formula stage (site_build.mathml) names the page as every build error does, refuses
control characters, which HTML does not allow and the converter would copy into the page, and refuses
a formula whose unclosed opening delimiters would have the converter (math-core) run for minutes: its
time doubles with each one (25 ``(`` take seconds, 30 minutes), so the check runs before it does."""

from __future__ import annotations

import html

import pytest

from site_build import mathml


def inline(formula: str) -> str:
    return f'<p><span class="arithmatex">\\({html.escape(formula)}\\)</span></p>'


@pytest.fixture
def page(tmp_path, monkeypatch):
    """``docs/hostile.md`` in a scratch docs folder: writes the page, whose line 5 holds ``formula``."""
    monkeypatch.setattr(mathml, "DOCS", tmp_path)

    def write(formula: str) -> None:
        (tmp_path / "hostile.md").write_text(f"# Hostile\n\nText.\n\n$$\n{formula}\n$$\n", encoding="utf-8")
    return write


class _Untouched:
    """A converter that must not be called."""

    def convert_many(self, formulas):
        raise AssertionError(f"the converter was given {formulas[0][0][:40]!r}")


def test_a_rejected_formula_names_the_page_as_docs_slash_its_path(page):
    page("\\frac{1}")
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:6: cannot render math"):
        mathml.render('<div class="arithmatex">\\[\n\\frac{1}\n\\]</div>', "hostile.md")
    with pytest.raises(ValueError, match=r"^docs/sub/deeper\.md: cannot render math"):
        mathml.render(inline("\\frac{1}"), "sub/deeper.md")


@pytest.mark.parametrize("control", ["\x00", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\x9b"])
def test_a_control_character_in_a_formula_is_refused_naming_page_line_and_character(page, monkeypatch, control):
    formula = f"x + {control}y"
    page(formula)
    monkeypatch.setattr(mathml, "_CONVERTER", _Untouched())
    with pytest.raises(ValueError) as err:
        mathml.render(f'<div class="arithmatex">\\[\n{formula}\n\\]</div>', "hostile.md")
    message = str(err.value)
    assert message.startswith("docs/hostile.md:6: the formula") and f"U+{ord(control):04X}" in message, message
    assert control not in message, repr(message)


def test_a_control_character_written_as_a_character_reference_does_not_reach_the_page():
    """The formula is read with its character references resolved as HTML does: one naming a
    control character resolves to nothing, or to the character Windows-1252 puts there."""
    out = mathml.render('<p><span class="arithmatex">\\(x &#7; &#x1b; &#x85; y\\)</span></p>', "hostile.md")
    assert not mathml._CONTROL.search(out), repr(out)


def test_tabs_and_newlines_in_a_formula_are_blanks_and_render():
    assert "<math" in mathml.render('<div class="arithmatex">\\[\nx\t+\r\ny\n\\]</div>', "hostile.md")


@pytest.mark.parametrize("opening", sorted(mathml._OPENING))
def test_a_formula_with_too_many_unclosed_opening_delimiters_is_refused_before_the_converter(
        page, monkeypatch, opening):
    limit = mathml.MATH_UNCLOSED_LIMIT
    within = f"{opening} " * limit + "x"
    assert "<math" in mathml.render(inline(within), "hostile.md")      # up to the limit: rendered
    over = f"{opening} " * (limit + 1) + "x"
    page(over)
    monkeypatch.setattr(mathml, "_CONVERTER", _Untouched())
    with pytest.raises(ValueError, match=rf"^docs/hostile\.md:6: the formula .* leaves {limit + 1} opening "
                                         r"delimiters unclosed, over MATH_UNCLOSED_LIMIT"):
        mathml.render(inline(over), "hostile.md")


@pytest.mark.parametrize("formula, count", [
    ("(" * 30 + "x" + ")" * 30, 0),
    ("[" * 30 + "x" + ")" * 29, 1),                       # a closing delimiter of any kind closes
    ("\\lbrace" + " \\langle" * 20 + " x" + " \\rvert" * 21, 0),
    (")" * 10 + "(" * 10, 10),                             # closing ones before do not count
    ("{(}" * 8 + ")" * 8, 8),                              # each group leaves its own open
    ("\\left(" + "(" * 8 + "\\right)", 8),                 # \left … \right is a sequence of its own
    ("\\left( x \\middle( y \\right(" * 10, 0),            # their delimiters are none of them
    ("\\begin{matrix}" + "( & " * 8 + "x \\end{matrix}", 8),   # nor does a cell close another's
    ("\\frac{(}{(}" * 5, 10),
    ("\\{ x \\mid x > 0 \\}", 0),
    ("[0, 1) \\cup (2, 3]", 0),
    ("\\text{(((}", 3),                                    # counted from above: text too
    ("(" * 8 + "x^)" * 4 + "x_)" * 4, 8),                  # a script's argument closes nothing
    ("(" * 8 + "\\operatorname)" * 8, 8),                   # nor a command's, its first argument
    ("(" * 6 + "\\frac a)" * 3 + "\\frac{a})" * 3, 6),      # or its second
    ("(" * 6 + "x^{a})" * 6, 0),                           # after the argument, a ')' closes
    ("\\alpha(" * 8, 8),                                   # an opening counts, argument or not
])
def test_unclosed_counts_the_openings_no_closing_one_follows_in_their_sequence(formula, count):
    assert mathml.unclosed(formula) == count


def test_a_formula_that_keeps_the_converter_busy_past_the_limit_is_stopped_naming_the_page(page, monkeypatch):
    """The bounds let no such formula through; the converter's own process is the last guard: here
    the unclosed bound is lifted, and 30 unclosed '(' would take the converter minutes."""
    monkeypatch.setattr(mathml, "MATH_UNCLOSED_LIMIT", 1000)
    monkeypatch.setattr(mathml, "MATH_SECONDS_LIMIT", 2)
    formula = "(" * 30 + "x"
    page(formula)
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:6: the formula .* took the MathML converter more "
                                         r"than MATH_SECONDS_LIMIT = 2 s"):
        mathml.render(inline(formula), "hostile.md")
    assert "<math" in mathml.render(inline("x + 1"), "hostile.md")       # a fresh process for the next one


def test_a_formula_that_kills_the_converter_fails_naming_the_page_and_the_build_goes_on(page, monkeypatch):
    """Nested 20,000 deep, the converter overflows its stack (SIGSEGV): in its own process, not the build's."""
    monkeypatch.setattr(mathml, "MATH_DEPTH_LIMIT", 10**6)
    monkeypatch.setattr(mathml, "MATH_LENGTH_LIMIT", 10**6)
    formula = "{" * 20_000 + "x" + "}" * 20_000
    page(formula)
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:6: the MathML converter's process died"):
        mathml.render(inline(formula), "hostile.md")
    assert "<math" in mathml.render(inline("x + 1"), "hostile.md")
