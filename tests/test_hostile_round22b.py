"""Round 22b of the hostile check of the build plugin: copy buttons. The site promises that every copy
button on a page belongs to a program (a python block the doc tests run), a command (bash) or a ``>>>``
session, whose copy is its code alone (site_build/copyable.py; tests/test_browser.py checks the built
site). Each test failed on the code before its fix.
"""

from __future__ import annotations

import re

import pytest

from site_build import copyable
from site_render import render_page


def _start_tag(page_html: str) -> str:
    m = re.search(r'<div class="[^"]*\bhighlight\b[^"]*"[^>]*>', page_html)
    assert m, page_html
    return m.group(0)


@pytest.mark.parametrize("fence", [
    '```json\n{"a": 1}\n```\n',
    '```c\nint x;\n```\n',
    '```console\n$ pip install netcl_lite\nCollecting netcl_lite\n```\n',
    '```yaml\nkey: value\n```\n',
    '```{.pycon .wide}\n>>> x = 1\n```\n',
])
def test_a_block_in_a_language_no_reader_runs_gets_no_copy_button(fence):
    """Only ``text`` blocks and signatures got ``no-copy``: a ``json``, ``c`` or ``yaml`` block, or a
    ``console`` one whose copy holds its ``$`` prompts and printed lines, kept Material's copy button,
    which the browser test counts as a copy button on a block that is no program."""
    assert "no-copy" in _start_tag(render_page(fence)).split('"')[1].split()


@pytest.mark.parametrize("fence", [
    "```python\nprint(1)\n```\n",
    "```py\nprint(1)\n```\n",
    "```bash\npip install netcl_lite\n```\n",
])
def test_programs_and_commands_keep_their_copy_button(fence):
    assert "no-copy" not in _start_tag(render_page(fence))


def test_a_session_without_a_prompt_has_no_copy_button():
    """A ``pycon`` block that holds printed lines alone got ``data-copy`` with an empty line: a copy
    button that copies nothing."""
    tag = _start_tag(render_page("```pycon\n1\n2\n```\n"))
    assert "data-copy" not in tag and "no-copy" in tag.split('"')[1].split(), tag


def test_a_session_still_copies_its_code_alone():
    tag = _start_tag(render_page("```pycon\n>>> x = 1\n>>> x\n1\n```\n"))
    assert tag == '<div class="language-pycon highlight" data-copy="x = 1\nx\n">', tag


def test_render_content_keeps_a_block_already_read_only_as_it_is():
    html = '<div class="language-c excerpt no-copy highlight"><pre><code>int x;</code></pre></div>'
    assert copyable.render_content(html) == html
