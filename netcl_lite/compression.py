"""A language model as a lossless compressor: any bytes in, a file out, the same bytes back.

:func:`compress` turns the bytes into token ids (byte-level BPE; bytes that are not UTF-8
become single-byte tokens), predicts each token with the model, optionally mixed with an
adaptive n-gram model (:class:`NGram`), and range-codes the ids with those probabilities
(``constriction``'s range coder). :func:`decompress` runs the identical sequence of
computations and decodes each id from the same probabilities.

Both sides see bit-identical probabilities because they compute them the same way: the
token sequence is cut into ``streams`` contiguous segments coded side by side, one cached
decoding step (:meth:`~netcl_lite.nn.DecoderLM.decode_step`) per token of every stream; when
the model's window (``max_position_embeddings``) is full, the cache is emptied and refilled
with the last ``keep`` inputs in one forward pass (same shapes on both sides), and decoding
goes on. No side ever scores a whole window at once while the other decodes step by step.
The matrix products sum in an order that does not depend on the device's compute-unit count
(:data:`netcl_lite.ops.matmul.SPLIT_UNITS`), so a file compressed with one PoCL thread
decompresses with two.

A blob starts with a header: magic, format version, mode (stored, model, mixed), the
original's length and a truncated SHA-256 of it, and, for the coded modes, the token count,
the stream layout, fingerprints of the model's weights, the tokenizer, the n-gram primer
and the arithmetic (compiler target, vector lanes, OpenCL platform, kernel sources, NumPy
and constriction versions), the payload's length and a CRC-32 of the header. Input that
the model codes no smaller is stored as is, so a blob is never more than
:data:`STORED_HEADER_BYTES` over its input. A truncated, corrupted or foreign blob raises
``ValueError`` saying which; decoding is bounded by the header's token count and ends by
checking the length and checksum of what it decoded.

    >>> import netcl_lite as nl
    >>> from netcl_lite.compression import compress, decompress
    >>> from netcl_lite.nn import DecoderLM, LMConfig
    >>> from netcl_lite.text import BPETokenizer
    >>> tok = BPETokenizer()
    >>> model = DecoderLM(LMConfig(vocab_size=256, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
    ...                            num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16))
    >>> blob = compress(b"any bytes \\xff\\x00 <|endoftext|>\\r\\n", model, tok, mix=False)
    >>> decompress(blob, model, tok)
    b'any bytes \\xff\\x00 <|endoftext|>\\r\\n'
"""

from __future__ import annotations

import hashlib
import json
import numbers
import re
import struct
import zlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .nn import DecoderLM, KVCache
from .text import BPETokenizer

MAGIC = b"NCLZ"
FORMAT_VERSION = 1
STORED, MODEL, MIXED = 0, 1, 2
MODES = {STORED: "stored", MODEL: "model", MIXED: "mixed"}

#: streams coded side by side, at most: every decoding step serves one token of each
STREAMS = 64
#: tokens per stream, at least (a shorter input gets fewer streams): a stream's first
#: tokens are predicted from little context, so streams are kept long
MIN_SEGMENT = 512
#: positions the window keeps when it is refilled (at most half the model's window)
KEEP = 32

_COMMON = struct.Struct("<4sBBQ8s")          # magic, version, mode, length, SHA-256[:8] of the original
_CODED = struct.Struct("<QHH8s8s8s8sQ")      # tokens, streams, keep, fingerprints of the weights, the
                                             # tokenizer, the primer and the arithmetic, payload bytes
_CRC = struct.Struct("<I")
#: a stored blob's overhead over its input, in bytes
STORED_HEADER_BYTES = _COMMON.size + _CRC.size


# -- fingerprints ------------------------------------------------------------------------------

def model_fingerprint(model: DecoderLM) -> bytes:
    """8 bytes of SHA-256 over the model's config and every weight (transformers' names, sorted)."""
    h = hashlib.sha256(json.dumps(model.config.__dict__, sort_keys=True, default=str).encode())
    for name, value in sorted(model.state_dict().items()):
        h.update(name.encode() + b"\0" + np.ascontiguousarray(value, np.float32).tobytes())
    return h.digest()[:8]


def tokenizer_fingerprint(tokenizer: BPETokenizer) -> bytes:
    """8 bytes of SHA-256 over the tokenizer's pre-split pattern, its tokens' bytes and its special tokens."""
    h = hashlib.sha256(str(tokenizer.pattern).encode() + b"\0")
    for i, piece in sorted(tokenizer.vocab.items()):
        h.update(struct.pack("<IH", i, len(piece)) + piece)
    h.update(json.dumps(sorted(tokenizer.special_tokens.items())).encode())
    return h.digest()[:8]


def arithmetic(model: DecoderLM) -> str:
    """What decides the bits of the model's probabilities besides the weights: the OpenCL device
    kind, PoCL's compiler target and the kernels' vector lanes, the platform's version, a hash of
    the kernel sources, and the NumPy and constriction versions (the host's softmax and the
    coder's quantization)."""
    import constriction
    import pyopencl as cl

    from .core import compiler_target
    from .core.kernels import kernel_dir, vector_lanes

    device = model.queue.device
    kind = "cpu" if device.type & cl.device_type.CPU else "gpu" if device.type & cl.device_type.GPU else "other"
    sources = hashlib.sha256()
    for path in sorted(kernel_dir().glob("*.[ch]*")):
        sources.update(path.name.encode() + path.read_bytes())
    return (f"{kind} {compiler_target.target_of(device) or device.name} {vector_lanes(device)} lanes; "
            f"{device.platform.version}; kernels {sources.hexdigest()[:12]}; "
            f"numpy {np.__version__}; constriction {_version('constriction', constriction)}")


def _version(name: str, module) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return getattr(module, "__version__", "unknown")


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()[:8]


# -- bytes <-> token ids -------------------------------------------------------------------------

_ESCAPED = re.compile("([\udc80-\udcff]+)")


def _byte_ids(tokenizer: BPETokenizer) -> np.ndarray | None:
    """The id of each single byte's token (256,), or None if the vocabulary lacks one."""
    ids = np.full(256, -1, np.int64)
    for i, piece in tokenizer.vocab.items():
        if len(piece) == 1 and ids[piece[0]] < 0:
            ids[piece[0]] = i
    return None if (ids < 0).any() else ids


def tokenize(data: bytes, tokenizer: BPETokenizer) -> np.ndarray | None:
    """Token ids whose bytes are exactly ``data``: each valid UTF-8 run is encoded as ordinary
    text (special-token strings stay text), every other byte as its single-byte token. None when
    the tokenizer cannot spell ``data`` (a vocabulary without every single byte)."""
    byte_ids = _byte_ids(tokenizer)
    text = data.decode("utf-8", errors="surrogateescape")    # invalid bytes -> U+DC80..U+DCFF
    parts = []
    for i, run in enumerate(_ESCAPED.split(text)):
        if i % 2 == 0 and run:
            parts.append(np.asarray(tokenizer.encode_ordinary(run), np.int64))
        elif run:
            if byte_ids is None:
                return None
            parts.append(byte_ids[[ord(c) - 0xDC00 for c in run]])
    ids = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return ids if tokenizer.decode_bytes(ids.tolist()) == data else None


# -- the n-gram model ------------------------------------------------------------------------------

ORDERS = 8                     # longest context the n-gram counts, in tokens
DISCOUNT = (0.6, 0.7, 0.8, 0.85, 0.9, 0.9, 0.9, 0.9, 0.9)    # absolute discount per order 0..ORDERS
LOG2_BUCKETS = 12              # mixing weights per order reached and log2 of its count (capped)
MIX_RATE = 0.02                # step of the online mixing weights
MIX_INIT = 0.7                 # the model's initial share


def _extend(h: np.ndarray, tokens: np.ndarray, vocab: int) -> np.ndarray:
    """Context hashes one token longer (to the left): exact while (vocab + 1)^order < 2^64."""
    with np.errstate(over="ignore"):
        return h * np.uint64(vocab + 1) + (tokens.astype(np.uint64) + np.uint64(1))


@dataclass(frozen=True)
class _Table:
    """Counts of one order: sorted distinct context hashes, each with a run of (token, count)."""
    contexts: np.ndarray       # (U,) uint64, sorted
    starts: np.ndarray         # (U + 1,) offsets into tokens/counts
    tokens: np.ndarray         # (E,) int64
    counts: np.ndarray         # (E,) float64


def _count(ids: np.ndarray, vocab: int, orders: int) -> tuple[np.ndarray, list[_Table]]:
    """Unigram counts (vocab,) and one :class:`_Table` per order 1..orders over ``ids``."""
    unigram = np.bincount(ids, minlength=vocab).astype(np.float64)
    tables = []
    h = np.zeros(ids.size, np.uint64)
    for k in range(1, orders + 1):
        # h[i]: the hash of ids[i - k : i], the context of ids[i] (positions i >= k)
        h = _extend(h[1:], ids[:ids.size - k], vocab)
        nxt = ids[k:]
        order = np.lexsort((nxt, h))
        hs, ns = h[order], nxt[order]
        new_pair = np.ones(hs.size, bool)
        new_pair[1:] = (hs[1:] != hs[:-1]) | (ns[1:] != ns[:-1])
        at = np.flatnonzero(new_pair)
        counts = np.diff(np.append(at, hs.size)).astype(np.float64)
        pair_h, pair_t = hs[at], ns[at]
        new_ctx = np.ones(pair_h.size, bool)
        new_ctx[1:] = pair_h[1:] != pair_h[:-1]
        starts = np.append(np.flatnonzero(new_ctx), pair_h.size)
        tables.append(_Table(pair_h[new_ctx], starts, pair_t.astype(np.int64), counts))
    return unigram, tables


class NGram:
    """An adaptive token n-gram: counts of contexts up to ``orders`` tokens, from ``primer`` ids
    and then from every token coded, with interpolated absolute discounting.

    P_k(w) = (max(c_k(w) − D_k, 0) + D_k · u_k · P_{k−1}(w)) / n_k, where c_k counts w after the
    last k tokens, n_k = Σ c_k and u_k the distinct tokens seen there; an unseen context falls
    back to P_{k−1}; P_0 discounts the unigram counts against 1/vocab. :meth:`predict` gives
    every stream's distribution and the order its context reached; :meth:`update` adds the coded
    tokens. Counts only grow by whole numbers, so both sides of a coder hold the same state
    after the same tokens, whatever the order of the streams.
    """

    def __init__(self, primer: np.ndarray, vocab: int, streams: int, orders: int = ORDERS):
        self.vocab, self.orders = vocab, orders
        self.unigram, self.tables = _primed_counts(primer, vocab, orders)
        self.unigram = self.unigram.copy()
        self.added: list[dict] = [{} for _ in range(orders)]    # per order: {context hash: {token: count}}
        self.history = np.full((streams, orders), -1, np.int64)  # last tokens, newest last; -1: none yet
        self.seen = np.zeros(streams, np.int64)

    def _contexts(self) -> list[np.ndarray]:
        """Per order k, each stream's context hash (uint64; meaningless where seen < k)."""
        out, h = [], np.zeros(self.history.shape[0], np.uint64)
        for k in range(1, self.orders + 1):
            h = _extend(h, np.maximum(self.history[:, -k], 0), self.vocab)
            out.append(h)
        return out

    def predict(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(probabilities (B, vocab) float64, order reached (B,), count there (B,))."""
        b, v = self.history.shape[0], self.vocab
        n0 = self.unigram.sum()
        d0 = DISCOUNT[0]
        u0 = np.count_nonzero(self.unigram)
        p0 = (np.maximum(self.unigram - d0, 0) + d0 * u0 / v) / n0 if n0 else np.full(v, 1.0 / v)
        p = np.broadcast_to(p0, (b, v)).copy()
        reached = np.zeros(b, np.int64)
        total = np.full(b, n0)
        for k, (h, table, added) in enumerate(zip(self._contexts(), self.tables, self.added), start=1):
            live = np.flatnonzero(self.seen >= k)
            if not live.size:
                break
            counts = np.zeros((live.size, v))
            hl = h[live]
            at = np.minimum(np.searchsorted(table.contexts, hl), max(table.contexts.size - 1, 0))
            found = table.contexts[at] == hl if table.contexts.size else np.zeros(live.size, bool)
            lo = np.where(found, table.starts[at], 0)
            hi = np.where(found, table.starts[np.minimum(at + 1, table.starts.size - 1)], 0)
            lengths = hi - lo
            if lengths.sum():
                rows = np.repeat(np.arange(live.size), lengths)
                idx = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths) + np.repeat(lo, lengths)
                counts[rows, table.tokens[idx]] = table.counts[idx]
            for r, key in enumerate(hl.tolist()):
                extra = added.get(key)
                if extra:
                    counts[r, list(extra)] += list(extra.values())
            n = counts.sum(axis=1)
            ok = n > 0
            if not ok.any():
                break
            rows = live[ok]
            c, n = counts[ok], n[ok]
            d = DISCOUNT[k]
            u = np.count_nonzero(c, axis=1)
            p[rows] = (np.maximum(c - d, 0) + (d * u)[:, None] * p[rows]) / n[:, None]
            reached[rows], total[rows] = k, n
        return p, reached, total

    def update(self, tokens: np.ndarray, active: np.ndarray) -> None:
        """Count ``tokens`` (B,) after each stream's context, for the ``active`` streams (bool (B,))."""
        rows = np.flatnonzero(active)
        np.add.at(self.unigram, tokens[rows], 1.0)
        for k, h in enumerate(self._contexts(), start=1):
            added = self.added[k - 1]
            for r in rows[self.seen[rows] >= k].tolist():
                succ = added.setdefault(int(h[r]), {})
                t = int(tokens[r])
                succ[t] = succ.get(t, 0) + 1
        self.history[rows] = np.concatenate([self.history[rows, 1:], tokens[rows, None]], axis=1)
        self.seen[rows] += 1


_COUNTED: dict[tuple, tuple] = {}


def _primed_counts(primer: np.ndarray, vocab: int, orders: int):
    """:func:`_count` of ``primer``, kept for the last two primers (counting takes a second or two)."""
    key = (_digest(primer.astype(np.int32).tobytes()), primer.size, vocab, orders)
    if key not in _COUNTED:
        while len(_COUNTED) >= 2:
            _COUNTED.pop(next(iter(_COUNTED)))
        _COUNTED[key] = _count(primer, vocab, orders)
    return _COUNTED[key]


class _Mixer:
    """p = w · p_model + (1 − w) · p_ngram, one weight per (order reached, ⌊log2 count⌋), each
    moved online along the gradient of log p of the coded token."""

    def __init__(self, orders: int):
        self.w = np.full((orders + 1, LOG2_BUCKETS), MIX_INIT)

    def mix(self, p_model, p_ngram, reached, total):
        self.bucket = (reached, np.minimum(np.floor(np.log2(np.maximum(total, 1))).astype(np.int64),
                                           LOG2_BUCKETS - 1))
        w = self.w[self.bucket][:, None]
        self.parts = (p_model, p_ngram)
        return w * p_model + (1 - w) * p_ngram

    def update(self, tokens, p_mix, active):
        rows = np.flatnonzero(active)
        pm, pn = (p[rows, tokens[rows]] for p in self.parts)
        grad = (pm - pn) / p_mix[rows, tokens[rows]]
        step = np.zeros_like(self.w)
        np.add.at(step, (self.bucket[0][rows], self.bucket[1][rows]), grad)
        self.w = np.clip(self.w + MIX_RATE * step, 0.02, 0.98)


# -- the shared computation ------------------------------------------------------------------------

def _softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    x -= x.max(axis=1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=1, keepdims=True)
    return x


def segments(n_tokens: int, streams: int) -> np.ndarray:
    """Token counts of the ``streams`` contiguous segments (the first ``n_tokens % streams`` one longer)."""
    return np.full(streams, n_tokens // streams, np.int64) + (np.arange(streams) < n_tokens % streams)


class _Predictor:
    """The probabilities both sides compute, one step at a time: :meth:`probabilities` for the
    step's token of every stream, then :meth:`advance` with those tokens."""

    def __init__(self, model: DecoderLM, lengths: np.ndarray, keep: int, start: int, ngram: NGram | None):
        c = model.config
        self.model, self.lengths, self.keep, self.ngram = model, lengths, keep, ngram
        self.streams = lengths.size
        self.cache = KVCache(model.queue, c.num_hidden_layers, self.streams, c.num_key_value_heads, c.head_dim,
                             c.max_position_embeddings)
        self.window = np.full((self.streams, c.max_position_embeddings), start, np.int64)   # inputs in the cache
        self.next_input = np.full(self.streams, start, np.int64)
        self.mixer = _Mixer(ngram.orders) if ngram is not None else None
        self.step = 0

    def probabilities(self) -> np.ndarray:
        """(active streams, vocab) float64 for this step (the active streams are a prefix)."""
        cache, full = self.cache, self.model.config.max_position_embeddings
        if cache.length(0) == full:                # refill: the last `keep` inputs, one forward pass
            cache.reset()
            self.model.hidden(self.window[:, full - self.keep:], cache).numpy()
            self.window[:, :self.keep] = self.window[:, full - self.keep:]
        at = cache.length(0)
        self.window[:, at] = self.next_input
        p = _softmax(self.model.decode_step(self.next_input, cache))
        if self.mixer is not None:
            q, reached, total = self.ngram.predict()
            p = self.mixer.mix(p[:, :q.shape[1]], q, reached, total)
        self.p = p
        self.active = self.lengths > self.step
        return p[:int(self.active.sum())]

    def advance(self, tokens: np.ndarray) -> None:
        """Feed the step's tokens (one per active stream); finished streams repeat their input."""
        full = self.next_input.copy()
        full[:tokens.size] = tokens
        if self.mixer is not None:
            self.mixer.update(full, self.p, self.active)
            self.ngram.update(full, self.active)
        self.next_input = full
        self.step += 1


# -- the blob -----------------------------------------------------------------------------------------

def _check_model(model, tokenizer) -> None:
    if not isinstance(model, DecoderLM):
        raise TypeError(f"model must be a netcl_lite.nn.DecoderLM, got {type(model).__name__}")
    if not isinstance(tokenizer, BPETokenizer):
        raise TypeError(f"tokenizer must be a netcl_lite.text.BPETokenizer, got {type(tokenizer).__name__}")
    if max(tokenizer.vocab) >= model.config.vocab_size:
        raise ValueError(f"tokenizer has ids up to {max(tokenizer.vocab)}, beyond the model's "
                         f"vocab_size={model.config.vocab_size}: pass the tokenizer the model was trained with")
    if model.config.max_position_embeddings < 2:
        raise ValueError("model's max_position_embeddings must be at least 2 to code with a window")


def _check_primer(primer, tokenizer: BPETokenizer) -> np.ndarray:
    if primer is None:
        return default_primer(tokenizer)
    arr = np.asarray(primer)
    if arr.ndim != 1 or arr.dtype.kind not in "iu" or (arr.size and (arr.min() < 0 or arr.max() > max(tokenizer.vocab))):
        raise ValueError("primer must be a 1-D array of token ids of the tokenizer (or None for Chapter 9's "
                         "training text)")
    return arr.astype(np.int64)


@lru_cache(maxsize=2)
def _training_ids(fingerprint: bytes, tokenizer: BPETokenizer) -> np.ndarray:
    from . import capstone

    return np.asarray(tokenizer.encode_ordinary(capstone.data().train_text), np.int64)


def default_primer(tokenizer: BPETokenizer) -> np.ndarray:
    """The n-gram's starting counts when none are given: Chapter 9's training text
    (:func:`netcl_lite.capstone.data`) in ``tokenizer``'s ids, encoded once per process."""
    return _training_ids(tokenizer_fingerprint(tokenizer), tokenizer)


def _keep(model: DecoderLM) -> int:
    return max(1, min(KEEP, model.config.max_position_embeddings // 2))


def _progress(total: int, enabled: bool | None, what: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="tok", desc=what, disable=not enabled if enabled is not None else total < 20_000,
                leave=False)


def compress(data: bytes, model: DecoderLM, tokenizer: BPETokenizer, *, mix: bool = True, primer=None,
             progress: bool | None = False) -> bytes:
    """``data`` coded with ``model``'s predictions (mixed with an adaptive n-gram when ``mix``).

    ``primer``: token ids the n-gram counts start from (None: Chapter 9's training text,
    :func:`default_primer`); the decoder needs the same ones. ``progress``: a progress bar
    (None: only for inputs over 20,000 tokens). Returns the blob :func:`decompress` reads: the
    coded form, or ``data`` stored as is when coding does not make it smaller.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes (or bytearray, memoryview), got {type(data).__name__}; "
                        "encode text first (text.encode('utf-8'))")
    _check_model(model, tokenizer)
    if not isinstance(mix, bool):
        raise TypeError(f"mix must be a bool, got {type(mix).__name__}")
    data = bytes(data)
    stored = _header(STORED, data) + data
    ids = tokenize(data, tokenizer) if data else None
    if ids is None or not ids.size:
        return stored
    primer_ids = _check_primer(primer, tokenizer) if mix else np.zeros(0, np.int64)
    keep = _keep(model)
    streams = int(max(1, min(STREAMS, ids.size // MIN_SEGMENT)))
    lengths = segments(ids.size, streams)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    import constriction

    family = constriction.stream.model.Categorical(perfect=False)
    encoder = constriction.stream.queue.RangeEncoder()
    predictor = _predictor(model, tokenizer, lengths, keep, mix, primer_ids)
    with _progress(ids.size, progress, "compress") as bar:
        for step in range(int(lengths[0])):
            p = predictor.probabilities()
            tokens = ids[offsets[:p.shape[0]] + step]
            encoder.encode(tokens.astype(np.int32), family, p)
            predictor.advance(tokens)
            bar.update(p.shape[0])
    payload = encoder.get_compressed().astype("<u4").tobytes()
    coded = _header(MIXED if mix else MODEL, data, ids.size, streams, keep, model, tokenizer, primer_ids,
                    len(payload)) + payload
    return coded if len(coded) < len(stored) else stored


def _predictor(model, tokenizer, lengths, keep, mix, primer_ids) -> _Predictor:
    start = int(_byte_ids(tokenizer)[ord("\n")]) if _byte_ids(tokenizer) is not None else 0
    ngram = NGram(primer_ids, model.config.vocab_size, lengths.size) if mix else None
    return _Predictor(model, lengths, keep, start, ngram)


def _header(mode, data, n_tokens=0, streams=0, keep=0, model=None, tokenizer=None, primer_ids=None,
            payload_bytes=0) -> bytes:
    head = _COMMON.pack(MAGIC, FORMAT_VERSION, mode, len(data), _digest(data))
    if mode != STORED:
        primer_fp = _digest(primer_ids.astype(np.int32).tobytes()) if mode == MIXED else bytes(8)
        head += _CODED.pack(n_tokens, streams, keep, model_fingerprint(model), tokenizer_fingerprint(tokenizer),
                            primer_fp, _digest(arithmetic(model).encode()), payload_bytes)
    return head + _CRC.pack(zlib.crc32(head))


def decompress(blob: bytes, model: DecoderLM, tokenizer: BPETokenizer, *, primer=None,
               progress: bool | None = False) -> bytes:
    """The bytes :func:`compress` coded into ``blob``, with the same ``model``, ``tokenizer`` and
    ``primer``. Raises ``ValueError`` naming the problem when the blob is truncated, corrupted,
    from another format, model, tokenizer, primer or arithmetic."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"blob must be bytes (what compress returned), got {type(blob).__name__}")
    _check_model(model, tokenizer)
    blob = bytes(blob)
    if len(blob) < _COMMON.size + _CRC.size:
        raise ValueError(f"blob is truncated: {len(blob)} bytes, shorter than any header "
                         f"({_COMMON.size + _CRC.size} bytes)")
    magic, version, mode, length, checksum = _COMMON.unpack_from(blob)
    if magic != MAGIC:
        raise ValueError(f"blob is not netcl_lite.compression output (it starts {blob[:4]!r}, not {MAGIC!r})")
    if version != FORMAT_VERSION:
        raise ValueError(f"blob has format version {version}; this library reads version {FORMAT_VERSION}")
    if mode not in MODES:
        raise ValueError(f"blob is corrupted: unknown mode {mode} in its header")
    end = _COMMON.size
    if mode != STORED:
        if len(blob) < end + _CODED.size:
            raise ValueError("blob is truncated inside its header")
        fields = _CODED.unpack_from(blob, end)
        end += _CODED.size
    if len(blob) < end + _CRC.size:
        raise ValueError("blob is truncated inside its header")
    if _CRC.unpack_from(blob, end)[0] != zlib.crc32(blob[:end]):
        raise ValueError("blob is corrupted: its header's CRC-32 does not match")
    body = blob[end + _CRC.size:]
    if mode == STORED:
        if len(body) != length:
            raise ValueError(f"blob is {'truncated' if len(body) < length else 'corrupted'}: the stored data "
                             f"holds {len(body)} bytes, the header says {length}")
        out = body
    else:
        out = _decode(body, mode, length, fields, model, tokenizer, primer, progress)
    if _digest(out) != checksum:
        raise ValueError("blob is corrupted: the decoded bytes do not match the original's checksum "
                         "(or the model computes other probabilities than the compressing side's)")
    return out


def _decode(body, mode, length, fields, model, tokenizer, primer, progress) -> bytes:
    n_tokens, streams, keep, weights_fp, tok_fp, primer_fp, arith_fp, payload_bytes = fields
    if len(body) != payload_bytes:
        raise ValueError(f"blob is {'truncated' if len(body) < payload_bytes else 'corrupted'}: its payload "
                         f"holds {len(body)} bytes, the header says {payload_bytes}")
    if not 0 < n_tokens <= length or not 0 < streams <= min(n_tokens, 65535) or payload_bytes % 4:
        raise ValueError("blob is corrupted: its header's token count, streams or payload size are impossible")
    if weights_fp != model_fingerprint(model):
        raise ValueError("blob was compressed with another model: its weights' fingerprint "
                         f"{weights_fp.hex()} differs from this model's {model_fingerprint(model).hex()}")
    if tok_fp != tokenizer_fingerprint(tokenizer):
        raise ValueError("blob was compressed with another tokenizer: fingerprint "
                         f"{tok_fp.hex()}, this tokenizer's {tokenizer_fingerprint(tokenizer).hex()}")
    here = arithmetic(model)
    if arith_fp != _digest(here.encode()):
        raise ValueError(f"blob was compressed where the arithmetic differs (fingerprint {arith_fp.hex()}); "
                         f"here it is {_digest(here.encode()).hex()} ({here}), which computes other probabilities")
    if keep != _keep(model):
        raise ValueError(f"blob is corrupted: its window keeps {keep} positions, this model keeps {_keep(model)}")
    primer_ids = np.zeros(0, np.int64)
    if mode == MIXED:
        primer_ids = _check_primer(primer, tokenizer)
        if primer_fp != _digest(primer_ids.astype(np.int32).tobytes()):
            raise ValueError("blob was compressed with other n-gram primer ids (fingerprint "
                             f"{primer_fp.hex()}); pass the primer the compressing side used")
    import constriction

    family = constriction.stream.model.Categorical(perfect=False)
    decoder = constriction.stream.queue.RangeDecoder(np.frombuffer(body, "<u4").astype(np.uint32))
    lengths = segments(n_tokens, streams)
    out = np.zeros(n_tokens, np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    predictor = _predictor(model, tokenizer, lengths, keep, mode == MIXED, primer_ids)
    vocab = max(tokenizer.vocab) + 1
    with _progress(n_tokens, progress, "decompress") as bar:
        for step in range(int(lengths[0])):
            p = predictor.probabilities()
            tokens = np.asarray(decoder.decode(family, p), np.int64)
            if (tokens >= vocab).any() or any(i not in tokenizer.vocab for i in set(tokens.tolist())):
                raise ValueError("blob is corrupted: it decodes to a token id the tokenizer does not have")
            out[offsets[:tokens.size] + step] = tokens
            predictor.advance(tokens)
            bar.update(tokens.size)
    data = tokenizer.decode_bytes(out.tolist())
    if len(data) != length:
        raise ValueError(f"blob is corrupted: it decodes to {len(data)} bytes, the header says {length}")
    return data
