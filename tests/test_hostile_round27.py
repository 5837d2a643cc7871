"""Issue 58, what round 26 noticed and left: an excerpt's title in single quotes or bare, which
attr_list reads as the title, was dropped (the excerpt showed its path under the author's title's
place), and a class that begins with ``excerpt-`` (``.excerpt-x``) was taken for the excerpt class
(``.excerpts`` and ``.excerpt_2``, which were not, stand beside it as controls). And a tag scan
(:class:`site_build.tags.Tags`) read ``<img a= b='x>'`` as two attributes, the second quoted, where
HTML reads ``b='x`` as a's unquoted value and ends the tag at its ``>``."""

from __future__ import annotations

import time

import pytest

from site_build import copyable, markers
from site_render import render_page

INCLUDE = '--8<-- "netcl_lite/capstone.py:recipe"'


@pytest.mark.parametrize("title", ["'the recipe'", '"the recipe"'])
def test_an_excerpt_title_in_either_quotes_is_kept(title):
    page = f"# T\n\n```{{.python .excerpt title={title}}}\n{INCLUDE}\n```\n"
    copyable.check_excerpts(page, "hostile.md")
    labelled = copyable.label_excerpts(page, "hostile.md")
    assert 'title="Excerpt · the recipe"' in labelled
    assert labelled.count("title=") == 1


def test_a_bare_excerpt_title_is_kept():
    page = f"# T\n\n```{{.python .excerpt title=recipe.py}}\n{INCLUDE}\n```\n"
    labelled = copyable.label_excerpts(page, "hostile.md")
    assert 'title="Excerpt · recipe.py"' in labelled and labelled.count("title=") == 1


@pytest.mark.parametrize("cls", [".excerpt-x", ".excerpts", ".excerpt_2"])
def test_a_class_that_begins_with_excerpt_is_another_class(cls):
    """Such a fence is an ordinary block of code: it is not labelled, checked or refused as an excerpt."""
    page = f"# T\n\n```{{.python {cls}}}\nprint(1)\n```\n"
    assert not markers.EXCERPT_LIKE.match(page.split("\n")[2])
    copyable.check_excerpts(page, "hostile.md")
    assert copyable.label_excerpts(page, "hostile.md") == page
    assert "Excerpt ·" not in render_page(page)


# -- a name after another attribute's '=' and blanks is that attribute's unquoted value ----------------------

from site_build.tags import Tags  # noqa: E402


@pytest.mark.parametrize("tag, end", [
    ("<img a= b='x>' c>", "<img a= b='x>"),             # a's value is b='x: the quote is text
    ("<img a= b= c='x>' d>", "<img a= b= c='x>' d>"),   # a's value is b=, then c holds 'x>'
    ("<img a= b c='x>' d>", "<img a= b c='x>' d>"),     # a's value is b, then c holds 'x>'
    ("<img a= 'x>' c>", "<img a= 'x>' c>"),             # blanks before a quoted value
])
def test_a_tag_ends_where_html_ends_it_after_an_attribute_with_blanks_after_its_equals(tag, end):
    """``a= b='x'`` was read as two attributes, the second quoted, so a '>' inside the quotes did not end
    the tag; HTML reads ``b='x'`` as a's unquoted value, whose quote is text."""
    assert tag[:Tags(tag).end(0)] == end


def test_a_long_chain_of_equals_after_blanks_is_read_once():
    tag = "<img " + "a= " * 50_000 + "b='x>' c>"
    start = time.process_time()
    assert Tags(tag).end(0) == len(tag)                 # an even chain: b is an attribute again
    assert Tags("<img " + "a= " * 50_001 + "b='x>' c>").end(0) == len(tag) + 3 - len("' c>")
    assert time.process_time() - start < 2


# -- what round 27a noticed and left --------------------------------------------------------------------------

from netcl_lite.ngram import WordNGram  # noqa: E402
from netcl_lite.nn.config import LMConfig  # noqa: E402


@pytest.mark.parametrize("name", ["rms_norm_eps", "initializer_range"])
@pytest.mark.parametrize("value", [1e-300, 1e-40])
def test_a_config_value_float32_holds_as_zero_or_subnormal_is_refused(name, value):
    """1e-300 passed as a positive value and became 0 in the kernels' float32: a norm dividing by 0,
    or every weight 0."""
    with pytest.raises(ValueError, match=rf"^{name}=.*below float32's smallest normal"):
        LMConfig(vocab_size=8, **{name: value})
    LMConfig(vocab_size=8, **{name: 1e-30})              # small, and still float32's


def test_word_ngram_unigram_counts_whose_sum_overflows_are_refused():
    """Counts near float64's largest value summed to inf: every stream got an almost uniform
    distribution, silently."""
    import numpy as np

    model = WordNGram(np.arange(8), 8, 2, {i: bytes([97 + i]) for i in range(8)})
    with pytest.raises(ValueError, match=r"^unigram's counts sum past float64"):
        model.predict(np.full(8, 1e308))
    assert model.predict(np.full(8, 3.0)).shape == (2, 8)
