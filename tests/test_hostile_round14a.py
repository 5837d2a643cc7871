"""Issue 58, an independent hostile check, round 14a: reproducers of defects in the compressor and its
command line beyond the cases of earlier rounds (tests/test_hostile*.py, tests/test_compression_hostile.py).

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite.context_mixing import TECHNIQUES
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer

from cli_model import SMALL, TEXT, environment as _env, tiny_model, write_model_folder

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny(queue):
    """(model, tokenizer, primer ids): a small untrained model, a 300-token BPE trained on TEXT and TEXT's ids."""
    return tiny_model(queue)


@pytest.fixture(scope="module")
def model_dir(queue, tmp_path_factory):
    return write_model_folder(queue, tmp_path_factory.mktemp("round14a") / "model")


def _pocl_cache() -> str:
    """PoCL's kernel cache as this process's environment places it (so a run under another
    XDG_CACHE_HOME builds no kernel again)."""
    return os.environ.get("POCL_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pocl")


def _cli(args, cwd, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netcl_lite.compression", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


# -- the compressor: a model that changes while compress runs ---------------------------------------------

def test_weights_that_change_while_compress_runs_never_give_a_blob_that_cannot_come_back(queue, tiny, monkeypatch):
    """Another thread loads new weights into the model (a training step, ``load_state_dict``) while
    ``compress`` codes with it. The blob's fingerprint is taken from the weights at the end, the
    coding used both: the blob is refused with the old weights ("another model") and fails to
    decode with the new ones. ``compress`` should notice (the weights' fingerprint before and after)
    and raise, or return a blob one of them decodes: never a blob that can never come back."""
    _, tok, _ = tiny
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), queue=queue, seed=5)
    data = (TEXT * 2).encode()
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
        blob = cz.compress(data, model, tok, mix=False)
    except ValueError as exc:                    # refused, naming what changed: correct
        assert "weights" in str(exc) or "model" in str(exc), exc
        return
    monkeypatch.undo()
    assert calls[0] > 40 and cz.read_header(blob)["mode"] != cz.STORED   # it was coded while they changed
    decoded = []
    for weights in (after, before):
        model.load_state_dict(weights)
        try:
            decoded.append(cz.decompress(blob, model, tok) == data)
        except ValueError as exc:
            decoded.append(str(exc)[:120])
    assert True in decoded, f"compress returned a blob no weights decode: {decoded}"


# -- the compressor: arithmetic the fingerprint leaves out ------------------------------------------------

_PROBABILITIES = """
import hashlib, numpy as np
from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.text import BPETokenizer
tok = BPETokenizer()
tok.train_from_iterator([{text!r}], 300, progress=False)
model = DecoderLM(LMConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32), seed=3)
ids = np.asarray(tok.encode_ordinary({text!r}), np.int64)[:60]
p = cz.make_predictor(model, tok, np.array([60]), 4, False, None)
h = hashlib.sha256()
for i in range(60):
    h.update(p.probabilities().tobytes())
    p.advance(ids[i:i + 1])
print(h.hexdigest())
print(cz.arithmetic(model))
"""


def test_a_pocl_build_flag_that_changes_the_probabilities_changes_the_arithmetic():
    """The fingerprint's arithmetic part is to cover everything that decides the probabilities' bits
    besides the weights; netcl_lite.fingerprint says itself that POCL_EXTRA_BUILD_FLAGS changes the code.
    With -cl-fast-relaxed-math the model's probabilities differ, yet ``arithmetic(model)`` is the same
    string, so a blob written under the flag and read without it is not refused as "other arithmetic":
    it decodes wrongly (a "corrupted" ValueError) or, by luck of the 24-bit quantization, right."""
    code = _PROBABILITIES.format(text=TEXT)
    runs = {}
    for flags in ("", "-cl-fast-relaxed-math"):
        run = subprocess.run([sys.executable, "-c", code], env=_env(POCL_EXTRA_BUILD_FLAGS=flags or None),
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        runs[flags] = run.stdout.split("\n")[:2]
    (plain, plain_arithmetic), (fast, fast_arithmetic) = runs[""], runs["-cl-fast-relaxed-math"]
    if plain == fast:
        pytest.skip("the flag changes no probability on this device")
    assert plain_arithmetic != fast_arithmetic, f"other probabilities, same arithmetic: {plain_arithmetic}"


# -- the compressor and the command line: a progress bar that cannot be written ---------------------------

class _BrokenStream(io.TextIOBase):
    """A standard error whose every write fails, as a pipe whose reader has gone does (or a terminal
    that has gone: ``tty`` True)."""

    def __init__(self, error: OSError, tty: bool = False):
        self.error, self.tty = error, tty

    def isatty(self):
        return self.tty

    def write(self, text):
        raise self.error

    def flush(self):
        raise self.error


def test_a_progress_bar_that_cannot_be_written_does_not_lose_the_result(tiny, monkeypatch):
    """The bar is a courtesy: a closed standard error (None) already leaves it out (round 4). One whose
    writes fail (its reader gone: BrokenPipeError) ends the whole call with that error instead of
    coding without a bar."""
    model, tok, _ = tiny
    data = TEXT.encode()
    monkeypatch.setattr(sys, "stderr", _BrokenStream(BrokenPipeError(32, "Broken pipe")))
    try:
        blob = cz.compress(data, model, tok, mix=False, progress=True)
    finally:
        monkeypatch.undo()
    assert cz.decompress(blob, model, tok) == data


def _tokens_over_bar_threshold() -> bytes:
    """24,000 bytes of symbols no merge joins: over the 20,000 tokens that show a bar on a terminal."""
    symbols = np.frombuffer(b"!#$%&()*+,-/;<=>?", np.uint8)[:16]
    return symbols[np.random.default_rng(0).integers(0, 16, 24_000)].tobytes()


def test_a_terminal_that_fails_under_the_bar_is_not_blamed_on_the_cache(model_dir, tmp_path, monkeypatch):
    """``compress big.txt out --model-only`` with standard error a terminal that has gone (writes fail
    with EIO; its hangup ignored). The command line catches every OSError from coding as the primer's
    corpus failing to reach the cache folder, and says 'the primer's corpus: cache folder ... cannot be
    made or written (Input/output error); set NETCL_LITE_CACHE', where no primer is used and the cache
    is fine. The bar should be dropped and OUT written; a failure would name standard error, not the cache."""
    src, out = tmp_path / "big.txt", tmp_path / "out.nclz"
    data = _tokens_over_bar_threshold()
    src.write_bytes(data)
    said = []
    monkeypatch.setattr(cz, "_say", said.append)
    monkeypatch.setattr(sys, "stderr", _BrokenStream(OSError(5, "Input/output error"), tty=True))
    status = cz.main(["compress", str(src), str(out), "--model", str(model_dir), "--model-only"])
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    assert not any("cache folder" in message or "primer" in message for message in said), said
    assert status == 0, said
    model, tok = DecoderLM.from_pretrained(model_dir), BPETokenizer.load(model_dir / "tokenizer.json")
    assert cz.decompress(out.read_bytes(), model, tok) == data


# -- the command line: the OpenCL caches under XDG_CACHE_HOME ---------------------------------------------

@pytest.mark.parametrize("broken", ["a regular file", "a damaged cache"])
def test_a_broken_opencl_cache_under_xdg_cache_home_is_named(model_dir, tmp_path, broken):
    """pyopencl keeps its kernel-invoker cache (an SQLite file) under XDG_CACHE_HOME. When that is a
    regular file, the command line says 'the primer's corpus: cache folder <NETCL_LITE_CACHE> cannot be
    made or written (Not a directory); set NETCL_LITE_CACHE ...', though --model-only reads no primer
    and that folder is fine, then prints 'Exception ignored ... AttributeError'. When the cache file is
    damaged (a crash while writing it), it ends in a traceback (sqlite3.DatabaseError: file is not a
    database). Either way it should exit 1 naming XDG_CACHE_HOME or the cache at fault, no traceback."""
    (tmp_path / "in.txt").write_bytes(TEXT.encode())
    xdg = tmp_path / "xdg"
    if broken == "a regular file":
        xdg.write_text("not a folder")
    else:
        xdg.mkdir()
        made = _cli(["compress", "in.txt", "first.nclz", "--model", str(model_dir), "--model-only"], tmp_path,
                    _env(XDG_CACHE_HOME=str(xdg), POCL_CACHE_DIR=_pocl_cache()))
        assert made.returncode == 0, made.stderr[-2000:]
        caches = list(xdg.rglob("*.sqlite"))
        assert caches, sorted(xdg.rglob("*"))
        for cache in caches:
            cache.write_bytes(b"damaged: not an SQLite database " * 8)
    run = _cli(["compress", "in.txt", "out.nclz", "--model", str(model_dir), "--model-only"], tmp_path,
               _env(XDG_CACHE_HOME=str(xdg), POCL_CACHE_DIR=_pocl_cache()))
    assert "Traceback" not in run.stderr and "Exception ignored" not in run.stderr, run.stderr[-3000:]
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert "primer" not in run.stderr, f"--model-only reads no primer: {run.stderr}"
    assert "XDG_CACHE_HOME" in run.stderr or str(xdg) in run.stderr, run.stderr
    assert not (tmp_path / "out.nclz").exists()


def test_an_xdg_cache_home_that_keeps_pocl_from_starting_is_named(model_dir, tmp_path):
    """PoCL puts its kernel cache under XDG_CACHE_HOME when POCL_CACHE_DIR is unset; where no folder
    can be made there, no device starts. Round 13 names the POCL_* settings in that message; this one,
    the usual way the cache folder is set, is not named: 'OpenCL platforms found ..., but none offers a
    device; ... pip install pyopencl[pocl] installs PoCL', which is installed."""
    (tmp_path / "in.txt").write_bytes(TEXT.encode())
    xdg = tmp_path / "xdg"
    xdg.write_text("not a folder")
    run = _cli(["compress", "in.txt", "out.nclz", "--model", str(model_dir), "--model-only"], tmp_path,
               _env(XDG_CACHE_HOME=str(xdg), POCL_CACHE_DIR=None))
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert "XDG_CACHE_HOME" in run.stderr or str(xdg) in run.stderr, run.stderr
    assert not (tmp_path / "out.nclz").exists()


# -- make_predictor's techniques ----------------------------------------------------------------------------

def _steps(model, tok, primer, techniques, n: int = 6) -> np.ndarray:
    """The coded distributions of ``n`` steps of one stream over TEXT's first ids."""
    ids = primer[:n]
    p = cz.make_predictor(model, tok, np.array([n]), 4, True, primer, techniques=techniques)
    rows = []
    for i in range(n):
        rows.append(p.probabilities())
        p.advance(ids[i:i + 1])
    p.close()
    return np.concatenate(rows)


def test_techniques_given_as_an_iterator_are_the_techniques_named(tiny):
    """``make_predictor(..., techniques=iter(TECHNIQUES))``: ContextMixer checks the names with
    ``set(techniques)`` and then takes ``set(techniques)`` again, which an iterator has exhausted: the
    mixer runs with no technique at all, silently. It should use the techniques named (or refuse an
    iterator naming the parameter)."""
    model, tok, primer = tiny
    listed = _steps(model, tok, primer, list(TECHNIQUES))
    try:
        iterated = _steps(model, tok, primer, iter(TECHNIQUES))
    except TypeError as exc:                   # refusing an iterator, naming the parameter, is fine too
        assert "techniques" in str(exc), exc
        return
    assert np.array_equal(listed, iterated), "an iterator of every technique coded as the linear mix alone"


def test_techniques_that_are_not_a_collection_are_refused_naming_the_parameter(tiny):
    model, tok, primer = tiny
    with pytest.raises(TypeError, match="techniques"):
        cz.make_predictor(model, tok, np.array([4]), 2, True, primer, techniques=5)


# -- the command line: PoCL's kernel cache on a disk that fills ---------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs folder (root only): room for PoCL's cache folders, not for the kernels it builds."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs takes root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode(errors='replace')[:200]}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_a_kernel_cache_on_a_full_disk_is_named_not_an_abort(model_dir, tmp_path, small_disk):
    """The command line refuses a small file-size limit (ulimit -f) up front, since a write the limit cuts
    short aborts the process inside OpenCL's compiler. A full disk under PoCL's kernel cache
    (POCL_CACHE_DIR, or XDG_CACHE_HOME/pocl) does the same: 'LLVM ERROR: IO failure on output stream: No
    space left on device', SIGABRT, exit status 134, which --help does not list. It should exit 1 naming
    the cache folder (or the setting that places it) and the lack of space."""
    (tmp_path / "in.txt").write_bytes(TEXT.encode())
    run = _cli(["compress", "in.txt", "out.nclz", "--model", str(model_dir), "--model-only"], tmp_path,
               _env(POCL_CACHE_DIR=str(small_disk)))
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert "POCL_CACHE_DIR" in run.stderr or str(small_disk) in run.stderr, run.stderr[-2000:]
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert not (tmp_path / "out.nclz").exists()


# -- the command line: a model file that is a symlink loop ------------------------------------------------

@pytest.mark.parametrize("name", ["config.json", "model.safetensors"])
def test_a_model_file_that_is_a_symlink_loop_is_named_as_one(model_dir, tmp_path, name):
    """tokenizer.json as a link to itself is named for what it is ('unreadable (Too many levels of symbolic
    links)'); config.json so is 'no config.json; is . a checkpoint directory?', and model.safetensors 'no such
    file (a symlink to the missing .../model.safetensors)': the file is there, the link loops."""
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(model_dir, folder)
    (folder / name).unlink()
    (folder / name).symlink_to(name)
    (tmp_path / "in.txt").write_bytes(TEXT.encode())
    run = _cli(["compress", "in.txt", "out.nclz", "--model", str(folder), "--model-only"], tmp_path, _env())
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert name in run.stderr and "symbolic links" in run.stderr, run.stderr
    assert "missing" not in run.stderr and f"no {name}" not in run.stderr, run.stderr
