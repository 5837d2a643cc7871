"""What a reader copies from a page runs; what would not run says so and has no copy button.

* A library excerpt (```` ```{.python .excerpt title="…"} ```` or ```` ```{.c .excerpt …} ````
  holding one ``--8<-- "path:section"``) is a piece of a file, not a program. Its title starts
  with "Excerpt", it gets Material's ``no-copy`` class (no copy button), and a line under it
  says which lines of which file it shows, linked to that file on the site
  (``source/<path>.html#L<first>-L<last>``, a page of :mod:`site_build.source_pages`, which marks
  those lines), a file that the site's wheel carries.
* ``<!-- needs-extra: NAME -->`` right above a block that needs an extra of netcl_lite
  (``netcl_lite.extras.EXTRAS``) becomes a note saying so, with the ``pip`` command; the block
  itself calls ``netcl_lite.extras.require(NAME)`` first, so it fails at once when the extra
  is missing (tests/test_reader.py checks both).
* Printed text (verified outputs, what the build printed) and API signatures are read, not run:
  they get ``no-copy`` too, so every copy button on a page belongs to a program (a runnable
  python block), a command (bash) or a ``>>>`` session.
* A ``>>>`` session (the reference pages' docstring examples) copies as code: its copy button
  takes the lines after the ``>>>`` and ``...`` prompts and leaves out the printed results
  (Material copies an ancestor's ``data-copy`` attribute when there is one).
"""

from __future__ import annotations

import html
import posixpath
import re

from . import markers
from .includes import INCLUDE_ROOTS, inside
from .paths import ROOT
from .shipped_wheel import wheel_name

_TITLE = re.compile(r'title="([^"]*)"')
_PYCON = re.compile(r'(<div class="language-pycon highlight")(>.*?<code>)(.*?)(</code>)', re.S)
_TAG = re.compile(r"<[^>]+>")
_NOT_A_PROGRAM = re.compile(r'<div class="((?:language-text|language-python doc-signature) highlight[^"]*)"')


def section_lines(path: str, section: str | None, page: str = "(no page)") -> tuple[int, int]:
    """The first and last line (1-based) of ``section`` in ``path``, or of the whole file; ``path``
    must lie under ``netcl_lite/``, ``kernels/`` or ``snippets/``, and errors name ``page``."""
    what = markers.include(path, section)
    target = inside(path, tuple(ROOT / name for name in INCLUDE_ROOTS), ROOT, what, page)
    lines = target.read_text(encoding="utf-8").splitlines()
    if section is None:
        return 1, len(lines)
    opens, closes = markers.section_bounds(section)
    start = next((i for i, line in enumerate(lines) if opens in line), None)
    end = next((i for i, line in enumerate(lines) if closes in line), None)
    if start is None or end is None or end < start:
        raise ValueError(f"{page}: {what}: {path} has no section {section!r} ({opens} … {closes})")
    return start + 2, end           # the lines between the two markers


def excerpt_note(path: str, section: str | None, page_uri: str) -> str:
    """The line under an excerpt: which lines of which file it shows, linked to that file on the site."""
    from .source_pages import line_range, uri

    first, last = section_lines(path, section, f"docs/{page_uri}")
    link = posixpath.relpath(uri(path), posixpath.dirname(page_uri) or ".")
    return (f"Excerpt, shown and not run: lines {first}–{last} of [`{path}`]({link}#{line_range(first, last)}), "
            f"a file inside the wheel.\n{{: .excerpt-source }}")


def label_excerpts(markdown: str, page_uri: str) -> str:
    """Each excerpt fence of ``markdown`` titled "Excerpt", without a copy button, with its note under it."""
    lines, out, i = markdown.split("\n"), [], 0
    while i < len(lines):
        m = markers.EXCERPT_OPEN.match(lines[i])
        inc = markers.INCLUDE_LINE.match(lines[i + 1]) if m and i + 1 < len(lines) else None
        if not inc:
            out.append(lines[i])
            i += 1
            continue
        attrs = m["attrs"]
        title = _TITLE.search(attrs)
        name = title.group(1) if title else inc["path"]
        attrs = _TITLE.sub("", attrs).strip() + f' .no-copy title="Excerpt · {name}"'
        out.append(f"{m['indent']}{m['ticks']}{{{attrs}}}")
        close = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == m["ticks"]), None)
        if close is None:
            raise ValueError(f"docs/{page_uri}: {lines[i + 1].strip()}: the excerpt's fence is never closed")
        out += lines[i + 1:close + 1]
        note = excerpt_note(inc["path"], inc["section"], page_uri)
        out += ["", *(m["indent"] + line for line in note.split("\n"))]
        i = close + 1
    return "\n".join(out)


def needs_extra_note(marker: markers.Marker, site_url: str | None) -> str:
    """The note that takes the place of a needs-extra ``marker``: the extra's modules and the ``pip``
    command that installs it from the wheel at ``site_url``."""
    from netcl_lite import extras

    extra, indent = marker.match["extra"], marker.match["indent"]
    if extra not in extras.EXTRAS:
        raise ValueError(f"{marker.where}: no such extra; they are {sorted(extras.EXTRAS)}")
    wheel = f"{site_url or '/'}{wheel_name()}"
    modules = ", ".join(f"`{name}`" for name in extras.EXTRAS[extra])
    command = f'pip install "netcl_lite[{extra}] @ {wheel}"'
    if extra == "interop":
        command = f"{extras.TORCH_CPU}\n{command}"
    torch = " (PyTorch's CPU-only wheel first)" if extra == "interop" else ""
    body = [f'!!! note "This block needs the `{extra}` extra"', "",
            f"    It needs {modules}, which the wheel alone does not install{torch}. It checks",
            "    for them first and stops at once, printing this command, when one is missing:", "",
            "    ```bash", *(f"    {line}" for line in command.split("\n")), "    ```", ""]
    return "\n".join(indent + line if line else line for line in body)


def render_markdown(markdown: str, page_uri: str, site_url: str | None) -> str:
    """``markdown`` of the page ``page_uri`` with each needs-extra marker as a note (the wheel's address
    under ``site_url``) and its excerpts labelled."""
    page = f"docs/{page_uri}"
    markdown = markers.replace(markdown, page, {"needs-extra": lambda m: needs_extra_note(m, site_url)})
    return label_excerpts(markdown, page_uri)


def pycon_code(code_html: str) -> str:
    """What a ``>>>`` session's copy button copies: the code after the prompts, no printed results."""
    text = html.unescape(_TAG.sub("", code_html))
    keep = [line[4:] for line in text.split("\n")
            if line.startswith((">>> ", "... ")) or line in (">>>", "...")]
    return "\n".join(keep).rstrip() + "\n"


def render_content(content: str) -> str:
    """A page's HTML with ``no-copy`` on what is read, not run, and a ``data-copy`` on each ``>>>``
    session."""
    def copy_code(m: re.Match) -> str:
        copied = html.escape(pycon_code(m.group(3)), quote=True)
        return f'{m.group(1)} data-copy="{copied}"{m.group(2)}{m.group(3)}{m.group(4)}'

    content = _NOT_A_PROGRAM.sub(lambda m: f'<div class="{m.group(1)} no-copy"', content)
    return _PYCON.sub(copy_code, content)
