"""The tokenizer's file: one versioned JSON document, no pickle, checked field by field on load.

Layout (``version`` 1)::

    {
      "format": "netcl_lite.bpe",
      "version": 1,
      "pattern": "<pre-split regex>" or null (no splitting),
      "base_bytes": null (ids 0..255 are bytes 0..255) or [byte value of id 0, ..., of id 255],
      "special_tokens": {"<|endoftext|>": 100257, ...},
      "merges": [[left_id, right_id], ...]    # merge k creates id 256 + k
    }

Every check raises ``ValueError`` saying which field is wrong and how (wrong JSON types
included: to a caller the whole file is one malformed value, hence ``noqa: TRY004``).
"""

from __future__ import annotations

import json

import regex
from dataclasses import dataclass

from netcl_lite.text.patterns import check_pattern_length, compile_splitter
from netcl_lite.text.vocabulary import Vocabulary

#: text a model file's pattern must split without losing a character: every printable ASCII
#: character and the common whitespace
PATTERN_PROBE = "".join(map(chr, range(32, 127))) + " \t\n\r  x"
#: the most time a model file's pattern may take to split :data:`PATTERN_PROBE`
PROBE_SECONDS = 2.0

__all__ = ["FORMAT", "MAX_FILE_BYTES", "VERSION", "ModelParts", "check_merges", "check_special_tokens", "dumps", "loads",
           "parse_json_object", "read_model_file", "vocabulary_of"]

FORMAT = "netcl_lite.bpe"
VERSION = 1
MAX_ID = 2**32 - 1  # token ids are u32, as in tiktoken
#: the largest tokenizer file read (a model file, a .tiktoken file or a tokenizer.json): the largest
#: published ones are tens of MB; a bigger file is refused before it is read, as is anything that is
#: not a regular file (a device such as /dev/zero, a named pipe)
MAX_FILE_BYTES = 256 << 20
_KEYS = ("format", "version", "pattern", "base_bytes", "special_tokens", "merges")


@dataclass(frozen=True)
class ModelParts:
    """A tokenizer in this file's layout: ids 0..255 are bytes, merge k makes id 256 + k (tiktoken's rule)."""

    pattern: str | None
    base_bytes: tuple[int, ...]  # byte value of ids 0..255
    merges: tuple[tuple[int, int], ...]  # merge k creates id 256 + k
    special_tokens: dict[str, int]


def dumps(parts: ModelParts) -> str:
    """Serialize; one merge per line so a diff shows which merges changed.

    >>> print(dumps(ModelParts(None, tuple(range(256)), ((104, 105),), {})), end="")
    {
      "format": "netcl_lite.bpe",
      "version": 1,
      "pattern": null,
      "base_bytes": null,
      "special_tokens": {},
      "merges": [
        [104, 105]
      ]
    }
    """
    base = None if parts.base_bytes == tuple(range(256)) else list(parts.base_bytes)
    head = {"format": FORMAT, "version": VERSION, "pattern": parts.pattern, "base_bytes": base,
            "special_tokens": parts.special_tokens}
    lines = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in head.items()]
    merges = ",\n".join(f"    [{a}, {b}]" for a, b in parts.merges)
    body = f'  "merges": [\n{merges}\n  ]' if merges else '  "merges": []'
    return "{\n" + "\n".join(lines) + "\n" + body + "\n}\n"


def loads(text: str, source: str = "model file") -> ModelParts:
    """Parse and check a model file's text.

    >>> loads('{"format": "netcl_lite.bpe", "version": 2}')
    Traceback (most recent call last):
    ...
    ValueError: model file: version 2 is not supported; this netcl_lite reads version 1
    """
    doc = parse_json_object(text, source)
    if doc.get("format") != FORMAT:
        raise ValueError(f"{source}: field 'format' is {doc.get('format')!r}, expected {FORMAT!r}")
    version = doc.get("version")
    if version != VERSION or type(version) is not int:
        raise ValueError(f"{source}: version {version!r} is not supported; this netcl_lite reads "
                         f"version {VERSION}")
    missing = [k for k in _KEYS if k not in doc]
    extra = sorted(set(doc) - set(_KEYS))
    if missing or extra:
        raise ValueError(f"{source}: missing fields {missing}, unknown fields {extra}; "
                         f"version {VERSION} has exactly {list(_KEYS)}")
    pattern = doc["pattern"]
    if pattern is not None and not isinstance(pattern, str):
        raise ValueError(f"{source}: 'pattern' must be a string or null, got {type(pattern).__name__}")
    if pattern is not None:
        check_pattern_length(pattern, source)
        try:                        # a pattern that cannot split plain text would fail at every encode
            split = compile_splitter(pattern)
            # one that backtracks without bound would hang here: real ones split the probe in microseconds
            regex.compile(pattern).findall(PATTERN_PROBE, timeout=PROBE_SECONDS)
            split(PATTERN_PROBE)
        except TimeoutError:
            raise ValueError(f"{source}: the pre-split pattern takes over {PROBE_SECONDS} s to split "
                             f"{len(PATTERN_PROBE)} characters of plain text (it backtracks without bound): "
                             "the file is damaged or hostile") from None
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
    base = _check_base(doc["base_bytes"], source)
    merges = doc["merges"]
    if not isinstance(merges, list):
        raise ValueError(f"{source}: 'merges' must be a list of [left_id, right_id] pairs")  # noqa: TRY004
    pairs = []
    for k, pair in enumerate(merges):
        if not (isinstance(pair, list) and len(pair) == 2 and all(type(x) is int for x in pair)):
            raise ValueError(f"{source}: merge {k} is {pair!r}; each merge is [left_id, right_id] "
                             f"with integer ids")
        pairs.append((pair[0], pair[1]))
    specials = doc["special_tokens"]
    if not isinstance(specials, dict):
        raise ValueError(f"{source}: 'special_tokens' must be an object {{token: id}}")  # noqa: TRY004
    parts = ModelParts(pattern, base, tuple(pairs), specials)
    token_bytes = check_merges(parts.base_bytes, parts.merges, source)
    check_special_tokens(specials, range(len(token_bytes)), source)
    return parts


def parse_json_object(text: str, source: str) -> dict:
    """``json.loads`` for untrusted files: a top-level object, no duplicate keys, no NaN/Infinity.

    >>> parse_json_object('{"a": 1, "a": 2}', "f.json")
    Traceback (most recent call last):
    ...
    ValueError: f.json: not valid JSON (duplicate key 'a'); the file may be truncated or damaged
    >>> parse_json_object('{"model": {"vocab": {"a b": [1, -Infinity]}}}', "f.json")
    Traceback (most recent call last):
    ...
    ValueError: f.json: not valid JSON: -Infinity at key model.vocab["a b"][1] (JSON has no NaN or Infinity)
    """
    found: list[_Constant] = []

    def constant(name):          # Python's json accepts these literals; the format does not
        found.append(_Constant(name))
        return found[-1]

    try:
        doc = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=constant)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise ValueError(f"{source}: not valid JSON ({exc}); the file may be truncated or damaged") from None
    if found:
        raise ValueError(f"{source}: not valid JSON: {found[0].name} at key {_path_to(doc, found[0])} "
                         "(JSON has no NaN or Infinity)")
    if not isinstance(doc, dict):
        start = len(text) - len(text.lstrip())                      # where the top-level value begins
        line, column = text.count("\n", 0, start) + 1, start - (text.rfind("\n", 0, start) + 1) + 1
        raise ValueError(f"{source}: line {line} column {column}: expected a JSON object at the top, "  # noqa: TRY004
                         f"got {type(doc).__name__}")
    return doc


def check_merges(base_bytes, merges, source: str = "merges") -> list[bytes]:
    """Check merges in order and return the bytes of every byte-level token (index = id).

    >>> check_merges(range(256), [(104, 105), (256, 33)])[-1]
    b'hi!'
    """
    token_bytes = [bytes([b]) for b in base_bytes]
    ids_of = {t: i for i, t in enumerate(token_bytes)}
    seen = set()
    for k, (a, b) in enumerate(merges):
        new_id = len(token_bytes)
        for side in (a, b):
            if not 0 <= side < new_id:
                raise ValueError(f"{source}: merge {k} (making id {new_id}) uses id {side}, which is "
                                 f"not defined before it (known ids are 0..{new_id - 1})")
        if (a, b) in seen:
            raise ValueError(f"{source}: merge {k} repeats the pair ({a}, {b}) of an earlier merge")
        seen.add((a, b))
        merged = token_bytes[a] + token_bytes[b]
        if merged in ids_of:
            raise ValueError(f"{source}: merge {k} ({a}, {b}) makes {merged!r}, which is already "
                             f"token {ids_of[merged]}; every token's bytes must be unique")
        ids_of[merged] = new_id
        token_bytes.append(merged)
    return token_bytes


def check_special_tokens(specials: dict, byte_level_ids, source: str = "special_tokens") -> None:
    """Special tokens: non-empty strings UTF-8 can encode, distinct integer ids that no byte-level token has.

    ``byte_level_ids``: the ids of the byte-level tokens (any container, e.g. ``range(n)``).
    """
    by_id: dict[int, str] = {}
    for name, token_id in specials.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"{source}: special token {name!r} must be a non-empty string")
        try:                # a lone surrogate (JSON's "\ud800") has no bytes: decode could never spell it
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{source}: special token {name!r} is not UTF-8 text (it holds a lone "
                             f"surrogate); special tokens must be text that UTF-8 can encode") from None
        if type(token_id) is not int or not 0 <= token_id <= MAX_ID:
            raise ValueError(f"{source}: special token {name!r} has id {token_id!r}; ids are integers "
                             f"in 0..{MAX_ID}")
        if token_id in byte_level_ids:
            raise ValueError(f"{source}: special token {name!r} has id {token_id}, which is already a "
                             f"byte-level token; give it an id the vocabulary does not use (e.g. "
                             f">= {max(byte_level_ids) + 1})")
        if token_id in by_id:
            raise ValueError(f"{source}: special tokens {by_id[token_id]!r} and {name!r} share id "
                             f"{token_id}")
        by_id[token_id] = name


def _check_base(base, source: str) -> tuple[int, ...]:
    if base is None:
        return tuple(range(256))
    if not (isinstance(base, list) and len(base) == 256 and all(type(b) is int for b in base)
            and sorted(base) == list(range(256))):
        raise ValueError(f"{source}: 'base_bytes' must be null or a permutation of the 256 byte "
                         f"values 0..255 (the byte of ids 0..255)")
    return tuple(base)


def _unique_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise ValueError(f"duplicate key {dup!r}")
    return dict(pairs)


class _Constant:
    """Where the parser met NaN, Infinity or -Infinity (found again by identity)."""

    def __init__(self, name: str):
        self.name = name


def _path_to(doc, target) -> str:
    """The key path of ``target`` inside ``doc``, as ``a.b["c d"][3]`` (iterative: any depth)."""
    stack = [(doc, "")]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path.lstrip(".") or "(top level)"
        if isinstance(node, dict):
            stack.extend((v, f"{path}.{k}" if k.isidentifier() else f"{path}[{json.dumps(k)}]") for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    return "(unknown)"


def vocabulary_of(parts: ModelParts) -> Vocabulary:
    """The vocabulary a model file describes: ids 0..255 are ``parts.base_bytes``, merge k makes id 256 + k.

    >>> vocabulary_of(ModelParts(None, tuple(range(256)), ((104, 105),), {})).tokens[256]
    b'hi'
    """
    tokens = check_merges(parts.base_bytes, parts.merges)
    return Vocabulary(parts.pattern, dict(enumerate(tokens)), dict(parts.special_tokens),
                      merges=tuple(parts.merges))


def read_model_file(path) -> Vocabulary:
    """The vocabulary of a model file (:func:`dumps` writes one); anything malformed raises
    ``ValueError`` naming the problem, as does a path that is not a regular file (a device, a named
    pipe) or is larger than :data:`MAX_FILE_BYTES`, checked before it is opened."""
    from netcl_lite.files import read_regular

    raw = read_regular(path, MAX_FILE_BYTES, "a tokenizer file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc}); is this a tokenizer file?") from None
    return vocabulary_of(loads(text, str(path)))

