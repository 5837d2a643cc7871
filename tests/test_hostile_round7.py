"""Issue 58, independent hostile check, round 7: reproducers of defects found in the fixes of round 6.

Each test asserts the correct behaviour and is marked ``xfail(strict=True)`` until the defect is fixed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from netcl_lite.checks import MAX_TABLE_CELLS, coder_sizes
from site_build import includes
from site_render import render_with_includes as render


PAGE = '# Hostile\n\n```python\n--8<-- "snippets/a.txt"\n```\n\nAfter the block.\n'


@pytest.mark.parametrize("closing", ["``\x02`", "\x03```", "`\x02``\x03"], ids=["stx", "etx", "both"])
def test_an_included_fence_hidden_by_placeholder_characters_cannot_close_the_block(tmp_path, monkeypatch, closing):
    body = f"x = 1\n{closing}\n<script>alert(1)</script>\n# Not a heading\n"
    with pytest.raises(ValueError, match="would close the page's code block"):
        html = render(tmp_path, monkeypatch, PAGE, {"a.txt": body})
        assert "<script>" not in html, "the included file's HTML reached the page"


def test_the_page_include_bound_counts_the_indentation_includes_add(tmp_path, monkeypatch):
    assert includes.PAGE_INCLUDE_LIMIT == 1 << 20
    files = {"a.txt": " " * 200 + '--8<-- "snippets/b.txt"\n', "b.txt": "x\n" * 6000}
    assert sum(len(text) for text in files.values()) < includes.PAGE_INCLUDE_LIMIT // 50
    page = '# Hostile\n\n```text\n--8<-- "snippets/a.txt"\n```\n'
    with pytest.raises(ValueError, match="PAGE_INCLUDE_LIMIT"):
        html = render(tmp_path, monkeypatch, page, {**files})
        assert len(html) < includes.PAGE_INCLUDE_LIMIT, f"the page took {len(html):,} bytes from its includes"


@pytest.mark.parametrize("newline", ["\r"], ids=["cr"])
def test_the_include_bounds_count_includes_on_lines_ended_by_a_lone_cr(tmp_path, monkeypatch, newline):
    wide = {"a.txt": "x" + newline + ('--8<-- "snippets/b.txt"' + newline) * 40, "b.txt": ("y" * 60 + "\n") * 500}
    with pytest.raises(ValueError, match="PAGE_INCLUDE_LIMIT"):    # 40 x 30 KB brought: 1.2 MB
        render(tmp_path, monkeypatch, '# Hostile\n\n```text\n--8<-- "snippets/a.txt"\n```\n', wide)
    deep = {f"c{i}.txt": f'x{newline}--8<-- "snippets/c{i + 1}.txt"{newline}' for i in range(12)}
    deep["c12.txt"] = "the bottom\n"
    with pytest.raises(ValueError, match="INCLUDE_DEPTH"):         # 13 files deep
        render(tmp_path, monkeypatch, '# Hostile\n\n--8<-- "snippets/c0.txt"\n', deep)


def test_coder_sizes_refuses_the_same_table_whatever_the_integer_type():
    with pytest.raises(ValueError, match="MAX_TABLE_CELLS"):          # Python ints: refused
        coder_sizes(vocab=65536, streams=32, orders=2**43)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)                # numpy's overflow warning
        with pytest.raises(ValueError, match="MAX_TABLE_CELLS"):
            coder_sizes(vocab=np.int64(65536), streams=32, orders=np.int64(2**43))
    assert 65536 * 32 * 2**43 > MAX_TABLE_CELLS


def test_the_command_line_names_an_unrecognized_argument_as_shown_path_does(tmp_path, monkeypatch, capsys):
    from netcl_lite.compression import main
    from netcl_lite.files import shown_path

    monkeypatch.chdir(tmp_path)
    stray = "extra\nfile\x1b[31mred"
    try:
        status = main(["compress", "in.txt", "out.bin", stray])
    except SystemExit as exc:                     # argparse's own exit, if main lets it through
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2
    assert "\x1b" not in err, f"a terminal escape reached standard error: {err!r}"
    error = [line for line in err.splitlines() if "error:" in line]
    assert len(error) == 1 and shown_path(stray) in error[0], f"the stray word is not named on one line: {err!r}"


def test_an_include_error_names_the_line_of_the_include_at_fault(tmp_path, monkeypatch):
    page = ('# Hostile\n\n--8<-- "snippets/a.txt"\n\nText.\n\n'       # line 3: as Markdown, harmless
            '```python\n--8<-- "snippets/a.txt"\n```\n')                 # line 8: closes the block
    with pytest.raises(ValueError, match="would close the page's code block") as err:
        render(tmp_path, monkeypatch, page, {"a.txt": "Some text.\n\n```\ncode\n```\n"})
    assert str(err.value).startswith("docs/hostile.md:8:"), str(err.value)[:80]


def test_the_page_include_bound_counts_each_line_range_an_include_repeats(tmp_path, monkeypatch):
    ranges = ",".join(["1:500"] * 100)
    page = f'# Hostile\n\n```text\n--8<-- "snippets/b.txt:{ranges}"\n```\n'
    with pytest.raises(ValueError, match="PAGE_INCLUDE_LIMIT"):
        html = render(tmp_path, monkeypatch, page, {"b.txt": ("y" * 40 + "\n") * 500})     # 20.5 KB
        assert len(html) < includes.PAGE_INCLUDE_LIMIT, f"the page took {len(html):,} bytes from its includes"
