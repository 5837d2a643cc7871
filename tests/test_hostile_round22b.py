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


# -- the wheel's files and their source pages ------------------------------------------------------------

def _project(root):
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        '[project]\nname = "netcl_lite"\nversion = "0.1.0"\n\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["netcl_lite"]\n\n'
        '[tool.hatch.build.targets.wheel.force-include]\n"kernels" = "netcl_lite/kernels"\n', encoding="utf-8")
    (root / ".gitignore").write_text(".ipynb_checkpoints/\n_scratch.py\n", encoding="utf-8")
    for rel in ("netcl_lite/__init__.py", "netcl_lite/core.py", "netcl_lite/.ipynb_checkpoints/core-checkpoint.py",
                "netcl_lite/_scratch.py", "kernels/bpe.cl"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n", encoding="utf-8")


def test_a_package_file_the_wheel_leaves_out_is_none_of_the_library_files(tmp_path):
    """The source pages and the excerpt check took the package's files from a glob of ``netcl_lite/``,
    hatchling the wheel's from ``pyproject.toml`` and ``.gitignore``: a Jupyter checkpoint or an ignored
    scratch file under ``netcl_lite/`` got a page ``source/….html`` (and an excerpt could cut it), which
    the site says is a file of the wheel that ``pip install`` gives, and the wheel did not hold it."""
    from site_build import shipped_wheel

    _project(tmp_path)
    got = [p.relative_to(tmp_path).as_posix() for p in shipped_wheel.library_files(tmp_path)]
    assert got == ["netcl_lite/__init__.py", "netcl_lite/core.py", "kernels/bpe.cl"], got


def test_the_library_files_are_the_wheel_s_sources():
    from site_build import shipped_wheel

    carried = {path for name, path in shipped_wheel.wheel_inputs() if name}
    assert set(shipped_wheel.library_files()) <= carried
    assert {p for p in carried if p.suffix == ".py"} <= set(shipped_wheel.library_files())
