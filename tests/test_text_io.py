"""Saving and loading: versioned JSON, every malformed file a named ValueError, fuzzed; tiktoken ranks."""

import json
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netcl_lite.text import GPT2_PATTERN, BPETokenizer, model_file

PROBE = "the river café 日本 <|endoftext|> aaaa!"


@pytest.fixture(scope="module")
def saved_text(trained, tmp_path_factory):
    path = tmp_path_factory.mktemp("tok") / "tok.json"
    trained.save(path)
    return path.read_text(encoding="utf-8")


def load_text(tmp_path, text):
    path = tmp_path / "model.json"
    path.write_text(text, encoding="utf-8")
    return BPETokenizer.load(path)


def same_model(a, b):
    return (a.pattern, dict(a.merges), dict(a.special_tokens), dict(a.vocab)) == \
        (b.pattern, dict(b.merges), dict(b.special_tokens), dict(b.vocab))


def test_save_load_round_trip_gives_identical_ids(trained, saved_text, tmp_path):
    doc = json.loads(saved_text)
    assert (doc["format"], doc["version"], doc["pattern"], doc["base_bytes"]) == ("netcl_lite.bpe", 1, GPT2_PATTERN, None)
    assert doc["merges"][0] == list(next(iter(trained.merges)))  # id pairs, in merge order
    loaded = load_text(tmp_path, saved_text)
    assert same_model(loaded, trained)
    assert loaded.encode(PROBE, allowed_special="all") == trained.encode(PROBE, allowed_special="all")
    assert same_model(pickle.loads(pickle.dumps(trained)), trained)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=80).map(lambda s: s.encode("utf-8", "replace").decode()))
def test_loaded_tokenizer_encodes_any_text_identically(trained, saved_text, tmp_path, text):
    assert load_text(tmp_path, saved_text).encode_ordinary(text) == trained.encode_ordinary(text)


def edit(saved_text, **changes):
    doc = json.loads(saved_text)
    doc.update(changes)
    return json.dumps(doc)


@pytest.mark.parametrize("mutate, match", [
    (lambda s: s[: len(s) // 2], "not valid JSON"),
    (lambda s: "", "not valid JSON"),
    (lambda s: "[1, 2]", "JSON object"),
    (lambda s: edit(s, format="minbpe"), "'format'"),
    (lambda s: edit(s, version=2), "version 2 is not supported"),
    (lambda s: edit(s, version="1"), "version '1' is not supported"),
    (lambda s: edit(s, version=True), "version True is not supported"),
    (lambda s: edit(s, extra=1), "unknown fields \\['extra'\\]"),
    (lambda s: json.dumps({k: v for k, v in json.loads(s).items() if k != "merges"}), "missing fields \\['merges'\\]"),
    (lambda s: edit(s, pattern=5), "'pattern' must be a string"),
    (lambda s: edit(s, pattern="(unclosed"), "not a valid regex"),
    (lambda s: edit(s, base_bytes=list(range(255))), "permutation"),
    (lambda s: edit(s, base_bytes=[0] * 256), "permutation"),
    (lambda s: edit(s, merges={"a": 1}), "'merges' must be a list"),
    (lambda s: edit(s, merges=[[97, 98], [999, 1]]), "uses id 999, which is not defined before it"),
    (lambda s: edit(s, merges=[[97, 98], [257, 97]]), "uses id 257"),
    (lambda s: edit(s, merges=[[97, 98], [97, 98]]), "repeats the pair"),
    (lambda s: edit(s, merges=[[97, 98], [98, 99], [256, 99], [97, 257]]), "makes b'abc', which is already token 258"),
    (lambda s: edit(s, merges=[[97, "98"]]), "merge 0 is \\[97, '98'\\]"),
    (lambda s: edit(s, merges=[[97, 98.0]]), "integer ids"),
    (lambda s: edit(s, merges=[[97, 98, 99]]), "merge 0"),
    (lambda s: edit(s, merges=[[True, 98]]), "integer ids"),
    (lambda s: edit(s, special_tokens={"<|x|>": 260}), "already a byte-level token"),
    (lambda s: edit(s, special_tokens={"<|x|>": 500, "<|y|>": 500}), "share id 500"),
    (lambda s: edit(s, special_tokens={"<|x|>": "500"}), "ids are integers"),
    (lambda s: edit(s, special_tokens={"": 500}), "non-empty string"),
    (lambda s: edit(s, special_tokens=[1]), "must be an object"),
    (lambda s: s.replace('"version": 1', '"version": 1, "version": 1'), "duplicate key"),
    (lambda s: s.replace('"version": 1', '"version": NaN'), "not valid JSON"),
])
def test_malformed_files_raise_a_named_value_error(saved_text, tmp_path, mutate, match):
    with pytest.raises(ValueError, match=match):
        load_text(tmp_path, mutate(saved_text))


def test_non_utf8_file(tmp_path):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError, match="not UTF-8"):
        BPETokenizer.load(path)


mutation = st.one_of(
    st.tuples(st.just("truncate"), st.integers(0, 10_000), st.just("")),
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.integers(1, 20).map(str)),
    st.tuples(st.just("insert"), st.integers(0, 10_000), st.text(alphabet='0123456789[]{}",:-.e ntrufalsx\\', max_size=6)),
    st.tuples(st.just("replace"), st.integers(0, 10_000), st.text(alphabet='0123456789[]{}",:-. ', min_size=1, max_size=3)),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(mutation, min_size=1, max_size=3))
@pytest.mark.slow
def test_fuzzed_files_load_consistently_or_raise_value_error(saved_text, tmp_path, mutations):
    text = saved_text
    for kind, at, arg in mutations:
        at %= len(text) + 1
        if kind == "truncate":
            text = text[:at]
        elif kind == "delete":
            text = text[:at] + text[at + int(arg):]
        elif kind == "insert":
            text = text[:at] + arg + text[at:]
        else:
            text = text[:at] + arg + text[at + len(arg):]
    try:
        tok = load_text(tmp_path, text)
    except ValueError:
        return
    # It loaded: then it is exactly the model the file describes, and it works.
    doc = json.loads(text)
    assert [list(p) for p in tok.merges] == doc["merges"] and tok.pattern == doc["pattern"]
    assert dict(tok.special_tokens) == doc["special_tokens"]
    try:
        ids = tok.encode_ordinary(PROBE)
    except ValueError:  # a mutated custom pattern may not cover the text: a named error, not a loss
        return
    assert tok.decode(ids) == PROBE
    tok.save(tmp_path / "again.json")
    assert same_model(BPETokenizer.load(tmp_path / "again.json"), tok)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 600) | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=5)
field_edit = st.tuples(
    st.sampled_from(["format", "version", "pattern", "base_bytes", "special_tokens", "merges", "merge",
                     "merge id", "special id", "drop"]),
    st.integers(0, 10_000), json_values | st.integers(0, 600))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(field_edit, min_size=1, max_size=3))
@pytest.mark.slow
def test_fuzzed_fields_load_consistently_or_raise_value_error(saved_text, tmp_path, edits):
    doc = json.loads(saved_text)
    for where, at, value in edits:
        merges = doc.get("merges")
        if where == "merge" and isinstance(merges, list) and merges:
            merges[at % len(merges)] = value
        elif where == "merge id" and isinstance(merges, list) and merges and isinstance(merges[at % len(merges)], list):
            pair = merges[at % len(merges)]
            if pair:
                pair[at % len(pair)] = value
        elif where == "special id" and isinstance(doc.get("special_tokens"), dict):
            doc["special_tokens"]["<|endoftext|>"] = value
        elif where == "drop":
            doc.pop(sorted(doc)[at % len(doc)], None) if doc else None
        elif where in doc or where in ("format", "version"):
            doc[where] = value
    text = json.dumps(doc)
    try:
        tok = load_text(tmp_path, text)
    except ValueError:
        return
    assert [list(p) for p in tok.merges] == doc["merges"] and dict(tok.special_tokens) == doc["special_tokens"]
    try:
        ids = tok.encode_ordinary(PROBE)
    except ValueError:  # a custom pattern that does not cover the text: named, nothing lost
        return
    assert tok.decode(ids) == PROBE


# -- tiktoken's format ------------------------------------------------------------------------

def test_mergeable_ranks_round_trip_recovers_the_merges(trained):
    ranks = trained.mergeable_ranks()
    assert len(ranks) == 256 + len(trained.merges) and ranks[b"a"] == 97
    rebuilt = BPETokenizer.from_mergeable_ranks(ranks, pattern=GPT2_PATTERN, special_tokens={"<|endoftext|>": 400})
    assert same_model(rebuilt, trained)


def test_shuffled_byte_ranks_are_supported_and_saved():
    order = [*range(128, 256), *range(128)]
    ranks = {bytes([b]): r for r, b in enumerate(order)} | {b"ab": 256, b"abc": 257}
    tok = BPETokenizer.from_mergeable_ranks(ranks)
    assert tok.encode("abcz") == [257, order.index(ord("z"))]
    assert dict(tok.merges) == {(order.index(97), order.index(98)): 256, (256, order.index(99)): 257}
    assert tok.mergeable_ranks() == ranks
    doc = json.loads(model_file.dumps(tok._parts()))
    assert doc["base_bytes"] == order


@pytest.mark.parametrize("ranks, match", [
    ({bytes([b]): b for b in range(255)}, "ranks 0..255 must be the 256 single bytes"),
    ({bytes([b]): b for b in range(256)} | {b"ab": 257}, "rank 257, but 257 tokens need ranks 0..256 without gaps"),
    ({bytes([b]): b for b in range(256)} | {b"abc": 256}, "not the merge of two lower-ranked tokens"),
    ({bytes([b]): b for b in range(256)} | {b"bc": 256, b"abc": 257, b"ab": 258}, None),
    ({bytes([b]): b for b in range(256)} | {b"ab": 256, b"bc": 257, b"abc": 258, b"bca": 259}, None),
    ({bytes([b]): b for b in range(256)} | {b"ab": 256, b"a": 257}, "share rank|single bytes|without gaps"),
    ({bytes([b]): b for b in range(256)} | {"ab": 256}, "non-empty bytes"),
    ({bytes([b]): b for b in range(255)} | {b"ab": 255}, "ranks 0..255 must be the 256 single bytes"),
])
def test_from_mergeable_ranks_checks(ranks, match):
    if match is None:  # valid: every longer token is BPE's merge of two lower ranks
        assert BPETokenizer.from_mergeable_ranks(ranks).mergeable_ranks() == ranks
        return
    with pytest.raises(ValueError, match=match):
        BPETokenizer.from_mergeable_ranks(ranks)
