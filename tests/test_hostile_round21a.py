"""Issue 58, an independent hostile check, round 21a: reproducers of defects beyond the cases of earlier
rounds (tests/test_hostile*.py, tests/test_compression_hostile.py), in the adaptation's public calls and
its settings, the tokenizer's choice of special tokens and the cache's key: an update asked for before
any token was observed divided by zero, settings given as NumPy scalars were kept as such (another
repr for equal settings, a dict JSON cannot write), a NumPy array or an unhashable element chosen as
special tokens ended in NumPy's or Python's error naming no parameter, and a single path given as a
key's ``reads`` was read character by character.

Each test asserts the correct behaviour; each failed on the code before its fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from netcl_lite import compression as cz
from netcl_lite import fingerprint
from netcl_lite.adaptation import AdaptConfig, Adapter
from netcl_lite.text import BPETokenizer

from cli_model import tiny_model


# -- Adapter.update and Adapter.batch before any observe ------------------------------------------------

@pytest.mark.parametrize("call", ["update", "batch"])
def test_an_update_before_any_token_is_observed_is_refused_saying_what_to_do(queue, call):
    """``Adapter.update()`` (and ``batch()``, the windows it trains on) on a fresh Adapter took a window
    of ``min(window, seen - 1) = 0`` positions and ended in ``ZeroDivisionError``: integer division or
    modulo by zero, naming nothing. It should be a ValueError saying to observe tokens first."""
    model, _, _ = tiny_model(queue)
    adapter = Adapter(model, 2, 0, AdaptConfig(optimizer="sgd", chunk=4))
    with pytest.raises(ValueError, match=r"no tokens observed yet.*observe\(tokens\)"):
        getattr(adapter, call)()
    adapter.observe(np.array([1, 2]))                 # one step observed: an update has a target to train on
    x, y = adapter.batch()
    assert x.shape == y.shape and x.shape[0] >= 2
    adapter.update()
    assert adapter.updates == 1


# -- AdaptConfig keeps NumPy scalars -------------------------------------------------------------------

def test_adapt_config_keeps_plain_values_whatever_numbers_it_is_given():
    """``AdaptConfig(chunk=np.int64(8), lr=np.float64(5e-4), optimizer=np.str_("rms"))`` passed its checks
    and kept the NumPy scalars: equal to the defaults, yet its repr (which the coder's fingerprint,
    ``compression.coder``, hashes) differed, and ``to_dict()`` (which the dynamic evaluation benchmark
    writes as JSON) could not be written: "Object of type int64 is not JSON serializable"."""
    given = AdaptConfig(chunk=np.int64(8), steps=np.int32(1), lr=np.float64(5e-4), optimizer=np.str_("rms"),
                        decay=np.float64(0.0), window=np.int64(32), beta1=np.float64(0.9),
                        ms_batches=np.uint8(8))
    assert given == AdaptConfig() and repr(given) == repr(AdaptConfig())
    assert cz.coder(cz.MODEL | cz.ADAPTING, given) == cz.coder(cz.MODEL | cz.ADAPTING, AdaptConfig())
    assert json.loads(json.dumps(given.to_dict())) == AdaptConfig().to_dict()
    assert all(type(v) in (int, float, str, bool) for v in given.to_dict().values())


# -- the special tokens a call allows ------------------------------------------------------------------

@pytest.fixture(scope="module")
def tok():
    t = BPETokenizer()
    t.train_from_iterator(["hello world " * 20], 280, progress=False)
    t.register_special_tokens({"<|a|>": 1000, "<|b|>": 1001})
    return t


@pytest.mark.parametrize("name", ["allowed_special", "disallowed_special"])
def test_special_tokens_chosen_as_a_numpy_array_are_taken(tok, name):
    """A NumPy array of special-token strings is an iterable of them, as the docstring asks; one of two
    or more ended in NumPy's "The truth value of an array with more than one element is ambiguous",
    naming no parameter."""
    text = "hi<|a|> x<|b|>"
    chosen = np.array(["<|a|>", "<|b|>"])
    if name == "allowed_special":
        assert tok.encode(text, allowed_special=chosen) == tok.encode(text, allowed_special={"<|a|>", "<|b|>"})
    else:
        with pytest.raises(ValueError, match="contains the special token '<|a|>'"):
            tok.encode(text, disallowed_special=chosen)


@pytest.mark.parametrize("value, shown", [([["<|a|>"]], r"\[\['<\|a\|>'\]\]"), ({1000}, "an element int 1000"),
                                          (b"all", "b'all'"), (bytearray(b"<|a|>"), "bytearray")])
@pytest.mark.parametrize("name", ["allowed_special", "disallowed_special"])
def test_special_tokens_chosen_as_no_strings_are_refused_naming_the_parameter(tok, name, value, shown):
    """An unhashable element ended in Python's "unhashable type: 'list'", naming no parameter; an id
    (1000, the token's id rather than its string) was listed as the string '1000' "not a special token";
    bytes were taken as their byte values (b"all" as ['108', '97'])."""
    with pytest.raises(TypeError, match=rf'{name} must be "all" or a set of special-token strings, got .*{shown}'):
        tok.encode("hi", **{name: value})
    with pytest.raises(TypeError, match=name):
        tok.encode_batch(["hi"], **{name: value})


def test_the_special_token_choices_that_worked_still_work(tok):
    text = "hi<|a|>"
    assert tok.encode(text, allowed_special="all")[-1] == 1000
    assert tok.encode(text, allowed_special=["<|a|>"])[-1] == 1000
    assert tok.encode(text, disallowed_special=()) == tok.encode_ordinary(text)
    assert tok.encode(text, disallowed_special=None) == tok.encode_ordinary(text)     # tiktoken's "none"
    with pytest.raises(ValueError, match="not special tokens"):
        tok.encode(text, allowed_special={"<|zz|>"})
    with pytest.raises(ValueError, match="does not allow"):
        tok.encode(text)


# -- fingerprint.key's reads ----------------------------------------------------------------------------

def test_a_key_s_reads_given_as_one_path_is_refused_not_read_by_character():
    """``key(source, reads="data.txt")`` sorted the string's characters and read each as a file: the '.'
    read the working folder, "Is a directory", naming a folder the caller never gave."""
    path = str(Path(fingerprint.__file__))
    with pytest.raises(TypeError, match=r"reads must be a list of the files.*wrap a single path as \[path\]"):
        fingerprint.key("print(1)\n", path, shared="x")
    with pytest.raises(TypeError, match="reads must hold paths.*int 1"):
        fingerprint.key("print(1)\n", [1], shared="x")


def test_a_key_s_reads_may_mix_str_and_paths():
    """A list of str and Path (both paths) ended in "'<' not supported between instances of 'PosixPath'
    and 'str'"; the key should be the same as for the same files given as one kind."""
    a, b = fingerprint.__file__, str(Path(fingerprint.__file__).with_name("checks.py"))
    same = fingerprint.key("x", [a, b], shared="s")
    assert fingerprint.key("x", [Path(a), b], shared="s") == same
    assert fingerprint.key("x", [b, Path(a)], shared="s") == same
    assert fingerprint.key("x", (p for p in [b, a]), shared="s") == same
