"""Issue 58, a second independent hostile check, round 13 (run beside the first): reproducers of defects in
the compressor, its command line and the build plugin, beyond the cases of earlier rounds (tests/test_hostile*.py).

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from netcl_lite import autograd as ag
from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM
from netcl_lite.text import BPETokenizer

from cli_model import TEXT, tiny_model, write_model_folder


@pytest.fixture(scope="module")
def tiny(queue):
    """(model, tokenizer, primer ids): a small untrained model, a 300-token BPE trained on TEXT and TEXT's ids."""
    return tiny_model(queue)


# -- the compressor: threads ------------------------------------------------------------------------------

class _TapeElsewhere:
    """A ``with ag.Tape():`` block held open by another thread (a training loop running beside the coder)."""

    def __enter__(self):
        self.entered, self.leave = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._hold, daemon=True)
        self.thread.start()
        assert self.entered.wait(30)
        return self

    def _hold(self):
        with ag.Tape():
            self.entered.set()
            self.leave.wait(120)

    def __exit__(self, *exc):
        self.leave.set()
        self.thread.join(30)


@pytest.mark.parametrize("adapt", [False, True], ids=["model", "adapting"])
def test_a_tape_open_in_another_thread_does_not_stop_the_coder(tiny, adapt):
    model, tok, primer = tiny
    data = (TEXT * 3).encode()
    blob = cz.compress(data, model, tok, mix=False, adapt=adapt, primer=primer)
    with _TapeElsewhere():
        assert cz.decompress(blob, model, tok, primer=primer) == data
        again = cz.compress(data, model, tok, mix=False, adapt=adapt, primer=primer)
    assert again == blob


# -- the command line: what an environment variable gets wrong is blamed on IN or --model -----------------

@pytest.fixture(scope="module")
def model_dir(queue, tmp_path_factory):
    """A folder the command line's --model reads: a model and tokenizer made as the tiny ones are."""
    return write_model_folder(queue, tmp_path_factory.mktemp("model"))


def _command(args, cwd, env=None, timeout=300):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "netcl_lite.compression", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("name, value", [("NETCL_LITE_CACHE", "relative/cache"), ("NETCL_LITE_POCL_CPU", "no-such-cpu")])
def test_a_variable_the_command_line_cannot_use_is_named_not_in_or_the_model(model_dir, tmp_path, name, value):
    (tmp_path / "in.txt").write_text(TEXT, encoding="utf-8")
    run = _command(["compress", "in.txt", "out.nclz", "--model", str(model_dir)], tmp_path, {name: value})
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert name in run.stderr, run.stderr
    message = run.stderr.strip().splitlines()[-1].split(": ", 1)[1]
    assert not message.startswith(("in.txt", "--model")), f"IN or --model is blamed for {name}: {message}"
    assert not (tmp_path / "out.nclz").exists()


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_tokenizer_json_that_is_not_a_file_is_named_for_what_it_is(model_dir, tmp_path, capsys, kind):
    import os
    import shutil

    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(model_dir / name, folder / name)
    if kind == "folder":
        (folder / "tokenizer.json").mkdir()
    else:
        os.mkfifo(folder / "tokenizer.json")
    (tmp_path / "in.txt").write_text(TEXT, encoding="utf-8")
    status = cz.main(["compress", str(tmp_path / "in.txt"), str(tmp_path / "out.nclz"), "--model", str(folder)])
    err = capsys.readouterr().err
    assert status == 1, err
    assert "no tokenizer.json there" not in err and ("directory" in err or "FIFO" in err or "pipe" in err), err


# -- the build plugin: the glossary's tooltips -------------------------------------------------------------

@pytest.mark.parametrize("opening, closing", [("<?note ", " ?>"), ("<![CDATA[ ", " ]]>"), ("<!note ", " >")],
                         ids=["processing-instruction", "cdata", "declaration"])
def test_a_term_hidden_in_a_bogus_comment_gets_no_tooltip(opening, closing):
    from site_build import glossary

    term = glossary.terms()[0]
    hidden = f"{opening}the {term.forms[0]} is not shown{closing}"
    page = f"<p>Plain text first.</p>\n{hidden}\n<p>The end.</p>\n"
    marked, _ = glossary.mark_first_uses(page)
    assert hidden in marked, marked


# -- the command line: a non-blocking standard input -------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("first", [b"the first part\n" * 20, b""], ids=["part-waiting", "nothing-yet"])
def test_a_non_blocking_standard_input_is_read_to_its_end_or_refused(model_dir, tmp_path, first):
    import fcntl
    import os
    import subprocess
    import sys

    rest = b"the rest, written later\n" * 20
    read_end, write_end = os.pipe()
    fcntl.fcntl(read_end, fcntl.F_SETFL, fcntl.fcntl(read_end, fcntl.F_GETFL) | os.O_NONBLOCK)
    os.write(write_end, first)
    out = tmp_path / "out.nclz"
    proc = subprocess.Popen([sys.executable, "-m", "netcl_lite.compression", "compress", "-", str(out), "--model",
                             str(model_dir), "--model-only"], stdin=read_end, stderr=subprocess.PIPE, text=True)
    os.close(read_end)
    try:
        proc.wait(timeout=5)                # the input has not ended: a run that ends now did not read it all
    except subprocess.TimeoutExpired:
        ended_early = False
    else:
        ended_early = True
    try:
        os.write(write_end, rest)
    except BrokenPipeError:
        pass
    os.close(write_end)
    err = proc.communicate(timeout=300)[1]
    if ended_early:
        assert proc.returncode == 1 and not out.exists() and "Traceback" not in err, \
            f"it ended before its input did: status {proc.returncode}, OUT written: {out.exists()}; {err[-1500:]}"
        assert "standard input" in err, err[-1500:]
    else:
        assert proc.returncode == 0, err[-1500:]
        model, tok = DecoderLM.from_pretrained(model_dir), BPETokenizer.load(model_dir / "tokenizer.json")
        assert cz.decompress(out.read_bytes(), model, tok) == first + rest


@pytest.mark.slow
def test_a_non_blocking_standard_output_gets_the_whole_result_or_a_failure(tmp_path):
    import fcntl
    import os
    import subprocess
    import sys

    data = np.random.default_rng(13).integers(0, 256, 300_000, dtype=np.uint8).tobytes()
    blob = tmp_path / "stored.nclz"
    blob.write_bytes(cz._header(cz.STORED, data))          # a stored blob: decompress loads no model for it
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETFL, fcntl.fcntl(write_end, fcntl.F_GETFL) | os.O_NONBLOCK)
    proc = subprocess.Popen([sys.executable, "-m", "netcl_lite.compression", "decompress", str(blob), "-"],
                            stdout=write_end, stderr=subprocess.PIPE, text=True)
    os.close(write_end)
    try:
        proc.wait(timeout=5)                # nothing is read yet: the pipe holds only part of the result
    except subprocess.TimeoutExpired:
        pass
    got = bytearray()
    while chunk := os.read(read_end, 1 << 16):
        got += chunk
    os.close(read_end)
    err = proc.communicate(timeout=120)[1]
    assert (proc.returncode == 0 and bytes(got) == data) or (proc.returncode == 1 and "standard output" in err), \
        f"status {proc.returncode}, {len(got):,} of {len(data):,} bytes delivered; {err[-1500:]}"
