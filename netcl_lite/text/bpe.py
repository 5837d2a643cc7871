"""Byte-level BPE: train, encode, decode, save and load; ids compatible with tiktoken.

The base alphabet is the 256 byte values (ids 0..255 are bytes 0..255 for a
trained tokenizer), so every string UTF-8 can encode round-trips exactly.
That is why byte-level BPE has no out-of-vocabulary failures: the *byte
alphabet* (or, in other tokenizers, a configured byte fallback) guarantees
it, not subwords as such; a word-level or character-level subword vocabulary
without byte fallback still needs an unknown token. A normalizer (lower-
casing, NFKC) in front of a tokenizer can still alter the text; this one has
none.

Text goes through three steps:

1. special tokens (only those the caller allows) are cut out of the text;
2. the pre-split pattern (:data:`GPT4_PATTERN` by default) cuts the rest
   into chunks, and merges never cross a chunk boundary;
3. each chunk's UTF-8 bytes are merged, lowest rank first (see
   :mod:`~netcl_lite.text.byte_pair`). A chunk that is itself a token
   becomes that token directly, as in tiktoken.

Encoding keeps a bounded cache chunk -> ids, seeded with every token that
is valid UTF-8, so a repeated chunk costs one dict lookup. Chunks new to the
cache are merged by the Python loop, or, when a call brings many, by an OpenCL
kernel (:attr:`BPETokenizer.kernel_min_bytes`). With :data:`GPT4_PATTERN` under
tiktoken's rule, a long call (:attr:`BPETokenizer.kernel_text_min_bytes`) goes
to the device whole instead: split, merged and gathered there, without the cache
(:mod:`~netcl_lite.text.device_merge`).

Files: :meth:`BPETokenizer.save`/:meth:`~BPETokenizer.load` (netcl_lite's own
model file), tiktoken's ``.tiktoken`` (:meth:`~BPETokenizer.from_tiktoken_file`)
and Hugging Face's byte-level ``tokenizer.json``
(:meth:`~BPETokenizer.from_tokenizer_json`). A tokenizer keeps the merge rule of
the file it came from (see :mod:`~netcl_lite.text.byte_pair`), so its ids match
the library that owns the format.
"""

from __future__ import annotations

import numbers
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from itertools import chain, compress
from operator import not_
from types import MappingProxyType

import numpy as np

from netcl_lite.text import batch as _batch
from netcl_lite.text import device_merge
from netcl_lite.text.bpe_training import learn_merges
from netcl_lite.text.byte_pair import UnmadeTokenError, chunk_encoder, listed_pair_table, rank_pair_table
from netcl_lite.text.model_file import (
    ModelParts,
    check_merges,
    check_special_tokens,
    dumps,
    loads,
)
from netcl_lite.text.patterns import GPT4_PATTERN, compile_splitter
from netcl_lite.text.progress import Progress
from netcl_lite.text.ranks import check_ranks, derive_merges
from netcl_lite.text.tiktoken_file import read_tiktoken_file, tiktoken_file_bytes
from netcl_lite.text.tokenizer_json import read_tokenizer_json, tokenizer_json_text
from netcl_lite.text.vocabulary import Vocabulary

__all__ = ["BPETokenizer"]

_BYTES = {i: bytes([i]) for i in range(256)}
_CACHE_LIMIT = 1 << 17  # chunks kept beyond the seed before the cache starts over
_MAX_CACHED_CHARS = 256  # longer chunks (pattern=None) are encoded but not kept
#: A call whose new chunks hold at least this many UTF-8 bytes merges them with the kernel
#: (``kernels/bpe.cl``); below it the Python loop is faster than a launch. Measured by
#: ``benchmarks/bpe_threshold.py`` (benchmarks/README.md, "Tokenizer: the merge kernel").
KERNEL_MIN_BYTES = 1024
#: A call whose text holds at least this many UTF-8 bytes is split and merged on the device in
#: one pass (``DeviceMerger.merge_text``) when the tokenizer follows tiktoken's rule with
#: :data:`GPT4_PATTERN`; measured by ``benchmarks/bpe_threshold.py`` like the one above.
KERNEL_TEXT_MIN_BYTES = 2048


class _LoneSurrogate(Exception):
    pass


class _ChunkCache(dict):
    """chunk -> token ids; a miss encodes the chunk (``__missing__``), so hits stay in C.

    The ids are kept as tuples: the copy costs the cold pass ~1 %, and warm passes chain
    tuples ~5-8 % faster than the encoder's lists.
    """

    __slots__ = ("_encode",)

    def __init__(self, seed, encode):
        super().__init__(seed)
        self._encode = encode

    def __missing__(self, chunk: str) -> tuple[int, ...]:
        # subtle: a chunk that is one token never gets here when whole_chunks holds: the cache
        # is seeded with every token that is text.
        try:
            piece = chunk.encode("utf-8")
        except UnicodeEncodeError:
            raise _LoneSurrogate from None
        ids = tuple(self._encode(piece))
        if len(chunk) <= _MAX_CACHED_CHARS:
            self[chunk] = ids
        return ids


class BPETokenizer:
    """Byte-level BPE tokenizer with regex pre-splitting and special tokens.

    >>> tok = BPETokenizer()
    >>> tok.train_from_iterator(["Hello world!", "Attention is all you need."])
    [((108, 108), 2)]
    >>> tok.decode(tok.encode("Hello world!"))
    'Hello world!'

    ``pattern``: pre-split regex (default :data:`GPT4_PATTERN`, tiktoken's
    cl100k pattern; :data:`GPT2_PATTERN`; any ``regex`` pattern; ``None`` for
    no splitting). ``special_tokens``: ``{string: id}`` with ids above the
    byte-level ids; user text never becomes a special id unless the caller
    allows it (see :meth:`encode`).
    """

    def __init__(self, pattern: str | None = GPT4_PATTERN,
                 special_tokens: Mapping[str, int] | None = None):
        self._set_model(Vocabulary(pattern, _BYTES))
        if special_tokens is not None:
            self.register_special_tokens(special_tokens)

    # -- state ---------------------------------------------------------------------------------

    def _set_model(self, vocab: Vocabulary) -> None:
        self._split = compile_splitter(vocab.pattern)  # validates the pattern
        self._pattern = vocab.pattern
        self._tokens = dict(vocab.tokens)  # id -> bytes, byte-level tokens only
        self._ids = {t: i for i, t in self._tokens.items()}  # bytes -> id
        self._byte_ids = [self._ids[bytes([b])] for b in range(256)]  # byte value -> id
        self._merge_list = vocab.merge_list  # None: tiktoken's rule (ids are ranks)
        if vocab.merge_list is None:
            self._by_rank = [self._tokens[i] for i in range(len(self._tokens))]
            self._packed = device_merge.pack_tokens(self._by_rank)  # the kernel's index is built from it
            self._pairs = rank_pair_table(self._by_rank)
        else:
            self._by_rank = self._packed = None
            self._pairs = listed_pair_table(vocab.merge_list, max(self._tokens) + 1)
        self._derived = vocab.merges  # tiktoken's rule: (left, right) of ids 256.., or None until asked
        self._merges: dict[tuple[int, int], int] | None = None  # built on first use of .merges
        self._whole_chunks = vocab.whole_chunks
        self._special: dict[str, int] = {}
        self._vocab = dict(self._tokens)  # id -> bytes, special tokens included
        self._special_res: dict[frozenset, re.Pattern] = {}
        seed = {}
        if vocab.whole_chunks:  # otherwise a chunk equal to a token may still merge differently
            for i, t in self._tokens.items():
                try:
                    seed[t.decode("utf-8")] = (i,)
                except UnicodeDecodeError:
                    pass  # not a whole character: never a chunk on its own
        self._seed = seed
        self._encode_piece = chunk_encoder(self._byte_ids, self._pairs)
        self._merger: device_merge.DeviceMerger | None = None  # the kernel's tables, built on first use
        if not hasattr(self, "_kernel_min_bytes"):  # a retrained tokenizer keeps its settings
            self.kernel_min_bytes = KERNEL_MIN_BYTES
            self.kernel_text_min_bytes = KERNEL_TEXT_MIN_BYTES
        # the whole-call path: GPT-4's pattern (the device splits it), tiktoken's rule (its index)
        self._text_on_device = vocab.pattern == GPT4_PATTERN and vocab.merge_list is None and vocab.whole_chunks
        self._cache = _ChunkCache(seed, self._encode_piece)
        if vocab.special_tokens:
            self.register_special_tokens(vocab.special_tokens)

    @property
    def kernel_min_bytes(self) -> int | None:
        """New bytes one call must bring before its new chunks are merged by the OpenCL kernel.

        Encoding caches every chunk it has merged; the chunks a call has not seen before
        are its *new* chunks. When their UTF-8 bytes add up to at least this number, they are
        merged together in one launch of ``kernels/bpe.cl`` (one work-item per chunk, on
        ``netcl_lite.device()``) instead of one by one in Python; the ids are identical
        either way. The default, :data:`KERNEL_MIN_BYTES`, is measured: below it a launch
        costs more than the Python loop saves. ``0``: always the kernel; ``None``: never.
        The first launch also builds the kernel's tables on the device (an index of the tokens,
        or of a merge list's pairs: one pass over the vocabulary), once per tokenizer. Chunks longer than :data:`~netcl_lite.text.device_merge.MAX_CHUNK` bytes
        always take the Python loop. A call that :attr:`kernel_text_min_bytes` sends to the device
        whole never gets here.

        >>> tok = BPETokenizer(); tok.kernel_min_bytes = None; tok.encode("hi")
        [104, 105]
        """
        return self._kernel_min_bytes

    @kernel_min_bytes.setter
    def kernel_min_bytes(self, value: int | None) -> None:
        if value is not None:
            value = _check_int("kernel_min_bytes", value, 0, "use 0 to merge every call's new chunks "
                               "on the device, or None to never use the kernel")
        self._kernel_min_bytes = value
        # a text of fewer characters has fewer UTF-8 bytes (4 at most per character, 1 in ASCII
        # text): a compare or two keep a short call on the Python path
        self._kernel_min_chars = sys.maxsize if value is None else -(-value // 4)
        self._kernel_min_ascii = sys.maxsize if value is None else value

    @property
    def kernel_text_min_bytes(self) -> int | None:
        """UTF-8 bytes from which a whole call is split and merged on the device, skipping the cache.

        For a tokenizer that follows tiktoken's rule with :data:`GPT4_PATTERN` (cl100k_base's
        pattern), a call whose text holds at least this many bytes goes to the device in one
        pass: ``kernels/bpe.cl`` splits the text as the pattern does, merges each different chunk
        once (a work-item each) and gathers the ids; the chunk cache is neither read nor filled. The ids
        are identical to the Python path's. The default, :data:`KERNEL_TEXT_MIN_BYTES`, is
        measured (``benchmarks/bpe_threshold.py``). ``0``: every call; ``None``: never (then
        :attr:`kernel_min_bytes` decides, chunk by chunk). Other patterns and merge lists never
        take this path.

        >>> tok = BPETokenizer(); tok.kernel_text_min_bytes = 0; tok.encode("hi there")
        [104, 105, 32, 116, 104, 101, 114, 101]
        """
        return self._kernel_text_min_bytes

    @kernel_text_min_bytes.setter
    def kernel_text_min_bytes(self, value: int | None) -> None:
        if value is not None:
            value = _check_int("kernel_text_min_bytes", value, 0, "use 0 to split and merge every call on "
                               "the device, or None to never do so")
        self._kernel_text_min_bytes = value
        # at most 4 bytes a character: a shorter text never gets there
        self._text_min_chars = sys.maxsize if value is None else -(-value // 4)

    @property
    def pattern(self) -> str | None:
        """The pre-split regex (``None``: no splitting). Fixed at construction; saved with the model."""
        return self._pattern

    @property
    def merges(self) -> Mapping[tuple[int, int], int]:
        """``(left_id, right_id) -> new id`` in merge order (read-only view).

        For a tokenizer loaded from tiktoken's ranks these are derived on first use (about half
        a second for 100k tokens): tiktoken's files hold no merge list.
        """
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
        return MappingProxyType(self._special)

    @property
    def n_vocab(self) -> int:
        """Largest id + 1: the number of rows the model's embedding and output need."""
        return max(self._vocab) + 1

    def __repr__(self) -> str:
        return (f"BPETokenizer(pattern={self._pattern!r}, tokens={len(self._tokens)}, "
                f"special_tokens={dict(self._special)!r})")

    def __reduce__(self):  # pickles as its vocabulary (the splitter, tables and cache are rebuilt)
        return (_from_vocabulary, (self._vocabulary(),))

    def _vocabulary(self) -> Vocabulary:
        return Vocabulary(self._pattern, self._tokens, dict(self._special), self._merge_list,
                          self._whole_chunks, self._derived)

    def _parts(self) -> ModelParts:
        """The model in netcl_lite's own file layout: tiktoken's rule with ids 0..255 the bytes."""
        if self._merge_list is not None:
            raise ValueError("this tokenizer follows a tokenizer.json's merge list, which netcl_lite's "
                             "model file cannot hold; save it with save_tokenizer_json()")
        base = tuple(self._tokens[i][0] for i in range(256))
        return ModelParts(self._pattern, base, self._ranked_merges(), dict(self._special))

    # -- training ------------------------------------------------------------------------------

    def train_from_iterator(self, iterator: Iterable[str], vocab_size: int = 4096, *,
                            min_frequency: int = 2, progress: bool | None = None
                            ) -> list[tuple[tuple[int, int], int]]:
        """Learn merges from texts, replacing any earlier merges; return the merge trace.

        ``vocab_size`` counts byte-level tokens: 256 bytes + merges (special tokens are extra,
        with their own ids). Training stops early, without error, when no pair occurs
        ``min_frequency`` times. The texts are streamed: each is pre-split and its chunks
        counted, so a generator of many megabytes is never held as one string. Ties between
        equally frequent pairs go to the lexically smallest pair of byte strings. ``progress``:
        a stderr progress line (``None``: only on a terminal, once training runs over a second).

        >>> BPETokenizer(pattern=None).train_from_iterator(["aaabdaaabac"], 259)
        [((97, 97), 4), ((97, 98), 2), ((256, 257), 2)]
        """
        if isinstance(iterator, (str, bytes)) or not isinstance(iterator, Iterable):
            raise TypeError(f"train_from_iterator: iterator must yield texts (e.g. a list of str), "
                            f"got {type(iterator).__name__}; wrap a single text as [text]")
        vocab_size = _check_int("vocab_size", vocab_size, 256,
                                "the 256 byte values are always in the vocabulary")
        min_frequency = _check_int("min_frequency", min_frequency, 1, "use 1 to merge pairs seen once")
        clash = {name: i for name, i in self._special.items() if i < vocab_size}
        if clash:
            raise ValueError(f"train_from_iterator: special tokens {clash} have ids below vocab_size="
                             f"{vocab_size}, which merges would take; give them ids >= {vocab_size} "
                             f"or train a smaller vocabulary")
        bar = Progress(progress)
        counts: Counter[str] = Counter()
        read = 0
        for index, text in enumerate(iterator):
            if not isinstance(text, str):
                raise TypeError(f"train_from_iterator: item {index} is {type(text).__name__}, "
                                f"expected str")
            counts.update(self._split(text))
            read += len(text)
            bar.update(f"BPE training: counted {index + 1} texts, {read / 1e6:.1f} M characters")
        bar.close()
        chunk_counts = {}
        for chunk, n in counts.items():
            try:
                chunk_counts[chunk.encode("utf-8")] = n
            except UnicodeEncodeError:
                raise ValueError(f"train_from_iterator: the texts contain a lone surrogate in "
                                 f"{chunk!r}, which UTF-8 cannot encode; clean the text first") from None
        del counts
        trace = learn_merges(chunk_counts, vocab_size - 256, min_frequency=min_frequency,
                             progress=progress)
        self._set_model(_trained(self._pattern, tuple(p for p, _ in trace), dict(self._special)))
        return trace

    # -- encoding ------------------------------------------------------------------------------

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` as plain text: special-token strings become ordinary tokens.

        Use this for untrusted text (user input, documents); it can never produce a special id.

        >>> BPETokenizer().encode_ordinary("hi!")
        [104, 105, 33]
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}; decode bytes first "
                            f"(text = data.decode('utf-8'))")
        n = len(text)
        if n >= self._text_min_chars and self._text_on_device:
            ids = self._encode_on_device(text)
            if ids is not None:
                return ids
        cache = self._cache
        chunks = self._split(text)
        try:
            if n < self._kernel_min_chars or (n < self._kernel_min_ascii and text.isascii()):
                # fewer new bytes than kernel_min_bytes: the Python loop
                ids = list(chain.from_iterable(map(cache.__getitem__, chunks)))
            else:  # one lookup pass; the new chunks, if any, are merged together (the kernel's
                values = list(map(cache.get, chunks))  # job when they hold enough bytes)
                if not all(values):                     # None: a new chunk (ids are never empty)
                    self._fill_new(chunks, values)
                ids = list(chain.from_iterable(values))
        except _LoneSurrogate:
            _lone_surrogate(text)
        if len(cache) > len(self._seed) + _CACHE_LIMIT:
            self._cache = _ChunkCache(self._seed, self._encode_piece)
        return ids

    def _encode_on_device(self, text: str) -> list[int] | None:
        """The whole call on the device (:attr:`kernel_text_min_bytes`); ``None``: too short or too long
        (:data:`~netcl_lite.text.device_merge.MAX_TEXT_BYTES`), or no device table."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            _lone_surrogate(text)
        if not self._kernel_text_min_bytes <= len(data) <= device_merge.MAX_TEXT_BYTES or (
                merger := self._device_merger()) is None:
            return None
        ids, longs = merger.merge_text(data)
        if not longs:
            return ids.tolist()
        # chunks longer than the kernel takes: the Python loop, each in its placeholder's place
        places = np.flatnonzero(ids == device_merge.EMPTY).tolist()
        ids, out, done = ids.tolist(), [], 0
        for place, (start, end) in zip(places, longs):
            out += ids[done:place]
            out += self._encode_piece(data[start:end])
            done = place + 1
        out += ids[done:]
        return out

    def _fill_new(self, chunks: list[str], values: list) -> None:
        """Fill in ``values`` (``cache.get`` of each chunk, ``None`` for a new chunk) with the ids of
        the new chunks, merged together (:meth:`_merge_new`) and cached."""
        got = self._merge_new(set(compress(chunks, map(not_, values))))
        if 4 * len(got) < len(values):  # few: patch their places (each read before it is set)
            for i in compress(range(len(values)), map(not_, values)):
                values[i] = got[chunks[i]]
        else:                            # many: one more pass at C speed (got holds no old chunk)
            values[:] = map(got.get, chunks, values)

    def _merge_new(self, new: set[str]) -> dict[str, tuple[int, ...]]:
        """The ids of a call's new chunks (each once): with the kernel when they hold at least
        the call's limit of bytes (chunks longer than it takes stay on the Python loop), else
        the Python loop; kept in the cache (up to ``_MAX_CACHED_CHARS`` characters)."""
        new = list(new)
        try:
            pieces = list(map(str.encode, new))
        except UnicodeEncodeError:
            raise _LoneSurrogate from None
        lengths = list(map(len, pieces))
        got = {}
        limit = self._kernel_min_bytes
        if limit is not None and sum(lengths) >= limit and (merger := self._device_merger()) is not None:
            if max(lengths) <= device_merge.MAX_CHUNK:
                got = dict(zip(new, merger.merge(pieces)))
            else:  # long chunks: the Python loop's heap
                fits = [i for i, n in enumerate(lengths) if n <= device_merge.MAX_CHUNK]
                got = dict(zip(map(new.__getitem__, fits), merger.merge(list(map(pieces.__getitem__, fits)))))
        if len(got) < len(new):  # the Python loop, the reference
            encode = self._encode_piece
            for chunk, piece in zip(new, pieces):
                if chunk not in got:
                    got[chunk] = tuple(encode(piece))
        if max(map(len, new)) <= _MAX_CACHED_CHARS:
            self._cache.update(got)
        else:
            self._cache.update((c, ids) for c, ids in got.items() if len(c) <= _MAX_CACHED_CHARS)
        return got

    def _device_merger(self) -> device_merge.DeviceMerger | None:
        """The kernel's tables, built on first use; ``None`` when this vocabulary's ids do not fit them."""
        if self._merger is None:
            # tiktoken's rule numbers its tokens 0..N-1: no pass over 100k ids to find the largest
            largest = len(self._tokens) - 1 if self._merge_list is None else max(self._tokens)
            if largest > device_merge.MAX_ID or (  # more ids or merges than the tables pack
                    self._merge_list is not None and len(self._merge_list) > device_merge.MAX_PRIORITY + 1):
                self.kernel_min_bytes = self.kernel_text_min_bytes = None
                return None
            if self._merge_list is None:  # tiktoken's rule: an index of the tokens by their bytes
                self._merger = device_merge.DeviceMerger(self._byte_ids, tokens=self._packed)
            else:
                self._merger = device_merge.DeviceMerger(self._byte_ids, merges=self._merge_list)
        return self._merger

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
        allowed = self._special_set("allowed_special", allowed_special)
        if disallowed_special == "all":
            disallowed = frozenset(self._special) - allowed
        else:
            disallowed = self._special_set("disallowed_special", disallowed_special)
        if disallowed and (found := self._special_re(disallowed).search(text)):
            raise ValueError(
                f"text contains the special token {found.group()!r} at index {found.start()}, which "
                f"this call does not allow; pass allowed_special={{{found.group()!r}}} (or \"all\") if "
                f"the text is trusted, or use encode_ordinary() to encode it as plain text")
        if not allowed:
            return self.encode_ordinary(text)
        ids, start = [], 0
        for found in self._special_re(allowed).finditer(text):
            ids += self.encode_ordinary(text[start:found.start()])
            ids.append(self._special[found.group()])
            start = found.end()
        return ids + self.encode_ordinary(text[start:])

    def _special_set(self, name: str, value) -> frozenset:
        if not value and not isinstance(value, str):
            return frozenset()
        if value == "all":
            return frozenset(self._special)
        if isinstance(value, str) or not isinstance(value, Iterable):
            raise TypeError(f'{name} must be "all" or a set of special-token strings, got {value!r}')
        chosen = frozenset(value)
        unknown = sorted(map(str, chosen - set(self._special)))
        if unknown:
            raise ValueError(f"{name}: {unknown} are not special tokens of this tokenizer "
                             f"(it has {sorted(self._special)}); register them first")
        return chosen

    def _special_re(self, names: frozenset) -> re.Pattern:
        found = self._special_res.get(names)
        if found is None:  # longest first, so a token that extends another one wins
            alternatives = sorted(names, key=lambda s: (-len(s), s))
            found = self._special_res[names] = re.compile("|".join(map(re.escape, alternatives)))
        return found

    def encode_ordinary_batch(self, text: list[str], *, num_threads: int = 8) -> list[list[int]]:
        """:meth:`encode_ordinary` of each document in ``text`` (a list of str, tiktoken's name for it).

        The ids equal a loop of single calls; a batch that reaches :attr:`kernel_text_min_bytes`
        goes to the device as one text, split document by document (see
        :mod:`~netcl_lite.text.batch`; ``num_threads`` is checked, as tiktoken's, and unused).

        >>> BPETokenizer().encode_ordinary_batch(["hi", "", "!"])
        [[104, 105], [], [33]]
        """
        return _batch.encode_ordinary_batch(self, text, num_threads)

    def encode_batch(self, text: list[str], *, num_threads: int = 8,
                     allowed_special: str | Iterable[str] = frozenset(),
                     disallowed_special: str | Iterable[str] = "all") -> list[list[int]]:
        """:meth:`encode` of each document in ``text``, as tiktoken's method of this name; a disallowed
        special token in any document raises ``ValueError`` naming the document and the token.

        >>> tok = BPETokenizer(special_tokens={"<|endoftext|>": 300})
        >>> tok.encode_batch(["hi<|endoftext|>", "!"], allowed_special="all")
        [[104, 105, 300], [33]]
        """
        return _batch.encode_batch(self, text, num_threads, allowed_special, disallowed_special)

    def decode_batch(self, batch: Iterable[Iterable[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> list[str]:
        """:meth:`decode` of each list of ids, as tiktoken's method of this name.

        >>> BPETokenizer().decode_batch([[104, 105], []])
        ['hi', '']
        """
        return _batch.decode_batch(self, batch, errors, num_threads)

    # -- decoding ------------------------------------------------------------------------------

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The exact bytes of ``ids`` (a slice of ids may end inside a UTF-8 character).

        >>> BPETokenizer().decode_bytes([226, 130])
        b'\\xe2\\x82'
        """
        ids = _check_ids(ids)
        vocab = self._vocab
        try:
            return b"".join(map(vocab.__getitem__, ids))
        except KeyError:
            unknown = sorted({i for i in ids if i not in vocab})
            specials = sorted(self._special.values())
            raise ValueError(f"decode: unknown token ids {_some(unknown)}; this tokenizer has ids "
                             f"{min(self._tokens)}..{max(self._tokens)} and special ids {_some(specials)}") from None

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
        if not isinstance(special_tokens, Mapping):
            raise TypeError(f"special_tokens must be a mapping {{string: id}}, got "
                            f"{type(special_tokens).__name__}")
        new = {}
        for name, token_id in special_tokens.items():
            if isinstance(token_id, numbers.Integral) and not isinstance(token_id, bool):
                token_id = int(token_id)
            if name in self._special and self._special[name] != token_id:
                raise ValueError(f"special token {name!r} already has id {self._special[name]}")
            new[name] = token_id
        merged = {**self._special, **new}
        check_special_tokens(merged, self._tokens, "special_tokens")
        self._special = merged
        for name, token_id in new.items():
            self._vocab[token_id] = name.encode("utf-8")
        self._special_res.clear()

    def add_token(self, token: str | bytes) -> int:
        """Add ``token`` as a special (added) token and return its id (the next free id).

        Adding a token is a vocabulary edit, not just a tokenizer edit: the model needs a new
        row in its embedding matrix (``n_vocab x d_model``) and in its output projection (and
        output bias) for the new id, or the id indexes past the end of both. How those rows are
        initialized is implementation-specific (random, the mean of existing rows, the
        embedding of the pieces the text used to split into), and the model has not learned what
        the token means just because the row exists: fine-tune and evaluate before relying on it.
        The token also changes segmentation: where the caller allows it, its text is cut out
        before pre-splitting. Adding a string that already is a special token returns its id.

        >>> tok = BPETokenizer(); tok.add_token("<|tool|>"), tok.add_token("<|tool|>")
        (256, 256)
        """
        if isinstance(token, (bytes, bytearray)):
            try:
                token = bytes(token).decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"add_token: {bytes(token)!r} is not valid UTF-8; added tokens are "
                                 f"text") from None
        if not isinstance(token, str):
            raise TypeError(f"add_token: token must be str or bytes, got {type(token).__name__}")
        if not token:
            raise ValueError("add_token: token must not be empty")
        if token in self._special:
            return self._special[token]
        token_id = self.n_vocab
        self.register_special_tokens({token: token_id})
        return token_id

    # -- files and interop ---------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> None:
        """Write the model to one versioned JSON file (see :mod:`~netcl_lite.text.model_file`).

        >>> import os, tempfile; path = os.path.join(tempfile.mkdtemp(), "tok.json")
        >>> BPETokenizer(special_tokens={"<|endoftext|>": 256}).save(path)
        >>> BPETokenizer.load(path).encode("hi<|endoftext|>", allowed_special="all")
        [104, 105, 256]
        """
        from netcl_lite.files import atomic_write

        atomic_write(path, dumps(self._parts()).encode("utf-8"))   # whole or not at all

    @classmethod
    def load(cls, path: str | os.PathLike) -> BPETokenizer:
        """Read a file written by :meth:`save`; anything malformed raises ``ValueError`` naming the problem,
        as does a path that is not a regular file (a device, a named pipe) or is larger than
        :data:`~netcl_lite.text.model_file.MAX_FILE_BYTES`, checked before it is opened."""
        from netcl_lite.files import read_regular
        from netcl_lite.text.model_file import MAX_FILE_BYTES

        raw = read_regular(path, MAX_FILE_BYTES, "a tokenizer file")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text ({exc}); is this a tokenizer file?") from None
        return _from_parts(loads(text, str(path)))

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

        Ranks 0..255 must be the 256 single bytes (in any order), ranks must run 0..N-1, and
        each longer token must be made of two lower-ranked tokens, whose merge it then is.

        >>> ranks = {bytes([b]): b for b in range(256)} | {b"hi": 256, b"hi!": 257}
        >>> dict(BPETokenizer.from_mergeable_ranks(ranks).merges)
        {(104, 105): 256, (256, 33): 257}
        """
        return _from_ranks(check_ranks(mergeable_ranks), pattern, special_tokens, lambda rank: "mergeable_ranks")

    @classmethod
    def from_tiktoken_file(cls, path: str | os.PathLike, pattern: str | None,
                           special_tokens: Mapping[str, int] | None = None,
                           expected_sha256: str | None = None) -> BPETokenizer:
        """Load a tiktoken ``.tiktoken`` file (one ``<base64 bytes> <rank>`` line per token).

        The file holds neither the pre-split pattern nor the special tokens: pass them
        (for cl100k_base: :data:`GPT4_PATTERN` and ``{"<|endoftext|>": 100257, ...}``).
        ``expected_sha256``: the file's published hash; a file that does not match raises
        (the only way to tell a file cut exactly at a line break from a smaller vocabulary).
        Every problem is a ``ValueError`` naming the file and line
        (see :mod:`~netcl_lite.text.tiktoken_file`).

        >>> import os, tempfile; path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
        >>> tok = BPETokenizer.from_mergeable_ranks({bytes([b]): b for b in range(256)} | {b"hi": 256})
        >>> tok.save_tiktoken_file(path)
        >>> BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN).encode("hi hi")
        [256, 32, 256]
        """
        tokens, line_of = read_tiktoken_file(path, expected_sha256)
        return _from_ranks(tokens, pattern, special_tokens, lambda rank: f"{path}: line {line_of[rank]}")

    def save_tiktoken_file(self, path: str | os.PathLike) -> None:
        """Write the byte-level tokens as a ``.tiktoken`` file, byte for byte as tiktoken writes it.

        The pattern and the special tokens are not part of that format; keep them beside it.
        (Example: :meth:`from_tiktoken_file`.)
        """
        from netcl_lite.files import atomic_write

        self._require_ranks("save_tiktoken_file")
        atomic_write(path, tiktoken_file_bytes([self._tokens[i] for i in range(len(self._tokens))]))

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike) -> BPETokenizer:
        """Load a Hugging Face byte-level BPE ``tokenizer.json`` (GPT-2 style), ids as the file has them.

        Its merges apply as ``tokenizers`` applies them (only the listed pairs, earliest
        first); its added tokens become special tokens. Components this tokenizer cannot
        reproduce exactly raise ``ValueError`` naming the key
        (see :mod:`~netcl_lite.text.tokenizer_json`).

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

        A tokenizer that follows tiktoken's rule is written with ``ignore_merges: true`` (a
        chunk that is a token stays whole, as in tiktoken) and the merges of :attr:`merges`.
        (Example: :meth:`from_tokenizer_json`.)
        """
        vocab = self._vocabulary()
        if vocab.merge_list is None:
            merge_list = tuple((left, right, merged) for (left, right), merged in self.merges.items())
            vocab = replace(vocab, merge_list=merge_list)
        from netcl_lite.files import atomic_write

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


def _from_parts(parts: ModelParts) -> BPETokenizer:
    """From netcl_lite's own model file: ids 0..255 are ``parts.base_bytes``, merge k makes id 256 + k."""
    tokens = check_merges(parts.base_bytes, parts.merges)
    return _from_vocabulary(Vocabulary(parts.pattern, dict(enumerate(tokens)), dict(parts.special_tokens),
                                       merges=tuple(parts.merges)))


def _trained(pattern: str | None, merges: tuple[tuple[int, int], ...], special_tokens: dict) -> Vocabulary:
    tokens = check_merges(range(256), merges)
    return Vocabulary(pattern, dict(enumerate(tokens)), special_tokens, merges=merges)


def _lone_surrogate(text: str):
    at = next(i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff")
    raise ValueError(f"text has a lone surrogate {text[at]!r} at index {at}, which UTF-8 "
                     f"cannot encode; repair the string (it often comes from decoding "
                     f"bytes with errors='surrogateescape')") from None


def _some(values: list) -> str:
    return f"{values[:10]}" + (f" and {len(values) - 10} more" if len(values) > 10 else "")


def _check_int(name: str, value, minimum: int, why: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name}={value} is too small: it must be >= {minimum} ({why})")
    return int(value)


def _check_ids(ids) -> list[int]:
    if isinstance(ids, (str, bytes, bytearray)) or not isinstance(ids, Iterable):
        raise TypeError(f"ids must be a sequence of int token ids, got {type(ids).__name__}")
    if hasattr(ids, "dtype") and hasattr(ids, "tolist"):  # NumPy array
        if ids.dtype.kind not in "iu":
            raise TypeError(f"ids must be integers, got an array of {ids.dtype}")
        return ids.tolist()
    ids = ids if isinstance(ids, list) else list(ids)
    kinds = set(map(type, ids))
    if kinds <= {int}:
        return ids
    bad = next((k for k in kinds if k is bool or not issubclass(k, numbers.Integral)), None)
    if bad is not None:
        raise TypeError(f"ids must be ints, got an element of type {bad.__name__}")
    return list(map(int, ids))  # e.g. NumPy integer scalars
