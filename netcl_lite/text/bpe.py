"""Byte-level BPE: train, encode, decode, save and load; ids compatible with tiktoken.

The base alphabet is the 256 byte values, so every string UTF-8 can encode round-trips
exactly: the *byte alphabet* (or, elsewhere, a configured byte fallback) is what rules out
unknown tokens, not subwords as such. This tokenizer has no normalizer (lower-casing, NFKC).
Text goes through three steps:

1. special tokens (only those the caller allows) are cut out (:mod:`~netcl_lite.text.specials`);
2. the pre-split pattern (:data:`GPT4_PATTERN` by default) cuts the rest into chunks, and
   merges never cross a chunk boundary;
3. each chunk's UTF-8 bytes are merged, lowest rank first (:mod:`~netcl_lite.text.byte_pair`);
   a chunk that is itself a token becomes that token directly, as in tiktoken.

A bounded cache (:mod:`~netcl_lite.text.chunk_cache`) makes a repeated chunk one dict lookup;
new chunks are merged by the Python loop or, when a call brings many, by an OpenCL kernel, and
a long call may go to the device whole (:mod:`~netcl_lite.text.dispatch` decides).
Files: netcl_lite's own model file
(:meth:`BPETokenizer.save`), tiktoken's ``.tiktoken`` and Hugging Face's ``tokenizer.json``;
a tokenizer keeps the merge rule of the file it came from, so its ids match that library's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType

from netcl_lite.checks import count, token_ids
from netcl_lite.files import atomic_write
from netcl_lite.text import batch as batch_api
from netcl_lite.text import device_merge
from netcl_lite.text.bpe_training import count_chunks, learn_merges
from netcl_lite.text.byte_pair import UnmadeTokenError, chunk_encoder, listed_pair_table, rank_pair_table
from netcl_lite.text.chunk_cache import ChunkCache
from netcl_lite.text.dispatch import KERNEL_MIN_BYTES, KERNEL_TEXT_MIN_BYTES, Dispatcher
from netcl_lite.text.model_file import ModelParts, dumps, read_model_file, vocabulary_of
from netcl_lite.text.patterns import GPT4_PATTERN, compile_splitter, split_budget
from netcl_lite.text.ranks import check_ranks, derive_merges
from netcl_lite.text.specials import SpecialTokens
from netcl_lite.text.tiktoken_file import read_tiktoken_file, tiktoken_file_bytes
from netcl_lite.text.tokenizer_json import read_tokenizer_json, tokenizer_json_text
from netcl_lite.text.vocabulary import Vocabulary

__all__ = ["KERNEL_MIN_BYTES", "KERNEL_TEXT_MIN_BYTES", "BPETokenizer"]

_BYTES = {i: bytes([i]) for i in range(256)}


class BPETokenizer:
    """Byte-level BPE tokenizer with regex pre-splitting and special tokens.

    >>> tok = BPETokenizer()
    >>> tok.train_from_iterator(["Hello world!", "Attention is all you need."])
    [((108, 108), 2)]
    >>> tok.decode(tok.encode("Hello world!"))
    'Hello world!'

    ``pattern``: pre-split regex (default :data:`GPT4_PATTERN`, tiktoken's cl100k pattern;
    :data:`GPT2_PATTERN`; any ``regex`` pattern; ``None`` for no splitting). ``special_tokens``:
    ``{string: id}`` with ids above the byte-level ids; user text never becomes a special id
    unless the caller allows it (see :meth:`encode`).
    """

    def __init__(self, pattern: str | None = GPT4_PATTERN,
                 special_tokens: Mapping[str, int] | None = None):
        self._set_model(Vocabulary(pattern, _BYTES))
        if special_tokens is not None:
            self.register_special_tokens(special_tokens)

    def _set_model(self, vocab: Vocabulary) -> None:
        self._split = compile_splitter(vocab.pattern)  # validates the pattern
        self._pattern = vocab.pattern
        self._tokens = dict(vocab.tokens)  # id -> bytes, byte-level tokens only
        self._ids = {t: i for i, t in self._tokens.items()}  # bytes -> id
        self._byte_ids = [self._ids[bytes([b])] for b in range(256)]  # byte value -> id
        self._merge_list = vocab.merge_list  # None: tiktoken's rule (ids are ranks)
        if vocab.merge_list is None:
            by_rank = [self._tokens[i] for i in range(len(self._tokens))]
            self._pairs = rank_pair_table(by_rank)
        else:
            self._pairs = listed_pair_table(vocab.merge_list, max(self._tokens) + 1)
        self._derived = vocab.merges  # tiktoken's rule: (left, right) of ids 256.., or None until asked
        self._merges: dict[tuple[int, int], int] | None = None  # built on first use of .merges
        self._whole_chunks = vocab.whole_chunks
        self._specials = SpecialTokens()
        self._vocab = dict(self._tokens)  # id -> bytes, special tokens included
        self._seed = seed = vocab.text_tokens() if vocab.whole_chunks else {}  # else a chunk that is a token
        self._encode_piece = chunk_encoder(self._byte_ids, self._pairs, ranked=vocab.merge_list is None)
        # the device's index is built from the tokens packed here, while they are in the CPU's caches
        packed = device_merge.pack_tokens(by_rank) if vocab.merge_list is None else None
        old, self._dispatch = getattr(self, "_dispatch", None), Dispatcher(
            self._byte_ids, self._encode_piece, tokens=packed, merges=vocab.merge_list,
            largest_id=len(self._tokens) - 1 if packed else max(self._tokens),
            whole_text=vocab.pattern == GPT4_PATTERN and vocab.whole_chunks)  # which the device splits
        if old is not None:  # a retrained tokenizer keeps its settings
            self._dispatch.kernel_min_bytes = old.kernel_min_bytes
            self._dispatch.kernel_text_min_bytes = old.kernel_text_min_bytes
        self._cache = ChunkCache(seed, self._encode_piece)
        if vocab.special_tokens:
            self.register_special_tokens(vocab.special_tokens)

    @property
    def kernel_min_bytes(self) -> int | None:
        """New bytes one call must bring before its new chunks are merged by the OpenCL kernel.

        When the UTF-8 bytes of a call's *new* chunks (not in the cache) add up to this, one launch
        of ``kernels/bpe.cl`` merges them all, with the Python loop's ids. The default,
        :data:`KERNEL_MIN_BYTES`, is measured; ``0``: always; ``None``: never. The first launch
        builds the device's tables, once per tokenizer (see :mod:`~netcl_lite.text.dispatch`).

        >>> tok = BPETokenizer(); tok.kernel_min_bytes = None; tok.encode("hi")
        [104, 105]
        """
        return self._dispatch.kernel_min_bytes

    @kernel_min_bytes.setter
    def kernel_min_bytes(self, value: int | None) -> None:
        self._dispatch.kernel_min_bytes = value

    @property
    def kernel_text_min_bytes(self) -> int | None:
        """UTF-8 bytes from which a whole call is split and merged on the device, skipping the cache.

        Only under tiktoken's rule with :data:`GPT4_PATTERN` (cl100k_base's): ``kernels/bpe.cl``
        splits the text as the pattern does, merges each different chunk once and gathers the ids,
        identical to the Python path's. The default, :data:`KERNEL_TEXT_MIN_BYTES`, is measured
        (``benchmarks/bpe_threshold.py``). ``0``: every call; ``None``: never (then
        :attr:`kernel_min_bytes` decides).

        >>> tok = BPETokenizer(); tok.kernel_text_min_bytes = 0; tok.encode("hi there")
        [104, 105, 32, 116, 104, 101, 114, 101]
        """
        return self._dispatch.kernel_text_min_bytes

    @kernel_text_min_bytes.setter
    def kernel_text_min_bytes(self, value: int | None) -> None:
        self._dispatch.kernel_text_min_bytes = value

    @property
    def pattern(self) -> str | None:
        """The pre-split regex (``None``: no splitting). Fixed at construction; saved with the model."""
        return self._pattern

    @property
    def merges(self) -> Mapping[tuple[int, int], int]:
        """``(left_id, right_id) -> new id`` in merge order (read-only view). From tiktoken's ranks,
        which hold no merge list, they are derived on first use (about half a second for 100k tokens)."""
        if self._merges is None:
            if self._merge_list is not None:
                self._merges = {(left, right): merged for left, right, merged in self._merge_list}
            else:
                self._merges = {pair: 256 + k for k, pair in enumerate(self._ranked_merges())}
        return MappingProxyType(self._merges)

    def _ranked_merges(self) -> tuple[tuple[int, int], ...]:
        if self._derived is None:
            self._derived = derive_merges([self._tokens[i] for i in range(len(self._tokens))], self._pairs)
        return self._derived

    @property
    def vocab(self) -> Mapping[int, bytes]:
        """``id -> bytes`` for every token, special tokens included (read-only view)."""
        return MappingProxyType(self._vocab)

    @property
    def special_tokens(self) -> Mapping[str, int]:
        """``string -> id`` of the special (added) tokens (read-only view)."""
        return MappingProxyType(self._specials.ids)

    @property
    def n_vocab(self) -> int:
        """Largest id + 1: the number of rows the model's embedding and output need."""
        return max(self._vocab) + 1

    def __repr__(self) -> str:
        return (f"BPETokenizer(pattern={self._pattern!r}, tokens={len(self._tokens)}, "
                f"special_tokens={dict(self._specials.ids)!r})")

    def __reduce__(self):  # pickles as its vocabulary (the splitter, tables and cache are rebuilt)
        return (_from_vocabulary, (self._vocabulary(),))

    def _vocabulary(self) -> Vocabulary:  # the model, as every file format describes it
        return Vocabulary(self._pattern, self._tokens, dict(self._specials.ids), self._merge_list,
                          self._whole_chunks, self._derived)

    def _parts(self) -> ModelParts:
        """The model in netcl_lite's own file layout: tiktoken's rule with ids 0..255 the bytes."""
        if self._merge_list is not None:
            raise ValueError("this tokenizer follows a tokenizer.json's merge list, which netcl_lite's "
                             "model file cannot hold; save it with save_tokenizer_json()")
        base = tuple(self._tokens[i][0] for i in range(256))
        return ModelParts(self._pattern, base, self._ranked_merges(), dict(self._specials.ids))

    # -- training ------------------------------------------------------------------------------

    def train_from_iterator(self, iterator: Iterable[str], vocab_size: int = 4096, *,
                            min_frequency: int = 2, progress: bool | None = None
                            ) -> list[tuple[tuple[int, int], int]]:
        """Learn merges from texts, replacing any earlier merges; return the merge trace.

        ``vocab_size`` counts byte-level tokens: 256 bytes + merges (special tokens have their own
        ids). Training stops early, without error, when no pair occurs ``min_frequency`` times.
        The texts are streamed (each pre-split and its chunks counted). Ties go to the lexically
        smallest pair of byte strings. ``progress``: a stderr progress line (``None``: only on a
        terminal, once training runs over a second).

        >>> BPETokenizer(pattern=None).train_from_iterator(["aaabdaaabac"], 259)
        [((97, 97), 4), ((97, 98), 2), ((256, 257), 2)]
        """
        vocab_size = count("vocab_size", vocab_size, 256, "the 256 bytes are always in it")
        min_frequency = count("min_frequency", min_frequency, 1, "1: merge pairs seen once")
        clash = {name: i for name, i in self._specials.ids.items() if i < vocab_size}
        if clash:
            raise ValueError(f"train_from_iterator: special tokens {clash} have ids below vocab_size="
                             f"{vocab_size}, which merges would take; give them ids >= {vocab_size} "
                             f"or train a smaller vocabulary")
        chunk_counts = count_chunks(iterator, self._split, progress)
        trace = learn_merges(chunk_counts, vocab_size - 256, min_frequency=min_frequency,
                             progress=progress)
        merges = tuple(p for p, _ in trace)
        parts = ModelParts(self._pattern, tuple(range(256)), merges, dict(self._specials.ids))
        self._set_model(vocabulary_of(parts))
        return trace

    # -- encoding ------------------------------------------------------------------------------

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` as plain text: special-token strings become ordinary tokens.

        Use this for untrusted text (user input, documents); it can never produce a special id.

        >>> BPETokenizer().encode_ordinary("hi!")
        [104, 105, 33]
        """
        if type(text) is not str and not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}; decode bytes first "
                            f"(text = data.decode('utf-8'))")
        dispatch = self._dispatch
        if len(text) < dispatch.short_chars:   # a paragraph: no device work, the fewest steps
            return self._cache.short_ids(self._split(text), text)
        if len(text) >= dispatch.text_min_chars and (ids := dispatch.encode_text(text)) is not None:
            return ids
        return self._cache.ids_of(self._split(text), text, dispatch)

    def encode(self, text: str, *, allowed_special: str | Iterable[str] = frozenset(),
               disallowed_special: str | Iterable[str] = "all") -> list[int]:
        """Encode ``text``; special-token strings in it are an error unless you say otherwise.

        Default policy (tiktoken's): if ``text`` contains the string of any special token not in
        ``allowed_special``, raise ``ValueError``. Silently encoding it as plain text would hide
        that the text looks like control tokens; silently turning it into the special id would
        let whoever wrote the text forge document ends or chat roles. So the caller decides:
        ``allowed_special="all"`` (or a set) for trusted text that really carries special tokens;
        :meth:`encode_ordinary` (or ``disallowed_special=()``) to encode them as plain text.

        >>> tok = BPETokenizer(special_tokens={"<|endoftext|>": 300})
        >>> tok.encode("hi<|endoftext|>", allowed_special="all")
        [104, 105, 300]
        >>> tok.encode("hi<|endoftext|>")
        Traceback (most recent call last):
        ...
        ValueError: text contains the special token '<|endoftext|>' at index 2, which this call does not allow; pass allowed_special={'<|endoftext|>'} (or "all") if the text is trusted, or use encode_ordinary() to encode it as plain text
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        allowed = self._specials.allowed(allowed_special, disallowed_special, [text])
        if not allowed:
            return self.encode_ordinary(text)
        ids = []
        with split_budget(len(text)):   # the pieces share the text's time limit, not one each
            for part in self._specials.split(text, allowed):
                if isinstance(part, str):
                    ids += self.encode_ordinary(part)
                else:
                    ids.append(part)
        return ids

    def encode_ordinary_batch(self, text: list[str], *, num_threads: int = 8) -> list[list[int]]:
        """:meth:`encode_ordinary` of each document in ``text`` (a list of str, tiktoken's name for it).

        The ids equal a loop of single calls; a batch that reaches :attr:`kernel_text_min_bytes` goes to
        the device as one text, split by document (:mod:`~netcl_lite.text.batch`; ``num_threads``: unused).

        >>> BPETokenizer().encode_ordinary_batch(["hi", "", "!"])
        [[104, 105], [], [33]]
        """
        return batch_api.encode_ordinary_batch(self.encode_ordinary, self._dispatch, text, num_threads)

    def encode_batch(self, text: list[str], *, num_threads: int = 8,
                     allowed_special: str | Iterable[str] = frozenset(),
                     disallowed_special: str | Iterable[str] = "all") -> list[list[int]]:
        """:meth:`encode` of each document in ``text``, as tiktoken's method of this name; a disallowed
        special token in any document raises ``ValueError`` naming the document and the token.

        >>> tok = BPETokenizer(special_tokens={"<|endoftext|>": 300})
        >>> tok.encode_batch(["hi<|endoftext|>", "!"], allowed_special="all")
        [[104, 105, 300], [33]]
        """
        return batch_api.encode_batch(self.encode_ordinary, self._dispatch, self._specials, text,
                                      num_threads, allowed_special, disallowed_special)

    def decode_batch(self, batch: Iterable[Iterable[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> list[str]:
        """:meth:`decode` of each list of ids, as tiktoken's method of this name.

        >>> BPETokenizer().decode_batch([[104, 105], []])
        ['hi', '']
        """
        return batch_api.decode_batch(self.decode, batch, errors, num_threads)

    # -- decoding ------------------------------------------------------------------------------

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The exact bytes of ``ids`` (a slice of ids may end inside a UTF-8 character).

        >>> BPETokenizer().decode_bytes([226, 130])
        b'\\xe2\\x82'
        """
        ids = token_ids(ids)
        vocab = self._vocab
        try:
            return b"".join(map(vocab.__getitem__, ids))
        except KeyError:
            unknown = sorted({i for i in ids if i not in vocab})
            specials = sorted(self._specials.ids.values())
            raise ValueError(f"decode: unknown token ids {_some(unknown)}; this tokenizer has ids "
                             f"{min(self._tokens)}..{max(self._tokens)} and special ids {_some(specials)}"
                             ) from None

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """Decode ids to text; bytes that are not valid UTF-8 become U+FFFD (``errors="strict"`` raises).

        >>> BPETokenizer().decode([104, 105])
        'hi'
        """
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    # -- vocabulary edits ----------------------------------------------------------------------

    def register_special_tokens(self, special_tokens: Mapping[str, int]) -> None:
        """Add special tokens ``{string: id}``; ids must lie above the byte-level ids and be unused.

        >>> tok = BPETokenizer(); tok.register_special_tokens({"<|endoftext|>": 256}); tok.n_vocab
        257
        """
        for name, token_id in self._specials.register(special_tokens, self._tokens).items():
            self._vocab[token_id] = name.encode("utf-8")

    def add_token(self, token: str | bytes) -> int:
        """Add ``token`` as a special (added) token and return its id (the next free id).

        A vocabulary edit, not just a tokenizer edit: the model needs a new row in its embedding
        (``n_vocab x d_model``) and output projection for the new id, or the id indexes past both.
        How those rows start is a choice (random, the mean of the others, the pieces the text used
        to split into), and a row is not a learned meaning: fine-tune and evaluate first. Where a
        call allows it, its text is cut out before pre-splitting. A string that already is a
        special token keeps its id.

        >>> tok = BPETokenizer(); tok.add_token("<|tool|>"), tok.add_token("<|tool|>")
        (256, 256)
        """
        if isinstance(token, (bytes, bytearray)):
            try:
                token = bytes(token).decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"add_token: {bytes(token)!r} is not UTF-8; added tokens are text") from None
        if not isinstance(token, str):
            raise TypeError(f"add_token: token must be str or bytes, got {type(token).__name__}")
        if not token:
            raise ValueError("add_token: token must not be empty")
        if token not in self._specials.ids:
            self.register_special_tokens({token: self.n_vocab})
        return self._specials.ids[token]

    # -- files and interop ---------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> None:
        """Write the model to one versioned JSON file (see :mod:`~netcl_lite.text.model_file`).

        >>> import os, tempfile; path = os.path.join(tempfile.mkdtemp(), "tok.json")
        >>> BPETokenizer(special_tokens={"<|endoftext|>": 256}).save(path)
        >>> BPETokenizer.load(path).encode("hi<|endoftext|>", allowed_special="all")
        [104, 105, 256]
        """
        atomic_write(path, dumps(self._parts()).encode("utf-8"))   # whole or not at all

    @classmethod
    def load(cls, path: str | os.PathLike) -> BPETokenizer:
        """Read a file written by :meth:`save`; anything malformed raises ``ValueError`` naming the problem,
        as does a path that is not a regular file or too large
        (:func:`~netcl_lite.text.model_file.read_model_file`)."""
        return _from_vocabulary(read_model_file(path))

    def mergeable_ranks(self) -> dict[bytes, int]:
        """``bytes -> rank`` of the byte-level tokens, in tiktoken's format (rank = id).

        >>> BPETokenizer().mergeable_ranks()[b"a"]
        97
        """
        self._require_ranks("mergeable_ranks")
        return {t: i for i, t in self._tokens.items()}

    @classmethod
    def from_mergeable_ranks(cls, mergeable_ranks: Mapping[bytes, int], pattern: str | None = GPT4_PATTERN,
                             special_tokens: Mapping[str, int] | None = None) -> BPETokenizer:
        """Rebuild a tokenizer from tiktoken-style ranks (for example an ``Encoding``'s ``_mergeable_ranks``).

        Ranks 0..255 must be the 256 single bytes (in any order), ranks run 0..N-1, and each longer
        token must be two lower-ranked tokens joined, whose merge it then is.

        >>> ranks = {bytes([b]): b for b in range(256)} | {b"hi": 256, b"hi!": 257}
        >>> dict(BPETokenizer.from_mergeable_ranks(ranks).merges)
        {(104, 105): 256, (256, 33): 257}
        """
        return _from_ranks(check_ranks(mergeable_ranks), pattern, special_tokens, lambda _: "mergeable_ranks")

    @classmethod
    def from_tiktoken_file(cls, path: str | os.PathLike, pattern: str | None,
                           special_tokens: Mapping[str, int] | None = None,
                           expected_sha256: str | None = None) -> BPETokenizer:
        """Load a tiktoken ``.tiktoken`` file (one ``<base64 bytes> <rank>`` line per token).

        The file holds neither the pattern nor the special tokens: pass them (cl100k_base:
        :data:`GPT4_PATTERN`, ``{"<|endoftext|>": 100257, ...}``). ``expected_sha256``: the
        published hash, the only way to tell a file cut at a line break from a smaller
        vocabulary. Problems raise ``ValueError`` naming file and line (see
        :mod:`~netcl_lite.text.tiktoken_file`).

        >>> import os, tempfile; path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
        >>> tok = BPETokenizer.from_mergeable_ranks({bytes([b]): b for b in range(256)} | {b"hi": 256})
        >>> tok.save_tiktoken_file(path)
        >>> BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN).encode("hi hi")
        [256, 32, 256]
        """
        tokens, line_of = read_tiktoken_file(path, expected_sha256)
        return _from_ranks(tokens, pattern, special_tokens, lambda rank: f"{path}: line {line_of[rank]}")

    def save_tiktoken_file(self, path: str | os.PathLike) -> None:
        """Write the byte-level tokens as a ``.tiktoken`` file, byte for byte as tiktoken writes it
        (without the pattern and special tokens: keep them beside it; example: :meth:`from_tiktoken_file`)."""
        self._require_ranks("save_tiktoken_file")
        atomic_write(path, tiktoken_file_bytes([self._tokens[i] for i in range(len(self._tokens))]))

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike) -> BPETokenizer:
        """Load a Hugging Face byte-level BPE ``tokenizer.json`` (GPT-2 style), ids as the file has them.

        Its merges apply as ``tokenizers`` applies them (only the listed pairs, earliest first);
        its added tokens, each marked ``"special": true``, become special tokens (a non-special
        one, which ``tokenizers`` matches in ordinary text, is refused); a component this tokenizer
        cannot reproduce exactly raises ``ValueError`` naming the key (:mod:`~netcl_lite.text.tokenizer_json`).

        >>> import os, tempfile; path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
        >>> tok = BPETokenizer(special_tokens={"<|endoftext|>": 258})
        >>> _ = tok.train_from_iterator(["hi hi hi!"], 258)
        >>> tok.save_tokenizer_json(path)
        >>> BPETokenizer.from_tokenizer_json(path).encode("hi!<|endoftext|>", allowed_special="all")
        [256, 33, 258]
        """
        return _from_vocabulary(read_tokenizer_json(path))

    def save_tokenizer_json(self, path: str | os.PathLike) -> None:
        """Write a ``tokenizer.json`` that Hugging Face ``tokenizers`` loads and encodes with the same ids.

        Under tiktoken's rule: ``ignore_merges: true`` (a chunk that is a token stays whole) and the
        merges of :attr:`merges`. (Example: :meth:`from_tokenizer_json`.)"""
        vocab = self._vocabulary()
        if vocab.merge_list is None:
            merge_list = tuple((left, right, merged) for (left, right), merged in self.merges.items())
            vocab = replace(vocab, merge_list=merge_list)
        atomic_write(path, tokenizer_json_text(vocab).encode("utf-8"))

    def _require_ranks(self, what: str) -> None:
        if self._merge_list is not None:
            raise ValueError(f"{what}: this tokenizer follows a tokenizer.json's merge list, not tiktoken's "
                             f"ranks; save it with save_tokenizer_json()")


def _from_vocabulary(vocab: Vocabulary) -> BPETokenizer:
    tok = BPETokenizer.__new__(BPETokenizer)
    tok._set_model(vocab)
    return tok


def _from_ranks(tokens: list[bytes], pattern: str | None, special_tokens: Mapping[str, int] | None,
                where) -> BPETokenizer:
    """tiktoken's rule over ``tokens`` (index = rank); ``where(rank)`` names the source of a bad token."""
    try:
        tok = _from_vocabulary(Vocabulary(pattern, dict(enumerate(tokens))))
    except UnmadeTokenError as exc:
        raise ValueError(f"{where(exc.rank)}: {exc}") from None
    if special_tokens:
        tok.register_special_tokens(special_tokens)
    return tok


def _some(values: list) -> str:  # the first ten of many values
    return f"{values[:10]}" + (f" and {len(values) - 10} more" if len(values) > 10 else "")
