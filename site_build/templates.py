"""Compile the theme's Jinja templates once, not on every build.

MkDocs makes a new Jinja environment for every build, ``mkdocs serve``'s rebuilds included, so
every save would compile Material's forty-odd templates again. :func:`use_bytecode_cache` gives
the environment a :class:`jinja2.FileSystemBytecodeCache` under the cache root
(:func:`netcl_lite.fingerprint.cache_root`), so a build loads the compiled templates instead.

A stored template is never stale: Jinja keys it by the template's name and file and reuses it
only when the checksum of the template's source matches (an edited template is compiled again),
and only under the Python version it was compiled by. What else the compiled code depends on,
the Jinja version and the environment (its class and code generator, its syntax settings and
delimiters, autoescape, finalize, undefined, policies, extensions, and each filter and test: its
name, the arguments Jinja passes it and its code, since Jinja calls filters, tests and finalize on
constants as it compiles), names the cache's folder (:func:`environment_key`).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import sys
from pathlib import Path

import jinja2
import jinja2.bccache

from netcl_lite import fingerprint

log = logging.getLogger("mkdocs.plugins.site_build.templates")
#: the environment's settings that change the code Jinja compiles a template to
_SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
             "comment_start_string", "comment_end_string", "line_statement_prefix",
             "line_comment_prefix", "trim_blocks", "lstrip_blocks", "newline_sequence",
             "keep_trailing_newline", "optimized", "is_async", "newstyle_gettext")


def _code(code) -> str:
    """A digest of a code object's instructions, names and constants (nested code objects by their
    own digest): the same in every process, and another for a function whose body differs."""
    h = hashlib.sha256(code.co_code + "\0".join(code.co_names).encode())
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            h.update(_code(const).encode())
        else:                                   # a frozenset's order follows the string hash seed
            h.update(repr(sorted(map(repr, const)) if isinstance(const, frozenset) else const).encode())
    return h.hexdigest()[:16]


#: how many functions deep :func:`_plain` follows what a function reads (a filter, the functions its
#: defaults, closure or globals hold, theirs): deeper ones are named by their code alone
_DEPTH = 3


def _plain(value, seen: frozenset[int] = frozenset(), depth: int = 0) -> str:
    """``value`` as text that is the same in every process: a function by its qualified name, a
    digest of its code (two lambdas of one module differ) and what its code reads besides its
    arguments (its defaults, the cells of its closure, the module globals it names but modules),
    :data:`_DEPTH` functions deep, a bound method's object too; a partial by its function and arguments;
    a callable object (a
    filter's instance) by its class's ``__call__`` as a function, then as any value. A value of another kind
    is its ``repr``, or where that holds an address (``<… at 0x…>``, another in the next process)
    its type and its attributes."""
    if value is None or isinstance(value, (str, bool, int, float, complex, bytes)):
        return repr(value)
    if id(value) in seen:                       # a function that reads itself, a list that holds itself
        return "<recursion>"
    seen = seen | {id(value)}
    if isinstance(value, (tuple, list, set, frozenset)):
        items = [_plain(v, seen, depth) for v in value]
        return type(value).__name__ + "(" + ", ".join(sorted(items) if isinstance(value, (set, frozenset))
                                                      else items) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(sorted(f"{_plain(k, seen, depth)}: {_plain(v, seen, depth)}"
                                      for k, v in value.items())) + "}"
    if isinstance(value, functools.partial):
        return (f"partial({_plain(value.func, seen, depth)}, {_plain(value.args, seen, depth)}, "
                f"{_plain(value.keywords, seen, depth)})")
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    function = next((f for f in (value, getattr(value, "__func__", None), getattr(value, "__wrapped__", None))
                     if hasattr(f, "__code__")), None)      # a function, a method, a cache's wrapper
    if function is None:
        kind = f"{type(value).__module__}.{type(value).__qualname__}"
        call = getattr(type(value), "__call__", None)
        if hasattr(call, "__code__"):           # a callable object (a filter's instance): the code it runs
            kind += f"[{_plain(call, seen, depth)}]"
        shown = repr(value)
        if " at 0x" not in shown:
            return f"{kind}:{shown}"
        return f"{kind}:{_plain(vars(value), seen, depth)}" if hasattr(value, "__dict__") else kind
    name = f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', type(value).__qualname__)}"
    code = function.__code__
    if depth >= _DEPTH:
        return f"{name}[{_code(code)}]"
    cells = tuple(c.cell_contents if _filled(c) else "<empty cell>" for c in (function.__closure__ or ()))
    module = getattr(function, "__globals__", {})
    named = {n: module[n] for n in _names(code) if n in module and not _module(module[n])}
    reads = _plain((function.__defaults__, function.__kwdefaults__, cells, named), seen, depth + 1)
    bound = getattr(value, "__self__", None)     # a bound method reads its object too (a plugin's settings)
    if bound is not None and not _module(bound) and not isinstance(bound, type):
        reads += f"[self {_plain(bound, seen, depth + 1)}]"
    return f"{name}[{_code(code)}]{reads}"


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:                          # a cell its function has not set yet
        return False
    return True


def _names(code) -> set[str]:
    """The global names ``code`` and the code nested in it read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            names |= _names(const)
    return names


def _module(value) -> bool:
    import types

    return isinstance(value, types.ModuleType)


def _callables(table: dict) -> list[str]:
    """Each filter's or test's name, what Jinja passes it (context, eval context, environment: the
    ``jinja_pass_arg`` that ``jinja2.pass_context`` and its kin set) and the function itself."""
    return [f"{name}:{getattr(func, 'jinja_pass_arg', None)}:{_plain(func)}" for name, func in sorted(table.items())]


def environment_key(env: jinja2.Environment) -> str:
    """A digest of what, besides a template's source, the code Jinja compiles it to depends on."""
    if not isinstance(env, jinja2.Environment):
        raise TypeError(f"env must be a jinja2.Environment, got {type(env).__name__}")
    finalize = env.finalize
    # entries with a digest line (CheckedBytecodeCache): never read from a folder of Jinja's plain ones
    parts = ["entries checked by digest", f"jinja2 {jinja2.__version__}", f"python {sys.implementation.name} {sys.version_info[:2]}",
             f"environment {_plain(type(env))}", f"code generator {_plain(env.code_generator_class)}",
             f"context {_plain(env.context_class)}",
             *(f"{name}={_plain(getattr(env, name, None))}" for name in _SETTINGS),
             f"autoescape={_plain(env.autoescape)}", f"policies={_plain(env.policies)}",
             f"finalize={_plain(finalize)}:{getattr(finalize, 'jinja_pass_arg', None)}",
             f"undefined={_plain(env.undefined)}",
             *sorted(f"extension {_plain(type(ext))} priority {ext.priority}" for ext in env.extensions.values()),
             *_callables(env.filters), *_callables(env.tests)]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:24]


def cache_folder(env: jinja2.Environment, root: Path | None = None) -> Path:
    """Where the compiled templates of ``env`` are kept: ``jinja/<environment key>`` under ``root``
    (the cache root when None)."""
    root = fingerprint.cache_root() if root is None else root
    if not isinstance(root, Path):
        raise TypeError(f"root must be a pathlib.Path or None, got {type(root).__name__}")
    return root / "jinja" / environment_key(env)


def _entry_key(bucket: jinja2.bccache.Bucket) -> str:
    """What a compiled template's entry is checked against: its bucket's key (the template's name and
    file), which names its file."""
    return f"template cache {bucket.key}"


class CheckedBytecodeCache(jinja2.FileSystemBytecodeCache):
    """Jinja's file cache, each entry stored as the execution cache stores one (:func:`.store.entry`: a
    line with the SHA-256 of the template's bucket key and what follows, and its length), written whole:
    an entry emptied, truncated, edited or copied from another template's (which Jinja would fail to
    unpickle, or run as it now reads, or run as that other template) is removed and the template
    compiled again, as is one that is no regular file (a named pipe, never waited on:
    :func:`.store.read_entry`), replaced as the template is stored; one that cannot be written is a
    warning, the template compiled next time again."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        import io

        from .store import older_format, payload, read_entry

        path = Path(self._get_cache_filename(bucket))
        try:
            raw = read_entry(path)              # a pipe or a device there: never waited on
        except OSError:                         # unreadable: compiled again
            return
        if raw is None:                         # not stored, a folder, a pipe: compiled again (and replaced)
            return
        data = payload(raw, _entry_key(bucket))
        if data is not None:
            try:
                bucket.load_bytecode(io.BytesIO(data))
                return
            except Exception:                   # stored whole but not by this Jinja: compiled again
                pass
        bucket.reset()
        if data is None and older_format(raw):      # a cache that outlived an upgrade: no damage
            log.info(f"template cache: {path} was written by an older build; compiling the template again")
        else:
            log.warning(f"template cache: {path} does not match its digest or cannot be read; compiling "
                        f"the template again")
        path.unlink(missing_ok=True)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        import io

        from .store import entry, write_entry

        out = io.BytesIO()
        bucket.write_bytecode(out)
        path = Path(self._get_cache_filename(bucket))
        try:
            write_entry(path, entry(out.getvalue(), _entry_key(bucket)))       # a link there replaced, not followed
        except (OSError, ValueError) as err:
            log.warning(f"template cache: cannot keep {path} ({err})")


def use_bytecode_cache(env: jinja2.Environment, root: Path | None = None) -> jinja2.Environment:
    """``env`` with a bytecode cache in :func:`cache_folder` (:class:`CheckedBytecodeCache`), before any
    template is loaded; a folder that cannot be made (a file in its place) leaves ``env`` without one,
    with a warning: the templates are compiled on each build."""
    folder = cache_folder(env, root)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        log.warning(f"template cache: cannot make {folder} ({err}); compiling the templates on each build")
        return env
    env.bytecode_cache = CheckedBytecodeCache(str(folder))
    return env
