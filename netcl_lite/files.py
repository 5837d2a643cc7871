"""Reading and writing a user's files safely: whole or not at all, and only regular files.

* :func:`atomic_write` writes the bytes to a temporary file in the target's folder, flushes
  them to disk (``fsync``) and renames the temporary file over the target. An interrupted
  save (Ctrl-C, a kill, a full disk, an exception while serialising) leaves the previous file
  as it was, never an empty or half-written one. Temporary names carry the process id, the
  thread id and random characters, so two writers never share one, and stay valid names
  beside a target whose name is as long as the system allows.
* :func:`read_regular` reads a file only after ``os.stat`` says it is a regular file of at
  most ``max_bytes``: a device such as ``/dev/zero`` (endless), a named pipe (it would block)
  or a directory is refused with a ``ValueError`` that says what the path is, before it is
  opened.
* :func:`env_flag` reads a yes/no environment variable strictly.
* :func:`shown_path` names a path in a message on one line, quoted and escaped when it holds a
  character that would not show as itself (a newline, a terminal's escape, a bidi mark).

    >>> import os, tempfile; path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> atomic_write(path, b"hello\\n"); read_regular(path, 100, "a text file")
    b'hello\\n'
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
import threading
from pathlib import Path

from .checks import flag, nonnegative_int

__all__ = ["CacheEntryError", "atomic_write", "deferrable", "env_flag", "flush_to_disk", "fsync_folder", "kind_of", "make_entry_folder", "read_regular",
           "regular_size", "replace", "replace_entry", "shown_path", "signals_held", "temporary_name", "write_new"]

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def env_flag(name: str, default: bool = False) -> bool:
    """The yes/no environment variable ``name``: ``1``, ``true``, ``yes``, ``on`` are True and
    ``0``, ``false``, ``no``, ``off`` False (any case, spaces around ignored); unset or empty
    gives ``default``. Anything else raises ``ValueError`` naming the variable, so that a
    typo never means the opposite of what was meant; ``default`` must be a bool itself (TypeError
    otherwise: ``default="no"`` is not False)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str (an environment variable), got {name!r}")
    flag("default", default)
    raw = os.environ.get(name, "")
    value = raw.strip().lower()
    if not value:
        return default
    if value in TRUE_WORDS:
        return True
    if value in FALSE_WORDS:
        return False
    raise ValueError(f"{name}={raw!r} is not a yes/no value: use one of {', '.join(TRUE_WORDS)} "
                     f"or {', '.join(FALSE_WORDS)}, or unset it")


def shown_path(path: str | bytes | os.PathLike) -> str:
    """``path`` as a message names it: as it is when every character of it shows as itself, else
    quoted as Python's ``repr`` writes it, each control, format, separator or undecodable character
    written out (a newline as ``\\n``, ESC as ``\\x1b``, U+202E as ``\\u202e``), so that a file name
    can neither split a message over two lines nor reach a terminal as a control sequence. An empty
    name, or one with white space at an end, is quoted too.

    >>> print(shown_path("notes/a b.txt"), shown_path("no\\nsuch\\x1b[31mred"), shown_path(""))
    notes/a b.txt 'no\\nsuch\\x1b[31mred' ''
    """
    name = os.fsdecode(path)
    quoted = repr(name)
    return name if name and name == name.strip() and quoted[1:-1] == name else quoted


def visible(text: str) -> str:
    """``text`` with each character that would not show as itself (a control, format or separator
    character: a newline, ESC, U+202E) written out as Python writes it in a string (``\\n``,
    ``\\x1b``, ``\\u202e``), unquoted: a message quoting a command line word, a marker or an
    include keeps to one line and sends no control sequence to a terminal.

    >>> print(visible("--m=\\x1b[31mred\\nnext"))
    --m=\\x1b[31mred\\nnext
    """
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


#: the characters of a target's name that the name of its temporary file keeps (4 bytes each at most)
KEPT_CHARACTERS = 32


def temporary_name(path: str | os.PathLike) -> Path:
    """A name beside ``path`` for a temporary file that no other process or thread uses:
    ``.<name>.<pid>.<thread id>.<random>.tmp``. A name of more than :data:`KEPT_CHARACTERS`
    characters is cut to them and a hash of the whole, so that the temporary name stays under
    NAME_MAX (255 bytes: under 200 here) for any valid name, however long."""
    path = Path(path)
    name = path.name
    if len(name) > KEPT_CHARACTERS:
        name = f"{name[:KEPT_CHARACTERS]}.{hashlib.sha256(os.fsencode(name)).hexdigest()[:16]}"
    return path.with_name(f".{name}.{os.getpid()}.{threading.get_ident()}.{secrets.token_hex(4)}.tmp")


def fsync_folder(folder: Path) -> None:
    """Flush ``folder``'s entries (a name just made, renamed or linked there) to disk, where the platform
    gives folders a handle; nothing otherwise."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:                      # a platform without directory handles: the rename stands
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def flush_to_disk(path: str | os.PathLike) -> None:
    """``fsync`` the file at ``path`` (or every file in the folder ``path``, then the folder), so
    that a rename that follows never publishes data still only in memory."""
    path = Path(path)
    if path.is_dir():
        for child in path.iterdir():
            if child.is_file():
                flush_to_disk(child)
        fsync_folder(path)
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace(written: str | os.PathLike, path: str | os.PathLike) -> None:
    """Flush the finished temporary file ``written`` to disk and rename it over ``path`` (for a
    file that a library writes itself, such as safetensors' ``save_file``)."""
    flush_to_disk(written)
    os.replace(written, path)
    fsync_folder(Path(path).parent)


def atomic_write(path: str | os.PathLike, data: bytes | bytearray | memoryview) -> None:
    """Replace ``path`` by ``data`` all at once: written to a temporary file in the same folder,
    flushed to disk, then renamed over ``path`` (readers see the old file or the new one, never
    part of one). A symlink keeps pointing at the file, which is replaced. The new file gets the
    permission bits of the one it replaces (a private 0600 file stays private), a new name the
    umask's. A folder or a non-regular file at ``path`` is refused; on any failure the temporary
    file is removed and ``path`` is left as it was."""
    data = _bytes_of(data)
    _no_nul(path)
    raw = os.fsdecode(path)
    if raw.endswith(("/", os.sep)) or os.path.basename(raw) in (".", ".."):   # Path() drops a trailing '/.'
        raise ValueError(f"{shown_path(path)} names a folder (it ends with '/', '/.' or '/..'); give the path of a "
                         f"file to write")
    path = Path(path)
    if path.is_symlink():                # replace the file the link names, and keep the link
        path = Path(os.path.realpath(path))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise ValueError(f"{shown_path(path)} is {kind_of(path)}, not a regular file; give the path of a file to write")
    tmp = temporary_name(path)           # pid, thread and random characters: no one else's
    try:
        write_new(tmp, data, None if mode is None else stat.S_IMODE(mode) & 0o777)
        os.replace(tmp, path)
    except OSError as exc:               # named as the caller's path, not as the temporary file's or no file's
        _discard(tmp)                    # (a write that fails for a full disk, a quota or EIO names none)
        if exc.filename is None or os.fsdecode(exc.filename) == os.fsdecode(tmp):
            raise type(exc)(exc.errno, exc.strerror, os.fspath(path)) from None
        raise
    except BaseException:                # an interrupt between the two leaves no temporary file
        _discard(tmp)
        raise
    fsync_folder(path.parent)


def _discard(tmp: Path) -> None:
    """Remove the temporary file ``tmp`` as a failed write unwinds: a removal that fails too (a read-only
    file system says EROFS even for a name that is not there) must not replace the write's own error."""
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def _bytes_of(data):
    """``data`` (bytes, a bytearray or a memoryview) as a writer takes it: a memoryview that is not
    C-contiguous (of a strided array) as its bytes in order, which a file's ``write`` refuses with a
    BufferError; TypeError for anything else."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes (encode text first), got {type(data).__name__}")
    if isinstance(data, memoryview):
        try:
            data.nbytes
        except ValueError:                    # "operation forbidden on released memoryview object"
            raise ValueError("data is a released memoryview: pass a view of live bytes") from None
    return data.tobytes() if isinstance(data, memoryview) and not data.c_contiguous else data


def write_new(path: str | os.PathLike, data: bytes | bytearray | memoryview, mode: int | None = None) -> None:
    """Create ``path`` (``FileExistsError`` if the name exists: nothing is overwritten), write
    ``data`` and flush it to disk; on any failure or interrupt the file it created is removed, and
    its descriptor closed.
    ``mode``: the permission bits the file has before any data goes in (it is created readable by
    its owner alone, then given them), else the umask's."""
    data = _bytes_of(data)
    if mode is not None and (isinstance(mode, bool) or not isinstance(mode, int)):
        raise TypeError(f"mode must be permission bits (an int from 0 to 0o7777) or None, got "
                        f"{type(mode).__name__} {mode!r:.80}")
    if mode is not None and not 0 <= mode <= 0o7777:
        raise ValueError(f"mode must be permission bits (an int from 0 to 0o7777), got {mode!r}")
    fd = f = None
    try:
        with signals_held():             # a signal's exception waits until ``fd`` says the file is ours and
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else 0o600)
            f = os.fdopen(fd, "wb")      # ``f`` holds it open, to be closed whatever happens next
        with f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError, ValueError):
            if f is not None:
                f.close()                # again, if ``with`` closed it: no effect
            elif fd is not None:         # fdopen failed: the descriptor is still ours to close
                os.close(fd)
        if fd is not None:
            os.unlink(path)              # ours: O_EXCL created it
        raise


_held = 0                                 # depth of signals_held() in the main thread
_pending: list = []                       # (handler, signum) of the signals that arrived meanwhile


class signals_held:
    """``with signals_held():`` a signal whose handler was made by :func:`deferrable` (the command
    lines' Ctrl-C and termination handlers) is acted on when the block ends, not inside it: a block
    that creates a file and records that it did so cannot be cut between the two, and the caller's
    cleanup, which reads the record, removes the file. Elsewhere than the main thread, or for other
    handlers, it changes nothing (Python runs signal handlers in the main thread only)."""

    def __enter__(self):
        global _held
        self.main = threading.current_thread() is threading.main_thread()
        if self.main:
            _held += 1
        return self

    def __exit__(self, *exc):
        global _held
        if self.main:
            _held -= 1
            if _held == 0 and _pending:
                handler, signum = _pending[0]
                _pending.clear()
                handler(signum, None)    # raises the signal's exception here, after the block
        return False


def deferrable(handler):
    """``handler`` (a signal handler) made to wait while :class:`signals_held` is open."""
    def wait_or_handle(signum, frame):
        if _held:
            if not _pending:
                _pending.append((handler, signum))
            return None
        return handler(signum, frame)

    wait_or_handle.__wrapped__ = handler
    return wait_or_handle


def _no_nul(path) -> None:
    """Refuse, naming it, a path that holds a NUL character (no file system takes one; ``os`` says only
    "embedded null byte")."""
    text = os.fspath(path)
    if ("\0" if isinstance(text, str) else b"\0") in text:
        raise ValueError(f"{shown_path(path)}: a path cannot hold a NUL character; give the file's real name")


def kind_of(path: str | os.PathLike) -> str:
    """What ``path`` is, in words, following symlinks: ``'a regular file'``, ``'a directory'``,
    ``'a FIFO'`` (a named pipe), ``'a character device'`` ... or ``'missing'``."""
    _no_nul(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing" if not os.path.islink(path) else "a symlink to a missing file"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    for test, words in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                        (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words if not os.path.islink(path) else f"a symlink to {words} ({shown_path(os.path.realpath(path))})"
    return "not a regular file"


def regular_size(path: str | os.PathLike, max_bytes: int, what: str, too_large: str = "is it the right file?") -> int:
    """The size of ``path`` after checking, without opening it, that it is a regular file of at
    most ``max_bytes``: ``FileNotFoundError`` when missing, ``ValueError`` naming ``what`` the file
    should be otherwise; a file over ``max_bytes`` is refused with ``too_large`` as the advice (a
    compressor's input is split, a config file was likely the wrong one)."""
    nonnegative_int("max_bytes", max_bytes)
    _no_nul(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        extra = f" ({kind_of(path)})" if os.path.islink(path) else ""
        raise FileNotFoundError(f"{shown_path(path)}: no such file{extra}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{shown_path(path)} is {kind_of(path)}, not a regular file; {what} must be a regular file")
    if st.st_size > max_bytes:
        raise ValueError(f"{shown_path(path)} is {st.st_size:,} bytes; {what} is read only up to {max_bytes:,} bytes: "
                         f"{too_large}")
    return st.st_size


#: the most bytes :func:`read_regular` asks one read for
_READ_PIECE = 1 << 24


def read_regular(path: str | os.PathLike, max_bytes: int, what: str, too_large: str = "is it the right file?") -> bytes:
    """The bytes of ``path``, read only if it is a regular file of at most ``max_bytes``
    (:func:`regular_size`, ``too_large`` its advice past them). It is opened without blocking and
    checked again once open, so a file swapped for a pipe or a device in between is refused too."""
    regular_size(path, max_bytes, what, too_large)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{shown_path(path)} is not a regular file; {what} must be a regular file")
        # a read of max_bytes + 1 would allocate that much at once (a limit of 2**36 is a MemoryError, one of
        # 2**63 an OverflowError): read what the file holds, a bounded piece at a time, to its end or the limit
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = f.read(min(max_bytes + 1 - size, _READ_PIECE, st.st_size + 1 if not chunks else _READ_PIECE))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    if len(data) > max_bytes:
        raise ValueError(f"{shown_path(path)} grew past {max_bytes:,} bytes while being read; {what} is read "
                         f"only up to {max_bytes:,} bytes")
    return data


class CacheEntryError(ValueError):
    """One entry of a cache the library keeps is something that it cannot use or replace (a folder with
    something in it where a file belongs, a lock file that is a folder): the message names that entry and
    says to remove it; the cache folder itself is not at fault, so this is no ``OSError`` (which a command
    line reports as a cache folder that cannot be made or written)."""


def npy_header(member) -> tuple:
    """(shape, dtype) that a ``.npy`` file's header declares, read from the open binary file ``member``
    and leaving it at the array's first byte, before any of the array is read (``np.load`` allocates
    what the header says first); ``ValueError`` for a format version other than 1.0 and 2.0."""
    from numpy.lib import format as npy

    version = npy.read_magic(member)
    if version == (1, 0):
        shape, _, dtype = npy.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, _, dtype = npy.read_array_header_2_0(member)
    else:
        raise ValueError(f"format version {version}")
    return shape, dtype


def make_entry_folder(path: str | os.PathLike, what: str) -> None:
    """Make the folder ``path`` of a cache the library keeps (and the folders above it) unless it is there;
    a file, link or anything else that is no folder at ``path`` is a :class:`CacheEntryError` naming it
    (``what`` the folder holds, in words), not blamed on the cache folder it stands in."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        if not os.path.lexists(path) or os.path.isdir(path):
            raise                                # a file further up: the cache folder's own fault
        raise CacheEntryError(f"{shown_path(path)} is {kind_of(path)}, where the cache keeps {what} (a folder); "
                              f"remove it and run again") from None


def folder_entry_error(path: str | os.PathLike, what: str) -> CacheEntryError | None:
    """The :class:`CacheEntryError` for the cache entry ``path`` (``what`` it should be, in words) after
    :func:`replace_entry` failed because a folder with something in it is there; None when ``path`` is no
    such folder (the failure was the system's: a full disk, a read-only cache)."""
    if os.path.islink(path) or not os.path.isdir(path):
        return None
    return CacheEntryError(f"{shown_path(path)} is a folder with something in it, where the cache keeps {what} "
                           f"(a file); remove that folder and run again")


def replace_entry(path: str | os.PathLike, data: bytes | bytearray | memoryview) -> None:
    """Replace the name ``path``, an entry of a cache the library keeps, by a regular file holding ``data``,
    all at once as :func:`atomic_write` does, but as a name in its folder: whatever is there is replaced
    itself, never written through. A symlink is replaced, not followed (the file it names is left as it
    was), and so are a named pipe, a device or a socket; an empty folder is removed first. A folder with
    something in it is refused (``OSError`` naming ``path``), as is any failure to write, named by ``path``
    when the system named no file or the temporary one. A regular file keeps its permission bits with its
    owner's read and write added (a damaged entry of mode 000 is not written back unreadable), a new file
    gets the umask's. For a user's own path, whose link should keep pointing at the file it names,
    use :func:`atomic_write`."""
    data = _bytes_of(data)
    _no_nul(path)
    path = Path(path)
    try:
        st = os.lstat(path)                  # the entry itself, not what a link there names
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        try:
            os.rmdir(path)
        except OSError as exc:
            raise type(exc)(exc.errno, f"{exc.strerror} (a folder where the cache keeps a file: remove it)",
                            os.fspath(path)) from None
    # a regular file's group and other bits are kept (a cache made private stays private, one shared with a
    # group stays shared), with its owner's read and write added: an entry replaced because it could not be
    # read (mode 000, or write-only) must not be written back as unreadable, found damaged by every run
    mode = (stat.S_IMODE(st.st_mode) & 0o777) | 0o600 if st is not None and stat.S_ISREG(st.st_mode) else None
    tmp = temporary_name(path)
    try:
        write_new(tmp, data, mode)
        os.replace(tmp, path)                # rename(2) replaces the name: a link there, not its target
    except OSError as exc:
        _discard(tmp)
        if exc.filename is None or os.fsdecode(exc.filename) == os.fsdecode(tmp):
            raise type(exc)(exc.errno, exc.strerror, os.fspath(path)) from None
        raise
    except BaseException:
        _discard(tmp)
        raise
    fsync_folder(path.parent)
