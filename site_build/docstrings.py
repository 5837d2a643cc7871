"""A Griffe extension that renders docstring conventions Markdown does not know.

mkdocstrings loads the docstrings of ``netcl_lite`` with Griffe; ``mkdocs.yml`` names this
extension (``extensions: [site_build.docstrings]``), so every docstring is rewritten once, when its
package has been loaded and before mkdocstrings parses it:

* Sphinx cross-reference roles (``:func:`~netcl_lite.text.bpe.train```) become mkdocstrings
  cross-references: the name in code, linked to the object's entry on the reference pages when
  that object is rendered there (autorefs' ``optional`` references: one that no page renders
  stays plain code, with no warning). ``~`` shows the last part of the name only, as in Sphinx;
  a name without its module is resolved in the scope of the docstring's object. An explicit title
  (``:meth:`record <netcl_lite.core.stream.Stream.record>```) is shown instead of the name; a role
  whose name is no dotted name (``.``, ``a.``, ``a..b``) names nothing and stays as typed.
* Python-Markdown reads a line starting with ``>`` as a blockquote, so an interactive example
  would render as three levels of quotes. Each run of ``>>>`` lines and their printed results
  becomes a ``pycon`` fence, longer than any run of backticks inside it, so that nothing the
  example prints can close it. The doctest test runs those examples, not the page tests.
* A module docstring indents its example under the paragraph it follows (doctest's habit).
  Four more spaces than that paragraph would make Markdown read the fence as an indented code
  block and show the backticks as text, so the fence goes at the paragraph's own indentation.

Lines inside an existing fence, and roles inside a code span, are left as they are (a paragraph is
read whole: its code span may go on over a line's end, as Markdown reads it).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import griffe

_PROMPT = re.compile(r"^(\s*)>>> ")
#: a fence's opening or closing run; a run of backticks with a backtick after it on its line opens no fence
#: (```` ```x``` is code ```` is a paragraph that starts with a code span, as Markdown reads it)
_FENCE = re.compile(r"^\s*(`{3,}(?=[^`]*$)|~{3,})")
_LIST_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+\.)\s")
_TICKS = re.compile(r"`+")
#: a role naming an object by a dotted name (a dot alone, at an end or doubled names none: left as typed)
#: (Sphinx's explicit title, ``:meth:`record <netcl_lite.core.stream.Stream.record>```, shows the title)
#: (Sphinx's forms too: the domain written out, ``:py:func:``; a call's parentheses after the name,
#: ``:func:`train()```, shown and not looked up; ``!`` for the name in code with no link)
ROLE = re.compile(r"(?::py)?:(?:mod|func|class|meth|data|attr|exc|obj|const):`(?P<mark>[~!]?)(?:(?P<title>[^`<>]*[^`<>\s])\s+<"
                  r"(?P<target>\.?\w+(?:\.\w+)*)(?:\(\))?>|(?P<name>\.?\w+(?:\.\w+)*)(?P<call>\(\))?)`")


def _content_indent(line: str) -> int:
    """Where a continuation of this line's block starts: its indentation, or a list item's body."""
    m = _LIST_ITEM.match(line)
    return len(m.group(1)) + 4 if m else len(line) - len(line.lstrip())


def cross_reference(m: re.Match, resolve: Callable[[str], str] = str) -> str:
    """The mkdocstrings cross-reference of one role: the name (its last part after ``~``) in code,
    linked to the identifier ``resolve`` gives for it when a page renders that object."""
    name = m["target"] or m["name"]
    shown = m["title"] or (name.rsplit(".", 1)[-1] if m["mark"] == "~" else name) + (m["call"] or "")
    if m["mark"] == "!":
        return f"`{shown}`"
    return f'<autoref identifier="{resolve(name)}" optional>`{shown}`</autoref>'


def markup(text: str, resolve: Callable[[str], str] = str) -> str:
    """A docstring's text with its roles as cross-references and its ``>>>`` examples fenced."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a docstring (str), got {type(text).__name__}")
    lines = text.split("\n")
    out, fence, i = [], None, 0
    paragraph: list[str] = []          # prose lines read as one text: a code span may go on over a line's end

    def flush() -> None:
        if paragraph:
            out.extend(_roles_outside_code("\n".join(paragraph), resolve).split("\n"))
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if m and fence is None:
            fence = m.group(1)
        elif (m and fence is not None and m.group(1).startswith(fence[0]) and len(m.group(1)) >= len(fence)
              and not line[m.end():].strip()):         # a closing fence is its run alone ('```python' is text)
            fence = None
        p = _PROMPT.match(line) if fence is None else None
        if not p:
            if fence is None and not m and line.strip():
                paragraph.append(line)
            else:                                      # a fence's line or a blank one ends a paragraph's spans
                flush()
                out.append(line)
            i += 1
            continue
        flush()
        indent, block = p.group(1), []
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            block.append(lines[i][len(indent):])
            i += 1
        before = next((prev for prev in reversed(out) if prev.strip()), "")
        at = " " * min(len(indent), _content_indent(before))
        ticks = "`" * max(3, 1 + max((len(run) for b in block for run in _TICKS.findall(b)), default=0))
        out += ["", at + ticks + "pycon", *(at + b for b in block), at + ticks, ""]
    flush()
    return "\n".join(out)


def _roles_outside_code(line: str, resolve: Callable[[str], str]) -> str:
    """``line`` with each role made a cross-reference, but not inside a code span (````:func:`x` ````
    shows the role as typed, as Markdown shows a span's text): read left to right, a role where one
    starts, a span from its run of backticks to the next run of the same length, as Markdown reads it
    (a run with no closing one is text)."""
    out, i = [], 0
    while i < len(line):
        if (role := ROLE.match(line, i)) is not None:
            out.append(cross_reference(role, resolve))
            i = role.end()
        elif (run := _TICKS.match(line, i)) is not None:
            close = next((c for c in _TICKS.finditer(line, run.end()) if len(c[0]) == len(run[0])), None)
            end = close.end() if close is not None else run.end()
            out.append(line[i:end])
            i = end
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def _resolver(obj) -> Callable[[str], str]:
    """Names as Griffe resolves them in the scope of ``obj``: ``rope`` in ``netcl_lite.ops.rope`` is
    ``netcl_lite.ops.rope.rope``; a name it cannot resolve (``ValueError``) stays as written."""
    def resolve(name: str) -> str:
        head, _, rest = name.partition(".")
        try:
            full = obj.resolve(head)
        except (griffe.NameResolutionError, AttributeError, KeyError):
            return name
        return f"{full}.{rest}" if rest else full

    return resolve


def _objects(obj):
    """``obj`` and every object defined under it (aliases, which point elsewhere, left out)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


class DocstringMarkup(griffe.Extension):
    """Rewrites every docstring of a loaded package with :func:`markup`."""

    def on_package(self, *, pkg, **kwargs) -> None:
        for obj in _objects(pkg):
            if obj.docstring is not None:
                obj.docstring.value = markup(obj.docstring.value, _resolver(obj))
