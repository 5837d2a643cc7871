"""Render the LaTeX that pymdownx.arithmatex marks to MathML at build time.

The site then needs no MathJax/KaTeX script and no request to another host;
browsers draw MathML natively. A formula the converter rejects fails the build.

The converter (``math_core``) recurses once per level of nesting and overflows its stack a few
thousand levels down (on an 8 MiB stack: about 3,100 nested groups, 7,600 commands applied to
commands): the build's process dies of SIGSEGV, naming nothing. So before a formula reaches it,
:func:`nesting` bounds its depth by :data:`MATH_DEPTH_LIMIT` and its length by
:data:`MATH_LENGTH_LIMIT` (a long flat formula overflows too, past a few hundred kilobytes), and one
over either fails the build naming the page and, where the page's file holds the formula, its line.

It also pairs each opening delimiter with a closing one by trying, for each that stays open, both
readings of it: its time doubles with each unclosed opening delimiter (``(`` twenty times: a fifth of a
second; twenty-five: seconds; thirty: minutes). :func:`unclosed` counts them and a formula with more than
:data:`MATH_UNCLOSED_LIMIT` fails the same way. A formula that holds a control character (which HTML
does not allow, and which the converter copies into the page) fails too.

Whatever these bounds miss, the converter runs in a process of its own (:class:`_Converter`): a
formula that keeps it busy past :data:`MATH_SECONDS_LIMIT`, or that kills it, fails the build
naming the page and the line, and the next formula gets a fresh process.
"""

from __future__ import annotations

import html
import re
import threading

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

#: the most opening delimiters a formula may leave unclosed (:func:`unclosed`); the converter's time
#: doubles with each (at the longest formula allowed, 6 take under a tenth of a second on the build's
#: CPU, 10 about a second), and the site's own formulas leave none open
MATH_UNCLOSED_LIMIT = 6

#: the longest the converter may take on one formula (the site's take a few milliseconds each)
MATH_SECONDS_LIMIT = 20
_CONVERTER = None              # the _Converter, made below once the class is defined
#: what pymdownx.arithmatex puts around an inline formula and a display formula (:func:`_formulas`)
_INLINE = ('<span class="arithmatex">\\(', '\\)</span>')
_BLOCK = ('<div class="arithmatex">\\[', '\\]</div>')
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


#: the opening delimiters math-core 0.9.0 tries to pair (found by timing each of its commands and each
#: character repeated: these, and only these, double its time with each more), and their closing ones,
#: each of which closes any of them
_OPENING = frozenset("( [ ⌈ ⌊ ⌜ ⌞ ⎰ ❲ ⟅ ⟦ ⟨ ⟪ ⟬ ⟮ ⦃ ⦅ ⦇ ⦉ ⦋ ⦍ ⦏ ⦑ ⦓ ⦕ ⦗ ⧘ ⧚ ⧼ \\{".split()
                     + [f"\\{name}" for name in "lAngle lBrace lVert lang langle lbrace lbrack lceil lfloor lgroup "
                        "llangle llbracket llcorner llparenthesis lmoustache lparen lvert ulcorner".split()])
_CLOSING = frozenset(") ] ⌉ ⌋ ⌝ ⌟ ⎱ ❳ ⟆ ⟧ ⟩ ⟫ ⟭ ⟯ ⦄ ⦆ ⦈ ⦊ ⦌ ⦎ ⦐ ⦒ ⦔ ⦖ ⦘ ⧙ ⧛ ⧽ \\}".split()
                     + [f"\\{name}" for name in "rAngle rBrace rVert rang rangle rbrace rbrack rceil rfloor rgroup "
                        "rrangle rrbracket lrcorner rrparenthesis rmoustache rparen rvert urcorner".split()])
#: what opens and closes a sequence of its own: a group, \left … \right, an environment
_SEQUENCE_OPENS = frozenset({"{", "\\left", "\\begin"})
_SEQUENCE_CLOSES = frozenset({"}", "\\right", "\\end"})
#: what ends a matrix's cell or row
_CELL_ENDS = frozenset({"&", "\\\\"})
#: a control character: HTML allows none but tab, newline and carriage return
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
#: a bidirectional formatting character (the marks, embeddings, overrides and isolates): one the
#: converter copies into the page's MathML, left open, reorders the text after the formula, outside it
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def unclosed(source: str) -> int:
    """How many opening delimiters (:data:`_OPENING`) of ``source`` (a formula's LaTeX) no closing one
    (:data:`_CLOSING`, of any kind) follows in the same sequence, counted from above: each group, each
    ``\\left`` … ``\\right``, each environment and each matrix cell is a sequence, whose openings left
    open all count; the delimiter ``\\left``, ``\\middle`` or ``\\right`` takes is none of them.

    A closing delimiter that is an argument closes nothing, as the converter reads it (``x^)``,
    ``\\operatorname)``, ``\\frac a)``): the token or group after a script sign, and the two after a
    control word that is no delimiter. Where that reading is not the converter's, the count errs high:
    taking two arguments for every command (most take none or one), ``(\\alpha)`` counts one open;
    an opening delimiter counts as one, argument or not."""
    open_in = [0]                       # per sequence, from the outermost: its openings not closed yet
    pending = [0]                       # per sequence: how many of its next tokens or groups are arguments
    total = 0
    takes_delimiter = False
    for m in _TOKEN.finditer(source):
        token = m.group(0)
        if token.isspace():
            continue
        if takes_delimiter:
            takes_delimiter = False
            continue
        argument = pending[-1] > 0
        if argument:
            pending[-1] -= 1
        if token in ("\\left", "\\right", "\\middle"):
            takes_delimiter = True
        elif token in ("^", "_"):
            pending[-1] = max(pending[-1], 1)
        elif token[0] == "\\" and token[1:].isalpha() and token not in _OPENING and token not in _CLOSING:
            pending[-1] = 2
        if token in _SEQUENCE_OPENS:
            open_in.append(0)
            pending.append(0)
        elif token in _SEQUENCE_CLOSES:
            total += open_in.pop() if len(open_in) > 1 else 0
            if len(pending) > 1:
                pending.pop()
        elif token in _CELL_ENDS:
            total, open_in[-1], pending[-1] = total + open_in[-1], 0, 0
        elif token in _OPENING:         # an argument too: the count errs high for those that take one
            open_in[-1] += 1
        elif token in _CLOSING and open_in[-1] and not argument:    # an argument closes nothing
            open_in[-1] -= 1
    return total + sum(open_in)


#: what opens and closes a formula in a page's text, as arithmatex reads it (an environment is its own)
_DELIMITER_OPENS, _DELIMITER_CLOSES = ("\\(", "\\[", "$"), ("\\)", "\\]", "$")


def loose_line_break(source: str) -> bool:
    """Whether ``source`` (a formula's LaTeX) holds a line break ``\\\\`` outside every group and
    environment, where the converter drops it ("x \\\\ y" draws "xy"); inside an environment
    (``aligned``, ``gathered``, a matrix) it breaks the line, and inside a group it is left to the
    command that takes the group."""
    depth = 0
    for m in _TOKEN.finditer(source):
        token = m.group(0)
        if token in ("{", "\\begin"):
            depth += 1
        elif token in ("}", "\\end"):
            depth -= 1
        elif token == "\\\\" and depth <= 0:
            return True
    return False


def _line_of(source: str, page: str) -> str:
    """``:<line>`` of the page's file where the formula ``source`` stands, or "" when the file holds none
    of it. Its text is looked for as the page's HTML gave it, then with HTML's characters as references
    (``&lt;`` written in the page), then its first line alone (a formula that runs on in a block quote,
    whose lines start ``>``); of the places found outside code and comments, one that is the whole
    formula (its delimiters around it) is taken first, so that the same text inside an earlier formula
    (``\\frac{`` in ``\\(\\frac{1}{2}\\)``) is not named."""
    try:
        text = (DOCS / page).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return ""
    import bisect

    from .citations import prose_spans

    spans = None
    first_line = source.split("\n", 1)[0].rstrip()
    for needle, to_line_end in ((source[:200], False), (html.escape(source, quote=False)[:200], False),
                                (first_line[:200], True)):
        first = at = text.find(needle) if needle else -1
        if at < 0:
            continue
        if spans is None:
            spans = prose_spans(text, math=False, tags=False)    # not in code or a comment: where math is read
            starts = [start for start, _ in spans]
        prose = None
        while at >= 0:
            i = bisect.bisect_right(starts, at) - 1
            if i >= 0 and at < spans[i][1]:
                prose = at if prose is None else prose
                before = text[max(0, at - 200):at].rstrip(" \t\n")
                after = text[at + len(needle):at + len(needle) + 200]
                opened = needle.startswith("\\begin") or before.endswith(_DELIMITER_OPENS)
                closed = (after.lstrip(" \t").startswith(("\n", "\r")) or not after.strip(" \t")) if to_line_end \
                    else (needle.rstrip().endswith("}") and needle.startswith("\\begin")) \
                    or after.lstrip(" \t\n").startswith(_DELIMITER_CLOSES)
                if opened and closed:
                    prose = at
                    break
            at = text.find(needle, at + 1)
        at = first if prose is None else prose
        return f":{text.count(chr(10), 0, at) + 1}"
    return ""


#: what numbers equations or refers to their numbers: an environment that numbers its lines unless
#: starred, and \label, \ref, \eqref (numbers and references need one state across a page's formulas)
_NUMBERED = re.compile(r"\\begin\s*\{(?:equation|align|alignat|gather|multline|flalign|eqnarray)\}"
                       r"|\\(?:label|eqref|ref|nonumber|notag)(?![A-Za-z])")


def _checked(latex: str, page_uri: str) -> str:
    """The formula ``latex`` (as the page's HTML holds it) as the converter is given it, once the
    bounds above hold; else ``ValueError`` naming the page and the line."""
    source = html.unescape(latex).strip()
    page = f"docs/{page_uri}"
    bound = ""
    if len(source) > MATH_LENGTH_LIMIT:
        bound = f"holds {len(source):,} characters, over MATH_LENGTH_LIMIT = {MATH_LENGTH_LIMIT:,}"
    elif control := _CONTROL.search(source):
        raise ValueError(f"{page}{_line_of(source, page_uri)}: the formula {_shown(source)} holds the control "
                         f"character U+{ord(control[0]):04X}, which HTML does not allow; remove it")
    elif bidi := BIDI.search(source):
        raise ValueError(f"{page}{_line_of(source, page_uri)}: the formula {_shown(source)} holds the "
                         f"bidirectional formatting character U+{ord(bidi[0]):04X}, which would reorder the "
                         f"text after the formula; remove it")
    elif (depth := nesting(source)) > MATH_DEPTH_LIMIT:
        bound = (f"nests {depth:,} levels deep (groups, \\left … \\right, \\begin … \\end, commands applied to "
                 f"commands), over MATH_DEPTH_LIMIT = {MATH_DEPTH_LIMIT}")
    elif numbered := _NUMBERED.search(source):
        raise ValueError(f"{page}{_line_of(source, page_uri)}: the formula {_shown(source)} uses {numbered[0]!r}: "
                         f"the converter is given each formula alone, so every numbered equation would show (1) and "
                         f"a reference (??); use the starred environment (align*, equation*) and \\tag{{...}} "
                         f"for a number you write, and refer to it in the text")
    elif loose_line_break(source):
        raise ValueError(f"{page}{_line_of(source, page_uri)}: the formula {_shown(source)} breaks its line with "
                         f"\\\\ outside any environment, where the MathML converter drops the break (\"x \\\\ y\" "
                         f"shows \"xy\"); put the lines in an environment such as \\begin{{aligned}} or "
                         f"\\begin{{gathered}}, or write two formulas")
    elif (left_open := unclosed(source)) > MATH_UNCLOSED_LIMIT:
        raise ValueError(f"{page}{_line_of(source, page_uri)}: the formula {_shown(source)} leaves {left_open} "
                         f"opening delimiters unclosed, over MATH_UNCLOSED_LIMIT = {MATH_UNCLOSED_LIMIT}: the MathML "
                         f"converter's time doubles with each; close them")
    if bound:
        raise ValueError(f"{page}{_line_of(source, page_uri)}: the formula {_shown(source)} {bound}, the most the "
                         f"MathML converter is given (deeper or longer, it overflows its stack and the build's "
                         f"process dies); split it")
    return source


def _converted(formulas: list[tuple[str, bool]], page_uri: str) -> list[str]:
    """The MathML of each checked formula (source, display), converted in the converter's process,
    in order; the first that fails raises ``ValueError`` naming the page and the line."""
    if not formulas:
        return []
    page = f"docs/{page_uri}"
    out = []
    for (source, _), (kind, value) in zip(formulas, _CONVERTER.convert_many(formulas)):
        where = f"{page}{_line_of(source, page_uri)}"
        if kind == "ok":
            out.append(value)
        elif kind == "error":
            raise ValueError(f"{where}: cannot render math {source!r}: {value}")
        elif kind == "stalled":
            raise ValueError(f"{where}: the formula {_shown(source)} took the MathML converter more than "
                             f"MATH_SECONDS_LIMIT = {MATH_SECONDS_LIMIT} s (stopped); simplify or split it")
        else:
            raise ValueError(f"{where}: the MathML converter's process died converting the formula "
                             f"{_shown(source)} ({value}); simplify or split it")
    return out


def _serve(conn) -> None:
    """The converter's own process: a list of (formula, display) in, then one answer per formula,
    as soon as it is converted: ("ok", MathML) or ("error", the converter's message)."""
    converter = math_core.LatexToMathML()
    while True:
        try:
            formulas = conn.recv()
        except EOFError:                    # the build ended
            return
        for source, display in formulas:
            try:
                conn.send(("ok", converter.convert_with_local_state(source, displaystyle=display)))
            except math_core.LatexError as err:
                conn.send(("error", _reason(err)))


class _Converter:
    """The converter, run in a process of its own (started on first use, again after it is stopped):
    a formula that keeps it busy past :data:`MATH_SECONDS_LIMIT` stops it, and one that kills it
    (a stack overflow) kills it alone; either fails the build naming the page, where in the build's
    own process it would hang the build or end it with SIGSEGV, naming nothing. A page's formulas
    go to it at once, their answers come back one by one."""

    def __init__(self) -> None:
        self.process = self.conn = None
        self.lock = threading.Lock()

    def convert_many(self, formulas: list[tuple[str, bool]]) -> list[tuple[str, str]]:
        """(kind, value) for each (source, display) in order, up to the first that is not "ok":
        "ok" and its MathML, "error" and the converter's message, "stalled" (past the limit: the
        process is stopped) or "died" and how."""
        if not formulas:
            return []
        answers: list[tuple[str, str]] = []
        with self.lock:
            if self.process is None or not self.process.is_alive():
                self._start()
            self.conn.send(formulas)
            for _ in formulas:
                if not self.conn.poll(MATH_SECONDS_LIMIT):
                    self._stop()
                    return [*answers, ("stalled", "")]
                try:
                    answers.append(self.conn.recv())
                except (EOFError, OSError):
                    self.process.join(5)
                    code = self.process.exitcode
                    self._stop()
                    return [*answers, ("died", f"exit status {code}" if code is not None else "no answer")]
        return answers

    def _start(self) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")          # no copy of the build's threads (PoCL's)
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), name="mathml-converter", daemon=True)
        self.process.start()
        child.close()

    def _stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join()
        if self.conn is not None:
            self.conn.close()
        self.process = self.conn = None


def _shown(source: str) -> str:
    """A formula's start as an error message shows it: escaped where it holds a control character."""
    return shown_path(source[:60] + ("…" if len(source) > 60 else ""))


#: the colours the converter puts in its messages
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _reason(err: Exception) -> str:
    """The converter's message without its colours and its drawing of the formula (which echoes the
    formula's characters raw, ESC included): its first line, escaped where it holds a control character."""
    lines = [line.strip() for line in _SGR.sub("", str(err)).split("\n") if line.strip()]
    return shown_path(lines[0].removeprefix("Error: ") if lines else "rejected")


def _formulas(content: str, delimiters: tuple[str, str]) -> list[tuple[int, int, str]]:
    """Each formula ``content`` holds between ``delimiters`` (opening, closing), in order, as (where its
    opening starts, where its closing ends, its LaTeX): from each opening to the first closing after it.
    Found with ``str.find``: a page's raw HTML may hold openings that no closing follows, and a pattern
    that read from each of them to the page's end took quadratic time; once an opening has no closing
    after it, none later has, and the search stops."""
    opening, closing = delimiters
    found, pos = [], 0
    while (start := content.find(opening, pos)) >= 0:
        end = content.find(closing, start + len(opening))
        if end < 0:
            break
        pos = end + len(closing)
        found.append((start, pos, content[start + len(opening):end]))
    return found


def render(content: str, page_uri: str) -> str:
    """A page's HTML with its formulas as MathML. ``page_uri``: the page's path in ``docs/``; an error
    names the page as every build error does, ``docs/<page_uri>``, and its line."""
    for delimiters, display in ((_BLOCK, True), (_INLINE, False)):
        found = _formulas(content, delimiters)
        mathml = _converted([(_checked(latex, page_uri), display) for _, _, latex in found], page_uri)
        wrap = '<div class="math-display">{}</div>' if display else "{}"
        pieces, pos = [], 0
        for (start, end, _), shown in zip(found, mathml):
            pieces += [content[pos:start], wrap.format(shown)]
            pos = end
        content = "".join(pieces) + content[pos:]
    return content


#: a heading line whose attribute list (``{ … }`` at its end, attr_list's) holds a formula's delimiter
_MATH_IN_ATTRIBUTES = re.compile(r"^ {0,3}#{1,6}[ \t][^\n]*?\{[^{}\n]*(?:\\\(|\\\[|\$)[^{}\n]*\}[ \t#]*$", re.M)


def check_attribute_lists(markdown: str, page_uri: str, first_line: int = 1) -> None:
    """Refuse, naming the page and the line, a heading whose attribute list holds a formula
    (``## Heading { data-toc-label="Short \\(x\\)" }``): arithmatex makes the formula a span before
    attr_list reads the braces, so the heading and the table of contents show the list as text."""
    if "{" not in markdown or "#" not in markdown:
        return
    from .citations import _code_blocks

    code = None
    for m in _MATH_IN_ATTRIBUTES.finditer(markdown):
        code = _code_blocks(markdown) if code is None else code        # a comment line in code is code
        if any(start <= m.start() < end for start, end in code):
            continue
        line = first_line + markdown.count("\n", 0, m.start())
        raise ValueError(f"docs/{page_uri}:{line}: a heading's attribute list holds a formula ({m.group(0).strip()[:120]!r}): "
                         f"the math is rendered before the list is read, so the page shows the list as text; "
                         f"write the label without math (data-toc-label=\"Short x\")")


#: a heading's start tag with its id (Markdown's toc extension gives every heading one)
_HEADING_OPEN = re.compile(r'<h([1-6])\b[^<>]*?\bid="([^"<>]*)"[^<>]*>')


def heading_formulas(content: str) -> dict[str, list[str]]:
    """The inline formulas (arithmatex's, as the page's HTML holds them before :func:`render`) in each
    heading of ``content``, by the heading's id: what the table of contents and the page's title
    show of that heading as ``\\(…\\)``. A heading's code or escaped text is not among them. Linear:
    an end tag looked for and not found is not looked for again."""
    found: dict[str, list[str]] = {}
    missing: dict[str, int] = {}
    for m in _HEADING_OPEN.finditer(content):
        close = f"</h{m[1]}>"
        if missing.get(close, len(content) + 1) <= m.end():
            continue
        end = content.find(close, m.end())
        if end < 0:
            missing[close] = m.end()
            continue
        inner = content[m.end():end]
        if _INLINE[0] in inner:
            found[m[2]] = [latex for _, _, latex in _formulas(inner, _INLINE)]
    return found


def render_toc(toc, formulas: dict[str, list[str]], page_uri: str) -> None:
    """Give the formulas of ``toc``'s titles (a page's table of contents, which the theme shows beside
    the page) their MathML, as :func:`render` gives the headings themselves: else the reader sees a
    heading's LaTeX there, ``The \\(O(n^2)\\) cost``. ``formulas``: :func:`heading_formulas` of the
    page, so that only what the heading shows as math becomes MathML (its code stays code)."""
    items, stack = [], list(toc or ())
    while stack:
        item = stack.pop()
        items.append(item)
        stack.extend(getattr(item, "children", ()))
    todo = [(item, latex) for item in items for latex in formulas.get(getattr(item, "id", None), ())
            if f"\\({latex}\\)" in item.title]
    if not todo:
        return
    mathml = _converted([(_checked(latex, page_uri), False) for _, latex in todo], page_uri)
    for (item, latex), shown in zip(todo, mathml):
        item.title = item.title.replace(f"\\({latex}\\)", shown, 1)


def plain_title(title: str | None, formulas: list[str]) -> str | None:
    """A page's title (its first heading's text, for the browser's tab, the navigation and the header,
    which show text, not MathML) with each of ``formulas`` (the heading's) shown as its LaTeX without
    the ``\\( \\)`` around it. The title is HTML (MkDocs keeps the heading's character references,
    and the theme inserts it as it is), so the LaTeX stays escaped as the heading holds it: unescaped,
    ``\\(a<b\\)`` would put a tag into every page's navigation."""
    if not title:
        return title
    for latex in formulas:
        title = title.replace(f"\\({latex}\\)", latex, 1)
    return title


_CONVERTER = _Converter()


# -- math signs in inline raw HTML ------------------------------------------------------------------
#
# pymdownx.arithmatex reads a paragraph's text before Python-Markdown stashes its inline raw HTML
# (its pattern runs at priority 189.9, the raw HTML one at 90): ``$…$`` inside a tag's attribute, a
# comment, a raw ``<code>``, ``<kbd>``, ``<textarea>``, ``<script>``, ``<svg>`` or ``<math>`` became a
# formula there, and then MathML, whose own quotes (``style="…"``) ended the attribute or the script's
# string; a formula that started in prose and ended inside a tag or a comment (``<span title="a $b">c$``,
# ``<!-- costs $5 --> and b$``) swallowed the tag's or the comment's end, so the tag or the comment showed
# as text. :class:`RawHtmlMath` leaves such math as written, as the browser shows the rest of that text.

#: arithmatex's inline pattern, as the Markdown extension registers it
_ARITHMATEX_INLINE = "arithmatex-inline"
#: the priority of the pass that reads each text's raw HTML just before arithmatex's (189.9) and after
#: the code spans (190), whose text arithmatex does not read either
_RAW_HTML_PRIORITY = 189.95
#: where raw HTML starts in a text, as :class:`_RawContexts` takes it: a comment, a CDATA section, a
#: doctype, a processing instruction (``<?xml``), or a tag whose name a blank, ``/`` or ``>`` ends. A
#: browser opens a tag at any ``<`` before a letter, but in a formula's text ``<`` before a letter is
#: "less than" (``t_{<i}``, ``a<b``): a name that runs into another sign (``<i}``, ``<b$``) names no
#: element a page writes, so it is read as math, as arithmatex reads it
_RAW_HTML_START = re.compile(r"<(?:!--|!\[CDATA\[|!doctype|\?[a-z]|/?[a-z][\w:-]*(?=[\s/>]))", re.I)
#: a ``<`` in a text: one that starts no raw HTML (:data:`_RAW_HTML_START`) is hidden from the tokenizer
#: (Python-Markdown does not escape ``<``: ``\<span>`` is a tag after a backslash)
_LESS_THAN = re.compile("<")
#: the elements whose text is no prose for math besides code (:data:`site_build.citations._CODE_ELEMENTS`):
#: SVG and MathML (a formula's MathML inside either is broken markup), and HTML's other raw text elements,
#: whose text a browser shows as text or not at all (``<noscript>``'s too: raw text where scripts run, as
#: for every reader of the site)
_NO_MATH_ELEMENTS = ("svg", "math", "title", "iframe", "noembed", "noframes", "noscript")


class _RawContexts:
    """Where a text that Markdown reads inline (a paragraph's, a cell's) holds inline raw HTML that is
    not prose: a tag (its attributes, ``href`` included), a comment, a CDATA section, and the text of a
    code element or of one of :data:`_NO_MATH_ELEMENTS`, with the tags around it, read as the citations
    pass reads a page's HTML (:func:`site_build.tags.tokens`, :class:`site_build.glossary.OpenElements`).
    Each text is read once as written (not with its formulas blanked, which hid a tag that a formula
    crosses), where raw HTML starts as :data:`_RAW_HTML_START` says, in linear time; a formula that
    starts or ends in any of these places is left as written, and so is one that holds a tag whose
    element opens or closes outside it (``<b>$a</b> <i>b$</i>``: as MathML, the ``</b>`` and the ``<i>``
    would be operators, the bold never closed); one that holds whole elements, or void ones
    (``\\(x <img src=x> y\\)``), is the formula's text, as before.
    Arithmatex then replaces its formulas from left to right by placeholders, and the places after each
    move by the change in length, which the next text arithmatex is given shows."""

    def __init__(self) -> None:
        self.starts: list[int] = []       # the raw places, apart and in order: their starts and ends
        self.ends: list[int] = []
        self.shift = 0                    # how far the places after ``moved_from`` have moved
        self.moved_from = 0
        self.length = 0                   # the text's length as arithmatex last had it
        self.pending: tuple[int, int] | None = None   # the formula replaced last: (start, end)
        self.none_after: tuple[str, int] | None = None  # a text and a place after which no formula is left
        self.tag_starts: list[int] = []   # the tags read, in order: their starts, ends, and names
        self.tag_ends: list[int] = []     # ("/name" for an end tag; void elements are left out)
        self.tag_names: list[str] = []
        self.outcomes: tuple[str, dict] | None = None   # a text, and the formula each search in it came to

    def read(self, data: str) -> None:
        from .citations import _CODE_ELEMENTS
        from .glossary import OpenElements
        from .tags import tokens

        self.starts, self.ends, self.shift, self.moved_from = [], [], 0, 0
        self.length, self.pending, self.none_after = len(data), None, None
        self.tag_starts, self.tag_ends, self.tag_names, self.outcomes = [], [], [], None
        if "<" not in data:
            return

        def less_than(m: re.Match) -> str:
            return "<" if _RAW_HTML_START.match(data, m.start()) else "\x00"

        text = _LESS_THAN.sub(less_than, data)      # as long as data: its places are data's
        open_, at, no_math = OpenElements(), 0, (*_CODE_ELEMENTS, *_NO_MATH_ELEMENTS)

        def add(start: int, end: int) -> None:
            if start >= end:
                return
            if self.ends and self.ends[-1] >= start:
                self.ends[-1] = max(self.ends[-1], end)
            else:
                self.starts.append(start)
                self.ends.append(end)

        for start, end, closing, name, self_closing in tokens(text, lambda: open_.opened_foreign, lambda: open_.foreign):
            if open_.inside(no_math):
                add(at, start)
            add(start, end)               # the whole tag or comment, its '<' and '>' included
            at = end
            # an end tag, or a start tag that opens its element (as OpenElements.tag takes it)
            if name and open_.tag(closing, name, self_closing, text[start:end]):
                self.tag_starts.append(start)
                self.tag_ends.append(end)
                self.tag_names.append(closing + name)
        if open_.inside(no_math):
            add(at, len(text))

    def _known(self, data: str) -> bool:
        """Whether the places read are known in ``data`` (the text as read, or as arithmatex has changed
        it since): the shift of the placeholder of the formula replaced last is taken here."""
        if self.pending is not None:      # the placeholder of the formula replaced last: its length
            start, end = self.pending
            placeholder = len(data) - self.length + (end - start)
            self.shift += placeholder - (end - start)
            self.moved_from, self.length, self.pending = start + placeholder, len(data), None
        elif len(data) != self.length:    # a text this pass did not read: nothing known of it
            return False
        return True

    def raw_end(self, data: str, start: int, end: int) -> int | None:
        """None when ``data[start:end]`` (a formula arithmatex found) neither starts nor ends in a raw
        place and holds no tag whose element opens or closes outside it (one it holds whole,
        ``\\(x <img src=x> y\\)``, is the formula's text, as before); else where arithmatex's next formula
        may start, in ``data``: past the raw places it starts or ends in, and at its closing sign at the
        earliest, so that no text is searched twice."""
        if not self._known(data) or not self.starts:
            return None
        import bisect

        after = None
        for at in (start, end - 1):
            if at < self.moved_from:      # before: a formula replaced, never raw
                continue
            i = bisect.bisect_right(self.starts, at - self.shift) - 1
            if i >= 0 and at - self.shift < self.ends[i]:
                after = max(after or 0, self.ends[i] + self.shift)
        if after is None and start >= self.moved_from and not self._balanced(start - self.shift, end - self.shift):
            after = end - 1
        return None if after is None else max(after, end - 1)

    def _balanced(self, start: int, end: int) -> bool:
        """Whether each tag between ``start`` and ``end`` (places as read) closes or opens an element
        that the same stretch opens or closes: an end tag closes the element the last start tag still
        open there opened."""
        import bisect

        open_: list[str] = []
        for i in range(bisect.bisect_left(self.tag_starts, start), len(self.tag_starts)):
            if self.tag_ends[i] > end:
                break
            name = self.tag_names[i]
            if name[0] != "/":
                open_.append(name)
            elif not open_ or open_.pop() != name[1:]:
                return False
        return not open_

    def outcome(self, data: str, at: int):
        """What the search from ``at`` in ``data`` came to, as :meth:`came_to` noted it: the formula (a
        match) that arithmatex is given, ``None`` for none, or ``False`` when not known."""
        if self.outcomes is None or self.outcomes[0] is not data:
            return False
        return self.outcomes[1].get(at, False)

    def came_to(self, data: str, places: list[int], found) -> None:
        """The searches from each of ``places`` in ``data`` came to ``found``: none is made again."""
        if self.outcomes is None or self.outcomes[0] is not data:
            self.outcomes = (data, {})
        self.outcomes[1].update(dict.fromkeys(places, found))

    def replaced(self, start: int, end: int) -> None:
        """Arithmatex replaced ``data[start:end]`` (a formula or an escape) by a placeholder."""
        self.pending = (start, end)


class RawHtmlMath:
    """A Markdown extension (the build plugin adds it after the site's own): math signs that stand in
    inline raw HTML that is not prose (:class:`_RawContexts`) stay as written, where arithmatex made
    them a formula, and the build then MathML, inside the tag or the code, or across its end. Where
    arithmatex's formula starts or ends in raw HTML, its next formula after that HTML is taken instead: in
    ``<!-- costs $5 --> and $b$``, ``$b$`` is one."""

    def __new__(cls, *args, **kwargs):
        from markdown.extensions import Extension
        from markdown.inlinepatterns import InlineProcessor

        class Reader(InlineProcessor):
            """Reads each text's raw HTML right before arithmatex reads the text; matches nothing."""

            def __init__(self, contexts: _RawContexts):
                super().__init__(r"\A")
                self.contexts = contexts

            def handleMatch(self, m, data):
                self.contexts.read(data)
                return None, None, None

        class MathLeftInRawHtml(Extension):
            def extendMarkdown(self, md):
                if _ARITHMATEX_INLINE not in md.inlinePatterns:
                    return
                inline = md.inlinePatterns[_ARITHMATEX_INLINE]
                if getattr(inline, "raw_html_contexts", None) is not None:
                    return
                contexts = inline.raw_html_contexts = _RawContexts()
                handle, pattern = inline.handleMatch, inline.compiled_re

                def handle_match(m, data):
                    # each search starts past raw HTML that the last formula started or ended in, and at
                    # its closing sign at the earliest; once one finds none, no later one is made in that
                    # text, and what each formula declined came to is noted, so that no formula is looked
                    # at twice: the text is read once
                    visited = []
                    while True:
                        known = contexts.outcome(data, m.start(0))
                        if known is not False:
                            m = known
                            break
                        visited.append(m.start(0))
                        after = contexts.raw_end(data, m.start(0), m.end(0))
                        if after is None:
                            break
                        known = contexts.none_after
                        if known is not None and known[0] is data and after >= known[1]:
                            m = None
                            break
                        m = pattern.search(data, after)
                        if m is None:
                            contexts.none_after = (data, after)
                            break
                    contexts.came_to(data, visited, m)
                    if m is None:
                        return None, None, None
                    node, start, end = handle(m, data)
                    if node is not None and start is not None:
                        contexts.replaced(start, end)
                    return node, start, end

                inline.handleMatch = handle_match
                md.inlinePatterns.register(Reader(contexts), "mathml-raw-html", _RAW_HTML_PRIORITY)

        return MathLeftInRawHtml(*args, **kwargs)
