"""Issue 58, an independent hostile check, round 17a: reproducers of defects in the compressor and its
command line beyond the cases of earlier rounds (tests/test_hostile*.py, tests/test_compression_hostile.py):
a PoCL worker count that crashes the process as the device starts, the predictor's steps taken with
ids it never checks (or after it is closed), and the host models' steps counting ids outside the
vocabulary.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from netcl_lite import compression as cz

from cli_model import TEXT, environment as _env, listing as _listing, tiny_model, write_model_folder


@pytest.fixture(scope="module")
def tiny(queue):
    """(model, tokenizer, primer ids): a small untrained model, a 300-token BPE trained on TEXT, TEXT's ids."""
    return tiny_model(queue)


@pytest.fixture(scope="module")
def model_dir(queue, tmp_path_factory):
    return write_model_folder(queue, tmp_path_factory.mktemp("round17a") / "model")


# -- the command line: a worker count PoCL reads as negative -----------------------------------------------

@pytest.mark.parametrize("name, value", [("POCL_MAX_PTHREAD_COUNT", "-1"),
                                         ("POCL_PTHREAD_MIN_THREADS", "4294967295")])
def test_a_worker_count_pocl_reads_as_negative_is_named_not_a_crash(model_dir, tmp_path, name, value):
    """PoCL reads its worker counts with C's ``atoi`` into an int: ``-1`` (a user's "no limit"), or
    4294967295, which wraps to -1, is a negative count that its CPU driver takes as a huge unsigned
    one, and the process dies as the device starts (SIGSEGV, exit status 139, no message at all).
    The help promises a message naming what is at fault and exit status 1."""
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    out = tmp_path / "out.nclz"
    proc = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", str(src), str(out),
                           "--model", str(model_dir)], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, env=_env(**{name: value, "POCL_AFFINITY": None}))
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-600:])
    assert name in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-600:]
    assert _listing(tmp_path) == ["in.txt"]


# -- make_predictor: the steps it is fed --------------------------------------------------------------------

def _predictor(tiny, mix):
    model, tok, primer = tiny
    return cz.make_predictor(model, tok, cz.segments(40, 2), cz.kept_positions(model), mix, primer)


@pytest.mark.parametrize("mix", [False, True], ids=["model", "mixed"])
@pytest.mark.parametrize("tokens", [np.array([5.7, 6.2]), np.array([True, False]), np.array([[1, 2]]),
                                    np.array([3]), np.array([1, -1])],
                         ids=["floats", "bools", "2-D", "one-too-few", "negative"])
def test_the_predictor_refuses_tokens_that_are_not_one_id_per_active_stream(tiny, mix, tokens):
    """``advance`` takes "the step's tokens (one per active stream)". Floats were cut to ints (5.7 coded
    as 5), bools taken as ids 1 and 0, a 2-D array and too few tokens taken as they came (the missing
    stream silently repeating its input), and a negative id was accepted there, to fail a step later
    in the model or the n-gram: each a wrong prediction from then on, with no error. The step's state
    must be left as it was."""
    predictor = _predictor(tiny, mix)
    try:
        predictor.probabilities()
        before = predictor.next_input.copy()
        with pytest.raises((TypeError, ValueError), match="tokens"):
            predictor.advance(tokens)
        assert (predictor.next_input == before).all() and predictor.step == 0
        predictor.advance(np.array([1, 2]))              # the step itself still goes
        assert predictor.probabilities().shape[0] == 2
    finally:
        predictor.close()


def test_the_predictor_refuses_a_step_out_of_turn_and_use_after_close(tiny):
    """``advance`` without ``probabilities`` first moved the step on without a prediction (a step
    skipped, silently); after ``close``, ``probabilities`` ended in "'NoneType' object has no attribute
    'length'" and ``advance`` went on. Each should say what is wrong, as the mixer's ``update`` before
    ``predict`` and an Adapter after ``restore`` do."""
    predictor = _predictor(tiny, False)
    with pytest.raises(ValueError, match="probabilities"):
        predictor.advance(np.array([1, 2]))
    predictor.probabilities()
    predictor.advance(np.array([1, 2]))
    with pytest.raises(ValueError, match="probabilities"):
        predictor.advance(np.array([1, 2]))           # twice for one prediction
    predictor.close()
    for call in (predictor.probabilities, lambda: predictor.advance(np.array([1, 2]))):
        with pytest.raises(ValueError, match="closed"):
            call()
    predictor.close()                                  # closing twice is harmless


# -- decompress: a PoCL setting named in a refusal -----------------------------------------------------------

def test_the_pocl_settings_a_refusal_names_are_written_out_escaped(tiny, monkeypatch):
    """The refusal of a blob of other arithmetic now names the PoCL settings of the environment a second
    time, in its advice ("the PoCL settings in this environment are part of the arithmetic too (...)"),
    and there as written: a value holding a newline and ESC split the message and sent a colour change
    to the terminal (tests/test_hostile_round15a.py's command-line check failed again). The first
    mention was escaped; the second must be too."""
    model, tok, _ = tiny
    data = (TEXT * 2).encode()
    monkeypatch.delenv("POCL_ODD_SETTING", raising=False)
    blob = cz.compress(data, model, tok, mix=False)
    monkeypatch.setenv("POCL_ODD_SETTING", "x\n\x1b[31mred")
    with pytest.raises(ValueError, match="PoCL settings in this environment") as refused:
        cz.decompress(blob, model, tok)
    assert "\n" not in str(refused.value) and "\x1b" not in str(refused.value), str(refused.value)


# -- the host models: the ids a step counts ------------------------------------------------------------------

def _host_models():
    from netcl_lite.context_mixing import StreamCache
    from netcl_lite.match import MatchModel
    from netcl_lite.ngram import NGram, WordNGram

    primer = np.arange(50) % 7
    pieces = {i: bytes([97 + i]) for i in range(10)}
    return {"NGram": (NGram(primer, 10, 2), lambda m: m.predict()),
            "WordNGram": (WordNGram(primer, 10, 2, pieces), lambda m: m.predict(np.ones(10))),
            "MatchModel": (MatchModel(primer, np.array([5, 5])), lambda m: m.predict()),
            "StreamCache": (StreamCache(10, np.array([5, 5])), lambda m: m.predict(np.full(10, 0.1)))}


@pytest.mark.parametrize("name", ["NGram", "WordNGram", "MatchModel", "StreamCache"])
@pytest.mark.parametrize("tokens, active", [(np.array([-1, 2]), np.array([True, True])),
                                            (np.array([1.5, 2.0]), np.array([True, True])),
                                            (np.array([1]), np.array([True]))],
                         ids=["negative", "floats", "one-of-two"])
def test_a_host_model_s_step_refuses_ids_it_cannot_count_naming_them(name, tokens, active):
    """The n-gram, the word n-gram, the match model and the streams' caches each ``update`` with "the
    coded tokens (B,)" of a step. A negative id was counted silently, as NumPy indexes from the end (the
    n-gram's unigram added -1's count to the last token; the match model wrote it where -1 means "not
    coded yet"), a step of one token for two streams was taken, and floats failed deep inside NumPy
    ("arrays used as indices must be of integer type") or were taken. Each should name ``tokens``."""
    model, predict = _host_models()[name]
    predict(model)
    with pytest.raises((TypeError, ValueError), match="tokens"):
        model.update(tokens, active)
