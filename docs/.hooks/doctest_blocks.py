"""MkDocs hook: show docstring examples (``>>>`` lines) as code, not as nested quotes.

Python-Markdown reads a line starting with ``>`` as a blockquote, so an
interactive example in a docstring would render as three levels of quotes on
the API reference pages. This hook adds a preprocessor (to the pages and to
mkdocstrings, which renders docstrings with the same extensions) that wraps
each run of ``>>>`` lines and their printed results in a ``pycon`` fence.
Those examples are run by the doctest test, not by the page tests.
"""

from __future__ import annotations

import re

from markdown import Extension
from markdown.preprocessors import Preprocessor

_PROMPT = re.compile(r"^(\s*)>>> ")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


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
                out.append(line)
                i += 1
                continue
            indent, block = p.group(1), []
            while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
                block.append(lines[i][len(indent):])
                i += 1
            out += ["", indent + "```pycon", *(indent + b for b in block), indent + "```", ""]
        return out


class DoctestFences(Extension):
    def extendMarkdown(self, md):
        md.preprocessors.register(_DoctestFences(md), "doctest_fences", 29)  # before superfences' fences


def on_config(config):
    config.markdown_extensions.append(DoctestFences())
    return config
