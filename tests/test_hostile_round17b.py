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


# -- what a snippet reaches -----------------------------------------------------------------------------------

def _reader_imports(tmp_path, module: str) -> str:
    from site_build import runner

    code = f"import importlib.util\nprint(importlib.util.find_spec({module!r}) is not None)\n"
    return runner.run_code(code, tmp_path, timeout=60).stdout.strip()


@pytest.mark.parametrize("module", ["site_build", "benchmarks", "tests"])
def test_a_snippet_reaches_no_module_of_the_repository_but_the_library(tmp_path, module):
    """The README: a build output runs "a copy of it alone in a scratch folder, as a page block runs, so
    it reaches nothing its key does not cover", "with only netcl_lite installed". With the install the
    README gives (``pip install -e .``), hatchling's ``.pth`` puts the repository's root on the path of
    every snippet, figure and notebook: ``from benchmarks import report_kernels`` or ``import
    site_build`` then works, and what it reads (``benchmarks/results/``, the docs) is in no build
    output's key, so its output goes stale when they change."""
    from pathlib import Path

    from site_build import runner

    where = runner.run_code("import netcl_lite\nprint(netcl_lite.__file__)\n", tmp_path, timeout=60).stdout.strip()
    if not (Path(where).parent.parent / "pyproject.toml").is_file():
        pytest.skip("netcl_lite is installed as a wheel, not from a repository")
    assert _reader_imports(tmp_path, module) == "False"


# -- excerpts -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["snippets/chapter9/flops.py", "snippets/chapter7/bpe_kernel.py"])
def test_an_excerpt_of_a_file_the_wheel_does_not_carry_fails_naming_the_line(path):
    """An excerpt's note says it shows "a file inside the wheel" and links its lines on the file's source
    page, ``source/<path>.html``; the site has such a page for each source file of the wheel only. An
    excerpt of a snippet (includes may reach ``snippets/``) was labelled so, and linked a page that does
    not exist. It should fail naming the page and the line."""
    from site_render import render_page

    with pytest.raises(ValueError, match=r"^docs/hostile\.md:6: "):
        render_page(f'# T\n\nText.\n\n```{{.python .excerpt title="x"}}\n--8<-- "{path}"\n```\n\nMore.\n')


# -- figures --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("figure", ["chapter9/nosuchfigure", "nosuchpage/curve"])
def test_a_figure_that_is_not_drawn_fails_naming_the_line(figure):
    """Every build error names the page and the line where there is one (issue 58). A page that shows
    a generated figure no script draws (a typo in its name, a script renamed) failed naming the page and
    the figure, not the line that shows it."""
    from site_render import render_page

    with pytest.raises(ValueError, match=rf"^docs/hostile\.md:5: .*figures/{figure}\.svg: no such figure"):
        render_page(f"# T\n\nText.\n\n![a](figures/{figure}.svg)\n/// caption\nWhat to see.\n///\n")
