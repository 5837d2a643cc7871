"""Round 35d: the compressor's command line used as a hostile or careless user would, probing the
fixes of round 33d (the lock file, the forked-child refusal, cache entries replaced as names).

1. Without ``--model``, the default model's lock (``capstone/<key>.lock`` in the cache) held by another
   process (one training the model, or one stopped with Ctrl-Z, or a stale holder) makes the command
   wait for ever without a word: ``flock(LOCK_EX)`` blocks and nothing is written to standard error.
   It should say that it waits for another process's lock, naming the file (or give up with a message).
2. ``netcl_lite.compression.main`` called in a child forked (``multiprocessing``'s ``fork`` start
   method) from a process that used the device ends with a ``RuntimeError`` traceback from
   ``forking.check`` instead of the command line's message and exit status 1.
3. ``files.replace_entry`` keeps the permission bits of the entry it replaces, even of a damaged one
   that could not be read: a stored corpus of mode 000 (or write-only 0200) is "damaged" for an
   ordinary user (``cannot be read (Permission denied)``), parsed again, and written back with mode
   000 again, so every later run warns and parses the library again: the cache never heals.
4. Cache entries refused by the system are blamed on the whole cache folder, with the wrong advice
   ("cannot be made or written ...; set NETCL_LITE_CACHE to a folder you can write"), and the entry's
   own path is dropped: a stored corpus that is a folder with something in it, or the lock file that is
   a folder (``_lock_file`` promises a ``ValueError`` naming anything but a regular file there; a folder
   gives ``OSError: Is a directory`` instead).
5-9. A read-only lock file (shared or read-only-mounted cache), a damaged ``ids.npz`` blamed on the
   machine's memory, a relative ``POCL_CACHE_DIR`` leaving a folder where the command runs, ``--help``
   to a full standard output exiting 0, and ``PYTHONWARNINGS=error`` turning a repairable cache entry
   into a traceback: each test's docstring says what happens and what should.
"""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cli_model import TEXT, environment, seed_corpus, write_model_folder

_KEY = textwrap.dedent("""
    from netcl_lite import capstone
    from netcl_lite.core.device import manager
    d = capstone.data()
    print(capstone.run_key(manager.default().queue, d.train_text + "\\0" + d.held_out_text))
""")


def _lock_path(cache: Path, corpus_cache: Path) -> Path:
    """The default model's lock file in ``cache``, which is given the session's stored corpus first
    (finding the run's key reads the corpus)."""
    seed_corpus(cache, corpus_cache)
    env = environment(NETCL_LITE_CACHE=str(cache))
    key = subprocess.run([sys.executable, "-c", _KEY], capture_output=True, text=True, timeout=300, env=env)
    assert key.returncode == 0, key.stderr
    (cache / "capstone").mkdir(parents=True, exist_ok=True)
    return cache / "capstone" / f"{key.stdout.strip()}.lock"


def _corpus_entry(cache: Path, corpus_cache: Path) -> Path:
    """The stored corpus's path in ``cache``, copied there from the session's (``seed_corpus``)."""
    return seed_corpus(cache, corpus_cache)


def _cli(*args, cache: Path, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netcl_lite.compression", *map(str, args)], cwd=cwd,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                          env=environment(NETCL_LITE_CACHE=str(cache)))


@pytest.mark.skipif(not hasattr(fcntl, "flock"), reason="flock is POSIX's")
def test_a_lock_held_by_another_process_is_said_not_waited_on_in_silence(tmp_path, corpus_cache):
    cache = tmp_path / "cache"
    lock = _lock_path(cache, corpus_cache)
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    with open(lock, "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)             # another process training, or stopped, holds it
        proc = subprocess.Popen([sys.executable, "-m", "netcl_lite.compression", "compress", str(src),
                                 str(tmp_path / "out")], cwd=tmp_path, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=environment(NETCL_LITE_CACHE=str(cache)))
        err, deadline = b"", time.monotonic() + 45
        try:                                     # read until the lock is named (or 45 s), then stop it
            while lock.name.encode() not in err and time.monotonic() < deadline:
                ready, _, _ = select.select([proc.stderr], [], [], 1.0)
                if ready:
                    chunk = os.read(proc.stderr.fileno(), 65536)
                    if not chunk:
                        break
                    err += chunk
        finally:
            proc.kill()
            proc.communicate()
    said = err.decode(errors="replace")
    assert lock.name in said, (f"compress waited 45 s on a lock another process holds without naming it; "
                               f"standard error: {said[-2000:]!r}")


_FORKED_MAIN = textwrap.dedent("""
    import io, multiprocessing as mp, os, sys, contextlib
    sys.path.insert(0, {tests!r})
    from cli_model import TEXT, tiny_model
    from netcl_lite.core.device import manager
    from netcl_lite import compression as cz

    model, tok, _ = tiny_model(manager.default().queue)
    cz.compress(TEXT.encode(), model, tok, mix=False)          # the device is in use here

    def child(args, write):
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                said = f"returned {{cz.main(args)!r}}: {{err.getvalue()}}"
        except BaseException as exc:
            said = f"raised {{type(exc).__name__}}: {{exc}}"
        os.write(write, said.encode()[:4000])
        os._exit(0)

    read, write = os.pipe()
    p = mp.get_context("fork").Process(target=child, args=({args!r}, write))
    p.start()
    p.join(60)
    if p.is_alive():
        p.kill(); p.join(); print("HUNG"); sys.exit(0)
    os.close(write)
    print(os.read(read, 4000).decode())
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")
def test_the_command_line_in_a_forked_child_says_so_without_a_traceback(tmp_path, queue):
    folder = write_model_folder(queue, tmp_path / "model")
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    args = ["compress", str(src), str(tmp_path / "out"), "--model", str(folder)]
    script = _FORKED_MAIN.format(tests=str(Path(__file__).resolve().parent), args=args)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=environment())
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout.strip()
    assert said.startswith("returned 1:") and "fork" in said, said
    assert not (tmp_path / "out").exists()


def test_a_damaged_unreadable_cache_entry_is_not_written_back_unreadable(tmp_path, corpus_cache, queue):
    cache = tmp_path / "cache"
    entry = _corpus_entry(cache, corpus_cache)
    entry.write_bytes(b"damaged\n")
    entry.chmod(0o000)                                # an ordinary user cannot read it: "damaged"
    folder = write_model_folder(queue, tmp_path / "model")
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    run = _cli("compress", src, tmp_path / "out", "--model", folder, cache=cache, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    mode = entry.stat().st_mode & 0o777
    assert mode & 0o600 == 0o600, (f"the corpus entry was written back with mode {mode:03o}: its owner still "
                                   "cannot read it, so every run finds it damaged and parses the library again")


def test_a_stored_corpus_that_is_a_full_folder_is_named_not_the_cache_folder(tmp_path, corpus_cache, queue):
    cache = tmp_path / "cache"
    entry = _corpus_entry(cache, corpus_cache)
    entry.unlink()
    entry.mkdir()
    (entry / "kept").write_text("x")
    folder = write_model_folder(queue, tmp_path / "model")
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    run = _cli("compress", src, tmp_path / "out", "--model", folder, cache=cache, cwd=tmp_path, timeout=300)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    last = run.stderr.strip().splitlines()[-1]
    assert entry.name in last, f"the message does not name the entry at fault ({entry}): {last}"
    assert "set NETCL_LITE_CACHE to a folder you can write" not in last, last


def test_a_lock_file_that_is_a_folder_is_refused_naming_it(tmp_path, corpus_cache):
    cache = tmp_path / "cache"
    lock = _lock_path(cache, corpus_cache)
    lock.mkdir()
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    try:
        run = _cli("compress", src, tmp_path / "out", cache=cache, cwd=tmp_path, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("compress ran on past 120 s (training?) with its lock file a folder")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    last = run.stderr.strip().splitlines()[-1]
    assert lock.name in last, f"the message does not name the lock file ({lock}): {last}"


def test_a_lock_file_the_user_may_only_read_is_still_locked(tmp_path, monkeypatch):
    """5. A cache holding the trained default model that this user may only read (a shared cache
    owned by another user, or on a read-only mount: ``mount --bind -o ro``) cannot be used without
    ``--model``: the lock, which is only ever ``flock``-ed, is opened ``O_RDWR | O_CREAT``, which
    fails (EACCES, EROFS) although the lock file is there and ``flock`` works on a descriptor opened
    for reading. Reproduced on a read-only bind mount of a warm cache: ``compress IN OUT`` says
    "its cache folder ... cannot be made or written (Read-only file system)", while ``--model DIR``
    on the same cache works. Here the system's refusal to open for writing is simulated (root passes
    permission checks)."""
    import errno

    from netcl_lite import capstone

    lock = tmp_path / "key.lock"
    lock.write_bytes(b"")
    real = os.open

    def read_only(path, flags, *rest, **kw):
        if os.fspath(path) == os.fspath(lock) and flags & (os.O_RDWR | os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real(path, flags, *rest, **kw)

    monkeypatch.setattr(os, "open", read_only)
    with capstone._lock_file(lock) as held:
        fcntl.flock(held, fcntl.LOCK_EX)


def _warm_run_copy(cache: Path, corpus_cache: Path) -> Path:
    """A copy in ``cache`` of the default model's trained run from this environment's cache (the
    tests' NETCL_LITE_CACHE); the test is skipped when that cache has none (training takes minutes)."""
    import shutil

    lock = _lock_path(cache, corpus_cache)                     # makes the corpus in ``cache`` too
    from netcl_lite.fingerprint import cache_root

    warm = cache_root() / "capstone" / lock.name[:-len(".lock")]
    if not (warm / "done.json").is_file():
        pytest.skip(f"no trained default model in {cache_root()} (training it takes minutes)")
    folder = cache / "capstone" / warm.name
    shutil.copytree(warm, folder)
    return folder


def test_a_damaged_ids_entry_of_the_default_model_is_not_called_out_of_memory(tmp_path, corpus_cache):
    """6. The trained run's ``ids.npz`` (the encoded training text, kept with a digest of its own, not
    among ``done.json``'s) damaged so that an array's header claims 10**15 tokens (an 828-byte file):
    ``np.load`` allocates the claimed array first, the ``MemoryError`` is not caught by the reader (it
    catches OSError, ValueError, KeyError, EOFError), and ``compress IN OUT`` without ``--model`` says
    "out of memory: this machine has too little free memory for the model, the coder and the input".
    The entry should be encoded again (as any ids.npz that does not match its digest is) or named."""
    import io
    import zipfile

    import numpy as np
    from numpy.lib import format as npformat

    cache = tmp_path / "cache"
    folder = _warm_run_copy(cache, corpus_cache)
    with zipfile.ZipFile(folder / "ids.npz", "w") as z:
        for name in ("train", "held_out"):
            head = io.BytesIO()
            npformat.write_array_header_1_0(head, {"descr": "<i8", "fortran_order": False, "shape": (10**15,)})
            z.writestr(f"{name}.npy", head.getvalue() + bytes(64))
        digest = io.BytesIO()
        np.save(digest, np.array("0" * 64))
        z.writestr("sha256.npy", digest.getvalue())
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    run = _cli("compress", src, tmp_path / "out", cache=cache, cwd=tmp_path, timeout=300)
    assert "out of memory" not in run.stderr, run.stderr[-2000:]
    assert run.returncode == 0 or "ids.npz" in run.stderr, run.stderr[-2000:]


def test_a_relative_pocl_cache_dir_leaves_no_folder_where_the_command_runs(tmp_path, queue):
    """7. (Minor.) ``POCL_CACHE_DIR=kernels python -m netcl_lite.compression compress IN OUT`` leaves
    a folder ``kernels/`` (PoCL's kernel cache, mode 0700) in whatever folder the command ran in: PoCL
    takes the relative path as it is. The library refuses a relative ``NETCL_LITE_CACHE`` and ignores a
    relative ``XDG_CACHE_HOME`` for just this reason (each process would make its cache in its own
    working folder); a relative ``POCL_CACHE_DIR`` should be refused naming the variable too (or made
    absolute), not leave a folder behind in the user's working folder."""
    folder = write_model_folder(queue, tmp_path / "model")
    work = tmp_path / "work"
    work.mkdir()
    src = work / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", "in.txt", "out",
                          "--model", str(folder)], cwd=work, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=300, env=environment(POCL_CACHE_DIR="kernels"))
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    if run.returncode == 1:
        assert "POCL_CACHE_DIR" in run.stderr, run.stderr[-2000:]
    left = sorted(p.name for p in work.iterdir() if p.name not in ("in.txt", "out"))
    assert left == [], f"the command left {left} in the folder it ran in"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="/dev/full is Linux's")
def test_help_that_cannot_be_written_is_not_exit_status_0(tmp_path):
    """8. ``python -m netcl_lite.compression --help > /dev/full`` (standard output on a full disk)
    writes nothing, says nothing and exits 0: the help's failed write is swallowed. The command's own
    result to a full standard output (``compress IN - > /dev/full``) says "standard output: No space
    left on device", exit status 1; the help should fail the same way (as ``cat --help > /dev/full``
    does), not report success for text that never reached its file."""
    with open("/dev/full", "wb") as full:
        run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "--help"], cwd=tmp_path,
                             stdin=subprocess.DEVNULL, stdout=full, stderr=subprocess.PIPE, text=True,
                             timeout=120, env=environment())
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert run.returncode != 0 and "standard output" in run.stderr, (run.returncode, run.stderr[-2000:])


def test_a_damaged_cache_entry_under_pythonwarnings_error_gives_no_traceback(tmp_path, corpus_cache, queue):
    """9. ``PYTHONWARNINGS=error`` (a strict CI's setting) turns the library's warning about a damaged
    cache entry it is about to repair (here a stored corpus made an empty folder, which ``replace_entry``
    replaces) into an exception nothing catches: ``compress IN OUT --model DIR`` ends with a
    ``UserWarning`` traceback from ``corpus._damaged``, exit status 1, OUT not written. The command
    should repair the entry and code IN, or say what is wrong in one line, never a traceback."""
    cache = tmp_path / "cache"
    entry = _corpus_entry(cache, corpus_cache)
    entry.unlink()
    entry.mkdir()
    folder = write_model_folder(queue, tmp_path / "model")
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", str(src), str(tmp_path / "out"),
                          "--model", str(folder)], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=300, env=environment(NETCL_LITE_CACHE=str(cache), PYTHONWARNINGS="error"))
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert run.returncode in (0, 1), run.stderr[-2000:]


def test_a_damaged_ids_entry_is_encoded_again_without_a_trained_model(tmp_path):
    """6, where no trained default model is at hand (the test above needs one): the run's reader of
    ``ids.npz`` given the same damaged file reads it as damage and encodes the text again, instead of
    letting NumPy ask for the 10**15 tokens its header claims."""
    import io
    import types
    import warnings
    import zipfile

    import numpy as np
    from numpy.lib import format as npformat

    from netcl_lite import capstone
    from netcl_lite.text import BPETokenizer

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "done.json").write_text("{}", encoding="utf-8")
    with zipfile.ZipFile(folder / "ids.npz", "w") as z:
        for name in ("train", "held_out"):
            head = io.BytesIO()
            npformat.write_array_header_1_0(head, {"descr": "<i8", "fortran_order": False, "shape": (10**15,)})
            z.writestr(f"{name}.npy", head.getvalue() + bytes(64))
    tok = BPETokenizer()
    d = types.SimpleNamespace(train_text="text to train on", validation_text="text held out")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # "does not match its digest; encoding the text again"
        train, held_out = capstone._stored_ids(folder, tok, d)
    assert train.tolist() == tok.encode_ordinary(d.train_text)
    assert held_out.tolist() == tok.encode_ordinary(d.validation_text)
