"""MkDocs hook: render docstring conventions that Markdown does not know.

* Python-Markdown reads a line starting with ``>`` as a blockquote, so an
  interactive example in a docstring would render as three levels of quotes on
  the API reference pages. Each run of ``>>>`` lines and their printed results
  becomes a ``pycon`` fence. Those examples are run by the doctest test, not by
  the page tests.
* A module docstring indents its example under the paragraph it follows
  (doctest's habit). Four more spaces than that paragraph would make Markdown
  read the fence as an indented code block and show the backticks as text, so
  the fence goes at the paragraph's own indentation.
* Sphinx cross-reference roles (``:mod:`~netcl_lite.text.bpe```) become inline code.

The preprocessor is added to the pages and to mkdocstrings, which renders
docstrings with the same extensions.
"""

from __future__ import annotations

import re

from markdown import Extension
from markdown.preprocessors import Preprocessor

_PROMPT = re.compile(r"^(\s*)>>> ")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+\.)\s")
_ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|exc|obj):`(~?)([\w.]+)`")


def _role_to_code(m: re.Match) -> str:
    name = m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2)
    return f"`{name}`"


def _content_indent(line: str) -> int:
    """Where a continuation of this line's block starts: its indentation, or a list item's body."""
    m = _LIST_ITEM.match(line)
    return len(m.group(1)) + 4 if m else len(line) - len(line.lstrip())


class _DoctestFences(Preprocessor):
    def run(self, lines):
        out, fence, i = [], None, 0
        while i < len(lines):
            line = lines[i]
            m = _FENCE.match(line)
            if m and fence is None:
                fence = m.group(1)
            elif m and fence is not None and m.group(1).startswith(fence[0]) and len(m.group(1)) >= len(fence):
                fence = None
            p = _PROMPT.match(line) if fence is None else None
            if not p:
                out.append(_ROLE.sub(_role_to_code, line) if fence is None else line)
                i += 1
                continue
            indent, block = p.group(1), []
            while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
                block.append(lines[i][len(indent):])
                i += 1
            before = next((prev for prev in reversed(out) if prev.strip()), "")
            at = " " * min(len(indent), _content_indent(before))
            out += ["", at + "```pycon", *(at + b for b in block), at + "```", ""]
        return out


class DoctestFences(Extension):
    def extendMarkdown(self, md):
        md.preprocessors.register(_DoctestFences(md), "doctest_fences", 29)  # before superfences' fences


def on_config(config):
    config.markdown_extensions.append(DoctestFences())
    return config
