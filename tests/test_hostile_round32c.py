r"""Round 32c: the tokenizer as ``--model DIR`` reaches it, with untrusted files and untrusted text.

1. A special token whose string holds a lone surrogate (JSON's ``"\\ud800"`` reads as one) was checked
   as a non-empty string and then failed to become bytes: a model file's was refused with Python's bare
   ``'utf-8' codec can't encode character`` (no file, no field), and ``register_special_tokens`` or
   ``add_token`` raised that only after registering it, so the tokenizer kept a special token that
   ``n_vocab`` did not count and ``decode`` did not know, and ``encode(..., allowed_special="all")``
   turned text that is not UTF-8 into its id. It is refused, naming the token, before anything changes.
2. A custom pattern's split is time-limited by the length of the text it splits, but the limit
   (one second plus 20 µs a character) was granted afresh to every call: text the compressor cuts at
   each invalid UTF-8 byte, a text cut at each allowed special token, a batch of documents and the
   messages of a ChatFormat each took up to a second a piece, so a few kB whose runs each took just under a second ran for hours
   where the same text in one piece is refused in about a second. A call now shares one limit, of its
   whole length, among all its splits.
3. ``regex`` compiles a counted repeat in time about its count, before any split's limit applies: a
   model file whose pattern was ``x{4294967294}|[\s\S]`` (20 characters) or three nested ``{1000}``
   hung ``BPETokenizer.load`` for hours. Counted repeats that spell out more than
   :data:`~netcl_lite.text.patterns.MAX_REPEATS` are refused before compiling, naming the pattern, and
   counts are read as verbose mode reads them (``(?x)x{42949 67294}`` is ``x{4294967294}``).
"""

from __future__ import annotations

import json
import time

import pytest

from netcl_lite.text import BPETokenizer
from netcl_lite.text.patterns import split_time_limit

#: 2^n steps on a run of n ``a`` (as in test_pattern_time_limit): 21 ``a`` take about half a second
EXPONENTIAL = r"(a|a)*b|[\s\S]"
RUN = "a" * 21
PIECES = 16


def _model_file(tmp_path, **fields):
    doc = {"format": "netcl_lite.bpe", "version": 1, "pattern": None, "base_bytes": None,
           "special_tokens": {}, "merges": []} | fields
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc))   # ensure_ascii: a lone surrogate is written as "\ud800"
    return path


# -- 1. special tokens that are not UTF-8 text -------------------------------------------------------

def test_a_model_file_special_token_with_a_lone_surrogate_is_refused_naming_it(tmp_path):
    path = _model_file(tmp_path, special_tokens={"<|x\ud800|>": 300})
    with pytest.raises(ValueError, match=r"special token '<\|x\\ud800\|>'.*UTF-8") as info:
        BPETokenizer.load(path)
    assert str(path) in str(info.value)
    assert not isinstance(info.value, UnicodeError)


@pytest.mark.parametrize("how", ["register", "add_token", "constructor"])
def test_a_special_token_with_a_lone_surrogate_is_refused_and_not_kept(how):
    tok = BPETokenizer(special_tokens={"<|end|>": 256})
    with pytest.raises(ValueError, match=r"special token '\\udc80'.*UTF-8"):
        if how == "register":
            tok.register_special_tokens({"\udc80": 300})
        elif how == "add_token":
            tok.add_token("\udc80")
        else:
            BPETokenizer(special_tokens={"\udc80": 300})
    assert dict(tok.special_tokens) == {"<|end|>": 256}
    assert tok.n_vocab == 257
    with pytest.raises(ValueError, match="surrogate|UTF-8"):   # not silently turned into a special id
        tok.encode("a\udc80", allowed_special="all")


# -- 2. one time limit per call, not per split ------------------------------------------------------

def _refused_in_time(call, length: int) -> float:
    start = time.monotonic()
    result = call()
    elapsed = time.monotonic() - start
    # each piece takes ~0.5 s: without a shared limit the call ran PIECES times that (8 s or more)
    assert elapsed < split_time_limit(length) + 2.5, f"{elapsed:.1f} s for {length} characters"
    return result


def test_the_compressor_tokenize_shares_one_limit_across_its_utf8_runs():
    from netcl_lite.compression import tokenize

    tok = BPETokenizer(pattern=EXPONENTIAL)
    data = (RUN.encode() + b"\xff") * PIECES
    assert tokenize(b"ab\xffba", tok) is not None
    assert _refused_in_time(lambda: tokenize(data, tok), len(data)) is None   # stored, not tokenized


def test_encode_shares_one_limit_across_the_pieces_between_allowed_special_tokens():
    tok = BPETokenizer(pattern=EXPONENTIAL, special_tokens={"<|s|>": 256})
    assert tok.encode("ab<|s|>b", allowed_special="all") == [97, 98, 256, 98]
    text = (RUN + "<|s|>") * PIECES

    def call():
        with pytest.raises(ValueError, match="backtracks"):
            tok.encode(text, allowed_special="all")

    _refused_in_time(call, len(text))


@pytest.mark.parametrize("method", ["encode_ordinary_batch", "encode_batch"])
def test_a_batch_shares_one_limit_across_its_documents(method):
    tok = BPETokenizer(pattern=EXPONENTIAL)
    assert getattr(tok, method)(["ab", "b"]) == [[97, 98], [98]]
    texts = [RUN] * PIECES

    def call():
        with pytest.raises(ValueError, match="backtracks"):
            getattr(tok, method)(texts)

    _refused_in_time(call, sum(map(len, texts)))


# -- 3. a short pattern that takes hours to compile -------------------------------------------------

@pytest.mark.parametrize("pattern", [r"x{4294967294}|[\s\S]", r"(?:(?:(?:x{1000}){1000}){1000})|[\s\S]"])
def test_a_pattern_whose_counted_repeats_take_hours_to_compile_is_refused_at_once(tmp_path, pattern):
    """``regex`` compiles ``x{n}`` in time about n: loading such a 20-character pattern hung."""
    import subprocess
    import sys

    path = _model_file(tmp_path, pattern=pattern)
    code = ("import sys\nfrom netcl_lite.text.bpe import BPETokenizer\n"
            "for make in (lambda: BPETokenizer.load(sys.argv[1]), lambda: BPETokenizer(pattern=sys.argv[2])):\n"
            "    try:\n        make()\n    except ValueError as exc:\n        print(exc)\n")
    r = subprocess.run([sys.executable, "-c", code, str(path), pattern], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    first, second = r.stdout.splitlines()
    assert str(path) in first and "repeats" in first and "x{" in first, first
    assert "repeats" in second, second


@pytest.mark.parametrize("pattern", [r"\p{N}{1,3}+|[\s\S]", r"(?:ab){2,50}|x{300}|[\s\S]"])
def test_patterns_that_count_a_little_still_load(pattern):
    assert BPETokenizer(pattern=pattern).encode("1234 ab") == list(b"1234 ab")


def test_a_chat_shares_one_limit_across_its_messages():
    from netcl_lite.text.chat import ChatFormat

    tok = BPETokenizer(pattern=EXPONENTIAL)
    for marker in ("<|start|>", "<|message|>", "<|end|>"):
        tok.add_token(marker)
    chat = ChatFormat(tok)
    assert chat.render([{"role": "user", "content": "ab"}])[-3:] == [97, 98, tok.special_tokens["<|end|>"]]
    messages = [{"role": "user", "content": RUN}] * PIECES

    def call():
        with pytest.raises(ValueError, match="backtracks"):
            chat.render(messages)

    _refused_in_time(call, PIECES * (len(RUN) + len("user")))


@pytest.mark.parametrize("pattern", ["(?x)x{42949 67294}|[\\s\\S]", "(?x)x{4294#\n967294}|[\\s\\S]",
                                     "(?x:x{1 000 000 000})|[\\s\\S]"])
def test_a_verbose_pattern_cannot_hide_its_count_in_spaces_or_comments(pattern):
    """In verbose mode ``regex`` reads ``x{1 0}`` as ``x{10}``: the count must be read the same way."""
    import subprocess
    import sys

    code = ("import sys\nfrom netcl_lite.text.bpe import BPETokenizer\n"
            "try:\n    BPETokenizer(pattern=sys.argv[1])\nexcept ValueError as exc:\n    print(exc)\n")
    r = subprocess.run([sys.executable, "-c", code, pattern], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "repeats" in r.stdout, (r.stdout, r.stderr)
