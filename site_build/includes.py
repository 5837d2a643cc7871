"""Includes stay inside the project: every ``--8<--`` include that ``pymdownx.snippets`` resolves,
nested ones too, must lead (symlinks resolved) to a file under ``snippets/`` or, for an excerpt,
``netcl_lite/`` or ``kernels/`` of its base path, without ``..``; a build-output marker must name a
``.py`` file under ``snippets/``. Anything else, a missing file, and an include that leads back to a
file including it (which ``pymdownx.snippets`` leaves out silently) fail the build with an error
naming the page and the include or marker. An included file's UTF-8 byte order mark is dropped, as
MkDocs drops a page's. An included file is at most :data:`INCLUDE_LIMIT` bytes:
a longer one fails the build naming the page, the line of the include and the file. What a page's
includes bring in together (nested ones counted each time they are included; a section or line
ranges counted by the lines they select) is at most :data:`PAGE_INCLUDE_LIMIT` bytes, and they nest
at most :data:`INCLUDE_DEPTH` deep: both are counted through the include tree (each file and part
read once) before an include is expanded, and past them the build fails naming the page and the
include with its line. What an include on the page brings must leave the page's fenced blocks
where they are, as pymdownx.superfences reads the page with it (its own scan, made once per page,
:func:`site_build.markers.attempts`): inside a block, no line may close the block (the rest of the
file would become the page's Markdown) and the block must end as it did; outside one, the file may
not open a block it does not close (the page's lines after the include would become its code).
Either fails the build naming the page, the include's line and the file. An error inside an
included section or line range names the file's own line. Lines superfences keeps as code, such
as a longer fence or one indented more than the block's (an indented include indents every line it
brings), are accepted; a longer fence on the page shows a file's own fence as code.

As it expands the includes, the preprocessor records where each line it gives came from: the
page's own line, or the include on the page that brought it and the included file's own line
(:class:`Expansion`, left on the Markdown instance for :mod:`site_build.brought`). A line of the page
itself that shows a section marker (``--8<-- [start:name]`` in prose or in a code block) stays on
the page as written: sections are chosen in included files, and pymdownx.snippets would delete the
line from the page without a word.

:func:`contain` puts :func:`contained_snippets` in place of the ``pymdownx.snippets`` extension,
with the same options. The page named in errors is read from a :class:`CurrentPage`, which the
plugin sets before each page is rendered.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from netcl_lite.files import kind_of, shown_path, visible

from . import markers
from .paths import ROOT

#: where an include may lead (resolved, symlinks followed), relative to the base of the includes
INCLUDE_ROOTS = ("snippets", "netcl_lite", "kernels")
#: the longest file an include may bring into a page, in bytes (the largest library file is about
#: 55 KiB; the page's Markdown would hold all of it, and pymdownx.snippets reads it whole)
INCLUDE_LIMIT = 1 << 20
#: the most that the includes of one page bring into it together, nested ones counted each time they
#: are included, in bytes (the pages bring in under 100 KiB each)
PAGE_INCLUDE_LIMIT = 1 << 20
#: the deepest that includes nest (a page's include is level 1; the pages nest none): pymdownx.snippets
#: would leave out, without a word, an include nested as deep as Python's recursion limit
INCLUDE_DEPTH = 8
#: a line that is a fence and nothing else: the longest an included file brings sizes the longer
#: fence that an error suggests for the block around it
_FENCE_ONLY = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*")
#: a line's end as Python's text mode reads it, and so pymdownx.snippets (universal newlines)
_LINE_END = re.compile(r"\r\n|\r|\n")
#: three backticks or tildes anywhere on a line: a line without them opens or closes no fenced block
_FENCE_ANYWHERE = re.compile(r"`{3,}|~{3,}")
#: the fence that starts a line (a block's opening line)
_FENCE_OPEN = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})")
#: the line that opens (and closes) the block form of includes, whose lines between are paths
_BLOCK = "--8<--"


@dataclass(frozen=True)
class Expansion:
    """A page's lines before and after pymdownx.snippets expanded its includes, and where each line
    after came from, as recorded while the includes were expanded: ``origins[j]`` is a tuple of
    (file, 0-based line) pairs from the page's own line (file None) down to the line of the innermost
    included file that holds line ``j`` (a section's or line range's line numbered as in its file);
    one pair: a line of the page itself."""

    before: list[str]
    after: list[str]
    origins: list[tuple[tuple[str | None, int], ...]]
    base: Path = ROOT

    def source(self, j: int) -> str:
        """``<file>:<line>``: the file (relative to the includes' base) and its line that gave line ``j``
        of :attr:`after`; ``the page's line <n>``, counted in :attr:`before`, for a line of the page itself."""
        file_name, line = self.origins[j][-1]
        if file_name is None:
            return f"the page's line {line + 1}"
        try:
            shown = Path(file_name).relative_to(self.base).as_posix()
        except ValueError:
            shown = str(file_name)
        return f"{shown_path(shown)}:{line + 1}"


class PathError(ValueError):
    """A marker or an include names a file outside the folders a page may show or run."""


class CurrentPage:
    """The page being rendered, as errors name it (``docs/<page>``), with its own text (after any front
    matter) and the file's line that text starts on; one per build plugin."""

    def __init__(self, name: str = "(no page)", markdown: str = "", first_line: int = 1):
        self.name, self.markdown, self.first_line = name, markdown, first_line

    def line_of(self, path: str, nth: int = 0) -> int | None:
        """The page's line that includes ``path`` for the ``nth`` time (0: the first), as its file
        numbers it, or None."""
        found = [inc.index for inc in markers.includes(self.markdown.split("\n")) if inc.path == path]
        return self.first_line + found[nth] if nth < len(found) else None

    def own_line(self, lines: list[str], index: int, tab_length: int = 4) -> int | None:
        """The page's line (as its file numbers it) of ``lines[index]``, a line of the Markdown being read,
        which has what the build puts in (a needs-extra note) above it: the line of the page's own text
        that reads the same (tabs expanded to ``tab_length`` columns, spaces at the ends aside), counted
        as many times; None when there is none."""
        def same(line: str) -> str:
            return line.expandtabs(tab_length).strip()
        text = same(lines[index])
        nth = sum(same(line) == text for line in lines[:index])
        own = (i for i, line in enumerate(self.markdown.split("\n")) if same(line) == text)
        return next((self.first_line + i for k, i in enumerate(own) if k == nth), None)


def _indent(line: str, tab_length: int) -> int:
    """The spaces pymdownx.snippets puts before each line that the include on ``line`` brings: the
    include's own indentation, its tabs expanded to ``tab_length`` columns."""
    return len(re.match(r"[ \t]*", line)[0].expandtabs(tab_length))


def inside(path: str, allowed: tuple[Path, ...], base: Path, what: str, page: str | Callable[[], str]) -> Path:
    """``base / path`` resolved, symlinks followed, if it lies under one of ``allowed`` (resolved);
    raises :class:`PathError` or ``FileNotFoundError`` naming ``page`` and ``what`` otherwise (``page``
    may be a function giving the page's name and line, called only then). ``what`` and the path are
    shown with their control characters written out."""
    def fail(error: type[Exception], why: str) -> Exception:
        return error(f"{page() if callable(page) else page}: {visible(what)}: {why}")

    parts = Path(path).parts
    if Path(path).is_absolute() or ".." in parts:
        raise fail(PathError, "the path must be relative to the repository root and must not contain '..'")
    if "\x00" in path:                                 # os.stat's ValueError would name no page
        raise fail(PathError, "the path holds a NUL character, which no file name can hold")
    try:
        target = (base / path).resolve()
    except (RuntimeError, OSError) as err:          # a symlink loop, a name too long
        raise fail(PathError, f"cannot resolve the path: {visible(str(err))}") from None
    if not any(target.is_relative_to(root.resolve()) for root in allowed):
        names = ", ".join(f"{root.name}/" for root in allowed)
        raise fail(PathError, f"leads to {shown_path(target)}, outside {names} (a symlink out of the "
                              f"project?); a page shows and runs only files under {names}")
    try:
        regular = target.is_file()
    except OSError as err:                          # a name too long: resolve() leaves it, is_file() raises
        raise fail(PathError, f"cannot read the path: {visible(str(err))}") from None
    if not regular:
        kind = kind_of(target)
        if kind != "missing":                           # a folder, a FIFO, a device: there, but no file
            raise fail(PathError, f"{shown_path(target)} is {kind}, not a regular file; a page includes files")
        raise fail(FileNotFoundError, f"no such file ({shown_path(target)})")
    return target


def marker_path(path: str, page: str, root: Path = ROOT) -> Path:
    """The snippet a ``build-output`` marker on ``page`` names, checked: relative, no ``..``, a
    ``.py`` file that lies under ``root/snippets`` once symlinks are resolved."""
    what = markers.build_output(path)
    if not path.endswith(".py"):
        raise PathError(f"{page}: {visible(what)}: a build output runs a snippet, snippets/<page>/<name>.py")
    return inside(path, (root / "snippets",), root, what, page)


def _check_selection(preprocessor, lines: list[str], target: dict) -> None:
    """Raise pymdownx.snippets' ``SnippetMissingError`` (which the include's reading turns into an error
    naming the page's line and the include) when the line ranges or the section that ``target`` takes of
    a file's ``lines`` are not all there: a range that starts or ends past the file's last line, reaches
    before its first or selects no line, or a section whose start or end is marked more than once (nested
    in itself or repeated), that never ends, or that holds no line; pymdownx.snippets would clamp the
    range, take the first of the sections or the rest of the file, or fail on the empty selection."""
    from pymdownx.snippets import SnippetMissingError

    try:
        shown = shown_path(Path(target.get("snippet")).relative_to(preprocessor._base()).as_posix())
    except (TypeError, ValueError):
        shown = shown_path(str(target.get("snippet")))
    count = len(lines) - (1 if lines and lines[-1] == "" else 0)    # a last line's newline ends no line
    if target.get("start") and target.get("end"):
        for first, last in zip(target["start"], target["end"]):
            start = first if first is None or first >= 0 else count + first
            end = count if last is None else (last if last >= 0 else count + 1 + last)
            start = 0 if start is None else start
            if start < 0 or start >= count or end > count or end <= start or last == 0:
                written = f"{'' if first is None else first + 1 if first >= 0 else first}:{'' if last is None else last}"
                raise SnippetMissingError(
                    f"{shown} has {count} line{'s' * (count != 1)}, and the line range {written} of this include "
                    f"selects lines past its end, before its start or none; name lines from 1 to {count}, the "
                    f"first no later than the last")
        return
    section = target.get("section")
    if not section:
        return
    starts, ends = [], []
    for i, line in enumerate(lines):
        m = preprocessor.match_section(line)
        if m is not None and not m["escape"] and m["name"] == section:
            (starts if m["type"] == "start" else ends).append(i + 1)
    if not starts:
        return                                  # pymdownx.snippets refuses it: the section is missing
    twice = starts if len(starts) > 1 else ends if len(ends) > 1 else None
    if twice is not None:
        raise SnippetMissingError(
            f"{shown} marks the {'start' if twice is starts else 'end'} of section '{section}' more than once "
            f"(lines {', '.join(map(str, twice))}), so which lines it holds is not clear; mark one start and "
            f"one end, or give the other section another name")
    if not ends or ends[0] < starts[0]:
        raise SnippetMissingError(
            f"{shown} starts section '{section}' at line {starts[0]} and never ends it after that; mark its end "
            f"with '--8<-- [end:{section}]' in a comment")
    inside_ = [line for line in lines[starts[0]:ends[0] - 1]
               if (m := preprocessor.match_section(line)) is None or m["escape"]]
    if not inside_:
        raise SnippetMissingError(
            f"{shown}'s section '{section}' (lines {starts[0]} to {ends[0]}) holds no line to show; put the "
            f"lines between its markers")


def contained_snippets(page: CurrentPage, **options):
    """``pymdownx.snippets`` with ``options``, whose every include (nested ones too) must lead, symlinks
    resolved, to a file under ``snippets/``, ``netcl_lite/`` or ``kernels/`` of its base path, without
    ``..``; a missing file or any other path raises an error naming ``page.name`` and the include."""
    if not isinstance(page, CurrentPage):
        raise TypeError(f"page must be a CurrentPage, got {type(page).__name__}")
    from pymdownx.snippets import SnippetExtension, SnippetMissingError, SnippetPreprocessor

    class ContainedPreprocessor(SnippetPreprocessor):
        def run(self, lines):
            # the page's own fenced blocks (an include inside one must not close it), the size and
            # depth of each file's include tree, and what the page's includes brought in so far
            self.attempts, self.trees, self.brought = markers.attempts(lines), {}, 0
            self.starts = [start for start, _, _ in self.attempts]
            self.page_lines = lines
            before = list(lines)
            after = super().run(lines)
            self.md.expansion = Expansion(before, after, self.__dict__.pop("origins"), self._base())
            return after

        def parse_snippets(self, lines, file_name=None, *args, **kwargs):
            # which file and line is being read, innermost last: where an include that fails stands
            where = [file_name, 0, ""]
            reading = self.__dict__.setdefault("reading", [])
            reading.append(where)
            # the file's own line (0-based) of each line of a section or line ranges of it
            numbered = self.__dict__.pop("numbered", None)
            numbers = numbered[1] if numbered and file_name is not None and numbered[0] == file_name else None
            try:
                found, origins = self._expand(lines, file_name, numbers, where, *args, **kwargs)
                if file_name is not None and len(reading) == 2 and reading[0][0] is None:
                    self._keeps_blocks(reading[0][1], found, file_name)
                self.origins = origins                  # for the line of the file that included this one
                return found
            finally:
                reading.pop()

        def _expand(self, lines, file_name, numbers, where, *args, **kwargs):
            """What pymdownx.snippets makes of ``lines`` (of ``file_name``; None: the page), with the origin
            of each line it gives: a tuple of (file, 0-based line) from the page's line down to the line
            of the innermost file that holds it (one entry: a line of ``lines`` itself). Each line is
            given to pymdownx.snippets alone, after a block marker when it stands inside the block form
            (so it reads it as a path), and what comes back is that line's: its own text, nothing, or
            what its include brings, whose origins the include's own reading recorded. On the page
            itself, a line showing a section marker is kept as written: a section is chosen in an
            included file, and on a page the line is prose or code that shows the marker."""
            found, origins, block = [], [], False
            for i, line in enumerate(lines):
                own = numbers[i] if numbers is not None and i < len(numbers) else i
                where[1:] = own, line
                m = self.RE_ALL_SNIPPETS.match(line)
                if file_name is None and not block and m is None and (s := self.match_section(line)) is not None \
                        and not s["escape"]:
                    found.append(line)
                    origins.append(((file_name, own),))
                    continue
                self.origins = None
                try:
                    got = super().parse_snippets([_BLOCK, line] if block else [line], file_name, *args, **kwargs)
                except SnippetMissingError as err:      # a section the file lacks, an include naming no path
                    inc = markers.include_line(line)
                    raise ValueError(f"{self._where(inc.path if inc else None, self._base())}: "
                                     f"{visible(line.strip())}: {visible(str(err))}; name a file under "
                                     f"{', '.join(f'{r}/' for r in INCLUDE_ROOTS)} and, after a colon, a "
                                     f"section it marks or line numbers") from None
                if m is not None and not m["escape"] and not m["inline_marker"]:
                    block = not block                   # a block marker opens or closes the block form
                brought, self.origins = self.origins, None
                found += got
                if brought is not None:                 # the line was an include: each line it brought
                    origins += [((file_name, own), *chain) for chain in brought]
                else:
                    origins += [((file_name, own),)] * len(got)
            return found, origins

        def _keeps_blocks(self, index: int, brought: list[str], file_name: str) -> None:
            """Raise naming the page, the include's line and the file when the lines that the include on
            the page's line ``index`` brings (nested includes expanded) change where the page's fenced
            blocks start or end, as pymdownx.superfences reads the page with them: a line that closes
            the block the include stands in (the rest of the file would become the page's Markdown:
            HTML, headings), or, outside a block, a fence the file opens and does not close (the page's
            lines after the include would become its code). Lines that superfences keeps as code, such
            as a longer fence or one indented more than the block's, are the file's to show."""
            # as superfences reads them: pymdownx.snippets puts the include's indentation before each
            # line, and Python-Markdown deletes STX and ETX (its placeholder characters) after the
            # snippets and before the fences are found
            if not any(_FENCE_ANYWHERE.search(line.replace("\x02", "").replace("\x03", "")) for line in brought):
                return                                  # no fence: the page's blocks stay where they are
            lines = self.page_lines
            space = re.match(r"[ \t]*", lines[index])[0].expandtabs(self.tab_length)
            brought = [(space + line).replace("\x02", "").replace("\x03", "") for line in brought]
            # the block the include stands in, from the one scan of the page that run() made: one the page
            # closes, one whose reading a later line (or the include's own) ends, one never closed
            own = getattr(self, "attempts", [])
            k = bisect.bisect_right(getattr(self, "starts", []), index) - 1
            block = own[k] if k >= 0 else None
            if block is not None and not (index < block[1] or (block[2] == "clear" and index == block[1])):
                block = None
            if block is None:                           # outside a block: the file closes what it opens
                opened = markers.unclosed_fence(brought)
                if opened is not None:
                    self._refuse(file_name, opened, brought[opened], "opens a code block that the file does not "
                                 "close, so the page's lines after the include would become its code (or show as "
                                 "text); close the block in the file")
                return
            # inside one: read as superfences reads it with the file in place of the include, from the
            # block's opening line, the blank lines just before the include (in a quote they count), what
            # the file brings, and the page's lines after it up to the next that is not blank (from there
            # on superfences reads as it did) or the block's last line; the block must end as it did
            opening_line, last, how = block
            first = index
            while first - 1 > opening_line and not lines[first - 1].strip(" \t>"):
                first -= 1
            stop = index + 1
            while stop < last and not lines[stop].strip(" \t>"):
                stop += 1
            after = lines[index + 1:stop + 1] if last > index else []
            segment = [lines[opening_line], *lines[first:index], *brought, *after]
            at = 1 + index - first                      # where the file's lines start in the segment
            scanned = markers.attempts(segment)
            ends = [end for start, end, kind in scanned if start == 0 and kind == "close"]
            still_open = any(start == 0 and kind == "open" for start, _, kind in scanned)
            if how == "close" and stop == last:
                kept = ends == [len(segment) - 1]
            elif how == "clear" and (stop == last or last == index):
                kept = not ends and not any(kind == "open" for _, _, kind in scanned)
            else:
                kept = not ends and still_open
            if kept:
                return
            closed = next((end - at for end in ends if at <= end < at + len(brought)), None)
            opening = _FENCE_OPEN.match(lines[opening_line].lstrip(" \t>"))     # in a quote too
            if closed is not None and opening is not None:
                fence = opening["fence"]
                longer = fence[0] * (max((len(m["fence"]) for m in map(_FENCE_ONLY.fullmatch, brought)
                                          if m and m["fence"][0] == fence[0]), default=len(fence)) + 1)
                self._refuse(file_name, closed, brought[closed], f"would close the page's code block ({fence}) "
                             f"that includes it, and the rest of the file would become the page's Markdown; "
                             f"open and close that block with a longer fence ({longer})")
            self._refuse(file_name, None, None, "changes where the page's code blocks start and end (a fence in "
                         "it pairs with one of the page's); keep the file's fences closed within it")

        def _refuse(self, file_name: str, k: int | None, line: str | None, why: str) -> None:
            """Raise naming the page's line of the include being read, the include and the file, with the
            ``k``-th line (0-based) of what it brought, ``line``, when given."""
            base = self._base()
            try:
                shown = shown_path(Path(file_name).relative_to(base).as_posix())
            except ValueError:
                shown = shown_path(file_name)
            what = f"line {k + 1} of what {shown} brings into the page, {line.strip()!r}," if k is not None else \
                f"what {shown} brings into the page"
            raise ValueError(f"{self._where(self.outer, base, top_level=True)}: {visible(markers.include(self.outer))}: "
                             f"{what} {why}")

        def _base(self) -> Path:
            bases = [Path(base) for base, is_dir in self.get_bases() if is_dir]
            return bases[0].resolve() if bases else ROOT

        def _part(self, line: str) -> str | None:
            """What the include on ``line`` (a whole include or a path line of its block form) takes of
            its file, as pymdownx.snippets reads it: its line ranges (``:1:5,9:12``) or its section
            (``:name``), or None for the whole file."""
            m = self.RE_ALL_SNIPPETS.match(line)
            text = m["snippet"][1:-1].strip() if m and m["inline_marker"] else line.strip()
            parts = self.split_path(text) if text else None
            return (parts[1] or parts[2] or None) if parts else None

        def _selected(self, lines: list[str], part: str | None) -> list[str]:
            """The lines of a file that an include taking ``part`` of it brings, selected as
            pymdownx.snippets selects them (a section it lacks: none; that include's read refuses it)."""
            if not part:
                return lines
            target = self.parse_snippet_target("f" + part)
            try:
                return SnippetPreprocessor.select_snippet_lines(self, lines, target)
            except SnippetMissingError:
                return []

        def _tree(self, target: Path, base: Path, allowed: tuple[Path, ...], stack: tuple[str, ...] = (),
                  part: str | None = None):
            """(bytes, lines, depth) that including ``part`` of ``target`` (its line ranges or section, see
            :meth:`_part`; None: all of it) brings in: its lines as selected and, each time they are
            included, its includes' with the indentation pymdownx.snippets puts before each of their lines
            (an include that would fail, by its path, its size or a loop, is left out: its own check
            refuses it when it is read), counted once per file and part."""
            key = (str(target), part)
            if key in self.trees:
                return self.trees[key]
            text = target.read_bytes().decode(self.encoding, errors="replace")
            lines = _LINE_END.split(text)                   # as pymdownx reads them (universal newlines)
            if part:
                lines = self._selected(lines, part)
                size = sum(len(line.encode(self.encoding, errors="replace")) + 1 for line in lines)
            else:
                size = target.stat().st_size
            count, depth = len(lines), 1
            if len(stack) <= INCLUDE_DEPTH:
                for inc in markers.includes(lines):
                    try:
                        child = inside(inc.path, allowed, base, "", page.name)
                    except (ValueError, OSError):
                        continue
                    if str(child) in stack or str(child) == key[0] or child.stat().st_size > INCLUDE_LIMIT:
                        continue
                    taken = inc.ranges or (f":{inc.section}" if inc.section else None)
                    inner, inner_lines, levels = self._tree(child, base, allowed, (*stack, key[0]), taken)
                    size = size + inner + _indent(inc.line, self.tab_length) * inner_lines
                    count = count + inner_lines
                    depth = max(depth, levels + 1)
            self.trees[key] = size, count, depth
            return size, count, depth

        def _bounded(self, path: str, target: Path, base: Path, allowed: tuple[Path, ...]) -> None:
            """Before an include on the page is expanded: raise naming the page and the include's
            line when its includes nest deeper than INCLUDE_DEPTH, or when what it brings (the lines
            of its section or line ranges, each range once), with what the page's earlier includes
            brought, is over PAGE_INCLUDE_LIMIT."""
            line = self.reading[-1][2] if getattr(self, "reading", None) else ""
            part = self._part(line)
            size, lines, depth = self._tree(target, base, allowed, part=part)
            # the include's own indentation goes before each line it brings
            size = size + _indent(line, self.tab_length) * lines
            what = visible(markers.include(path, part[1:] if part else None))

            def where() -> str:                         # the page's line, found only for an error
                return self._where(path, base)
            if depth > INCLUDE_DEPTH:
                raise PathError(f"{where()}: {what}: its includes nest {depth} deep or more, over INCLUDE_DEPTH = "
                                f"{INCLUDE_DEPTH}, the most a page's includes nest")
            self.brought = getattr(self, "brought", 0) + size
            if self.brought > PAGE_INCLUDE_LIMIT:
                raise PathError(f"{where()}: {what}: the page's includes bring {self.brought:,} bytes into it "
                                f"with this one (nested includes counted each time they are included), over "
                                f"PAGE_INCLUDE_LIMIT = {PAGE_INCLUDE_LIMIT:,}, the most a page takes from "
                                f"its includes")

        def _where(self, path: str, base: Path, top_level: bool = False) -> str:
            """``docs/<page>:<line>``, or, for an include inside an included file, that as well
            (``top_level``: only the page's line, of the include ``path`` on the page)."""
            reading = getattr(self, "reading", None) or [(None, 0, "")]
            file_name, i, _ = reading[0 if top_level else -1]
            outer = getattr(self, "outer", None) if file_name is not None else None
            # the page's include being read is the how-many-th of its path: the page may include it twice
            index, lines = (reading[0][1], getattr(self, "page_lines", None)) if reading[0][0] is None else (0, None)
            nth = sum(inc.path == (outer or path) for inc in markers.includes(lines[:index])) if lines else 0
            top = page.line_of(outer or path, nth) or page.line_of(outer or path)
            if top is None and lines:       # an include naming no path, a page not set: the line as read
                top = page.own_line(self.page_lines, index, self.tab_length)
                top = page.first_line + index if top is None else top
            where = f"{page.name}:{top}" if top is not None else page.name
            if file_name is not None:
                try:
                    shown = Path(file_name).relative_to(base).as_posix()
                except ValueError:
                    shown = file_name
                where += f": in {shown_path(shown)}:{i + 1}"
            return where

        def select_snippet_lines(self, lines, target):
            # what pymdownx.snippets would take without a word is refused (its error names the page's line
            # and the include): a line range past the file's end (clamped), one that selects no line, a
            # section marked twice (the first taken) or never ended (the rest of the file taken)
            _check_selection(self, lines, target)
            # the same selection of the lines, each led by its index in the file, gives the file's own
            # line of each line selected (a section skips the markers of other sections inside it)
            selected = super().select_snippet_lines(lines, target)
            numbers = None
            if lines and (target.get("section") or (target.get("start") and target.get("end"))):
                tagged = super().select_snippet_lines([f"{i}\x00{line}" for i, line in enumerate(lines)], target)
                numbers = [int(line.split("\x00", 1)[0]) for line in tagged]
            self.numbered = target.get("snippet"), numbers
            return selected

        def read_lines(self, path):
            # a UTF-8 byte order mark starts the file, not its first line (MkDocs drops a page's too):
            # kept, it would hide a heading or a marker on line 1 and reach the page as U+FEFF
            lines = super().read_lines(path)
            if lines and lines[0].startswith("\ufeff"):
                lines[0] = lines[0][1:]
            return lines

        def get_snippet_path(self, path):
            on_page = not getattr(self, "reading", None) or self.reading[-1][0] is None
            if on_page:
                self.outer = path                       # an include on the page itself
            base = self._base()
            allowed = tuple(base / name for name in INCLUDE_ROOTS)
            found = inside(path, allowed, base, markers.include(path), lambda: self._where(path, base))
            what = visible(markers.include(path))
            if str(found) in getattr(self, "seen", ()):     # the files being included, outermost first
                raise PathError(f"{self._where(path, base)}: {what}: leads back to a file that is including it (it includes "
                                f"itself, directly or through the files it includes); pymdownx.snippets would "
                                f"leave it out without a word")
            size = found.stat().st_size
            if size > INCLUDE_LIMIT:
                raise PathError(f"{self._where(path, base)}: {what}: {found} is {size:,} bytes, over "
                                f"INCLUDE_LIMIT = {INCLUDE_LIMIT:,}, the most an include brings into a page")
            try:
                text = found.read_bytes().decode(self.encoding)
            except UnicodeDecodeError as exc:           # pymdownx.snippets' own read raised it naming no page
                raise ValueError(f"{self._where(path, base)}: {what}: {shown_path(path)} is not {self.encoding} text (at byte {exc.start}: "
                                 f"{exc.object[exc.start:exc.start + 8]!r}); a page includes text files") from None
            if not text.lstrip("\ufeff").strip():        # pymdownx.snippets would bring nothing, without a word
                raise PathError(f"{self._where(path, base)}: {what}: {shown_path(path)} is empty (or blank): the "
                                f"include would show nothing where the page expects the file; fill the file, "
                                f"or remove the include")
            if on_page:
                self._bounded(path, found, base, allowed)
            return str(found)

    class ContainedSnippets(SnippetExtension):
        def extendMarkdown(self, md):
            self.md = md
            md.registerExtension(self)
            preprocessor = ContainedPreprocessor(self.getConfigs(), md)
            preprocessor.md = md                        # where it leaves the expansion it records
            md.preprocessors.register(preprocessor, "snippet", 32)

    return ContainedSnippets(**options)


def contain(config, page: CurrentPage):
    """Put :func:`contained_snippets` in place of ``pymdownx.snippets`` in ``config``, same options."""
    extensions = config.markdown_extensions
    if "pymdownx.snippets" in extensions:
        options = config.mdx_configs.pop("pymdownx.snippets", {})
        extensions[extensions.index("pymdownx.snippets")] = contained_snippets(page, **options)
    return config
