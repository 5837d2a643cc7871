"""Hostile round 21b: the build plugin (``site_build``) fed includes whose line ranges or sections are not
all there, pages that ask another host for something in ways the site's offline check did not read, and
the bound on a run's memory. Each test failed on the code before its fix."""

from __future__ import annotations

import pytest

from site_render import render_with_includes

_TWO_LINES = "x = 1\ny = 2\n"


@pytest.mark.parametrize("part", ["5:9", "50", "1:99", "2:1", "0:0", "1:1,40:50", "-9:-1"])
def test_a_line_range_past_the_file_or_selecting_nothing_fails_naming_the_line(tmp_path, monkeypatch, part):
    """pymdownx.snippets clamps a line range to the file: a range past its end (the file shrank since the
    page was written) brought fewer lines without a word, and one that selected no line at all (past the
    end, reversed, line 0) ended in ``ValueError: invalid literal for int() with base 10: ''`` from the
    build's own line numbering, naming no page, line or file."""
    page = f'Text.\n\n```python\n--8<-- "snippets/a.py:{part}"\n```\n'
    with pytest.raises(ValueError, match=r"docs/hostile\.md:4: .*snippets/a\.py has 2 lines.*name lines from 1 to 2"):
        render_with_includes(tmp_path, monkeypatch, page, {"a.py": _TWO_LINES})


@pytest.mark.parametrize("part", ["1:2", "2", "1:1,2:2", "-1:-1"])
def test_line_ranges_within_the_file_still_include(tmp_path, monkeypatch, part):
    page = f'```python\n--8<-- "snippets/a.py:{part}"\n```\n'
    assert "y" in render_with_includes(tmp_path, monkeypatch, page, {"a.py": _TWO_LINES})


_SECTIONS = {
    "marked twice": ("# --8<-- [start:s]\na = 1\n# --8<-- [end:s]\n# --8<-- [start:s]\nb = 2\n# --8<-- [end:s]\n",
                     r"marks the start of section 's' more than once \(lines 1, 4\)"),
    "nested in itself": ("# --8<-- [start:s]\na = 1\n# --8<-- [start:s]\nb = 2\n# --8<-- [end:s]\nc = 3\n"
                         "# --8<-- [end:s]\n", r"marks the start of section 's' more than once \(lines 1, 3\)"),
    "never ended": ("# --8<-- [start:s]\na = 1\n", r"starts section 's' at line 1 and never ends it"),
    "ended before it starts": ("# --8<-- [end:s]\na = 1\n# --8<-- [start:s]\nb = 2\n",
                               r"starts section 's' at line 3 and never ends it"),
    "empty": ("# --8<-- [start:s]\n# --8<-- [end:s]\n", r"section 's' \(lines 1 to 2\) holds no line"),
}


@pytest.mark.parametrize("name", list(_SECTIONS))
def test_a_section_marked_twice_never_ended_or_empty_fails_naming_the_line(tmp_path, monkeypatch, name):
    """A section's markers duplicated (two sections of one name, or one nested in itself) brought the
    first section, or the lines up to the first end, without a word; one never ended brought the rest
    of the file; an empty one failed with the build's own ``int('')`` error naming nothing."""
    text, says = _SECTIONS[name]
    page = 'Text.\n\n```{.python .excerpt}\n--8<-- "snippets/a.py:s"\n```\n'
    with pytest.raises(ValueError, match=r"docs/hostile\.md:4: .*snippets/a\.py.*" + says):
        render_with_includes(tmp_path, monkeypatch, page, {"a.py": text})


def test_a_section_holding_another_section_still_includes(tmp_path, monkeypatch):
    text = "# --8<-- [start:s]\na = 1\n# --8<-- [start:t]\nb = 2\n# --8<-- [end:t]\n# --8<-- [end:s]\n"
    out = render_with_includes(tmp_path, monkeypatch, '```python\n--8<-- "snippets/a.py:s"\n```\n', {"a.py": text})
    assert ">a<" in out and ">b<" in out and "8&lt;" not in out


@pytest.mark.parametrize("html", [
    '<img src="a.png" srcset="a.png 1x, https://evil.example/b.png 2x">',
    '<picture><source srcset="//evil.example/b.webp"></picture>',
    '<link rel="preload" as="image" href="a.png" imagesrcset="a.png 1x, https://evil.example/b.png 2x">',
    '<meta http-equiv="refresh" content="0; url=https://evil.example/">',
    '<img src="https:&#x2F;&#x2F;evil.example/x.png">',
    '<a ping="/local https://evil.example/p" href="#">x</a>',
    '<button formaction="https://evil.example/">b</button>',
    '<div style="background:url(&quot;https://evil.example/x.png&quot;)"></div>',
    '<table background="//evil.example/t.png"></table>',
    '<svg><image xlink:href="https://evil.example/i.png"/></svg>',
])
def test_the_offline_check_finds_every_request_to_another_host(html):
    """The site test's check that the built site asks no other host read only the first URL of an
    attribute, unescaped: a second ``srcset`` candidate, a meta refresh, a URL written with character
    references (``&#x2F;``), a ``ping``, a ``formaction``, a ``style`` attribute's quoted ``url()`` and a
    ``background`` all passed it, as did every SVG file of the site (it read HTML and CSS only)."""
    from site_build import offline

    assert offline.remote_references(f"<p>A page</p>{html}<p>end</p>") != []


def test_the_offline_check_leaves_local_urls_and_shown_code_alone():
    from site_build import offline

    page = ('<a href="http://127.0.0.1:8000/x">l</a><img src="img/a.png" srcset="a.png 1x, b.png 2x">'
            '<p>see https://example.com in text</p><pre><code>url(https://x.example) &lt;img src="//x.example"&gt;'
            '</code></pre><meta http-equiv="refresh" content="5">')
    assert offline.remote_references(page) == []
    assert offline.remote_references("a { background: url('//evil.example/x.png') }", css=True) != []


def test_the_memory_bound_reaches_what_a_run_starts_and_leaves_torch_and_pip_working(tmp_path):
    """The prelude's ``RLIMIT_DATA`` (``runner.DATA_LIMIT``) holds in a Python the run starts too, and the
    heaviest things the runs' environment does besides the build's runs still work under it: the reader
    tests install the wheel's extras with pip and import torch there (64 threads: each maps a stack)."""
    pytest.importorskip("torch")
    from site_build import runner

    code = ("import resource, subprocess, sys\n"
            "print(resource.getrlimit(resource.RLIMIT_DATA)[0])\n"
            "print(subprocess.run([sys.executable, '-c', 'import resource; "
            "print(resource.getrlimit(resource.RLIMIT_DATA)[1])'], capture_output=True, text=True).stdout, end='')\n"
            "print(subprocess.run([sys.executable, '-m', 'pip', '--version'], capture_output=True).returncode)\n"
            "import torch\n"
            "torch.set_num_threads(64)\n"
            "print(float((torch.ones(1024, 1024) @ torch.ones(1024, 1024))[0, 0]))\n")
    run = runner.run_as_snippet(code.encode(), tmp_path, timeout=300, limit=1 << 16)
    assert run.returncode == 0, run.stderr.decode("utf-8", "replace")
    assert run.stdout.decode().split() == [str(runner.DATA_LIMIT)] * 2 + ["0", "1024.0"]
