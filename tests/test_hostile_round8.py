"""Issue 58, independent hostile check, round 8: reproducers of defects found in the fixes of round 7
and in the code around them.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import pytest

from site_build import includes, markers
from site_render import figure_root as _figure_root
from site_render import lines_read
from site_render import render_page
from site_render import render_with_includes as render


def test_the_page_include_bound_counts_the_indentation_of_the_page_s_own_include(tmp_path, monkeypatch):
    # pymdownx.snippets puts the include line's indentation before every line the file brings: 1,000
    # spaces before an include of a 4 KB file of 2,000 lines bring 2 MB into the page
    page = "# Hostile\n\n" + " " * 1000 + '--8<-- "snippets/b.txt"\n'
    files = {"b.txt": "x\n" * 2000}
    assert len(page) + len(files["b.txt"]) < includes.PAGE_INCLUDE_LIMIT // 100
    with pytest.raises(ValueError, match="PAGE_INCLUDE_LIMIT"):
        html = render(tmp_path, monkeypatch, page, files)
        assert len(html) < includes.PAGE_INCLUDE_LIMIT, f"the page took {len(html):,} bytes from its includes"


def test_the_page_include_bound_counts_a_tab_of_indentation_as_the_spaces_it_becomes(tmp_path, monkeypatch):
    # 100 tabs are counted as 100 bytes a line (600 KB for 6,000 lines, under the bound); the page gets
    # 400 spaces a line (2.4 MB)
    files = {"a.txt": "\t" * 100 + '--8<-- "snippets/b.txt"\n', "b.txt": "x\n" * 6000}
    page = '# Hostile\n\n```text\n--8<-- "snippets/a.txt"\n```\n'
    with pytest.raises(ValueError, match="PAGE_INCLUDE_LIMIT"):
        html = render(tmp_path, monkeypatch, page, files)
        assert len(html) < includes.PAGE_INCLUDE_LIMIT, f"the page took {len(html):,} bytes from its includes"


def test_a_page_s_includes_are_checked_reading_the_page_a_bounded_number_of_times(tmp_path, monkeypatch):
    n = 300
    read = lines_read(monkeypatch, markers, "includes")
    page = "# Hostile\n\n" + '--8<-- "snippets/b.txt"\n\n' * n
    html = render(tmp_path, monkeypatch, page, {"b.txt": "one line"})
    assert html.count("one line") == n
    lines = page.count("\n") + 1
    assert read[0] <= 10 * lines, (f"checking {n} includes read {read[0]:,} lines of a {lines}-line page: "
                                   f"each include reads the page again")


def test_a_build_output_marker_path_with_an_escape_is_named_escaped(tmp_path):
    path = "snippets/\x1b[2J\x1b]0;owned\x07x.py"
    page = f'# Hostile\n\n```python\n--8<-- "{path}"\n```\n\n<!-- build-output: {path} -->\n'
    with pytest.raises((ValueError, OSError, RuntimeError)) as err:
        render_page(page)
    message = str(err.value)
    assert "docs/hostile.md" in message, message
    assert "\x1b" not in message and "\x07" not in message, f"a control character reached the error: {message!r}"


def test_an_include_path_with_an_escape_is_named_escaped(tmp_path, monkeypatch):
    page = '# Hostile\n\n--8<-- "snippets/\x1b[2J\x1b]0;owned\x07x.txt"\n'
    with pytest.raises((ValueError, OSError)) as err:
        render(tmp_path, monkeypatch, page, {"b.txt": "x"})
    message = str(err.value)
    assert "docs/hostile.md" in message, message
    assert "\x1b" not in message and "\x07" not in message, f"a control character reached the error: {message!r}"


@pytest.mark.parametrize("path", ["snippets/missing.txt", "docs/outside.md"], ids=["missing", "outside"])
def test_an_include_that_fails_its_path_check_names_the_page_s_line(tmp_path, monkeypatch, path):
    page = f'# Hostile\n\nText.\n\n--8<-- "snippets/b.txt"\n\n--8<-- "{path}"\n'      # line 7
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "outside.md").write_text("x\n", encoding="utf-8")
    with pytest.raises((ValueError, OSError)) as err:
        render(tmp_path, monkeypatch, page, {"b.txt": "x"})
    assert str(err.value).startswith("docs/hostile.md:7:"), str(err.value)[:120]


def test_the_command_line_names_an_ambiguous_option_escaped_on_one_line(tmp_path, monkeypatch, capsys):
    from netcl_lite.compression import main

    monkeypatch.chdir(tmp_path)
    word = "--m=\x1b[31mred\nFAKE: a second line"        # --m could be --model or --model-only
    try:
        status = main(["compress", "in.txt", "out.bin", word])
    except SystemExit as exc:                     # argparse's own exit, if main lets it through
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2
    assert "\x1b" not in err, f"a terminal escape reached standard error: {err!r}"
    assert not any(line.startswith("FAKE") for line in err.splitlines()), f"the word split the message: {err!r}"


@pytest.mark.parametrize("page", ['# Hostile\n\n--8<-- "snippets/b.txt:nosuch"\n',
                                  '# Hostile\n\n```text\n--8<-- "snippets/b.txt:nosuch"\n```\n',
                                  '# Hostile\n\n--8<-- "snippets/a.txt"\n'], ids=["page", "fenced", "nested"])
def test_an_include_of_a_missing_section_fails_naming_the_page_and_the_include(tmp_path, monkeypatch, page):
    files = {"b.txt": "x\n", "a.txt": '--8<-- "snippets/b.txt:nosuch"\n'}
    with pytest.raises(ValueError) as err:
        render(tmp_path, monkeypatch, page, files)
    message = str(err.value)
    assert message.startswith("docs/hostile.md:"), message
    assert "nosuch" in message and "b.txt" in message, message


def test_a_figure_an_include_brings_needs_its_caption_too(tmp_path, monkeypatch):
    _figure_root(tmp_path, monkeypatch)
    (tmp_path / "snippets" / "fig.md").write_text("![a curve](figures/hostile/f.svg)\n\nNo caption.\n",
                                                  encoding="utf-8")
    with pytest.raises(ValueError, match="caption"):           # as on the page itself
        render_page("# Hostile\n\n![a curve](figures/hostile/f.svg)\n\nNo caption.\n")
    try:
        html = render_page('# Hostile\n\n--8<-- "snippets/fig.md"\n')
    except ValueError as err:                                  # refused: it must name the page
        assert str(err).startswith("docs/hostile.md"), str(err)
        return
    assert "<figcaption" in html, "a generated figure reached the page with no caption and no error"


def test_an_excerpt_an_include_brings_is_labelled_or_refused(tmp_path, monkeypatch):
    import shutil

    from site_render import ROOT

    shutil.copytree(ROOT / "netcl_lite", tmp_path / "netcl_lite", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "snippets").mkdir()
    excerpt = '```{.python .excerpt title="netcl_lite/capstone.py"}\n--8<-- "netcl_lite/capstone.py:recipe"\n```\n'
    (tmp_path / "snippets" / "exc.md").write_text(excerpt, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    on_page = render_page("# Hostile\n\n" + excerpt)
    assert "Excerpt" in on_page and "no-copy" in on_page      # how an excerpt on the page shows
    try:
        html = render_page('# Hostile\n\n--8<-- "snippets/exc.md"\n')
    except ValueError as err:                                  # refused: it must name the page
        assert str(err).startswith("docs/hostile.md"), str(err)
        return
    assert "Excerpt" in html and "no-copy" in html, "an included excerpt shows unlabelled, with a copy button"


def test_the_wheels_key_changes_with_a_files_executable_bit(tmp_path, monkeypatch):
    import shutil
    import stat

    from site_build import shipped_wheel
    from site_render import ROOT

    copy = tmp_path / "repo"
    for _, path in shipped_wheel.wheel_inputs():
        target = copy / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    monkeypatch.setattr(shipped_wheel, "ROOT", copy)
    module = copy / "netcl_lite" / "__init__.py"
    module.chmod(0o644)
    first = shipped_wheel.sources_digest()
    module.chmod(module.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    assert shipped_wheel.sources_digest() != first, "the wheel records the file as 755 now; its key is the same"


@pytest.mark.parametrize("page", ['# Hostile\n\n--8<-- " "\n', '# Hostile\n\n--8<-- ":5"\n',
                                  '# Hostile\n\n--8<--\n:3\n--8<--\n', '# Hostile\n\n--8<-- "snippets/a.txt"\n'],
                         ids=["blank", "lines-alone", "block-form", "nested"])
def test_an_include_that_names_no_path_fails_naming_the_page(tmp_path, monkeypatch, page):
    with pytest.raises(ValueError) as err:
        render(tmp_path, monkeypatch, page, {"a.txt": '--8<-- ":1:2"\n'})
    assert str(err.value).startswith("docs/hostile.md:"), str(err.value)


@pytest.mark.parametrize("name, value, code", [
    ("PYTHONIOENCODING", "ascii:backslashreplace", 'print("caf\\u00e9")\n'),
    ("PYTHONOPTIMIZE", "1", 'assert 1 + 1 == 3, "what must hold on any machine"\nprint("checked")\n'),
], ids=["io-encoding", "optimize"])
def test_a_variable_that_changes_what_a_snippet_prints_changes_the_key(tmp_path, monkeypatch, name, value, code):
    from site_build import runner, store

    monkeypatch.delenv(name, raising=False)
    (tmp_path / "plain").mkdir()
    (tmp_path / "set").mkdir()
    plain, key = runner.run_as_snippet(code.encode(), tmp_path / "plain", 60), store.context()
    monkeypatch.setenv(name, value)
    changed = runner.run_as_snippet(code.encode(), tmp_path / "set", 60)
    same = (plain.returncode, plain.stdout) == (changed.returncode, changed.stdout)   # the runner overrides it
    assert same or changed.returncode != 0 or store.context() != key, (
        f"{name}={value} makes the snippet print {changed.stdout!r} (exit {changed.returncode}), not "
        f"{plain.stdout!r} (exit {plain.returncode}), under the same key")


@pytest.mark.parametrize("formula", ["\\\\sqrt{" * 5000 + "x" + "}" * 5000, "{" * 100_000 + "x" + "}" * 100_000],
                         ids=["sqrt", "braces"])
def test_a_deeply_nested_formula_fails_naming_the_page_not_the_process(formula):
    import subprocess
    import sys

    from site_render import ROOT

    program = ("import sys\nfrom site_build import mathml\n"
               "html = '<p><span class=\"arithmatex\">\\\\(' + sys.stdin.read() + '\\\\)</span></p>'\n"
               "try:\n    mathml.render(html, 'hostile.md')\nexcept ValueError as err:\n    print(err)\n")
    run = subprocess.run([sys.executable, "-c", program], input=formula.replace("\\\\", "\\"), text=True,
                         capture_output=True, cwd=ROOT, timeout=60)
    assert run.returncode == 0, f"the build's process died (exit {run.returncode}): {run.stderr[-300:]!r}"
    assert not run.stdout or "hostile.md" in run.stdout, run.stdout[:200]
