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

