"""tiktoken's .tiktoken file: exact round trips, named errors for each kind of damage, and a fuzz.

The fuzz damages a small valid file in the ways files get damaged (cut, lines lost or
doubled, ranks changed, bytes inserted). Each damaged file either raises a ValueError
naming the file and line, or loads exactly the vocabulary that tiktoken's own loader
reads from it and encodes like tiktoken. With the original's sha256, any damage raises.
"""

import base64
import hashlib
import os

import pytest
import tiktoken
import tiktoken.load
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from netcl_lite.text import GPT2_PATTERN, BPETokenizer
from netcl_lite.text.tiktoken_file import read_tiktoken_file

PROBE = "the river café 日本 aaaa!"
fuzz_settings = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def original(trained, tmp_path_factory):
    path = tmp_path_factory.mktemp("tiktoken") / "small.tiktoken"
    trained.save_tiktoken_file(path)
    return path.read_bytes()


@pytest.fixture(scope="module", autouse=True)
def no_tiktoken_cache():
    with pytest.MonkeyPatch.context() as mp:  # tiktoken caches files by path; the fuzz rewrites one path
        mp.setenv("TIKTOKEN_CACHE_DIR", "")
        yield


def write(tmp_path, data: bytes):
    path = tmp_path / "vocab.tiktoken"
    path.write_bytes(data)
    return path


def test_file_format_is_tiktokens(trained, original, tmp_path):
    lines = original.decode().splitlines()
    assert lines[97] == "YQ== 97" and lines[-1].endswith(f" {len(trained.mergeable_ranks()) - 1}")
    assert tiktoken.load.load_tiktoken_bpe(str(write(tmp_path, original))) == trained.mergeable_ranks()
    by_rank = sorted(trained.mergeable_ranks().items(), key=lambda item: item[1])
    assert original == b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for t, r in by_rank)


def test_round_trip_gives_identical_ids_and_merges(trained, original, tmp_path):
    specials = {"<|endoftext|>": 400}
    loaded = BPETokenizer.from_tiktoken_file(write(tmp_path, original), GPT2_PATTERN, specials,
                                             expected_sha256=hashlib.sha256(original).hexdigest())
    assert dict(loaded.merges) == dict(trained.merges)
    text = PROBE + "<|endoftext|>"
    assert loaded.encode(text, allowed_special="all") == trained.encode_ordinary(PROBE) + [400]
    loaded.save_tiktoken_file(tmp_path / "again.tiktoken")
    assert (tmp_path / "again.tiktoken").read_bytes() == original


def lines_of(original):
    return original.split(b"\n")[:-1]


def joined(lines):
    return b"\n".join(lines) + b"\n"


def last_rank(d, rank):
    lines = lines_of(d)
    return joined([*lines[:-1], lines[-1].partition(b" ")[0] + b" %d" % rank])


@pytest.mark.parametrize("damage, match", [  # {n}: lines in the undamaged file
    (lambda d: d[:-1], "line {n}: the file does not end with a newline"),
    (lambda d: d[:-3], "line {n}: the file does not end with a newline"),
    (lambda d: b"", "line 1: the file is empty"),
    (lambda d: b"\n", "line 1: b'' is not '<base64> <rank>'"),
    (lambda d: joined(lines_of(d)[:100] + lines_of(d)[101:]), "line {n-1}: rank {n-1} is out of range: {n-1} lines"),
    (lambda d: joined([*lines_of(d), lines_of(d)[5]]), "line {n+1}: rank 5 is out of range|lines 6 and {n+1} both have rank 5"),
    (lambda d: joined([*lines_of(d), lines_of(d)[5].replace(b" 5", b" %d" % len(lines_of(d)))]),
     "lines 6 and {n+1} both hold the token"),
    (lambda d: last_rank(d, len(lines_of(d)) - 2), "lines {n-1} and {n} both have rank {n-2}"),
    (lambda d: d.replace(b"YQ== 97", b"YQ=! 97"), "line 98: b'YQ=!' is not valid base64"),
    (lambda d: d.replace(b"YQ== 97", b"YQ= 97"), "line 98: b'YQ=' is not valid base64"),
    (lambda d: d.replace(b"YQ== 97", b"YQ==  97"), "line 98: .* is not '<base64> <rank>'"),
    (lambda d: d.replace(b"YQ== 97", b"YQ== -97"), "line 98: .* is not '<base64> <rank>'"),
    (lambda d: d.replace(b"YQ== 97", b"YQ== 97 1"), "line 98: .* is not '<base64> <rank>'"),
    (lambda d: d.replace(b"YQ== 97\n", b"YQ== 97\r\n"), "line 98: .* is not '<base64> <rank>'"),
    (lambda d: d.replace(b"YQ== 97", b"YQ== 99999999999999999999999"), "line 98: rank 99999999999999999999999 is out of range"),
    (lambda d: d.replace(b"YQ== 97", b" 97"), "line 98: the token is empty"),
    (lambda d: d.replace(b"YQ== 97", b"YWI= 97"), "line 98: ranks 0..255 must be the 256 single bytes"),
    (lambda d: joined(lines_of(d)[:256] + [base64.b64encode(b"xyz") + b" 256"] + lines_of(d)[257:]),
     "line 257: token b'xyz' .* not the merge of two lower-ranked tokens"),
])
def test_each_damage_is_a_value_error_naming_the_line(original, tmp_path, damage, match):
    n = len(lines_of(original))
    match = match.format(**{"n": n, "n-1": n - 1, "n-2": n - 2, "n+1": n + 1})
    with pytest.raises(ValueError, match=match):
        BPETokenizer.from_tiktoken_file(write(tmp_path, damage(original)), GPT2_PATTERN)


def test_sha256_and_special_tokens_are_checked(original, tmp_path):
    path = write(tmp_path, original)
    with pytest.raises(ValueError, match="sha256 is .*, expected 0{64}; the file is damaged"):
        BPETokenizer.from_tiktoken_file(path, GPT2_PATTERN, expected_sha256="0" * 64)
    with pytest.raises(ValueError, match="expected_sha256='abc' is not a sha256 hex digest"):
        BPETokenizer.from_tiktoken_file(path, GPT2_PATTERN, expected_sha256="abc")
    with pytest.raises(TypeError, match="expected_sha256 must be a str"):
        BPETokenizer.from_tiktoken_file(path, GPT2_PATTERN, expected_sha256=b"0" * 64)
    with pytest.raises(ValueError, match="special token '<\\|x\\|>' has id 280, which is already a byte-level token"):
        BPETokenizer.from_tiktoken_file(path, GPT2_PATTERN, {"<|x|>": 280})
    with pytest.raises(ValueError, match="not a valid regex"):
        BPETokenizer.from_tiktoken_file(path, "(unclosed")


damage = st.one_of(
    st.tuples(st.just("cut"), st.integers(0, 10_000), st.just(b"")),
    st.tuples(st.just("insert"), st.integers(0, 10_000), st.binary(min_size=1, max_size=4)
              | st.text(alphabet="AQIYWa=+/ 0123456789\n\r\t-", min_size=1, max_size=4).map(str.encode)),
    st.tuples(st.just("drop line"), st.integers(0, 10_000), st.just(b"")),
    st.tuples(st.just("double line"), st.integers(0, 10_000), st.just(b"")),
    st.tuples(st.just("rank"), st.integers(0, 10_000),
              st.integers(0, 400).map(lambda r: str(r).encode()) | st.sampled_from([b"1" * 30, b"-1", b"", b"0x10"])),
    st.tuples(st.just("token"), st.integers(0, 10_000),
              st.binary(min_size=0, max_size=4).map(base64.b64encode) | st.text("A+/=a", max_size=5).map(str.encode)),
    st.tuples(st.just("swap ranks"), st.integers(0, 10_000), st.integers(0, 10_000).map(lambda r: str(r).encode())),
)


def damaged(original: bytes, damages) -> bytes:
    data = original
    for kind, at, arg in damages:
        lines = data.split(b"\n")
        i = at % len(lines)
        if kind == "cut":
            data = data[:at % (len(data) + 1)]
        elif kind == "insert":
            at %= len(data) + 1
            data = data[:at] + arg + data[at:]
        elif kind == "drop line":
            data = b"\n".join(lines[:i] + lines[i + 1:])
        elif kind == "double line":
            data = b"\n".join(lines[:i + 1] + lines[i:])
        elif kind == "rank":
            lines[i] = lines[i].partition(b" ")[0] + b" " + arg
            data = b"\n".join(lines)
        elif kind == "token":
            lines[i] = arg + b" " + lines[i].partition(b" ")[2]
            data = b"\n".join(lines)
        else:  # two lines trade ranks: often a valid file describing another vocabulary
            j = int(arg) % len(lines)
            (a, _, ra), (b, _, rb) = lines[i].partition(b" "), lines[j].partition(b" ")
            lines[i], lines[j] = a + b" " + rb, b + b" " + ra
            data = b"\n".join(lines)
    return data


@fuzz_settings
@given(damages=st.lists(damage, min_size=1, max_size=3))
@pytest.mark.slow
def test_fuzzed_files_raise_a_named_error_or_load_exactly_what_tiktoken_reads(original, tmp_path, damages):
    data = damaged(original, damages)
    path = write(tmp_path, data)
    if data != original:
        with pytest.raises(ValueError, match="sha256"):
            BPETokenizer.from_tiktoken_file(path, GPT2_PATTERN, expected_sha256=hashlib.sha256(original).hexdigest())
    try:
        tok = BPETokenizer.from_tiktoken_file(path, GPT2_PATTERN)
    except ValueError as exc:
        assert str(exc).startswith(f"{path}: line"), str(exc)
        event("named error")
        return
    event("loaded")
    ranks = tiktoken.load.load_tiktoken_bpe(str(path))
    assert tok.mergeable_ranks() == ranks  # the whole file, nothing partial
    enc = tiktoken.Encoding("fuzz", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
    assert tok.encode_ordinary(PROBE) == enc.encode_ordinary(PROBE)
    assert tok.decode(tok.encode_ordinary(PROBE)) == PROBE


def test_a_file_cut_at_a_line_break_loads_shorter_without_the_hash_and_fails_with_it(original, tmp_path):
    cut = joined(lines_of(original)[:280])
    path = write(tmp_path, cut)
    assert len(BPETokenizer.from_tiktoken_file(path, GPT2_PATTERN).vocab) == 280
    with pytest.raises(ValueError, match="sha256"):
        BPETokenizer.from_tiktoken_file(path, GPT2_PATTERN, expected_sha256=hashlib.sha256(original).hexdigest())


def test_reader_reports_lines_of_ranks(original, tmp_path):
    lines = lines_of(original)
    tokens, line_of = read_tiktoken_file(write(tmp_path, joined([lines[1], lines[0], *lines[2:]])))
    assert tokens[:2] == [b"\x00", b"\x01"] and line_of[:3] == [2, 1, 3]
    assert os.path.getsize(tmp_path / "vocab.tiktoken") == len(original)
