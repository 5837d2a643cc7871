"""Round 27b, an independent hostile check of the build plugin: pyproject.toml's version as the
wheel carries it (:func:`site_build.paths.pyproject_version`), what includes bring into a page
(:mod:`site_build.brought`, :mod:`site_build.includes`), and pages with odd names, front matter,
line endings and markers, called through the plugin's functions on small pages."""

from __future__ import annotations

import pytest

from site_build import paths

HEAD = '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n[project]\nname = "netcl_lite"\n'


@pytest.mark.parametrize("raw, normal", [("1.0-RC1", "1.0rc1"), ("v0.1.0", "0.1.0"), ("0.1.0-post1", "0.1.0.post1"),
                                         (" 0.1.0 ", "0.1.0"), ("01.2", "1.2")])
def test_the_version_is_the_one_hatchling_names_the_wheel_with(raw, normal):
    """A version PEP 440 accepts but writes otherwise was returned as written: the build looked for
    netcl_lite-1.0-RC1-py3-none-any.whl where hatchling wrote netcl_lite-1.0rc1-..., and failed asking
    whether hatchling is installed; the drill notebook compared the installed '1.0rc1' with '1.0-RC1'
    and installed the wheel again each time (or at a link the site does not serve)."""
    assert paths.pyproject_version(HEAD + f'version = "{raw}"\n') == normal


@pytest.mark.parametrize("raw", ['1.0"; import os #', "1.0/../x", "é" * 3, "1" * 5 + "x" * 5000])
def test_a_version_that_is_no_pep_440_version_is_refused_by_name(raw):
    """A version hatchling refuses (a quote, a slash, letters) was returned as written and put into a
    Python string of the drill notebook's first cell and into the wheel's file name (a quote ended the
    string; a slash made the name a path)."""
    import json
    with pytest.raises(ValueError, match=r"pyproject\.toml: \[project\]\.version .* is not a PEP 440 version"):
        paths.pyproject_version(HEAD + f"version = {json.dumps(raw)}\n")


# -- what MkDocs takes of a page as metadata -----------------------------------------------------------


def _read_page(tmp_path, text: str):
    """The page ``docs/p.md`` holding ``text`` (bytes as written), read as MkDocs reads it."""
    from mkdocs.config import load_config
    from mkdocs.structure.files import File
    from mkdocs.structure.pages import Page

    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n", encoding="utf-8")
    (tmp_path / "docs" / "p.md").write_bytes(text.encode("utf-8"))
    config = load_config(str(tmp_path / "mkdocs.yml"))
    page = Page(None, File("p.md", config.docs_dir, config.site_dir, False), config)
    page.read_source(config)
    return page


@pytest.mark.parametrize("text", ["Warning: this kernel runs for an hour on a CPU.\nIt needs a GPU.\n\n# T\n",
                                  "Note: read Chapter 2 first.\n\n# T\n",
                                  "\ufeffTip: x\r\n# T\r\n"])
def test_a_first_line_mkdocs_reads_as_metadata_is_refused(tmp_path, text):
    """A page whose first line reads 'Word: text' lost that line without a word: MkDocs reads it as
    MultiMarkdown metadata (key 'warning') and the page began at its second line."""
    from site_build.plugin import check_metadata

    page = _read_page(tmp_path, text)
    assert page.meta                                   # what MkDocs did
    with pytest.raises(ValueError, match=r"^docs/p\.md:1: .*MultiMarkdown metadata"):
        check_metadata(page, page.markdown)


@pytest.mark.parametrize("text, line", [("---\ntitle: a: b\n---\n# T\n", 2), ("---\n- a\n- b\n---\n# T\n", 1),
                                        ("---\ntitle: x\n  bad: [\n---\n# T\n", 3)])
def test_front_matter_mkdocs_cannot_read_is_refused(tmp_path, text, line):
    """Front matter that is not valid YAML, or a list, was shown as the page's text (a rule and a
    heading 'title: a: b') with no error: MkDocs keeps a block it cannot read as a mapping."""
    from site_build.plugin import check_metadata

    page = _read_page(tmp_path, text)
    assert page.markdown.startswith("---")            # what MkDocs did
    with pytest.raises(ValueError, match=rf"^docs/p\.md:{line}: the page's front matter"):
        check_metadata(page, page.markdown)


@pytest.mark.parametrize("text", ["---\ntitle: Chapter\n---\n# T\n", "# T\n\nNote: text\n", "---\nx\n---\n",
                                  "", "---\ntitle: a\n---\n", "Title\n=====\n", "\ufeff# T\r\nbody\r"])
def test_pages_mkdocs_reads_whole_pass(tmp_path, text):
    """Pages whose every line MkDocs shows or reads as front matter pass."""
    from site_build.plugin import check_metadata

    page = _read_page(tmp_path, text)
    check_metadata(page, page.markdown)


def test_the_markdown_hook_refuses_a_first_line_read_as_metadata(tmp_path):
    """The plugin's ``on_page_markdown`` rendered the page without its first line 'Warning: ...'."""
    from types import SimpleNamespace

    from site_build import build_output, measured
    from site_build.plugin import BuildState, SiteBuild

    page = _read_page(tmp_path, "Warning: this kernel runs for an hour on a CPU.\nIt needs a GPU.\n")
    plugin = SiteBuild()
    plugin.state = BuildState(outputs=build_output.BuildOutputs(lambda: "t"), measured=measured.MeasuredSections())
    with pytest.raises(ValueError, match=r"^docs/p\.md:1: 'Warning: this kernel"):
        plugin.on_page_markdown(page.markdown, page=page, config=SimpleNamespace(site_url="http://x/"), files=None)


# -- markers inside raw HTML blocks --------------------------------------------------------------------


@pytest.mark.parametrize("text, line", [("<div>\n<!-- kernels.json: gemm -->\n</div>\n", 2),
                                        ("<div>\n\n<!-- kernels.json: gemm -->\n\n</div>\n", 3),
                                        ("# T\n\n<pre>\n<!-- kernels.json: gemm -->\n</pre>\n", 4),
                                        ("<script>\n<!-- kernels.json: gemm -->", 2)])
def test_a_marker_inside_a_raw_html_block_is_refused(text, line):
    """A marker inside a raw HTML block (``<div>`` without ``markdown``, ``<pre>``, ``<script>``) was
    replaced by its Markdown, which the block passes through as written: the page showed the measured
    section's backticks and table pipes as raw text, with no error."""
    from site_build import markers

    with pytest.raises(markers.MarkerError, match=rf"^docs/p\.md:{line}: .* stands inside a raw HTML block"):
        markers.replace(text, "docs/p.md", {"kernels.json": lambda m: "| a |\n|---|\n| `b` |"})


@pytest.mark.parametrize("text", ["<div markdown>\n<!-- kernels.json: gemm -->\n</div>\n",
                                  "<div>x</div>\n\n<!-- kernels.json: gemm -->\n",
                                  "<img src=x>\n<!-- kernels.json: gemm -->\n",
                                  "<details markdown>\n<summary>s</summary>\n\n<!-- kernels.json: gemm -->\n\n</details>\n",
                                  "text\n\n<!-- kernels.json: gemm -->"])
def test_a_marker_markdown_reads_is_replaced(text):
    """A marker outside raw HTML (after a closed block, in a ``markdown`` block, at the end of the file
    with no newline) is replaced as before."""
    from site_build import markers

    assert "KJ" in markers.replace(text, "docs/p.md", {"kernels.json": lambda m: "KJ"})


# -- an include of an empty file -----------------------------------------------------------------------


@pytest.mark.parametrize("body", ["", "\n\n", "\ufeff", " \t\r\n"])
@pytest.mark.parametrize("nested", [False, True])
def test_an_include_of_an_empty_file_is_refused(tmp_path, monkeypatch, body, nested):
    """An include of an empty (or blank) file showed nothing in its place, with no error: a file
    emptied by mistake left a hole in the page. (A section or line range that selects no line was
    already refused.)"""
    from site_render import render_with_includes

    files = {"empty.md": body, "outer.md": 'Outer\n\n--8<-- "snippets/empty.md"\n'}
    page = f'# P\n\n--8<-- "snippets/{"outer.md" if nested else "empty.md"}"\n\nafter\n'
    with pytest.raises(ValueError, match=r'^docs/hostile\.md:3: (in snippets/outer\.md:3: )?--8<-- "snippets/empty\.md": '
                                         r'.* is empty'):
        render_with_includes(tmp_path, monkeypatch, page, files)


def test_an_include_of_a_file_with_text_still_shows_it(tmp_path, monkeypatch):
    """A file with a line of text is brought in as before."""
    from site_render import render_with_includes

    html = render_with_includes(tmp_path, monkeypatch, '# P\n\n--8<-- "snippets/one.md"\n', {"one.md": "one\n"})
    assert "<p>one</p>" in html


# -- the citation an include brings, as its error shows it ---------------------------------------------


@pytest.mark.parametrize("text, shown", [("As shown by @vaswani2017attention, it works.\n", "'@vaswani2017attention'"),
                                         ("See [@vaswani2017attention] here.\n", "'[@vaswani2017attention]'"),
                                         ("Unlike -@vaswani2017attention, x.\n", "'-@vaswani2017attention'"),
                                         ("@vaswani2017attention says so.\n", "'@vaswani2017attention'")])
def test_the_error_for_a_brought_citation_shows_the_citation(tmp_path, monkeypatch, text, shown):
    """A citation an include brings in the middle of a line was shown in the error as '@' alone: the
    citation was read from one character before its '@' (for a bracket), and a space there matched
    nothing."""
    import markdown

    from site_build import brought, includes
    from site_build.markers import page_extensions

    (tmp_path / "snippets").mkdir()
    (tmp_path / "snippets" / "cite.md").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    page = '# P\n\nText.\n\n--8<-- "snippets/cite.md"\n'
    current = includes.CurrentPage("docs/p.md", page)
    names, configs = page_extensions()
    snippets = includes.contained_snippets(current, base_path=["."], check_paths=True, dedent_subsections=True)
    md = markdown.Markdown(extensions=[*names, snippets, brought.BroughtChecked(current)], extension_configs=configs)
    with pytest.raises(ValueError) as err:
        md.convert(page)
    assert str(err.value).startswith(f'docs/p.md:5: --8<-- "snippets/cite.md": brings the citation {shown} ')


def test_a_key_given_twice_in_the_front_matter_is_refused(tmp_path):
    """Front matter that gives ``title`` twice got the last one from MkDocs, without a word: the title
    the author edited above a stale copy was not the page's."""
    from site_build.plugin import check_metadata

    page = _read_page(tmp_path, "---\ntitle: New title\nsearch:\n  exclude: true\ntitle: Old title\n---\n# T\n")
    assert page.meta["title"] == "Old title"           # what MkDocs did
    with pytest.raises(ValueError, match=r"^docs/p\.md:5: the front matter gives 'title' again \(first on line 2\)"):
        check_metadata(page, page.markdown)
