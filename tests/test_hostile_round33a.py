"""Round 33a: defects found by reading, each with the test that failed before its fix.

1. A ``tokenizer.json`` added token with ``"special": false`` was read as a special token, but
   ``tokenizers`` treats it as ordinary vocabulary (cut out of any text, kept when decoding skips
   special tokens), which no token of this tokenizer is. Such a file is now refused, naming the key.
2. An added token missing one of its seven keys (``single_word``, ``lstrip``, ...) loaded here,
   though ``tokenizers`` refuses the file; a null flag likewise. Both are named now.
3. A relative ``XDG_CACHE_HOME`` made PoCL put its kernel cache in the process's working folder;
   the XDG rules ignore a relative path, as the library's own cache does, and now PoCL's does too.
4. ``int32_range`` raised a bare TypeError from ``>`` for a size that is no int; it names it now.
"""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from netcl_lite.checks import int32_range
from netcl_lite.core import device as device_mod
from netcl_lite.text import BPETokenizer

ADDED_KEYS = ["id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"]


@pytest.fixture
def doc(tmp_path):
    path = tmp_path / "saved.json"
    BPETokenizer(special_tokens={"<|end|>": 256, "<|pad|>": 257}).save_tokenizer_json(path)
    return json.loads(path.read_text(encoding="utf-8"))


def load(tmp_path, doc):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return BPETokenizer.from_tokenizer_json(path)


def test_the_saved_file_holds_every_added_key_and_loads(doc, tmp_path):
    assert all(set(token) == set(ADDED_KEYS) for token in doc["added_tokens"])
    assert all(token["special"] is True for token in doc["added_tokens"])
    assert dict(load(tmp_path, doc).special_tokens) == {"<|end|>": 256, "<|pad|>": 257}


def test_a_non_special_added_token_is_refused_naming_the_key(doc, tmp_path):
    """tokenizers matches it in ordinary text (``encode("a<|pad|>")`` gives 257 there); read as a
    special token here, encode_ordinary would spell it out byte by byte: other ids, silently."""
    doc["added_tokens"][1]["special"] = False
    with pytest.raises(ValueError, match=re.escape("added_tokens[1].special: false is not supported: tokenizers "
                                                   "treats a non-special added token as ordinary vocabulary")):
        load(tmp_path, doc)


@pytest.mark.parametrize("key", ADDED_KEYS)
def test_an_added_token_missing_a_key_is_refused_naming_it(doc, tmp_path, key):
    del doc["added_tokens"][1][key]
    with pytest.raises(ValueError, match=re.escape(f"added_tokens[1].{key}: is missing; tokenizers refuses")):
        load(tmp_path, doc)


@pytest.mark.parametrize("key", ["single_word", "lstrip", "rstrip", "normalized", "special"])
def test_a_null_flag_on_an_added_token_is_refused(doc, tmp_path, key):
    doc["added_tokens"][0][key] = None      # tokenizers wants a bool there
    with pytest.raises(ValueError, match=re.escape(f"added_tokens[0].{key}: None is not supported")):
        load(tmp_path, doc)


@pytest.mark.parametrize("first", ["", "from netcl_lite import fingerprint; fingerprint.environment()\n"],
                         ids=["an op first", "the execution cache's key first"])
def test_a_relative_xdg_cache_home_makes_no_pocl_cache_in_the_working_folder(tmp_path, first):
    """The key lists the OpenCL platforms before it makes the device: PoCL starts there then."""
    env = {k: v for k, v in os.environ.items() if k != "POCL_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = "relative-cache"
    code = (first + "import os, numpy as np, netcl_lite as nl\n"
            "x = nl.tensor(np.arange(4, dtype=np.float32))\n"
            "print((x + x).numpy().tolist())\n"
            "print(os.environ.get('POCL_CACHE_DIR'))\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines() == ["[0.0, 2.0, 4.0, 6.0]", os.path.join(os.path.expanduser("~"), ".cache", "pocl")]
    assert sorted(os.listdir(tmp_path)) == [], "a cache folder appeared in the working folder"


def test_pocl_cache_folder_ignores_a_relative_xdg_cache_home(monkeypatch):
    monkeypatch.setenv("POCL_CACHE_DIR", "set")       # recorded as it was: undone whatever the test sets
    monkeypatch.delenv("POCL_CACHE_DIR")
    monkeypatch.setattr(device_mod, "_cache_dir_by_us", None)
    monkeypatch.setenv("XDG_CACHE_HOME", "rel/cache")
    home = os.path.join(os.path.expanduser("~"), ".cache", "pocl")
    assert device_mod.pocl_cache_folder() == (device_mod.Path(home), "your home folder")
    assert device_mod.keep_pocl_cache_absolute() is True and os.environ["POCL_CACHE_DIR"] == home
    assert device_mod.pocl_cache_folder() == (device_mod.Path(home), "your home folder")
    assert device_mod.keep_pocl_cache_absolute() is False        # set once; a caller's choice stands
    monkeypatch.setenv("POCL_CACHE_DIR", "/somewhere/else")
    assert device_mod.pocl_cache_folder() == (device_mod.Path("/somewhere/else"), "POCL_CACHE_DIR")
    monkeypatch.delenv("POCL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/abs/cache")
    assert device_mod.keep_pocl_cache_absolute() is False
    assert device_mod.pocl_cache_folder() == (device_mod.Path("/abs/cache/pocl"), "XDG_CACHE_HOME")


@pytest.mark.parametrize("value", ["7", 7.0, None, True])
def test_int32_range_names_a_size_that_is_no_int(value):
    with pytest.raises(TypeError, match=f"^elements must be an int \\(a size the kernels index\\), got "
                                        f"{type(value).__name__} "):
        int32_range(rows=3, elements=value)


def test_int32_range_still_takes_numpy_ints_and_refuses_big_ones():
    int32_range(elements=np.int64(2**31 - 1), rows=5)
    with pytest.raises(ValueError, match="elements=2147483648 exceeds the 32-bit index range"):
        int32_range(elements=2**31)


def test_tokenizers_does_match_a_non_special_added_token_in_ordinary_text(doc):
    """Why the file is refused rather than read: there the token is ordinary vocabulary, its id
    comes out of text where special tokens stay text (``encode_special_tokens``), and decoding
    that skips special tokens keeps it; no token of this tokenizer behaves so (encode_ordinary
    spells a special token out byte by byte)."""
    tokenizers = pytest.importorskip("tokenizers")
    doc["added_tokens"][1]["special"] = False
    hf = tokenizers.Tokenizer.from_str(json.dumps(doc))
    hf.encode_special_tokens = True
    assert hf.encode("a<|pad|>b<|end|>").ids == [97, 257, 98, *b"<|end|>"]
    assert hf.decode([256, 257], skip_special_tokens=True) == "<|pad|>"
    assert 257 not in BPETokenizer(special_tokens={"<|end|>": 256, "<|pad|>": 257}).encode_ordinary("a<|pad|>b")
