"""Make the files that are drawn or assembled from code, before MkDocs collects the pages.

* Figures: every ``snippets/<page>/figure_<name>.py`` is run with an output
  path and writes ``docs/figures/<page>/<name>.svg`` from netcl_lite's own
  results (or, for Chapter 8, from the benchmark JSON), so a figure cannot
  drift from the code any more than a printed number can. Each script runs
  alone in a fresh interpreter (several at once), so what one sets (matplotlib's
  rcParams, a seed, the working folder) never reaches another figure, whose key
  would not cover it; an SVG over :data:`FIGURE_LIMIT` fails the build. Each script states
  what it drew, numbers included, in the SVG's description; that text becomes
  the ``alt`` of the figure's ``<img>``, so no alt text is typed by hand.
* Drill notebooks: ``snippets/<week>/drill_<n>_<topic>.py`` are the one source
  of each drill. The page includes them one by one; this stage assembles them,
  in order, and runs the notebook top to bottom (nbclient, failing on any error
  and on a cell whose output passes :data:`NOTEBOOK_OUTPUT_LIMIT`)
  into ``docs/drills/<week>-drill.ipynb``, which mkdocs-jupyter renders and
  offers for download, outputs included. A cell's output reaches the page as text or a
  raster image only (:func:`_plain_outputs`): every other representation a display
  carries (``text/html``, ``text/markdown``, ``application/javascript``, ``image/svg+xml``,
  ...) is dropped, and a display that has no ``text/plain`` shows that representation's source as
  ``text/plain``, which the page escapes, so no output can put markup or a script on the page.

Both are executed under the execution cache (:mod:`site_build.store`): a figure or notebook
whose script, library, packages and device are unchanged is taken from the
store instead of run again (``NETCL_LITE_RERUN=1`` runs everything). Both
outputs are git-ignored and rewritten, whole, only when their content changes, so
``mkdocs serve`` does not rebuild in a loop.
"""

from __future__ import annotations

import bisect
import html
import json
import os
import re
import stat
import sys
import tempfile
import urllib.parse
from pathlib import Path

from netcl_lite import fingerprint
from netcl_lite.files import atomic_write

from . import runner, store
from .glossary import elements
from .offline import attribute_spans, attributes_of, srcset_urls
from .tags import Positions, Tags
from .paths import DOCS, FIGURES, ROOT, SNIPPETS, pages, pyproject_version

#: the longest one figure script may run, in seconds
FIGURES_TIMEOUT_S = 900
#: the largest SVG a figure script may write, in bytes (the site's largest figure is about 110 KB)
FIGURE_LIMIT = 2 << 20
#: the most output one code cell of a drill notebook may hold, in bytes of its JSON (the page shows it whole)
NOTEBOOK_OUTPUT_LIMIT = 64 * 1024
#: the tags around the text a figure script gives as its SVG's description (:func:`figure_description`)
_DESCRIPTION_TAGS = ("<dc:description>", "</dc:description>")
#: each attribute of an <img> start tag (the tag as :func:`~site_build.glossary.elements` reads it)
#: (tried only where a run of white space starts: from inside one it would end the same way)
_ATTRIBUTE = re.compile(r"""(?<![\s/])[\s/]+([^\s"'>/=]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'=<>`]+))?""")
#: a generated figure's path as an <img>'s src gives it (group 1: ``<page>/<name>``)
_FIGURE_SRC = re.compile(r"(?:[^\s\"'<>]*/)?figures/([\w-]+/[\w-]+)\.svg")

#: how one figure script runs: alone in a fresh interpreter (nothing one script sets, matplotlib's
#: rcParams, a seed, the working folder, reaches another), ``python -c _RUN_FIGURE SCRIPT OUT``
_RUN_FIGURE = r"""
import runpy, sys
import matplotlib
matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "netcl-lite"      # stable ids: unchanged figures stay byte-identical
matplotlib.rcParams["svg.fonttype"] = "path"           # text as paths: no font request from the page
sys.argv = sys.argv[1:]                                 # [script, out], as `python script out` sees them
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as stop:                              # a code the OS reads as 0 (256: it keeps the low 8 bits)
    if isinstance(stop.code, int) and stop.code != 0 and stop.code % 256 == 0:
        sys.stderr.write(f"SystemExit({stop.code!r}): an exit status the OS would read as 0; the run failed\n")
        raise SystemExit(1) from None
    raise
"""


def write_if_changed(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole (temporary file, fsync, rename), only when it differs: an
    interrupted build never leaves half a figure or notebook for the next build to publish."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_bytes() != data:
        atomic_write(path, data)


def figure_scripts() -> list[Path]:
    return sorted(SNIPPETS.glob("*/figure_*.py"))


def drill_weeks() -> list[Path]:
    return sorted(p for p in SNIPPETS.glob("week*") if any(p.glob("drill_*.py")))


def figure_reads(script: Path) -> list[Path]:
    """The files a figure script may draw from besides the library: every other file under its own
    folder, at any depth (a module or data beside it, or in a subfolder such as ``data/``, which the
    script reaches through ``__file__`` just as it reaches its neighbours), and the benchmark reports
    and their results for the scripts that name them (Chapter 8's), or whose files beside them do (a
    helper module that reads ``benchmarks/results/``). A script runs in a scratch working folder, so a
    path relative to the working folder reaches none of the repository. Compiled ``.pyc`` files are
    left out: Python writes them, and they hold nothing their source does not."""
    beside = sorted(p for p in script.parent.rglob("*") if p.is_file() and p != script and p.suffix != ".pyc")
    if "benchmarks" not in _script_text(script) and not any(_names_benchmarks(p) for p in beside):
        return beside
    bench = ROOT / "benchmarks"
    return beside + sorted(bench.glob("*.py")) + sorted(p for p in (bench / "results").rglob("*") if p.is_file())


def _names_benchmarks(path: Path) -> bool:
    """Whether the file ``path`` (a module or data beside a figure script) names ``benchmarks``: in a
    Python module's code or strings (a comment reads nothing), anywhere in another file's bytes. One
    that cannot be read names nothing (the key's digest of it says it changed)."""
    import io
    import tokenize

    try:
        data = path.read_bytes()
    except OSError:
        return False
    if b"benchmarks" not in data:
        return False
    if path.suffix != ".py":
        return True
    try:
        return any("benchmarks" in tok.string for tok in tokenize.tokenize(io.BytesIO(data).readline)
                   if tok.type != tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return True                                  # not Python as it stands: read as bytes


def _script_text(script: Path) -> str:
    """A figure script's text, or ValueError naming the pages that show its figure and the script."""
    try:
        return script.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        figure = f"figures/{script.parent.name}/{script.stem[len('figure_'):]}.svg"
        raise ValueError(f"{', '.join(pages_showing(figure)) or 'no page'}: the figure script {_rel(script)} "
                         f"(drawing {figure}) is not UTF-8 text (at byte {exc.start}); write it in UTF-8") from None


def figure_key(script: Path, shared: str | None = None) -> str:
    """The execution-cache key of one figure: its script, what it reads, and how it is run."""
    return fingerprint.key(_RUN_FIGURE + _script_text(script), figure_reads(script), shared)


def build_figures(shared: str | None = None) -> list[Path]:
    """Draw every figure whose key is not stored, each script in its own interpreter (several at once),
    store them, write them all; return the scripts that ran. A failure names the first failing
    script in :func:`figure_scripts`' order, whatever order they finished in."""
    from concurrent.futures import ThreadPoolExecutor

    scripts = figure_scripts()
    keys = {script: figure_key(script, shared) for script in scripts}
    svgs = {script: store.lookup("figure", keys[script]) for script in scripts}
    missing = [script for script, svg in svgs.items() if svg is None]
    if missing:
        with ThreadPoolExecutor(max_workers=min(len(missing), os.cpu_count() or 1)) as pool:
            drawn = list(pool.map(_draw, missing))
        for script, svg in zip(missing, drawn):
            if isinstance(svg, Exception):
                raise svg
        for script, svg in zip(missing, drawn):
            svgs[script] = svg
            store.store("figure", keys[script], svg)
    for script, svg in svgs.items():
        write_if_changed(FIGURES / script.parent.name / f"{script.stem[len('figure_'):]}.svg", svg)
    return missing


def _draw(script: Path) -> bytes | RuntimeError:
    """The SVG ``script`` draws, run alone (:data:`_RUN_FIGURE`) in an empty working folder, without
    its build date; or the RuntimeError that names the pages showing it, the script and why it failed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figure.svg"
        work = Path(tmp) / "work"          # the working folder: nothing of the repository in it
        work.mkdir()
        env = dict(runner.reader_env(), MPLBACKEND="Agg")     # the snippets' fixed Python environment
        run = runner.run_bounded([sys.executable, "-c", _RUN_FIGURE, str(script), str(out)], work, env,
                                 FIGURES_TIMEOUT_S, limit=None)
        if run.returncode or run.stopped:
            return RuntimeError(_figure_failure(script, run))
        try:
            svg = _written_svg(script, out)
        except RuntimeError as err:
            return err
    lines = svg.split("\n")                # at newlines only: U+2028 and the like stay inside their line
    return "\n".join(line for line in lines if "<dc:date>" not in line).encode("utf-8")


def pages_showing(text: str) -> list[str]:
    """The pages (``docs/<page>``) whose source holds ``text``: those that show a figure or include a
    drill's steps."""
    return [f"docs/{page.relative_to(DOCS).as_posix()}" for page in pages(DOCS)
            if text in page.read_text(encoding="utf-8", errors="replace")]      # MkDocs names a page not UTF-8


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def _written_svg(script: Path, out: Path) -> str:
    """The SVG text ``script`` wrote to ``out``, or RuntimeError naming the pages that show its figure,
    the script and the figure when it wrote none or wrote what is not text (a PNG, say)."""
    figure = f"figures/{script.parent.name}/{script.stem[len('figure_'):]}.svg"
    try:
        # not following a link, not waiting on a FIFO: only a regular file the script wrote is read, and
        # no more of it than a figure may hold (a link to /dev/zero or to a file outside, a FIFO that no
        # one writes, a folder would otherwise be read without end, waited on forever or end in a
        # traceback naming no page)
        fd = os.open(out, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        why = "exited without writing its figure (a figure script saves to the path sys.argv[1])"
    except OSError as err:
        why = f"wrote what cannot be read as a file ({err.strerror or err}; a figure is a regular file, not a link)"
    else:
        held = os.fstat(fd)
        if not stat.S_ISREG(held.st_mode):
            os.close(fd)
            why = "wrote what is not a regular file (a folder, a FIFO, a device); a figure is an SVG file"
        else:
            with os.fdopen(fd, "rb") as f:
                data = f.read(FIGURE_LIMIT + 1)
            if len(data) > FIGURE_LIMIT:
                why = (f"wrote {held.st_size:,} bytes; a figure holds at most FIGURE_LIMIT = "
                       f"{FIGURE_LIMIT:,} (draw fewer points, or a raster inside the SVG)")
            else:
                try:
                    return data.decode("utf-8")
                except UnicodeDecodeError as err:
                    why = f"wrote a file that is not SVG text (not UTF-8 at byte {err.start})"
    shown = ", ".join(pages_showing(figure)) or "no page"
    raise RuntimeError(f"{shown}: the figure script {_rel(script)} (drawing {figure}) {why}")


def _figure_failure(script: Path, run: runner.Bounded) -> str:
    """What a failed figure run says: the pages that show its figure, the script, the figure, and the
    end of its stderr."""
    stderr = run.stderr.decode("utf-8", "replace")
    figure = f"figures/{script.parent.name}/{script.stem[len('figure_'):]}.svg"
    shown = ", ".join(pages_showing(figure)) or "no page"
    why = (f"ran longer than {FIGURES_TIMEOUT_S} s" if run.stopped == "timeout"
           else f"failed (exit status {run.returncode})")
    return f"{shown}: the figure script {_rel(script)} (drawing {figure}) {why}:\n{stderr}"


def figure_description(svg: Path) -> str | None:
    """The text a figure script gave as its SVG description (its alt text), or None: what lies between
    the first ``<dc:description>`` and the first ``</dc:description>`` after it. Found with two
    ``str.find`` calls, so an SVG of openings never closed is read once, not to its end again from each
    opening (a figure may hold 2 MiB, and it is read on every render of a page that shows it): when
    the first opening has no closing after it, no later one has."""
    text = svg.read_text(encoding="utf-8")
    opening, closing = _DESCRIPTION_TAGS
    start = text.find(opening)
    end = text.find(closing, start + len(opening)) if start >= 0 else -1
    return " ".join(html.unescape(text[start + len(opening):end]).split()) if end >= 0 else None


def _with_alt(tag: str, page: str, source: str = "", first_line: int = 1) -> str:
    """The <img> tag ``tag`` (or ``<image>``, which a browser makes an ``<img>``) with its alt the
    description of the generated figure it shows (its src's, else its srcset's first: :func:`_shown`;
    the first alt attribute replaced in place, any other dropped, or one added after its name), in any
    quotes or none; the tag as it was when it shows no generated figure. A figure that is not drawn
    or does not describe itself is a ``ValueError`` naming ``page`` and the first line of ``source``
    (the page as written, from the file's line ``first_line``) that names it."""
    figure = next(iter(_shown("img", False, tag)), None)
    if figure is None:
        return tag
    svg = FIGURES / f"{figure}.svg"
    alt = figure_description(svg) if svg.is_file() else None
    if alt is None:
        made = "a generated figure must describe itself (savefig(..., metadata={'Description': ...}))"
        at = source.find(f"figures/{figure}.svg")
        line = f":{first_line + source.count(chr(10), 0, at)}" if at >= 0 else ""
        raise ValueError(f"{page}{line}: {svg.relative_to(ROOT)}: " + (made if svg.is_file() else "no such figure; a "
                         f"figure is drawn by snippets/<page>/figure_<name>.py") + "; its description is the alt text")
    given = f' alt="{html.escape(alt)}"'
    alts = [(start, end) for name, _, start, end in attribute_spans(tag) if name == "alt"]
    if not alts:
        name_end = _TAG_NAME.match(tag, 1).end()
        return tag[:name_end] + given + tag[name_end:]
    out, at = [], 0
    for i, (start, end) in enumerate(alts):     # the first in place, the rest dropped with the blanks before them
        cut = start if i == 0 else len(tag[at:start].rstrip("\t\n\f\r ")) + at
        out += [tag[at:cut], given[1:] if i == 0 else ""]
        at = end
    return "".join(out) + tag[at:]


#: a tag's name, after its '<', up to a blank, '/' or '>'
_TAG_NAME = re.compile(r"[^\t\n\f\r />]*")
#: what a browser's URL parser drops from a URL: C0 controls and blanks at either end, every tab and newline
_URL_ENDS = "".join(map(chr, range(0x21)))
_URL_TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")
#: the attributes whose URL shows an image, by element: HTML's (an ``<image>`` is an ``<img>`` to a
#: browser; a ``<source>`` shows its srcset's in a ``<picture>``; an ``<input type=image>`` its src; a
#: video its poster; an object, an embed or a frame its document) and SVG's (an ``<image>``, ``<feImage>``
#: or ``<use>``'s ``href``, with or without XLink's prefix)
_SHOWN_BY = {"img": ("src", "srcset"), "image": ("src", "srcset"), "source": ("srcset",), "object": ("data",),
             "embed": ("src",), "iframe": ("src",), "frame": ("src",), "video": ("poster",)}
_SHOWN_BY_SVG = {"image": ("href", "xlink:href"), "feimage": ("href", "xlink:href"), "use": ("href", "xlink:href")}


def _figure(url: str) -> str | None:
    """The generated figure (``ch1/loss``) that the URL ``url`` (its character references resolved) names,
    or None, as a browser's URL parser reads it: blanks and C0 controls at either end and every tab and
    newline dropped, backslashes read as slashes, percent escapes decoded, a query or fragment aside."""
    url = _URL_TAB_OR_NEWLINE.sub("", url.strip(_URL_ENDS)).replace("\\", "/")
    figure = _FIGURE_SRC.fullmatch(urllib.parse.unquote(url.partition("#")[0].partition("?")[0]))
    return figure.group(1) if figure is not None else None


def _shown(name: str, foreign: bool, tag: str) -> list[str]:
    """The generated figures (``ch1/loss``) that the start tag ``tag`` of the element ``name`` (an SVG or
    MathML one when ``foreign``) shows, in its attributes' order (:data:`_SHOWN_BY`)."""
    attributes = attributes_of(tag)
    if foreign:
        urls = [attributes.get(key) for key in _SHOWN_BY_SVG.get(name, ())]
    elif name == "input":                       # an image button: its type in ASCII case
        image = attributes.get("type", "").strip("\t\n\f\r ").translate(_ASCII_LOWER) == "image"
        urls = [attributes.get("src")] if image else []
    else:
        urls = [url for key in _SHOWN_BY.get(name, ()) if key in attributes
                for url in (srcset_urls(attributes[key]) if key == "srcset" else [attributes[key]])]
    return [figure for url in urls if url is not None and (figure := _figure(url)) is not None]


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


#: the path of a generated figure, as a page links it (a query or a fragment after it or not)
_FIGURE_PATH = r"(?:[^()\s<>\"']*/)?figures/[\w-]+/[\w-]+\.svg(?:[?#][^()\s<>\"']*)?"
_FIGURE_PATH_RE = re.compile(_FIGURE_PATH, re.I)
#: the characters a figure's path is made of: it runs to the first other one
_PATH_RUN = re.compile(r"[^()\s<>\"']*")
_SPACES = re.compile(r"\s*")
#: a line break inside a paragraph, not one that ends it (a blank line follows)
_PARAGRAPH_END = re.compile(r"\n(?=[ \t]*\n)")
#: the start of an <img> tag
_IMG_START = re.compile(r"<img(?=[\s/>])", re.I)
#: a reference-style image, ![alt][label], ![alt][] or ![alt], read from the ']' that ends its alt
_REFERENCE_TAIL = re.compile(r"(?:\[(?P<label>[^\]\n]*)\])?(?![(\[:])")
#: a link reference definition whose target is a generated figure
_FIGURE_REFERENCE = re.compile(rf"^ {{0,3}}\[(?P<label>[^\]\n]+)\]:[ \t]*(?:{_FIGURE_PATH}|<{_FIGURE_PATH}>)(?:\s|$)",
                               re.M)
_CAPTION = re.compile(r"^[ \t]*/// caption[ \t]*$")


#: what a backslash escapes in Python-Markdown (its ``ESCAPED_CHARS``): the character is then text
_ESCAPABLE = frozenset("\\`*_{}[]()>#+-.!")


class _Marks:
    """What Python-Markdown's inline patterns read in a page's Markdown before they match a link or
    an image, found in one pass: the characters a backslash escapes (``escaped``: their offsets),
    each '[' with the ']' that closes it in the same paragraph, brackets nested in between
    (``closing``; escaped ones are text), and for each quote character the ')' whose last character
    before it but spaces is that quote (``title_ends``: the ends a link's title in it can have)."""

    def __init__(self, text: str):
        self.escaped: set[int] = set()
        self.closing: dict[int, int] = {}
        ends: dict[str, list[tuple[int, int]]] = {'"': [], "'": []}
        breaks = {m.start() for m in _PARAGRAPH_END.finditer(text)}
        opened: list[int] = []
        last = -1                                       # the last character but a space, as getLink keeps it
        for m in _MARK.finditer(text):
            i = m.start()
            c = m.group(0)
            if c == "\\" and i + 1 < len(text) and text[i + 1] in _ESCAPABLE and i not in self.escaped:
                self.escaped.add(i + 1)
            elif i in self.escaped:
                pass
            elif c == "\n" and i in breaks:
                opened.clear()
            elif c == "[":
                opened.append(i)
            elif c == "]" and opened:
                self.closing[opened.pop()] = i
            elif c == ")" and last >= 0 and text[last] in ends and _only_spaces(text, last + 1, i):
                ends[text[last]].append((i, last))
            if c != " ":
                last = m.end() - 1
        self.breaks = sorted(breaks)
        self.title_ends = {q: ([p for p, _ in e], [at for _, at in e]) for q, e in ends.items()}

    def title_end(self, quote: str, opening: int, limit: int) -> int | None:
        """The ')' that ends a title opened by ``quote`` at ``opening``, as Python-Markdown's getLink
        ends it: the first after it whose last character but spaces is another ``quote``, before
        ``limit`` (the paragraph's end); or None."""
        ps, ats = self.title_ends[quote]
        k = bisect.bisect_right(ps, opening)
        if k < len(ps) and ats[k] == opening:           # '"  )': the opening quote is no closing one
            k += 1
        return ps[k] if k < len(ps) and ps[k] < limit else None


#: the characters :class:`_Marks` reads; every other one is neither a space nor one of these
_MARK = re.compile(r"[\\\[\]()\n\"' ]|[^\\\[\]()\n\"' ]+")


def _only_spaces(text: str, start: int, end: int) -> bool:
    return text.count(" ", start, end) == end - start


def _image_end(text: str, close: int, quotes: Positions, marks: _Marks) -> int | None:
    """The end of an inline image whose alt text ends at ``close`` (its ']') when what follows is a
    generated figure's link, ``(path)`` or ``(<path>)``, with or without a title in "", '' or (); else
    None. The path is the whole run of path characters after the '(' (what follows it is no path
    character), so nothing is tried twice."""
    at = close + 1
    if at >= len(text) or text[at] != "(":
        return None
    at = _SPACES.match(text, at + 1).end()
    bracketed = at < len(text) and text[at] == "<"
    start = at + 1 if bracketed else at
    run = _PATH_RUN.match(text, start).end()
    if not _FIGURE_PATH_RE.fullmatch(text, start, run):
        return None
    if bracketed:
        if run >= len(text) or text[run] != ">":
            return None
        run += 1
    gap = _SPACES.match(text, run).end()
    if gap < len(text) and text[gap] == ")":
        return gap + 1
    if gap >= len(text) or text[gap] not in "\"'(" or (gap == run and text[gap] == "("):
        return None                                     # a quoted title may follow the path unspaced
    if text[gap] != "(" and not bracketed:    # a quoted title, as getLink reads it
        k = bisect.bisect_left(marks.breaks, gap)
        limit = marks.breaks[k] if k < len(marks.breaks) else len(text)
        end = marks.title_end(text[gap], gap, limit)
        if end is None and text.startswith("(", gap + 1) and not text[gap + 2:limit].strip("\n"):
            return gap + 2      # getLink's fallback for an unclosed title that starts '(' at the paragraph's end:
                                # its link is the paragraph less those two characters, the figure's path
        return None if end is None else end + 1
    ends = quotes.next(")" if text[gap] == "(" else text[gap], gap + 1)     # the title's closing mark
    if ends is None:
        return None
    after = _SPACES.match(text, ends + 1).end()
    return after + 1 if after < len(text) and text[after] == ")" else None


def _figure_images(text: str) -> list[tuple[int, int]]:
    """(start, end) of each image of a generated figure in ``text``, a page's Markdown, in order: inline
    (the path bare or in <>, with or without a title in "", '' or ()) with its alt over one paragraph's
    lines, or a raw <img> element whose src is a figure's path. Linear time: an alt text ends at its
    first ']' (or fails at a paragraph's end), so every '![' before that ']' ends the same way and is
    read once; an <img> tag's end is read once from each place (:class:`Tags`)."""
    found: list[tuple[int, int]] = []
    quotes = Positions(text, "\"')")
    marks = _Marks(text)
    tags = Tags(text)
    pos = image_from = tag_from = 0
    image = text.find("![")
    tag = _IMG_START.search(text)
    tag_at = tag.start() if tag else -1
    while True:                                         # each search goes on from where the last stopped
        if image != -1 and image < max(pos, image_from):
            image = text.find("![", max(pos, image_from))
        if tag_at != -1 and tag_at < max(pos, tag_from):
            tag = _IMG_START.search(text, max(pos, tag_from))
            tag_at = tag.start() if tag else -1
        if image == -1 and tag_at == -1:
            return found
        if image != -1 and (tag_at == -1 or image < tag_at):
            close = marks.closing.get(image + 1)
            if close is None or image in marks.escaped:   # no alt text ends in its paragraph, or '\![' is no image
                image_from = image + 2
                continue
            end = _image_end(text, close, quotes, marks)
            if end is None:                             # no image here; one inside its alt text may be
                image_from = image + 2
                continue
            found.append((image, end))
            pos = end
        else:
            end = tags.end(tag_at + len("<img"))
            if end is None:                             # never closed: the next <img> may be
                tag_from = tag_at + 1
                continue
            src = next((a for a in _ATTRIBUTE.finditer(text, tag_at + len("<img"), end - 1)
                        if a[1].lower() == "src"), None)
            value = html.unescape((src[2] or "").strip("\"'")) if src is not None else ""
            if _FIGURE_PATH_RE.fullmatch(value):
                found.append((tag_at, end))
                pos = end
            else:
                tag_from = tag_at + 1


def _reference_images(line: str, labels: set[str]) -> tuple[int, int] | None:
    """(start, end) of the first reference-style image on ``line`` (``![alt][label]``, ``![alt][]`` or
    ``![alt]``) whose label is one of ``labels`` (folded), or None; linear time, as
    :func:`_figure_images` reads alt texts."""
    pos, marks = 0, _Marks(line)
    while (start := line.find("![", pos)) != -1:
        close = marks.closing.get(start + 1)             # brackets nested in the alt text, escaped ones text
        if close is None or start in marks.escaped:
            pos = start + 2
            continue
        tail = _REFERENCE_TAIL.match(line, close + 1)
        if tail is not None:
            label = tail["label"] or line[start + 2:close]     # ![alt][] and ![alt] use the alt as the label
            if " ".join(label.split()).casefold() in labels:
                return start, tail.end()
        pos = start + 2
    return None


def _page_figures(lines: list[str]) -> tuple[set[int], dict[int, tuple[str, int, int]], str, list[int]]:
    """The generated figures a page's ``lines`` show outside code, fenced and inline: (the fenced
    lines, {first line: (image, column, last line)}, the text without its code, each line's offset in
    that text). Linear time in the text's length."""
    from . import markers

    fenced = {i for start, end in markers.fences(lines) for i in range(start, end + 1)}
    outside = markers.without_code_spans("\n".join("" if i in fenced else line for i, line in enumerate(lines)))
    shown = outside.split("\n")                     # the lines as they show: no code, fenced or inline
    figure_labels = {" ".join(m["label"].split()).casefold() for m in _FIGURE_REFERENCE.finditer(outside)}
    starts = [0]                                    # each shown line's offset in ``outside``
    for line in shown[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    figures: dict[int, tuple[str, int, int]] = {}   # first line: (image, column, last line)
    for start, end in _figure_images(outside):      # an image may span lines: found over the whole text
        i = bisect.bisect_right(starts, start) - 1
        figures.setdefault(i, (outside[start:end], start - starts[i], bisect.bisect_right(starts, end - 1) - 1))
    if figure_labels:
        for i, line in enumerate(shown):
            if i not in figures and (ref := _reference_images(line, figure_labels)):
                figures[i] = (line[ref[0]:ref[1]], ref[0], i)
    return fenced, figures, outside, starts


#: a pymdownx.blocks block's first line (``/// name``, ``/// name | title``) and its last (``///``),
#: the slashes in group 1: a block ends at the first end line of as many slashes as it opened with
_BLOCK_START = re.compile(r"[ \t]*(/{3,})[ \t]*[\w-]+[ \t]*(?:\|.*)?")
_BLOCK_END = re.compile(r"[ \t]*(/{3,})[ \t]*")


def _block_ends(lines: list[str], fenced: set[int]) -> dict[int, int]:
    """{first line: last line} of each pymdownx.blocks block of ``lines`` that is closed (outside the
    ``fenced`` lines), in one pass: an end line closes the innermost open block when their slashes
    are as many, and is text otherwise; a block never closed is left out."""
    ends, open_ = {}, []
    for i, line in enumerate(lines):
        if i in fenced or "///" not in line:
            continue
        if (m := _BLOCK_END.fullmatch(line)) is not None:
            if open_ and open_[-1][1] == len(m[1]):
                ends[open_.pop()[0]] = i
        elif (m := _BLOCK_START.fullmatch(line)) is not None:
            open_.append((i, len(m[1])))
    return ends


def caption_faults(markdown: str) -> list[tuple[int, str]]:
    """(line index, why) of each ``/// caption`` block under a generated figure of ``markdown`` that is
    never closed (pymdownx.blocks runs it to the page's end: every later heading and paragraph would be
    inside the ``<figcaption>``) or that holds nothing but blank lines (and options): the figure would
    show over an empty caption. Linear time in the text's length."""
    lines = markdown.split("\n")
    fenced, figures, _, _ = _page_figures(lines)
    if not figures:
        return []
    following, after = [len(lines)] * (len(lines) + 1), len(lines)   # the first line from i on that is not blank
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip():
            after = i
        following[i] = after
    ends = _block_ends(lines, fenced)
    faults = []
    for _, _, last in sorted(figures.values(), key=lambda found: found[2]):
        at = following[last + 1]
        if at >= len(lines) or not _CAPTION.match(lines[at]):
            continue                                # no caption: uncaptioned() says so
        end = ends.get(at)
        if end is None:
            faults.append((at, "this /// caption is never closed: it takes the rest of the page into the "
                               "figure's caption; end it with a line '///'"))
            continue
        indent = len(lines[at]) - len(lines[at].lstrip(" \t"))
        j = at + 1                                  # the block's options: lines indented four more, right under it
        while j < end and re.match(rf"[ \t]{{{indent + 4},}}\S", lines[j]):
            j += 1
        if following[j] >= end:
            faults.append((at, "this /// caption is empty; " + CAPTION_RULE))
    return faults


def uncaptioned(markdown: str) -> list[tuple[int, int, str]]:
    """(first line index, last line index, image) of each generated figure of ``markdown`` that the page shows (outside code:
    fenced and indented blocks, inline code spans; outside HTML comments) and that no ``/// caption``
    block follows on the next line that is not blank (the line index is the line the image starts
    on; an image may span lines, its caption follows the last). Linear time in the text's length."""
    from . import markers

    lines = markdown.split("\n")
    _, figures, outside, starts = _page_figures(lines)
    bare = {i: found for i, found in figures.items()
            if not _CAPTION.match(next((line for line in lines[found[2] + 1:] if line.strip()), ""))}
    # a figure in an indented code block or an HTML comment is not shown: the page is rendered to tell,
    # when it may be (a line indented four columns or more, quote markers aside; a '<!--' above it). A
    # line that starts with HTML (up to 3 spaces in) is an HTML block or raw inline HTML, never code
    comment = min((at for at in (outside.find(o) for o in markers.HIDING_OPENINGS) if at >= 0), default=-1)
    asked = {i: column for i, (_, column, _) in bare.items()
             if len(re.match(r"[ \t>]*", lines[i])[0].replace(">", "").expandtabs(4)) >= 4
             or 0 <= comment < starts[i] + column}
    code, hidden = markers.rendered_places(lines, asked, width=2)
    code = {i for i in code if not re.match(r" {0,3}<", lines[i])}
    return [(i, last, image) for i, (image, _, last) in sorted(bare.items()) if i not in code and i not in hidden]


#: what a figure needs, as errors say it
CAPTION_RULE = "a figure has a caption under it (/// caption, what to see in it, ///), the next line that is not blank"


def check_captions(markdown: str, page_uri: str, first_line: int = 1) -> None:
    """Raise ``ValueError`` naming the page and the line (``first_line``: the file's line of
    ``markdown``'s first) for the first figure of :func:`uncaptioned`. What a page's includes bring is
    checked once they are expanded (:mod:`site_build.brought`)."""
    for i, _, image in uncaptioned(markdown):
        raise ValueError(f"docs/{page_uri}:{first_line + i}: {image}: {CAPTION_RULE}")
    for i, why in caption_faults(markdown):
        raise ValueError(f"docs/{page_uri}:{first_line + i}: {why}")


def _source_lines(text: str) -> list[str]:
    """``text`` (read in text mode, its CRs already ``\\n``) as a notebook stores a cell's source: split at
    ``\\n`` only, each line but the last keeping it. A form feed, U+0085 or U+2028 inside a string stays
    inside its line (``str.splitlines``, which nbformat uses, would break the line there)."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _cell(kind: str, text: str, cell_id: str) -> dict:
    cell = {"cell_type": kind, "id": cell_id, "metadata": {}, "source": _source_lines(text.strip("\n"))}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def site_address() -> str:
    """``site_url`` of mkdocs.yml as MkDocs reads it: parsed with MkDocs' own YAML loader (so a key given
    twice takes its last value, ``!ENV`` and ``INHERIT`` are followed), ending with a slash; a
    ``ValueError`` naming mkdocs.yml when it is missing, not an http(s) address or the file is not
    YAML MkDocs can read."""
    import yaml
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.exceptions import ConfigurationError
    from mkdocs.utils.yaml import get_yaml_loader, yaml_load

    path = ROOT / "mkdocs.yml"
    with open(path, "rb") as fd:
        try:
            settings = yaml_load(fd, get_yaml_loader(config=MkDocsConfig(config_file_path=str(path))))
        except (ConfigurationError, yaml.YAMLError, ValueError, TypeError) as err:
            raise ValueError(f"{path}: MkDocs cannot read it ({err}); the drill notebooks install the wheel "
                             f"from the site's address, site_url") from None
    value = settings.get("site_url") if isinstance(settings, dict) else None
    if not isinstance(value, str) or not re.match(r"https?://[^\s\"'\\?#]+$", value):
        raise ValueError(f"{path}: site_url is {value!r:.80}; the drill notebooks install the wheel "
                         f"from the site's address: set site_url to it (https://..., with no query or fragment)")
    return value if value.endswith("/") else value + "/"


def install_cell() -> str:
    """The notebook's first code cell: install this site's wheel into the kernel's environment, unless
    that version is already there (as in a clone's venv, where the build runs the notebook)."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    version = pyproject_version(pyproject)
    wheel = json.dumps(f"{site_address()}netcl_lite-{version}-py3-none-any.whl")   # a Python string literal
    return f"""import subprocess
import sys
from importlib import metadata

# This site's wheel; put the site's address here if it is served elsewhere.
WHEEL = {wheel}
try:
    installed = metadata.version("netcl_lite")
except metadata.PackageNotFoundError:
    installed = None
if installed != "{version}":  # pip installs into this kernel's environment
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", WHEEL], check=True)
print("netcl_lite", metadata.version("netcl_lite"))
"""


def _merged_streams(outputs: list) -> list:
    """A cell's outputs with consecutive pieces of one stream joined: how many pieces the kernel sent
    depends on timing, so the same cell would otherwise show as one box or several from run to run."""
    merged = []
    for out in outputs:
        if merged and out.get("output_type") == "stream" and merged[-1].get("output_type") == "stream" \
                and merged[-1]["name"] == out["name"]:
            merged[-1]["text"] += out["text"]
        else:
            merged.append(out)
    return merged


#: seconds a drill cell's outputs may still be arriving after the kernel said the cell finished (a cell
#: that prints thousands of lines on a busy machine lags that much); past it the build fails, naming
#: the cell, instead of showing its output cut short
NOTEBOOK_IOPUB_WAIT = 120


#: what a drill notebook's output may carry: text, which the page escapes, and raster images
SAFE_OUTPUT_TYPES = ("text/plain", "image/png", "image/jpeg")
#: an image's metadata the page may take: its size, in pixels (nbconvert writes ``width=…`` unquoted
#: into the ``<img>``, so only digits may reach it), and the two flags its template reads as
#: conditions only, never writing their values
_IMAGE_METADATA = {"width": lambda v: str(v).isdigit() and str(v).isascii(),
                   "height": lambda v: str(v).isdigit() and str(v).isascii(),
                   "unconfined": lambda v: isinstance(v, bool), "needs_background": lambda v: v in ("light", "dark")}


def _kept_metadata(mime: str, value) -> dict:
    """What the page may take of an output's metadata for ``mime``: :data:`_IMAGE_METADATA`'s entries whose
    value passes its check, for an image; nothing for text."""
    if not mime.startswith("image/") or not isinstance(value, dict):
        return {}
    return {key: value[key] for key, ok in _IMAGE_METADATA.items()
            if key in value and not isinstance(value[key], (dict, list)) and ok(value[key])}


def _plain_outputs(outputs: list) -> list:
    """A cell's outputs with each display's representations cut to :data:`SAFE_OUTPUT_TYPES`; one that
    carries none of them keeps the source of its first representation as ``text/plain``. Their metadata
    keeps only an image's size in digits and its two flags (:data:`_IMAGE_METADATA`): nbconvert writes
    a size into the ``<img>`` unquoted, and reads a file name for its ``src`` from the metadata."""
    for out in outputs:
        data = out.get("data")
        if not data:
            continue
        kept = {mime: value for mime, value in data.items() if mime in SAFE_OUTPUT_TYPES}
        if not kept:
            mime, value = next(iter(data.items()))
            text = value if isinstance(value, str) else "".join(value) if isinstance(value, list) \
                else json.dumps(value, indent=1, ensure_ascii=False)
            kept = {"text/plain": text}
        out["data"] = kept
        metadata = {mime: _kept_metadata(mime, value) for mime, value in out.get("metadata", {}).items()
                    if mime in kept}
        out["metadata"] = {mime: value for mime, value in metadata.items() if value}
    return outputs


#: a drill step's first line: a ``#`` comment whose text, from a letter or digit on, is its heading
#: (its trailing blanks stripped by :func:`_step_heading`, not by the pattern: a lazy text followed by
#: optional blanks tries the blanks again from each place, quadratic in a line of many blanks)
_STEP_HEADING = re.compile(r"#+[ \t]+(?P<heading>\w.*)")
#: ASCII punctuation, each of which a backslash makes literal in Markdown (CommonMark's escapes)
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def _step_heading(first: str) -> str | None:
    """The heading a drill step's first line ``first`` gives (:data:`_STEP_HEADING`), without its
    trailing spaces and tabs, or None when that line is no heading."""
    m = _STEP_HEADING.fullmatch(first)
    return m["heading"].rstrip(" \t") if m else None


def as_markdown_text(text: str) -> str:
    """``text`` written as Markdown that renders as exactly that text: every ASCII punctuation character
    backslash-escaped, so none of it starts emphasis, a code span, a link, an entity or raw HTML.

    >>> as_markdown_text("the <b> tag, *stars* & [a](b)")
    'the \\\\<b\\\\> tag\\\\, \\\\*stars\\\\* \\\\& \\\\[a\\\\]\\\\(b\\\\)'
    """
    return _PUNCTUATION.sub(r"\\\1", text)


def drill_steps(week_dir: Path) -> list[Path]:
    """A week's drill steps, ``drill_<n>_<topic>.py``, in the order of ``n`` read as a number (step 10
    after step 9, not after step 1); a step without a number (in ASCII digits: ``²`` or ``١`` is none)
    after those with one."""
    def order(step: Path) -> tuple:
        n = step.name.split("_")[1]
        return (0, int(n), step.name) if n.isascii() and n.isdigit() else (1, 0, step.name)

    return sorted(week_dir.glob("drill_*.py"), key=order)


def drill_notebook(week_dir: Path) -> dict:
    """The notebook for one week's drill: a title cell, then a heading and a code cell per step
    (:func:`drill_steps`, in order)."""
    steps = drill_steps(week_dir)
    week = week_dir.name.replace("week", "Week ")
    title = (f"# {week} drill\n\nEach step runs on its own; run them top to "
             "bottom. The notebook runs in a Jupyter kernel (`ipykernel`, or JupyterLab, which brings it) "
             "of a Python environment; the first cell installs `netcl_lite` into that environment from "
             "this site's wheel when it is not there yet.")
    cells = [_cell("markdown", title, "title"), _cell("markdown", "## Install", "install-heading"),
             _cell("code", install_cell(), "install")]
    for n, step in enumerate(steps, 1):
        try:
            code = step.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"{_rel(step)} is not UTF-8 text (at byte {err.start})") from None
        first = code.split("\n", 1)[0]
        heading = _step_heading(first)
        if heading is None:
            raise ValueError(f"{_rel(step)}: its first line, {first!r}, is no heading: a drill step starts "
                             f"with a comment that names it ('# Step {n} — what it shows'), its heading in the "
                             f"notebook (not a shebang, a coding line or a bare '#')")
        heading = as_markdown_text(heading)            # the comment's text as written, never markup
        cells += [_cell("markdown", f"## {heading}", f"step-{n}-heading"), _cell("code", code, f"step-{n}")]
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _native_kernel_manager():
    """nbclient's kernel manager, but whose kernel ``python3`` is always ipykernel's own, of this
    interpreter: Jupyter looks a name up in the user's, ``JUPYTER_PATH``'s and the system's kernel
    folders first, where a ``python3`` spec that ``ipykernel install`` left from another environment
    would run the notebook under that environment's interpreter, packages and variables, which no key
    records."""
    from ipykernel.kernelspec import RESOURCES, get_kernel_dict
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager

    class NativeKernelManager(AsyncKernelManager):
        @property
        def kernel_spec(self):
            if self._kernel_spec is None:
                self._kernel_spec = KernelSpec(resource_dir=RESOURCES, **get_kernel_dict())
            return self._kernel_spec

    return NativeKernelManager


def execute_notebook(source: str) -> str:
    """The notebook ``source`` (JSON) run top to bottom in a fresh python3 kernel (ipykernel's, of this
    interpreter: :func:`_native_kernel_manager`) in a scratch folder,
    in the snippets' fixed Python environment (:func:`site_build.runner.reader_env`), as JSON; any
    error fails the build."""
    import nbformat
    from nbclient import NotebookClient

    class Bounded(NotebookClient):
        """A client that stops a cell once what it holds passes :data:`NOTEBOOK_OUTPUT_LIMIT` (its text,
        without the JSON around it: no more than the merged outputs checked below), instead of keeping
        all a cell prints, however much, until its timeout."""

        held: dict = {}
        over: ValueError | None = None

        def output(self, outs, msg, display_id, cell_index):
            out = super().output(outs, msg, display_id, cell_index)
            count, size = self.held.get(cell_index, (0, 0))
            if len(outs) < count:                               # cleared: count what is left
                count, size = 0, 0
            size += sum(len(o["text"].encode("utf-8")) if o.get("output_type") == "stream"
                        else len(json.dumps(o, ensure_ascii=False).encode("utf-8")) for o in outs[count:])
            self.held[cell_index] = (len(outs), size)
            if size > NOTEBOOK_OUTPUT_LIMIT and self.over is None:
                cell = self.nb.cells[cell_index]
                self.over = ValueError(f"the cell {cell.get('id', '?')} put {size:,} bytes of output into the notebook "
                                       f"(stopped there); a cell shows at most "
                                       f"NOTEBOOK_OUTPUT_LIMIT = {NOTEBOOK_OUTPUT_LIMIT:,}")
                process = getattr(getattr(self.km, "provisioner", None), "process", None)
                if process is not None:                         # the kernel: its messages would pile up
                    process.kill()
            return out

    node = nbformat.reads(source, as_version=4)
    env = runner.reader_env()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            # iopub_timeout: how long, after a cell's reply, its last outputs may take to arrive; nbclient's
            # default (4 s, then a logged warning and the outputs dropped) loses the end of a cell that
            # prints much on a busy machine: waited for far longer here, and an error past that
            client = Bounded(node, timeout=600, kernel_name="python3", allow_errors=False, record_timing=False,
                             iopub_timeout=NOTEBOOK_IOPUB_WAIT, raise_on_iopub_timeout=True,
                             resources={"metadata": {"path": tmp}},
                             kernel_manager_class=_native_kernel_manager())
            client.held, client.over = {}, None
            try:
                client.execute(env=env)
            except Exception:
                if client.over is not None:
                    raise client.over from None
                raise
            if client.over is not None:
                raise client.over
    finally:
        runner.release(env)                             # its MPLCONFIGDIR: a serve session runs many
    for cell in node.cells:
        cell.source = _source_lines(cell.source)       # nbformat.writes splits a str source at every line break
        if cell.cell_type == "code":
            cell.outputs = _plain_outputs(_merged_streams(cell.outputs))
            size = len(json.dumps(cell.outputs, ensure_ascii=False).encode("utf-8"))
            if size > NOTEBOOK_OUTPUT_LIMIT:
                raise ValueError(f"the cell {cell.get('id', '?')} put {size:,} bytes of output into the notebook; "
                                 f"a cell shows at most NOTEBOOK_OUTPUT_LIMIT = {NOTEBOOK_OUTPUT_LIMIT:,}")
    return nbformat.writes(node) + "\n"


def build_drills(shared: str | None = None) -> list[str]:
    """Assemble and execute each week's drill notebook (from the store when its key is); return the
    names of the notebooks that ran."""
    ran = []
    for week_dir in drill_weeks():
        name = f"{week_dir.name.replace('week', 'week-')}-drill.ipynb"

        def failed(err: Exception) -> RuntimeError:
            shown = ", ".join(pages_showing(f"snippets/{week_dir.name}/drill_")) or "no page"
            return RuntimeError(f"{shown}: the drill notebook docs/drills/{name}, made from "
                                f"{_rel(week_dir)}/drill_*.py, failed: {err}")

        try:
            source = json.dumps(drill_notebook(week_dir), indent=1, ensure_ascii=False) + "\n"
        except ValueError as err:
            raise failed(err) from None
        key = fingerprint.key(source, shared=shared)
        data = store.lookup("notebook", key)
        if data is None:
            try:
                data = execute_notebook(source).encode("utf-8")
            except Exception as err:
                raise failed(err) from err
            store.store("notebook", key, data)
            ran.append(name)
        write_if_changed(DOCS / "drills" / name, data)
    return ran


def inputs() -> list[Path]:
    """The files the figures and notebooks are made from besides the library: every file under
    ``snippets/`` and the benchmark reports with their results (what :func:`figure_reads` may name), and the files
    :func:`install_cell` reads."""
    bench = ROOT / "benchmarks"
    return (sorted(p for p in SNIPPETS.rglob("*") if p.is_file() and p.suffix != ".pyc") + sorted(bench.glob("*.py"))
            + sorted(p for p in (bench / "results").rglob("*") if p.is_file())
            + [ROOT / "pyproject.toml", ROOT / "mkdocs.yml"])


def build(shared: str) -> None:
    """Make every figure and drill notebook (from the store when its key is), logging what ran."""
    figures, drills = build_figures(shared), build_drills(shared)
    for kind, ran, total in (("figures", [str(f.relative_to(ROOT)) for f in figures], len(figure_scripts())),
                             ("drill notebooks", drills, len(drill_weeks()))):
        store.log.info(f"execution cache: {total - len(ran)} of {total} {kind} reused"
                       + (f"; ran {', '.join(ran)}" if ran else ""))


def check_rendered_figures(content: str, page: str, source: str = "", first_line: int = 1) -> None:
    """Raise ``ValueError`` naming ``page`` (``docs/<page>``) and the first line of ``source`` (the page as
    written) that names the figure, for a generated figure the rendered page shows outside a
    ``<figure>`` that has a ``<figcaption>``: what :func:`uncaptioned` reads before rendering, checked on
    what the reader gets. A figure shows wherever a browser shows what a URL names (:func:`_shown`): an
    ``<img>`` (or ``<image>``, which HTML makes one)'s src or srcset, a ``<picture>``'s ``<source srcset>``,
    an ``<object data>``, an ``<embed>``, a frame, an image button, a video's poster, an SVG ``<image>``,
    ``<feImage>`` or ``<use>``. One pass, reading the page as a browser reads it
    (:func:`~site_build.glossary.elements`): an image in a comment, CDATA or a raw text element's text (a
    textarea's, a script's) is not shown. A figure is an HTML ``<figure>`` while it is open as HTML's
    tree builder nests elements (:class:`~site_build.glossary.OpenElements`: an ancestor's end tag, a
    ``</div>`` or ``</math>``, closes it too; in SVG or MathML a ``<figure>`` is no HTML one), and its
    caption an HTML ``<figcaption>`` in it that is rendered: none in SVG or MathML, none in a
    ``<template>``."""
    from .glossary import OpenElements
    from .tags import tokens

    captioned, shown = [], []
    figure_at: dict[int, int] = {}      # the figure (its index in ``captioned``) open at each place of the stack
    open_ = OpenElements()
    for start, end, closing, name, self_closing in tokens(content, lambda: open_.opened_foreign,
                                                          lambda: open_.foreign):
        foreign = open_.foreign
        if not name:
            continue
        opened = open_.tag(closing, name, self_closing, content[start:end])
        if closing:
            continue
        foreign = open_.opened_foreign
        places = open_.html_places.get("figure")
        if name == "figure" and opened and not foreign:
            figure_at[places[-1]] = len(captioned)
            captioned.append(False)
        figure = figure_at[places[-1]] if places else None          # the innermost open figure
        if name in _SHOWN_BY or name in _SHOWN_BY_SVG or name == "input":
            shown += [(shown_name, figure) for shown_name in _shown(name, foreign, content[start:end])]
        elif name == "figcaption" and not foreign and figure is not None and not open_.inside(("template",)):
            captioned[figure] = True
    for name, figure in shown:
        if figure is None or not captioned[figure]:
            at = source.find(f"figures/{name}.svg")
            line = f":{first_line + source.count(chr(10), 0, at)}" if at >= 0 else ""
            raise ValueError(f"{page}{line}: figures/{name}.svg shows without a caption in the rendered page; "
                             f"{CAPTION_RULE}")


def with_alt(content: str, page: str = "(no page)", source: str = "", first_line: int = 1) -> str:
    """A page's HTML with each generated figure's ``alt`` set to the description its script gave
    (``page``, ``docs/<page>``, and the line of ``source``, the page as written from the file's line
    ``first_line``, name a figure that has none or is not drawn). The page is read as a browser reads it
    (:func:`~site_build.glossary.elements`): an ``<img>`` written in a comment or in a raw text element's text
    is no image, and a quote in it hides no later one. One pass."""
    out, pos = [], 0
    for start, end, closing, name, _, foreign in elements(content):
        if name in ("img", "image") and not closing and not foreign:
            out += [content[pos:start], _with_alt(content[start:end], page, source, first_line)]
            pos = end
    out.append(content[pos:])
    return "".join(out)
