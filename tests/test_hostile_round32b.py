"""Hostile round 32b: the build plugin's page-text stages (docstrings' roles, source pages' links back)."""

from __future__ import annotations

import html
import posixpath
import re
from urllib.parse import unquote, urlsplit

import markdown
import pytest

from site_build import docstrings, source_pages


def test_a_role_inside_a_code_span_that_goes_on_over_a_line_end_stays_as_typed():
    # Markdown reads a paragraph's code span over a line's end: ``a\n:func:`x` `` shows the role as text;
    # an autoref put inside it would show its HTML on the page, as text.
    text = "Use ``a\n:func:`x` `` here."
    assert docstrings.markup(text) == text
    html = markdown.markdown(docstrings.markup(text))
    assert "autoref" not in html


def test_roles_on_the_lines_of_a_paragraph_outside_its_code_spans_are_still_links():
    out = docstrings.markup("See :func:`a` and\n:func:`~m.b`.\n\n```\n:func:`c`\n```\nthen :func:`d`")
    assert out.count("<autoref") == 3 and ":func:`c`" in out


def _links_back(page: str) -> list[tuple[str, str]]:
    """(text, href) of the links back on the source page of kernels/bpe.cl shown on ``page``."""
    text = source_pages.markdown("kernels/bpe.cl", [(page, 1, 2)], "w.whl")
    page_html = markdown.markdown(text.split("---\n", 2)[2], extensions=["attr_list"])
    intro = page_html.split("Excerpts of it:", 1)[1].split(" shows ", 1)[0]
    return re.findall(r'<a href="([^"]*)">(.*?)</a>', intro)


@pytest.mark.parametrize("page", ["notes/#1.md", "a]b.md", "x/100%41.md", "my page.md", "a<b>c.md", "a*b*c.md"])
def test_the_link_back_to_a_page_whose_name_markdown_reads_leads_to_that_page_and_shows_its_name(page):
    # the link back goes to the page as MkDocs resolves it (the path unquoted, before any '#'),
    # and its text is the page's name, not Markdown read from it (emphasis, an HTML tag, a broken link)
    links = _links_back(page)
    assert len(links) == 1, links
    href, shown = links[0]
    here = posixpath.dirname(source_pages.uri("kernels/bpe.cl"))
    assert posixpath.normpath(posixpath.join(here, unquote(urlsplit(href).path))) == page
    assert "<" not in shown
    stem = page.removesuffix(".md").rsplit("/", 1)[-1]
    assert html.unescape(shown) == stem[0].upper() + stem[1:]


def test_a_page_that_reads_a_file_whose_name_is_not_utf8_is_recorded_and_rendered_again_when_it_changes(
        tmp_path, monkeypatch):
    # the audit hook records the name as os.fsdecode gives it (surrogate escapes); the digest of what the
    # page read must take that name, not fail the dirty build with UnicodeEncodeError
    import os
    import types

    from site_build.dirty_pages import DirtyPages

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    odd = os.path.join(os.fsencode(tmp_path), b"\xff-data.txt")
    with open(odd, "wb") as f:
        f.write(b"one")
    page, html = tmp_path / "a.md", tmp_path / "site" / "a" / "index.html"
    page.write_text("# A\n", encoding="utf-8")
    html.parent.mkdir(parents=True)
    html.write_text("<p>A</p>", encoding="utf-8")
    file = types.SimpleNamespace(src_uri="a.md", abs_src_path=str(page), abs_dest_path=str(html))
    files = types.SimpleNamespace(documentation_pages=lambda: [file])
    pages = DirtyPages(dirty=True)
    pages.invalidate(files)
    pages.rendering("a.md")
    with open(odd, "rb") as f:
        f.read()
    pages.rendered()
    assert os.fsdecode(odd) in {str(p) for p in pages.read["a.md"][0]}
    pages.invalidate(files)
    assert html.is_file()                        # nothing changed: kept
    with open(odd, "wb") as f:
        f.write(b"two, longer")
    pages.invalidate(files)
    assert not html.exists()                     # what it read changed: rendered again


def test_the_dirty_record_of_a_site_folder_whose_name_is_not_utf8_has_a_place_of_its_own(tmp_path, monkeypatch):
    import os
    from pathlib import Path

    from site_build.dirty_pages import DirtyPages

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    odd = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"\xff", b"site")))
    other = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"\xfe", b"site")))
    assert DirtyPages.record_path(odd) != DirtyPages.record_path(other)
    assert DirtyPages.record_path(odd).parent == DirtyPages.record_path(tmp_path / "site").parent


def test_a_line_that_starts_with_a_triple_backtick_code_span_opens_no_fence_in_a_docstring():
    # Markdown reads '```x``` is code.' as a paragraph (a backtick fence's line holds no other backtick):
    # the example and the role after it are still made a pycon fence and a link
    out = docstrings.markup("```x``` is code.\n\n>>> 1 + 1\n2\n\nSee :func:`f`.")
    assert "```pycon\n>>> 1 + 1\n2\n```" in out
    assert '<autoref identifier="f" optional>' in out
    # a fence's own lines are still left alone, its info string included
    fenced = "```python\n>>> 1\n:func:`g`\n```"
    assert docstrings.markup(fenced) == fenced


def test_a_filter_that_is_a_callable_object_keys_the_template_cache_by_the_code_it_runs():
    # Jinja folds a filter on constants as it compiles ({{ 'Ab'|shout }} is compiled to 'AB'): a filter
    # whose __call__ now runs other code must not load templates compiled with the old one
    import types

    import jinja2

    from site_build.templates import environment_key

    def environment(body: str) -> jinja2.Environment:
        module = types.ModuleType("hostile_filters")
        exec(f"class Shout:\n    def __call__(self, s):\n        return {body}\n", module.__dict__)
        env = jinja2.Environment()
        env.filters["shout"] = module.Shout()
        return env

    upper, lower = environment("s.upper()"), environment("s.lower()")
    assert "'AB'" in upper.compile("{{ 'Ab'|shout }}", raw=True)
    assert environment_key(upper) != environment_key(lower)
    assert environment_key(upper) == environment_key(environment("s.upper()"))


def test_a_filter_that_is_a_bound_method_keys_the_template_cache_by_its_object_s_state():
    # a plugin's method as a filter reads its object's settings; Jinja folds it on constants as it
    # compiles ({{ 'x'|prefixed }} is compiled to 'ax'): other settings must not load that code
    import jinja2

    from site_build.templates import environment_key

    class Prefixer:
        def __init__(self, prefix: str):
            self.prefix = prefix

        def apply(self, s: str) -> str:
            return self.prefix + s

    def environment(prefix: str) -> jinja2.Environment:
        env = jinja2.Environment()
        env.filters["prefixed"] = Prefixer(prefix).apply
        return env

    assert "'ax'" in environment("a").compile("{{ 'x'|prefixed }}", raw=True)
    assert environment_key(environment("a")) != environment_key(environment("b"))
    assert environment_key(environment("a")) == environment_key(environment("a"))


def test_measured_results_nested_deeper_than_json_recurses_fail_naming_the_file(tmp_path):
    # a kernels.json of arrays nested 100 000 deep makes json.loads raise RecursionError: the build
    # must fail with the message that names the results file, as for one truncated
    import shutil
    from pathlib import Path

    from site_build.measured import REPORT, MeasuredSections

    report = tmp_path / "report_kernels.py"
    shutil.copy(REPORT, report)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "kernels.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(ValueError, match=r"kernels\.json: the measured results .* cannot be read \(RecursionError"):
        MeasuredSections(Path(report))


@pytest.mark.parametrize("nested", ["x = " + "[" * 100_000 + "]" * 100_000, "x = " + "{a = " * 5_000 + "1" + "}" * 5_000])
def test_a_pyproject_nested_deeper_than_tomllib_recurses_is_a_value_error_naming_the_file(nested):
    from site_build.paths import pyproject_version

    with pytest.raises(ValueError, match=r"^pyproject\.toml: not valid TOML"):
        pyproject_version(f'[project]\nversion = "1.0"\n{nested}\n')


def test_reading_the_excerpts_of_a_page_is_linear_on_a_fence_line_that_repeats_the_excerpt_class():
    # '```{' then '.excerpt ' many times and no '}': a pattern with the class between two runs of
    # [^}\n]* tried the second run from each of the class's places (16 000 of them took seconds)
    import time

    def seconds(n: int) -> float:
        text = "```{" + ".excerpt " * n + "\nx\n"
        start = time.perf_counter()
        assert source_pages.excerpts({"p.md": text}) == {}
        return time.perf_counter() - start

    seconds(100)
    assert seconds(64_000) < 1.0


def test_an_excerpt_fence_right_after_another_fence_s_opening_line_is_still_found(monkeypatch):
    import site_build.copyable as copyable

    monkeypatch.setattr(copyable, "section_lines", lambda path, section, where: (3, 4))
    text = '```{.python}\n```{.python .excerpt}\n--8<-- "kernels/bpe.cl:merge"\n```\n'
    assert source_pages.excerpts({"p.md": text}) == {"kernels/bpe.cl": [("p.md", 3, 4)]}


# found by a differential fuzz of Tags.end against the tokenizer's states: a quote inside the tag's name or an
# attribute's name is part of that name, and an '=' that starts an attribute is its name
@pytest.mark.parametrize("text, end", [
    ('<a "=\n">', None),              # '"' is an attribute's name; its '=' opens a quoted value never closed
    ('<a/=b="b=> >b=', None),         # after '/', '=b' is an attribute's name; its value is never closed
    ('<a"aa=">"= \nb=', 8),           # the tag's name is 'a"aa="': no attribute, the first '>' ends it
])
def test_a_malformed_tag_ends_where_a_browser_ends_it(text, end):
    from site_build.tags import Tags

    assert Tags(text).end(0) == end
