"""Issue 58, an independent hostile check, round 26a: an excerpt fence shown as text inside another
fence (a ````markdown block that teaches the form) is the author's text, shown as written: it is not
rewritten into a labelled excerpt with its note inside the shown block, nor refused as a malformed
excerpt."""

from __future__ import annotations

import pytest

from site_build import copyable
from site_render import render_page

SHOWN = ('```{.python .excerpt title="netcl_lite/capstone.py"}\n'
         ';--8<-- "netcl_lite/capstone.py:recipe"\n'
         '```')


def test_an_excerpt_form_shown_inside_a_markdown_fence_is_shown_as_written():
    page = f"# T\n\n````markdown\n{SHOWN}\n````\n"
    copyable.check_excerpts(page, "hostile.md")            # text inside a fence is no excerpt to check
    assert copyable.label_excerpts(page, "hostile.md") == page
    html = render_page(page)
    assert "Excerpt ·" not in html and "excerpt-source" not in html
    assert '{.python .excerpt title="netcl_lite/capstone.py"}' in html


@pytest.mark.parametrize("body", ['--8<-- "netcl_lite/capstone.py:recipe"', "", "print(1)"])
def test_a_nested_excerpt_look_alike_is_not_rewritten_inside_the_shown_block(body):
    page = f'# T\n\n````markdown\n```{{.python .excerpt title="x"}}\n{body}\n```\n````\n'
    copyable.check_excerpts(page, "hostile.md")
    assert copyable.label_excerpts(page, "hostile.md") == page


def test_a_real_excerpt_is_still_labelled_and_checked():
    page = '# T\n\n```{.python .excerpt title="netcl_lite/capstone.py"}\n--8<-- "netcl_lite/capstone.py:recipe"\n```\n'
    copyable.check_excerpts(page, "hostile.md")
    assert "Excerpt · netcl_lite/capstone.py" in copyable.label_excerpts(page, "hostile.md")
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:4: "):
        copyable.check_excerpts(page.replace(":recipe", ":1:3"), "hostile.md")


@pytest.mark.parametrize("quote", ["> ", ">", " > > "])
def test_an_excerpt_fence_in_a_block_quote_is_refused(quote):
    """Superfences takes a fence inside a block quote, but the excerpt form was read only at the
    line's start: quoted, it showed unlabelled, with a copy button that copied the include line."""
    page = (f'# T\n\n{quote}```{{.python .excerpt title="netcl_lite/capstone.py"}}\n'
            f'{quote}--8<-- "netcl_lite/capstone.py:recipe"\n{quote}```\n')
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:3: .*an excerpt fence opens with backticks"):
        copyable.check_excerpts(page, "hostile.md")
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:3: "):
        render_page(page)
