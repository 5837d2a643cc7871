"""The build plugin fed hostile snippets and markers: printed text stays inside its block, a marker
that does not parse fails naming the page and the line, output and run time are bounded, every
error names the page, and the shipped wheel is made again when any file it carries changes.

Pages are rendered as the build renders them: the plugin's own ``on_page_markdown`` and
``on_page_content`` around the site's Markdown (the extensions and options of ``mkdocs.yml``), in a
scratch project whose ``snippets/`` holds the test's snippets.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import sys
import time
import tomllib
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import markdown
import pytest
from mkdocs.config import load_config

from netcl_lite import fingerprint
from site_build import build_output, copyable, generated, includes, markers, shipped_wheel, store
from site_render import failed_figure, render_page

ROOT = Path(__file__).resolve().parent.parent
PAGE = "docs/hostile.md"
TITLE = "printed when this site was built"


class Site:
    """A scratch project (``root/snippets/hostile/``) and the plugin, rendering pages as the build does."""

    def __init__(self, root: Path):
        self.root = root
        self.snippets = root / "snippets" / "hostile"
        self.snippets.mkdir(parents=True)

    def snippet(self, name: str, code: str) -> str:
        (self.snippets / name).write_text(code, encoding="utf-8")
        return f"snippets/hostile/{name}"

    def printing(self, name: str, text: str, as_markdown: bool = False) -> str:
        """A page whose block runs a snippet that writes ``text`` to stdout, with its build output."""
        path = self.snippet(name, f"import sys\nsys.stdout.write({text!r})\n")
        return page_with(path, markers.build_output(path, as_markdown))

    def render(self, text: str, page: str = "hostile.md", abs_src_path: str | None = None) -> str:
        return render_page(text, page, abs_src_path)


def page_with(path: str, marker: str) -> str:
    """A page with a block that includes ``path``, ``marker`` right under it (on line 9), then a
    text block whose closing fence an unclosed fence in the output would pair with."""
    return (f'# Hostile\n\nThe block below.\n\n```python\n--8<-- "{path}"\n```\n\n{marker}\n\n'
            f"A later block:\n\n```\nlater\n```\n\nAfter the output.\n")


MARKER_LINE = 9


@pytest.fixture
def site(tmp_path, monkeypatch):
    root = tmp_path / "project"
    site = Site(root)
    monkeypatch.chdir(root)                      # pymdownx.snippets reads includes from here
    monkeypatch.setattr(build_output, "ROOT", root)
    monkeypatch.setattr(build_output, "marker_path",
                        lambda path, page, root=root: includes.marker_path(path, page, root=root))
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(fingerprint.RERUN, raising=False)
    return site


class Tags(HTMLParser):
    """Every element of a page: its tag and attributes."""

    def __init__(self, text: str):
        super().__init__()
        self.found = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def shown(page_html: str) -> list[str]:
    """The text of each build-output block of a page, as a reader sees it."""
    blocks = re.findall(rf'<span class="filename">{TITLE}</span><pre><span></span><code>(.*?)</code></pre>',
                        page_html, re.S)
    return [html.unescape(block).removesuffix("\n") for block in blocks]


def assert_page_goes_on(page_html: str) -> None:
    """Nothing printed ended the page early or added elements of its own: the page's last paragraph
    is still its last, and it holds no script, heading other than its own, event handler or link."""
    assert page_html.rstrip().endswith("<p>After the output.</p>"), page_html[-800:]
    assert "<p>A later block:</p>" in page_html and "<code>later\n</code>" in page_html, "the output swallowed them"
    tags = Tags(page_html).found
    assert [t for t, _ in tags if t in ("h1", "h2", "h3", "h4", "h5", "h6")] == ["h1"], tags
    assert not [t for t, _ in tags if t in ("script", "img", "iframe", "style", "object", "math")], tags
    assert [a for t, a in tags if t == "a"] == [{"class": "headerlink", "href": "#hostile", "title": "Permanent link"}]
    assert not [(t, a) for t, a in tags for name in a if name.startswith("on")], tags


# -- 1. printed text stays inside its block ---------------------------------------------------------

HOSTILE_OUTPUTS = {
    "three backticks, then HTML and a heading": "loss 1.2\n```\n<script>alert('out')</script>\n# Injected\n",
    "a longer fence and tildes": "````\n~~~\n    ```\n````python\nprint('x')\n",
    "the HTML around the block": "</code></pre></div><script>alert(1)</script><pre><code>\n",
    "comments and markers": "<!--\n-->\n<!-- needs-extra: gpu -->\n<!-- build-output: snippets/hostile/x.py -->\n",
    "includes": '--8<-- "snippets/hostile/secret.txt"\n--8<-- "/etc/passwd"\n--8<--\nsnippets/hostile/secret.txt\n--8<--\n',
    "math": "\\[ x^2 \\]\n\\( y \\)\n$z$ and $$w$$\n",
    "Jinja and attribute lists": "{% raw %}{{ config.site_name }}{% endraw %}\n{: onclick=\"alert(1)\" }\n",
    "Markdown that means something elsewhere": "/// caption\nnot a caption\n///\n!!! note\n=== \"tab\"\n::: netcl_lite.ops\n",
}


def render_printed(site: Site, text: str, as_markdown: bool = False) -> str:
    """The page whose build output prints ``text``, checked to include no file and to go on after it."""
    (site.snippets / "secret.txt").write_text("the secret\n")
    page_html = site.render(site.printing("prints.py", text, as_markdown))
    assert "the secret" not in page_html and "root:" not in page_html
    assert_page_goes_on(page_html)
    return page_html


@pytest.mark.parametrize("text", HOSTILE_OUTPUTS.values(), ids=HOSTILE_OUTPUTS.keys())
def test_printed_text_is_shown_as_printed_inside_its_block(site, text):
    assert shown(render_printed(site, text)) == [text.strip("\n")]


def test_control_characters_and_invisible_marks_are_written_out():
    """NUL, Python-Markdown's own placeholder characters (STX, ETX), an escape sequence and a
    right-to-left override are shown as escapes, not passed to the page."""
    printed = "nul \x00 stx \x02wzxhzdk:0\x03 esc \x1b[31m red rlo \u202e txt\ttab\n"
    assert build_output.visible(printed) == "nul \\x00 stx \\x02wzxhzdk:0\\x03 esc \\x1b[31m red rlo \\u202e txt\ttab\n"


def test_a_page_shows_control_characters_as_escapes(site):
    page_html = site.render(site.printing("controls.py", "a\x00b \x02wzxhzdk:0\x03 \u202eevil\n"))
    assert shown(page_html) == ["a\\x00b \\x02wzxhzdk:0\\x03 \\u202eevil"]
    assert "\x00" not in page_html and "\u202e" not in page_html


MARKDOWN_ATTACKS = {
    "raw HTML": "<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| <img src=x onerror=alert(1)> | 1 |\n",
    "a fence that would swallow the page": "```\n\n| a |\n|---|\n| 1 |\n",
    "a heading and a list": "# Injected\n\n- item\n\n1. one\n\n> quote\n\n| a |\n|---|\n| 1 |\n",
    "links and images": "[x](javascript:alert(1)) ![y](https://example.com/y.png) <https://example.com>\n\n"
                        "[ref]: https://example.com\n\n| a |\n|---|\n| [r][ref] |\n",
    "attribute lists and abbreviations": "text\n{: onclick=\"alert(1)\" }\n\n*[HTML]: Hyper\n\n| a |\n|---|\n| 1 |\n",
    "markers and includes": "<!-- needs-extra: gpu -->\n\n--8<-- \"snippets/hostile/secret.txt\"\n\n| a |\n|---|\n| 1 |\n",
    "blocks and math": "/// admonition\n///\n\n!!! note\n\n\\[ x \\]\n\n| a |\n|---|\n| $y$ |\n",
}


@pytest.mark.parametrize("text", MARKDOWN_ATTACKS.values(), ids=MARKDOWN_ATTACKS.keys())
def test_output_as_markdown_renders_tables_but_no_html_links_or_structure(site, text):
    page_html = render_printed(site, text, as_markdown=True)
    caption = "Printed as Markdown when this site was built, by the block above."
    assert f"</span> {caption}</p>\n</figcaption>" in page_html, "the caption is still there"
    allowed = {"h1", "a", "p", "div", "span", "pre", "code", "table", "thead", "tbody", "tr", "th", "td", "strong",
               "em", "figure", "figcaption"}
    assert {t for t, _ in Tags(page_html).found} <= allowed
    assert "<table>" in page_html


def test_output_as_markdown_keeps_tables_emphasis_and_code(site):
    text = ("On 3 seeds.\n\n| coder | bits per byte |\n|---|---:|\n| **model** | 1.234 |\n"
            "| `zpaq -m5` | 2.000 |\n| a < b & c | 3.000 |\n")
    page_html = site.render(site.printing("table.py", text, as_markdown=True))
    assert "<p>On 3 seeds.</p>" in page_html
    assert '<td><strong>model</strong></td>\n<td style="text-align: right;">1.234</td>' in page_html
    assert "<td><code>zpaq -m5</code></td>" in page_html and "<td>a &lt; b &amp; c</td>" in page_html
    figure = page_html[page_html.index("<figure"):page_html.index("</figure>")]
    assert figure.count("<table>") == 1 and "On 3 seeds." not in figure, "the caption holds the table alone"



@pytest.mark.parametrize("text", ["just a line\n", "| a |\n|---|\n| 1 |\n\na paragraph after the table\n",
                                  "- a list\n- is text here\n"])
def test_output_as_markdown_that_does_not_end_in_a_table_fails_naming_page_line_and_snippet(site, text):
    """The caption 'Table N. Printed as Markdown ...' belongs to the table the output ends with; output
    whose last element is a paragraph would get a table's caption with no table under it."""
    with pytest.raises(build_output.BuildOutputError) as caught:
        site.render(site.printing("notable.py", text, as_markdown=True))
    message = str(caught.value)
    assert message.startswith(f"{PAGE}:{MARKER_LINE}: ") and "snippets/hostile/notable.py printed no Markdown table" \
        in message, message


def test_output_as_markdown_shows_character_references_to_invisible_characters_as_escapes(site):
    """Markdown passes character references through to the HTML, where the browser reads them as the
    characters they name: a reference to a control character or an invisible bidirectional mark is
    shown as its escape, as the character itself would be; other references and code spans stay."""
    text = ("| a | b |\n|---|---|\n| x&#x202E;evil&#8236; | &rlm;&lrm; &#7; &#x1b&#27; |\n"
            "| &lt;&amp;&eacute; | `&#x202e;` &#00000000000000008238; |\n")
    page_html = site.render(site.printing("references.py", text, as_markdown=True))
    raw = page_html[page_html.index("<table>"):page_html.index("</table>")]
    for reference in ("&#x202E;", "&#8236;", "&rlm;", "&lrm;", "&#7;", "&#27;", "8238;"):
        assert reference not in raw, reference
    table = html.unescape(raw)
    for char in "\u202e\u202c\u200f\u200e":
        assert char not in table, repr(char)
    for shown_as in ("x\\u202eevil\\u202c", "\\u200f\\u200e \\x07 &#x1b\\x1b", "<&\u00e9", "<code>&#x202e;</code> \\u202e"):
        assert shown_as in table, shown_as


# -- 2. markers: strict, and only outside code -----------------------------------------------------

NEAR_MISSES = [
    "<!-- build-output:snippets/hostile/ok.py-->",
    "<!--build-output: snippets/hostile/ok.py -->",
    "<!-- build-output: snippets/hostile/ok.py  -->",
    "<!-- Build-Output: snippets/hostile/ok.py -->",
    "<!-- build output: snippets/hostile/ok.py -->",
    "<!-- build_output: snippets/hostile/ok.py -->",
    "<!-- buildoutput: snippets/hostile/ok.py -->",
    "<!-- build-ouput: snippets/hostile/ok.py -->",
    "  <!-- build-output: snippets/hostile/ok.py -->",
    "<!-- build-output: snippets/hostile/ok.py as Markdown -->",
    "<!-- build-output: snippets/hostile/ok.py markdown -->",
    "<!-- build-output: snippets/hostile/ok.py --> and text after it",
    "Text before <!-- build-output: snippets/hostile/ok.py -->",
    "<!--\nbuild-output: snippets/hostile/ok.py\n-->",
    "<!-- build-output: snippets/hostile/ok.py ->",
    "<!-- build-output: snippets/hostile/ok.py --!>",
    "<!-- build-output: snippets/hostile/ok.txt -->",
    "<!-- build-output: snippets\\hostile\\ok.py -->",
    "<!-- build-output: ../hostile/ok.py -->",
    "<!-- needs-extra:compare -->",
    "<!-- needs-extras: compare -->",
    "<!-- kernels.json:setup -->",
    "<!-- kernel.json: setup -->",
    "<!-- KERNELS.JSON: setup -->",
    "<!-- pytest-codeblocks: expected-output -->",
    "<!--pytest-codeblocks:skip-->",
    "<!--pytest-codeblocks:cont-->",
    "<!--pytest.mark.skip-->",
]


@pytest.mark.parametrize("marker", NEAR_MISSES)
def test_a_near_miss_marker_fails_naming_page_and_line(site, marker):
    ran = site.root / "ran.txt"
    path = site.snippet("ok.py", f"open({str(ran)!r}, 'a').write('x')\nprint('shown')\n")
    with pytest.raises(Exception) as caught:
        site.render(page_with(path, marker))
    assert f"{PAGE}:{MARKER_LINE}: " in str(caught.value), str(caught.value)
    assert not ran.exists(), "nothing runs for a marker that does not parse"


@pytest.mark.parametrize("marker, seen", [("<!-- build-output: snippets/hostile/ok.py -->\u00a0", r"\xa0"),
                                          ("\u2003<!-- build-output: snippets/hostile/ok.py -->", r"\u2003")])
def test_a_near_miss_by_invisible_white_space_shows_it_in_the_error(site, marker, seen):
    """A no-break or em space before or after a marker makes it a near miss; the error quotes the line
    with that character written out, not stripped away (the quoted line looked like a good marker)."""
    site.snippet("ok.py", "print('fine')\n")
    with pytest.raises(markers.MarkerError) as caught:
        site.render(page_with("snippets/hostile/ok.py", marker))
    assert seen in str(caught.value), str(caught.value)


def test_trailing_spaces_after_a_marker_are_allowed(site):
    path = site.snippet("ok.py", "print('shown')\n")
    assert shown(site.render(page_with(path, markers.build_output(path) + "  "))) == ["shown"]


def test_markers_inside_fenced_code_are_text(site):
    ran = site.root / "ran.txt"
    path = site.snippet("ok.py", f"open({str(ran)!r}, 'a').write('x')\nprint('shown')\n")
    shown_as_code = (f"{markers.build_output(path)}\n<!--build-output: near miss-->\n<!-- needs-extra: gpu -->\n"
                     f"<!-- kernels.json: nosuch -->\n<!--pytest.mark.skip-->")
    text = (f"# Hostile\n\n````markdown\n```python\n--8<-- \"{path}\"\n```\n\n{shown_as_code}\n````\n\n"
            f"~~~text\n{markers.build_output(path)}\n~~~\n\nThe marker `{markers.build_output(path)}` in prose.\n\n"
            f"A later block:\n\n```\nlater\n```\n\nAfter the output.\n")
    page_html = site.render(text)
    assert not ran.exists(), "a marker inside a fence ran its snippet"
    assert html.escape(markers.build_output(path), quote=False) in page_html
    assert page_html.count("&lt;!-- build-output") == 3 and "near miss" in page_html
    assert_page_goes_on(page_html)


@pytest.mark.parametrize("block", [
    "> ```text\n>\n> {marker}\n> ```\n",                   # a blank quoted line inside a quoted fence
    ">\t```text\n>\t{marker}\n> ```\n",                    # a tab after the quote's '>', closed with a space
    "- item\n\n\t```text\n\t{marker}\n    ```\n",          # a list item's fence opened with a tab
    "> ~~~text\n> {marker}\n> ~~~\n",                      # tildes in a quote
    "1. item\n\n    ~~~text\n    {marker}\n    ~~~\n",      # tildes in a list item
    "Text.\n\n    ```text\n    {marker}\n    ```\n",        # a fence indented as code
], ids=["quote with a blank line", "quote and tab", "list item and tab", "tildes in a quote",
        "tildes in a list item", "indented as code"])
def test_a_marker_inside_any_block_superfences_takes_is_text(site, block):
    """Fences in block quotes and list items, opened or continued with tabs, with tildes, indented as
    code: the blocks are pymdownx.superfences' own (the scan runs it), and a marker inside one is its
    text, shown as written, its snippet not run (the scan lost the first three blocks and failed
    the build on the marker as a near miss)."""
    ran = site.root / "ran.txt"
    path = site.snippet("ok.py", f"open({str(ran)!r}, 'a').write('x')\nprint('shown')\n")
    page_html = site.render(f"# Hostile\n\n{block.format(marker=markers.build_output(path))}\nAfter.\n")
    assert not ran.exists(), "a marker inside a block ran its snippet"
    assert html.escape(markers.build_output(path), quote=False) in page_html, page_html
    assert page_html.rstrip().endswith("<p>After.</p>"), page_html[-300:]


#: a marker, a near miss and a misplaced note, as a page documenting the markers shows them
SHOWN_AS_CODE = "{marker}\n<!--build-output: near miss-->\n<!-- needs-extra: compare -->"


@pytest.mark.parametrize("block", [
    "Text.\n\n    {code}\n",                              # after a paragraph and a blank line
    "## Markers\n    {code}\n",                            # right under a heading
    "- item\n\n        {code}\n",                         # indented as code inside a list item
    ">     {code}\n",                                      # inside a block quote
    '!!! note "Markers"\n\n        {code}\n',               # inside an admonition
    "Text.\n\n\t{code}\n",                                 # indented with a tab
], ids=["after a paragraph", "under a heading", "in a list item", "in a block quote", "in an admonition", "tab"])
def test_a_marker_inside_an_indented_code_block_is_text(site, block):
    """An indented (not fenced) code block is code: a marker in it, a near miss or one out of place, is
    shown as written, its snippet not run (it was refused as a near miss, failing the build)."""
    ran = site.root / "ran.txt"
    path = site.snippet("ok.py", f"open({str(ran)!r}, 'a').write('x')\nprint('shown')\n")
    code = SHOWN_AS_CODE.format(marker=markers.build_output(path))
    prefix = re.search(r"(?:^|\n)(?P<indent>[ \t>]*)\{code\}", block)["indent"]
    code = code.replace("\n", "\n" + prefix)
    page_html = site.render(f"# Hostile\n\n{block.format(code=code)}\nAfter.\n")
    assert not ran.exists(), "a marker inside an indented code block ran its snippet"
    assert "</code></pre>" in page_html and "near miss" in page_html, page_html
    assert page_html.count("&lt;!--") == 3, page_html
    assert page_html.rstrip().endswith("<p>After.</p>"), page_html[-300:]


@pytest.mark.parametrize("page, line", [
    ("- item\n\n    <!--build-output: near miss-->\n", 5),             # a list item's continuation
    ("1. item\n\n    text\n\n    <!--build-output: near miss-->\n", 7),  # its second continuation
    ("Text.\n    <!--build-output: near miss-->\n", 4),                 # a paragraph's lazy line, no blank
    ("- item\n\n    - inner\n\n        <!--build-output: near miss-->\n", 7),   # a nested item's
], ids=["list continuation", "second continuation", "paragraph line", "nested list continuation"])
def test_an_indented_line_that_is_no_code_block_still_has_its_markers_checked(site, page, line):
    """A line indented as code is not code when it continues a list item (Python-Markdown's own rule)
    or a paragraph: a near-miss marker there still fails the build, naming its line."""
    with pytest.raises(markers.MarkerError, match=rf"^{PAGE}:{line}: .*looks like a build-output marker"):
        site.render(f"# Hostile\n\n{page}\nAfter.\n")


def test_a_needs_extra_note_in_a_list_items_continuation_is_a_marker(site):
    """A list item's continuation, indented as code, is the item's: a needs-extra marker there, right
    above the item's python block, becomes its note (it is not shown as code)."""
    path = site.snippet("ok.py", "print('shown')\n")
    page_html = site.render(f'# Hostile\n\n1. Step one.\n\n    {markers.needs_extra("compare")}\n    ```python\n'
                            f'    --8<-- "{path}"\n    ```\n\nAfter.\n')
    assert "This block needs the <code>compare</code> extra" in page_html, page_html
    assert "needs-extra" not in page_html, page_html


def test_a_fence_line_superfences_does_not_take_leaves_the_markers_under_it_read(site):
    """A fence with words after its language that are no options is no fence to pymdownx.superfences:
    the lines under it are the page's, and a marker there is checked, failing naming its line (it
    was taken as code, and the unread comment failed the build naming no line)."""
    with pytest.raises(markers.MarkerError, match=rf"^{PAGE}:4: .*right above the python block"):
        site.render("# Hostile\n\n```python two words\n<!-- needs-extra: compare -->\n```\n\nAfter.\n")


def test_two_markers_for_one_block_fail_naming_the_second(site):
    path = site.snippet("ok.py", "print('shown')\n")
    with pytest.raises(ValueError, match=rf"^{PAGE}:{MARKER_LINE + 2}: .*one marker per block"):
        site.render(page_with(path, markers.build_output(path) + "\n\n" + markers.build_output(path)))
    other = site.snippet("other.py", "print('other')\n")
    with pytest.raises(ValueError, match=rf"^{PAGE}:{MARKER_LINE}: .*right under the block"):
        site.render(page_with(path, markers.build_output(other)))


def test_a_needs_extra_note_stands_right_above_a_python_block(site):
    with pytest.raises(ValueError, match=rf"^{PAGE}:3: .*right above the python block"):
        site.render("# Hostile\n\n<!-- needs-extra: compare -->\n\nText, not a block.\n")
    with pytest.raises(ValueError, match=rf"^{PAGE}:3: .*the same note twice"):
        site.render("# Hostile\n\n<!-- needs-extra: compare -->\n<!-- needs-extra: compare -->\n```python\nx\n```\n")


def test_a_marker_that_reaches_the_page_unread_fails_naming_the_page(site):
    """One that an include brings in after the markers were read stays a comment in the HTML."""
    path = site.snippet("ok.py", "print('shown')\n")
    (site.snippets / "part.md").write_text(markers.build_output(path) + "\n")
    with pytest.raises(ValueError, match=rf"^{PAGE}: .*left in the rendered page"):
        site.render('# Hostile\n\n--8<-- "snippets/hostile/part.md"\n\nAfter the output.\n')


class CountedLines(list):
    """A page's lines that count each line read, and stop a scan that reads more than ``budget``."""

    def __init__(self, lines, budget: int):
        super().__init__(lines)
        self.reads, self.budget = 0, budget

    def _read(self, n: int = 1) -> None:
        self.reads += n
        if self.reads > self.budget:
            raise AssertionError(f"more than {self.budget} line reads for {len(self)} lines: not linear")

    def __getitem__(self, index):
        self._read(len(range(*index.indices(len(self)))) if isinstance(index, slice) else 1)
        return super().__getitem__(index)

    def __iter__(self):
        for line in super().__iter__():
            self._read()
            yield line


@pytest.mark.parametrize("opener", ["```python", "~~~text", "  ```text", "```{.python .excerpt}"])
def test_finding_fences_is_linear_in_fence_openers_that_never_close(opener):
    """Work counted, not timed: each line is read a bounded number of times however many fences
    open and never close (a scan from each opener to the page's end would read the square);
    superfences makes no block after a fence that never closes, and neither does the scan."""
    for n in (2_000, 20_000):
        lines = CountedLines(["# Hostile", "", *[opener] * n, "", "After."], budget=4 * (n + 4))
        started = time.monotonic()
        assert markers.fences(lines) == []
        assert lines.reads <= 4 * len(lines), lines.reads
        assert time.monotonic() - started < 10, "20,000 fence openers took more than 10 s"
    page = "\n".join(["# Hostile", "", *["```python"] * 20_000, "After."])
    assert markers.find(page, PAGE) == []
    for text in ("````\nnever closed\n\n```\nx\n```\n", "  ```\n  x\n```\ny\n```\n"):
        assert markers.fences(text.split("\n")) == []
        assert "<pre" not in markdown.markdown(text, extensions=["pymdownx.superfences"]), text


@pytest.mark.parametrize("block, line", [
    ("```python\nx = 1\n````\n", 7),                          # closed by a longer fence: never closed
    ("```python\nx = 1\n````\ny = 2\n```\n", 7),              # a longer fence inside, then the close
    ("~~~\nx = 1\n~~~~~ \n", 7),
    ("```\nx = 1\n  ```\n```\n", 7),                           # the same fence, indented more
    ("- item\n\n    ```\n    x = 1\n    `````\n", 9),         # in a list item
])
def test_a_fence_that_superfences_does_not_take_as_the_close_fails_naming_page_and_line(site, block, line):
    """CommonMark would end the block at that line; pymdownx.superfences does not, and the page
    renders as a paragraph or runs the block on: the build fails naming the page, the line and the
    opening line."""
    with pytest.raises(markers.MarkerError, match=rf"^{PAGE}:{line}: .* would close the code block opened on "
                                                  rf"line {line - 2} .* in CommonMark, but pymdownx\.superfences"):
        site.render(f"# Hostile\n\nText.\n\n{block}\nAfter.\n")


def test_a_shorter_fence_or_the_other_kind_inside_a_block_is_its_text(site):
    page_html = site.render("# Hostile\n\n````markdown\n```python\nx = 1\n```\n~~~~~\n````\n\nAfter.\n")
    assert "```python" in html.unescape(page_html) and "~~~~~" in page_html
    assert page_html.rstrip().endswith("<p>After.</p>")


def test_every_page_of_the_site_passes_the_marker_check():
    for path in sorted((ROOT / "docs").rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        fenced = {i for start, end in markers.fences(lines) for i in range(start, end + 1)}
        comments = sum(line.count("<!--") for i, line in enumerate(lines) if i not in fenced)
        found = markers.find(text, f"docs/{path.relative_to(ROOT / 'docs').as_posix()}")
        assert len(found) == comments, f"{path.name}: a comment that is not a marker"


# -- 3. bounded output and run time ------------------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def test_too_much_output_stops_the_snippet_at_the_limit_and_fails_naming_page_and_snippet(site):
    pid = site.root / "pid.txt"
    path = site.snippet("flood.py", f"import os, sys, time\nopen({str(pid)!r}, 'w').write(str(os.getpid()))\n"
                                    "sys.stdout.write('x' * (8 << 20))\nsys.stdout.flush()\ntime.sleep(30)\n")
    started = time.monotonic()
    with pytest.raises(Exception) as caught:
        site.render(page_with(path, markers.build_output(path)))
    assert time.monotonic() - started < 20, "it waited for the snippet instead of stopping it at the limit"
    message = str(caught.value)
    assert message.startswith(f"{PAGE}:{MARKER_LINE}: ") and path in message
    assert f"{build_output.OUTPUT_LIMIT:,} bytes" in message
    assert not _alive(int(pid.read_text()))


def test_output_up_to_the_limit_is_shown_whole_and_one_byte_more_fails(site):
    limit = build_output.OUTPUT_LIMIT
    path = site.snippet("full.py", f"print('é' * {(limit - 1) // 2} + 'x' * {(limit - 1) % 2})\n")
    (text,) = shown(site.render(page_with(path, markers.build_output(path))))
    assert len(text.encode("utf-8")) + 1 == limit
    path = site.snippet("over.py", f"print('x' * {limit})\n")
    with pytest.raises(Exception, match=rf"^{PAGE}:{MARKER_LINE}: .*{path} printed more than {limit:,} bytes"):
        site.render(page_with(path, markers.build_output(path)))


def test_a_snippet_that_runs_too_long_is_stopped_and_fails_naming_page_and_snippet(site, monkeypatch):
    monkeypatch.setattr(build_output, "TIMEOUT_S", 2, raising=False)
    path = site.snippet("forever.py", "import time\ntime.sleep(30)\nprint('late')\n")
    started = time.monotonic()
    with pytest.raises(Exception, match=rf"^{PAGE}:{MARKER_LINE}: .*{path} ran longer than 2 s"):
        site.render(page_with(path, markers.build_output(path)))
    assert time.monotonic() - started < 20


def test_a_process_the_snippet_leaves_behind_neither_holds_the_build_nor_outlives_it(site):
    pid = site.root / "pid.txt"
    path = site.snippet("leaves.py", "import subprocess, sys\n"
                                     "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
                                     f"open({str(pid)!r}, 'w').write(str(child.pid))\nprint('done')\n")
    started = time.monotonic()
    assert shown(site.render(page_with(path, markers.build_output(path)))) == ["done"]
    assert time.monotonic() - started < 20, "the build waited for a child that held the snippet's stdout"
    assert not _alive(int(pid.read_text()))


def test_a_process_that_leaves_the_snippets_group_holds_the_build_a_few_seconds_at_most(site):
    pid = site.root / "pid.txt"
    path = site.snippet("escapes.py", "import subprocess, sys\n"
                                      "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'],"
                                      " start_new_session=True)\n"
                                      f"open({str(pid)!r}, 'w').write(str(child.pid))\nprint('done')\n")
    started = time.monotonic()
    try:
        assert shown(site.render(page_with(path, markers.build_output(path)))) == ["done"]
        assert time.monotonic() - started < 20, "the build waited for a process that held the snippet's stdout"
    finally:
        os.kill(int(pid.read_text()), 9)


def test_a_build_output_snippet_reaches_nothing_beside_it_that_its_key_does_not_cover(site):
    """The key of a build output is that of its code: a neighbouring module it imported, or a file it
    read beside itself, could change with the key unchanged and the stored output stale. The snippet
    runs alone in a scratch folder, as a page block does, so either fails the build naming it."""
    (site.snippets / "helper.py").write_text("VALUE = 1\n")
    (site.snippets / "data.txt").write_text("1\n")
    for name, code, says in (("imports.py", "import helper\nprint(helper.VALUE)\n", "No module named 'helper'"),
                             ("reads.py", "from pathlib import Path\nprint((Path(__file__).parent / 'data.txt')"
                                          ".read_text())\n", "data.txt")):
        path = site.snippet(name, code)
        with pytest.raises(build_output.BuildOutputError) as caught:
            site.render(page_with(path, markers.build_output(path)))
        assert str(caught.value).startswith(f"{PAGE}:{MARKER_LINE}: ") and path in str(caught.value) \
            and says in str(caught.value), str(caught.value)[-600:]


def test_one_stored_output_shows_right_under_a_plain_marker_and_one_as_markdown(site):
    """The marker's ``as markdown`` changes how the stored stdout is shown, not what the snippet
    prints: both markers share its key, and each renders the stored text its own way."""
    path = site.snippet("table.py", "print('| a | b |')\nprint('|---|---|')\nprint('| 1 | 2 |')\n")
    plain = site.render(page_with(path, markers.build_output(path)))
    table = site.render(page_with(path, markers.build_output(path, as_markdown=True)))
    assert "<table>" not in plain and "| a | b |" in html.unescape(plain)
    assert "<table>" in table and "<td>1</td>" in table
    assert len(list((site.root.parent / "cache" / "executed" / "build_output").iterdir())) == 1


def test_a_snippet_reads_no_input(site):
    path = site.snippet("stdin.py", "import os\nprint(os.path.samestat(os.fstat(0), os.stat(os.devnull)))\n")
    assert shown(site.render(page_with(path, markers.build_output(path)))) == ["True"]


@pytest.mark.parametrize("code, says", [
    ("raise SystemExit('the model diverged')\n", "failed at build time (exit status 1):\nthe model diverged"),
    ("import sys\nsys.stderr.write('only a warning\\n')\n", "printed nothing on stdout"),
    ("print('\\u00a0\\u3000\\r')\n", "printed only whitespace (4 characters such as '\\xa0') on stdout"),
    ("import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe\\n')\n", "not UTF-8 (at byte 3"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "signal 9"),
])
def test_a_snippet_that_fails_or_prints_no_text_fails_naming_page_line_and_snippet(site, code, says):
    path = site.snippet("bad.py", code)
    with pytest.raises(Exception) as caught:
        site.render(page_with(path, markers.build_output(path)))
    message = str(caught.value)
    assert message.startswith(f"{PAGE}:{MARKER_LINE}: {markers.build_output(path)}: ") and path in message
    assert says in message, message


def test_a_snippet_that_cannot_be_read_fails_naming_page_and_line(site):
    (site.snippets / "binary.py").write_bytes(b"print('\xff')\n")
    (site.snippets / "loop.py").symlink_to("loop.py")
    for name in ("binary.py", "loop.py"):
        path = f"snippets/hostile/{name}"
        with pytest.raises(Exception, match=rf"^{PAGE}:{MARKER_LINE}: {re.escape(markers.build_output(path))}: "):
            site.render(page_with(path, markers.build_output(path)))


def test_a_page_block_that_prints_more_than_a_build_output_shows_fails_and_is_not_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    code = "print('x' * 200_000)\n"                    # over the limit, 64 KiB
    with pytest.raises(build_output.BuildOutputError, match="^docs/x.md:3 printed more than 65,536 bytes"):
        build_output.run_stored(code, tmp_path, "shared", "docs/x.md:3")
    assert store.lookup("build_output", build_output.code_key(code, "shared")) is None


# -- 4. every error names the page -------------------------------------------------------------------

def test_unknown_names_in_markers_fail_naming_page_and_line(site):
    with pytest.raises(ValueError, match=rf"^{PAGE}:3: <!-- kernels.json: nosuch -->: no measured section"):
        site.render("# Hostile\n\n<!-- kernels.json: nosuch -->\n")
    with pytest.raises(ValueError, match=rf"^{PAGE}:3: <!-- needs-extra: gpu -->: no such extra"):
        site.render("# Hostile\n\n<!-- needs-extra: gpu -->\n```python\nx = 1\n```\n")


def test_a_near_miss_citation_fails_naming_page_and_line_and_one_in_code_is_text(site):
    """Checked on the page as written: a needs-extra note above (which the build turns into many
    lines) does not move the line the error names."""
    top = "# Hostile\n\n<!-- needs-extra: compare -->\n```python\nx = 1\n```\n\n"
    with pytest.raises(ValueError, match=rf"^{PAGE}:8: '\[@near-miss\]' looks like a citation"):
        site.render(top + "As [@near-miss] said.\n")
    page = site.render(top + "<code>[@near-miss]</code> and\n\n    [@vaswani2017attention] indented\n")
    assert "[@near-miss]" in page and "[@vaswani2017attention] indented" in page and "bibliography" not in page


@pytest.mark.parametrize("name", ["self.md", "a.md"])
def test_an_include_that_leads_back_to_itself_fails_naming_the_page(site, name):
    """A file that includes itself, or two that include each other: pymdownx.snippets leaves the
    include that leads back out without a word (the page silently lacks it); the build fails
    naming the page and the include. A file included twice, one after the other, is no cycle."""
    site.snippet("self.md", '--8<-- "snippets/hostile/self.md"\n')
    site.snippet("a.md", 'a text\n--8<-- "snippets/hostile/b.md"\n')
    site.snippet("b.md", 'b text\n--8<-- "snippets/hostile/a.md"\n')
    with pytest.raises(includes.PathError) as caught:
        site.render(f'# Hostile\n\n--8<-- "snippets/hostile/{name}"\n\nAfter.\n')
    message = str(caught.value)
    assert re.match(rf'{PAGE}:3: in snippets/hostile/[a-z]+\.md:\d+: --8<-- "snippets/hostile/', message), message
    assert "leads back" in message, message
    site.snippet("twice.md", 'twice\n')
    site.snippet("both.md", '--8<-- "snippets/hostile/twice.md"\n\n--8<-- "snippets/hostile/twice.md"\n')
    assert site.render('# Hostile\n\n--8<-- "snippets/hostile/both.md"\n').count("<p>twice</p>") == 2


def test_an_include_that_is_not_utf8_fails_naming_the_page_and_the_include(site):
    """pymdownx.snippets read a Latin-1 include as UTF-8 and stopped the build with a bare
    UnicodeDecodeError naming neither the page nor the file; nested includes are checked the same way."""
    (site.snippets / "latin.md").write_bytes(b"caf\xe9 au lait\n")
    site.snippet("outer.md", 'outer\n\n--8<-- "snippets/hostile/latin.md"\n')
    for name in ("latin.md", "outer.md"):
        # the page's line of the include, and for a nested one the line of the file that includes it
        inner = " in snippets/hostile/outer\\.md:3:" if name == "outer.md" else ""
        with pytest.raises(ValueError, match=rf'^{PAGE}:3:{inner} --8<-- "snippets/hostile/latin.md": snippets/hostile/latin.md '
                                             r"is not utf-8 text \(at byte 3: b'\\xe9 au lai'\)"):
            site.render(f'# Hostile\n\n--8<-- "snippets/hostile/{name}"\n')


def test_an_include_of_a_folder_or_a_pipe_says_what_it_is(site):
    """An include naming a folder or a FIFO was reported as 'no such file'; it says what is there."""
    os.mkfifo(site.snippets / "fifo.md")
    (site.snippets / "folder").mkdir()
    for name, kind in (("fifo.md", "a FIFO"), ("folder", "a directory")):
        with pytest.raises(includes.PathError, match=rf'^{PAGE}:3: --8<-- "snippets/hostile/{name}": .*/{name} is '
                                                     rf"{kind}, not a regular file"):
            site.render(f'# Hostile\n\n--8<-- "snippets/hostile/{name}"\n')
    with pytest.raises(FileNotFoundError, match=rf'^{PAGE}:3: --8<-- "snippets/hostile/nosuch.md": no such file'):
        site.render('# Hostile\n\n--8<-- "snippets/hostile/nosuch.md"\n')


def test_an_include_over_the_size_limit_fails_naming_page_line_and_file(site):
    """A 50 MiB include was put into the page whole; past INCLUDE_LIMIT the build fails naming the
    page, the include's line (and, for an include inside an included file, that file and its line)
    and the file, before reading it."""
    with open(site.snippets / "big.md", "wb") as f:
        f.truncate(50 << 20)                                      # 50 MiB, sparse
    site.snippet("outer.md", 'outer\n\n--8<-- "snippets/hostile/big.md"\n')
    says = r'--8<-- "snippets/hostile/big\.md": \S*/big\.md is 52,428,800 bytes, over INCLUDE_LIMIT = '
    with pytest.raises(includes.PathError, match=rf"^{PAGE}:5: {says}"):
        site.render('# Hostile\n\nText.\n\n--8<-- "snippets/hostile/big.md"\n')
    with pytest.raises(includes.PathError, match=rf"^{PAGE}:3: in snippets/hostile/outer\.md:3: {says}"):
        site.render('# Hostile\n\n--8<-- "snippets/hostile/outer.md"\n')


def test_what_a_page_s_includes_bring_together_is_bounded_before_they_are_expanded(site):
    """Each file under INCLUDE_LIMIT, nested includes still multiply what a page takes in: past
    PAGE_INCLUDE_LIMIT (nested files counted each time they are included, the page's includes
    together) or INCLUDE_DEPTH levels, the build fails naming the page and the include's line."""
    site.snippet("leaf.txt", "x" * (200 << 10) + "\n")                      # 200 KiB
    for k in range(1, 4):                                                  # 2, 4, 8 copies of the leaf
        below = "leaf.txt" if k == 1 else f"double{k - 1}.txt"
        site.snippet(f"double{k}.txt", f"-8<- 'snippets/hostile/{below}'\n" * 2)
    says = r"the page's includes bring [\d,]+ bytes into it .* over PAGE_INCLUDE_LIMIT = "
    with pytest.raises(includes.PathError, match=rf'^{PAGE}:3: --8<-- "snippets/hostile/double3.txt": {says}'):
        site.render('# Hostile\n\n--8<-- "snippets/hostile/double3.txt"\n')
    with pytest.raises(includes.PathError, match=rf'^{PAGE}:5: --8<-- "snippets/hostile/double2.txt": {says}'):
        site.render('# Hostile\n\n--8<-- "snippets/hostile/double1.txt"\n\n--8<-- "snippets/hostile/double2.txt"\n')
    assert site.render('# Hostile\n\n--8<-- "snippets/hostile/double2.txt"\n').count("x" * 1000) >= 4 * 200
    for k in range(1, includes.INCLUDE_DEPTH + 1):                         # a chain one level too deep
        site.snippet(f"chain{k}.md", f'--8<-- "snippets/hostile/chain{k - 1}.md"\n' if k > 1 else "end\n")
    top = includes.INCLUDE_DEPTH
    assert "<p>end</p>" in site.render(f'# Hostile\n\n--8<-- "snippets/hostile/chain{top}.md"\n')
    site.snippet("chain0.md", "end\n")
    site.snippet("chain1.md", '--8<-- "snippets/hostile/chain0.md"\n')
    with pytest.raises(includes.PathError, match=rf'^{PAGE}:3: --8<-- "snippets/hostile/chain{top}.md": its '
                                                 rf"includes nest \d+ deep or more, over INCLUDE_DEPTH"):
        site.render(f'# Hostile\n\n--8<-- "snippets/hostile/chain{top}.md"\n')


def test_an_included_fence_line_fails_the_block_that_it_would_close(site):
    """A line of an included file (or of a file it includes) that could close the page's fenced block
    holding the include fails the build naming the page, the line and the file; shown in a block
    with a longer fence, or another fence character, it is code, and outside a block, Markdown."""
    site.snippet("fenced.py", 'SHOWN = """\n```\n<script>window.injected = 1</script>\n```\n"""\n')
    site.snippet("outer.py", 'print(1)\n--8<-- "snippets/hostile/fenced.py"\n')
    for name in ("fenced.py", "outer.py"):
        with pytest.raises(ValueError, match=rf'^{PAGE}:6: --8<-- "snippets/hostile/{name}": line \d+ of what '
                                             rf"snippets/hostile/{name} brings into the page, '```', would close"):
            site.render(f'# Hostile\n\nText.\n\n```python\n--8<-- "snippets/hostile/{name}"\n```\n')
    for fence, language in (("````", "python"), ("~~~", "text")):     # a python block fenced with tildes never runs
        page_html = site.render(f'# Hostile\n\n{fence}{language}\n--8<-- "snippets/hostile/outer.py"\n{fence}\n\nAfter.\n')
        assert [t for t, _ in Tags(page_html).found if t in ("script", "h1")] == ["h1"], page_html
        assert "window.injected" in html.unescape(page_html) and page_html.rstrip().endswith("<p>After.</p>")


def test_every_include_form_is_read_as_pymdownx_snippets_reads_it():
    """One parser of include lines serves every stage that reads them (the excerpt stages, the
    build-output check, the inputs of a dirty build): its own patterns, pymdownx.snippets'."""
    lines = ['--8<-- "a.py"', "  -8<- 'b.py:part'", '---8<--- "c.py:1:3"', ';--8<-- "escaped.py"',
             "text --8<-- 'not.py'", "--8<--", "d.py", "; commented.py", '--8<-- "skipped.py"', "e.py:2:,8:9",
             "--8<--", '--8<-- "f.py" ']
    found = [(inc.index, inc.path, inc.section, inc.ranges) for inc in markers.includes(lines)]
    assert found == [(0, "a.py", None, None), (1, "b.py", "part", None), (2, "c.py", None, ":1:3"),
                     (6, "d.py", None, None), (9, "e.py", None, ":2:,8:9")]
    from site_build import dirty_pages

    inputs = dirty_pages.page_inputs("\n".join(lines), library=[])
    assert [p.relative_to(ROOT).as_posix() for p in inputs] == ["a.py", "b.py", "c.py", "d.py", "e.py"]


def test_a_build_output_under_an_include_in_another_form_is_in_place(site):
    path = site.snippet("hi.py", 'print("hi")\n')
    page = f"# Hostile\n\n```python\n-8<- '{path}'\n```\n\n{markers.build_output(path)}\n\nAfter the output.\n"
    assert shown(site.render(page)) == ["hi"]


def test_a_page_or_an_include_saved_with_a_byte_order_mark_reads_as_without_it(site):
    """A UTF-8 byte order mark starts the file, not its first line: a heading or a marker on line 1 of
    a page, or of an included file, is read as one (not as text after U+FEFF), and no U+FEFF reaches
    the page. The page is read as MkDocs reads it, then rendered by the plugin."""
    from mkdocs.structure.files import File
    from mkdocs.structure.pages import Page

    docs = site.root / "docs"
    docs.mkdir()
    config = load_config(str(ROOT / "mkdocs.yml"))

    def render_file(text: str) -> str:
        (docs / "hostile.md").write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
        page = Page(None, File("hostile.md", str(docs), str(site.root / "site"), False), config)
        page.read_source(config)
        return site.render(page.markdown, abs_src_path=str(docs / "hostile.md"))

    site.snippet("part.md", "\ufeff# Included heading\n\nIncluded text.\n")
    page_html = render_file('# Hostile\n\n--8<-- "snippets/hostile/part.md"\n\nAfter.\n')
    assert '<h1 id="hostile">' in page_html and '<h1 id="included-heading">' in page_html, page_html
    assert "\ufeff" not in page_html and "<p>Included text.</p>" in page_html
    with pytest.raises(markers.MarkerError, match=rf"^{PAGE}:1: '<!--build-output: x-->' looks like a build-output"):
        render_file("<!--build-output: x-->\n\n# Hostile\n")
    path = site.snippet("ok.py", "\ufeffprint('shown')\n")
    assert shown(render_file(f'```python\n--8<-- "{path}"\n```\n\n{markers.build_output(path)}\n')) == ["shown"]


def test_a_broken_excerpt_fails_naming_the_page(site):
    for include, says in (('"netcl_lite/nosuch.py:part"', "no such file"),
                          ('"netcl_lite/__init__.py:nosuch"', "has no section 'nosuch'")):
        with pytest.raises(Exception) as caught:
            site.render(f'# Hostile\n\n```{{.python .excerpt}}\n--8<-- {include}\n```\n')
        assert str(caught.value).startswith(f"{PAGE}:4: --8<-- {include}") and says in str(caught.value)


@pytest.mark.parametrize("include", ["snippets/hostile/latin.py", "snippets/hostile/latin.py:part"])
def test_an_excerpt_of_a_file_that_is_not_utf8_fails_naming_page_and_file(site, monkeypatch, include):
    """A Latin-1 comment in a library file: the excerpt's check read it as UTF-8 and stopped the build
    with a bare UnicodeDecodeError naming neither the page nor the file."""
    monkeypatch.setattr(copyable, "ROOT", site.root)
    (site.snippets / "latin.py").write_bytes(b"# --8<-- [start:part]\nx = 1  # caf\xe9\n# --8<-- [end:part]\n")
    with pytest.raises(ValueError, match=rf'^{PAGE}:4: --8<-- "{include}": snippets/hostile/latin.py is not '
                                         r"UTF-8 text \(at byte 34: b'\\xe9\\n"):
        site.render(f'# Hostile\n\n```{{.python .excerpt}}\n--8<-- "{include}"\n```\n')


SECTIONS = {   # a library file's text: the error naming its line
    "unclosed": ("x = 0\n# --8<-- [start:part]\nx = 1\n", ":2: the section 'part' is never closed"),
    "closed before it starts": ("# --8<-- [end:part]\n# --8<-- [start:part]\nx = 1\n", ":2: the section 'part' is never closed"),
    "marked twice": ("# --8<-- [start:part]\nx = 1\n# --8<-- [end:part]\n# --8<-- [start:part]\ny = 2\n"
                     "# --8<-- [end:part]\n", ":4: the section 'part' has a second start marker (the first is on line 1)"),
    "two ends": ("# --8<-- [start:part]\nx = 1\n# --8<-- [end:part]\n# --8<-- [end:part]\n",
                 ":4: the section 'part' has a second end marker"),
    "nested": ("# --8<-- [start:part]\nx = 1\n# --8<-- [start:inner]\ny = 2\n# --8<-- [end:inner]\n"
               "# --8<-- [end:part]\n", ":3: the start marker of section 'inner' stands inside the section 'part'"),
    "overlapping": ("# --8<-- [start:part]\nx = 1\n# --8<-- [start:other]\n# --8<-- [end:part]\n"
                    "# --8<-- [end:other]\n", ":3: the start marker of section 'other' stands inside"),
}


@pytest.mark.parametrize("case", list(SECTIONS))
def test_an_excerpt_of_a_section_not_marked_once_whole_fails_naming_page_file_and_line(site, monkeypatch, case):
    """An excerpt's section with no end, a second start or end, or another section's marker inside
    it (which pymdownx.snippets would drop from the excerpt, or show as the first of two) fails the
    build naming the page's line and the file's."""
    from site_build import copyable

    text, says = SECTIONS[case]
    (site.root / "netcl_lite").mkdir()
    (site.root / "netcl_lite" / "odd.py").write_text(text)
    monkeypatch.setattr(copyable, "ROOT", site.root)
    page = '# Hostile\n\nText.\n\n```{.python .excerpt}\n--8<-- "netcl_lite/odd.py:part"\n```\n'
    with pytest.raises(ValueError) as caught:
        site.render(page)
    assert str(caught.value).startswith(f'{PAGE}:6: --8<-- "netcl_lite/odd.py:part": netcl_lite/odd.py{says}'), \
        str(caught.value)


def test_an_excerpt_of_a_section_marked_once_shows_its_lines_and_escaped_markers_are_text(site, monkeypatch):
    from site_build import copyable

    (site.root / "netcl_lite").mkdir()
    (site.root / "netcl_lite" / "odd.py").write_text("# --8<-- [start:part]\nx = 1\n# ;--8<-- [start:part]\n"
                                                    "# --8<-- [end:part]\n# --8<-- [start:next]\n# --8<-- [end:next]\n")
    monkeypatch.setattr(copyable, "ROOT", site.root)
    assert copyable.section_lines("netcl_lite/odd.py", "part") == (2, 3)


@pytest.mark.parametrize("separator, lines", [("\x0c", (4, 4)), ("\u2028", (4, 4)), ("\x85", (4, 4)),
                                              ("\x0b", (4, 4)), ("\x1e", (4, 4)), ("\r", (5, 5))])
def test_an_excerpts_line_numbers_count_newlines_as_pymdownx_and_the_source_page_do(site, monkeypatch,
                                                                                   separator, lines):
    """A form feed, U+2028, U+0085 or another character ``str.splitlines`` breaks at is inside its
    line for pymdownx.snippets, for editors and for the source page's ``#L`` anchors, so the
    excerpt's note counts only newlines; a lone CR ends a line for all of them alike (every one
    reads the file in text mode). A leading blank line is line 1 on the source page too."""
    from site_build import copyable, source_pages

    text = f"\na = 1  # {separator}b\n# --8<-- [start:s]\nx = 2\n# --8<-- [end:s]\ny = 3\n"
    (site.root / "pyproject.toml").write_text(       # the wheel's files are hatchling's list of this project's
        '[project]\nname = "netcl-lite"\nversion = "0"\n[tool.hatch.build.targets.wheel]\npackages = ["netcl_lite"]\n')
    (site.root / "netcl_lite").mkdir()
    (site.root / "netcl_lite" / "odd.py").write_bytes(text.encode())
    monkeypatch.setattr(copyable, "ROOT", site.root)
    monkeypatch.setattr(source_pages, "ROOT", site.root)
    assert copyable.section_lines("netcl_lite/odd.py", "s") == lines
    page_html = site.render('# Hostile\n\n```{.python .excerpt}\n--8<-- "netcl_lite/odd.py:s"\n```\n')
    first, last = lines
    assert f"lines {first}–{last} of" in page_html and f"#L{first}-L{last}" in page_html, page_html
    listing = source_pages.listing("netcl_lite/odd.py", [lines])
    rows = [html.unescape(re.sub(r"<[^>]+>", "", row))
            for row in re.findall(r'<span class="line" id="L\d+" data-n="\d+">(.*?)</span>(?=<span class="line"|</code>)',
                                  listing, re.S)]
    assert rows[first - 1] == "x = 2" and rows[0] == "" and rows[-1] == "y = 3", rows
    assert len(rows) == last + 2, rows
    assert f"{len(rows)} lines" in source_pages.markdown("netcl_lite/odd.py", [("hostile.md", first, last)], "w.whl")


@pytest.mark.parametrize("gap", ["\n", "\nText.\n", "\n```\n/// caption\n```\n"])
def test_a_figure_without_a_caption_under_it_fails_naming_page_and_line(site, gap):
    page = f"# Hostile\n\n![A figure](figures/chapter7/sinusoidal.svg)\n{gap}"
    with pytest.raises(ValueError, match=rf"^{PAGE}:3: !\[A figure\]\(figures/chapter7/sinusoidal.svg\): a figure "
                                         r"has a caption under it"):
        site.render(page)
    captioned = page.replace(".svg)\n", ".svg)\n\n/// caption\nWhat to see.\n///\n")
    generated.check_captions(captioned, "hostile.md")                 # a blank line between is allowed
    generated.check_captions(f"```\n{page}```\n", "hostile.md")       # in code it is text


def test_a_figure_without_its_svg_fails_naming_the_page(site):
    with pytest.raises(ValueError, match=rf"^{PAGE}:3: docs/figures/nosuch/thing.svg: no such figure"):
        site.render("# Hostile\n\n![A figure](figures/nosuch/thing.svg)\n/// caption\nWhat to see.\n///\n")


def test_a_figure_script_that_is_not_utf8_fails_naming_the_page_and_the_script(generated_tree, monkeypatch):
    """A script declaring latin-1 is valid Python, but its key read it as UTF-8: the build stopped with
    a bare UnicodeDecodeError naming neither the script nor the page."""
    folder = generated_tree / "snippets" / "chapter99"
    folder.mkdir(parents=True)
    script = folder / "figure_latin.py"
    script.write_bytes(b"# -*- coding: latin-1 -*-\nimport sys\nopen(sys.argv[1], 'w').write('<svg/>')  # caf\xe9\n")
    (generated_tree / "docs" / "chapter-99.md").write_text("![a figure](figures/chapter99/latin.svg)\n")
    monkeypatch.setattr(generated, "figure_scripts", lambda: [script])
    with pytest.raises(ValueError, match=r"^docs/chapter-99.md: the figure script .*figure_latin.py \(drawing "
                                         r"figures/chapter99/latin.svg\) is not UTF-8 text \(at byte 82\)"):
        generated.build_figures("shared")


def test_a_failing_figure_script_fails_naming_the_script_and_the_page(generated_tree, monkeypatch):
    folder = generated_tree / "snippets" / "chapter99"
    folder.mkdir(parents=True)
    good, bad = folder / "figure_good.py", folder / "figure_bad.py"
    good.write_text("import sys\nopen(sys.argv[1], 'w').write('<svg/>')\n")
    bad.write_text("raise ValueError('no data to draw')\n")
    (generated_tree / "docs" / "chapter-99.md").write_text("![a figure](figures/chapter99/bad.svg)\n")
    monkeypatch.setattr(generated, "figure_scripts", lambda: [bad, good])
    with pytest.raises(RuntimeError) as caught:
        generated.build_figures("shared")
    message = str(caught.value)
    assert message.startswith("docs/chapter-99.md: the figure script ") and "figure_bad.py" in message
    assert "figure_good.py" not in message.splitlines()[0] and "no data to draw" in message


@pytest.mark.parametrize("code, says", [
    ("print('drawn, but never saved')\n", "exited without writing its figure"),
    ("import sys\nopen(sys.argv[1], 'wb').write(b'\\x89PNG\\r\\n')\n", "wrote a file that is not SVG text"),
])
def test_a_figure_script_that_writes_no_svg_fails_naming_the_script_and_the_page(generated_tree, monkeypatch,
                                                                                 code, says):
    """A script that exits 0 without saving its figure, or saves a PNG to the .svg path: the error
    names the page, the script and the figure, not a temporary file or a codec."""
    message = failed_figure(generated_tree, monkeypatch, "lost", code)
    assert message.startswith("docs/chapter-99.md: the figure script ") and "figure_lost.py" in message, message
    assert "figures/chapter99/lost.svg" in message and says in message, message


def test_a_figure_script_that_runs_too_long_is_stopped(generated_tree, monkeypatch):
    folder = generated_tree / "snippets" / "chapter99"
    folder.mkdir(parents=True)
    (folder / "figure_slow.py").write_text("import time\ntime.sleep(30)\n")
    monkeypatch.setattr(generated, "figure_scripts", lambda: [folder / "figure_slow.py"])
    monkeypatch.setattr(generated, "FIGURES_TIMEOUT_S", 2, raising=False)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="ran longer than 2 s"):
        generated.build_figures("shared")
    assert time.monotonic() - started < 20


def test_a_failing_drill_notebook_fails_naming_its_page(generated_tree, monkeypatch):
    week = generated_tree / "snippets" / "week99"
    week.mkdir(parents=True)
    (week / "drill_1_broken.py").write_text("# Step 1\nraise ValueError('the drill broke')\n")
    (generated_tree / "docs" / "week-99.md").write_text('```python\n--8<-- "snippets/week99/drill_1_broken.py"\n```\n')
    monkeypatch.setattr(generated, "drill_weeks", lambda: [week])
    with pytest.raises(RuntimeError) as caught:
        generated.build_drills("shared")
    message = str(caught.value)
    assert message.startswith("docs/week-99.md: the drill notebook docs/drills/week-99-drill.ipynb")
    assert "the drill broke" in message


@pytest.mark.parametrize("step, says", [
    (b"# Step 1\nprint('x' * 200_000)\n", "the cell step-1 put 200,"),
    (b"# Step \xff\nprint(1)\n", "snippets/week99/drill_1_odd.py is not UTF-8 text (at byte 7)"),
    (b"#!/usr/bin/env python\n# Step 1\nprint(1)\n",
     "snippets/week99/drill_1_odd.py: its first line, '#!/usr/bin/env python', is no heading"),
    (b"#\nprint(1)\n", "snippets/week99/drill_1_odd.py: its first line, '#', is no heading"),
    (b"#   \nprint(1)\n", "its first line, '#   ', is no heading"),
    (b"# -*- coding: utf-8 -*-\nprint(1)\n", "its first line, '# -*- coding: utf-8 -*-', is no heading"),
    (b"print(1)\n", "its first line, 'print(1)', is no heading"),
    (b"", "its first line, '', is no heading"),
])
def test_a_drill_step_that_prints_too_much_or_is_not_text_fails_naming_its_page(generated_tree, monkeypatch,
                                                                                step, says):
    """A step whose output would make the notebook page megabytes long, whose file is not UTF-8, or
    whose first line does not name it (a shebang, a bare ``#``: the heading would be
    '!/usr/bin/env python' or empty): the build fails naming the page, the notebook, the file and
    what is wrong, not with a bare codec error, a notebook of any size or a meaningless heading."""
    week = generated_tree / "snippets" / "week99"
    week.mkdir(parents=True)
    (week / "drill_1_odd.py").write_bytes(step)
    (generated_tree / "docs" / "week-99.md").write_text('```python\n--8<-- "snippets/week99/drill_1_odd.py"\n```\n')
    monkeypatch.setattr(generated, "drill_weeks", lambda: [week])
    monkeypatch.setattr(generated, "_rel", lambda path: Path(path).relative_to(generated_tree).as_posix())
    with pytest.raises(RuntimeError) as caught:
        generated.build_drills("shared")
    message = str(caught.value)
    assert message.startswith("docs/week-99.md: the drill notebook docs/drills/week-99-drill.ipynb"), message
    assert says in message, message
    assert not (generated_tree / "docs" / "drills").exists()


def test_a_drill_steps_line_breaks_other_than_newline_stay_inside_their_line(generated_tree, monkeypatch):
    """A string in a drill step holding characters ``str.splitlines`` breaks at (vertical tab, form
    feed, the file, group and record separators, U+0085, U+2028, U+2029): the step's cell, in the
    notebook made and in the one the build writes, holds the step's lines split at newlines only,
    each but the last ending in one, and runs as the step does."""
    odd = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    week = generated_tree / "snippets" / "week99"
    week.mkdir(parents=True)
    (week / "drill_1_odd.py").write_text(f'# Step 1\ns = "{odd}"\nprint(len(s))\n', encoding="utf-8")
    monkeypatch.setattr(generated, "drill_weeks", lambda: [week])
    lines = ["# Step 1\n", f's = "{odd}"\n', "print(len(s))"]
    assert generated.drill_notebook(week)["cells"][-1]["source"] == lines
    generated.build_drills("shared")
    cell = json.loads((generated_tree / "docs" / "drills" / "week-99-drill.ipynb").read_text("utf-8"))["cells"][-1]
    assert cell["source"] == lines
    assert cell["outputs"][0]["text"] == [f"{len(odd)}\n"]


# -- 5. the shipped wheel ------------------------------------------------------------------------------

def _force_included() -> dict[str, str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]


def test_the_wheels_key_changes_with_every_file_it_carries(tmp_path, monkeypatch):
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "netcl_lite", copy / "netcl_lite", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", *_force_included()):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, copy / name)
    monkeypatch.setattr(shipped_wheel, "ROOT", copy)
    first = shipped_wheel.sources_digest()
    seeds = copy / "benchmarks" / "results" / "capstone_seeds.json"
    seeds.write_text(json.dumps(json.loads(seeds.read_text(encoding="utf-8")), indent=2) + "\n", encoding="utf-8")
    assert seeds.read_bytes() != (ROOT / "benchmarks/results/capstone_seeds.json").read_bytes()
    second = shipped_wheel.sources_digest()
    assert second != first, "the seeds file the wheel carries changed, the key did not"
    assert seeds in shipped_wheel.wheel_sources(), "mkdocs serve would not notice the seeds file change"
    kernel = sorted((copy / "kernels").glob("*.cl"))[0]
    kernel.write_text(kernel.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert shipped_wheel.sources_digest() not in (first, second)


def test_every_file_in_the_shipped_wheel_is_one_its_key_reads_with_the_same_bytes():
    wheel = shipped_wheel.build_wheel()
    sources = set(shipped_wheel.wheel_sources())
    renamed = {target: source for source, target in _force_included().items()}
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if ".dist-info/" not in n]
        assert names, "an empty wheel"
        for name in names:
            source = next((ROOT / src / name[len(target):].lstrip("/") for target, src in renamed.items()
                           if name == target or name.startswith(target + "/")), ROOT / name)
            assert source in sources, f"{name} (from {source.relative_to(ROOT)}) is in the wheel but not in its key"
            assert archive.read(name) == source.read_bytes(), f"{name} is stale in the shipped wheel"


def test_the_shipped_wheel_records_the_modes_its_key_reads_and_a_fixed_date(tmp_path, monkeypatch):
    """Hatchling writes each file's mode (644 or 755) into the wheel and dates its entries by
    SOURCE_DATE_EPOCH: the key covers the modes, and the build pins the date whatever the environment
    says, so a wheel made under another SOURCE_DATE_EPOCH is never shipped under the same key."""
    from hatchling.builders.utils import normalize_file_permissions

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))       # a wheel made now, not a stored one
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    wheel = shipped_wheel.build_wheel()
    modes = {target: normalize_file_permissions(path.stat().st_mode) & 0o7777
             for target, path in shipped_wheel.wheel_inputs() if target}
    date = time.gmtime(shipped_wheel.WHEEL_EPOCH)[:6]
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            assert info.date_time == date, f"{info.filename} is dated {info.date_time}, not {date}"
            if info.filename in modes:
                assert info.external_attr >> 16 & 0o7777 == modes[info.filename], info.filename
        assert modes.keys() <= set(archive.namelist())


def test_an_apparatus_marker_belongs_on_its_own_page_alone():
    """The bibliography and glossary markers become those pages' entries; anywhere else they are an error."""
    assert [m.kind for m in markers.find("# B\n\n<!-- bibliography -->\n", "docs/bibliography.md")] == ["bibliography"]
    assert [m.kind for m in markers.find("# G\n\n<!-- glossary -->\n", "docs/glossary.md")] == ["glossary"]
    with pytest.raises(markers.MarkerError, match=r"^docs/chapter-7\.md:3: .*belongs on docs/glossary\.md"):
        markers.find("# Ch\n\n<!-- glossary -->\n", "docs/chapter-7.md")
    with pytest.raises(markers.MarkerError, match=r"^docs/bibliography\.md:3: .*looks like a bibliography marker"):
        markers.find("# B\n\n<!-- bibliography: all -->\n", "docs/bibliography.md")


def test_a_wheel_interrupted_on_its_way_into_the_cache_is_not_shipped_later(tmp_path, monkeypatch):
    """The cache folder is shared by builds: a wheel copied there half-way (Ctrl-C, a full disk)
    must not be found whole by the next build, which would ship a broken file."""
    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(shipped_wheel, "sources_digest", lambda: "digest")
    wheel = b"PK\x03\x04" + bytes(range(256)) * 64

    def pip_wheel(command, **kwargs):                 # what pip wheel -w <folder> leaves
        (Path(command[command.index("-w") + 1]) / shipped_wheel.wheel_name()).write_bytes(wheel)
        return SimpleNamespace(returncode=0, stderr="")

    def half_copy(src, dst, *args, **kwargs):
        Path(dst).write_bytes(Path(src).read_bytes()[:1000])
        raise KeyboardInterrupt

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(shipped_wheel.subprocess, "run", pip_wheel)
    stored = tmp_path / "cache" / "wheel" / "digest" / shipped_wheel.wheel_name()
    with monkeypatch.context() as m:
        m.setattr(shutil, "copyfile", half_copy)
        m.setattr(os, "fsync", interrupted)
        with pytest.raises(KeyboardInterrupt):
            shipped_wheel.build_wheel()
    assert not stored.exists() and not [p for p in stored.parent.glob("*") if p.is_file()], "a partial wheel is left"
    assert shipped_wheel.build_wheel().read_bytes() == wheel


@pytest.mark.parametrize("damage", ["empty", "truncated", "a byte changed", "no record"])
def test_a_wheel_damaged_in_the_cache_is_built_again_not_shipped(tmp_path, monkeypatch, damage):
    """A stored wheel was shipped when it was a file at all: one emptied, truncated or edited in the
    shared cache (a crash, a full disk, a hand) reached the site. It is checked against the digest
    written with it, and read as a zip archive, before it is shipped."""
    import io

    monkeypatch.setenv("NETCL_LITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(shipped_wheel, "sources_digest", lambda: "digest")
    made = io.BytesIO()
    with zipfile.ZipFile(made, "w") as archive:
        archive.writestr("netcl_lite/__init__.py", "x = 1\n" * 500)
    wheel, builds = made.getvalue(), []

    def pip_wheel(command, **kwargs):                 # what pip wheel -w <folder> leaves
        builds.append(command)
        (Path(command[command.index("-w") + 1]) / shipped_wheel.wheel_name()).write_bytes(wheel)
        return SimpleNamespace(returncode=0, stderr="")

    monkeypatch.setattr(shipped_wheel.subprocess, "run", pip_wheel)
    stored = shipped_wheel.build_wheel()
    assert shipped_wheel.build_wheel() == stored and len(builds) == 1      # intact: taken from the cache
    data = bytearray(stored.read_bytes())
    if damage == "a byte changed":
        data[len(data) // 2] ^= 0xFF
    elif damage == "no record":
        stored.with_name(stored.name + ".sha256").unlink()
    stored.write_bytes(b"" if damage == "empty" else data[:len(data) // 2] if damage == "truncated" else data)
    assert not shipped_wheel.intact(stored)
    assert shipped_wheel.build_wheel().read_bytes() == wheel and len(builds) == 2
    assert shipped_wheel.intact(stored)


@pytest.mark.parametrize("marker", ["<!-- ｂｕｉｌｄ-output: snippets/hostile/ok.py -->",
                                    "<!-- ＢＵＩＬＤ－ＯＵＴＰＵＴ: snippets/hostile/ok.py -->",
                                    "<!-- needs－extra: compare -->"])
def test_a_marker_in_full_width_letters_fails_naming_page_and_line(site, marker):
    """Letters that read as the marker's name (full-width forms, which NFKC folds to ASCII) make a
    near miss like any other, not a comment left silently in the page."""
    path = site.snippet("ok.py", "print('shown')\n")
    with pytest.raises(markers.MarkerError, match=rf"^{PAGE}:{MARKER_LINE}: "):
        site.render(page_with(path, marker))


def test_a_figure_script_reaches_nothing_its_key_does_not_cover(generated_tree, monkeypatch):
    """A figure's key covers its script, the library and the files beside it: it runs in an empty
    working folder, so a file of the repository read through the working folder fails, and a file
    beside it that changes redraws it."""
    folder = generated_tree / "snippets" / "chapter99"
    folder.mkdir(parents=True)
    (generated_tree / "docs" / "chapter-99.md").write_text("![a figure](figures/chapter99/cwd.svg)\n")
    cwd = folder / "figure_cwd.py"
    cwd.write_text("import sys, pathlib\nopen(sys.argv[1], 'w').write(pathlib.Path('mkdocs.yml').read_text())\n")
    monkeypatch.setattr(generated, "figure_scripts", lambda: [cwd])
    with pytest.raises(RuntimeError, match="mkdocs.yml"):
        generated.build_figures("shared")
    beside = folder / "figure_beside.py"
    beside.write_text("import sys, pathlib\ndata = (pathlib.Path(__file__).parent / 'points.txt').read_text()\n"
                      "open(sys.argv[1], 'w').write(f'<svg>{data}</svg>')\n")
    (folder / "points.txt").write_text("1")
    key = generated.figure_key(beside, "shared")
    (folder / "points.txt").write_text("2")
    assert generated.figure_key(beside, "shared") != key, "a file beside the figure is not in its key"


class _CountingLines(list):
    """A page's lines that count how often a line is read."""

    reads = 0

    def __getitem__(self, index):
        self.reads += 1
        return super().__getitem__(index)


def test_fences_never_closed_are_found_reading_each_line_a_bounded_number_of_times():
    """Citations' fence finder scanned to the end of the page for each fence opener never closed:
    1,000 such openers read the lines half a million times (5,000 took 8.8 s). Each line is read once,
    and a longer fence still closes a block (CommonMark's rule)."""
    from site_build import citations

    lines = _CountingLines(["```python"] * 1000)
    assert citations._fenced(lines) == set() and lines.reads <= 2 * len(lines), lines.reads
    lines = _CountingLines(["```python", "x", "~~~", "`````", "~~~~", "x", "~~~ no", "~~~~~", "````"])
    assert citations._fenced(lines) == {0, 1, 2, 3, 4, 5, 6, 7}, "a longer fence of its character closes a block"


@pytest.mark.parametrize("opening, closing", [("{", "}"), ("\\sqrt{", "}"), ("\\left(", "\\right)"),
                                              ("\\begin{matrix}", "\\end{matrix}"), ("\\sqrt[", "]{x}")],
                         ids=["group", "sqrt", "left", "begin", "sqrt-optional"])
def test_a_formula_renders_up_to_the_nesting_limit_and_fails_past_it_naming_the_page_and_line(
        tmp_path, monkeypatch, opening, closing):
    from site_build import mathml

    def formula(depth: int) -> str:
        return opening * depth + "x" + closing * depth

    def page_html(depth: int) -> str:
        return f'<p><span class="arithmatex">\\({html.escape(formula(depth))}\\)</span></p>'

    limit = mathml.MATH_DEPTH_LIMIT
    # the count is from above: the command that opens a level counts as one more until what follows it
    assert all(depth <= mathml.nesting(formula(depth)) <= depth + 1 for depth in (1, 2, limit))
    deepest = max(depth for depth in (limit - 1, limit) if mathml.nesting(formula(depth)) <= limit)
    assert "<math" in mathml.render(page_html(deepest), "hostile.md")
    (tmp_path / "hostile.md").write_text(f"# Hostile\n\nText \\({formula(limit + 1)}\\).\n", encoding="utf-8")
    monkeypatch.setattr(mathml, "DOCS", tmp_path)
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:3: the formula .* nests 10[12] levels deep.*MATH_DEPTH_LIMIT"):
        mathml.render(page_html(limit + 1), "hostile.md")


def test_commands_applied_to_commands_count_as_nesting_and_a_long_formula_is_refused():
    from site_build import mathml

    assert mathml.nesting("\\sqrt" * 150 + " x") == 150
    assert mathml.nesting("\\sqrt{x} \\hat{y} " * 500) == 1        # one after another: no nesting
    assert mathml.nesting("\\{" * 500 + "x") == 0                 # escaped braces open no group
    flat = "x+" * (mathml.MATH_LENGTH_LIMIT // 2) + "y"
    with pytest.raises(ValueError, match=r"^docs/hostile\.md: the formula '?x\+x\+.* holds 20,001 characters"):
        mathml.render(f'<div class="arithmatex">\\[{flat}\\]</div>', "hostile.md")
    bell = "\\sqrt{" * 200 + "\x1b]0;owned\x07" + "}" * 200
    with pytest.raises(ValueError) as err:
        mathml.render(f'<p><span class="arithmatex">\\(x\\)</span><span class="arithmatex">\\({bell}\\)</span></p>',
                      "hostile.md")
    assert "\x1b" not in str(err.value) and "\x07" not in str(err.value), str(err.value)


_BUILD_ENVIRONMENT = {"PYTHONOPTIMIZE": "2", "PYTHONIOENCODING": "ascii:backslashreplace", "PYTHONHASHSEED": "0",
                      "PYTHONWARNINGS": "error", "PYTHONINTMAXSTRDIGITS": "640", "COLUMNS": "20",
                      "PYTHONPATH": "/nowhere"}
#: what a run prints of its environment: none of the build's variables above, text in UTF-8, asserts on
_REPORT = ("import os, sys\n"
           "assert sys.flags.optimize == 0 and sys.flags.hash_randomization, 'asserts run, hashes are random'\n"
           "print(sys.stdout.encoding, sys.flags.utf8_mode, sorted((k, os.environ[k]) for k in set(os.environ) & "
           "set({names}) if os.environ[k] != os.path.dirname(sys.modules['sitecustomize'].__file__)))\n")


def test_snippets_figures_and_notebooks_run_in_a_fixed_python_environment(tmp_path, monkeypatch):
    """No PYTHON* variable of the build's environment (but those naming the interpreter and its
    packages) reaches what the build runs and stores: a snippet, a figure script, a drill notebook."""
    from site_build import runner

    for name, value in _BUILD_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    report = _REPORT.format(names=sorted(_BUILD_ENVIRONMENT))
    expected = "utf-8 1 [('PYTHONIOENCODING', 'utf-8:strict')]\n"
    run = runner.run_as_snippet(report.encode(), tmp_path, 60)
    assert (run.returncode, run.stdout.decode()) == (0, expected), run.stderr.decode()[-2000:]
    figure = tmp_path / "figure_env.py"
    figure.write_text(report + "import matplotlib.pyplot as plt, sys\nplt.plot([1, 2])\n"
                      "plt.savefig(sys.argv[1], metadata={'Description': 'a line'})\n", encoding="utf-8")
    drawn = generated._draw(figure)
    assert not isinstance(drawn, Exception), str(drawn)[-2000:]
    notebook = generated.execute_notebook(json.dumps({
        "cells": [{"cell_type": "code", "id": "env", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": report.replace("sys.stdout.encoding, ", "")}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}))
    outputs = json.loads(notebook)["cells"][0]["outputs"]
    assert [o.get("text") for o in outputs] == [[expected[len("utf-8 "):]]], outputs
    assert all(f"{name}={value}" not in runner.HOW for name, value in _BUILD_ENVIRONMENT.items())
    assert "PYTHONUTF8=1" in runner.HOW and "PYTHONIOENCODING=utf-8:strict" in runner.HOW


def _included_figures_root(root: Path, monkeypatch) -> None:
    """``root`` with one generated figure and the Markdown files that include it, as the cwd."""
    (root / "figures" / "hostile").mkdir(parents=True)
    (root / "figures" / "hostile" / "f.svg").write_text(
        "<svg><metadata><dc:description>A curve of 3 points</dc:description></metadata></svg>", encoding="utf-8")
    monkeypatch.setattr(generated, "FIGURES", root / "figures")
    (root / "snippets").mkdir()
    for name, text in {"bare.md": "![a curve](figures/hostile/f.svg)\n",
                       "captioned.md": "![a curve](figures/hostile/f.svg)\n\n/// caption\nThe curve.\n///\n",
                       "nested.md": 'Text.\n\n--8<-- "snippets/bare.md"\n',
                       "plain.md": "Text.\n\nMore text.\n",
                       "excerpt.md": '```{.python .excerpt title="x"}\n--8<-- "snippets/bare.md"\n```\n'}.items():
        (root / "snippets" / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(root)


@pytest.mark.parametrize("page, shown", [
    ('# H\n\n--8<-- "snippets/captioned.md"\n', True),
    ('# H\n\n--8<-- "snippets/bare.md"\n\n/// caption\nCaptioned on the page.\n///\n', True),
    ('# H\n\n````markdown\n--8<-- "snippets/excerpt.md"\n--8<-- "snippets/bare.md"\n````\n', False),
], ids=["captioned-in-the-file", "captioned-on-the-page", "shown-as-code"])
def test_what_an_include_brings_with_its_caption_or_as_code_renders(tmp_path, monkeypatch, page, shown):
    _included_figures_root(tmp_path, monkeypatch)
    html_ = render_page(page)
    assert ("<figcaption" in html_) == shown and ("Excerpt ·" not in html_)


@pytest.mark.parametrize("page, line, what", [
    ('# H\n\n--8<-- "snippets/captioned.md"\n\nText.\n\n--8<-- "snippets/bare.md"\n', 7, "the figure"),
    ('# H\n\n--8<-- "snippets/bare.md"\n\n/// caption\nC.\n///\n\n--8<-- "snippets/bare.md"\n', 9, "the figure"),
    ('# H\n\n--8<-- "snippets/nested.md"\n', 3, "the figure"),
    ('# H\n\n--8<-- "snippets/plain.md"\n\n--8<-- "snippets/bare.md"\n\nText.\n', 5, "the figure"),
    ('# H\n\nText.\n\n--8<-- "snippets/excerpt.md"\n', 5, "the excerpt fence"),
], ids=["second-include", "same-file-twice", "nested", "only-blank-lines-between", "excerpt"])
def test_an_uncaptioned_figure_or_an_excerpt_an_include_brings_fails_naming_the_include_s_line(
        tmp_path, monkeypatch, page, line, what):
    _included_figures_root(tmp_path, monkeypatch)
    with pytest.raises(ValueError, match=rf'^docs/hostile\.md:{line}: --8<-- "snippets/\w+\.md": brings {what} '):
        render_page(page)


def test_a_brought_figure_s_error_names_the_line_of_the_file_that_holds_it(tmp_path, monkeypatch):
    _included_figures_root(tmp_path, monkeypatch)
    with pytest.raises(ValueError) as err:                     # nested: the page's include, the file's line
        render_page('# H\n\n--8<-- "snippets/nested.md"\n')
    assert str(err.value).startswith('docs/hostile.md:3: --8<-- "snippets/nested.md": brings the figure '), \
        str(err.value)
    assert "(snippets/bare.md:1)" in str(err.value), str(err.value)


def test_an_include_in_the_block_form_that_brings_a_citation_is_refused_naming_its_path_line(tmp_path, monkeypatch):
    _included_figures_root(tmp_path, monkeypatch)
    (tmp_path / "snippets" / "cites.md").write_text("Intro.\n\nThe Transformer [@nosuchwork2099x].\n",
                                                   encoding="utf-8")
    with pytest.raises(ValueError, match=r'^docs/hostile\.md:7: --8<-- "snippets/cites\.md": brings the citation '
                                         r"'\[@nosuchwork2099x\]' \(snippets/cites\.md:3\)"):
        render_page("# H\n\nText.\n\n--8<--\nsnippets/plain.md\nsnippets/cites.md\n--8<--\n")


def test_a_page_s_image_that_an_included_reference_makes_a_figure_is_refused_naming_its_line(tmp_path, monkeypatch):
    _included_figures_root(tmp_path, monkeypatch)
    (tmp_path / "snippets" / "refs.md").write_text("[fig]: figures/hostile/f.svg\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^docs/hostile\.md:5: !\[a curve\]\[fig\]: has no caption"):
        render_page('# H\n\nText.\n\n![a curve][fig]\n\nMore text.\n\n--8<-- "snippets/refs.md"\n')


@pytest.mark.parametrize("page, files", [
    ('# H\n\n<!-- an old figure:\n--8<-- "snippets/close.md"\n![a curve](figures/hostile/f.svg)\n-->\n\nText.\n',
     {"close.md": "the end -->\n"}),
    ('# H\n\n--8<-- "snippets/item.md"\n\n    ![a curve](figures/hostile/f.svg)\n\nText.\n',
     {"item.md": "- an item\n"}),
], ids=["an-include-ends-the-comment", "an-include-makes-the-code-a-list-item-s-text"])
def test_a_page_s_hidden_figure_that_an_include_shows_is_refused_naming_its_line(tmp_path, monkeypatch, page, files):
    _included_figures_root(tmp_path, monkeypatch)
    for name, text in files.items():
        (tmp_path / "snippets" / name).write_text(text, encoding="utf-8")
    line = page.split("\n").index(next(line for line in page.split("\n") if "figures/" in line)) + 1
    with pytest.raises(ValueError, match=rf"^docs/hostile\.md:{line}: .*figures/hostile/f\.svg.*: has no caption"):
        render_page(page)


def test_a_backtick_excerpt_fence_with_a_backtick_in_its_attributes_that_an_include_brings_is_refused(
        tmp_path, monkeypatch):
    _included_figures_root(tmp_path, monkeypatch)
    (tmp_path / "netcl_lite").symlink_to(ROOT / "netcl_lite")
    (tmp_path / "snippets" / "ex.md").write_text(
        '```{.python title="a`b" .excerpt}\n--8<-- "netcl_lite/capstone.py:recipe"\n```\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r'^docs/hostile\.md:3: --8<-- "snippets/ex\.md": brings the excerpt fence'):
        render_page('# H\n\n--8<-- "snippets/ex.md"\n')


def test_an_img_whose_quoted_attribute_holds_a_closing_bracket_is_a_figure_that_needs_a_caption():
    found = generated.uncaptioned('# H\n\n<img alt="a > b" src="figures/hostile/f.svg">\n\nText.\n')
    assert [(i, image) for i, _, image in found] == [(2, '<img alt="a > b" src="figures/hostile/f.svg">')]


@pytest.mark.parametrize("read, text", [
    (lambda text: generated.with_alt(text), "<img " * 20_000),
    (lambda text: generated.with_alt(text), "<img" + " " * 40_000 + '"x">'),
    (lambda text: generated.uncaptioned(text), "# H\n\n[f]: figures/x/y.svg\n\n" + "![a" * 16_000 + "\n"),
    (lambda text: generated.uncaptioned(text), "# H\n\n" + '![a](figures/x/y.svg "' * 4_000 + "\n"),
    (lambda text: generated.uncaptioned(text), "# H\n\n" + "![a](figures/x/y.svg (" * 4_000 + "\n"),
], ids=["unclosed-img-tags", "spaces-before-a-quote", "reference-images", "unclosed-titles", "unclosed-paren-titles"])
def test_figures_and_img_tags_are_read_in_linear_time(read, text):
    # each of these took seconds to minutes when every '<img', '![' or space was read again to the end
    start = time.perf_counter()
    read(text)
    assert time.perf_counter() - start < 2.0


def test_comments_left_in_the_rendered_page_are_read_in_linear_time():
    start = time.perf_counter()
    markers.unreplaced("<p>" + "<!--" * 20_000 + "</p>", "docs/hostile.md")   # never closed: no comment
    assert time.perf_counter() - start < 2.0
    with pytest.raises(markers.MarkerError, match="build-output"):
        markers.unreplaced("<p><!-- a --><!-- build-output: snippets/x.py --></p>", "docs/hostile.md")


def test_the_glossary_reads_a_page_s_html_in_linear_time():
    from site_build import glossary

    # this took seconds when every '<!--' never closed was read again to the end of the page
    page = "<p>" + "<!--" * 20_000 + "</p>"
    start = time.perf_counter()
    marked, _ = glossary.mark_first_uses(page)
    assert time.perf_counter() - start < 2.0
    assert marked == page


def test_a_formula_the_converter_rejects_fails_naming_why_on_one_line_without_escapes():
    from site_build import mathml

    with pytest.raises(ValueError) as err:         # the converter colours its message and draws the formula
        mathml.render('<p><span class="arithmatex">\\(\\foo + \\bar\\)</span></p>', "hostile.md")
    message = str(err.value)
    assert message.startswith("docs/hostile.md: cannot render math") and "Unknown command" in message, message
    assert "\x1b" not in message and "\n" not in message, repr(message)
    with pytest.raises(ValueError) as err:         # a control character never reaches the converter
        mathml.render('<p><span class="arithmatex">\\(\\foo\x1b[2J\\)</span></p>', "hostile.md")
    message = str(err.value)
    assert message.startswith("docs/hostile.md: the formula") and "U+001B" in message, message
    assert "\x1b" not in message and "\n" not in message, repr(message)
