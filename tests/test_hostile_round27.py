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
