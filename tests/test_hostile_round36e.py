"""Hostile round 36e: the snippet wrapper (runner._MAIN) and the check for python blocks the doc tests skip."""

from __future__ import annotations

import io
import subprocess

import pytest
from pytest_codeblocks import extract_from_buffer

from site_build import copyable
from site_build.runner import python_command
from tests.doc_blocks import normalize


@pytest.mark.parametrize("name", ["type", "BaseException"])
def test_snippet_global_named_like_a_builtin_does_not_break_the_wrappers_error_report(tmp_path, name):
    """A snippet is a script: a module-level ``type = "linear"`` (or ``BaseException``)
    is its own business. The wrapper's ``_run`` shares the snippet's globals (``__main__.__dict__``), so
    its except clause looks those names up there: the snippet's ValueError is then followed by the
    wrapper's own "During handling ... TypeError: 'str' object is not callable" from ``<string>``, and
    the error tail a failing build shows ends in the wrapper's traceback, not the snippet's error."""
    script = tmp_path / "snippet.py"
    script.write_text(f'{name} = "linear"\nraise ValueError("boom")\n', encoding="utf-8")
    run = subprocess.run(python_command(script), capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert "<string>" not in run.stderr, run.stderr
    assert "During handling" not in run.stderr, run.stderr
    assert run.stderr.rstrip().endswith("ValueError: boom"), run.stderr


@pytest.mark.parametrize("page", [
    '```python title="a`b"\nprint(1)\n```\n',
    '```{.python title="x`y"}\nprint(3)\n```\n',
])
def test_python_block_with_a_backtick_in_its_info_string_is_run_or_refused(page):
    """superfences renders these as highlighted python blocks, but tests/doc_blocks.normalize's fence
    pattern takes no backtick in the info string, so the fence stays ``python title="a`b"`` and
    pytest-codeblocks (which keeps only syntax == "python") never runs it; check_python_blocks lets
    it pass as a block that runs. Either the doc tests run it or the build refuses it naming the page."""
    runs = [b for b in extract_from_buffer(io.StringIO(normalize(page))) if b.syntax == "python"]
    if runs:
        return
    with pytest.raises(ValueError, match=r"docs/p\.md:1"):
        copyable.check_python_blocks(page, "p.md")


@pytest.mark.parametrize("page", [
    '<div style="background:u\\rl(//evil.example/a.png)"></div>',
    '<div style="background:\\75rl(//evil.example/a.png)"></div>',
    '<style>body{background:u\\72 l(//evil.example/a.png)}</style>',
    '<style>@imp\\ort "//evil.example/a.css";</style>',
])
def test_offline_check_reads_css_escapes_in_url_and_import(page):
    """CSS reads an escape in an identifier or at-keyword as the character it names: ``u\\rl(`` and
    ``\\75rl(`` are ``url(`` and ``@imp\\ort`` is ``@import`` (CSS Syntax: an ident sequence's escapes are
    consumed before the name is compared to "url"), so a browser fetches evil.example. offline's
    tokenizer matches only the literal ``url(`` and ``@import``: no remote reference is reported."""
    from site_build.offline import remote_references

    assert remote_references(page), page


def test_glossary_see_refuses_a_page_mkdocs_excludes(tmp_path, monkeypatch):
    """MkDocs never builds a file under docs/templates/ (its default exclusion, with dot files), and a
    Markdown link to one is logged at INFO only, which a strict build lets pass. glossary._is_page
    accepts ``see: templates/intro.md`` because the file exists, so the Glossary page links a page the
    site does not have: a dead link in a build that succeeds. It must fail naming the entry."""
    from site_build import glossary

    docs = tmp_path / "docs"
    (docs / "templates").mkdir(parents=True)
    (docs / "templates" / "intro.md").write_text("# Intro\n", encoding="utf-8")
    source = docs / "glossary.yml"
    source.write_text("- term: kernel\n  definition: A function run on a device.\n  see: templates/intro.md\n",
                      encoding="utf-8")
    monkeypatch.setattr(glossary, "DOCS", docs)
    monkeypatch.setattr(glossary, "SOURCE", source)
    with pytest.raises(ValueError, match="kernel"):
        glossary.glossary("glossary.md", glossary.terms(source))


@pytest.mark.parametrize("config, name", [
    (b"site_name: t\nmarkdown_extensions:\n  - pymdownx.superfences:\n      custom_fences:\n"
     b"        - name: mermaid\n          class: mermaid\n"
     b"          format: !!python/name:pymdownx.superfences.fence_code_format\n", "pymdownx.superfences"),
    (b"site_name: t\nmarkdown_extensions:\n  - toc:\n      permalink: !ENV [PERMALINK, true]\n", "toc"),
])
def test_page_extensions_reads_mkdocs_yml_as_mkdocs_does(config, name):
    """mkdocs.yml may use the tags MkDocs' own loader reads: ``!!python/name:`` (Material's documented
    Mermaid fence) and ``!ENV``. MkDocs builds with them, but markers.page_extensions (which the
    indented-code scanner and the citations' extensions are made from) reads the bytes with
    yaml.safe_load, so the build stops in a marker scan with a bare yaml ConstructorError traceback
    naming '<unicode string>'. It must read the file as MkDocs reads it."""
    from site_build import markers

    names, _ = markers.page_extensions(config)
    assert name in names


@pytest.mark.parametrize("charset, bom", [("", b"\xff\xfe"), (";charset=utf-16le", b"")])
def test_offline_check_reads_a_data_url_page_in_utf16(charset, bom):
    """A ``data:`` URL of HTML is read by a browser in the encoding its BOM names (BOM sniffing comes
    first), else its ``charset`` parameter: a UTF-16 page is as real a page as a UTF-8 one, and its
    ``<img src=//evil.example/a>`` is fetched. offline decodes every data: page as UTF-8, sees NULs
    between the letters and reports nothing."""
    import base64

    from site_build.offline import remote_references

    page = bom + "<img src=//evil.example/a>".encode("utf-16le")
    url = f"data:text/html{charset};base64,{base64.b64encode(page).decode()}"
    assert remote_references(f'<iframe src="{url}"></iframe>'), url


@pytest.mark.parametrize("unit", ['<code>$</code> x$ ', '<span title="a $b">c$</span> ', '$a <b title="$">'])
def test_formulas_declined_in_raw_html_are_read_in_linear_time(monkeypatch, unit):
    """RawHtmlMath's note says each search starts past the last declined formula (linear). A paragraph of
    n units ``<code>$</code> x$`` makes arithmatex's handleMatch run n times, and each walks
    ``_RawContexts.raw_end`` back over every formula declined before it: n²/2 calls (2,001,000 for
    n = 2000; a page of 2000 such units takes seconds where the same text without '$' takes 0.1 s).
    Counted, not timed: doubling n must not quadruple the calls."""
    from site_build import mathml
    from site_render import render_page

    calls = [0]
    raw_end = mathml._RawContexts.raw_end

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return raw_end(self, *args, **kwargs)

    monkeypatch.setattr(mathml._RawContexts, "raw_end", counted)
    counts = []
    for n in (200, 400):
        calls[0] = 0
        render_page("# T\n\n" + unit * n + "\n")
        counts.append(calls[0])
    assert counts[1] < 3 * max(counts[0], 1), counts


def test_a_snippet_holding_a_nul_byte_fails_naming_its_file_and_line(tmp_path):
    """``python <script>`` of a file with a NUL byte on line 2 says ``File ".../snippet.py", line 2`` and
    ``SyntaxError: source code cannot contain null bytes``. The wrapper compiles the bytes itself, and
    compile() of a string says only ``SyntaxError: source code string cannot contain null bytes``: the
    failing build's error tail names neither the snippet nor the line."""
    script = tmp_path / "snippet.py"
    script.write_bytes(b"x = 1\nprint(x)\x00\n")
    run = subprocess.run(python_command(script), capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert "snippet.py" in run.stderr and "line 2" in run.stderr, run.stderr


def test_a_formula_starting_inside_noscript_leaves_its_end_tag_alone():
    """A browser with scripting on (every reader of the site) reads a ``<noscript>`` element's content as
    raw text up to ``</noscript>``, as it does ``<textarea>``, ``<xmp>``, ``<noembed>`` and ``<iframe>``,
    whose ``$`` RawHtmlMath leaves as written. ``<noscript>$a</noscript> b$`` is made one formula: the end
    tag becomes ``<mo>&lt;</mo><mo>/</mo><mi>n</mi>…`` and the noscript element is never closed, so the
    browser hides the rest of the page inside it. The end tag must stay a tag (or the build fail naming
    the page)."""
    from site_render import render_page

    try:
        html = render_page("# T\n\nA <noscript>$a</noscript> b$.\n")
    except (ValueError, RuntimeError) as err:
        assert "hostile.md" in str(err)
        return
    body = html[html.find("</h1>"):]
    assert "</noscript>" in body, body
    assert "<math" not in body.split("</noscript>")[0], body


@pytest.mark.parametrize("info", ["Python", "PYTHON", "py3", ".python"])
def test_a_fence_pygments_highlights_as_python_is_run_or_refused(info):
    """Pygments finds its lexer by any case of a name or alias, and superfences takes a leading '.' as
    part of the language: ```` ```Python ````, ```` ```PYTHON ````, ```` ```py3 ```` and ```` ```.python ````
    are all shown as highlighted Python (the last even with class ``language-python``). The doc tests
    (tests/doc_blocks.normalize: python, py, python3 exactly) never run them, and check_python_blocks,
    which promises that every python block on a page runs, lets them pass."""
    page = f"```{info}\nprint(1)\n```\n"
    runs = [b for b in extract_from_buffer(io.StringIO(normalize(page))) if b.syntax == "python"]
    if runs:
        return
    with pytest.raises(ValueError, match=r"docs/p\.md:1"):
        copyable.check_python_blocks(page, "p.md")


@pytest.mark.parametrize("page, closed", [
    ("# T\n\nA <b>$a</b> <i>b$</i>.\n", ["</b>", "<i>"]),
    ("# T\n\nA <span>$a</span> b$.\n", ["</span>"]),
    ("# T\n\nA <span title=\"x\">\\(a</span> b\\).\n", ["</span>"]),
])
def test_a_formula_that_closes_a_tag_opened_before_it_leaves_the_tag_alone(page, closed):
    """RawHtmlMath keeps a formula that holds a whole tag (``\\(x <img src=x> y\\)``). But a formula that
    holds only the end of an element opened before it (``<b>$a</b> <i>b$</i>``) turns that end tag into
    MathML operators: the page gets ``<b><math>…<mo>&lt;</mo><mo>/</mo><mi>b</mi>…</math></i>``, its
    ``<b>`` never closed (a browser carries the bold on through the following paragraphs) and a stray
    ``</i>``. The tags must stay tags (or the build fail naming the page)."""
    from site_render import render_page

    try:
        html = render_page(page)
    except (ValueError, RuntimeError) as err:
        assert "hostile.md" in str(err)
        return
    body = html[html.find("</h1>"):]
    for tag in closed:
        assert tag in body, body
