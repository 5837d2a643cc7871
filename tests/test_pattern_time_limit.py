"""A custom pre-split pattern's split is time-limited by the text's length.

A tokenizer file may hold any pattern. One that backtracks without bound only on some text (not on
the plain-text probe a loader tries) used to hang every encode of that text, and with it
``python -m netcl_lite.compression compress``: ``(a|a)*b|[\\s\\S]`` takes 2^n steps on a run of n
``a``. The split now gives up after :func:`~netcl_lite.text.patterns.split_time_limit` seconds with a
``ValueError`` naming the pattern; real patterns stay ~100× inside that limit. A Hugging Face
``tokenizer.json`` pattern is also probed at load, as the project's own tokenizer file is.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
import regex

from netcl_lite.text import GPT2_PATTERN, GPT4_PATTERN, BPETokenizer
from netcl_lite.text.patterns import (
    SPLIT_SECONDS_BASE,
    SPLIT_SECONDS_PER_CHAR,
    compile_splitter,
    split_time_limit,
)

#: 2^n steps on a run of n ``a``; fast on text without long runs of ``a`` (the load probe has none)
EXPONENTIAL = r"(a|a)*b|[\s\S]"
#: exponential on any run of printable ASCII with no NUL after it: the load probe is one
ON_THE_PROBE = r"([ -~]|[ -~])*\x00|[\s\S]"


def _in_subprocess(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Python: on code without the limit the call hangs, and the test fails
    on the timeout instead of hanging the suite."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout)


def test_the_limit_grows_with_the_text_and_leaves_real_patterns_far_inside_it():
    assert split_time_limit(0) == SPLIT_SECONDS_BASE
    assert split_time_limit(1_000_000) == pytest.approx(SPLIT_SECONDS_BASE + 1e6 * SPLIT_SECONDS_PER_CHAR)
    # a custom (slow-path) spelling of GPT-4's pattern splits 400 kB exactly as regex does, far inside the limit
    custom = GPT4_PATTERN + "|\x00"
    text = (GPT4_PATTERN + " Hello wörld's 12345!!\n\t😀 ") * 2_000
    start = time.monotonic()
    assert compile_splitter(custom)(text) == regex.findall(custom, text)
    assert time.monotonic() - start < split_time_limit(len(text))


def test_a_pattern_that_backtracks_on_the_text_is_refused_in_bounded_time():
    """compile_splitter's split of 40 ``a`` with EXPONENTIAL ran for hours (2^40 steps)."""
    code = ("import sys, time\nfrom netcl_lite.text.patterns import compile_splitter\n"
            "split = compile_splitter(sys.argv[1])\n"
            "assert split('ab ba\\n') == ['ab', ' ', 'b', 'a', '\\n']\n"
            "start = time.monotonic()\n"
            "try:\n    split('a' * 40)\nexcept ValueError as exc:\n    print(f'{time.monotonic() - start:.2f}', exc)\n")
    r = _in_subprocess(code, EXPONENTIAL, timeout=60)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    seconds, message = r.stdout.split(" ", 1)
    assert float(seconds) < split_time_limit(40) + 10
    assert "backtracks" in message and "40 characters" in message and "(a|a)*b" in message, message


def test_a_tokenizer_whose_pattern_backtracks_on_some_text_refuses_to_encode_it(tmp_path):
    """BPETokenizer.encode hung on the same text with a loaded tokenizer of that pattern."""
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"format": "netcl_lite.bpe", "version": 1, "pattern": EXPONENTIAL,
                                "base_bytes": None, "special_tokens": {}, "merges": []}))
    code = ("import sys\nfrom netcl_lite.text.bpe import BPETokenizer\n"
            "tok = BPETokenizer.load(sys.argv[1])\nassert tok.encode('hello') == list(b'hello')\n"
            "try:\n    tok.encode('x' + 'a' * 40)\nexcept ValueError as exc:\n    print(exc)\n")
    r = _in_subprocess(code, str(path), timeout=60)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "backtracks" in r.stdout, r.stdout


def test_a_hugging_face_tokenizer_json_pattern_is_probed_at_load(tmp_path):
    """A tokenizer.json whose Split pattern backtracks on plain text loaded without a probe, and hung
    at the first encode instead of being refused naming the key."""
    BPETokenizer(pattern=GPT2_PATTERN).save_tokenizer_json(tmp_path / "tokenizer.json")
    doc = json.loads((tmp_path / "tokenizer.json").read_text())
    split = next(s for s in doc["pre_tokenizer"]["pretokenizers"] if s["type"] == "Split")
    split["pattern"]["Regex"] = ON_THE_PROBE
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc))
    code = ("import sys\nfrom netcl_lite.text.bpe import BPETokenizer\n"
            "try:\n    BPETokenizer.from_tokenizer_json(sys.argv[1])\nexcept ValueError as exc:\n    print(exc)\n")
    start = time.monotonic()
    r = _in_subprocess(code, str(tmp_path / "tokenizer.json"), timeout=60)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "pre_tokenizer" in r.stdout and "backtracks" in r.stdout, r.stdout
    assert time.monotonic() - start < 50


@pytest.mark.slow
def test_compress_with_such_a_model_folder_finishes_and_round_trips(tmp_path):
    """``compress IN OUT --model DIR`` hung on an input with a run of ``a`` when DIR's tokenizer
    pattern backtracks there; it now stores what the tokenizer cannot split in time, losslessly."""
    from netcl_lite.nn.lm import DecoderLM, LMConfig

    folder = tmp_path / "m"
    DecoderLM(LMConfig(vocab_size=300, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16),
              seed=1).save_pretrained(folder)
    (folder / "tokenizer.json").write_text(json.dumps(
        {"format": "netcl_lite.bpe", "version": 1, "pattern": EXPONENTIAL, "base_bytes": None,
         "special_tokens": {}, "merges": []}))
    data = b"ab " + b"a" * 40 + b"\n"
    (tmp_path / "in").write_bytes(data)
    for command, src, dst, *only in (("compress", "in", "blob", "--model-only"), ("decompress", "blob", "back")):
        r = subprocess.run([sys.executable, "-m", "netcl_lite.compression", command, str(tmp_path / src),
                            str(tmp_path / dst), "--model", str(folder), *only],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "back").read_bytes() == data
