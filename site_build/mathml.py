"""Render the LaTeX that pymdownx.arithmatex marks to MathML at build time.

The site then needs no MathJax/KaTeX script and no request to another host;
browsers draw MathML natively. A formula the converter rejects fails the build.

The converter (``math_core``) recurses once per level of nesting and overflows its stack a few
thousand levels down (on an 8 MiB stack: about 3,100 nested groups, 7,600 commands applied to
commands): the build's process dies of SIGSEGV, naming nothing. So before a formula reaches it,
:func:`nesting` bounds its depth by :data:`MATH_DEPTH_LIMIT` and its length by
:data:`MATH_LENGTH_LIMIT` (a long flat formula overflows too, past a few hundred kilobytes), and one
over either fails the build naming the page and, where the page's file holds the formula, its line.
"""

from __future__ import annotations

import html
import re

import math_core

from netcl_lite.files import shown_path

from .paths import DOCS

#: the deepest a formula may nest (:func:`nesting`); the site's own formulas nest at most 5 deep, and
#: the converter overflows an 8 MiB stack at about 31 times this (3,100 nested groups)
MATH_DEPTH_LIMIT = 100
#: the most characters a formula may hold; the site's longest has under 500, and the converter's
#: stack holds a flat formula of 30 times this and more (it overflows past 320,000 characters of
#: ``\operatorname{a}``)
MATH_LENGTH_LIMIT = 20_000

_CONVERTER = math_core.LatexToMathML()
_INLINE = re.compile(r'<span class="arithmatex">\\\((.*?)\\\)</span>', re.S)
_BLOCK = re.compile(r'<div class="arithmatex">\\\[(.*?)\\\]</div>', re.S)
#: a formula's tokens as nesting sees them: a control word, an escaped character, a group's brace,
#: an optional argument's bracket, a script sign, white space, anything else
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[{}\[\]^_]|\s+|.", re.S)
_OPENS = {"\\left": 1, "\\right": -1, "\\begin": 1, "\\end": -1}


def nesting(source: str) -> int:
    """How deep ``source`` (a formula's LaTeX) nests, counted as the converter recurses, from above:
    groups (``{`` … ``}``), ``\\left`` … ``\\right``, ``\\begin`` … ``\\end`` and the optional argument
    of ``\\sqrt[`` … ``]`` each open a level, and so does each command in a run of commands that apply
    to the next one (``\\sqrt\\sqrt\\hat x``: 3), each counted until what follows it."""
    depth = optional = run = deepest = 0
    after_sqrt = False
    for m in _TOKEN.finditer(source):
        token = m.group(0)
        if token.isspace():
            continue
        if token == "{":
            depth += 1
        elif token == "}":
            depth = max(depth - 1, 0)
        elif token == "[" and after_sqrt:
            optional += 1
        elif token == "]" and optional:
            optional -= 1
        else:
            depth = max(depth + _OPENS.get(token, 0), 0)
        after_sqrt = token == "\\sqrt"
        run = run + 1 if token[0] == "\\" and token[1:].isalpha() or token in "^_" else 0
        deepest = max(deepest, depth + optional + run)
    return deepest


def _line_of(source: str, page: str) -> str:
    """``:<line>`` of the page's file that holds ``source`` first, or "" when it holds none of it."""
    try:
        text = (DOCS / page).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return ""
    at = text.find(source[:200])
    return f":{text.count(chr(10), 0, at) + 1}" if at >= 0 else ""


def _convert(latex: str, display: bool, page: str) -> str:
    source = html.unescape(latex).strip()
    bound = ""
    if len(source) > MATH_LENGTH_LIMIT:
        bound = f"holds {len(source):,} characters, over MATH_LENGTH_LIMIT = {MATH_LENGTH_LIMIT:,}"
    elif (depth := nesting(source)) > MATH_DEPTH_LIMIT:
        bound = (f"nests {depth:,} levels deep (groups, \\left … \\right, \\begin … \\end, commands applied to "
                 f"commands), over MATH_DEPTH_LIMIT = {MATH_DEPTH_LIMIT}")
    if bound:
        shown = shown_path(source[:60] + ("…" if len(source) > 60 else ""))
        raise ValueError(f"{page}{_line_of(source, page)}: the formula {shown} {bound}, the most the MathML "
                         f"converter is given (deeper or longer, it overflows its stack and the build's "
                         f"process dies); split it")
    try:
        return _CONVERTER.convert_with_local_state(source, displaystyle=display)
    except math_core.LatexError as err:
        raise ValueError(f"{page}{_line_of(source, page)}: cannot render math {source!r}: {_reason(err)}") from None


#: the colours the converter puts in its messages
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _reason(err: Exception) -> str:
    """The converter's message without its colours and its drawing of the formula (which echoes the
    formula's characters raw, ESC included): its first line, escaped where it holds a control character."""
    lines = [line.strip() for line in _SGR.sub("", str(err)).split("\n") if line.strip()]
    return shown_path(lines[0].removeprefix("Error: ") if lines else "rejected")


def render(content: str, page: str) -> str:
    """A page's HTML with its formulas as MathML (``page``, its source path, names a failing one)."""
    content = _BLOCK.sub(lambda m: f'<div class="math-display">{_convert(m.group(1), True, page)}</div>',
                         content)
    return _INLINE.sub(lambda m: _convert(m.group(1), False, page), content)
