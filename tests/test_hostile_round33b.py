"""Hostile round 33b: markers shown in code blocks, python blocks the doc tests never run, exit codes
the OS reads as success, and a page block's unbounded output."""

from __future__ import annotations

import io

import pytest

from site_build import build_output, copyable, dirty_pages, markers, runner
from site_render import render_page


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A scratch project whose page shows snippets of ``snippets/hostile/`` as the build does, with a
    cache of its own."""
    from netcl_lite import fingerprint
    from site_build import includes

    root = tmp_path / "project"
    (root / "snippets" / "hostile").mkdir(parents=True)
    monkeypatch.chdir(root)
    monkeypatch.setattr(build_output, "ROOT", root)
    monkeypatch.setattr(build_output, "marker_path",
                        lambda path, page, root=root: includes.marker_path(path, page, root=root))
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    return root


# -- 1. a marker inside a fenced block is text -----------------------------------------------------

SHOWN = {
    "text": "```text\n{m}\n```",
    "markdown, four backticks": "````markdown\n{m}\n````",
    "tildes": "~~~text\n{m}\n~~~",
    "in a quote": "> ```text\n> {m}\n> ```",
    "under a list item": "- item\n\n    ```text\n    {m}\n    ```",
}


@pytest.mark.parametrize("fence", SHOWN.values(), ids=SHOWN.keys())
def test_a_build_output_marker_shown_in_a_code_block_names_no_input_of_the_page(fence):
    """A marker inside a code block is what the page shows, not a marker (markers.find skips it, and
    the page renders it as written); the dirty build's list of a page's inputs read it all the same,
    making the snippet it names, whatever path that is, and the whole library inputs of a page that
    runs nothing."""
    page = f"# Showing markers\n\nWrite this under the block:\n\n{fence.format(m='<!-- build-output: /etc/hostname -->')}\n"
    assert markers.find(page, "docs/p.md") == []
    assert dirty_pages.page_inputs(page, library=[]) == [], "a marker shown as code became an input"


def test_a_real_build_output_marker_is_still_an_input():
    page = ('```python\n--8<-- "snippets/a/b.py"\n```\n\n<!-- build-output: snippets/a/b.py -->\n\n'
            "```text\n<!-- build-output: snippets/c/d.py -->\n```\n")
    inputs = dirty_pages.page_inputs(page, library=[])
    names = [p.as_posix() for p in inputs]
    assert any(n.endswith("snippets/a/b.py") for n in names) and not any(n.endswith("snippets/c/d.py") for n in names)


@pytest.mark.parametrize("marker", ["<!-- build-output: snippets/hostile/nope.py -->",
                                    "<!-- Build_Output: snippets/hostile/nope.py -->",
                                    "<!-- kernel.json: x -->", "<!-- needs-extra: gpu -->"])
def test_documentation_showing_a_marker_in_a_text_block_renders_it_as_written_and_runs_nothing(project, marker):
    """The correct Markdown reading, and the project's: inside a fence a marker (or a near miss of
    one) is literal text that the page shows; nothing is run or refused for it."""
    html = render_page(f"# Markers\n\nA build output is written so:\n\n```text\n{marker}\n```\n")
    assert "&lt;!--" in html and marker.split("<!--", 1)[1].split("-->")[0].strip() in html


# -- 2. a python block the doc tests never run -------------------------------------------------------

UNRUN = {
    "in a quote": ("> ```python\n> print('hidden')\n> ```", "block quote", 5),
    "in a nested quote, py": ("> > ```py\n> > print('hidden')\n> > ```", "block quote", 5),
    "in a quote in a list item": ("- item\n\n    > ```python\n    > print('hidden')\n    > ```", "block quote", 7),
    "tildes": ("~~~python\nprint('hidden')\n~~~", "tildes", 5),
}


@pytest.mark.parametrize("block, why, line", UNRUN.values(), ids=UNRUN.keys())
def test_a_python_block_the_doc_tests_never_run_fails_the_build_naming_the_page_and_line(block, why, line):
    """pytest-codeblocks opens a block only at a line that starts with backticks once stripped of its
    indent: a python block in a block quote, or fenced with tildes, is rendered as code and never run,
    escaping "every block runs"."""
    with pytest.raises(ValueError) as caught:
        render_page(f"# Quoted\n\nSome text.\n\n{block}\n")
    message = str(caught.value)
    assert message.startswith(f"docs/hostile.md:{line}: ") and why in message, message
    assert "never run" in message and "```text" in message, message


@pytest.mark.parametrize("block", [
    "- item\n\n    ```python\n    x = 1\n    ```",
    "!!! note\n\n    ```python\n    x = 1\n    ```",
    "  ```python\n  x = 1\n  ```",
    "> ```text\n> print('shown, not run')\n> ```",
    "> ```pycon\n> >>> 1\n> 1\n> ```",
], ids=["list item", "admonition", "indented fence", "quoted text", "quoted session"])
def test_blocks_the_doc_tests_run_or_that_are_not_python_pass(block):
    copyable.check_python_blocks(f"# Fine\n\n{block}\n", "hostile.md")


def test_what_the_check_refuses_is_what_pytest_codeblocks_does_not_collect(tmp_path):
    """The check's rule is pytest-codeblocks' own: it collects the list item's and the admonition's
    blocks, not the quoted or tilde ones."""
    from pytest_codeblocks import extract_from_buffer

    page = ("# T\n\n> ```python\n> print(1)\n> ```\n\n- item\n\n    ```python\n    print(2)\n    ```\n\n"
            "!!! note\n\n    ```python\n    print(3)\n    ```\n\n~~~python\nprint(4)\n~~~\n")
    collected = {b.code.strip() for b in extract_from_buffer(io.StringIO(page)) if b.syntax == "python"}
    assert collected == {"print(2)", "print(3)"}


# -- 3. an exit code the OS reads as 0 --------------------------------------------------------------

@pytest.mark.parametrize("code", ["256", "-256", "512", "True * 768"])
def test_a_snippet_that_exits_with_a_code_the_os_reads_as_zero_fails(tmp_path, code):
    """The OS keeps an exit status's low 8 bits: ``raise SystemExit(256)`` exited 0, and the build showed
    a failing snippet's output as if it had passed (and stored it)."""
    snippet = tmp_path / "exits.py"
    snippet.write_text(f"print('half done')\nraise SystemExit({code})\n", encoding="utf-8")
    with pytest.raises(runner.SnippetError, match=r"failed at build time \(exit status 1\)") as caught:
        runner.run_snippet(snippet, limit=1 << 16, timeout=60)
    assert "SystemExit(" in str(caught.value)


def test_a_page_block_that_exits_256_is_a_failing_block_and_is_not_stored(project, tmp_path):
    shared = "round33b exit 256"
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        proc = build_output.run_stored("print('x')\nraise SystemExit(256)\n", tmp_path / name, shared)
        assert proc.returncode == 1, proc


@pytest.mark.parametrize("code, status", [("0", 0), ("None", 0), ("False", 0), ("3", 3), ("'a message'", 1)])
def test_other_exit_codes_exit_as_python_makes_them(tmp_path, code, status):
    run = runner.run_as_snippet(f"raise SystemExit({code})\n".encode(), tmp_path, 60, limit=1 << 16)
    assert run.returncode == status, run


def test_a_snippet_still_runs_as_python_runs_a_script(tmp_path):
    """The wrapper leaves what a script sees as ``python block.py`` gives it: ``__main__``, its file,
    ``sys.argv``, its folder first on the path, a class that pickles by its module."""
    code = ("import os, pickle, sys\nclass C: pass\n"
            "print(__name__, os.path.basename(__file__), [os.path.basename(a) for a in sys.argv])\n"
            "print(os.path.realpath(sys.path[0]) == os.path.realpath(os.path.dirname(__file__)))\n"
            "print(type(pickle.loads(pickle.dumps(C()))).__module__)\n")
    run = runner.run_as_snippet(code.encode(), tmp_path, 60, limit=1 << 16)
    assert run.returncode == 0, run.stderr.decode()
    assert run.stdout.decode() == "__main__ block.py ['block.py']\nTrue\n__main__\n"
    failing = runner.run_as_snippet(b"x = 1\nraise ValueError('boom')\n", tmp_path, 60, limit=1 << 16)
    assert failing.returncode == 1 and b"ValueError: boom" in failing.stderr
    frames = [line for line in failing.stderr.decode().splitlines() if line.lstrip().startswith("File ")]
    assert len(frames) == 1 and frames[0].strip().endswith('block.py", line 2, in <module>'), failing.stderr


# -- 4. a page block's output is bounded -------------------------------------------------------------

def test_a_page_block_that_prints_past_the_limit_fails_naming_it(project, tmp_path):
    """run_stored (the doc test of every page block) read a block's whole stdout; the build shows at
    most OUTPUT_LIMIT bytes of a build output and fails past it, naming the snippet."""
    (tmp_path / "run").mkdir()
    code = f"import sys\nsys.stdout.write('x' * {build_output.OUTPUT_LIMIT * 4})\n"
    with pytest.raises(build_output.BuildOutputError) as caught:
        build_output.run_stored(code, tmp_path / "run", "round33b big", "docs/hostile.md:12")
    message = str(caught.value)
    assert message.startswith("docs/hostile.md:12 printed more than") and f"{build_output.OUTPUT_LIMIT:,}" in message


def test_a_page_block_that_prints_without_end_is_stopped_at_the_limit_not_read_to_the_timeout(
        project, tmp_path, monkeypatch):
    monkeypatch.setattr(build_output, "TIMEOUT_S", 30)
    (tmp_path / "run").mkdir()
    code = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
    with pytest.raises(build_output.BuildOutputError, match="printed more than"):
        build_output.run_stored(code, tmp_path / "run", "round33b endless")


def test_a_page_block_within_the_limit_still_runs_and_is_stored(project, tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        code = f"import sys\nsys.stdout.write('y' * {build_output.OUTPUT_LIMIT})\n"
        proc = build_output.run_stored(code, tmp_path / name, "round33b fits")
        assert proc.returncode == 0 and len(proc.stdout) == build_output.OUTPUT_LIMIT



def test_a_snippet_with_a_syntax_error_shows_it_as_python_does(tmp_path):
    run = runner.run_as_snippet(b"x = (\n", tmp_path, 60, limit=1 << 16)
    assert run.returncode == 1 and b"SyntaxError" in run.stderr
    assert b"Traceback" not in run.stderr and b"runpy" not in run.stderr, run.stderr


def test_a_figure_script_that_exits_256_fails_though_it_wrote_its_figure(tmp_path):
    from site_build import generated

    script = tmp_path / "figure_exit.py"
    script.write_text("import sys\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig(sys.argv[1])\n"
                      "raise SystemExit(256)\n", encoding="utf-8")
    drawn = generated._draw(script)
    assert isinstance(drawn, RuntimeError) and "SystemExit(256)" in str(drawn), drawn
