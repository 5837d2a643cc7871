"""Issue 58, independent hostile check, round 10: reproducers of defects found in the fixes of round 9
and in the code around them.

Each test asserts the correct behaviour and is marked xfail (strict) until its defect is fixed.
"""

from __future__ import annotations

import time

import pytest

from site_render import render_page


def _included(tmp_path, monkeypatch, files: dict[str, str]) -> None:
    (tmp_path / "snippets").mkdir()
    for name, text in files.items():
        (tmp_path / "snippets" / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)                   # the site's includes are read from here


#: an include that repeats, around what it brings, the page's own lines that follow it: the alignment of
#: brought.py finds the page's lines inside the include's text and takes what lies between for the page's
BETWEEN = "Intro.\n\nFirst own line.\n\n{}\n\nSecond own line.\n\nOutro.\n"
PAGE = '# Hostile\n\n--8<-- "snippets/a.md"\n\nFirst own line.\n\nSecond own line.\n\n--8<-- "snippets/b.md"\n'


def test_a_citation_between_copies_of_the_page_s_lines_is_refused(tmp_path, monkeypatch):
    _included(tmp_path, monkeypatch, {"a.md": BETWEEN.format("The Transformer [@nosuchwork2099x] changed it."),
                                      "b.md": "Closing words.\n"})
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:3: .*nosuchwork2099x"):
        render_page(PAGE)


def test_an_excerpt_fence_between_copies_of_the_page_s_lines_is_refused(tmp_path, monkeypatch):
    from site_render import ROOT
    fence = '```{.python .excerpt title="netcl_lite/capstone.py"}\n--8<-- "netcl_lite/capstone.py:recipe"\n```'
    _included(tmp_path, monkeypatch, {"a.md": BETWEEN.format(fence), "b.md": "Closing words.\n"})
    (tmp_path / "netcl_lite").symlink_to(ROOT / "netcl_lite")
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:3: .*excerpt"):
        render_page(PAGE)


def test_a_figure_between_copies_of_the_page_s_lines_names_its_include(tmp_path, monkeypatch):
    from site_build import generated
    (tmp_path / "figures" / "hostile").mkdir(parents=True)
    (tmp_path / "figures" / "hostile" / "f.svg").write_text(
        "<svg><metadata><dc:description>A curve of 3 points</dc:description></metadata></svg>", encoding="utf-8")
    monkeypatch.setattr(generated, "FIGURES", tmp_path / "figures")
    _included(tmp_path, monkeypatch, {"a.md": BETWEEN.format("![a curve](figures/hostile/f.svg)"),
                                      "b.md": "Closing words.\n"})
    with pytest.raises(ValueError) as err:
        render_page(PAGE)
    assert str(err.value).startswith("docs/hostile.md:3: "), str(err.value)


@pytest.mark.parametrize("unit,n", [("![a", 8000), ("<img src=", 5000)], ids=["image-openings", "img-openings"])
def test_many_unclosed_image_openings_are_scanned_quickly(unit, n):
    from site_build import generated
    text = "# Hostile\n\n" + unit * n + "\n"
    start = time.perf_counter()
    generated.uncaptioned(text)
    assert time.perf_counter() - start < 1.0


def test_an_include_followed_by_a_comment_over_two_lines_is_written_in(tmp_path, monkeypatch):
    from netcl_lite.core import kernels

    (tmp_path / "common.h").write_text("#define TWO 2\n", encoding="utf-8")
    (tmp_path / "a.cl").write_text('#include "common.h" /* shared\n   helpers */\n'
                                   "__kernel void k(__global float *x) { x[0] = TWO; }\n", encoding="utf-8")
    monkeypatch.setattr(kernels, "kernel_dir", lambda: tmp_path)
    source = kernels.kernel_source("a.cl")
    assert "#define TWO 2" in source, f"the include was not written in: {source!r}"


def test_an_include_inside_a_block_comment_is_not_read(tmp_path, monkeypatch):
    from netcl_lite.core import kernels

    (tmp_path / "b.cl").write_text('/* no longer used:\n#include "gone.h"\n*/\n'
                                   "__kernel void k(__global float *x) { x[0] = 2; }\n", encoding="utf-8")
    monkeypatch.setattr(kernels, "kernel_dir", lambda: tmp_path)
    source = kernels.kernel_source("b.cl")
    assert "__kernel void k" in source


def test_a_matplotlibrc_one_run_writes_does_not_reach_the_next(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from site_build import runner

    first = runner.reader_env()
    rc = Path(first["MPLCONFIGDIR"]) / "matplotlibrc"
    try:
        subprocess.run([sys.executable, "-c", "import os, pathlib; pathlib.Path(os.environ['MPLCONFIGDIR'], "
                        "'matplotlibrc').write_text('lines.linewidth: 9\\n')"], env=first, check=True, timeout=30)
        second = runner.reader_env()
        assert not (Path(second["MPLCONFIGDIR"]) / "matplotlibrc").exists(), \
            "the next snippet's matplotlib reads the settings an earlier snippet wrote"
    finally:
        rc.unlink(missing_ok=True)


def test_an_excerpt_fence_brought_is_refused_beside_a_removed_look_alike(tmp_path, monkeypatch):
    from site_render import ROOT
    fence = '```{.python .excerpt title="netcl_lite/capstone.py"}\n--8<-- "netcl_lite/capstone.py:recipe"\n```\n'
    _included(tmp_path, monkeypatch, {"ex.md": fence})
    (tmp_path / "netcl_lite").symlink_to(ROOT / "netcl_lite")
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:3: .*excerpt"):   # alone, it is refused
        render_page('# Hostile\n\n--8<-- "snippets/ex.md"\n')
    shown = "````markdown\n```{.python .excerpt} --8<-- [start:x]\n````\n\n"
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:7: .*excerpt"):
        render_page(f'# Hostile\n\n{shown}--8<-- "snippets/ex.md"\n')


def test_a_tilde_excerpt_fence_with_a_backtick_in_its_attributes_is_labelled_or_refused(monkeypatch):
    from site_render import ROOT
    monkeypatch.chdir(ROOT)                       # the site's includes are read from here
    try:
        html = render_page('# Hostile\n\n~~~{.python title="a`b" .excerpt}\n'
                           '--8<-- "netcl_lite/capstone.py:recipe"\n~~~\n')
    except ValueError as err:                                  # refused: it must name the page and line
        assert str(err).startswith("docs/hostile.md:3"), str(err)
        return
    assert 'excerpt highlight' in html                         # superfences made it an excerpt block
    assert "Excerpt ·" in html and "no-copy" in html, "an excerpt shows unlabelled, with a copy button, unchecked"


@pytest.mark.parametrize("text", ["<!-- the old figure:\n![a curve](figures/hostile/f.svg)\n-->\n\nText.\n",
                                  "Text <!-- ![a curve](figures/hostile/f.svg) --> more.\n"],
                         ids=["comment-block", "inline-comment"])
def test_a_figure_inside_an_html_comment_needs_no_caption(text):
    from site_build import generated
    assert generated.uncaptioned("# Hostile\n\n" + text) == []


def test_a_nested_include_is_read_beside_the_file_that_includes_it(tmp_path, monkeypatch):
    from netcl_lite.core import kernels

    (tmp_path / "sub").mkdir()
    (tmp_path / "c.h").write_text("#define V 1\n", encoding="utf-8")
    (tmp_path / "sub" / "c.h").write_text("#define V 2\n", encoding="utf-8")
    (tmp_path / "sub" / "b.h").write_text('#include "c.h"\n', encoding="utf-8")
    (tmp_path / "a.cl").write_text('#include "sub/b.h"\n__kernel void k(__global float *x) { x[0] = V; }\n',
                                   encoding="utf-8")
    monkeypatch.setattr(kernels, "kernel_dir", lambda: tmp_path)
    source = kernels.kernel_source("a.cl")
    assert "#define V 2" in source and "#define V 1" not in source, source


def test_the_build_s_matplotlib_backend_does_not_reach_a_snippet(monkeypatch):
    from site_build import runner
    monkeypatch.setenv("MPLBACKEND", "pdf")
    assert "MPLBACKEND" not in runner.reader_env()


@pytest.mark.parametrize("text", ["A library file marks a section with `# --8<-- [start:recipe]` and ends it likewise.\n",
                                  "```python\n# --8<-- [start:recipe]\nx = 1\n# --8<-- [end:recipe]\n```\n"],
                         ids=["prose", "code-block"])
def test_a_page_line_showing_a_section_marker_is_shown_or_refused(monkeypatch, text):
    from site_render import ROOT
    monkeypatch.chdir(ROOT)
    try:
        html = render_page(f"# Hostile\n\n{text}\nNext paragraph.\n")
    except ValueError as err:                                  # refused: it must name the page and line
        assert str(err).startswith("docs/hostile.md:3"), str(err)
        return
    assert "start:recipe" in html, "the line showing the section marker is missing from the page"
