"""Issue 58, an independent hostile check, round 15a: reproducers of defects in the compressor and its
command line beyond the cases of earlier rounds (tests/test_hostile*.py, tests/test_compression_hostile.py).

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

from cli_model import SMALL, TEXT, compress_patched, environment as _env, listing as _listing, tiny_model, \
    write_model_folder

@pytest.fixture(scope="module")
def tiny(queue):
    """(model, tokenizer): a small untrained model and a 300-token BPE trained on TEXT."""
    return tiny_model(queue)[:2]


@pytest.fixture(scope="module")
def model_dir(queue, tmp_path_factory):
    return write_model_folder(queue, tmp_path_factory.mktemp("round15a") / "model")


# -- the default primer: a shared cache handed out writable ------------------------------------------------

def test_the_default_primer_cannot_be_changed_through_the_array_it_returns(tiny):
    """``default_primer(tok)`` returns the very array its ``lru_cache`` keeps, writable. A caller that
    edits it (normalises ids, shuffles it for an experiment) changes the primer every later
    ``compress`` and ``decompress`` of the process uses while the blobs still say "Chapter 9's
    training text": they decode wrongly, or are refused, anywhere else. The array should be
    read-only (or a copy)."""
    _, tok = tiny
    first = cz.default_primer(tok)
    kept = first.copy()
    try:
        first[:16] = 0
    except ValueError:                           # read-only: correct
        return
    again = cz.default_primer(tok)
    try:
        assert np.array_equal(again, kept), "the default primer changed through the array a caller was given"
    finally:
        again[:] = kept                          # repair the process-wide cache for the other tests


# -- the compressor: a tokenizer that changes while compress runs -----------------------------------------

def test_a_tokenizer_retrained_while_compress_runs_never_gives_a_blob_that_cannot_come_back(queue, monkeypatch):
    """Round 14a made ``compress`` check the weights before and after coding; the tokenizer gets no such
    check. Another thread retrains the tokenizer (``train_from_iterator``) while ``compress`` codes:
    the ids were made by the old one, the header's fingerprint is the new one's. The old tokenizer
    refuses the blob ("another tokenizer"), the new one decodes ids it spells otherwise ("corrupted").
    ``compress`` should notice and raise, or return a blob one of them decodes."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=1)
    data = (TEXT * 2).encode()
    other = "zebra quartz jumps over a lazy vexed fox; " * 40
    real, calls = model.decode_step, [0]

    def step(*args, **kwargs):                   # the other thread's retraining lands between two steps
        calls[0] += 1
        if calls[0] == 20:
            tok.train_from_iterator([other], 300, progress=False)
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "decode_step", step)
    try:
        blob = cz.compress(data, model, tok, mix=False)
    except ValueError as exc:                    # refused, naming what changed: correct
        assert "tokenizer" in str(exc), exc
        return
    monkeypatch.undo()
    assert calls[0] > 20 and cz.read_header(blob)["mode"] != cz.STORED
    old = BPETokenizer()
    old.train_from_iterator([TEXT], 300, progress=False)
    decoded = []
    for tokenizer in (tok, old):
        try:
            decoded.append(cz.decompress(blob, model, tokenizer) == data)
        except ValueError as exc:
            decoded.append(str(exc)[:120])
    assert True in decoded, f"compress returned a blob no tokenizer decodes: {decoded}"


# -- the command line: a signal just after OUT's name is linked --------------------------------------------

def test_a_signal_just_after_out_is_linked_gives_a_status_that_matches_the_file(model_dir, tmp_path):
    """OUT appears when its temporary file is hard-linked to the name; the link is not inside
    ``signals_held``. A SIGTERM that arrives just as ``os.link`` returns unwinds through
    ``_write_new`` (which removes the temporary file only) and the command exits 143, documented as
    "ended by signal: no partial or temporary file is left", with OUT complete on disk. A script that
    trusts the status reruns and is refused ("file exists"), or removes OUT. The status and the file
    should agree: 0 with OUT, or 143 without it."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    out = tmp_path / "out.nclz"
    patch = (f"real_link = os.link\n"
             f"def signalled_link(src, dst, *a, **k):\n"
             f"    real_link(src, dst, *a, **k)\n"
             f"    if os.fspath(dst) == {str(out)!r}:\n"
             f"        os.kill(os.getpid(), signal.SIGTERM)\n"
             f"        signal.pthread_sigmask(signal.SIG_SETMASK, [])\n"
             f"os.link = signalled_link\n")
    done = compress_patched(patch, src, out, model_dir)
    listing = _listing(tmp_path)
    assert (done.returncode == 0 and listing == ["in.txt", "out.nclz"]) or \
        (done.returncode == 128 + signal.SIGTERM and listing == ["in.txt"]), \
        (done.returncode, listing, done.stderr[-600:])


# -- make_predictor: stream lengths of an unsigned integer type ---------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64])
def test_unsigned_stream_lengths_longest_first_are_taken(tiny, dtype):
    """``make_predictor`` takes "a 1-D integer array of the streams' token counts, longest first", and
    its check lets unsigned dtypes through (``dtype.kind in 'iu'``). But it tests the order with
    ``np.diff(lengths) > 0``: for ``[5, 1]`` as uint64 the difference wraps to 2**64 - 4, so valid
    lengths are refused with a message that says they are not longest first (the same array as int64
    is taken). Either every such array is taken or unsigned ones are refused for what they are."""
    model, tok = tiny
    p = cz.make_predictor(model, tok, np.array([5, 1], dtype), 4, False, None)
    try:
        assert p.probabilities().shape == (2, 300)
    finally:
        p.close()


# -- the command line in two threads: standard output redirected process-wide -------------------------------

def test_two_threads_running_main_each_write_their_result_to_standard_output(model_dir, tmp_path, monkeypatch):
    """``main`` wraps loading and coding in ``contextlib.redirect_stdout(sys.stderr)``, which swaps the
    process's ``sys.stdout``. Two threads that run the command line at once (a server compressing two
    requests, ``OUT`` = ``-``): while one is inside that block the other's ``deliver`` writes its result
    to ``sys.stdout``, which is standard error then; and the second to leave the block puts back the
    ``sys.stdout`` it found, the first's redirection, so standard output stays standard error. Each
    result should reach standard output, and ``sys.stdout`` be what it was."""
    import io
    import threading

    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8")
    err = io.TextIOWrapper(err_bytes, encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    real_load = cz._load
    b_inside, a_done = threading.Event(), threading.Event()

    def load(model):                             # B enters its block while A codes, and leaves after A is done
        if threading.current_thread().name == "A":
            b_inside.wait(30)
        else:
            b_inside.set()
            a_done.wait(30)
        return real_load(model)

    monkeypatch.setattr(cz, "_load", load)
    codes = {}

    def run(name):
        codes[name] = cz.main(["compress", str(src), "-", "--model", str(model_dir)])
        if name == "A":
            a_done.set()

    threads = [threading.Thread(target=run, args=(name,), name=name) for name in ("A", "B")]
    threads[0].start()
    threads[1].start()
    for t in threads:
        t.join(120)
    swapped = sys.stdout is not out
    monkeypatch.undo()
    blob = cz.compress(TEXT.encode(), *real_load(str(model_dir)))
    assert codes == {"A": 0, "B": 0}, (codes, err_bytes.getvalue()[-600:])
    assert not swapped, "sys.stdout was left redirected to standard error"
    assert out_bytes.getvalue() == blob + blob, (len(out_bytes.getvalue()), len(err_bytes.getvalue()), len(blob))



# -- the command line: signals the caller ignores (nohup) ---------------------------------------------------

@pytest.mark.parametrize("name", ["SIGHUP", "SIGQUIT"])
def test_a_signal_the_caller_ignores_stays_ignored(model_dir, tmp_path, name):
    """``nohup cmd`` starts the command with SIGHUP ignored so that closing the terminal does not end
    it; a shell's background job (``cmd &`` in a script) starts with SIGINT and SIGQUIT ignored. The
    command line keeps SIGINT ignored (``main`` takes it over only from Python's default handler), but
    ``_exit_cleanly_on_termination`` installs its handler for every termination signal whatever it
    found, so the hang-up that nohup was meant to absorb ends the command with status 129 and no OUT.
    A signal ignored at start should stay ignored (as gzip does)."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    out = tmp_path / "out.nclz"
    patch = (f"signal.signal(signal.{name}, signal.SIG_IGN)          # as nohup, or a background job, starts it\n"
             f"real_fsync = os.fsync\n"
             f"def fsync(fd):\n"
             f"    os.kill(os.getpid(), signal.{name})                # the terminal closes while OUT is written\n"
             f"    return real_fsync(fd)\n"
             f"os.fsync = fsync\n")
    done = compress_patched(patch, src, out, model_dir)
    assert done.returncode == 0, (done.returncode, done.stderr[-600:])
    assert _listing(tmp_path) == ["in.txt", "out.nclz"]


# -- the command line: a signal while a temporary file is being removed --------------------------------------

@pytest.mark.parametrize("nth", [1, 2], ids=["the folder probe", "after the link"])
def test_a_signal_while_a_temporary_file_is_removed_leaves_none(model_dir, tmp_path, nth):
    """``_probe_folder`` and ``_write_new`` remove their temporary file in a ``finally`` that
    ``signals_held`` does not cover: a SIGTERM that arrives as the removal begins (here: just before
    the ``os.unlink`` of the ``nth`` temporary name) raises there, and the temporary file stays
    (beside OUT, for the second). The help promises that a signal leaves no partial or temporary
    file."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    out = tmp_path / "out.nclz"
    patch = (f"real_unlink, seen = os.unlink, []\n"
             f"def unlink(path, *a, **k):\n"
             f"    if os.fspath(path).endswith('.tmp'):\n"
             f"        seen.append(path)\n"
             f"        if len(seen) == {nth}:\n"
             f"            os.kill(os.getpid(), signal.SIGTERM)\n"
             f"            signal.pthread_sigmask(signal.SIG_SETMASK, [])\n"
             f"    return real_unlink(path, *a, **k)\n"
             f"os.unlink = unlink\n")
    done = compress_patched(patch, src, out, model_dir)
    listing = _listing(tmp_path)
    assert not [name for name in listing if name.endswith(".tmp")], (done.returncode, listing, done.stderr[-600:])
    assert (done.returncode == 0 and listing == ["in.txt", "out.nclz"]) or \
        (done.returncode == 128 + signal.SIGTERM and listing == ["in.txt"]), (done.returncode, listing)


# -- the fingerprint: a config equal in value, written another way ------------------------------------------

def test_a_config_equal_in_value_is_the_same_model(queue, tiny):
    """``model_fingerprint`` hashes ``json.dumps(config.__dict__)``, so ``rope_theta=10000`` (as a
    hand-written or Hugging Face ``config.json`` often has it, and ``from_pretrained`` keeps the int)
    and ``rope_theta=10000.0`` (LMConfig's default) give other fingerprints for one model computing the
    same probabilities: a blob written with one is refused by the other as "another model (its config
    or its weights differ)". Values equal as numbers should fingerprint alike."""
    _, tok = tiny
    as_int = DecoderLM(LMConfig(vocab_size=300, rope_theta=10000, **SMALL), queue=queue, seed=1)
    as_float = DecoderLM(LMConfig(vocab_size=300, rope_theta=10000.0, **SMALL), queue=queue, seed=1)
    data = TEXT.encode()
    blob = cz.compress(data, as_int, tok, mix=False)
    assert cz.read_header(blob)["mode"] == cz.MODEL
    assert cz.decompress(blob, as_float, tok) == data


# -- AdaptationDiverged: a public exception's arguments -------------------------------------------------------

def test_adaptation_diverged_names_an_argument_it_cannot_take():
    """``AdaptationDiverged`` is public (the command line and callers catch it, a caller may raise it).
    Given a learning rate as text it fails while formatting its own message with "Unknown format code
    'g' for object of type 'str'", which names no parameter. It should refuse naming ``lr`` (or take
    it)."""
    try:
        exc = cz.AdaptationDiverged(1, "0.1", "inf in logits")
    except (TypeError, ValueError) as err:
        assert "lr" in str(err), err
    else:
        assert "0.1" in str(exc)


# -- files: the helpers' paths -------------------------------------------------------------------------------

def test_atomic_write_refuses_a_path_that_names_a_folder_by_its_trailing_slash(tmp_path):
    """``files.atomic_write`` refuses "a folder or a non-regular file at path", and the command line
    refuses an OUT ending in '/' (round 6). But ``Path('…/new/')`` drops the slash, so
    ``atomic_write(str(tmp_path) + '/new/', b'x')`` creates a regular file named ``new`` where the
    caller named a folder. It should refuse naming the path (as ``open('new/', 'wb')`` does)."""
    from netcl_lite import files

    target = str(tmp_path / "new") + "/"
    with pytest.raises((ValueError, OSError)) as caught:
        files.atomic_write(target, b"x")
    assert "new" in str(caught.value)
    assert _listing(tmp_path) == []


def test_the_file_helpers_name_a_path_holding_a_nul():
    """``files.read_regular`` (the command line's reader of IN) and ``files.kind_of`` pass a path
    holding NUL to ``os.stat``, whose ``ValueError: embedded null byte`` says nothing of which path
    or parameter. The command line checks for NUL itself; a caller of the helpers gets no such
    message. They should name the path (as the command line does) or the parameter."""
    from netcl_lite import files

    for call in (lambda: files.read_regular("in\x00.txt", 100, "a text file"), lambda: files.kind_of("in\x00.txt")):
        with pytest.raises(ValueError) as caught:
            call()
        assert "in\\x00.txt" in str(caught.value) or "path" in str(caught.value), caught.value


# -- read_header: a large buffer copied whole to read a few bytes ----------------------------------------------

_PEEK = """
import mmap, resource, sys
from netcl_lite import compression as cz
path = sys.argv[1]
with open(path, "r+b") as f:
    f.write(cz.compress.__globals__["_stored"](b"hello"))
    f.truncate(4 << 30)                                    # sparse: 4 GiB that take no memory until copied
    f.flush()
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
size = int(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmSize"))) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 30), resource.RLIM_INFINITY))   # 1 GiB to spare
fields = cz.read_header(memoryview(mm))
print(fields["mode"], fields["length"], fields["end"])
"""


def test_read_header_of_a_large_mapped_file_reads_only_its_header(tmp_path):
    """``read_header`` reads a few dozen bytes, but first turns the whole buffer into bytes
    (``_buffer(...).tobytes()``), with no size check (``decompress`` checks ``MAX_BLOB_BYTES`` first).
    A caller that maps a large file to see whether it is a blob (4 GiB here, sparse) needs as much
    memory again: under a limit of 1 GiB to spare it fails with ``MemoryError``. The header should be
    read from the buffer's first bytes."""
    big = tmp_path / "big.nclz"
    big.write_bytes(b"")
    run = subprocess.run([sys.executable, "-c", _PEEK, str(big)], env=_env(), capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and run.stdout.split() == ["0", "5", "15"], (run.returncode, run.stderr[-800:])


# -- the command line: OUT's folder entry never flushed ------------------------------------------------------

def test_out_s_folder_entry_is_flushed_to_disk_after_the_link(tmp_path, monkeypatch):
    """``files.atomic_write`` and ``files.replace`` flush the file, rename it into place, then flush the
    folder, so that the new name survives a power cut. The command line's ``_write_new`` flushes the
    temporary file, links OUT to it and removes the temporary name, but never flushes OUT's folder:
    after exit status 0 ("OUT holds the whole result") a crash can leave no OUT. The folder should be
    flushed once OUT's name is in it."""
    import stat

    real_fsync, real_link, events = os.fsync, os.link, []

    def fsync(fd):
        events.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        return real_fsync(fd)

    def link(src, dst, *args, **kwargs):
        events.append("link")
        return real_link(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "link", link)
    cz._write_new(tmp_path / "out.nclz", b"x" * 1000)
    assert (tmp_path / "out.nclz").read_bytes() == b"x" * 1000
    assert "link" in events and "folder" in events[events.index("link"):], events


# -- the command line: a PoCL setting's value shown raw in a refusal -----------------------------------------

def test_a_pocl_setting_with_control_characters_is_shown_escaped_in_a_refusal(model_dir, tmp_path):
    """``arithmetic(model)`` ends with every ``POCL_*`` setting of the environment as written, and
    ``decompress`` quotes it in its refusal ("blob was compressed with other arithmetic (here: ...;
    PoCL POCL_X=...)"), which the command line prints as is. A value holding a newline and ESC
    splits the message over two lines and sends a colour change to the terminal; the command line
    escapes such characters everywhere else (paths, --model, NETCL_LITE_* values: rounds 6 to 14). The
    message should stay on one line with the characters written out."""
    model, tok = cz._load(str(model_dir))
    blob = cz.compress((TEXT * 3).encode(), model, tok, mix=False)
    assert cz.read_header(blob)["mode"] == cz.MODEL
    (tmp_path / "in.nclz").write_bytes(blob)
    run = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "decompress", "in.nclz", "out.txt",
                          "--model", str(model_dir)], cwd=tmp_path, env=_env(POCL_NOTHING="x\n\x1b[31mred"),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "arithmetic" in run.stderr, (run.returncode, run.stderr[-1000:])
    assert run.stderr.count("\n") == 1 and "\x1b" not in run.stderr, run.stderr[-1000:]
