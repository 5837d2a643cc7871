"""Render the LaTeX that pymdownx.arithmatex marks to MathML at build time.

The site then needs no MathJax/KaTeX script and no request to another host;
browsers draw MathML natively. A formula the converter rejects fails the build.
"""

from __future__ import annotations

import html
import re

import math_core

_CONVERTER = math_core.LatexToMathML()
_INLINE = re.compile(r'<span class="arithmatex">\\\((.*?)\\\)</span>', re.S)
_BLOCK = re.compile(r'<div class="arithmatex">\\\[(.*?)\\\]</div>', re.S)


def _convert(latex: str, display: bool, page: str) -> str:
    source = html.unescape(latex).strip()
    try:
        return _CONVERTER.convert_with_local_state(source, displaystyle=display)
    except math_core.LatexError as err:
        raise ValueError(f"{page}: cannot render math {source!r}: {err}") from None


def render(content: str, page: str) -> str:
    """A page's HTML with its formulas as MathML (``page``, its source path, names a failing one)."""
    content = _BLOCK.sub(lambda m: f'<div class="math-display">{_convert(m.group(1), True, page)}</div>',
                         content)
    return _INLINE.sub(lambda m: _convert(m.group(1), False, page), content)
