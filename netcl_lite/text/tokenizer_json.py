"""Hugging Face's ``tokenizer.json`` for byte-level BPE (GPT-2 style): read and write.

What such a file holds, and what netcl_lite makes of it::

    {"added_tokens": [{"id": 0, "content": "<|endoftext|>", "special": true, ...}],   -> special tokens
     "normalizer": null,
     "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
         {"type": "Split", "pattern": {"Regex": "..."}, "behavior": "Isolated", "invert": false},
         {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},   -> pattern
     "model": {"type": "BPE", "vocab": {"Ġthe": 262, ...},        -> tokens (id -> bytes)
               "merges": [["Ġ", "t"], ...], "ignore_merges": false, ...}, ...}

Token strings spell bytes in GPT-2's byte-to-unicode alphabet (:data:`BYTE_TO_CHAR`:
``Ġ`` is the space byte), merges are pairs of token strings, earliest first. A lone
``ByteLevel`` pre-tokenizer with ``use_regex: true`` splits with GPT-2's pattern. The
regex is Oniguruma's dialect (see :func:`~netcl_lite.text.patterns.from_oniguruma`).

Anything that would make the ids differ from what this tokenizer computes (a normalizer,
another pre-tokenizer or model, a post-processor that adds tokens, dropout, byte fallback,
``lstrip``/``rstrip`` on added tokens, truncation, padding, an unknown key) is a
``ValueError`` naming the key, never silently dropped.

Every added token must say ``"special": true``: netcl_lite's added tokens are special tokens,
cut out of text only where a call allows them. ``tokenizers`` treats a non-special added token
as ordinary vocabulary: it cuts it out of any text before the pre-tokenizer (even with
``encode_special_tokens`` on, which leaves special tokens as plain text) and keeps it when
decoding skips special tokens. This tokenizer has no such token, so a file with one is refused,
naming ``added_tokens[i].special``. An added token that lacks one of its seven keys, or holds a
null flag, is refused too, as ``tokenizers`` refuses it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from netcl_lite.files import read_regular
from netcl_lite.text.model_file import MAX_FILE_BYTES, MAX_ID, PATTERN_PROBE, parse_json_object
from netcl_lite.text.patterns import (
    GPT2_PATTERN,
    GPT4_PATTERN,
    compile_splitter,
    from_oniguruma,
    to_oniguruma,
    with_gaps,
)
from netcl_lite.text.vocabulary import Vocabulary

__all__ = ["BYTE_TO_CHAR", "read_tokenizer_json", "tokenizer_json_text"]

_PRINTABLE = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
#: GPT-2's stand-in character for each byte: the 188 printable Latin-1 bytes stand for
#: themselves, the other 68 (controls, space, U+00A0, U+00AD) for U+0100.. in byte order.
BYTE_TO_CHAR: tuple[str, ...] = tuple(
    chr(b) if b in _PRINTABLE else chr(256 + sum(1 for x in range(b) if x not in _PRINTABLE))
    for b in range(256))
_CHAR_TO_BYTE = {c: b for b, c in enumerate(BYTE_TO_CHAR)}
_TOP_KEYS = {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
             "post_processor", "decoder", "model"}
_MODEL_KEYS = {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
               "byte_fallback", "ignore_merges", "vocab", "merges"}
_ADDED_ORDER = ("id", "content", "single_word", "lstrip", "rstrip", "normalized", "special")
_ADDED_KEYS = set(_ADDED_ORDER)
#: the largest id a byte-level token of ``model.vocab`` may have: the tokenizer's merge table has a row
#: for every id up to the largest, and 2**22 is sixteen times the largest published vocabulary (262,144)
MAX_TOKEN_ID = 2**22 - 1


def read_tokenizer_json(path: str | os.PathLike) -> Vocabulary:
    """Read a byte-level BPE ``tokenizer.json``; every problem is a ``ValueError`` naming the key.

    Its added tokens become the vocabulary's special tokens; each must be marked ``"special": true``
    (a non-special added token, which ``tokenizers`` matches in ordinary text, is refused).

    >>> import os, tempfile; path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
    >>> tokens = {i: bytes([i]) for i in range(256)} | {256: b" t"}
    >>> _ = open(path, "w").write(tokenizer_json_text(Vocabulary(None, tokens, merge_list=((32, 116, 256),))))
    >>> read_tokenizer_json(path).merge_list
    ((32, 116, 256),)
    """
    raw = read_regular(path, MAX_FILE_BYTES, "a tokenizer.json")   # no device, pipe or huge file
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 (byte {exc.start}): a tokenizer.json is UTF-8 JSON") from None
    return _Reader(str(path)).vocabulary(parse_json_object(text, str(path)))


class _Reader:
    """Checks one document; ``fail(key, message)`` raises the ValueError naming the file and key."""

    def __init__(self, source: str):
        self.source = source
        self.added: dict[str, int] = {}     # the added tokens' ids, once read

    def fail(self, key: str, message: str):
        raise ValueError(f"{self.source}: {key}: {message}")

    def check_keys(self, obj, allowed: set[str], key: str) -> None:
        if not isinstance(obj, dict):
            self.fail(key or "top level", f"expected a JSON object, got {type(obj).__name__}")
        unknown = sorted(set(obj) - allowed)
        if unknown:
            self.fail(f"{key}[{unknown[0]!r}]" if key else f"[{unknown[0]!r}]", "unknown key; netcl_lite cannot "
                      "tell whether it changes the ids, so it refuses the file")

    def expect(self, obj: dict, name: str, key: str, allowed) -> None:
        """``obj[name]`` (missing: ``None``) must be one of ``allowed``."""
        value = obj.get(name)
        if not any(value == a and type(value) is type(a) for a in allowed):
            self.fail(f"{key}.{name}" if key else name,
                      f"{value!r} is not supported (netcl_lite handles {' or '.join(map(repr, allowed))})")

    def vocabulary(self, doc: dict) -> Vocabulary:
        self.check_keys(doc, _TOP_KEYS, "")
        self.no_lone_surrogates(doc, "")
        if "version" in doc:            # may be left out, but tokenizers refuses a null
            self.expect(doc, "version", "", ["1.0"])
        for name in ("truncation", "padding"):
            self.expect(doc, name, "", [None])
        if doc.get("normalizer") is not None:
            self.fail("normalizer", f"{self.kind(doc['normalizer'])} is not supported: a normalizer changes "
                      "the text before it is split, and this byte-level BPE has none")
        pattern = self.pattern(doc.get("pre_tokenizer"))
        self.post_processor(doc.get("post_processor"), "post_processor")
        self.decoder(doc.get("decoder"), "decoder")
        model = doc.get("model")
        self.check_keys(model, _MODEL_KEYS, "model")
        self.expect(model, "type", "model", ["BPE"])
        self.expect(model, "dropout", "model", [None])
        self.expect(model, "unk_token", "model", [None])
        self.expect(model, "continuing_subword_prefix", "model", [None, ""])
        self.expect(model, "end_of_word_suffix", "model", [None, ""])
        self.expect(model, "byte_fallback", "model", [False, None])
        self.expect(model, "fuse_unk", "model", [False, True, None])
        self.expect(model, "ignore_merges", "model", [False, True, None])
        vocab = self.vocab(model.get("vocab"))
        specials = self.added = self.added_tokens(doc.get("added_tokens", []), vocab)
        tokens, ids = self.tokens(vocab, specials)
        merges = self.merges(model.get("merges"), ids)
        return Vocabulary(pattern, tokens, specials, merges, bool(model.get("ignore_merges")))

    @staticmethod
    def kind(component) -> str:
        return repr(component.get("type")) if isinstance(component, dict) else repr(component)

    def pattern(self, pre, key: str = "pre_tokenizer") -> str | None:
        """The pre-split pattern: ByteLevel alone, or Sequence [Split(regex), ByteLevel without regex]."""
        if not isinstance(pre, dict):
            self.fail(key, f"{pre!r} is not supported: byte-level BPE needs a ByteLevel pre-tokenizer")
        if pre.get("type") == "ByteLevel":
            return GPT2_PATTERN if self.byte_level(pre, key) else None
        if pre.get("type") != "Sequence":
            self.fail(f"{key}.type", f"{self.kind(pre)} is not supported (netcl_lite handles ByteLevel, or a "
                      "Sequence of a regex Split and a ByteLevel)")
        self.check_keys(pre, {"type", "pretokenizers"}, key)
        steps = pre.get("pretokenizers")
        if not isinstance(steps, list) or not steps:
            self.fail(f"{key}.pretokenizers", "expected a non-empty list")
        kinds = [self.kind(step) for step in steps]
        if len(steps) == 1:
            return self.pattern(steps[0], f"{key}.pretokenizers[0]")
        if kinds != ["'Split'", "'ByteLevel'"]:
            self.fail(f"{key}.pretokenizers", f"the sequence {', '.join(kinds)} is not supported (netcl_lite "
                      "handles a regex Split followed by a ByteLevel)")
        pattern = self.split(steps[0], f"{key}.pretokenizers[0]")
        if self.byte_level(steps[1], f"{key}.pretokenizers[1]"):
            self.fail(f"{key}.pretokenizers[1].use_regex", "true after a Split would split twice; "
                      "netcl_lite handles one split pattern")
        return pattern

    def byte_level(self, step: dict, key: str) -> bool:
        """Check a ByteLevel pre-tokenizer; return its ``use_regex``."""
        self.byte_level_fields(step, key)
        self.expect(step, "add_prefix_space", key, [False])
        return step.get("use_regex", True)

    def byte_level_fields(self, step: dict, key: str) -> None:
        """A ByteLevel component's fields, as ``tokenizers`` requires them (use_regex came later)."""
        self.check_keys(step, {"type", "add_prefix_space", "trim_offsets", "use_regex"}, key)
        for name, allowed in (("add_prefix_space", [False, True]), ("trim_offsets", [False, True])):
            self.expect(step, name, key, allowed)
        if "use_regex" in step:
            self.expect(step, "use_regex", key, [False, True])

    def split(self, step: dict, key: str) -> str:
        self.check_keys(step, {"type", "pattern", "behavior", "invert"}, key)
        self.expect(step, "behavior", key, ["Isolated"])
        self.expect(step, "invert", key, [False])
        regex_source = step.get("pattern")
        if not (isinstance(regex_source, dict) and list(regex_source) == ["Regex"]
                and isinstance(regex_source["Regex"], str)):
            self.fail(f"{key}.pattern", f"{regex_source!r} is not supported (netcl_lite handles {{\"Regex\": ...}})")
        source = regex_source["Regex"]
        # the file may hold a known pattern in the spelling we write: keep its fast splitter
        known = next((p for p in (GPT4_PATTERN, GPT2_PATTERN) if to_oniguruma(p) == source), None)
        if known:
            return known
        try:
            pattern = with_gaps(from_oniguruma(source))
            # a pattern that cannot split plain text, or backtracks without bound on it, is refused
            # here rather than at every encode (the split itself is time-limited by its length)
            compile_splitter(pattern)(PATTERN_PROBE)
        except ValueError as exc:
            self.fail(f"{key}.pattern", str(exc))
        return pattern

    def post_processor(self, post, key: str) -> None:
        """Only ByteLevel (it moves offsets, never ids), alone or in a Sequence."""
        if post is None:
            return
        if isinstance(post, dict) and post.get("type") == "Sequence":
            self.check_keys(post, {"type", "processors"}, key)
            steps = post.get("processors")
            if not isinstance(steps, list):
                self.fail(f"{key}.processors", f"expected a list of post-processors, got {type(steps).__name__}")
            for i, step in enumerate(steps):
                self.post_processor(step, f"{key}.processors[{i}]")
            return
        if not (isinstance(post, dict) and post.get("type") == "ByteLevel"):
            self.fail(key, f"{self.kind(post)} is not supported: it can add or change ids (netcl_lite "
                      "handles ByteLevel, which only moves offsets)")
        self.byte_level_fields(post, key)

    def decoder(self, decoder, key: str) -> None:
        if decoder is None:
            return
        if not (isinstance(decoder, dict) and decoder.get("type") == "ByteLevel"):
            self.fail(key, f"{self.kind(decoder)} is not supported (netcl_lite decodes byte-level tokens)")
        self.byte_level_fields(decoder, key)

    def vocab(self, vocab) -> dict[str, int]:
        """``model.vocab`` checked: string keys, distinct integer ids."""
        if not isinstance(vocab, dict):
            self.fail("model.vocab", "expected an object {token: id}")
        seen: dict[int, str] = {}
        for text, token_id in vocab.items():
            key = f"model.vocab[{text!r}]"
            self.check_id(token_id, key)
            if token_id in seen:
                self.fail(key, f"id {token_id} is also the id of {seen[token_id]!r}")
            seen[token_id] = text
        return vocab

    def added_tokens(self, added, vocab: dict[str, int]) -> dict[str, int]:
        """Added tokens -> the ids ``tokenizers`` gives them, which must be the ids the file states.

        ``tokenizers`` ignores the stated id: a token in ``model.vocab`` keeps its id there, any
        other takes the next id after the model's vocabulary and the added tokens before it.
        """
        if not isinstance(added, list):
            self.fail("added_tokens", "expected a list")
        specials: dict[str, int] = {}
        for i, token in enumerate(added):
            key = f"added_tokens[{i}]"
            self.check_keys(token, _ADDED_KEYS, key)
            for name in _ADDED_ORDER:      # tokenizers refuses an added token without any of them
                if name not in token:
                    self.fail(f"{key}.{name}", "is missing; tokenizers refuses an added token without it")
            for flag in ("single_word", "lstrip", "rstrip"):
                self.expect(token, flag, key, [False])
            self.expect(token, "normalized", key, [True, False])   # tokenizers refuses anything but a bool
            if token["special"] is not True:
                if token["special"] is not False:
                    self.expect(token, "special", key, [True])
                self.fail(f"{key}.special", "false is not supported: tokenizers treats a non-special added "
                          "token as ordinary vocabulary, cut out of any text, while netcl_lite's added tokens are "
                          "special tokens, cut out only where a call allows them (mark it \"special\": true if "
                          "it is a control token)")
            content, token_id = token.get("content"), token.get("id")
            if not isinstance(content, str) or not content:
                self.fail(f"{key}.content", f"{content!r} is not a non-empty string")
            self.check_id(token_id, f"{key}.id")
            if content in specials:
                self.fail(key, f"{content!r} repeats an earlier added token")
            given = vocab.get(content)
            if given is None:
                last = max(specials.values(), default=None)
                given = len(vocab) if last is None or last < len(vocab) else last + 1
            if given != token_id:
                self.fail(f"{key}.id", f"{content!r} has id {token_id} here, but tokenizers would give it "
                          f"id {given} (its id in model.vocab, or the next free one)")
            specials[content] = token_id
        return specials

    def tokens(self, vocab: dict[str, int], specials: dict[str, int]) -> tuple[dict[int, bytes], dict[str, int]]:
        """``(id -> bytes of the byte-level tokens, their strings -> id)``."""
        special_ids = {i: s for s, i in specials.items()}
        tokens: dict[int, bytes] = {}
        ids: dict[str, int] = {}
        for text, token_id in vocab.items():
            key = f"model.vocab[{text!r}]"
            if text in specials:
                continue  # the usual copy of an added token in the vocabulary (same id, see above)
            if token_id in special_ids:
                self.fail(key, f"collides with the added token {special_ids[token_id]!r} (id {token_id}): "
                          f"one id, two tokens")
            if token_id > MAX_TOKEN_ID:
                self.fail(key, f"id {token_id:,} is past {MAX_TOKEN_ID:,}, the largest id netcl_lite gives a "
                          f"byte-level token (its tables hold a row for every id up to the largest); number "
                          f"the vocabulary's tokens from 0 without wide gaps")
            tokens[token_id] = self.token_bytes(text, key)
            ids[text] = token_id
        missing = [b for b in range(256) if BYTE_TO_CHAR[b] not in ids]
        for b in missing:
            if BYTE_TO_CHAR[b] in specials:
                self.added_is_byte_level(BYTE_TO_CHAR[b], specials, f"the byte {b}'s token")
        if missing:
            self.fail("model.vocab", f"has no token for the bytes {missing[:10]}{' ...' if len(missing) > 10 else ''}; "
                      "byte-level BPE needs all 256 (train with initial_alphabet=ByteLevel.alphabet())")
        return tokens, ids

    def added_is_byte_level(self, content: str, specials: dict[str, int], role: str) -> None:
        """Refuse an added token spelled like a byte-level token the vocabulary needs, naming it."""
        self.fail(f"added_tokens[{list(specials).index(content)}]", f"{content!r} (id {specials[content]}) is "
                  f"also {role} in model.vocab; netcl_lite keeps added tokens apart from the byte-level ones "
                  "and cannot hold one token as both: remove it from added_tokens")

    def token_bytes(self, text, key: str) -> bytes:
        if not text:
            self.fail(key, "empty token")
        try:
            return bytes(map(_CHAR_TO_BYTE.__getitem__, text))
        except KeyError:
            bad = next(c for c in text if c not in _CHAR_TO_BYTE)
            self.fail(key, f"character {bad!r} (U+{ord(bad):04X}) is not in the byte-level alphabet; "
                      "this is not a byte-level BPE vocabulary")

    def merges(self, merges, ids: dict[str, int]) -> tuple[tuple[int, int, int], ...]:
        if not isinstance(merges, list):
            self.fail("model.merges", "expected a list of [left, right] token pairs")
        out, seen = [], set()
        for k, merge in enumerate(merges):
            key = f"model.merges[{k}]"
            if isinstance(merge, str) and merge.count(" ") == 1:  # the older "left right" spelling
                merge = merge.split(" ")
            if not (isinstance(merge, list) and len(merge) == 2 and all(isinstance(s, str) for s in merge)):
                self.fail(key, f"{merge!r} is not a pair of token strings")
            left, right = merge
            for side in (left, right):
                if side not in ids:
                    self.fail(key, f"{side!r} is not a byte-level token of model.vocab")
            merged = ids.get(left + right)
            if merged is None and left + right in self.added:
                self.added_is_byte_level(left + right, self.added, f"the token model.merges[{k}] makes")
            if merged is None:
                self.fail(key, f"makes {left + right!r}, which is not in model.vocab")
            if (left, right) in seen:
                self.fail(key, f"repeats the merge {left!r} + {right!r}")
            seen.add((left, right))
            out.append((ids[left], ids[right], merged))
        return tuple(out)

    def check_id(self, token_id, key: str) -> None:
        if type(token_id) is not int or not 0 <= token_id <= MAX_ID:
            self.fail(key, f"id {token_id!r} is not an integer in 0..{MAX_ID}")

    def no_lone_surrogates(self, doc: dict, key: str) -> None:
        """JSON can spell a lone surrogate (``"\\ud800"``), which no UTF-8 text holds: name where."""
        try:
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            self.fail(_surrogate_key(doc, key), "a string holds a lone surrogate (\\ud800-\\udfff), "
                      "which is not UTF-8 text")


def _surrogate_key(value, key: str) -> str:
    """The key path of the first string (or object key) holding a lone surrogate."""
    bad = lambda s: any("\ud800" <= c <= "\udfff" for c in s)  # noqa: E731
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for name, item in items:
        path = (f"{key}.{name}" if key else name) if isinstance(name, str) and name.isidentifier() \
            else f"{key}[{name!r}]"
        if isinstance(name, str) and bad(name) or isinstance(item, str) and bad(item):
            return path
        if isinstance(item, (dict, list)) and (found := _surrogate_key(item, path)) != path:
            return found
    return key


def tokenizer_json_text(vocab: Vocabulary) -> str:
    """The ``tokenizer.json`` for a vocabulary; ``vocab.merge_list`` must be given (by priority).

    Special tokens go both to ``added_tokens`` and to the model's vocabulary, so that every id
    survives loading. ``ignore_merges`` is ``vocab.whole_chunks``.
    """
    strings = {i: "".join(map(BYTE_TO_CHAR.__getitem__, t)) for i, t in vocab.tokens.items()}
    taken = {s: i for i, s in strings.items()}
    for name, token_id in vocab.special_tokens.items():
        if name in taken:
            raise ValueError(f"special token {name!r} is spelled like byte-level token {taken[name]}; "
                             f"a tokenizer.json cannot hold both")
    pre = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    if vocab.pattern is not None:
        split = {"type": "Split", "pattern": {"Regex": to_oniguruma(vocab.pattern)}, "behavior": "Isolated",
                 "invert": False}
        pre = {"type": "Sequence", "pretokenizers": [split, pre]}
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for s, i in _sorted_by_id(vocab.special_tokens).items()]
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
             "ignore_merges": vocab.whole_chunks,
             "vocab": _sorted_by_id({**taken, **vocab.special_tokens}),
             "merges": [[strings[left], strings[right]] for left, right, _ in vocab.merge_list]}
    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
           "pre_tokenizer": pre, "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
           "model": model}
    return json.dumps(doc, ensure_ascii=False) + "\n"  # compact: indenting 100k entries is 10x slower


def _sorted_by_id(mapping: Mapping[str, int]) -> dict[str, int]:
    return dict(sorted(mapping.items(), key=lambda item: item[1]))
