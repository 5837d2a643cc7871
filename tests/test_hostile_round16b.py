"""Round 16b of the hostile check of the build plugin (``site_build``), citations aside: what a hostile
author or glossary still gets past it after round 15b. Each test asserts the behaviour the README and
issue 58 promise, and failed on the code before its fix.
"""

from __future__ import annotations

import pytest

from site_build import glossary

ROTARY = glossary.Term(term="RoPE", definition="Rotates query and key pairs.",
                       forms=("RoPE", "rotary position embedding"))
EMBEDDING = glossary.Term(term="embedding", definition="A learned vector per token id.", forms=("embedding",))


# -- the glossary's tooltips -----------------------------------------------------------------------------------

@pytest.mark.parametrize("gap", ["\n", "  ", "\n  "])
def test_a_form_of_several_words_is_found_across_a_line_break(gap):
    """A form of several words (``rotary position embedding``, ``merge rule``) is matched in the page's
    HTML as written, one space between its words; a paragraph that breaks its line between them keeps
    that newline in the HTML, where a reader sees a space. The first use then got no tooltip, the next
    one did, and the last word alone, itself a term, got that term's definition instead."""
    content, marked = glossary.mark_first_uses(
        f"<p>We use rotary position{gap}embedding here; rotary position embedding again.</p>", (ROTARY, EMBEDDING))
    assert content == (f'<p>We use <abbr class="glossary" title="Rotates query and key pairs.">rotary position{gap}'
                       f'embedding</abbr> here; rotary position embedding again.</p>'), content
    assert marked == 1


def test_an_empty_glossary_marks_nothing():
    """docs/glossary.yml may hold no term (it is read as an empty list, and the Glossary page lists
    none); the pattern of no form matched the empty string, and every page that gets tooltips failed
    with ``KeyError: ''``, naming no page."""
    assert glossary.mark_first_uses("<p>Hi, you!</p>", ()) == ("<p>Hi, you!</p>", 0)
