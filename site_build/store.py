"""The build's execution cache: what it ran, kept by the key of everything that could change it.

What the site build runs (figures, build-output snippets, drill notebooks) is deterministic given
its inputs, so each output is stored under :func:`netcl_lite.fingerprint.key` of its source, the
files it reads and the build's :func:`context` (the library's sources and kernels, the versions of
:data:`PACKAGES`, the device and the variables that change results). A hit returns exactly the
bytes a fresh run stored, so a shown output is never stale: any edit to any of those inputs is a
miss and runs again.

The store is ``<cache root>/executed/<kind>/<key>`` (:func:`netcl_lite.fingerprint.cache_root`:
``.cache/netcl_lite`` in a source checkout, so a fresh clone runs everything), one folder per kind
of :data:`KINDS`. Each entry starts with a line holding the length of what follows and a SHA-256
of its kind and key with it; an entry that no longer matches them (emptied, truncated, edited by
hand, or copied or renamed under another key or kind, which would show one snippet's output for
another's) is a miss, removed and run again, as is an entry of an older format. Entries are written whole,
each replacing the name itself (:func:`write_entry`: a symlink left at an entry's name is replaced, never
written through to the file it names).
``NETCL_LITE_RERUN=1`` (or ``true``, ``yes``, ``on``) makes every lookup a miss, so everything
runs again and the store is refreshed.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
from pathlib import Path

from netcl_lite import extras, fingerprint
from netcl_lite.files import read_regular, replace_entry

#: what the build's executed code (and a page block the tests run) runs on: the library's packages,
#: the plotting library of the figures, the Jupyter kernel of the notebooks and every package of the
#: library's extras (the classical coders, transformers and torch), which blocks import
PACKAGES = (fingerprint.RUN_PACKAGES + ("matplotlib", "ipykernel", "nbclient")
            + tuple(sorted({name for names in extras.EXTRAS.values() for name in names})))
#: the kinds of output the build stores, one folder each
KINDS = ("build_output", "figure", "notebook")
_ENTRY_PREFIX = b"netcl-lite-cache-entry "
_ENTRY_MAGIC = _ENTRY_PREFIX + b"2 sha256="
#: the most bytes :func:`read_entry` reads of one entry (the largest, the shipped wheel, is a few MB)
MAX_ENTRY_BYTES = 1 << 30
log = logging.getLogger("mkdocs.plugins.site_build.execution_cache")


def data_files() -> list[Path]:
    """The data files the library reads for the pages: :func:`netcl_lite.capstone.seeds_file`, the
    seeds' results Chapter 9 prints."""
    from netcl_lite import capstone

    return [capstone.seeds_file()]


def context_files() -> list[Path]:
    """Every file :func:`context` digests: the library's sources and kernels, then :func:`data_files`
    (what a caller watches to know when to compute the context again)."""
    return fingerprint.library_sources() + data_files()


def context() -> str:
    """What every key of one build shares: :func:`netcl_lite.fingerprint.context` with :data:`PACKAGES`
    on the default device, the data files the library reads for the pages (:func:`data_files`), and
    the fixed environment every snippet, figure and notebook runs in (:data:`site_build.runner.HOW`)."""
    from .runner import HOW

    data = fingerprint.files_digest(data_files())
    return f"{fingerprint.context(packages=PACKAGES)}\nlibrary data {data}\nrun as {HOW}"


def write_entry(path: Path, data: bytes) -> None:
    """Put ``data`` at ``path``, an entry under the cache folder (of this store, or of the build's other
    caches: highlighted sources, compiled templates, the wheel, a dirty build's record), whole, as the
    name itself (:func:`netcl_lite.files.replace_entry`): a symlink, pipe or device left there is
    replaced, never written through, so no file outside the cache is ever overwritten or made. A folder
    at ``path``, even an empty one, is no entry the build wrote: refused (``IsADirectoryError`` naming
    it), left as it is."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            raise IsADirectoryError(errno.EISDIR, "a folder where the cache keeps an entry (a file)", os.fspath(path))
    except FileNotFoundError:
        pass
    replace_entry(path, data)


def read_entry(path: Path) -> bytes | None:
    """The bytes of the entry at ``path`` (under the cache folder: of the build's other caches, which
    :func:`write_entry` writes), or None when no entry is there to read: nothing at ``path``, or
    something that is no regular file of at most :data:`MAX_ENTRY_BYTES` (a named pipe, a device, a
    folder), which is never opened to wait on or read without end (:func:`netcl_lite.files.read_regular`)
    and is a miss, replaced by the write that follows. An entry that cannot be read (another user's,
    an I/O error) raises ``OSError``, for the caller to treat as a miss too."""
    try:
        return read_regular(path, MAX_ENTRY_BYTES, "an entry of the build's cache")
    except FileNotFoundError:                   # not stored, or removed by another build meanwhile
        return None
    except ValueError:                          # a pipe, a device, a folder, or no entry the build wrote
        return None


def _path(kind: str, item_key: str) -> Path:
    if not isinstance(kind, str) or not kind.isidentifier():
        raise ValueError(f"kind must be a plain name such as 'figure', got {kind!r}")
    if not isinstance(item_key, str) or not item_key.isalnum():
        raise ValueError(f"item_key must be a key from fingerprint.key() (letters and digits), "
                         f"got {item_key!r}")
    return fingerprint.cache_root() / "executed" / kind / item_key


def _digest(data: bytes, key: str) -> bytes:
    """The SHA-256 of ``key`` (its length first, so no key runs into the data) and ``data``."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must name what the entry holds (such as 'figure/<key>'), got {key!r}")
    name = key.encode("utf-8")
    return hashlib.sha256(b"%d:" % len(name) + name + data).hexdigest().encode()


def _entry_key(kind: str, item_key: str) -> str:
    """What an entry of the store is checked against: its kind and key."""
    return f"execution cache {kind}/{item_key}"


def entry(data: bytes, key: str) -> bytes:
    """``data`` as stored under ``key`` (what identifies it: its kind and key in the store, a place in
    another cache): a line with the SHA-256 of ``key`` and ``data`` and the length of ``data``, then
    ``data``."""
    return _ENTRY_MAGIC + _digest(data, key) + b" %d\n" % len(data) + data


def older_format(raw: bytes) -> bool:
    """Whether ``raw`` is an entry an older build wrote, in a format this one no longer reads: a miss to
    replace quietly (every entry of a cache that outlived an upgrade is one), not damage to report."""
    return raw.startswith(_ENTRY_PREFIX) and not raw.startswith(_ENTRY_MAGIC)


def payload(raw: bytes, key: str) -> bytes | None:
    """What an entry stored under ``key`` holds, or None when the entry does not match its own digest
    and length, or was written for another key (copied or renamed), or in an older format."""
    head, newline, data = raw.partition(b"\n")
    if not newline or not head.startswith(_ENTRY_MAGIC):
        return None
    digest, _, length = head[len(_ENTRY_MAGIC):].partition(b" ")
    if length != str(len(data)).encode() or digest != _digest(data, key):
        return None
    return data


def lookup(kind: str, item_key: str) -> bytes | None:
    """The stored output of ``kind`` under ``item_key``, or None: not stored (or removed by another build
    sharing the store as it is read), a rerun is forced, the entry cannot be read (logged: another user's
    in a shared store), or the entry does not match the digest written with it (emptied, truncated or edited), in which case
    it is removed (and logged) so that the item runs again."""
    path = _path(kind, item_key)
    if fingerprint.rerun_forced() or not path.is_file():
        return None
    try:
        raw = path.read_bytes()
    except FileNotFoundError:                   # another build sharing the store removed it since
        return None
    except OSError as err:                      # another user's entry in a shared store, an I/O error
        log.warning(f"execution cache: cannot read {path} ({err}); running it again")
        return None
    data = payload(raw, _entry_key(kind, item_key))
    if data is None:
        if older_format(raw):                   # a cache that outlived an upgrade: no damage to report
            log.info(f"execution cache: {path} was written by an older build; running it again")
        else:
            log.warning(f"execution cache: {path} does not match its digest (emptied, truncated, edited or "
                        f"written under another key); running it again")
        try:
            path.unlink(missing_ok=True)
        except OSError as err:
            log.warning(f"execution cache: cannot remove {path} ({err})")
    return data


def store(kind: str, item_key: str, data: bytes) -> None:
    """Keep ``data`` as the output of ``kind`` under ``item_key``, with its digest, atomically: a
    reader sees all or nothing, and two writers (processes or threads) never share a file. A place
    that cannot hold the entry (the cache folder or a kind's folder is a file, the entry is a folder,
    a full disk) is logged as a warning naming it, and the entry is not kept: what ran is still shown,
    and runs again in the next build."""
    if not isinstance(data, bytes):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    path = _path(kind, item_key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_entry(path, entry(data, _entry_key(kind, item_key)))     # a link at ``path`` replaced, not followed
    except (OSError, ValueError) as err:        # a folder at ``path``, a full disk ...
        log.warning(f"execution cache: cannot keep {path} ({err}); its output is shown but runs again "
                    f"next time (check NETCL_LITE_CACHE or the folder {fingerprint.cache_root()})")
