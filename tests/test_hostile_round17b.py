"""Round 17b of the hostile check of the build plugin (``site_build``), citations aside: what a hostile
author, snippet or build still gets past it after round 16b. Each test asserts the behaviour the README
and issue 58 promise, and failed on the code before its fix.
"""

from __future__ import annotations

import pytest

from site_render import rendered_page


# -- MathML in the page's title -------------------------------------------------------------------------------

@pytest.mark.parametrize("formula, shown", [("a<b", "a&lt;b"), ("x <img src=x> y", "x &lt;img src=x&gt; y"),
                                            ("p \\& q", "p \\&amp; q")])
def test_a_formula_in_the_first_heading_stays_text_in_the_page_title(formula, shown):
    """The page's title is HTML (MkDocs takes the first heading's inner HTML less its tags; its
    character references stay), and the theme puts it in the header and the navigation as it is. The
    formula in it was shown as its LaTeX unescaped: ``\\(a<b\\)`` put a raw ``<b`` tag into every
    page's navigation, and ``\\(x <img src=x> y\\)`` an image."""
    page = rendered_page(f"# Cost \\({formula}\\) here\n\nText.\n")
    assert page.title == f"Cost {shown} here", page.title
