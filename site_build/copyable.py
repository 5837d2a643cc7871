"""What a reader copies from a page runs; what would not run says so and has no copy button.

* A library excerpt (```` ```{.python .excerpt title="…"} ```` or ```` ```{.c .excerpt …} ````
  holding one ``--8<-- "path:section"``, in any form pymdownx.snippets takes, or the whole file)
  is a piece of a file, not a program. Its title starts with "Excerpt", it gets Material's
  ``no-copy`` class (no copy button), and a line under it says which lines of which file it shows, linked to that file on the site
  (``source/<path>.html#L<first>-L<last>``, a page of :mod:`site_build.source_pages`, which marks
  those lines), a file that the site's wheel carries.
* ``<!-- needs-extra: NAME -->`` right above a block that needs an extra of netcl_lite
  (``netcl_lite.extras.EXTRAS``) becomes a note saying so, with the ``pip`` command; the block
  itself calls ``netcl_lite.extras.require(NAME)`` first, so it fails at once when the extra
  is missing (tests/test_reader.py checks both).
* Printed text (verified outputs, what the build printed) and API signatures are read, not run:
  they get ``no-copy`` too, so every copy button on a page belongs to a program (a runnable
  python block), a command (bash) or a ``>>>`` session.
* A python block the doc tests never run (in a block quote, or fenced with tildes: pytest-codeblocks
  opens blocks only at a line that starts with backticks) fails the build, naming the page and the
  line (:func:`check_python_blocks`); one under a list item or in an admonition runs. So does a block
  Pygments shows as Python under another spelling (``Python``, ``py3``, ``.python``) or with a backtick
  in its info string: the doc tests take python, py and python3 alone.
* A ``>>>`` session (the reference pages' docstring examples) copies as code: its copy button
  takes the lines after the ``>>>`` and ``...`` prompts and leaves out the printed results (a
  ``...`` line is code only while the statement above it is incomplete, as the interpreter prompts)
  (Material copies an ancestor's ``data-copy`` attribute when there is one).
"""

from __future__ import annotations

import html
import posixpath
import re

from netcl_lite.files import visible

from . import markers
from .includes import INCLUDE_ROOTS, inside
from .paths import ROOT
from .shipped_wheel import library_files, wheel_name

#: a fence's title as attr_list reads it: in double quotes, in single quotes, or bare to the next space
_TITLE = re.compile(r"""(?<![\w-])title=(?:"([^"]*)"|'([^']*)'|([^\s"'}]+))""")
#: the start of a ``>>>`` session's block, up to where its ``data-copy`` goes (:func:`_pycon_sessions`)
_PYCON = '<div class="language-pycon highlight"'
_TAG = re.compile(r"<[^>]+>")
#: the block-quote markers that start a line (``> > ``)
_QUOTED = re.compile(r"^(?:[ \t]*>)+")
_NOT_A_PROGRAM = re.compile(r'<div class="((?:language-text|language-python doc-signature) highlight[^"]*)"')
#: a highlighted block's start tag with its classes (pymdownx.highlight's, ``language-<name>`` first)
_HIGHLIGHT = re.compile(r'<div class="([^"<>]*(?<![\w-])highlight(?![\w-])[^"<>]*)"')
#: the languages a copy button may copy: what the doc tests run (python, py, python3) and commands (bash);
#: a ``>>>`` session copies its code alone (:func:`_pycon_sessions`)
_COPIED = frozenset({"language-python", "language-py", "language-python3", "language-bash"})


def _section_markers(lines: list[str]) -> list[tuple[int, str, str]]:
    """(line index, ``start`` or ``end``, name) of each section marker in ``lines``, read as
    pymdownx.snippets reads them (an escaped marker, ``;--8<--``, is text)."""
    from pymdownx.snippets import SnippetPreprocessor

    found = []
    for i, line in enumerate(lines):
        m = SnippetPreprocessor.RE_SNIPPET_SECTION.match(line) if "8<-" in line else None
        if m and not m["escape"]:
            found.append((i, m["type"].lower(), m["name"]))
    return found


def section_lines(path: str, section: str | None, page: str = "(no page)") -> tuple[int, int]:
    """The first and last line (1-based) of ``section`` in ``path``, or of the whole file; ``path``
    must lie under ``netcl_lite/``, ``kernels/`` or ``snippets/``, and errors name ``page``. A section
    is marked once: a start and an end marker, in that order, with no other section's marker between
    (the excerpt would leave that line out of the lines its note names); anything else is a
    ``ValueError`` naming the page, the file and the marker's line."""
    what = markers.include(path, section)
    target = inside(path, tuple(ROOT / name for name in INCLUDE_ROOTS), ROOT, what, page)
    try:
        lines = markers.file_lines(target.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{page}: {what}: {path} is not UTF-8 text (at byte {exc.start}: "
                         f"{exc.object[exc.start:exc.start + 8]!r}); an excerpt shows a text file") from None
    if section is None:
        return 1, len(lines)
    opens, closes = markers.section_bounds(section)
    found = _section_markers(lines)
    starts = [i for i, kind, name in found if name == section and kind == "start"]
    ends = [i for i, kind, name in found if name == section and kind == "end"]
    where = f"{page}: {what}: {path}"
    if not starts:
        raise ValueError(f"{where} has no section {section!r} ({opens} … {closes})")
    for kind, at in (("start", starts), ("end", ends)):
        if len(at) > 1:
            raise ValueError(f"{where}:{at[1] + 1}: the section {section!r} has a second {kind} marker (the "
                             f"first is on line {at[0] + 1}); a name marks one section")
    start = starts[0]
    if not ends or ends[0] < start:
        raise ValueError(f"{where}:{start + 1}: the section {section!r} is never closed: no {closes} after "
                         f"its start")
    end = ends[0]
    inner = [(i, kind, name) for i, kind, name in found if start < i < end]
    if inner:
        i, kind, name = inner[0]
        raise ValueError(f"{where}:{i + 1}: the {kind} marker of section {name!r} stands inside the section "
                         f"{section!r} (lines {start + 1}–{end + 1}), which would show its lines without it; "
                         f"end one section before the next starts")
    return start + 2, end           # the lines between the two markers


def _nested(lines: list[str]) -> set[int]:
    """The indices of ``lines`` inside a fenced block (:func:`markers.fences`): there an excerpt's form
    is text the block shows (a ````` ````markdown ````` block teaching it), neither checked nor labelled."""
    return {i for start, end in markers.fences(lines) for i in range(start + 1, end + 1)}


def _excerpt(lines: list[str], i: int, where: str) -> tuple[re.Match, markers.Include] | None:
    """The opening fence of the excerpt that starts on ``lines[i]`` and the include on the line under
    it, or None when no excerpt starts there. An excerpt holds one include (any form
    pymdownx.snippets takes, :func:`markers.includes`) of a file or of a section of it: anything else
    under the fence, or line ranges (``path:1:3``, which would show other lines once the file
    changes), raises ``ValueError`` naming ``where``, the page and the line of the include."""
    m = markers.EXCERPT_OPEN.match(lines[i])
    if m is None:
        return None
    below = lines[i + 1] if i + 1 < len(lines) else ""
    inc = markers.include_line(below)
    if inc is None:
        raise ValueError(f"{where}: {below.strip()!r}: an excerpt holds one include of a library file, "
                         f"{markers.include('netcl_lite/<file>.py', '<section>')} on the line under its fence")
    if inc.ranges is not None:
        raise ValueError(f"{where}: {visible(below.strip())}: an excerpt names a section of its file, not line ranges "
                         f"(they would show other lines once the file changes); mark the lines "
                         f"{' … '.join(markers.section_bounds('<name>'))} and include "
                         f"{markers.include(inc.path, '<name>')}")
    return m, inc


#: the one form of an excerpt fence's opening line the build reads (:data:`markers.EXCERPT_OPEN`)
EXCERPT_FORM = ("an excerpt fence opens with backticks and its attributes in braces right after them, "
                '```{.python .excerpt title="netcl_lite/<file>.py"} (or .c): written otherwise it would show '
                "unlabelled, with a copy button and unchecked")


def check_excerpts(markdown: str, page_uri: str, first_line: int = 1) -> None:
    """Raise ``ValueError`` naming the page and the line (``first_line``: the file's line of
    ``markdown``'s first) for an excerpt that is not one include of a section or a file
    (:func:`_excerpt`), whose fence is written in another form than :data:`EXCERPT_FORM`'s, is never closed or whose section is not marked once, whole
    (:func:`section_lines`), or whose file is none of the wheel's (:func:`.shipped_wheel.library_files`:
    the files the site shows as source pages, which its note links); run on the page as written, before
    other stages add lines."""
    lines = markdown.split("\n")
    inside = _nested(lines)
    for i, line in enumerate(lines):
        # a fence in a block quote is one superfences takes, and EXCERPT_OPEN never reads it: refused
        unquoted = _QUOTED.sub("", line)
        if i not in inside and markers.EXCERPT_LIKE.match(unquoted) and (
                unquoted != line or not markers.EXCERPT_OPEN.match(line)):
            raise ValueError(f"docs/{page_uri}:{first_line + i}: {visible(line.strip())}: {EXCERPT_FORM}")
    for i in range(len(lines)):
        where = f"docs/{page_uri}:{first_line + i + 1}"
        found = None if i in inside else _excerpt(lines, i, where)
        if found is None:
            continue
        m, inc = found
        after = lines[i + 2] if i + 2 < len(lines) else None
        if after is None or after.strip() != m["ticks"]:
            # the fence holds its include and nothing else: a line of its own under the include would
            # be shown as the file's, and a missing close swallows the page up to a later block's
            shown = "the page ends" if after is None else f"line {first_line + i + 3} holds {visible(after.strip())!r}"
            raise ValueError(f"{where}: {visible(lines[i + 1].strip())}: an excerpt's fence holds its include "
                             f"line and nothing else, closed by {m['ticks']} on the next line; {shown}")
        section_lines(inc.path, inc.section, where)
        if ROOT / inc.path not in library_files(ROOT):
            # its note links the file's source page, and the site has one for each file of the wheel only
            raise ValueError(f"{where}: {visible(lines[i + 1].strip())}: an excerpt shows a source file of the "
                             f"wheel (netcl_lite/**/*.py, kernels/), whose page on the site its note links; "
                             f"{visible(inc.path)} is none (show a snippet as a runnable block)")


def _python_lexed(language: str) -> bool:
    """Whether the site highlights a block of ``language`` as Python: superfences takes the language with
    a leading ``.`` dropped, and Pygments finds its lexer by any case of a name or an alias."""
    from pygments.lexers import get_lexer_by_name
    from pygments.lexers.python import Python2Lexer, PythonLexer
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(language.lstrip("."))
    except ClassNotFound:
        return False
    return isinstance(lexer, (PythonLexer, Python2Lexer))


def _unusual_python(opener: str) -> str | None:
    """Why the fence ``opener`` (out of any block quote) holds a block shown as Python that the doc tests
    do not read as one (``tests/doc_blocks.normalize``: python, py, python3 exactly, in an info string
    with no backtick), or None."""
    language = markers.fence_language(opener)
    if not language or not _python_lexed(language):
        return None
    if language not in markers.PYTHON_NAMES:
        return f"spelled {language!r}"
    if "`" in opener.strip().lstrip("`~"):
        return "with a backtick in its info string"
    return None


def check_python_blocks(markdown: str, page_uri: str, first_line: int = 1) -> None:
    """Raise ``ValueError`` naming the page and the line (``first_line``: the file's line of
    ``markdown``'s first) for a python block (python, py, python3; not an excerpt) that the page shows
    and the doc tests never run. pytest-codeblocks, which they read pages with, opens a block only at a
    line that starts with backticks once its indent is stripped: a block in a block quote
    (``> ```python``) or fenced with tildes is rendered as code, yet escapes "every block runs". A
    block indented under a list item or an admonition is read, and runs. A block shown as Python under
    another spelling, or with a backtick in its info string, is refused too (:func:`_unusual_python`).
    Run on the page as written."""
    lines = markdown.split("\n")
    for start, _ in markers.fences(lines):
        line = lines[start]
        unquoted = _QUOTED.sub("", line)
        spelled = _unusual_python(unquoted)
        if spelled:
            raise ValueError(f"docs/{page_uri}:{first_line + start}: {visible(line.strip())}: a block Pygments "
                             f"highlights as Python, {spelled}, which the doc tests (they take python, py and "
                             f"python3 alone, an info string with no backtick) never run: every python block "
                             f"on a page runs; write ```python (or ```{{.python ...}}), or ```text if it is "
                             f"not to run")
        if markers.fence_language(unquoted) not in markers.PYTHON_NAMES \
                or re.search(markers.EXCERPT_CLASS, unquoted):
            continue
        if unquoted != line:
            why = "it stands in a block quote"
        elif not line.lstrip().startswith("```"):
            why = "it is fenced with tildes"
        else:
            continue
        raise ValueError(f"docs/{page_uri}:{first_line + start}: {visible(line.strip())}: a python block the doc "
                         f"tests (pytest-codeblocks) never run, as {why}: every python block on a page runs; "
                         f"move it out of the quote and fence it with backticks, or show it as ```text if it "
                         f"is not to run")


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
    inside = _nested(lines)
    while i < len(lines):
        found = None if i in inside else _excerpt(lines, i, f"docs/{page_uri}")
        if found is None:
            out.append(lines[i])
            i += 1
            continue
        m, inc = found
        attrs = m["attrs"]
        title = _TITLE.search(attrs)
        name = next(g for g in title.groups() if g is not None) if title else inc.path
        attrs = _TITLE.sub("", attrs).strip() + f' .no-copy title="Excerpt · {name}"'
        out.append(f"{m['indent']}{m['ticks']}{{{attrs}}}")
        close = i + 2                          # check_excerpts saw the fence close under its include
        if close >= len(lines) or lines[close].strip() != m["ticks"]:
            raise ValueError(f"docs/{page_uri}: {visible(lines[i + 1].strip())}: an excerpt's fence holds its "
                             f"include line and nothing else, closed by {m['ticks']} on the next line")
        out += lines[i + 1:close + 1]
        note = excerpt_note(inc.path, inc.section, page_uri)
        out += ["", *(m["indent"] + line for line in note.split("\n"))]
        i = close + 1
    return "\n".join(out)


def site_base(site_url: str | None, where: str) -> str:
    """``site_url`` as the start of an address a file's name is appended to ('/' when there is none); a
    ``ValueError`` naming ``where`` and site_url when it holds a query or a fragment, which would end up
    before the file's name (``https://host/book/?x=1netcl_lite-...whl``)."""
    from urllib.parse import urlsplit

    if not site_url:
        return "/"
    parts = urlsplit(site_url)
    if parts.query or parts.fragment or "?" in site_url or "#" in site_url:
        raise ValueError(f"{where}: site_url {site_url!r:.80} holds a query or a fragment; the wheel's address "
                         f"is site_url followed by its file name: set site_url to the site's address alone")
    return site_url if site_url.endswith("/") else site_url + "/"


def needs_extra_note(marker: markers.Marker, site_url: str | None) -> str:
    """The note that takes the place of a needs-extra ``marker``: the extra's modules and the ``pip``
    command that installs it from the wheel at ``site_url``."""
    from netcl_lite import extras

    extra, indent = marker.match["extra"], marker.match["indent"]
    if extra not in extras.EXTRAS:
        raise ValueError(f"{marker.where}: no such extra; they are {sorted(extras.EXTRAS)}")
    wheel = f"{site_base(site_url, marker.where)}{wheel_name()}"
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
    """What a ``>>>`` session's copy button copies: the code after the prompts, no printed results: a
    ``... `` line is code only where the interpreter would prompt for it (:func:`_prompts_again`), so a
    printed line that starts like the prompt stays out."""
    text = html.unescape(_TAG.sub("", code_html))
    keep, statement = [], None          # statement: the lines of one the interpreter still prompts for
    for line in text.split("\n"):
        if line.startswith(">>> ") or line == ">>>":
            statement = [line[4:]]
        elif statement is not None and (line.startswith("... ") or line == "..."):
            statement.append(line[4:])
        else:                           # printed, even where it starts with '... '
            statement = None
            continue
        keep.append(line[4:])
        if not _prompts_again(statement):
            statement = None
    return "\n".join(keep).rstrip() + "\n"


def _prompts_again(lines: list[str]) -> bool:
    """Whether the interpreter shows ``...`` after ``lines`` of one statement: it is not complete yet
    (a compound statement ends with a blank line); a statement it cannot compile is complete."""
    import codeop
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # an invalid escape in a string: a warning, not code
        try:
            return codeop.compile_command("\n".join(lines), "<session>", "single") is None
        except (SyntaxError, ValueError, OverflowError):
            return False


def _pycon_sessions(content: str) -> list[tuple[int, str]]:
    """Each ``>>>`` session of a page's HTML, in order, as (where its ``data-copy`` goes: right after
    :data:`_PYCON`, whose start tag must end there, its code's HTML: from the first ``<code>`` after
    that to the first ``</code>`` after the ``<code>``). Found with ``str.find``, each session read from
    where the last one ended: a pattern that tried every later ``<code>`` of a block left without
    ``</code>`` (raw HTML the page passes through) read to the page's end from each, in cubic time.
    Once an opening has no ``<code>``, or its ``<code>`` no ``</code>``, after it, none later has."""
    found, pos = [], 0
    while (start := content.find(_PYCON, pos)) >= 0:
        after = start + len(_PYCON)
        if not content.startswith(">", after):
            pos = start + 1
            continue
        code = content.find("<code>", after + 1)
        end = content.find("</code>", code + len("<code>")) if code >= 0 else -1
        if end < 0:
            break
        found.append((after, content[code + len("<code>"):end]))
        pos = end + len("</code>")
    return found


def render_content(content: str) -> str:
    """A page's HTML with ``no-copy`` on what is read, not run, and a ``data-copy`` on each ``>>>``
    session (:func:`_pycon_sessions`)."""
    content = _NOT_A_PROGRAM.sub(lambda m: f'<div class="{m.group(1)} no-copy"', content)
    content = _HIGHLIGHT.sub(_read_only, content)
    pieces, pos = [], 0
    for at, code_html in _pycon_sessions(content):
        code = pycon_code(code_html)
        if code.strip():
            pieces += [content[pos:at], f' data-copy="{html.escape(code, quote=True)}"']
            pos = at
        else:               # no prompt: printed text alone, nothing to copy, so no copy button
            pieces += [content[pos:at - 1], " no-copy"]         # before the class attribute's closing quote
            pos = at - 1
    return "".join(pieces) + content[pos:]


def _read_only(m: re.Match) -> str:
    """A highlighted block's start tag, with ``no-copy`` unless its language is one a reader runs
    (:data:`_COPIED`) or a ``>>>`` session: a ``json``, ``c`` or ``console`` block (prompts and printed
    lines) copied would not run."""
    classes = m.group(1).split()
    if "no-copy" in classes or classes == ["language-pycon", "highlight"] or _COPIED.intersection(classes):
        return m.group(0)
    return f'<div class="{m.group(1)} no-copy"'

