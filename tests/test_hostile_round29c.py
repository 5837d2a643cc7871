"""Hostile round 29c: a ``--model DIR`` folder whose ``tokenizer.json`` holds a pre-split pattern
that loads (it splits the printable-ASCII probe) but leaves other characters out of every chunk.

Such a tokenizer cannot spell every input, and it cannot encode Chapter 9's training text, the
default primer. ``compress`` must then store the input (as it does for a vocabulary without every
byte) or refuse naming the model folder; before, it raised the splitter's ValueError, which the
command line blamed on IN.

Also a model file whose pattern backtracks without bound on the loader's own plain-text probe:
loading it hung (minutes and more on a 200-byte file) instead of refusing it naming the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from netcl_lite.compression import compress, decompress, tokenize
from netcl_lite.nn.lm import DecoderLM, LMConfig
from netcl_lite.text.bpe import BPETokenizer

#: splits printable ASCII and whitespace only: it loads, but 'é' is in no chunk
ASCII_ONLY = r"[ -~\s]+"
SMALL = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=16)


def _tokenizer_file(path, pattern: str) -> None:
    doc = {"format": "netcl_lite.bpe", "version": 1, "pattern": pattern, "base_bytes": None,
           "special_tokens": {}, "merges": []}
    path.write_text(json.dumps(doc))


@pytest.fixture
def ascii_tokenizer(tmp_path):
    _tokenizer_file(tmp_path / "tokenizer.json", ASCII_ONLY)
    return BPETokenizer.load(tmp_path / "tokenizer.json")


def test_tokenize_says_none_when_the_pattern_skips_a_character(ascii_tokenizer):
    """tokenize raised the splitter's ValueError instead of saying the tokenizer cannot spell the data."""
    assert tokenize("héllo\n".encode(), ascii_tokenizer) is None
    assert tokenize(b"hello\n", ascii_tokenizer) is not None


def test_compress_stores_what_the_pattern_cannot_split_and_round_trips(ascii_tokenizer):
    """compress raised a ValueError about the pattern (blamed on the data) rather than storing it losslessly."""
    model = DecoderLM(LMConfig(vocab_size=300, **SMALL), seed=1)
    data = "héllo wörld\n".encode()
    blob = compress(data, model, ascii_tokenizer, mix=False)
    assert decompress(blob, model, ascii_tokenizer) == data


def test_cli_blames_the_model_folder_when_its_tokenizer_cannot_encode_the_primer(tmp_path):
    """The command line said 'IN: pattern ... does not match every character', blaming the input, when
    the --model folder's tokenizer.json could not encode Chapter 9's training text (the default primer)."""
    folder = tmp_path / "m"
    DecoderLM(LMConfig(vocab_size=300, **SMALL), seed=1).save_pretrained(folder)
    _tokenizer_file(folder / "tokenizer.json", ASCII_ONLY)
    src = tmp_path / "in"
    src.write_bytes(b"hello world\n")
    r = subprocess.run([sys.executable, "-m", "netcl_lite.compression", "compress", str(src), str(tmp_path / "out"),
                        "--model", str(folder)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr
    message = r.stderr.split(": ", 1)[1]
    assert message.startswith(f"--model {folder}"), r.stderr
    assert "tokenizer.json" in message and "primer" in message, r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


#: exponential backtracking on any run of printable ASCII with no NUL after it (the loader's probe is one)
BACKTRACKING = r"([ -~]|[ -~])*\x00|[\s\S]"


def test_a_pattern_that_backtracks_without_bound_is_refused_at_load_naming_the_file(tmp_path):
    """BPETokenizer.load hung splitting its plain-text probe with a pattern that backtracks exponentially."""
    path = tmp_path / "tokenizer.json"
    _tokenizer_file(path, BACKTRACKING)
    code = ("import sys\nfrom netcl_lite.text.bpe import BPETokenizer\n"
            "try:\n    BPETokenizer.load(sys.argv[1])\nexcept ValueError as exc:\n    print(exc)\n")
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert r.stdout.startswith(f"{path}: ") and "backtracks" in r.stdout, r.stdout
    assert time.monotonic() - start < 100
