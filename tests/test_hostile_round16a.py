"""Issue 58, an independent hostile check, round 16a: reproducers of defects in the compressor and its
command line beyond the cases of earlier rounds (tests/test_hostile*.py, tests/test_compression_hostile.py):
memory that runs out under the command line, a standard error without ``isatty``, a model or a tokenizer
that changes while ``decompress`` runs, and OUT as a link to an existing file.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import contextlib
import io
import os
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
