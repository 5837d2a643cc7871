"""Issue 58, independent hostile check, round 9: reproducers of defects found in the fixes of round 8
and in the code around them.

Each test asserts the correct behaviour and is marked ``xfail(strict=True)`` until its fix lands; run
with ``--runxfail`` to see each one fail for the reason it states.
"""

from __future__ import annotations

import markdown
import pytest

from site_build import includes, mathml
from site_build.markers import page_extensions
from site_render import ROOT, render_page


def render(root, monkeypatch, page: str, files: dict[str, str]) -> str:
    """``page`` rendered as the site renders it (its Markdown extensions, includes contained), with
    ``files`` under ``root/snippets``."""
    (root / "snippets").mkdir(exist_ok=True)
    for name, text in files.items():
        (root / "snippets" / name).write_bytes(text.encode("utf-8"))
    monkeypatch.chdir(root)                       # pymdownx.snippets reads includes from here
    names, configs = page_extensions()
    snippets = includes.contained_snippets(includes.CurrentPage("docs/hostile.md", page),
                                           base_path=["."], check_paths=True, dedent_subsections=True)
    return markdown.Markdown(extensions=[*names, snippets], extension_configs=configs).convert(page)


@pytest.mark.xfail(strict=True, reason="round 9: the page include bound counts a whole file for each section "
                                       "of it a page includes, so a page of short excerpts of one large file "
                                       "is refused")
def test_a_page_of_short_sections_of_one_large_file_is_not_refused(tmp_path, monkeypatch):
    # a library file the size of the largest one (netcl_lite/compression.py is over 70 KB) with 15 marked
    # sections of one line each: a page showing all 15 brings in 15 short lines, under 1 KB
    n, filler = 15, "# " + "y" * 70
    body = []
    for k in range(n):
        body += [f"# --8<-- [start:s{k}]", f"x_{k} = {k}", f"# --8<-- [end:s{k}]"] + [filler] * 68
    text = "\n".join(body) + "\n"
    assert includes.PAGE_INCLUDE_LIMIT // n < len(text.encode()) < 100_000      # one such file, under 100 KB
    page = "# Hostile\n\n" + "".join(f'```python\n--8<-- "snippets/big.py:s{k}"\n```\n\n' for k in range(n))
    html = render(tmp_path, monkeypatch, page, {"big.py": text})
    assert all(f"x_{k}" in html for k in range(n))


TILDE_EXCERPTS = {
    "tildes": '~~~{.python .excerpt title="netcl_lite/capstone.py"}\n--8<-- "netcl_lite/capstone.py:recipe"\n~~~\n',
    "a space before the braces": ('``` {.python .excerpt title="netcl_lite/capstone.py"}\n'
                                  '--8<-- "netcl_lite/capstone.py:recipe"\n```\n'),
    "the language first": ('```python {.excerpt title="netcl_lite/capstone.py"}\n'
                           '--8<-- "netcl_lite/capstone.py:recipe"\n```\n'),
    "line ranges under tildes": '~~~{.python .excerpt}\n--8<-- "netcl_lite/capstone.py:1:5"\n~~~\n',
}


@pytest.mark.xfail(strict=True, reason="round 9: an excerpt fence written in a form superfences takes but the "
                                       "build does not read (tildes, a space before the braces, the language "
                                       "first) shows as an excerpt with no label, a copy button and no checks")
@pytest.mark.parametrize("form", sorted(TILDE_EXCERPTS))
def test_an_excerpt_fence_in_any_form_superfences_takes_is_labelled_or_refused(monkeypatch, form):
    monkeypatch.chdir(ROOT)                       # the site's includes are read from here
    excerpt = '```{.python .excerpt title="netcl_lite/capstone.py"}\n--8<-- "netcl_lite/capstone.py:recipe"\n```\n'
    labelled = render_page("# Hostile\n\n" + excerpt)
    assert "Excerpt ·" in labelled and "no-copy" in labelled   # how an excerpt on the page shows
    try:
        html = render_page("# Hostile\n\n" + TILDE_EXCERPTS[form])
    except ValueError as err:                                  # refused: it must name the page and line
        assert str(err).startswith("docs/hostile.md:3"), str(err)
        return
    assert "excerpt" in html                                   # superfences made it an excerpt block
    assert "Excerpt ·" in html and "no-copy" in html, \
        f"an excerpt fence with {form} shows unlabelled, with a copy button, unchecked"


@pytest.mark.xfail(strict=True, reason="round 9: a formula the converter rejects fails the build naming the page "
                                       "but not its line, which the bound errors name")
def test_a_rejected_formula_names_the_page_s_line(tmp_path, monkeypatch):
    monkeypatch.setattr(mathml, "DOCS", tmp_path)
    (tmp_path / "hostile.md").write_text("# Hostile\n\nText.\n\n$$\n\\frac{1}\n$$\n", encoding="utf-8")
    deep = "{" * 150 + "x" + "}" * 150                         # over the bound: its error names the line
    (tmp_path / "deep.md").write_text(f"# Deep\n\nText.\n\n$$\n{deep}\n$$\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^deep\.md:6: "):
        mathml.render(f'<div class="arithmatex">\\[\n{deep}\n\\]</div>', "deep.md")
    with pytest.raises(ValueError) as err:
        mathml.render('<div class="arithmatex">\\[\n\\frac{1}\n\\]</div>', "hostile.md")
    assert str(err.value).startswith("hostile.md:6: "), str(err.value)
