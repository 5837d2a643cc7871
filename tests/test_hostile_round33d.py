"""Round 33d: the compressor's public API and command line used as a hostile or careless user would.

1. A process that has loaded a model and coded with it, then forks (``multiprocessing`` with the
   ``fork`` start method, the default on Linux before Python 3.14), gives a child whose first call of
   :func:`~netcl_lite.compression.compress` hangs for ever: the child inherits the OpenCL context but
   not PoCL's worker threads, so the first read of a device buffer waits for work no thread will do.
   It should end: code the bytes, or refuse at once with an error that says the device belongs to the
   parent process (fork before the device is made, or use the ``spawn`` start method).
2. ``NETCL_LITE_CACHE`` on a full disk (or over its quota: a write that fails with no file name, as
   ``write`` does): ``compress IN OUT --model DIR`` ended with a traceback of ``OSError: [Errno 28] No
   space left on device`` from writing the primer's corpus into the cache, and ``decompress`` said only
   ``No space left on device (while coding IN)``, which names IN, not the cache folder that is full.
   Either should say the cache folder cannot be written (or go on without caching), exit status 1.
3. A cache whose stored corpus file has become a folder (a damaged cache) was blamed on the wrong
   thing: ``compress`` said ``--model DIR: its tokenizer.json cannot encode Chapter 9's training text``
   and ``decompress`` put IN's name in front of the message, though neither the model nor IN is at
   fault. It should name the cache (or read around the damaged entry).
4. The same entry made a named pipe hangs ``compress`` for ever (the corpus is read with a plain
   ``read_bytes``, which opens the pipe and waits for a writer), and made a symlink to ``/dev/zero``
   reads until memory runs out, then says ``out of memory ... too little for the model, the coder and
   the input``. The cache's files should be read as IN is (:func:`netcl_lite.files.read_regular`:
   only a regular file, of bounded size), and the entry named or read around.
5. Without ``--model``, the default model's lock file in the cache (``capstone/<key>.lock``), made a
   named pipe, hangs the command for ever: ``open(..., "w")`` waits for a reader. It should be
   refused naming the file.
6. Under 2: :func:`netcl_lite.files.atomic_write` names its error by the caller's path only when the
   error named the temporary file; a failed ``write`` (ENOSPC, EDQUOT, EIO) names no file, so the
   ``OSError`` that reaches the caller of ``compress`` (writing the primer's corpus) or the command line
   names nothing. It should name the path being written.
7. (Minor.) A model folder whose ``config.json`` differs only in ``initializer_range`` (the standard
   deviation the weights were drawn from before training; nothing computes with it once they are
   loaded) cannot decompress a blob that the identical weights wrote: the fingerprint hashes every
   config field, and the blob is refused as "compressed with another model".
8. A stored corpus whose digest line matches its body but whose JSON nests deeper than the parser
   recurses (``[[[[...``) ends ``compress`` with a ``RecursionError`` traceback: the reader of the
   cache catches ``ValueError`` only. It should parse the corpus again (or name the cache). The default
   model's ``log.json`` (its digest in ``done.json`` updated to match) does the same to the command
   line without ``--model``: ``json.loads`` of it is not guarded either.
9. The default model's lock file (``capstone/<key>.lock`` in the cache) is opened with ``open(..., "w")``,
   which follows a symlink and truncates its target: a lock that is a symlink to another file (a
   cache folder shared with others, ``NETCL_LITE_CACHE=/tmp/...``) empties that file each time the
   command line runs without ``--model``: silent data loss. A lock is only locked, never written: it
   should be opened without truncating and without following a link (``O_NOFOLLOW``), or refused.
10. Likewise the primer's corpus: a stored corpus that is a symlink to a file outside the cache does not
    match its digest, so it is parsed again and written back with ``atomic_write``, which replaces the
    file the link names: the user's file is overwritten with 1.7 MB of the corpus's JSON by
    ``compress IN OUT --model DIR``. A cache entry should be replaced as a name in the cache (the link
    itself), never through it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from cli_model import environment, listing, seed_corpus, write_model_folder

#: the parent codes once (the device is in use), forks, and the child codes again; the parent reports
#: what the child did, or that it was still running after 30 s
_FORKED = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {tests!r})
    from cli_model import TEXT, tiny_model
    from netcl_lite.core.device import manager
    from netcl_lite import compression as cz

    model, tok, _ = tiny_model(manager.default().queue)
    data = TEXT.encode() * 2
    blob = cz.compress(data, model, tok, mix=False)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            said = "same" if cz.compress(data, model, tok, mix=False) == blob else "other bytes"
        except BaseException as exc:
            said = f"raised {{type(exc).__name__}}: {{exc}}"
        os.write(write, said.encode()[:4000])
        os._exit(0)
    os.close(write)
    for _ in range(300):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("HUNG")
        sys.exit(0)
    print(os.read(read, 4000).decode() or f"no word from the child (status {{status}})")
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")
def test_compress_in_a_child_forked_after_the_model_ran_does_not_hang():
    from pathlib import Path

    script = _FORKED.format(tests=str(Path(__file__).resolve().parent))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=environment())
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout.strip()
    assert said != "HUNG", "compress in a forked child still ran after 30 s (it waits on the parent's device)"
    assert said == "same" or (said.startswith(("raised ValueError", "raised RuntimeError"))
                              and ("fork" in said or "process" in said)), said


#: ``netcl_lite.files.write_new`` made to fail as a write on a full disk does (ENOSPC, no file name) for
#: every file under the cache folder ``{cache}``, then the command line run as ``python -m``
_FULL_CACHE = textwrap.dedent("""
    import errno, os, runpy, sys
    import netcl_lite.files as files
    real = files.write_new
    def write_new(path, data, mode=None):
        if os.fspath(path).startswith({cache!r}):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data, mode)
    files.write_new = write_new
    sys.argv = ["compression", *{args!r}]
    runpy.run_module("netcl_lite.compression", run_name="__main__", alter_sys=True)
""")


def _with_full_cache(cache, *args, cwd):
    script = _FULL_CACHE.format(cache=str(cache), args=[str(a) for a in args])
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=300, env=environment(NETCL_LITE_CACHE=str(cache)))


def test_a_cache_folder_on_a_full_disk_is_named_not_a_traceback(queue, tmp_path):
    from cli_model import TEXT

    folder = write_model_folder(queue, tmp_path / "model")
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    cache = tmp_path / "cache"                   # empty: the primer's corpus is written into it
    cache.mkdir()
    blob = tmp_path / "in.nclz"
    done = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", src, blob, "--model", folder],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=environment())
    assert done.returncode == 0, done.stderr     # a mixed blob, made with the session's cache
    for args, out in ((("compress", src, tmp_path / "out1"), tmp_path / "out1"),
                      (("decompress", blob, tmp_path / "out2"), tmp_path / "out2")):
        run = _with_full_cache(cache, *args, "--model", folder, cwd=tmp_path)
        assert "Traceback" not in run.stderr, run.stderr[-3000:]
        if run.returncode == 0:                  # the cache is a cache: going on without it is fine
            assert out.exists()
            continue
        assert run.returncode == 1 and not out.exists(), run.stderr
        assert "cache" in run.stderr and str(cache) in run.stderr, run.stderr
        assert ".tmp" not in "".join(listing(tmp_path))


def test_a_damaged_cache_entry_is_not_blamed_on_the_model_or_the_input(queue, tmp_path, corpus_cache):
    from cli_model import TEXT

    folder = write_model_folder(queue, tmp_path / "model")
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    cache = tmp_path / "cache"
    blob = tmp_path / "in.nclz"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "netcl_lite.compression", *map(str, args), "--model", folder],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env=environment(NETCL_LITE_CACHE=str(cache)))

    seed_corpus(cache, corpus_cache)             # the primer's corpus, as a first run stores it
    done = cli("compress", src, blob)
    assert done.returncode == 0, done.stderr
    stored = list((cache / "corpus").glob("*.json"))
    assert len(stored) == 1, stored
    stored[0].unlink()
    stored[0].mkdir()                            # the entry is a folder now
    for args, out in ((("compress", src, tmp_path / "out1"), tmp_path / "out1"),
                      (("decompress", blob, tmp_path / "out2"), tmp_path / "out2")):
        run = cli(*args)
        assert "Traceback" not in run.stderr, run.stderr[-3000:]
        if run.returncode == 0:                  # read around the damaged entry: fine
            continue
        assert run.returncode == 1 and not out.exists(), run.stderr
        assert "tokenizer.json" not in run.stderr, run.stderr
        assert f"compression: {args[1].name}:" not in run.stderr, run.stderr
        assert str(cache) in run.stderr, run.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes and /dev/zero are POSIX's")
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_cache_entry_that_is_a_pipe_or_a_device_is_neither_waited_on_nor_read_for_ever(queue, tmp_path, corpus_cache, kind):
    import resource

    from cli_model import TEXT

    folder = write_model_folder(queue, tmp_path / "model")
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    cache = tmp_path / "cache"

    def cli(*args, timeout=300):
        def limit():                             # a read for ever ends in MemoryError, not the machine's swap
            resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        return subprocess.run([sys.executable, "-m", "netcl_lite.compression", *map(str, args), "--model", folder],
                              cwd=tmp_path, capture_output=True, text=True, timeout=timeout, preexec_fn=limit,
                              env=environment(NETCL_LITE_CACHE=str(cache)))

    seed_corpus(cache, corpus_cache)             # the primer's corpus, as a first run stores it
    done = cli("compress", src, tmp_path / "first")
    assert done.returncode == 0, done.stderr
    stored = list((cache / "corpus").glob("*.json"))
    assert len(stored) == 1, stored
    stored[0].unlink()
    if kind == "fifo":
        os.mkfifo(stored[0])
    else:
        stored[0].symlink_to("/dev/zero")
    out = tmp_path / "out"
    try:
        run = cli("compress", src, out, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"compress waited for more than 60 s on a cache entry that is {kind}")
    assert "Traceback" not in run.stderr and "out of memory" not in run.stderr, run.stderr[-3000:]
    if run.returncode == 0:                      # read around the entry: fine
        return
    assert run.returncode == 1 and not out.exists(), run.stderr
    assert str(cache) in run.stderr, run.stderr


_KEY = textwrap.dedent("""
    from netcl_lite import capstone
    from netcl_lite.core.device import manager
    d = capstone.data()
    print(capstone.run_key(manager.default().queue, d.train_text + "\\0" + d.held_out_text))
""")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX's")
def test_the_default_model_s_lock_file_made_a_pipe_is_not_waited_on_for_ever(tmp_path, corpus_cache):
    from cli_model import TEXT

    cache = tmp_path / "cache"
    seed_corpus(cache, corpus_cache)             # finding the run's key reads the corpus
    env = environment(NETCL_LITE_CACHE=str(cache))
    key = subprocess.run([sys.executable, "-c", _KEY], capture_output=True, text=True, timeout=300, env=env)
    assert key.returncode == 0, key.stderr
    (cache / "capstone").mkdir(parents=True)
    lock = cache / "capstone" / f"{key.stdout.strip()}.lock"
    os.mkfifo(lock)
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    try:
        run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", src, tmp_path / "out"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"compress waited for more than 60 s on the lock file {lock}, a named pipe")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert lock.name in run.stderr, run.stderr


def test_atomic_write_names_the_path_when_a_write_fails_without_a_file_name(tmp_path, monkeypatch):
    import errno

    from netcl_lite import files

    def full(path, data, mode=None):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "write_new", full)
    target = tmp_path / "entry.json"
    with pytest.raises(OSError) as caught:
        files.atomic_write(target, b"data")
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename is not None and str(caught.value.filename) == str(target), caught.value
    assert list(tmp_path.iterdir()) == []


def test_a_config_that_differs_only_in_initializer_range_decodes_the_blob(queue, tmp_path):
    import json

    from cli_model import TEXT

    from netcl_lite import compression as cz
    from netcl_lite.nn import DecoderLM
    from netcl_lite.text import BPETokenizer

    first = write_model_folder(queue, tmp_path / "a")
    second = tmp_path / "b"
    second.mkdir()
    for name in ("model.safetensors", "tokenizer.json"):
        (second / name).write_bytes((first / name).read_bytes())
    config = json.loads((first / "config.json").read_text(encoding="utf-8"))
    config["initializer_range"] = 0.05             # how the weights were drawn, not what they are
    (second / "config.json").write_text(json.dumps(config), encoding="utf-8")
    tok = BPETokenizer.load(first / "tokenizer.json")
    a, b = DecoderLM.from_pretrained(first, queue=queue), DecoderLM.from_pretrained(second, queue=queue)
    data = TEXT.encode()
    blob = cz.compress(data, a, tok, mix=False)
    assert blob[5] == cz.MODEL
    assert cz.decompress(blob, b, tok) == data


def test_a_stored_corpus_nested_too_deep_is_no_traceback(queue, tmp_path, corpus_cache):
    import hashlib

    from cli_model import TEXT

    folder = write_model_folder(queue, tmp_path / "model")
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    cache = tmp_path / "cache"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "netcl_lite.compression", *map(str, args), "--model", folder],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env=environment(NETCL_LITE_CACHE=str(cache)))

    seed_corpus(cache, corpus_cache)             # the primer's corpus, as a first run stores it
    done = cli("compress", src, tmp_path / "first")
    assert done.returncode == 0, done.stderr
    stored = list((cache / "corpus").glob("*.json"))
    assert len(stored) == 1, stored
    body = b"[" * 100_000                        # its digest matches: only parsing it shows it is no corpus
    stored[0].write_bytes(b"netcl-lite corpus sha256=" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    out = tmp_path / "out"
    run = cli("compress", src, out)
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert run.returncode == 0 and out.read_bytes() == (tmp_path / "first").read_bytes(), run.stderr


_LOCK = textwrap.dedent("""
    import os, sys
    from netcl_lite import capstone
    from netcl_lite.core.device import manager
    d = capstone.data()
    key = capstone.run_key(manager.default().queue, d.train_text + "\\0" + d.held_out_text)
    root = capstone.cache_root() / "capstone"
    root.mkdir(parents=True, exist_ok=True)
    os.symlink(sys.argv[1], root / f"{key}.lock")
    def stop(folder):                            # the lock is open now: no training
        raise SystemExit(0)
    capstone._check_run_folder = stop
    try:
        capstone.run()
    except (OSError, ValueError) as exc:         # refusing the link is fine too
        print("refused:", exc)
""")


def test_the_default_model_s_lock_file_never_empties_the_file_a_symlink_names(tmp_path):
    victim = tmp_path / "notes.txt"
    victim.write_text("a file of the user's\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", _LOCK, str(victim)], capture_output=True, text=True, timeout=300,
                         env=environment(NETCL_LITE_CACHE=str(tmp_path / "cache")))
    assert run.returncode == 0, run.stderr[-3000:]
    assert victim.read_text(encoding="utf-8") == "a file of the user's\n"


def test_a_stored_corpus_that_is_a_symlink_never_overwrites_the_file_it_names(queue, tmp_path, corpus_cache):
    from cli_model import TEXT

    folder = write_model_folder(queue, tmp_path / "model")
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    cache = tmp_path / "cache"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "netcl_lite.compression", *map(str, args), "--model", folder],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env=environment(NETCL_LITE_CACHE=str(cache)))

    seed_corpus(cache, corpus_cache)             # the primer's corpus, as a first run stores it
    done = cli("compress", src, tmp_path / "first")
    assert done.returncode == 0, done.stderr
    stored = list((cache / "corpus").glob("*.json"))
    assert len(stored) == 1, stored
    victim = tmp_path / "thesis.txt"
    victim.write_text("a file of the user's\n", encoding="utf-8")
    stored[0].unlink()
    stored[0].symlink_to(victim)
    run = cli("compress", src, tmp_path / "out")
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert victim.read_text(encoding="utf-8") == "a file of the user's\n"
