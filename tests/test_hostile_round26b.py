"""Issue 58, an independent hostile check, round 26b: a quote that follows an '=' which is not an
attribute's own (inside an unquoted value, right after a quoted value, right after the tag's name)
is text to HTML, so the tag ends at the next '>'; reading it as a quoted value made the build take
the rest of the page, a generated figure included, as one tag."""

from __future__ import annotations

import pytest

from site_build import generated
from site_build.tags import Tags


@pytest.mark.parametrize("tag, rest", [
    ("<img alt=x='y>", " <b>'</b>"),          # '=' inside an unquoted value
    ("<img alt='x'='y>", " <b>'</b>"),        # '=' right after a quoted value
    ("<img ='y>", " <b>'</b>"),               # '=' right after the tag's name
    ("<img alt= ='y>", " <b>'</b>"),          # an unquoted value that starts with '='
])
def test_a_quote_after_an_equals_sign_that_is_not_an_attribute_s_is_text(tag, rest):
    assert Tags(tag + rest).end(len("<img")) == len(tag)


@pytest.mark.parametrize("tag", ["<img alt='a>b'>", '<img alt = "a>b">', "<img data-x=1 alt='a>b'>",
                                 "<img a=\"p=q\"b='>'>"])
def test_a_quoted_value_still_holds_its_angle_bracket(tag):
    assert Tags(tag + " x>").end(len("<img")) == len(tag)


def test_a_generated_figure_after_an_unquoted_value_with_a_quote_gets_its_alt(tmp_path, monkeypatch):
    (tmp_path / "ch1").mkdir()
    (tmp_path / "ch1" / "loss.svg").write_text("<svg/>")
    monkeypatch.setattr(generated, "FIGURES", tmp_path)
    monkeypatch.setattr(generated, "figure_description", lambda svg: "the loss falls")
    html = "<p><img alt=x='y> <img src=\"figures/ch1/loss.svg\">'</p>"
    out = generated.with_alt(html, "docs/a.md")
    assert out == "<p><img alt=x='y> <img alt=\"the loss falls\" src=\"figures/ch1/loss.svg\">'</p>"
