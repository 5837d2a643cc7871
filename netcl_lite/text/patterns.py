"""Regex pre-splitting: the GPT-2 and GPT-4 (cl100k) patterns, and a fast splitter for them.

Byte-level BPE never merges across the chunks a pre-split pattern cuts, so
``" world"`` and ``"world!"`` cannot share a token with the punctuation. The
two patterns are tiktoken's own ``pat_str`` strings (``r50k_base`` / ``gpt2``
and ``cl100k_base``), so a tokenizer with the same ranks splits and encodes
exactly like tiktoken. They use ``\\p{L}`` (letters), ``\\p{N}`` (numbers) and
possessive quantifiers, which the standard :mod:`re` module cannot parse, so
they are compiled with the ``regex`` package.

For these two patterns :func:`compile_splitter` runs an equivalent pattern on
:mod:`re`, once faster than ``regex``; with the ``regex`` release installed now the two run
at the same speed (``benchmarks/results/tried.md``, "Pre-split on re"). It spells ``\\p{L}``, ``\\p{N}`` and ``\\s`` out as explicit Basic Multilingual
Plane ranges read from ``regex`` itself, and hands astral characters (emoji,
math letters) a stand-in of the same class, then cuts the original text at
the same offsets. The tests check it splits exactly like ``regex``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
import sys
import time
from collections.abc import Callable, Iterator
from itertools import accumulate

import numpy as np
import regex

__all__ = ["GPT2_PATTERN", "GPT4_PATTERN", "compile_splitter", "from_oniguruma", "split_budget", "split_time_limit",
           "to_oniguruma", "with_gaps"]

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
"""GPT-2's pre-split pattern (tiktoken's ``r50k_base`` spelling): contractions, letter runs,
number runs and punctuation runs with one optional leading space, then whitespace."""

# --8<-- [start:gpt4_pattern]
GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
    r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
"""GPT-4's pre-split pattern (tiktoken's ``cl100k_base``): case-insensitive contractions, a
letter run with one optional leading non-letter, numbers in groups of at most three digits,
punctuation runs that keep trailing newlines, and newline-aware whitespace."""
# --8<-- [end:gpt4_pattern]

# The same two patterns over explicit classes {L}, {N}, {S} (letters, numbers, whitespace).
_RE_TEMPLATES = {
    GPT2_PATTERN: r"""'(?:[sdmt]|ll|ve|re)| ?[{L}]++| ?[{N}]++| ?[^{S}{L}{N}]++|[{S}]++$"""
                  r"""|[{S}]+(?![^{S}])|[{S}]""",
    GPT4_PATTERN: r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n{L}{N}]?+[{L}]++|[{N}]{{1,3}}+"""
                  r"""| ?[^{S}{L}{N}]++[\r\n]*+|[{S}]++$|[{S}]*[\r\n]|[{S}]+(?![^{S}])|[{S}]""",
}
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_LETTER, _NUMBER = regex.compile(r"\p{L}"), regex.compile(r"\p{N}")
# Stand-ins for astral characters: a BMP letter, a BMP digit, a private-use "other".
_STAND_IN_LETTER, _STAND_IN_NUMBER, _STAND_IN_OTHER = "\u4e00", "\u0660", "\ue000"


#: the longest pre-split pattern accepted: GPT-4's is ~200 characters, and compiling a pattern of
#: megabytes takes minutes (a damaged or hostile tokenizer file)
MAX_PATTERN_CHARS = 10_000


#: the most repeats a pattern's counted quantifiers may spell out (``x{1000}`` is 1000; nested ones multiply).
#: ``regex`` compiles a counted repeat in time about its count: ``x{4294967294}`` (17 characters) or
#: ``((x{1000}){1000}){1000}`` compiled for hours, before any split's time limit could apply. Real
#: patterns count to a few (``\p{N}{1,3}``); 100,000 compiles in about a tenth of a second.
MAX_REPEATS = 100_000


def check_pattern_length(pattern: str, source: str = "pattern") -> None:
    """Refuse a pattern longer than :data:`MAX_PATTERN_CHARS`, or one whose counted repeats spell out more
    than :data:`MAX_REPEATS`, before anything compiles it."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"{source}: the pre-split pattern is {len(pattern)} characters long; patterns of real "
                         f"tokenizers are a few hundred (at most {MAX_PATTERN_CHARS} accepted): the file is "
                         "damaged or not a tokenizer")
    if _counted_repeats(pattern) > MAX_REPEATS:
        raise ValueError(f"{source}: the pre-split pattern {pattern[:200]!r} counts more than {MAX_REPEATS:,} repeats "
                         f"in its {{m,n}} quantifiers (nested ones multiply), which would take minutes or hours to compile; "
                         f"real tokenizers' patterns count to a few: the file is damaged or hostile")


_BRACES = re.compile(r"\{([^{}]*)\}")


def _count_of(inside: str) -> int:
    """The largest count of a ``{m,n}`` quantifier's inside, read as verbose mode reads it (whitespace
    and ``#`` comments between the digits); 0: not a count. A comment in a count is taken as unbounded."""
    if "#" in inside:
        return 10**10
    numbers = "".join(inside.split()).split(",")
    if len(numbers) > 2 or not all(re.fullmatch("[0-9]*", d) for d in numbers):
        return 0
    return max((int(d) if len(d) < 10 else 10**10 for d in numbers if d), default=1)


def _counted_repeats(pattern: str) -> int:
    """The atoms a pattern's counted quantifiers spell out, nested ones multiplied (an overestimate: a
    ``{`` in a comment counts too); stops counting past :data:`MAX_REPEATS`."""
    groups, last, i, n = [0], 0, 0, len(pattern)   # groups: the weight of each open group; last: the last atom's
    while i < n and groups[0] <= MAX_REPEATS:
        c = pattern[i]
        if c in "\\[":
            i = _escape_end(pattern, i) if c == "\\" else _class_end(pattern, i)
            groups[-1], last = groups[-1] + 1, 1
            continue
        if c == "(":
            groups.append(0)
            last = 0
        elif c == ")" and len(groups) > 1:
            last = max(groups.pop(), 1)
            groups[-1] += last
        elif c == "{" and (m := _BRACES.match(pattern, i)) and last and (bound := _count_of(m.group(1))):
            groups[-1] += last * (bound - 1)
            last, i = 0, m.end()
            continue
        else:
            groups[-1], last = groups[-1] + 1, 0 if c in "|*+?" else 1
        i += 1
    return sum(groups)


def compile_splitter(pattern: str | None) -> Callable[[str], list[str]]:
    """Return ``split(text) -> list of chunks`` for a pre-split pattern (``None``: the whole text).

    >>> compile_splitter(GPT4_PATTERN)("Hello world's 12345!!\\n")
    ['Hello', ' world', "'s", ' ', '123', '45', '!!\\n']
    >>> compile_splitter(None)("no split")
    ['no split']

    Chunks always concatenate back to the text: a custom pattern that skips
    characters raises ``ValueError`` at split time instead of losing them.
    """
    if pattern is None:
        return lambda text: [text] if text else []
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str or None, got {type(pattern).__name__}")
    check_pattern_length(pattern)
    from netcl_lite.text.dispatch import utf8

    utf8(pattern, "pattern")    # a lone surrogate: no text holds one, and the tokenizer's fingerprint hashes its bytes
    try:
        compiled = regex.compile(pattern)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise ValueError(f"pattern {pattern[:200]!r} is not a valid regex: {exc}") from None
    if pattern in _RE_TEMPLATES and sys.version_info >= (3, 11):  # re gained possessives in 3.11
        return _fast_splitter(pattern)
    return _checked_splitter(compiled, pattern)


#: a custom pattern's split may take SPLIT_SECONDS_BASE plus this many seconds per character before
#: it is refused. Real patterns take about 0.1–0.2 µs a character on ``regex`` (GPT-4's on 1.3 MB of
#: source); one that backtracks without bound on some text (``(a|a)*b|.`` on a run of ``a``) would
#: otherwise hang every encode of that text, and compressing it, however quickly it split the probe
#: it was loaded with. 20 µs a character is ~100× a real pattern's time and still a fifth of what
#: the compressor spends on a character.
SPLIT_SECONDS_PER_CHAR = 20e-6
SPLIT_SECONDS_BASE = 1.0


def split_time_limit(length: int) -> float:
    """The seconds a custom pattern may take to split ``length`` characters (see :data:`SPLIT_SECONDS_PER_CHAR`).

    >>> split_time_limit(1_000_000)
    21.0
    """
    if isinstance(length, bool) or not isinstance(length, int):
        raise TypeError(f"length must be an int (a count of characters), got {type(length).__name__}")
    if length < 0:
        raise ValueError(f"length must be >= 0 (a count of characters), got {length}")
    return SPLIT_SECONDS_BASE + SPLIT_SECONDS_PER_CHAR * length


#: the budget of the call under way: (deadline on time.monotonic(), its seconds, its characters), or None
_BUDGET: contextvars.ContextVar[tuple[float, float, int] | None] = contextvars.ContextVar("split_budget", default=None)


@contextlib.contextmanager
def split_budget(length: int) -> Iterator[None]:
    r"""Make every custom-pattern split inside share one :func:`split_time_limit` of ``length`` characters.

    A call that splits its text in pieces (the runs of valid UTF-8 the compressor encodes, the text
    between allowed special tokens, the documents of a batch) would otherwise grant each piece the
    limit's one-second base afresh: thousands of short pieces, each split just inside it, ran for
    hours where the same text in one piece is refused in a second. Nested budgets keep the earlier
    deadline.

    >>> with split_budget(100):
    ...     compile_splitter(r"\w+|\W")("two words")
    ['two', ' ', 'words']
    """
    seconds = split_time_limit(length)
    budget = (time.monotonic() + seconds, seconds, length)
    outer = _BUDGET.get()
    token = _BUDGET.set(budget if outer is None or budget[0] < outer[0] else outer)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _checked_splitter(compiled, pattern: str) -> Callable[[str], list[str]]:
    if compiled.groups:  # findall would return groups, not whole matches
        find = lambda text, timeout: [m.group() for m in compiled.finditer(text, timeout=timeout)]
    else:
        find = lambda text, timeout: compiled.findall(text, timeout=timeout)

    def split(text: str) -> list[str]:
        limit, seconds, length = split_time_limit(len(text)), None, len(text)
        if (budget := _BUDGET.get()) is not None and budget[0] - time.monotonic() < limit:
            limit, (_, seconds, length) = budget[0] - time.monotonic(), budget  # the call's budget runs out first
        try:
            if limit <= 0:
                raise TimeoutError
            found = find(text, limit)
        except TimeoutError:
            raise ValueError(
                f"pattern {pattern[:200]!r} took over {seconds or limit:.1f} s to split {length:,} characters "
                f"{'(in pieces) ' if seconds else ''}(it backtracks without bound on this text; real pre-split "
                f"patterns take well under a microsecond a character): fix or replace the tokenizer's pattern"
            ) from None
        chunks = [c for c in found if c]
        if sum(map(len, chunks)) != len(text):
            covered = "".join(chunks)
            at = next((i for i, (x, y) in enumerate(zip(text, covered)) if x != y), len(covered))
            raise ValueError(
                f"pattern {pattern!r} does not match every character: {text[at:at + 10]!r} at "
                f"offset {at} would be lost; end the pattern with a catch-all such as '|\\s+|.'"
            )
        return chunks

    return split


def _fast_splitter(pattern: str) -> Callable[[str], list[str]]:
    find = re.compile(_RE_TEMPLATES[pattern].format(**_bmp_classes())).findall

    def split(text: str) -> list[str]:
        if text.isascii() or _ASTRAL.search(text) is None:   # isascii() reads a flag: no scan
            return find(text)
        # subtle: stand-ins keep every offset (one code point each), so cut the original there.
        ends = list(accumulate(map(len, find(_ASTRAL.sub(_stand_in, text)))))
        return list(map(text.__getitem__, map(slice, [0, *ends[:-1]], ends)))

    return split


@functools.cache
def _bmp_classes() -> dict[str, str]:
    """``\\p{L}``, ``\\p{N}``, ``\\s`` of the ``regex`` package as ``re`` class bodies (BMP only)."""
    bmp = "".join(map(chr, range(0x10000)))
    return {name: "".join(_span(m.start(), m.end() - 1) for m in regex.finditer(prop + "+", bmp))
            for name, prop in (("L", r"\p{L}"), ("N", r"\p{N}"), ("S", r"\s"))}


#: bits of :func:`code_point_classes`
CLASS_LETTER, CLASS_NUMBER, CLASS_SPACE = 1, 2, 4
_CONTRACTION_LETTERS = "sdmtlvre"   # GPT-4's contractions: 's 'd 'm 't 'll 've 're


@functools.cache
def code_point_classes() -> np.ndarray:
    """Each code point's class as the ``regex`` package reads GPT-4's pattern: uint8 per code point.

    Bit 0 ``\\p{L}``, bit 1 ``\\p{N}``, bit 2 ``\\s``; bits 3..6 the letter of a contraction
    (1..8 for s, d, m, t, l, v, r, e) the code point matches case-insensitively (``"ſ"`` is an
    ``s``). ``kernels/bpe.cl`` splits text on the device with this table. Built once per process
    from ``regex`` itself (~40 ms), so it follows the Unicode version ``regex`` ships.

    >>> classes = code_point_classes(); [int(classes[ord(c)]) for c in "a1 ſ-"]
    [1, 2, 4, 9, 0]
    """
    points = np.arange(0x110000, dtype=np.uint32)
    points[0xD800:0xE000] = 0   # surrogates are no text (UTF-8 cannot hold them); NUL stands in
    every = points.tobytes().decode("utf-32-le")
    out = np.zeros(0x110000, np.uint8)
    for bit, prop in ((CLASS_LETTER, r"\p{L}"), (CLASS_NUMBER, r"\p{N}"), (CLASS_SPACE, r"\s")):
        for m in regex.finditer(prop + "+", every):
            out[m.start():m.end()] |= bit
    for code, letter in enumerate(_CONTRACTION_LETTERS, 1):
        for m in regex.finditer(f"(?i:{letter})", every):
            out[m.start()] |= code << 3
    return out


def _span(first: int, last: int) -> str:
    return f"\\u{first:04x}" if first == last else f"\\u{first:04x}-\\u{last:04x}"


@functools.lru_cache(maxsize=4096)
def _stand_in_for(char: str) -> str:
    if _LETTER.match(char):
        return _STAND_IN_LETTER
    return _STAND_IN_NUMBER if _NUMBER.match(char) else _STAND_IN_OTHER  # no astral whitespace


def _stand_in(match: re.Match) -> str:
    return _stand_in_for(match.group())


# -- the same pattern in Oniguruma, Hugging Face tokenizers' regex engine ---------------------------
#
# Three spellings mean different things there: "$" and "^" are line anchors (here: the text's end,
# or before a final newline, and its start), "\Z"/"\z" are this module's "$"/"\Z", and "X{1,3}+" is
# X{1,3} repeated, not a possessive X{1,3}. Everything else these patterns use reads the same.

_INTERVAL = re.compile(r"\{\d*(?:,\d*)?\}")


def to_oniguruma(pattern: str) -> str:
    r"""Spell a ``regex`` pattern so that Oniguruma splits text the same way (for tokenizer.json).

    >>> to_oniguruma(r"\p{N}{1,3}+|\s++$|^x")
    '(?>\\p{N}{1,3})|\\s++\\Z|\\Ax'
    """
    return _translate(pattern, {"$": r"\Z", "^": r"\A", r"\Z": r"\z"}, lambda atom, interval: f"(?>{atom}{interval})")


def with_gaps(pattern: str) -> str:
    r"""The pattern plus the text between its matches as chunks of their own (a Split that is "Isolated").

    ``tokenizers`` keeps what a split pattern does not match; this spelling does the same:
    a gap is the longest run of characters at none of which the pattern matches.

    >>> import regex; regex.findall(with_gaps(r"\d+"), "ab12c3")
    ['ab', '12', 'c', '3']
    """
    return rf"(?:{pattern})|(?:(?!(?:{pattern}))[\s\S])+"


def from_oniguruma(pattern: str) -> str:
    r"""Read an Oniguruma pattern (from a tokenizer.json) as a ``regex`` pattern with the same splits.

    >>> from_oniguruma(r"\p{N}{1,3}+|\s++\z|\s+$")
    '(?:\\p{N}{1,3})+|\\s++\\Z|\\s+(?m:$)'
    """
    _check_properties(pattern)
    return _translate(pattern, {"$": "(?m:$)", "^": "(?m:^)", r"\Z": "$", r"\z": r"\Z"},
                      lambda atom, interval: f"(?:{atom}{interval})+")


def _translate(pattern: str, anchors: dict[str, str], interval_plus) -> str:
    """Rewrite the anchors and every ``atom{m,n}+``; classes and escapes are copied unchanged."""
    out: list[str] = []  # pieces; a quantifier applies to the last atom piece
    atom_at, groups, i, n = None, [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            end = _escape_end(pattern, i)
            piece = pattern[i:end]
            atom_at = None if piece in anchors else len(out)
            out.append(anchors.get(piece, piece))
            i = end
        elif c == "[":
            end = _class_end(pattern, i)
            atom_at = len(out)
            out.append(pattern[i:end])
            i = end
        elif c == "(":
            groups.append(len(out))
            out.append(c)
            atom_at, i = None, i + 1
        elif c == ")":
            atom_at = groups.pop() if groups else None
            out.append(c)
            i += 1
        elif c == "{" and (m := _INTERVAL.match(pattern, i)) and atom_at is not None:
            i = m.end()
            if i < n and pattern[i] == "+":
                atom = "".join(out[atom_at:])
                del out[atom_at:]
                out.append(interval_plus(atom, m.group()))
                i += 1
            else:
                out.append(m.group())
            atom_at = None
        elif c in anchors:
            out.append(anchors[c])
            atom_at, i = None, i + 1
        else:
            atom_at = None if c in "|*+?" else len(out)
            out.append(c)
            i += 1
    return "".join(out)


_PROPERTY = re.compile(r"\\[pP]\{(?!\^?[A-Za-z_]\w*\})([^}]*)\}?")


def _check_properties(pattern: str) -> None:
    """Oniguruma names properties plainly (``\\p{L}``, ``\\p{^Han}``); ``regex`` also takes odd spellings."""
    if bad := _PROPERTY.search(pattern):
        raise ValueError(f"{bad.group()!r} is not a character property Oniguruma reads; the pattern "
                         f"cannot mean the same in both engines")


def _escape_end(pattern: str, i: int) -> int:
    """End of the escape at ``i``: ``\\p{L}``, ``\\x{41}``, ``\\u0041``, ``\\x41`` or ``\\n``."""
    kind = pattern[i + 1:i + 2]
    if kind in ("p", "P", "x", "N", "k", "g") and pattern[i + 2:i + 3] == "{":
        close = pattern.find("}", i + 2)
        return close + 1 if close > 0 else len(pattern)
    return i + {"u": 6, "x": 4, "U": 10}.get(kind, 2)


def _class_end(pattern: str, i: int) -> int:
    """End of the character class opening at ``i`` (nested classes and escapes included)."""
    depth, j = 0, i
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j = _escape_end(pattern, j)
            continue
        if c == "[":
            depth += 1
            j += 1
            if pattern[j:j + 1] == "^":
                j += 1
            if pattern[j:j + 1] == "]":  # a "]" first in a class is literal
                j += 1
            continue
        if c == "]":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(pattern)
