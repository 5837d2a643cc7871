"""Issue 58, an independent hostile check, round 16a: reproducers of defects in the compressor and its
command line beyond the cases of earlier rounds (tests/test_hostile*.py, tests/test_compression_hostile.py):
memory that runs out under the command line, a standard error without ``isatty``, a model or a tokenizer
that changes while ``decompress`` runs, OUT as a link to an existing file, and a descriptor that an
interrupt left open.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys

import pytest

from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

from cli_model import SMALL, TEXT, listing as _listing, write_model_folder


@pytest.fixture(scope="module")
def model_dir(queue, tmp_path_factory):
    return write_model_folder(queue, tmp_path_factory.mktemp("round16a") / "model")


def _main(args, stderr=None) -> tuple[int, str]:
    """(exit status, standard error) of the command line run in this process."""
    err = io.StringIO() if stderr is None else stderr
    with contextlib.redirect_stderr(err):
        code = cz.main([str(a) for a in args])
    return code, err.getvalue() if stderr is None else "".join(stderr.parts)


# -- the command line: memory that runs out ---------------------------------------------------------------

@pytest.mark.parametrize("where", ["compress", "read_regular"])
def test_memory_that_runs_out_is_a_message_and_exit_status_1_not_a_traceback(model_dir, tmp_path, monkeypatch,
                                                                             where):
    """Under an address-space limit (``ulimit -v``; 600,000 KiB here), or on a machine short of memory,
    NumPy's or Python's ``MemoryError`` escaped the command line as a traceback (from reading the
    tokenizer's file, or from the n-gram's counts of the primer as the coding starts). The help says a
    failure is a message on standard error and exit status 1, OUT not written; a ``MemoryError`` is
    one (here raised where the limit struck)."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    out = tmp_path / "out.nclz"

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 16.2 MiB for an array with shape (2123211,) and data type int64")

    if where == "compress":
        monkeypatch.setattr(cz, "compress", no_memory)
    else:
        from netcl_lite import files
        monkeypatch.setattr(files, "read_regular", no_memory)
    code, err = _main(["compress", src, out, "--model", model_dir])
    assert code == 1, (code, err[-600:])
    assert "memory" in err and "Traceback" not in err, err[-600:]
    assert _listing(tmp_path) == ["in.txt"]


# -- the command line: a standard error without isatty ----------------------------------------------------

class _Writer:
    """A minimal text stream, as a logging redirect gives: ``write`` and ``flush``, nothing else."""

    def __init__(self):
        self.parts = []

    def write(self, text):
        self.parts.append(text)
        return len(text)

    def flush(self):
        pass


def test_a_standard_error_without_isatty_still_gets_the_result_written(model_dir, tmp_path):
    """``main`` asks ``sys.stderr.isatty()`` whether to draw a progress bar; a standard error replaced
    by a plain writer (``contextlib.redirect_stderr`` of a logging adapter, some notebook kernels)
    has no ``isatty``, and ``main`` ended in an ``AttributeError`` traceback instead of compressing.
    The bar is a courtesy (the compressor's own bar stream already treats such a stream as no
    terminal)."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    out = tmp_path / "out.nclz"
    code, err = _main(["compress", src, out, "--model", model_dir], stderr=_Writer())
    assert code == 0, (code, err[-600:])
    back = tmp_path / "back.txt"
    code, err = _main(["decompress", out, back, "--model", model_dir], stderr=_Writer())
    assert code == 0, (code, err[-600:])
    assert back.read_bytes() == src.read_bytes()


# -- decompress: a model or a tokenizer that changes while it runs -----------------------------------------

def test_weights_that_change_while_decompress_runs_are_named_not_the_blob(queue, monkeypatch):
    """Round 14a made ``compress`` say so when another thread loads new weights into the model while it
    codes; ``decompress`` gets no such check. Its decoding then goes astray and the sound blob is
    called corrupted ("blob is corrupted: it decodes to 1390 bytes, the header says 1980"): the user
    is told to distrust a file that is fine. The message should name the model's weights."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=5)
    data = (TEXT * 2).encode()
    blob = cz.compress(data, model, tok, mix=False)
    assert cz.read_header(blob)["mode"] == cz.MODEL
    before = model.state_dict()
    after = {name: value * 1.5 for name, value in before.items()}
    real, calls = model.decode_step, [0]

    def step(*args, **kwargs):                   # the other thread's load lands between two steps
        calls[0] += 1
        if calls[0] == 40:
            model.load_state_dict(after)
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "decode_step", step)
    try:
        back = cz.decompress(blob, model, tok)
    except ValueError as exc:
        assert "weights" in str(exc) and "corrupted" not in str(exc), exc
    else:
        assert back == data
    monkeypatch.undo()
    model.load_state_dict(before)
    assert cz.decompress(blob, model, tok) == data          # the blob was sound all along


def test_a_tokenizer_retrained_while_decompress_runs_is_named(queue, monkeypatch):
    """The tokenizer's counterpart of the test above: retrained by another thread while ``decompress``
    decodes, it fails with "decode: unknown token ids [289, ...]" from inside the tokenizer, naming
    neither the cause nor the blob. The message should say the tokenizer changed."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=5)
    data = (TEXT * 2).encode()
    blob = cz.compress(data, model, tok, mix=False)
    other = "zebra quartz jumps over a lazy vexed fox; " * 40
    real, calls = model.decode_step, [0]

    def step(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 20:
            tok.train_from_iterator([other], 300, progress=False)
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "decode_step", step)
    with pytest.raises(ValueError, match="tokenizer") as caught:
        cz.decompress(blob, model, tok)
    assert "changed" in str(caught.value), caught.value


# -- the command line: OUT a link to an existing file ------------------------------------------------------

def test_an_out_that_links_to_an_existing_file_is_called_existing_not_irregular(model_dir, tmp_path):
    """OUT a symlink to a regular file (IN itself, say) was refused as "out.nclz: is a symlink to a
    regular file (…/in.txt), not a regular file": the message contradicts itself and hides the reason,
    that OUT names an existing file, which is never overwritten."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    out = tmp_path / "out.nclz"
    out.symlink_to(src)
    code, err = _main(["compress", src, out, "--model", model_dir])
    assert code == 1, (code, err)
    assert "exists" in err and "not a regular file" not in err, err
    assert src.read_bytes() == TEXT.encode() and os.path.islink(out)


# -- files: an interrupt as write_new creates its file -----------------------------------------------------

@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc/self/fd")
def test_an_interrupt_as_write_new_creates_its_file_leaves_no_descriptor_open(tmp_path, monkeypatch):
    """``write_new`` holds a deferrable signal (the command line's Ctrl-C) while it creates the file, and
    the signal's exception comes when that block ends: the file is removed, but the descriptor just
    opened for it was never closed. Each interrupt there leaked one (five here), for as long as the
    process lives (a notebook, a long training run that saves with ``atomic_write``)."""
    from netcl_lite import files

    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, files.deferrable(signal.default_int_handler))
    real_open = os.open

    def opening(path, flags, *args, **kwargs):   # Ctrl-C as the file is created
        fd = real_open(path, flags, *args, **kwargs)
        if os.fspath(path).endswith("x.bin"):
            os.kill(os.getpid(), signal.SIGINT)
        return fd

    try:
        before = len(os.listdir("/proc/self/fd"))
        monkeypatch.setattr(os, "open", opening)
        for _ in range(5):
            with pytest.raises(KeyboardInterrupt):
                files.write_new(tmp_path / "x.bin", b"data")
        monkeypatch.undo()
        after = len(os.listdir("/proc/self/fd"))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert _listing(tmp_path) == []
    assert after == before, f"{after - before} descriptors left open"


def test_a_pocl_setting_that_differs_is_named_when_decompress_refuses_the_arithmetic(queue, monkeypatch):
    """A PoCL variable the library does not know is taken as one that may change the compiled code, so
    a blob written without it is refused where it is set; the refusal said only "another version of
    netcl_lite or another device", sending the user after the wrong cause. It should name the setting."""
    tok = BPETokenizer()
    tok.train_from_iterator([TEXT], 300, progress=False)
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=5)
    data = (TEXT * 2).encode()
    monkeypatch.delenv("POCL_SOME_NEW_SETTING", raising=False)
    blob = cz.compress(data, model, tok, mix=False)
    monkeypatch.setenv("POCL_SOME_NEW_SETTING", "1")
    with pytest.raises(ValueError, match=r"other arithmetic.*PoCL settings in this environment.*"
                                         r"POCL_SOME_NEW_SETTING=1.*unset them"):
        cz.decompress(blob, model, tok)
    monkeypatch.delenv("POCL_SOME_NEW_SETTING")
    assert cz.decompress(blob, model, tok) == data
