"""Text every reader already has: the docstrings of Python's own standard library.

Python ships its standard library as source, under the PSF License (a permissive,
GPL-compatible license), so after ``pip install`` there is no download to make: each
module of the running interpreter's library is one document, the docstrings of its
module, classes and functions in source order. Test suites, ``idlelib`` and installed
third-party packages are left out. The text depends on the Python version (3.11's
library gives about 1.5 MB of English, with code examples).

Parsing some 650 modules takes seconds, so the result is kept on disk under
:func:`netcl_lite.fingerprint.cache_root`, named by :func:`netcl_lite.fingerprint.key` of
this file, the interpreter's version, the library's folder and the content of every source
file: an edit to any of them reads the library again, and ``NETCL_LITE_RERUN=1`` always does.

    >>> docs = stdlib_documents()
    >>> len(docs) > 400 and sum(len(t.encode()) for t in docs.values()) > 1_000_000
    True
    >>> train, held_out = split_documents(docs)
    >>> sorted(set(train) & set(held_out))
    []
"""

from __future__ import annotations

import ast
import hashlib
import json
import numbers
import os
import sys
import sysconfig
import warnings
from functools import lru_cache
from pathlib import Path

#: folders of the standard library that are not library documentation.
EXCLUDED = frozenset({"test", "tests", "idlelib", "turtledemo", "site-packages", "dist-packages", "__pycache__"})


def module_docstrings(source: str) -> str:
    """The docstrings of a module's source (module, classes, functions) in source order, blank-line separated.

    >>> module_docstrings("'''Top.'''\\ndef f():\\n    '''Does f.'''\\n")
    'Top.\\n\\nDoes f.'
    """
    nodes = sorted(_definitions(ast.parse(source)), key=lambda n: getattr(n, "lineno", 0))
    return "\n\n".join(d for d in (ast.get_docstring(n) for n in nodes) if d)


_DEFINITIONS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
# where a statement keeps the statements nested in it
_NESTED = ("body", "orelse", "finalbody", "handlers", "cases")
_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def _definitions(tree: ast.Module):
    """The module and every class and function in it, at any depth. A definition is always a
    statement, so only statements are visited, not the expressions that make up most of a tree."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, _DEFINITIONS):
            yield node
        for field in _NESTED:
            children = getattr(node, field, None)
            if isinstance(children, list):
                stack.extend(c for c in children if isinstance(c, _STATEMENTS))


def _sources(base: Path) -> list[tuple[Path, str]]:
    """The library's ``.py`` files outside ``EXCLUDED``, sorted, with their names relative to ``base``."""
    paths = []
    for folder, subfolders, files in os.walk(base):
        subfolders[:] = [d for d in subfolders if d not in EXCLUDED]    # never walk into them
        paths.extend(Path(folder, f) for f in files if f.endswith(".py"))
    return [(path, path.relative_to(base).as_posix()) for path in sorted(paths)]


def _read(sources: list[tuple[Path, str]]) -> list[tuple[str, str]]:
    out = []
    for path, rel in sources:
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            continue   # a file name that is not UTF-8 (os.walk gives its bytes as surrogates): no module name
        try:
            text = module_docstrings(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue   # a few files are deliberately invalid (e.g. lib2to3's test data)
        if text:
            out.append((rel, text))
    return out


@lru_cache(maxsize=1)
def _documents(root: str) -> tuple[tuple[str, str], ...]:
    from .files import folder_entry_error, make_entry_folder, replace_entry
    from .fingerprint import cache_root, key, rerun_forced

    base = Path(root)
    sources = _sources(base)
    # what the text depends on: this parser, the interpreter, and the files it parses (no device)
    item = key(Path(__file__).read_bytes(), [path for path, _ in sources],
               shared=f"standard library docstrings of {sys.version} at {base.resolve()}")
    stored = cache_root() / "corpus" / f"{item}.json"
    if not rerun_forced():
        kept = _stored_documents(stored, item)
        if kept is not None:
            return kept
    out = _read(sources)
    # the key it is stored under goes in with the documents (so under the digest): an entry copied or
    # renamed under another key is a miss, never another library's documents
    try:
        body = json.dumps({"key": item, "documents": out}, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        # a docstring spelling a lone surrogate with an escape ("\\ud800") has no UTF-8: stored with every
        # character outside ASCII as a JSON escape, which reads back as it was (any other corpus as before)
        body = json.dumps({"key": item, "documents": out}, ensure_ascii=True).encode("ascii")
    make_entry_folder(stored.parent, "the stored corpora")
    try:
        replace_entry(stored, _DIGEST + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    except OSError:                                  # this one entry at fault, not the cache folder: named
        refusal = folder_entry_error(stored, "the stored corpus")
        if refusal is not None:
            raise refusal from None
        raise
    return tuple(out)


#: the first line of a stored corpus starts so, then the SHA-256 of the JSON that follows it
#: (``{"key": <the key it is stored under>, "documents": [[name, text], ...]}``); an entry of the older
#: format (``netcl-lite corpus sha256=``, documents alone, bound to no key) is a quiet miss
_DIGEST = b"netcl-lite corpus 2 sha256="


#: the most bytes a stored corpus is read up to (a library's docstrings are a few MB)
MAX_STORED_BYTES = 256 << 20


def _stored_documents(stored: Path, item: str) -> tuple[tuple[str, str], ...] | None:
    """The documents kept at ``stored`` for the key ``item``, or None when there are none, the file does
    not match the digest written with it (emptied, truncated, edited, or of an older format) or was
    written for another key (copied or renamed under this one's name): parsed again then, quietly.
    The entry is read as an input is (:func:`netcl_lite.files.read_regular`: a regular file of at most
    :data:`MAX_STORED_BYTES`, a named pipe never waited on, a device never read); one that is not a
    regular file, cannot be read, or matches its digest but holds no corpus (JSON nested past the
    parser's depth) is a damaged cache entry: None too, with a warning naming it, and the caller's
    new corpus replaces the entry itself. A read that fails before the entry is reached (the cache
    folder is a file, a loop of links or a name too long above it, a folder that cannot be searched) is
    no fault of the entry: None with no warning, and the caller's write names the cache folder."""
    from .files import read_regular

    try:
        raw = read_regular(stored, MAX_STORED_BYTES, "a stored corpus")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and not _reached(stored):
            return None
        return _damaged(stored, str(exc) if isinstance(exc, ValueError) else f"cannot be read ({exc.strerror or exc})")
    head, newline, body = raw.partition(b"\n")
    if not newline or head != _DIGEST + hashlib.sha256(body).hexdigest().encode():
        return None
    try:
        stored_as = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):             # UnicodeDecodeError is a ValueError
        return _damaged(stored, "matches its digest but is not a corpus's JSON")
    if not isinstance(stored_as, dict) or set(stored_as) != {"key", "documents"}:
        return _damaged(stored, "matches its digest but is not a stored corpus")
    if stored_as["key"] != item:                     # written for another key: a miss
        return None
    documents = stored_as["documents"]
    if not isinstance(documents, list) or not all(
            isinstance(d, list) and len(d) == 2 and all(isinstance(x, str) for x in d) for d in documents):
        return _damaged(stored, "matches its digest but is not a list of documents")
    return tuple((name, text) for name, text in documents)


def _reached(stored: Path) -> bool:
    """Whether the name ``stored`` itself is there (as anything: a file, a folder, a link), so that a
    failure to read it is the entry's own; False when the path to it fails (a file where a folder of the
    cache goes, a loop of links or a name too long above it, a folder that cannot be searched)."""
    try:
        os.lstat(stored)
    except OSError:
        return False
    return True


def _damaged(stored: Path, why: str) -> None:
    """Warn that the cache entry ``stored`` is damaged (``why``, which may name it already) and will be replaced."""
    from .files import shown_path

    name = shown_path(stored)
    warnings.warn(f"corpus: {why if name in why else f'{name} {why}'}; reading the library again and replacing "
                  f"that cache entry", stacklevel=4)
    return None


def stdlib_documents(root: str | None = None) -> dict[str, str]:
    """{module path: its docstrings} for the running interpreter's standard library (or ``root``)."""
    root = sysconfig.get_paths()["stdlib"] if root is None else str(root)
    if not Path(root).is_dir():
        raise FileNotFoundError(f"root {root!r} is not a directory holding Python sources")
    return dict(_documents(root))


def split_documents(documents: dict[str, str], held_out_fraction: float = 0.1) -> tuple[dict[str, str], dict[str, str]]:
    """(training, held-out) by whole document: a document is held out when the hash of its name says so.

    The hash (SHA-256 of the name) makes the split independent of the order and of
    which other documents exist, so no text of a held-out module is ever trained on.
    """
    if isinstance(held_out_fraction, bool) or not isinstance(held_out_fraction, numbers.Real) \
            or not 0 < held_out_fraction < 1:
        raise ValueError(f"held_out_fraction must be in (0, 1), got {held_out_fraction!r}")
    return split_by_hash(documents, (held_out_fraction,))


def split_by_hash(documents: dict[str, str], fractions) -> tuple[dict[str, str], ...]:
    """(training, held-out part 1, part 2, ...) by whole document, each part a ``fractions[i]`` of the names.

    A name's position in [0, 1) is the first 8 bytes of its SHA-256; part i takes the
    names whose position falls in its slice of [0, sum(fractions)), training the rest.
    So a part never depends on the order or on which other documents exist, and the
    first part of ``(f, g)`` is the held-out side of ``split_documents(docs, f)``.

    >>> train, validation, test = split_by_hash({"a": "x", "b": "y", "d": "z"}, (0.2, 0.2))
    >>> list(train), list(validation), list(test)     # positions: a 0.79, b 0.24, d 0.10
    (['a'], ['d'], ['b'])
    """
    fractions = tuple(fractions) if isinstance(fractions, (tuple, list)) else fractions
    if not isinstance(fractions, tuple) or not fractions or any(
            isinstance(f, bool) or not isinstance(f, numbers.Real) or not f > 0 for f in fractions) \
            or not sum(fractions) < 1:
        raise ValueError(f"fractions must be a tuple of positive numbers summing below 1, got {fractions!r}")
    if not isinstance(documents, dict) or not documents:
        raise ValueError("documents must be a non-empty dict {name: text}")
    for name in documents:                           # each name is hashed as its UTF-8
        if not isinstance(name, str):
            raise TypeError(f"documents must be a dict {{name: text}} with str names, got the name "
                            f"{type(name).__name__} {name!r:.80}")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"documents must have names with a UTF-8 spelling, got {name!r:.80} (a lone "
                             f"surrogate)") from None
    bounds = [sum(fractions[:i + 1]) for i in range(len(fractions))]
    parts = [{} for _ in range(len(fractions) + 1)]
    for name, text in documents.items():
        h = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big") / 2**64
        part = next((i + 1 for i, bound in enumerate(bounds) if h < bound), 0)
        parts[part][name] = text
    if any(not part for part in parts):
        raise ValueError(f"fractions={fractions} leave a part empty for {len(documents)} documents")
    return tuple(parts)


def join(documents: dict[str, str]) -> str:
    """The documents as one text, separated by a blank line."""
    return "\n\n".join(documents.values())


def drop_repeated_lines(text: str, reference: str, min_chars: int = 20) -> tuple[str, list[str]]:
    """(``text`` without the lines it shares with ``reference``, the dropped lines).

    A line of ``text`` is dropped when, stripped of surrounding whitespace, it has at
    least ``min_chars`` characters and equals a stripped line of ``reference``: held-out
    text loses what was trained on word for word (license headers, repeated examples),
    short lines such as ``Returns:`` stay.

    >>> drop_repeated_lines("Returns:\\n  the same long line here\\nnew\\n", "the same long line here\\nReturns:")
    ('Returns:\\nnew\\n', ['  the same long line here\\n'])
    """
    for name, value in (("text", text), ("reference", reference)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if isinstance(min_chars, bool) or not isinstance(min_chars, numbers.Integral) or min_chars < 1:
        raise ValueError(f"min_chars must be a positive int, got {min_chars!r}")
    seen = {line.strip() for line in reference.splitlines()}
    kept, dropped = [], []
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        (dropped if len(stripped) >= min_chars and stripped in seen else kept).append(line)
    return "".join(kept), dropped
