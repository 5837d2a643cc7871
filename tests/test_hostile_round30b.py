"""Round 30b, an independent hostile check of the build plugin's markers: where a page's
``<!--pytest-codeblocks:expected-output-->`` may stand. pytest-codeblocks, which the doc tests read
pages with, takes the next fenced block under that comment (whatever its language, with prose or
nothing between) as the verified output of the last block above it (whatever its language), while
the build labels as output only a text block right under the comment (:func:`site_build.outputs.label`)."""

from __future__ import annotations

import pytest

from site_build import markers

PY = "```python\nprint(1)\n```\n"
MARK = markers.EXPECTED_OUTPUT
TEXT = "```text\n1\n```\n"


@pytest.mark.parametrize("text, line", [
    # prose between the comment and its output: pytest-codeblocks compares the text block, the page
    # shows it unlabelled, and the prose reads as if it were the output
    (f"# H\n\n{PY}\n{MARK}\n\nSome prose.\n\n{TEXT}", 7),
    # nothing under it: the block above is run but compared with nothing, without a word
    (f"# H\n\n{PY}\n{MARK}\n", 7),
    (f"# H\n\n{PY}\n{MARK}\n\nThe end.\n", 7),
    # no block above it: the text block under it is labelled as output of nothing
    (f"# H\n\n{MARK}\n\n{TEXT}", 3),
    # a session or a python block under it: taken as the expected output, so a python block never runs
    (f"# H\n\n{PY}\n{MARK}\n\n```pycon\n>>> 1\n```\n", 7),
    (f"# H\n\n{PY}\n{MARK}\n\n```python\nprint(2)\n```\n", 7),
    # the block above is not run by the doc tests (a shell block, an excerpt): compared with nothing
    (f"# H\n\n```bash\necho 1\n```\n\n{MARK}\n\n{TEXT}", 7),
    (f'# H\n\n```{{.python .excerpt title="t"}}\nx = 1\n```\n\n{MARK}\n\n{TEXT}', 7),
    # a second output for one block: the comment stands under the first output
    (f"# H\n\n{PY}\n{MARK}\n\n{TEXT}\n{MARK}\n\n{TEXT}", 13),
])
def test_an_expected_output_comment_not_between_a_python_block_and_its_text_output_fails_naming_its_line(
        text, line):
    """The comment was accepted anywhere: the build rendered each of these pages without a word, while
    the doc tests compared another block than the one the page labels as output, compared nothing, or
    took a python block for an output and never ran it."""
    with pytest.raises(markers.MarkerError, match=rf"^docs/p\.md:{line}: .*expected-output"):
        markers.find(text, "docs/p.md")


@pytest.mark.parametrize("text", [
    f"# H\n\n{PY}\n{MARK}\n{TEXT}",
    f"# H\n\n{PY}\n\n{MARK}\n\n{TEXT}",
    f'# H\n\n```py title="a"\nprint(1)\n```\n{MARK}\n```text title="out"\n1\n```\n',
    f"# H\n\n```{{.python}}\nprint(1)\n```\n{MARK}\n```{{.text}}\n1\n```\n",
    f"# H\n\n- item\n\n    ```python\n    print(1)\n    ```\n\n    {MARK}\n\n    ```text\n    1\n    ```\n",
])
def test_an_expected_output_comment_between_a_python_block_and_a_text_block_is_taken(text):
    assert [m.kind for m in markers.find(text, "docs/p.md")] == ["pytest-codeblocks"]


@pytest.mark.parametrize("opening", ["```python3", "```python3 title=\"a\"", "```{.python3}"])
def test_a_needs_extra_note_above_a_block_the_doc_tests_run_as_python_is_taken(opening):
    """The doc tests run ```python3 blocks as python (tests/doc_blocks.py); the note above one was
    refused as standing above no python block."""
    text = f"# H\n\n{markers.needs_extra('interop')}\n{opening}\nimport torch\n```\n"
    assert [m.kind for m in markers.find(text, "docs/p.md")] == ["needs-extra"]


@pytest.mark.parametrize("opening", ["```py-x", "```python-tip", "```{.py-x}"])
def test_a_needs_extra_note_above_a_block_of_another_language_fails_naming_its_line(opening):
    """A language whose name merely starts with 'py' or 'python' and a hyphen was taken for python: the
    note told readers a block needs an extra although no doc test runs that block."""
    text = f"# H\n\n{markers.needs_extra('interop')}\n{opening}\nimport torch\n```\n"
    with pytest.raises(markers.MarkerError, match=r"^docs/p\.md:3: .*needs-extra note goes right above"):
        markers.find(text, "docs/p.md")


@pytest.mark.parametrize("text, line", [
    # the page's first line, indented: code to the reader, and pytest-codeblocks then skips every block
    (f"    <!--pytest-codeblocks:skipfile-->\n\n# H\n\n{PY}", 1),
    # in an indented code block: pytest-codeblocks joins the next block to the one above it
    (f"# H\n\n{PY}\nShown as code:\n\n    <!--pytest-codeblocks:cont-->\n\n{PY}", 9),
    # in an indented code block: pytest-codeblocks compares the next block as the output of the one above
    (f"# H\n\n{PY}\nShown as code:\n\n    {MARK}\n\n```python\nprint(2)\n```\n", 9),
    # at the start of a line inside a code span that goes over two lines
    (f"# H\n\n{PY}\nThe comment `\n{MARK}` is shown.\n\n```python\nprint(2)\n```\n", 8),
])
def test_a_pytest_codeblocks_comment_the_page_shows_as_code_fails_naming_its_line(text, line):
    """pytest-codeblocks reads each line outside its fenced blocks, stripped, for its comments, in an
    indented code block or a code span too, where the build took it for text: a page could skip its
    doc tests, join two blocks or turn a python block into an expected output, without a word."""
    with pytest.raises(markers.MarkerError, match=rf"^docs/p\.md:{line}: .*pytest-codeblocks"):
        markers.find(text, "docs/p.md")


def test_a_pytest_codeblocks_comment_inside_a_fenced_block_is_text():
    text = f"# H\n\n```markdown\n{MARK}\n<!--pytest-codeblocks:skip-->\n```\n\nIn prose: `{MARK}`.\n"
    assert markers.find(text, "docs/p.md") == []
