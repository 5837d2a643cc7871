"""Issue 58, an independent hostile check, round 18a: reproducers of defects in the compressor and its
command line beyond the cases of earlier rounds (tests/test_hostile*.py, tests/test_compression_hostile.py):
a public exception that cannot cross a process boundary, numbers too large for a float, the host
models' steps taken out of turn, and command-line messages whose advice cannot be followed.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import contextlib
import copy
import io
import pickle

import numpy as np
import pytest

from netcl_lite import compression as cz

from cli_model import TEXT, listing as _listing, tiny_model, write_model_folder


@pytest.fixture(scope="module")
def tiny(queue):
    """(model, tokenizer, primer ids): a small untrained model, a 300-token BPE trained on TEXT, TEXT's ids."""
    return tiny_model(queue)


@pytest.fixture(scope="module")
def model_dir(queue, tmp_path_factory):
    return write_model_folder(queue, tmp_path_factory.mktemp("round18a") / "model")


def _main(args) -> tuple[int, str]:
    """(exit status, standard error) of the command line run in this process."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cz.main([str(a) for a in args])
    return code, err.getvalue()


# -- AdaptationDiverged: a public exception that crosses a process boundary -----------------------------------

@pytest.mark.parametrize("how", ["pickle", "copy", "deepcopy"])
def test_adaptation_diverged_survives_pickling_and_copying(how):
    """``compress(..., adapt=True)`` run in a worker process (``concurrent.futures.ProcessPoolExecutor``,
    ``multiprocessing.Pool``) sends its exception to the parent pickled. ``AdaptationDiverged`` takes
    three arguments but passes only its message to ``Exception``, so unpickling it (and ``copy.copy``)
    called ``AdaptationDiverged(message)`` and failed with "missing 2 required positional arguments":
    the parent got a broken pool, not the error. It should come back whole."""
    exc = cz.AdaptationDiverged(3, 5e-4, "inf in the logits")
    again = {"pickle": lambda e: pickle.loads(pickle.dumps(e)), "copy": copy.copy, "deepcopy": copy.deepcopy}[how](exc)
    assert type(again) is cz.AdaptationDiverged and str(again) == str(exc)
    assert (again.updates, again.lr, again.cause, again.counted) == (3, 5e-4, "inf in the logits", "3 updates")


# -- AdaptConfig: a number too large for a float ---------------------------------------------------------------

@pytest.mark.parametrize("field", ["lr", "decay", "eps", "rms_floor", "beta1"])
@pytest.mark.parametrize("value", [10**400, 10**5000], ids=["400 digits", "5000 digits"])
def test_adapt_config_refuses_a_number_too_large_for_a_float_naming_it(field, value):
    """``AdaptConfig``'s real-valued fields are checked with ``math.isfinite``, which cannot take an int
    too large for a float: ``AdaptConfig(lr=10**400)`` failed with ``OverflowError: int too large to
    convert to float``, naming no field (and past 4,300 digits the message's ``repr`` would fail in
    turn). It should be the ValueError naming the field that any other out-of-range value gets, in a
    message of bounded length."""
    from netcl_lite.adaptation import AdaptConfig

    with pytest.raises(ValueError, match=rf"^{field} must be") as refused:
        AdaptConfig(**{field: value})
    assert len(str(refused.value)) < 300, str(refused.value)[:300]


# -- the host models: a step taken out of turn ---------------------------------------------------------------

def _steps():
    """name -> (a fresh model, its predict for the step, its update with the step's tokens)."""
    from netcl_lite.context_mixing import ContextMixer, GeometricMixer, TreeSSE
    from netcl_lite.match import MatchModel
    from netcl_lite.ngram import Mixer, WordNGram

    primer = np.arange(50) % 7
    pieces = {i: bytes([97 + i]) for i in range(10)}
    tokens, active = np.array([1, 2]), np.array([True, True])
    parts = [np.full((2, 10), 0.1), np.full((2, 10), 0.1)]
    return {
        "WordNGram": (lambda: WordNGram(primer, 10, 2, pieces), lambda m: m.predict(np.ones(10)),
                      lambda m: m.update(tokens, active)),
        "MatchModel": (lambda: MatchModel(primer, np.array([5, 5])), lambda m: m.predict(),
                       lambda m: m.update(tokens, active)),
        "ContextMixer": (lambda: ContextMixer(primer, 10, np.array([5, 5]), pieces),
                         lambda m: m.predict(np.full((2, 10), 0.1)), lambda m: m.update(tokens, active)),
        "Mixer": (lambda: Mixer(8), lambda m: m.mix(parts * 3, np.zeros(2, np.int64), np.ones(2)),
                  lambda m: m.update(tokens, parts[0], active)),
        "GeometricMixer": (lambda: GeometricMixer(2, 9, [], 10, True),
                           lambda m: m.mix(parts, np.zeros(2, np.int64), [], np.zeros(2, np.int64)),
                           lambda m: m.update(tokens, active)),
        "TreeSSE": (lambda: TreeSSE(10), lambda m: m(parts[0]), lambda m: m.update(tokens, active)),
    }


@pytest.mark.parametrize("name", ["WordNGram", "MatchModel", "ContextMixer", "Mixer", "GeometricMixer", "TreeSSE"])
def test_a_host_model_s_update_out_of_turn_is_refused_saying_so(name):
    """Each of these takes "predict, then update with the step's tokens" (the mixer's ``ContextMixer``
    and the compressor's predictor refuse an update before a prediction). Called before any
    prediction, the parts' updates ended in an AttributeError ("'WordNGram' object has no attribute
    '_look'", "'MatchModel' object has no attribute 'predicted'" ...); called twice for one prediction,
    every one of them, ``ContextMixer`` too, took the second update silently: a match extended by a
    stale prediction, weights moved twice by one step's gradient, tokens counted twice. Both should be
    a ValueError saying that update follows the prediction, and the step in turn still go."""
    make, predict, update = _steps()[name]
    model = make()
    with pytest.raises(ValueError, match="follows"):
        update(model)
    predict(model)
    update(model)
    with pytest.raises(ValueError, match="follows"):
        update(model)
    predict(model)                                   # the next step in turn still goes
    update(model)


# -- the command line: an input over the limit ----------------------------------------------------------------

@pytest.mark.parametrize("source", ["file", "standard input"])
def test_an_input_over_the_limit_is_refused_saying_to_split_it(tmp_path, monkeypatch, source):
    """Over ``MAX_INPUT_BYTES`` (the coder's memory bound, documented), ``compress`` in Python says "split
    it and compress each part". The command line said of such an IN "is it the right file?" (a file
    it should take is doubted) and, from standard input, gave no advice at all. It should say what to
    do: split it."""
    monkeypatch.setattr(cz, "MAX_INPUT_BYTES", 100)
    src = tmp_path / "in.txt"
    src.write_bytes(b"x" * 101)
    out = tmp_path / "out.nclz"
    if source == "file":
        code, err = _main(["compress", src, out])
    else:
        stdin = io.TextIOWrapper(io.BytesIO(b"x" * 101))
        monkeypatch.setattr("sys.stdin", stdin)
        code, err = _main(["compress", "-", out])
    assert code == 1, (code, err)
    assert "100 bytes" in err and "split" in err and "right file" not in err, err
    assert _listing(tmp_path) == ["in.txt"]


# -- the command line: a blob of a primer given to compress ---------------------------------------------------

def test_the_command_line_refuses_a_blob_of_a_given_primer_naming_a_way_to_decode_it(tiny, model_dir, tmp_path,
                                                                                    monkeypatch):
    """A blob that the library compressed with ``primer=`` (the counts started from text of the user's
    own) was refused by ``decompress IN OUT`` only after the model was loaded, with the library's advice,
    "pass the primer the compressing side used": the command line has no option for a primer, so the
    advice cannot be followed. It should be refused from the header alone (before any model is loaded),
    naming the Python call that decodes it."""
    model, tok = cz._load(str(model_dir))
    blob = cz.compress((TEXT * 3).encode(), model, tok, primer=tiny[2])
    assert cz.read_header(blob)["mode"] == cz.MIXED
    src = tmp_path / "in.nclz"
    src.write_bytes(blob)

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(cz, "_load", no_model)
    code, err = _main(["decompress", src, tmp_path / "out.txt", "--model", model_dir])
    assert code == 1, (code, err[-600:])
    assert "primer" in err and "decompress(blob, model, tokenizer, primer=" in err, err
    assert _listing(tmp_path) == ["in.nclz"]
