"""Issue 58, an independent hostile check, round 24b: bidirectional formatting characters.

A right-to-left override (U+202E) and its kin (embeddings, isolates, the marks) are no control
characters, so they passed the checks that refuse those; one left open in a formula's MathML or a
glossary term's tooltip and definition reorders the text after it, outside its element (a
Trojan-source reading of the page). Each is refused naming the page or file and the line.
"""

from __future__ import annotations

import pytest

BIDI = ["\u202e", "\u202a", "\u2066", "\u2069", "\u200f", "\u061c"]


@pytest.mark.parametrize("char", BIDI)
def test_a_formula_holding_a_bidirectional_formatting_character_is_refused(char):
    from site_build import mathml

    page = f'<p>x <span class="arithmatex">\\(a{char}b\\)</span> y</p>'
    with pytest.raises(ValueError, match=rf"docs/x\.md.*U\+{ord(char):04X}"):
        mathml.render(page, "x.md")


@pytest.mark.parametrize("key", ["term", "definition", "expansion"])
def test_a_glossary_entry_holding_a_right_to_left_override_is_refused(tmp_path, key):
    from site_build import glossary

    entry = {"term": "key", "definition": "A pair.", "expansion": "a key"}
    entry[key] = entry[key][:1] + "\\u202E" + entry[key][1:]
    source = tmp_path / "glossary.yml"
    source.write_text("".join(f'{"- " if i == 0 else "  "}{k}: "{v}"\n' for i, (k, v) in enumerate(entry.items())),
                      encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{key} holds .*U\+202E"):
        glossary.terms(source)


# -- site_build.docstrings: a fence's info line inside another fence, and roles naming nothing -----------------

def test_a_fence_s_opening_line_inside_a_fence_does_not_close_it():
    """Markdown closes a fence only with a line of backticks (or tildes) alone: a ```` ```python ````
    line inside a ```` ``` ```` fence is the fence's text, so the ``>>>`` lines after it are too, and
    are not fenced again (whose fence the first one's closing line would end, leaving the rest of the
    docstring an open code block)."""
    from site_build.docstrings import markup

    text = "Example:\n\n```\n```python\n>>> 1 + 1\n2\n```\n\nAfter."
    assert markup(text) == text


@pytest.mark.parametrize("role", [":func:`.`", ":class:`~.`", ":func:`~pk.`", ":func:`pk..f`", ":meth:`..x`", ":func:`.x.`"])
def test_a_role_that_names_no_object_is_not_an_empty_link(role):
    """A role whose name is no dotted name (a dot alone, one at the end, two together) names no object:
    with ``~`` it was a link whose text was an empty code span (two backticks shown as text). It stays
    as typed, as a role of a kind the docstrings do not know does."""
    from site_build.docstrings import markup

    assert markup(f"See {role}.") == f"See {role}."


def test_a_relative_role_is_still_a_cross_reference():
    """Sphinx's ``.name`` (searched from the docstring's module) is a name: the library writes one."""
    from site_build.docstrings import markup

    assert markup("See :mod:`.compiler_target`.") == \
        'See <autoref identifier=".compiler_target" optional>`.compiler_target`</autoref>.'


def test_a_role_with_an_explicit_title_is_a_cross_reference_showing_the_title():
    """Sphinx's ``:meth:`title <target>``` (netcl_lite/core/replay.py writes two) was left as typed: the
    reference page showed ``:meth:`` and the code ``Stream.record <netcl_lite.core.stream.Stream.record>``."""
    from site_build.docstrings import markup

    assert markup("By :meth:`Stream.record <netcl_lite.core.stream.Stream.record>` here.") == \
        'By <autoref identifier="netcl_lite.core.stream.Stream.record" optional>`Stream.record`</autoref> here.'


# -- site_build.source_pages: a source file holding a bidirectional formatting character -----------------------

@pytest.mark.parametrize("char", ["\u202e", "\u2067", "\u200f"])
def test_a_source_file_holding_a_bidirectional_formatting_character_is_refused(tmp_path, monkeypatch, char):
    """Trojan source: Pygments copies a right-to-left override inside a string or a comment into the
    listing, where the line shows in an order that is not the code's. The page fails naming the file
    and the line instead."""
    from site_build import source_pages

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(f'x = 1\nif access != "user{char} ":  # admin\n    pass\n',
                                            encoding="utf-8")
    monkeypatch.setattr(source_pages, "ROOT", tmp_path)
    with pytest.raises(ValueError, match=rf"pkg/mod\.py:2: .*U\+{ord(char):04X}"):
        source_pages.listing("pkg/mod.py", [(1, 2)])
