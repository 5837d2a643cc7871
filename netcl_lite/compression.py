"""A language model as a lossless compressor: any bytes in, a file out, the same bytes back.

:func:`compress` turns the bytes into token ids (byte-level BPE; bytes that are not UTF-8
become single-byte tokens), predicts each token with the model, optionally mixed with counts
of the training and the coded text (:class:`netcl_lite.context_mixing.ContextMixer`) and
optionally learning from the coded text as it goes (dynamic evaluation,
:class:`netcl_lite.adaptation.Adapter`), and range-codes the ids with those probabilities
(``constriction``'s range coder, 24-bit probabilities). :func:`decompress` runs the identical sequence of
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

A blob starts with a header: magic, format version, mode (stored, the model alone, mixed,
either of those two adapting as it codes), the original's length (a varint) and a 4-byte
SHA-256 of it, and, for the coded modes, the token count (a varint), one 6-byte fingerprint of
everything decoding depends on (the model's weights, the tokenizer, the primer ids, the
arithmetic: compiler target, vector lanes, OpenCL platform, the sources of the kernels and of the
Python that runs and composes them (:func:`forward_sources`), NumPy and constriction versions; and
the coder: the host models' sources and settings), a 1-byte tag per
part of it (which part differs, when the fingerprint does; the primer's is 0 when it was Chapter 9's
training text, the default, and never 0 for a primer given), and a CRC-32 of the header and the
payload. The stream layout and the window's refills follow from the token count and the model,
and the payload is the rest of the blob: at most 31 bytes of header, the size for the largest
input compress accepts (``MAX_INPUT_BYTES``).
Input that the model codes no smaller (or whose code runs :data:`GIVE_UP_BITS` over 95% of
storing it, part way) is stored as is, so a blob is never more than :data:`STORED_HEADER_BYTES` over
its input. A truncated, corrupted or foreign blob raises
``ValueError`` saying which. Every header field is checked before it sizes or loops anything:
the original's length against :data:`MAX_INPUT_BYTES` (the longest input :func:`compress`
takes, so that a call's memory stays bounded), the token count against that length and
against the payload (at least one 32-bit word per :data:`TOKENS_PER_WORD` tokens, which
:func:`compress` pads to); the CRC before any decoding step; decoding ends by checking
the length and checksum of what it decoded. Threads may share a model: each call keeps its own
cache, mixer and coder, and a lock per OpenCL context (:func:`device_lock`) takes the device
one step at a time.

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

import contextlib
import hashlib
import json
import re
import struct
import threading
import zlib
from collections.abc import Iterator, Mapping, Set
from functools import lru_cache

import numpy as np

from . import checks
from .adaptation import AdaptConfig, Adapter
from .checks import flag, nonnegative_int, positive_int
from .context_mixing import ContextMixer, check_vocab
from .core.stream import NonFiniteError
from .nn import DecoderLM, KVCache
from .text import BPETokenizer
from .text.patterns import split_budget

MAGIC = b"NCLZ"
#: 3: the header's counts are varints, one fingerprint with a tag per part, one CRC-32 of header
#: and payload, the stream layout and the window's refills derived; the mixer of
#: :mod:`netcl_lite.context_mixing`; dynamic evaluation as a mode. Earlier versions are refused
#: 4: the primer's tag says whether the primer was the default one
FORMAT_VERSION = 4
STORED, MODEL, MIXED = 0, 1, 2
#: added to MODEL or MIXED: the model learned from the coded text as it went (dynamic evaluation)
ADAPTING = 4
MODES = {STORED: "stored", MODEL: "model", MIXED: "mixed", MODEL | ADAPTING: "model, adapting",
         MIXED | ADAPTING: "mixed, adapting"}

#: streams coded side by side, at most: every decoding step serves one token of each, and
#: each stream's first tokens are predicted from little context (benchmarks/results/capstone.md
#: compares 16, 32 and 64 on Chapter 9's validation split)
STREAMS = 32
#: tokens per stream, at least (a shorter input gets fewer streams): a stream's first
#: tokens are predicted from little context, so streams are kept long. With :data:`STREAMS`
#: it fixes the layout a token count gets, which the decoder checks
MIN_SEGMENT = 512
#: positions the window keeps when it is refilled (at most half the model's window)
KEEP = 32
#: compression stops and stores the input once the coded bits exceed GIVE_UP_FRACTION of 8 per
#: byte coded so far by this many (checked every 32 steps), so that random bytes do not run the
#: whole model first: the mixer learns to code them at barely over 8 bits a byte, so waiting for
#: more than 8 would take most of the input
GIVE_UP_BITS = 8 * 1024
#: an input the coder saves less than 5% of is stored instead (at most 5% more than coded)
GIVE_UP_FRACTION = 0.95
#: the longest input :func:`compress` codes, in bytes, and the longest original a blob may
#: claim. The adaptive n-gram keeps every context it counts, so a call's memory grows with its
#: input (benchmarks/results/compress_memory.json measures it); at this length a call stays
#: within 1 GiB beyond the model and the primer's counts. Longer input is refused: split it.
MAX_INPUT_BYTES = 1 << 20
#: tokens one 32-bit word of payload codes, at most: :func:`compress` pads the range coder's
#: words with zero words up to ⌈tokens / TOKENS_PER_WORD⌉ (words after the coder's own change
#: nothing it decodes), so a header cannot claim more decoding work than the blob's length
#: pays for. Half a bit a token; text costs several, so only near-constant input is padded.
TOKENS_PER_WORD = 64
#: primer ids the n-gram counts, at most: its tables keep about 0.3 KiB per id
MAX_PRIMER_TOKENS = 1 << 21

_CRC = struct.Struct("<I")
_CHECKSUM_BYTES = 4            # of the original's SHA-256
_FINGERPRINT_BYTES = 6         # of the SHA-256 over the parts' digests
#: the parts the fingerprint covers, each with a 1-byte tag in the header
PARTS = ("weights", "tokenizer", "primer", "arithmetic", "coder")
#: the primer's tag when it is Chapter 9's training text (:func:`default_primer`); a given primer's never is
DEFAULT_PRIMER_TAG = 0
_MAX_VARINT = 10               # bytes: a 64-bit count
#: a stored blob's overhead over its input, in bytes, at most (a 3-byte length)
STORED_HEADER_BYTES = len(MAGIC) + 2 + 3 + _CHECKSUM_BYTES + _CRC.size
#: the longest blob :func:`compress` writes (a coded blob is shorter than the stored one)
MAX_BLOB_BYTES = MAX_INPUT_BYTES + STORED_HEADER_BYTES
#: the smallest file-size limit (``ulimit -f``) the command line works under: OpenCL's compiler
#: writes each program it builds (up to about 1 MiB) into PoCL's kernel cache, and a write the limit
#: cuts short aborts the whole process inside the compiler, where no error can be caught
MIN_FILE_SIZE_LIMIT = 16 << 20
#: token ids spelled per call of the tokenizer's decode (a bounded list at a time)
_SPELL_CHUNK = 1 << 16


# -- one thread at a time on a device ----------------------------------------------------------------

_LOCKS: dict[int, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


def _model_only(model) -> None:
    """TypeError naming ``model`` unless it is a :class:`~netcl_lite.nn.DecoderLM`."""
    if not isinstance(model, DecoderLM):
        raise TypeError(f"model must be a netcl_lite.nn.DecoderLM, got {type(model).__name__}")


def device_lock(model: DecoderLM) -> threading.RLock:
    """The lock held around every use of ``model``'s device here: one per OpenCL context.

    A context's command queue keeps one record of the ops in flight
    (:class:`netcl_lite.core.stream.Stream`) and its kernels keep their arguments on shared
    kernel objects (:func:`netcl_lite.core.kernels.get_kernel`), and a model's decoding step
    advances one activation buffer per batch size, so two threads that step at once overwrite
    each other's activations. Each thread of :func:`compress` and :func:`decompress` holds
    this lock for a step's device work (a refill and a decoding step, ending with the logits
    read back) and keeps its own cache, n-gram, mixer and coder, whose host work runs while
    another thread holds the device."""
    from .core import forking

    _model_only(model)
    forking.check()        # in a child forked while a thread held it, the lock would never be free
    key = model.queue.context.int_ptr
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.RLock())


# -- fingerprints ------------------------------------------------------------------------------

#: config fields no probability is computed from: the spread the weights were first drawn with (a model
#: that differs only there, with the same weights, codes the same bits)
_NOT_COMPUTED = frozenset({"initializer_range"})


def model_fingerprint(model: DecoderLM) -> bytes:
    """8 bytes of SHA-256 over the model's config (but :data:`_NOT_COMPUTED`) and every weight
    (transformers' names, sorted)."""
    _model_only(model)
    # numbers equal in value fingerprint alike: rope_theta=10000 (a config.json's int) is 10000.0
    config = {k: (int(v) if isinstance(v, float) and v.is_integer() else v) for k, v in model.config.__dict__.items()
              if k not in _NOT_COMPUTED}
    h = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
    with device_lock(model):
        weights = model.state_dict()
    for name, value in sorted(weights.items()):
        h.update(name.encode() + b"\0" + np.ascontiguousarray(value, np.float32).tobytes())
    return h.digest()[:8]


def tokenizer_fingerprint(tokenizer: BPETokenizer) -> bytes:
    """8 bytes of SHA-256 over the tokenizer's pre-split pattern, its tokens' bytes and its special tokens."""
    _check_tokenizer(tokenizer)
    h = hashlib.sha256(str(tokenizer.pattern).encode() + b"\0")
    for i, piece in sorted(tokenizer.vocab.items()):
        # a length past 16 bits (a long special token's) as 0xFFFF and 64 bits: shorter ones keep
        # the digest they always had
        size = struct.pack("<H", len(piece)) if len(piece) < 0xFFFF else struct.pack("<HQ", 0xFFFF, len(piece))
        h.update(struct.pack("<I", i) + size + piece)
    h.update(json.dumps(sorted(tokenizer.special_tokens.items())).encode())
    return h.digest()[:8]


#: the library's Python that computes the model's probabilities from its weights, as folders and
#: files under ``netcl_lite/``: the runtime that builds and runs the kernels (``core/``: their build
#: options, vector lanes, the order a matrix product sums in), the ops that launch them
#: (``ops/``), the model that composes them (``nn/``, less ``checkpoint.py``, which only reads and
#: writes the weights that the weights part hashes) and the autograd tensors it runs on. The
#: sources of the host models a mode mixes in or adapts with are the coder's (:func:`coder`).
FORWARD_SOURCES = ("core", "ops", "nn", "autograd.py")
#: files of :data:`FORWARD_SOURCES` that decide no probability
_NOT_FORWARD = frozenset({"nn/checkpoint.py"})
#: what this module itself computes probabilities with (hashed by their source): the host's softmax
#: and the predictor both sides step through
_FORWARD_HERE = ("_softmax", "_Predictor", "make_predictor")


@lru_cache(maxsize=1)
def forward_sources() -> str:
    """A SHA-256 (hex) of what computes a coded blob's probabilities besides the weights and the
    device: the kernel sources and headers, :data:`FORWARD_SOURCES` (every ``.py`` file under them
    but :data:`_NOT_FORWARD`) and this module's softmax and predictor, each file's name and bytes.
    Any edit to them, comments too, gives a new digest: a blob is read only by the sources that
    wrote it. Read once per process (the sources of a running process do not change)."""
    import ast
    from pathlib import Path

    from .core.kernels import kernel_dir

    here = Path(__file__).resolve().parent
    files = [(f"kernels/{p.name}", p) for p in sorted(kernel_dir().glob("*.[ch]*"))]
    for name in FORWARD_SOURCES:
        found = sorted((here / name).rglob("*.py")) if (here / name).is_dir() else [here / name]
        files += [(p.relative_to(here).as_posix(), p) for p in found]
    h = hashlib.sha256()
    for name, path in files:
        if name not in _NOT_FORWARD:
            data = path.read_bytes()
            h.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    text = Path(__file__).read_text(encoding="utf-8")          # this module's definitions as written
    defined = {node.name: node for node in ast.parse(text).body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    for name in _FORWARD_HERE:
        data = ast.get_source_segment(text, defined[name]).encode()
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def arithmetic(model: DecoderLM) -> str:
    """What decides the bits of the model's probabilities besides the weights: the OpenCL device
    kind, PoCL's compiler target and the kernels' vector lanes, the platform's version, a hash of
    the sources that compute them (:func:`forward_sources`: the kernels and the Python that runs
    and composes them), and the NumPy and constriction versions (the host's softmax and the
    coder's quantization)."""
    _model_only(model)
    import constriction
    import pyopencl as cl

    from .core import compiler_target
    from .core.kernels import vector_lanes

    device = model.queue.device
    kind = "cpu" if device.type & cl.device_type.CPU else "gpu" if device.type & cl.device_type.GPU else "other"
    return (f"{kind} {compiler_target.target_of(device) or device.name} {vector_lanes(device)} lanes; "
            f"{device.platform.version}; sources {forward_sources()[:12]}; "
            f"numpy {np.__version__}; constriction {_version('constriction', constriction)}{_pocl_code_settings()}")


def _pocl_code_settings() -> str:
    """The PoCL settings in the environment that can change the code its compiler makes
    (``POCL_EXTRA_BUILD_FLAGS=-cl-fast-relaxed-math`` changes the probabilities' bits), as a part of
    :func:`arithmetic`, or "" when none is set. Left out: those that change no computed value
    (:data:`~netcl_lite.fingerprint.POCL_NOT_A_CHOICE`) and the worker counts, since the kernels give
    the same bits on any number of cores."""
    import os

    from .core.device import WORKER_COUNT_VARS
    from .fingerprint import POCL_NOT_A_CHOICE

    given = sorted(f"{k}={v}" for k, v in os.environ.items()
                   if k.startswith("POCL_") and k not in POCL_NOT_A_CHOICE and k not in WORKER_COUNT_VARS)
    return f"; PoCL {' '.join(given)}" if given else ""


def _version(name: str, module) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return getattr(module, "__version__", "unknown")


def coder(mode: int, adapt: AdaptConfig | None = None) -> str:
    """What decides the coded probabilities besides the model, the tokenizer, the primer and the
    arithmetic: the stream layout and the window's refills, the dynamic evaluation's settings
    when the mode adapts, and a hash of the sources of the host models the mode runs (the mixer's
    counts, match model and mixing; the adaptation), read once per process."""
    if not isinstance(mode, (int, np.integer)) or isinstance(mode, bool) or mode not in MODES or mode == STORED:
        raise ValueError(f"mode must be one of the coded modes {sorted(set(MODES) - {STORED})} (MODEL or MIXED, "
                         f"plus ADAPTING when the model learns as it codes), got {mode!r}")
    if adapt is not None and not isinstance(adapt, AdaptConfig):
        raise TypeError(f"adapt must be a netcl_lite.adaptation.AdaptConfig or None, got {type(adapt).__name__}")

    names = (("ngram.py", "match.py", "context_mixing.py") if mode & 3 == MIXED else ()) + \
        (("adaptation.py",) if mode & ADAPTING else ())
    settings = repr(adapt) if mode & ADAPTING else "no adaptation"
    return (f"streams {STREAMS} of at least {MIN_SEGMENT}; keep {KEEP}; {TOKENS_PER_WORD} tokens a word; "
            f"{settings}; sources {_host_sources(names)[:16]}")


@lru_cache(maxsize=8)
def _host_sources(names: tuple[str, ...]) -> str:
    """A SHA-256 (hex) of the modules ``names`` of ``netcl_lite`` (each name and its bytes), read once
    per process."""
    from pathlib import Path

    here, sources = Path(__file__).parent, hashlib.sha256()
    for name in names:
        sources.update(name.encode() + (here / name).read_bytes())
    return sources.hexdigest()


def _parts(mode, model, tokenizer, primer_ids, adapt, default: bool = False) -> dict[str, bytes]:
    """The SHA-256 of each of :data:`PARTS` for a coded blob of ``mode`` (``default``: the primer ids
    are :func:`default_primer`'s, see :func:`_primer_digest`)."""
    return {"weights": hashlib.sha256(model_fingerprint(model)).digest(),
            "tokenizer": hashlib.sha256(tokenizer_fingerprint(tokenizer)).digest(),
            "primer": _primer_digest(primer_ids, default),
            "arithmetic": hashlib.sha256(arithmetic(model).encode()).digest(),
            "coder": hashlib.sha256(coder(mode, adapt).encode()).digest()}


def _primer_digest(primer_ids, default: bool = False) -> bytes:
    """The SHA-256 of the primer ids, its first byte (the primer's tag) :data:`DEFAULT_PRIMER_TAG` when
    they are :func:`default_primer`'s and never that byte otherwise: a decoder without a primer
    refuses a blob of a given one from the tag alone, before Chapter 9's training text is read and
    tokenized (which takes seconds)."""
    primer = primer_ids.astype(np.int32).tobytes() if primer_ids is not None and primer_ids.size else b""
    digest = hashlib.sha256(primer).digest()
    return bytes([DEFAULT_PRIMER_TAG if default else digest[0] or 1]) + digest[1:]


def _fingerprint(parts: dict[str, bytes]) -> tuple[bytes, bytes]:
    """(the combined fingerprint, one tag byte per part) of :func:`_parts`."""
    combined = hashlib.sha256(b"".join(parts[name] for name in PARTS)).digest()[:_FINGERPRINT_BYTES]
    return combined, bytes(parts[name][0] for name in PARTS)


def _checksum(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()[:_CHECKSUM_BYTES]


def _varint(n: int) -> bytes:
    """``n`` (>= 0) in LEB128: 7 bits a byte, the low ones first, the top bit saying more follow."""
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _read_varint(blob: bytes, at: int, what: str) -> tuple[int, int]:
    """(the varint at ``blob[at:]``, the offset after it), or ValueError naming ``what``."""
    value = 0
    for i in range(_MAX_VARINT):
        if at + i >= len(blob):
            raise ValueError(f"blob is truncated inside its header (in its {what})")
        byte = blob[at + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if i and not byte:
                raise ValueError(f"blob is corrupted: its header's {what} is not written in its shortest form")
            return value, at + i + 1
    raise ValueError(f"blob is corrupted: its header's {what} runs past {_MAX_VARINT} bytes")


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
    the tokenizer cannot spell ``data`` (a vocabulary without every single byte, or a pre-split
    pattern that would leave some of its characters out of every chunk)."""
    data = _buffer(data, "data", "encode text first (text.encode('utf-8'))").tobytes()
    _check_tokenizer(tokenizer)
    byte_ids = _byte_ids(tokenizer)
    text = data.decode("utf-8", errors="surrogateescape")    # invalid bytes -> U+DC80..U+DCFF
    parts = []
    with split_budget(len(text)):   # the runs share the data's time limit for a custom pattern, not one each
        for i, run in enumerate(_ESCAPED.split(text)):
            if i % 2 == 0 and run:
                try:
                    parts.append(np.asarray(tokenizer.encode_ordinary(run), np.int64))
                except ValueError:  # its pattern skips a character of run, or runs out of time: it cannot spell it
                    return None
            elif run:
                if byte_ids is None:
                    return None
                parts.append(byte_ids[[ord(c) - 0xDC00 for c in run]])
    ids = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return ids if _spell(ids, tokenizer) == data else None


def _spell(ids: np.ndarray, tokenizer: BPETokenizer) -> bytes:
    """The bytes of ``ids``, a bounded run of them at a time (no list of every id at once)."""
    return b"".join(tokenizer.decode_bytes(ids[i:i + _SPELL_CHUNK].tolist())
                    for i in range(0, ids.size, _SPELL_CHUNK))


# -- the shared computation ------------------------------------------------------------------------

def _softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    x -= x.max(axis=1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=1, keepdims=True)
    return x


def segments(n_tokens: int, streams: int) -> np.ndarray:
    """Token counts of the ``streams`` contiguous segments (the first ``n_tokens % streams`` one longer).
    ``n_tokens`` is below 2**63 (the counts are int64) and ``streams`` at most :data:`STREAMS`, the
    format's maximum, and at most ``n_tokens`` (each stream holds at least one token)."""
    n_tokens, streams = nonnegative_int("n_tokens", n_tokens), positive_int("streams", streams)
    if n_tokens >= 1 << 63:
        raise ValueError(f"n_tokens={n_tokens:,} is past the largest count the segments' int64 lengths hold "
                         f"(2**63 - 1); pass a token count below 2**63")
    if streams > STREAMS:
        raise ValueError(f"streams={streams:,} is more than the format's maximum, STREAMS={STREAMS}; pass at most "
                         f"{STREAMS} (stream_count(n_tokens) is what compress uses)")
    if streams > max(1, n_tokens):
        raise ValueError(f"streams={streams:,} is more than the n_tokens={n_tokens:,} to cut: each stream holds "
                         f"at least one token (one stream for none); pass at most {max(1, n_tokens):,} "
                         f"(stream_count(n_tokens) is what compress uses)")
    return np.full(streams, n_tokens // streams, np.int64) + (np.arange(streams) < n_tokens % streams)


def stream_count(n_tokens: int) -> int:
    """The streams :func:`compress` codes ``n_tokens`` tokens in: one per :data:`MIN_SEGMENT`
    tokens, at least 1 and at most :data:`STREAMS`."""
    n_tokens = nonnegative_int("n_tokens", n_tokens)
    return int(max(1, min(STREAMS, n_tokens // MIN_SEGMENT)))


def _payload_words(n_tokens: int) -> int:
    """The fewest 32-bit words a payload of ``n_tokens`` tokens holds (:data:`TOKENS_PER_WORD`)."""
    return -(-n_tokens // TOKENS_PER_WORD)


class AdaptationDiverged(NonFiniteError):
    """Dynamic evaluation diverged: after ``updates`` updates (at learning rate ``lr``) the adapted
    weights, finite, overflow float32 as the model runs with them (``cause``), where the trained
    weights ran finite before the first update. The model is not at fault; coding without
    adaptation is the way out (the format fixes the learning rate)."""

    def __init__(self, updates: int, lr: float, cause: str):
        if isinstance(updates, bool) or not isinstance(updates, (int, np.integer)) or updates < 0:
            raise TypeError(f"updates must be a whole number of updates (int >= 0), got {updates!r:.80}")
        if isinstance(lr, bool) or not isinstance(lr, (int, float, np.integer, np.floating)):
            raise TypeError(f"lr must be the learning rate (a float), got {type(lr).__name__} {lr!r:.80}")
        if not isinstance(cause, str):
            raise TypeError(f"cause must be str (what overflowed), got {type(cause).__name__}")
        self.updates, self.lr, self.cause = updates, lr, cause
        super().__init__(f"dynamic evaluation diverged: after {self.counted} its adapted weights overflow "
                         f"float32 as the model runs ({cause}), where the trained weights ran finite before "
                         f"the first; code without it (adapt=False): its learning rate, AdaptConfig.lr = "
                         f"{lr:g}, is fixed by the format")

    def __reduce__(self):
        # pickled (an error a worker process sends its parent) and copied with the arguments it was
        # made from: its message alone, what an exception's default gives, is not enough to make one
        return type(self), (self.updates, self.lr, self.cause)

    @property
    def counted(self) -> str:
        """``'1 update'``, ``'3 updates'``."""
        return f"{self.updates} update{'' if self.updates == 1 else 's'}"


class _Predictor:
    """The probabilities both sides compute, one step at a time: :meth:`probabilities` for the
    step's token of every stream, then :meth:`advance` with those tokens. ``mixer``: the
    :class:`~netcl_lite.context_mixing.ContextMixer` that turns the model's distributions into
    the coded ones (None: the model's are coded); ``adapter``: the
    :class:`~netcl_lite.adaptation.Adapter` whose model (a copy) decodes and learns from the
    coded tokens (None: the model stays as trained)."""

    def __init__(self, model: DecoderLM, lengths: np.ndarray, keep: int, start: int,
                 mixer: ContextMixer | None = None, adapter: Adapter | None = None):
        c = model.config
        self.lengths, self.keep, self.mixer, self.adapter = lengths, keep, mixer, adapter
        self.model = adapter.model if adapter is not None else model
        self.streams = lengths.size
        self.lock = device_lock(model)
        _check_cache(model, self.streams)
        with self.lock:
            self.cache = KVCache(model.queue, c.num_hidden_layers, self.streams, c.num_key_value_heads, c.head_dim,
                                 c.max_position_embeddings)
        self.window = np.full((self.streams, c.max_position_embeddings), start, np.int64)   # inputs in the cache
        self.next_input = np.full(self.streams, start, np.int64)
        self.step = 0
        self.asked = None                  # the active streams of the step predicted, until advance
        self.failed = None                 # why a step failed part way (its input fed, its cache moved on)

    def _open(self) -> None:
        if self.cache is None:
            raise ValueError("this predictor is closed (its cache is freed): make a new one with make_predictor")
        if self.failed is not None:
            raise ValueError(f"this predictor's step {self.step} failed part way ({self.failed:.300}): the model "
                             "was fed the step's input and its cache moved on, so it cannot predict that step "
                             "again; make a new one with make_predictor and feed it the same tokens")

    def probabilities(self) -> np.ndarray:
        """(active streams, vocab) float64 for this step (the active streams are a prefix). An
        overflow once the adapter has changed the weights is :class:`AdaptationDiverged`. Once per step:
        a second call before :meth:`advance` is refused (it would feed the step's input to the model
        again, and every later prediction would differ from the other side's)."""
        self._open()
        if self.asked is not None:
            raise ValueError("probabilities was called for this step already: call advance(tokens) with the "
                             "step's tokens first (a second call would feed the model the step's input twice)")
        if self.step >= int(self.lengths[0]):
            raise ValueError(f"every stream has coded its tokens (lengths {self.lengths.tolist()!r:.200} "
                             f"after {self.step} steps): there is no step left to predict")
        try:
            return self._probabilities()
        except BaseException as exc:
            self.failed = f"{type(exc).__name__}: {str(exc).split(';')[0]}"
            self._failed(exc)

    def _failed(self, exc: BaseException):
        """Raise what a step that failed part way raised, named as its cause: a model whose weights run
        non-finite, or an adaptation that diverged."""
        if isinstance(exc, NonFiniteError):
            cause = str(exc).split(";")[0]
            if self.adapter is None or not self.adapter.updates:
                # the op's message names its operand and advises its caller: name the model, which is at fault
                error = NonFiniteError(f"model: running it gives non-finite values ({cause}): its weights hold a "
                                       "NaN or an infinity, or overflow float32; the model is at fault, not the "
                                       "data: check or retrain its weights")
                error.cause = cause
                raise error from None
            raise AdaptationDiverged(self.adapter.updates, self.adapter.config.lr, cause) from None
        raise exc

    def _probabilities(self) -> np.ndarray:
        cache, full = self.cache, self.model.config.max_position_embeddings
        with self.lock:                            # the device: one thread at a time (device_lock)
            if cache.length(0) == full:            # refill: the last `keep` inputs, one forward pass
                cache.reset()
                self.model.hidden(self.window[:, full - self.keep:], cache).numpy()
                self.window[:, :self.keep] = self.window[:, full - self.keep:]
            at = cache.length(0)
            self.window[:, at] = self.next_input
            logits = self.model.decode_step(self.next_input, cache, wait=False)
            if self.mixer is not None:
                self.mixer.prepare()               # host work while the step runs on the device
            logits = logits.numpy()
        p = _softmax(logits)
        if self.mixer is not None:
            p = self.mixer.predict(p)
        self.active = self.lengths > self.step
        self.asked = int(self.active.sum())
        return p[:self.asked]

    def advance(self, tokens: np.ndarray) -> None:
        """Feed the step's tokens (one id per active stream, after :meth:`probabilities`); finished
        streams repeat their input. The adapter learns from them unless the step was the last
        (nothing is left to predict). Ids of the wrong kind or number are refused (TypeError,
        ValueError), the predictor left as it was."""
        from .checks import id_array

        self._open()
        if self.asked is None:
            raise ValueError("advance follows probabilities: call probabilities() for the step first")
        tokens = id_array("tokens", tokens, self.model.config.vocab_size)
        if tokens.size != self.asked:
            raise ValueError(f"tokens must hold one id per active stream, {self.asked} at this step, got {tokens.size}")
        self.asked = None
        try:                               # past the checks, a failure leaves the step half taken
            full = self.next_input.copy()
            full[:tokens.size] = tokens
            if self.mixer is not None:
                self.mixer.update(full, self.active)
            self.next_input = full
            self.step += 1
            if self.adapter is not None and self.step < int(self.lengths[0]):
                with self.lock:
                    if self.adapter.observe(tokens) and self.adapter.config.refill:
                        self.adapter.refill(self.cache, self.window)
        except BaseException as exc:
            self.failed = f"advance: {type(exc).__name__}: {str(exc).split(';')[0]}"
            raise

    def _not_copied(self, *_):
        raise TypeError("a predictor cannot be copied or pickled: it holds the model's key-value cache on the "
                        "device, the step it is at and the mixer's counts, which a copy would share or lose; "
                        "make another with make_predictor (same arguments) and feed it the same tokens")

    __copy__ = __deepcopy__ = __reduce_ex__ = __reduce__ = _not_copied

    def close(self) -> None:
        """Free the cache on the device (under the device's lock: its buffers return to a shared pool);
        the predictor refuses any call after this."""
        with self.lock:
            self.cache = None
            self.adapter = None


# -- the blob -----------------------------------------------------------------------------------------

def _check_tokenizer(tokenizer) -> None:
    if not isinstance(tokenizer, BPETokenizer):
        raise TypeError(f"tokenizer must be a netcl_lite.text.BPETokenizer, got {type(tokenizer).__name__}")


def _check_model(model, tokenizer) -> None:
    _model_only(model)
    _check_tokenizer(tokenizer)
    if max(tokenizer.vocab) >= model.config.vocab_size:
        raise ValueError(f"tokenizer has ids up to {max(tokenizer.vocab)}, beyond the model's "
                         f"vocab_size={model.config.vocab_size}: pass the tokenizer the model was trained with")
    if model.config.max_position_embeddings < 2:
        raise ValueError("model's max_position_embeddings must be at least 2 to code with a window")
    _check_cache(model, 1)


def _check_cache(model: DecoderLM, streams: int) -> None:
    """Refuse, before it is allocated, a key-value cache of ``streams`` streams over the model's whole
    window (``max_position_embeddings``) that the device cannot hold, naming the window."""
    c, device = model.config, model.queue.device
    buffer = 4 * streams * c.num_key_value_heads * c.max_position_embeddings * c.head_dim   # one layer's K or V
    total = 2 * c.num_hidden_layers * buffer
    if buffer > device.max_mem_alloc_size or total > device.global_mem_size:
        raise ValueError(f"model's max_position_embeddings={c.max_position_embeddings:,}: the coder's key-value "
                         f"cache of {streams} stream{'s' * (streams > 1)} over that window takes "
                         f"{total / 2**30:.3g} GiB, more than {device.name.strip()} holds "
                         f"({device.global_mem_size / 2**30:.3g} GiB; {device.max_mem_alloc_size / 2**30:.3g} GiB "
                         f"in one buffer); use a model with a smaller window")


def _check_primer(primer, tokenizer: BPETokenizer) -> np.ndarray:
    """``primer`` (not None) as int64 ids of ``tokenizer``, or ValueError saying what is wrong
    (TypeError for a masked array)."""
    checks.not_masked("primer", primer)
    what = "primer must be a 1-D array of token ids of the tokenizer (or None for Chapter 9's training text)"
    if isinstance(primer, (Iterator, str, bytes, bytearray, Mapping, Set)):
        # NumPy reads these as one object (a generator: "an array of shape () and dtype object"),
        # a set or a mapping in no stated order
        kind = type(primer).__name__
        raise ValueError(f"primer must be a sequence or an array of token ids of the tokenizer (or None for "
                         f"Chapter 9's training text), got {'a' if kind[0] not in 'aeiou' else 'an'} {kind}"
                         + ("; pass list(...) of it" if isinstance(primer, Iterator) else ""))
    try:
        arr = np.asarray(primer)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{what}; NumPy cannot read it as one ({exc})") from None
    top = max(tokenizer.vocab)
    if isinstance(primer, (list, tuple)) and not primer:   # NumPy reads [] as float64: no ids
        arr = np.zeros(0, np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{what}; got an array of shape {arr.shape} and dtype {arr.dtype}")
    if arr.size > MAX_PRIMER_TOKENS:
        raise ValueError(f"primer holds {arr.size:,} ids; the n-gram counts at most MAX_PRIMER_TOKENS = "
                         f"{MAX_PRIMER_TOKENS:,} (its tables grow with the primer): pass a part of it")
    if arr.size and (arr.min() < 0 or arr.max() > top):
        raise ValueError(f"{what}; its ids run from {arr.min()} to {arr.max()}, outside 0..{top}")
    return arr.astype(np.int64)


def _check_progress(progress) -> None:
    if progress is not None and not isinstance(progress, bool):
        kind = type(progress)                           # NumPy 2 names its own bool type 'bool'
        name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        raise TypeError(f"progress must be True, False or None (a bar for inputs over 20,000 tokens), "
                        f"got {name}; pass bool(...) of it")


def _buffer(data, name: str, what: str) -> memoryview:
    """A view of the bytes of ``data`` (bytes, bytearray or memoryview), or TypeError naming ``name``: the
    one read of them that is both measured (``nbytes``) and coded (``tobytes()``); ``bytes(data)`` would
    call a bytes subclass's ``__bytes__``, which may return other bytes."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes (or bytearray, memoryview), got {type(data).__name__}; {what}")
    try:
        view = memoryview(data)
    except ValueError:                                  # memoryview's own error names no parameter
        raise ValueError(f"{name} is a released memoryview: its bytes are gone; pass a view that is not "
                         f"released (or the bytes themselves)") from None
    checks.not_masked(name, data)
    return view


@lru_cache(maxsize=2)
def _training_ids(fingerprint: bytes, tokenizer: BPETokenizer) -> np.ndarray:
    from . import capstone

    ids = np.asarray(tokenizer.encode_ordinary(capstone.data().train_text), np.int64)
    ids.flags.writeable = False          # kept for the process: a caller's edit would change every later primer
    return ids


def default_primer(tokenizer: BPETokenizer) -> np.ndarray:
    """The n-gram's starting counts when none are given: Chapter 9's training text
    (:func:`netcl_lite.capstone.data`) in ``tokenizer``'s ids, encoded once per process and read-only
    (copy it to change it: the blobs say they were primed with this text)."""
    _check_tokenizer(tokenizer)
    return _training_ids(tokenizer_fingerprint(tokenizer), tokenizer)


def kept_positions(model: DecoderLM) -> int:
    """Positions of context a stream keeps when its window fills and it is prefilled again."""
    _model_only(model)
    return max(1, min(KEEP, model.config.max_position_embeddings // 2))


class _BarStream:
    """Standard error as a progress bar writes to it: a write or flush that fails (a reader gone, a
    terminal hung up: ``OSError``; a closed stream: ``ValueError``) silences the bar from then on
    instead of ending the coding: the bar is a courtesy, the result is what was asked for."""

    def __init__(self, stream):
        self.stream, self.failed = stream, False

    def write(self, text):
        if not self.failed:
            try:
                return self.stream.write(text)
            except (OSError, ValueError):
                self.failed = True
        return len(text)

    def flush(self):
        if not self.failed:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self.failed = True

    def isatty(self):
        try:
            return not self.failed and self.stream.isatty()
        except (OSError, ValueError, AttributeError):
            return False

    def __getattr__(self, name):                        # encoding and the like, as the stream has them
        return getattr(self.stream, name)


def _progress(total: int, enabled: bool | None, what: str):
    """A tqdm bar on standard error, disabled when not asked for or when standard error is closed
    (``sys.stderr`` None: tqdm would write to None); one whose writes fail goes quiet (:class:`_BarStream`)."""
    import sys

    from tqdm.auto import tqdm

    shown = (enabled if enabled is not None else total >= 20_000) and sys.stderr is not None
    return tqdm(total=total, unit="tok", desc=what, disable=not shown, leave=False,
                file=_BarStream(sys.stderr) if shown else None)


def compress(data: bytes, model: DecoderLM, tokenizer: BPETokenizer, *, mix: bool = True, adapt: bool = False,
             primer=None, progress: bool | None = False) -> bytes:
    """``data`` coded with ``model``'s predictions, mixed with counts of the text when ``mix``
    (:class:`~netcl_lite.context_mixing.ContextMixer`), the model learning from the coded text as
    it goes when ``adapt`` (dynamic evaluation, :class:`~netcl_lite.adaptation.AdaptConfig`'s
    defaults: fewer bits, several times slower).

    ``primer``: token ids the counts start from and, with ``adapt``, whose gradients scale the
    model's steps (None: Chapter 9's training text, :func:`default_primer`); the decoder needs the
    same ones. ``progress``: a progress bar (None: only for inputs over 20,000 tokens). Returns
    the blob :func:`decompress` reads: the coded form, or ``data`` stored as is when coding does
    not make it smaller.
    """
    view = _buffer(data, "data", "encode text first (text.encode('utf-8'))")
    size = view.nbytes
    _check_model(model, tokenizer)
    flag("mix", mix)
    flag("adapt", adapt)
    _check_progress(progress)
    if mix:
        check_vocab(model.config.vocab_size)
    if size > MAX_INPUT_BYTES:
        raise ValueError(f"data is {size:,} bytes; compress codes at most MAX_INPUT_BYTES = {MAX_INPUT_BYTES:,} "
                         "bytes (its n-gram's memory grows with the input): split it and compress each part")
    given = _check_primer(primer, tokenizer) if primer is not None else None
    data = view.tobytes()                  # the bytes measured above
    ids = tokenize(data, tokenizer) if data else None
    if ids is None or not ids.size:
        return _stored(data)
    mode = (MIXED if mix else MODEL) | (ADAPTING if adapt else 0)
    primer_ids = None
    if mix or adapt:
        primer_ids = given if given is not None else default_primer(tokenizer)
    if adapt:
        _check_adapt_primer(model, primer_ids)
    keep = kept_positions(model)
    lengths = segments(ids.size, stream_count(ids.size))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    import constriction

    family = constriction.stream.model.Categorical(perfect=False)
    encoder = constriction.stream.queue.RangeEncoder()
    weights = model_fingerprint(model)     # the weights and tokenizer coded with: checked again at the end
    vocabulary = tokenizer_fingerprint(tokenizer)
    predictor = make_predictor(model, tokenizer, lengths, keep, mix, primer_ids, adapt=AdaptConfig() if adapt else None)
    sizes = _piece_lengths(model, tokenizer)
    coded_bytes = 0
    try:
        with _progress(ids.size, progress, "compress") as bar:
            for step in range(int(lengths[0])):
                p = predictor.probabilities()
                at = offsets[:p.shape[0]] + step
                tokens = ids[at]
                encoder.encode(tokens.astype(np.int32), family, p)
                predictor.advance(tokens)
                bar.update(p.shape[0])
                coded_bytes += int(sizes[tokens].sum())
                if step % 32 == 31 and encoder.num_bits() > GIVE_UP_FRACTION * 8 * coded_bytes + GIVE_UP_BITS:
                    return _stored(data)     # coding has saved too little for a while: store
    finally:
        predictor.close()
    words = encoder.get_compressed()
    padding = np.zeros(max(0, _payload_words(ids.size) - words.size), np.uint32)
    payload = np.concatenate([words, padding]).astype("<u4").tobytes()
    parts = _parts(mode, model, tokenizer, primer_ids, AdaptConfig(), default=(mix or adapt) and given is None)
    if parts["weights"] != hashlib.sha256(weights).digest():
        raise ValueError("model: its weights changed while compress ran (another thread trained it or loaded "
                         "weights into it), so no one set of weights could decode the result; compress again "
                         "once they stay put, or give each thread a model of its own")
    if parts["tokenizer"] != hashlib.sha256(vocabulary).digest():
        raise ValueError("tokenizer: it changed while compress ran (another thread trained or loaded it), so "
                         "no one tokenizer could decode the result; compress again once it stays put, or give "
                         "each thread a tokenizer of its own")
    blob = _header(mode, data, ids.size, parts, payload)
    stored = _stored(data)
    return blob if len(blob) < len(stored) else stored


def _check_adapt_primer(model: DecoderLM, primer_ids: np.ndarray) -> None:
    """Refuse, naming ``primer``, primer ids too few for the adaptation's gradient mean squares."""
    from .adaptation import window_of

    need = window_of(AdaptConfig(), model) + 1
    if primer_ids.size < need:
        raise ValueError(f"primer holds {primer_ids.size:,} ids; adapt=True scales the model's steps by the "
                         f"gradients over windows of the primer, which needs at least {need} ids (one window "
                         "and its target): pass a longer primer, or None for Chapter 9's training text")


def _piece_lengths(model: DecoderLM, tokenizer: BPETokenizer) -> np.ndarray:
    """Each of the model's ids' length in bytes (vocab_size,), 0 for ids the tokenizer lacks."""
    sizes = np.zeros(model.config.vocab_size, np.int64)
    sizes[list(tokenizer.vocab)] = [len(piece) for piece in tokenizer.vocab.values()]
    return sizes


def _stored(data: bytes) -> bytes:
    return _header(STORED, data)


def _check_predictor_args(model, tokenizer, lengths, keep, mix, primer_ids, adapt) -> None:
    """TypeError or ValueError naming the argument of :func:`make_predictor` that it cannot run with."""
    _check_model(model, tokenizer)
    checks.not_masked("lengths", lengths)
    if not isinstance(lengths, np.ndarray) or lengths.ndim != 1 or lengths.dtype.kind not in "iu" \
            or not lengths.size or (lengths < 0).any() or (np.diff(lengths.astype(np.float64)) > 0).any():
        raise ValueError(f"lengths must be a 1-D integer array of the streams' token counts, longest first "
                         f"(segments(n_tokens, streams) makes one), got {lengths!r:.200}")
    window = model.config.max_position_embeddings
    if not isinstance(keep, (int, np.integer)) or isinstance(keep, bool) or not 1 <= keep < window:
        raise ValueError(f"keep must be an int from 1 to {window - 1} (the model's window less one; "
                         f"kept_positions(model) is what compress uses), got {keep!r}")
    flag("mix", mix)
    if adapt is not None and not isinstance(adapt, AdaptConfig):
        raise TypeError(f"adapt must be a netcl_lite.adaptation.AdaptConfig or None, got {type(adapt).__name__}")
    if (mix or adapt is not None) and not (isinstance(primer_ids, np.ndarray) and primer_ids.ndim == 1
                                           and primer_ids.dtype.kind in "iu"):
        raise ValueError("primer_ids must be a 1-D integer array of the tokenizer's ids when mix or adapt is on "
                         f"(default_primer(tokenizer) is compress's), got {type(primer_ids).__name__}")
    # named here, as make_predictor's parameter, rather than as the mixer's 'primer' or the Adapter's 'train_ids'
    vocab = model.config.vocab_size
    if (mix or adapt is not None) and primer_ids.size and (primer_ids.min() < 0 or primer_ids.max() >= vocab):
        raise ValueError(f"primer_ids must lie in [0, {vocab}) (the model's vocab_size), got ids from "
                         f"{primer_ids.min()} to {primer_ids.max()}")
    if adapt is not None:
        from .adaptation import window_of

        need = window_of(adapt, model) + 1 if adapt.optimizer == "rms" else 2
        if primer_ids.size < need:
            raise ValueError(f"primer_ids holds {primer_ids.size:,} ids; adapting with optimizer "
                             f"{adapt.optimizer!r} needs at least {need} (one window and its target)")


def make_predictor(model, tokenizer, lengths, keep, mix, primer_ids, *, adapt: AdaptConfig | None = None,
                   techniques=None) -> _Predictor:
    """The prediction both sides of the coder run: ``model`` over streams of ``lengths`` tokens,
    each keeping ``keep`` positions on a refill; mixed with the counts of ``primer_ids`` and the
    coded text when ``mix`` (``techniques``: the mixer's, None for all of
    :data:`netcl_lite.context_mixing.TECHNIQUES`); learning as it codes under ``adapt`` (the
    ``primer_ids`` scaling its steps), or not when None. :mod:`netcl_lite.mixing` measures its parts."""
    from .context_mixing import TECHNIQUES

    _check_predictor_args(model, tokenizer, lengths, keep, mix, primer_ids, adapt)
    lengths = lengths.copy()          # read every step: a caller's later change to its array is not ours
    if techniques is not None and not mix:
        raise ValueError(f"techniques chooses the mixer's parts, and mix is off: pass mix=True, or leave "
                         f"techniques None, got {techniques!r:.200}")
    byte_ids = _byte_ids(tokenizer)
    start = int(byte_ids[ord("\n")]) if byte_ids is not None else 0      # each stream starts after a newline
    mixer = None
    if mix:
        check_vocab(model.config.vocab_size)
        mixer = ContextMixer(primer_ids, model.config.vocab_size, lengths, tokenizer.vocab,
                             TECHNIQUES if techniques is None else techniques)
    adapter = None
    if adapt is not None:
        with device_lock(model):
            adapter = Adapter(model, lengths.size, start, adapt, train_ids=primer_ids)
    return _Predictor(model, lengths, keep, start, mixer, adapter)


def _header(mode: int, data: bytes, n_tokens: int = 0, parts: dict | None = None, payload: bytes = b"") -> bytes:
    """The blob: magic, version, mode, the original's length and checksum, then for a coded mode
    the token count, the fingerprint and its tags, a CRC-32 of all that and the payload, the
    payload; for a stored one, a CRC-32 of the header, then ``data``."""
    head = MAGIC + bytes([FORMAT_VERSION, mode]) + _varint(len(data)) + _checksum(data)
    if mode == STORED:
        return head + _CRC.pack(zlib.crc32(head)) + data
    combined, tags = _fingerprint(parts)
    head += _varint(n_tokens) + combined + tags
    return head + _CRC.pack(zlib.crc32(payload, zlib.crc32(head))) + payload


#: the most bytes a header takes: magic, version and mode, two varints of at most 10 bytes, the
#: checksum, the fingerprint, a tag per part and the CRC
_MAX_HEADER_BYTES = len(MAGIC) + 2 + 2 * 10 + _CHECKSUM_BYTES + _FINGERPRINT_BYTES + len(PARTS) + _CRC.size


def read_header(blob: bytes) -> dict:
    """The header's fields of ``blob`` (``magic``, ``version``, ``mode``, ``length``, ``checksum``;
    for a coded mode ``tokens``, ``fingerprint``, ``tags``; ``crc``, ``end``: where the data or
    the payload starts), or ValueError for a blob too short or not of this format. The fields are
    read, not checked against each other or the payload."""
    view = _buffer(blob, "blob", "what compress returned")
    size = view.nbytes
    # only the header's bytes are read: a large mapped file is not copied whole to read a few dozen
    # (cast refuses a view with a zero in its shape, such as (0, 5): that one holds no bytes to read)
    head = view.cast("B")[:_MAX_HEADER_BYTES] if view.c_contiguous and size else memoryview(view.tobytes())[:_MAX_HEADER_BYTES]
    blob = head.tobytes()
    if size < len(MAGIC) + 2:
        raise ValueError(f"blob is truncated: {size} bytes, shorter than any header")
    if blob[:len(MAGIC)] != MAGIC:
        raise ValueError(f"blob is not netcl_lite.compression output (it starts {blob[:4]!r}, not {MAGIC!r})")
    version, mode = blob[len(MAGIC)], blob[len(MAGIC) + 1]
    if version != FORMAT_VERSION:
        raise ValueError(f"blob has format version {version}; this library reads version {FORMAT_VERSION}")
    if mode not in MODES:
        raise ValueError(f"blob is corrupted: unknown mode {mode} in its header")
    fields = {"magic": MAGIC, "version": version, "mode": mode}
    fields["length"], at = _read_varint(blob, len(MAGIC) + 2, "original length")
    fields["checksum"], at = _take(blob, at, _CHECKSUM_BYTES)
    if mode != STORED:
        fields["tokens"], at = _read_varint(blob, at, "token count")
        fields["fingerprint"], at = _take(blob, at, _FINGERPRINT_BYTES)
        fields["tags"], at = _take(blob, at, len(PARTS))
    crc, fields["end"] = _take(blob, at, _CRC.size)
    fields["crc"] = _CRC.unpack(crc)[0]
    return fields


def _take(blob: bytes, at: int, n: int) -> tuple[bytes, int]:
    if len(blob) < at + n:
        raise ValueError("blob is truncated inside its header")
    return blob[at:at + n], at + n


def decompress(blob: bytes, model: DecoderLM, tokenizer: BPETokenizer, *, primer=None,
               progress: bool | None = False) -> bytes:
    """The bytes :func:`compress` coded into ``blob``, with the same ``model``, ``tokenizer`` and
    ``primer``. Raises ``ValueError`` naming the problem when the blob is truncated, corrupted,
    from another format, model, tokenizer, primer, arithmetic or coder, and naming the model's weights or
    the tokenizer when another thread changes them while it decodes (the blob is not at fault then).
    Every field of the header is checked before anything is allocated by it or looped over: the
    original's length against :data:`MAX_INPUT_BYTES`, the token count against that length and against
    what the payload's length can hold (:data:`TOKENS_PER_WORD`), the CRC-32 over header and payload. A
    blob from another model, tokenizer, arithmetic or coder, or of a primer given to compress when this
    call has none, is refused before the default primer (Chapter 9's training text, tokenized) is made for it."""
    view = _buffer(blob, "blob", "what compress returned")
    size = view.nbytes
    _check_model(model, tokenizer)
    _check_progress(progress)
    given = _check_primer(primer, tokenizer) if primer is not None else None
    if size > MAX_BLOB_BYTES:
        raise ValueError(f"blob is {size:,} bytes, longer than any compress writes (MAX_BLOB_BYTES = "
                         f"{MAX_BLOB_BYTES:,}): it is not one of its blobs, or is corrupted")
    blob = view.tobytes()                  # the bytes measured above
    fields = _checked_header(blob)
    body = blob[fields["end"]:]
    out = body if fields["mode"] == STORED else _decode(body, fields, model, tokenizer, given, progress)
    _check_checksum(out, fields)
    return out


def _checked_header(blob: bytes) -> dict:
    """:func:`read_header`'s fields of ``blob``, checked against each other and the blob, with no model:
    the original's length against :data:`MAX_INPUT_BYTES`; for a stored blob, its CRC and the stored
    data's length; for a coded one, :func:`_check_layout`."""
    fields = read_header(blob)
    mode, length, end = fields["mode"], fields["length"], fields["end"]
    if length > MAX_INPUT_BYTES:
        raise ValueError(f"blob is corrupted: its header's original length, {length:,} bytes, is over "
                         f"MAX_INPUT_BYTES = {MAX_INPUT_BYTES:,}, the most compress codes")
    if mode == STORED:
        if fields["crc"] != zlib.crc32(blob[:end - _CRC.size]):
            raise ValueError("blob is corrupted: its header's CRC-32 does not match")
        if len(blob) - end != length:
            raise ValueError(f"blob is {'truncated' if len(blob) - end < length else 'corrupted'}: the stored "
                             f"data holds {len(blob) - end} bytes, the header says {length}")
    else:
        _check_layout(blob, fields)
    return fields


def _check_checksum(out: bytes, fields: dict) -> None:
    if _checksum(out) != fields["checksum"]:
        raise ValueError("blob is corrupted: the decoded bytes do not match the original's checksum "
                         "(or the model computes other probabilities than the compressing side's)")


def _stored_original(blob: bytes) -> bytes | None:
    """The original of a stored ``blob``, or None for a coded one; either way the header is checked
    first (:func:`_checked_header`), so the command line says a file is no blob, or gives back a
    stored one, without loading a model."""
    fields = _checked_header(blob)
    if fields["mode"] != STORED:
        return None
    out = blob[fields["end"]:]
    _check_checksum(out, fields)
    return out


def _check_layout(blob: bytes, fields: dict) -> None:
    """The coded header's counts against each other and the payload, and the CRC, before any is used."""
    n_tokens, length, payload = fields["tokens"], fields["length"], len(blob) - fields["end"]
    if not 1 <= n_tokens <= length:
        raise ValueError(f"blob is corrupted: its header's token count, {n_tokens:,}, is impossible for an "
                         f"original of {length:,} bytes (each token spells at least one byte)")
    least = 4 * _payload_words(n_tokens)
    if payload % 4 or payload < least:
        raise ValueError(f"blob is {'truncated' if payload < least else 'truncated or corrupted'}: its payload length, "
                         f"{payload:,} bytes, is not a whole number of 4-byte words of at least the {least:,} "
                         f"bytes that {n_tokens:,} tokens take (TOKENS_PER_WORD = {TOKENS_PER_WORD})")
    head = fields["end"] - _CRC.size
    if fields["crc"] != zlib.crc32(blob[fields["end"]:], zlib.crc32(blob[:head])):
        raise ValueError("blob is truncated or corrupted: the CRC-32 of its header and payload does not match")


def _decode(body, fields, model, tokenizer, primer_ids, progress) -> bytes:
    mode, length, n_tokens = fields["mode"], fields["length"], fields["tokens"]
    longest = max(len(piece) for piece in tokenizer.vocab.values())
    if length > n_tokens * longest:
        raise ValueError(f"blob is corrupted: its header's original length, {length:,} bytes, is more than "
                         f"its {n_tokens:,} tokens spell (at most {longest} bytes each)")
    mix, adapt = mode & 3 == MIXED, bool(mode & ADAPTING)
    if not (mix or adapt):
        primer_ids = None
    # every part but a default primer is cheap to hash: a blob from another model, tokenizer,
    # arithmetic or coder, or of a given primer, is refused before Chapter 9's training text is read
    # and tokenized for the default one
    default = (mix or adapt) and primer_ids is None
    of_default = (mix or adapt) and fields["tags"][PARTS.index("primer")] == DEFAULT_PRIMER_TAG
    parts = _parts(mode, model, tokenizer, primer_ids, AdaptConfig(), default=of_default)
    primer = ("Chapter 9's training text as its primer (primer=None); this call's primer differs: pass None"
              if of_default else "primer ids given to compress, which this call lacks (it would use Chapter 9's "
              "training text); pass the primer the compressing side used" if default else
              "other primer ids; pass the primer the compressing side used")

    def refuse(differ: list[str]) -> None:
        if not differ:
            return
        what = {"weights": "another model (its config or its weights differ)", "tokenizer": "another tokenizer",
                "primer": primer,
                "arithmetic": f"other arithmetic (here: {_visible(arithmetic(model))}), which computes other "
                              f"probabilities",
                "coder": f"another coder (here: {coder(mode, AdaptConfig())})"}
        message = "blob was compressed with " + "; and with ".join(what[name] for name in differ)
        if {"arithmetic", "coder"} & set(differ):       # the sources are hashed there: another version wrote it
            message += (f". Its fingerprint, {fields['fingerprint'].hex()}, says it was written by another version "
                        f"of netcl_lite (other sources of the kernels, the model's forward pass or the coder) or "
                        f"on another device: decompress it with the version and the device that wrote it")
            if "arithmetic" in differ and (settings := _pocl_code_settings()):
                message += (f"; the PoCL settings in this environment are part of the arithmetic too "
                            f"({_visible(settings.removeprefix('; PoCL '))}: any POCL_ variable but logging, caching, pinning "
                            f"and worker counts may change the compiled code), so unset them or set the ones "
                            f"the compressing side had")
        raise ValueError(message)

    # without a primer, the primer's tag alone says whether the blob's was the default one
    refuse([name for name, tag in zip(PARTS, fields["tags"])
            if (not of_default if default and name == "primer" else tag != parts[name][0])])
    if default:
        primer_ids = default_primer(tokenizer)
        parts["primer"] = _primer_digest(primer_ids, default=True)
    if _fingerprint(parts) != (fields["fingerprint"], fields["tags"]):
        refuse([name for name, tag in zip(PARTS, fields["tags"]) if tag != parts[name][0]])
        if of_default:              # the default primer's tag is fixed, so its digest is the likely difference
            # the primer's digest is of its ids: a tokenizer with the blob's tokens (its own part agrees) but
            # other merges splits the same text into other ids
            raise ValueError("blob was compressed with " + (
                "Chapter 9's training text as its primer, which differs from this Python's (it is made of the "
                "standard library's docstrings), or with a tokenizer that has this one's tokens but other merges "
                "(it splits that text into other tokens)" if default else primer) + ", or another part of its "
                "fingerprint differs")
        # a tag is one byte: a part that differs matches the blob's tag by chance once in 256
        message = ("blob was compressed with something else than this call has (its fingerprint "
                   f"{fields['fingerprint'].hex()} differs, though no part's tag does: a tag is one byte, so a "
                   f"part that differs can match by chance). One of these differs: the model's weights, the "
                   f"tokenizer, the primer, the arithmetic (here: {_visible(arithmetic(model))}) or the coder "
                   f"(here: {coder(mode, AdaptConfig())}): decompress it with the model, tokenizer, primer, "
                   f"version of netcl_lite and device that wrote it")
        if settings := _pocl_code_settings():
            message += (f"; the PoCL settings in this environment are part of the arithmetic "
                        f"({_visible(settings.removeprefix('; PoCL '))}), so unset them or set the ones the "
                        f"compressing side had")
        raise ValueError(message)
    import constriction

    family = constriction.stream.model.Categorical(perfect=False)
    decoder = constriction.stream.queue.RangeDecoder(np.frombuffer(body, "<u4").astype(np.uint32))
    lengths = segments(n_tokens, stream_count(n_tokens))
    out = np.zeros(n_tokens, np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    known = np.zeros(model.config.vocab_size, bool)       # the ids the tokenizer spells
    known[list(tokenizer.vocab)] = True
    sizes, spelled = _piece_lengths(model, tokenizer), 0
    predictor = make_predictor(model, tokenizer, lengths, kept_positions(model), mix, primer_ids,
                               adapt=AdaptConfig() if adapt else None)
    try:
        with _progress(n_tokens, progress, "decompress") as bar:
            for step in range(int(lengths[0])):
                p = predictor.probabilities()
                try:
                    tokens = np.asarray(decoder.decode(family, p), np.int64)
                except Exception as exc:      # the coder's own checks (assertions among them)
                    raise ValueError(f"blob is corrupted: the range decoder fails on its payload "
                                     f"({type(exc).__name__}: {exc})") from None
                if (tokens.shape != (p.shape[0],) or (tokens < 0).any() or (tokens >= known.size).any()
                        or not known[tokens].all()):
                    raise ValueError("blob is corrupted: it decodes to a token id the tokenizer does not have")
                spelled += int(sizes[tokens].sum())
                if spelled > length:              # no need to decode the rest
                    raise ValueError(f"blob is corrupted: it decodes to more than the {length:,} bytes its "
                                     "header says")
                out[offsets[:tokens.size] + step] = tokens
                predictor.advance(tokens)
                bar.update(tokens.size)
        data = _spell(out, tokenizer)
        if len(data) != length:
            raise ValueError(f"blob is corrupted: it decodes to {len(data)} bytes, the header says {length}")
        _check_checksum(data, fields)
    except ValueError:               # the blob, unless the model or the tokenizer changed meanwhile
        _unchanged(model, tokenizer, parts, "decompress")
        raise
    finally:
        predictor.close()
    return data


def _unchanged(model: DecoderLM, tokenizer: BPETokenizer, parts: dict, during: str) -> None:
    """A ValueError naming the model's weights or the tokenizer when it differs from what ``parts``
    (:func:`_parts`, taken as ``during``, a call of this module, began) records: another thread trained
    it or loaded another into it meanwhile, and the call's work mixed the two (not the blob's fault)."""
    if hashlib.sha256(model_fingerprint(model)).digest() != parts["weights"]:
        raise ValueError(f"model: its weights changed while {during} ran (another thread trained it or loaded "
                         f"weights into it), so the blob was decoded with two sets of weights, not as it was "
                         f"coded; {during} again once they stay put, or give each thread a model of its own") from None
    if hashlib.sha256(tokenizer_fingerprint(tokenizer)).digest() != parts["tokenizer"]:
        raise ValueError(f"tokenizer: it changed while {during} ran (another thread trained or loaded it), so the "
                         f"blob was decoded with two tokenizers, not as it was coded; {during} again once it "
                         f"stays put, or give each thread a tokenizer of its own") from None


# -- command line ---------------------------------------------------------------------------------------

def _load(model_dir):
    """(model, tokenizer): a folder holding ``config.json``, ``model.safetensors`` and
    ``tokenizer.json`` (a Chapter 9 run's folder is one), or Chapter 9's trained model."""
    from pathlib import Path

    if model_dir is None:
        from . import capstone

        run = capstone.run()
        return run.model, run.tokenizer
    if not model_dir:                                   # Path('') is the working folder: "$UNSET" is no choice of it
        raise ValueError("--model '': names no folder (empty); give the model's folder, or leave --model "
                         "out for Chapter 9's model")
    from .files import shown_path

    folder = Path(model_dir)
    try:
        if not folder.is_dir():
            from .files import kind_of

            kind = kind_of(folder)
            raise ValueError(f"--model {shown_path(folder)}: " + ("no such folder" if kind == "missing" else
                                                      f"is {kind}, not a folder (one with config.json, "
                                                      "model.safetensors and tokenizer.json)"))
        if not (folder / "tokenizer.json").is_file():
            from .files import kind_of

            kind = kind_of(folder / "tokenizer.json")
            raise ValueError(f"--model {shown_path(folder)}: " + (
                "no tokenizer.json there (a Chapter 9 run's folder has one)" if kind == "missing" else
                f"its tokenizer.json is {kind}, not a regular file (a Chapter 9 run's folder has one)"))
    except OSError as exc:                              # the system refuses to look it up (a name too long)
        raise ValueError(f"--model {shown_path(folder)}: cannot read it: {exc.strerror or exc}") from None
    try:
        model, tokenizer = DecoderLM.from_pretrained(folder), _load_tokenizer(folder / "tokenizer.json")
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"--model {shown_path(folder)}: cannot load the model there "
                         f"({_within(str(exc), folder)})") from None
    try:                                                # one that loads but cannot code is at fault, not IN
        _check_model(model, tokenizer)
    except ValueError as exc:
        raise ValueError(f"--model {shown_path(folder)}: {exc}") from None
    return model, tokenizer


def _load_tokenizer(path) -> BPETokenizer:
    """The tokenizer in ``path``: netcl_lite's own file (:meth:`BPETokenizer.save`, whose ``"format"`` field
    is ``netcl_lite.bpe``) or Hugging Face's byte-level BPE ``tokenizer.json`` (what
    :meth:`BPETokenizer.save_tokenizer_json` and transformers write, with a ``"model"`` and no
    ``"format"``); both spell one vocabulary, and code alike. A file that is neither is refused naming both."""
    from .files import read_regular
    from .text.model_file import MAX_FILE_BYTES

    raw = read_regular(path, MAX_FILE_BYTES, "a tokenizer.json")
    try:                                                # a file that is not JSON: the loader below names why
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        doc = None
    if isinstance(doc, dict) and "format" not in doc:
        if "model" not in doc:
            raise ValueError(f"{path}: neither netcl_lite's tokenizer file (a \"format\": \"netcl_lite.bpe\" field, "
                             f"as BPETokenizer.save writes) nor Hugging Face's tokenizer.json (a \"model\" field, as "
                             f"save_tokenizer_json and transformers write); is it the right file?")
        return BPETokenizer.from_tokenizer_json(path)
    return BPETokenizer.load(path)


def _within(text: str, folder) -> str:
    """A loader's message ``text`` about files in ``folder`` as :func:`_load`'s message embeds it: each
    path in the folder it names as written (``/m/config.json``), or the folder itself, becomes the
    file's name in the folder (``config.json``) or ``.``, since the message names the folder
    already (:func:`~netcl_lite.files.shown_path`); in what is left each character that would not
    show as itself (a newline, a terminal's escape) is written out (:func:`~netcl_lite.files.visible`),
    so that the message stays on one line and no control sequence reaches a terminal, and the rest
    stays as the loader wrote it (quoting it again would double each backslash of a pattern it names)."""
    from .files import visible

    root = str(folder).rstrip("/") or "/"
    # the folder's path where a path stands in a message: after its start, a space, a quote or a bracket,
    # and up to a colon, a space, a quote, a bracket, a comma or its end. A folder named by one word
    # (``--model a``) stands alone as that word, not a path ("is not a regular file"): only its files are
    # taken for paths then
    alone = "?" if "/" in root else ""
    path = re.compile(rf"(?<![^\s'\"(\[]){re.escape(root)}(?:/(?P<name>[^\s'\":/()]+)){alone}(?=$|[\s'\":)\],])")
    return visible(path.sub(lambda m: m["name"] or ".", text))


def _write_new(path, data: bytes, mode: int | None = None) -> None:
    """Write ``path`` whole or not at all, never over an existing file: a temporary file in the
    same folder is written, flushed to disk and linked to the name (which fails if the name
    exists), then removed, whatever happens (an error, Ctrl-C). On a file system without hard
    links (``os.link`` refused), the name itself is created exclusively (``O_EXCL``: it fails if
    the name exists), written and flushed; on any failure or Ctrl-C the file so created is
    removed, so a partial file never stays. The folder's entry is flushed to disk too. ``mode``:
    permission bits the file gets before its name appears (IN's, as gzip gives them), else the
    umask's. A signal that arrives as the name appears is acted on once the step is done, and then
    takes the name away again: the command's status and OUT agree (done and there, or ended and
    not)."""
    import os
    from pathlib import Path

    from .files import fsync_folder, signals_held, temporary_name, write_new

    path = Path(path)
    tmp = temporary_name(path)                          # a valid name beside any valid OUT
    linked = False
    try:
        write_new(tmp, data, mode)
        with signals_held():                            # link, flush the folder, remove the temporary name
            try:
                os.link(tmp, path)
                linked = True
            except FileExistsError:
                raise
            except (OSError, NotImplementedError):      # no hard links here (EPERM, ENOTSUP, ...)
                pass
            tmp.unlink(missing_ok=True)
            if linked:
                fsync_folder(path.parent)
    except BaseException:
        if linked:                                      # ours: the link made it a moment ago
            path.unlink(missing_ok=True)
        raise
    finally:
        with signals_held():
            tmp.unlink(missing_ok=True)
    if linked:
        return
    written = False
    try:
        write_new(path, data, mode)
        written = True
        with signals_held():
            fsync_folder(path.parent)
    except BaseException:
        if written:
            path.unlink(missing_ok=True)
        raise


def _probe_folder(path) -> None:
    """Create an empty temporary file in ``path``'s folder, named as the one that writing ``path``
    makes (:func:`~netcl_lite.files.temporary_name`), and remove it: an ``OSError`` says the folder
    takes no new file (read-only, no permission, a file system that refuses them), before any work
    that would be lost. Root passes ``os.access``'s check of any folder; this one it can fail."""
    from .files import temporary_name, write_new

    from .files import signals_held

    probe = temporary_name(path)
    with signals_held():                                # made and removed as one step: none is left
        try:
            write_new(probe, b"")
        finally:
            probe.unlink(missing_ok=True)


def _read_input(name: str, limit: int, what: str, too_large: str) -> bytes:
    """The bytes of the file ``name`` (only a regular file of at most ``limit`` bytes), or of
    standard input for ``-`` (read up to ``limit`` bytes, refused past them, ``too_large`` the advice)."""
    import sys

    from .files import read_regular

    if name != "-":
        return read_regular(name, limit, what, too_large)
    data = _read_all(sys.stdin.buffer, limit + 1)
    if len(data) > limit:
        raise ValueError(f"standard input holds more than {limit:,} bytes; {what} is read only up to "
                         f"{limit:,} bytes: {too_large}")
    return data


def _wait(stream, for_writing: bool) -> None:
    """Wait until ``stream`` (a non-blocking pipe's end, say) can be read or written again."""
    import select
    import time

    try:
        fd = stream.fileno()
        select.select([] if for_writing else [fd], [fd] if for_writing else [], [])
    except (OSError, ValueError, AttributeError):       # no descriptor to wait on (or not here): a short pause
        time.sleep(0.01)


def _read_all(stream, most: int) -> bytes:
    """Up to ``most`` bytes of the binary ``stream``, to its end: a non-blocking one (its descriptor set
    O_NONBLOCK by whoever shares the pipe) is waited on when it has nothing yet, never cut short."""
    chunks, size = [], 0
    while size < most:
        try:
            chunk = stream.read(min(1 << 20, most - size))
        except BlockingIOError:
            chunk = None
        if chunk is None:                               # nothing there yet, the input not ended
            _wait(stream, for_writing=False)
            continue
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _write_all(stream, data: bytes) -> None:
    """All of ``data`` to the binary ``stream``, then flushed: a non-blocking one, which takes part of a
    write (or none), is waited on and written again until it has taken everything."""
    view = memoryview(data)
    while view:
        try:
            n = stream.write(view)
        except BlockingIOError as exc:
            n = exc.characters_written
        view = view[n or 0:]
        if view:
            _wait(stream, for_writing=True)
    while True:
        try:
            stream.flush()
            return
        except BlockingIOError:
            _wait(stream, for_writing=True)


_EPILOG = f"""\
IN and OUT may be - for standard input and output (OUT is written whole, once the work is
done). OUT gets IN's permission bits, as gzip gives them (a 0600 file stays private); from
standard input, the umask's. OUT names a new file: an existing one is never overwritten, and a device (/dev/null
too), a pipe or a socket is refused; write - >/dev/null to discard the result. IN must be a
regular file (not a device, a pipe or a folder) of at most {MAX_INPUT_BYTES:,} bytes to
compress (MAX_INPUT_BYTES), {MAX_BLOB_BYTES:,} to decompress. A progress bar shows on standard
error for inputs over 20,000 tokens when it is a terminal (never in a file or a pipe).

--model-only and --adapt choose how compress codes; a blob's header records that choice and
decompress follows it, so decompress refuses them (a usage error, exit status 2). The counts
start from Chapter 9's training text (the primer): a blob that the library compressed with a
primer of its own (compress(..., primer=...)) is refused before any model is loaded, and is
decompressed in Python with the same primer.
Before any work, an empty temporary file is created in OUT's folder and removed: a folder
that takes no new file (read-only, no permission, even for root) is named at once. A file-size
limit (ulimit -f) under {MIN_FILE_SIZE_LIMIT:,} bytes, or a disk under PoCL's kernel cache
(POCL_CACHE_DIR, else XDG_CACHE_HOME/pocl or ~/.cache/pocl) with less free, is refused at once:
OpenCL's compiler, which writes the kernels it builds, aborts the process when a write is cut short.

exit status:
  0    done: OUT holds the whole result
  1    refused or failed: a message on standard error names the path at fault (or the default
       model's cache folder, or OpenCL when no device is found or a kernel cannot be built, or
       the memory or its limit, ulimit -v, when it runs out); OUT is not written
  2    the command line is wrong (usage; --model-only or --adapt given to decompress too)
  130  interrupted (Ctrl-C): no partial or temporary file is left
  128+N  ended by signal N: SIGTERM (143), SIGHUP (129), SIGQUIT (131), SIGXCPU (a CPU-time
       limit, 152), SIGALRM, SIGUSR1, SIGUSR2 or SIGVTALRM; no partial or temporary file is left
       (a signal the command was started with ignored, as under nohup, stays ignored)
"""


def _isatty(stream) -> bool:
    """Whether ``stream`` is a terminal: False for None, a closed stream, or a plain writer with no
    ``isatty`` (a logging redirect), as the progress bar's stream takes them (:class:`_BarStream`)."""
    try:
        return stream is not None and bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _say(message: str) -> None:
    """``message`` on standard error, or nowhere when it is closed (started with ``2>&-``: Python's
    ``sys.stderr`` is None, and ``print(file=None)`` would write to standard output, which may be
    OUT's data); the exit status still says what happened."""
    import sys

    if sys.stderr is not None:
        try:
            print(message, file=sys.stderr)
        except (OSError, ValueError):                   # a standard error that cannot be written
            pass


def main(argv=None) -> int:
    """``python -m netcl_lite.compression compress|decompress IN OUT [--model DIR] [--model-only] [--adapt]``;
    the exit status is 0 (done), 1 (refused or failed), 2 (usage) or 130 (interrupted)."""
    import signal
    import sys
    import threading

    import netcl_lite

    if argv is not None and (not isinstance(argv, (list, tuple)) or not all(isinstance(a, str) for a in argv)):
        raise TypeError(f"argv must be a list of str (the command line's words) or None for sys.argv[1:], "
                        f"got {argv!r:.200}")
    # From here Ctrl-C cleans up as it unwinds; Python's own handler is made to wait out the few
    # steps that must not be cut (files.signals_held), and is put back when the command returns.
    ours = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) in (signal.default_int_handler, netcl_lite._interrupted_while_starting))
    if ours:
        from .files import deferrable

        signal.signal(signal.SIGINT, deferrable(signal.default_int_handler))
    try:
        return _main(argv)
    except KeyboardInterrupt:
        _say("python -m netcl_lite.compression: interrupted")
        return 130
    except MemoryError:                                 # NumPy's or Python's, wherever the limit struck
        _say(f"python -m netcl_lite.compression: {_out_of_memory()}")
        return 1
    except Warning as exc:                              # a warning made an error (PYTHONWARNINGS=error, -W error)
        from .files import visible

        _say(f"python -m netcl_lite.compression: {type(exc).__name__} (warnings are errors here): "
             f"{visible(' '.join(str(exc).split()))}")
        return 1
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _out_of_memory() -> str:
    """What the command line says when memory runs out: the address-space limit (``ulimit -v``) when
    one is set, else the machine's memory; OUT is not written (its temporary file is removed as the
    error unwinds)."""
    try:
        import resource                                 # POSIX: no limit to read elsewhere
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        unlimited = resource.RLIM_INFINITY
    except (ImportError, AttributeError, OSError, ValueError):
        soft = unlimited = None
    if soft is not None and soft != unlimited:
        return (f"out of memory: the address-space limit (ulimit -v) is {soft // 1024:,} KiB, too little for "
                f"the model, the coder and the input; raise it or lift it (ulimit -v unlimited). OUT is not written")
    return ("out of memory: this machine has too little free memory for the model, the coder and the input; "
            "free some, or code a smaller input. OUT is not written")


def _main(argv) -> int:
    import argparse
    import contextlib
    import os
    import sys
    from pathlib import Path

    from .core.device import NoDeviceError
    from .core.kernels import KernelBuildError
    from .files import CacheEntryError, shown_path, visible

    class Parser(argparse.ArgumentParser):
        def error(self, message):
            if sys.stderr is None:                      # closed (2>&-): argparse would print its usage to
                self.exit(2)                            # standard output, where OUT's bytes may go
            # argparse quotes some words it names (an ambiguous option, say) as they were typed: a word
            # holding a newline or ESC would split the message or reach the terminal as a control sequence
            super().error(visible(message))

        def _print_message(self, message, file=None):
            if file is None or file is not sys.stdout:
                return super()._print_message(message, file)
            if message:                                 # the help: a write that fails is an error, as the
                file.write(message)                     # result's is (argparse would let it pass unsaid)
                file.flush()

    parser = Parser(prog="python -m netcl_lite.compression", epilog=_EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description="Compress or decompress a file with a language model's predictions.")
    parser.add_argument("command", choices=("compress", "decompress"))
    parser.add_argument("input", metavar="IN", help="the file to read, or - for standard input")
    parser.add_argument("output", metavar="OUT", help="the file to write (never overwritten), or - for standard output")
    parser.add_argument("--model", metavar="DIR", help="a folder with config.json, model.safetensors and "
                        "tokenizer.json (default: Chapter 9's trained model, trained once if needed)")
    parser.add_argument("--model-only", action="store_true", help="compress with the model alone, no counts mixed in")
    parser.add_argument("--adapt", action="store_true", help="let the model learn from the text as it codes it "
                        "(dynamic evaluation): fewer bits, several times slower")
    try:
        args, stray = parser.parse_known_args(argv)
    except OSError as exc:                              # --help that standard output did not take
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no second error at exit
        _say(f"python -m netcl_lite.compression: standard output: {exc.strerror or exc}")
        return 1
    if stray:                                           # named as paths are: quoted on one line, escaped
        parser.error(f"unrecognized arguments: {' '.join(shown_path(word) for word in stray)}")
    if args.command == "decompress" and (args.adapt or args.model_only):    # the blob's header says how it was coded
        given = " and ".join(name for name, on in (("--model-only", args.model_only), ("--adapt", args.adapt)) if on)
        parser.error(f"{given}: compress options only; a blob's header records how it was coded (with or "
                     f"without counts mixed in, adapting or not) and decompress reads it that way: leave "
                     f"{'them' if ' and ' in given else 'it'} out")

    def fail(message: str) -> int:
        _say(f"{parser.prog}: {message}")
        return 1

    in_mode = None                                      # OUT's permission bits: IN's, once IN is read

    def unwritable_cache(exc: OSError, whose: str, more: str) -> int:
        from .fingerprint import cache_root

        return fail(f"{whose} cache folder {shown_path(cache_root())} cannot be made or written "
                    f"({exc.strerror or exc}); set NETCL_LITE_CACHE to a folder you can write{more}")

    def deliver(result: bytes) -> int:
        """Write ``result`` to OUT (or standard output): the exit status."""
        if args.output == "-":
            try:
                _write_all(sys.stdout.buffer, result)
            except OSError as exc:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no second error at exit
                return fail(f"standard output: {exc.strerror or exc}")
            return 0
        try:
            _write_new(out, result, in_mode)
        except FileExistsError:
            return fail(f"{shown_path(out)}: file exists; remove it or choose another name")
        except OSError as exc:
            return fail(f"{shown_path(out)}: cannot write it: {exc.strerror or exc}")
        return 0

    for name in (args.input, args.output):              # no system call takes one (ValueError from os)
        if "\x00" in name:
            return fail(f"{shown_path(name)}: a path cannot hold a NUL character; give the file's real name")
    try:
        import resource                                 # POSIX: no file-size limit to read elsewhere
    except ImportError:
        resource = None
    if resource is not None:
        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if soft != resource.RLIM_INFINITY and soft < MIN_FILE_SIZE_LIMIT:
            return fail(f"the file-size limit (ulimit -f) is {soft:,} bytes, under the {MIN_FILE_SIZE_LIMIT:,} this "
                        f"needs: OpenCL's compiler writes the kernels it builds (up to about 1 MiB each) and a write "
                        f"the limit cuts short aborts the process; raise it (ulimit -f "
                        f"{MIN_FILE_SIZE_LIMIT // 1024}) or lift it (ulimit -f unlimited)")
    if (room := _kernel_cache_room()) is not None:
        return fail(room)
    squeezing = args.command == "compress"
    source = "standard input" if args.input == "-" else shown_path(args.input)
    which = f"--model {shown_path(args.model)}" if args.model is not None else "the default model (Chapter 9's)"
    if args.input == "-" and sys.stdin is None:         # started with it closed (<&-)
        return fail("standard input is closed; give IN, the file to read")
    if args.input == "-" and getattr(sys.stdin, "buffer", None) is None:    # main called with an io.StringIO
        return fail("standard input is a text stream with no bytes to read (no .buffer); give IN, the file to read")
    if args.output == "-":
        if sys.stdout is None:                          # started with it closed (>&-)
            return fail("standard output is closed; give OUT, the file to write")
        if getattr(sys.stdout, "buffer", None) is None:    # redirect_stdout(io.StringIO()), some notebook kernels
            return fail("standard output is a text stream that takes no bytes (no .buffer); give OUT, the file "
                        "to write")
        if squeezing and _isatty(sys.stdout):
            return fail("standard output is a terminal; redirect it to a file or a pipe, or give OUT")
    else:
        if os.path.basename(args.output) in ("", ".", ".."):   # Path() would drop a trailing '/' or '/.'
            return fail(f"{shown_path(args.output)}: names no file (empty, or a folder: by its trailing slash, '.' or "
                        "'..'); give the name of a file to write")
        out = Path(args.output)
        try:
            if out.is_dir():
                return fail(f"{shown_path(out)}: is a folder; give the name of a file to write")
            if out.exists() or out.is_symlink():
                from .files import kind_of

                kind = kind_of(out)
                if not out.is_file():                   # /dev/null, a pipe, a socket, a dangling link
                    return fail(f"{shown_path(out)}: is {kind}, not a regular file; OUT is the name of a new file "
                                "(never one that exists), or - for standard output (- >/dev/null discards it)")
                linked = f" ({kind})" if out.is_symlink() else ""     # a link to a regular file: one that exists
                return fail(f"{shown_path(out)}: file exists{linked}; remove it or choose another name")
            if not out.parent.is_dir():
                from .files import kind_of

                kind = kind_of(out.parent)
                return fail(f"{shown_path(out)}: cannot write there: its folder {shown_path(out.parent)} is "
                            f"{'missing' if kind == 'missing' else kind + ', not a folder'}")
        except OSError as exc:                          # the system refuses to look it up (a name too long)
            return fail(f"{shown_path(out)}: cannot write there: {exc.strerror or exc}")
        try:                                            # the honest check (root passes os.access): a file made there
            _probe_folder(out)
        except OSError as exc:
            return fail(f"{shown_path(out)}: cannot write there: its folder {shown_path(out.parent)} takes no new "
                        f"file ({exc.strerror or exc}); choose another folder for OUT")
    try:
        if squeezing:                                   # the coder's memory bound: a longer input is split
            limit, what = MAX_INPUT_BYTES, "the input to compress"
            too_large = ("split it and compress each part (MAX_INPUT_BYTES: the coder's memory grows with its input), "
                         f"e.g. split -b {MAX_INPUT_BYTES}")
        else:                                           # no blob compress writes is longer
            limit, what = MAX_BLOB_BYTES, "a blob to decompress"
            too_large = "no blob compress writes is longer; is it the right file?"
        try:
            data = _read_input(args.input, limit, what, too_large)
        except ValueError as exc:                       # names the path
            return fail(str(exc))
        except OSError as exc:                          # without strerror: read_regular's, naming the path
            return fail(f"{source}: {exc.strerror}" if exc.strerror else str(exc))
        if args.input != "-":                           # OUT gets IN's permission bits (0600 stays private)
            try:
                in_mode = os.stat(args.input).st_mode & 0o777
            except OSError:                             # gone since it was read: the umask's, then
                pass
        if not squeezing:                               # the header first: no model for a file that needs none
            try:
                stored = _stored_original(data)
            except ValueError as exc:
                return fail(f"{source}: {exc}")
            if stored is not None:
                return deliver(stored)
            fields = read_header(data)                  # checked: a coded blob's
            if (fields["mode"] & 3 == MIXED or fields["mode"] & ADAPTING) \
                    and fields["tags"][PARTS.index("primer")] != DEFAULT_PRIMER_TAG:
                return fail(f"{source}: blob was compressed with primer ids given to compress (its primer= "
                            f"argument); the command line decodes with Chapter 9's training text as the primer "
                            f"and has no option for another: decompress it in Python with "
                            f"netcl_lite.compression.decompress(blob, model, tokenizer, primer=...), the primer "
                            f"the compressing side used")
        # nothing but the result goes to standard output (a model trained on the way prints)
        with _stdout_to_stderr():
            if (problem := _environment_problem()) is not None:
                return fail(problem)
            _reclaim_termination_signals()              # the device is made: LLVM has taken some over
            try:
                model, tokenizer = _load(args.model)
                if squeezing and not args.model_only:   # a model too large to mix is at fault, not IN
                    check_vocab(model.config.vocab_size)
                if squeezing and (args.adapt or not args.model_only) and args.model is not None:
                    try:                                # a pattern that cannot split the primer: the tokenizer's fault
                        default_primer(tokenizer)       # (kept for compress: encoded once per process)
                    except CacheEntryError:             # a damaged entry of the cache: neither's fault
                        raise
                    except ValueError as exc:
                        raise ValueError(f"--model {shown_path(args.model)}: its tokenizer.json cannot encode "
                                         f"Chapter 9's training text, the default primer ({exc})") from None
            except CacheEntryError as exc:              # names the entry: not --model's fault, nor IN's
                return fail(str(exc))
            except ValueError as exc:                   # names --model DIR
                return fail(str(exc) if str(exc).startswith("--model") else f"{which}: {exc}")
            except OSError as exc:                      # the default model's cache, or the primer's corpus
                if args.model is None:
                    return unwritable_cache(exc, f"{which}: its", "; or give --model DIR")
                from .fingerprint import cache_root

                where = exc.filename if isinstance(exc.filename, (str, bytes, os.PathLike)) else None
                if where is not None and _inside(where, cache_root()):
                    return unwritable_cache(exc, "the primer's corpus:", "")
                raise
            # a bar for long inputs on a terminal only: into a file or a pipe it writes each update
            bar = None if _isatty(sys.stderr) else False
            try:
                if squeezing:
                    result = compress(data, model, tokenizer, mix=not args.model_only, adapt=args.adapt, progress=bar)
                else:
                    result = decompress(data, model, tokenizer, progress=bar)
            except AdaptationDiverged as exc:           # the trained weights ran finite: --adapt is at fault
                if squeezing:
                    return fail(f"--adapt: dynamic evaluation diverged as it coded {source}: after {exc.counted} "
                                f"its adapted weights overflow float32 ({exc.cause}); the model's own weights ran "
                                f"finite until then. Compress without --adapt: its learning rate ({exc.lr:g}) is "
                                "fixed by the format, not an option")
                return fail(f"{source}: dynamic evaluation diverged as it decoded this blob (made with --adapt): "
                            f"after {exc.counted} its adapted weights overflow float32 ({exc.cause})")
            except NonFiniteError as exc:               # the loaders took only finite weights: they overflow
                return fail(f"{which}: its weights are finite, but running it overflows float32 "
                            f"({getattr(exc, 'cause', str(exc).split(';')[0])}); the model is at fault, not IN: "
                            "retrain it or scale its weights down")
            except CacheEntryError as exc:              # the primer's corpus, first read while coding
                return fail(str(exc))
            except ValueError as exc:
                return fail(f"{source}: {exc}")
            except OSError as exc:                      # the primer's corpus, read once into the cache
                from .fingerprint import cache_root

                where = exc.filename if isinstance(exc.filename, (str, bytes, os.PathLike)) else None
                if where is not None and _inside(where, cache_root()):
                    return unwritable_cache(exc, "the primer's corpus:", "")
                return fail(f"{shown_path(where) + ': ' if where is not None else ''}{exc.strerror or exc} "
                            f"(while coding {source})")
        return deliver(result)
    except (NoDeviceError, KernelBuildError) as exc:    # this machine's OpenCL, not IN nor the model
        return fail(f"OpenCL: {_kernel_cache_unmakeable(exc)}{visible(' '.join(str(exc).split()))[:600]}")
    except KeyboardInterrupt:
        _say(f"{parser.prog}: interrupted")
        return 130


def _kernel_cache_unmakeable(exc: Exception) -> str:
    """For a kernel that failed to build: that PoCL's kernel cache cannot be made, where and why, as the
    start of the command line's message, or "" (a device that started builds into that folder, and
    fails every build when it is a file)."""
    from .core.device import pocl_cache_folder, unmakeable_folder
    from .core.kernels import KernelBuildError
    from .files import shown_path

    folder, setting = pocl_cache_folder()
    if not isinstance(exc, KernelBuildError) or (why := unmakeable_folder(folder)) is None:
        return ""
    return (f"PoCL's kernel cache {shown_path(folder)} (placed by {setting}) cannot be made ({why}), so no kernel "
            f"builds: set POCL_CACHE_DIR to a folder you can write. ")


def _kernel_cache_room() -> str | None:
    """Why PoCL's kernel cache has too little room for the kernels OpenCL's compiler writes there
    (under :data:`MIN_FILE_SIZE_LIMIT` bytes free on its disk: a write that fails there aborts the
    process inside the compiler), as the command line says it, or None."""
    import os

    from .core.device import pocl_cache_folder
    from .files import shown_path

    folder, setting = pocl_cache_folder()
    at = folder
    while not os.path.isdir(at) and at.parent != at:     # the folder PoCL would make it in
        at = at.parent
    try:
        st = os.statvfs(at)
    except (OSError, AttributeError):                   # no statvfs (Windows), or not readable: PoCL says
        return None
    free = st.f_bavail * st.f_frsize
    if free >= MIN_FILE_SIZE_LIMIT or st.f_blocks == 0:    # no blocks at all: /proc and its kin, no disk
        return None
    return (f"PoCL's kernel cache {shown_path(folder)} (placed by {setting}) has {free:,} bytes free on its disk, "
            f"under the {MIN_FILE_SIZE_LIMIT:,} this needs: OpenCL's compiler writes the kernels it builds there and "
            f"a write that fails aborts the process; free some space, or set POCL_CACHE_DIR to a folder on a disk "
            f"with room")


class _ThreadStdout:
    """``sys.stdout`` while the command line loads and codes: what a thread inside
    :func:`_stdout_to_stderr` prints goes to standard error (a model trained on the way prints), what
    any other thread prints to the standard output it found, so two commands run in two threads
    each deliver their result to standard output."""

    def __init__(self, real):
        self.real, self.threads = real, set()

    def _target(self):
        import sys
        import threading

        return sys.stderr if threading.get_ident() in self.threads else self.real

    def write(self, text):
        target = self._target()
        return target.write(text) if target is not None else len(text)

    def flush(self):
        target = self._target()
        if target is not None:
            target.flush()

    def __getattr__(self, name):                        # buffer, encoding, fileno ...: the real stream's
        return getattr(self.real, name)


_STDOUT_LOCK = threading.Lock()


@contextlib.contextmanager
def _stdout_to_stderr():
    """What this thread prints goes to standard error while the block runs (:class:`_ThreadStdout`);
    ``sys.stdout`` is what it was once no thread is inside."""
    import sys
    import threading

    me = threading.get_ident()
    with _STDOUT_LOCK:
        if not isinstance(sys.stdout, _ThreadStdout):
            sys.stdout = _ThreadStdout(sys.stdout)
        proxy = sys.stdout
        proxy.threads.add(me)
    try:
        yield
    finally:
        with _STDOUT_LOCK:
            proxy.threads.discard(me)
            if not proxy.threads and sys.stdout is proxy:
                sys.stdout = proxy.real


def _visible(text: str) -> str:
    from .files import visible

    return visible(text)


def _inside(path, folder) -> bool:
    """Whether ``path`` is ``folder`` or under it (both made absolute, links not followed)."""
    import os

    path, folder = os.path.abspath(os.fsdecode(path)), os.path.abspath(os.fsdecode(folder))
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _environment_problem() -> str | None:
    """What the environment's settings make impossible, as the command line says it, or None: each
    NETCL_LITE_* variable read (the cache's folder, rerunning, the device and its compiler target),
    and the OpenCL device made, before a model is loaded or IN coded, so that a setting at fault is
    named as such, not as a fault of --model or IN."""
    import pyopencl as cl

    from .core.compiler_target import CompilerTargetError
    from .core.device import NoDeviceError, device, resolve_kind
    from .files import visible
    from .fingerprint import cache_root, rerun_forced

    from .core import forking

    if forking.forked_from is not None:             # a child forked from a process that used the device
        return forking.message()
    try:
        cache_root()
        rerun_forced()
        resolve_kind("auto")
        device()                                        # NETCL_LITE_POCL_CPU is read as it is made
    except ValueError as exc:                           # each names its variable
        return visible(str(exc))
    except (NoDeviceError, CompilerTargetError, cl.Error) as exc:
        return f"OpenCL: {visible(' '.join(str(exc).split()))[:600]}"
    return None


TERMINATION_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGXCPU", "SIGALRM", "SIGUSR1", "SIGUSR2", "SIGVTALRM")


def _exit_cleanly_on_termination() -> None:
    """Make every signal whose default action ends the process and that a user or a limit sends
    (``kill``, ``timeout``, a closed terminal, Ctrl-\\, ``ulimit -t``, an alarm, the user signals)
    end the command as an exception, not at once: the temporary file of a write in progress is
    removed as it unwinds, and the exit status is 128 + the signal's number, as the signal's own
    would be. SIGKILL cannot be caught; a fault (SIGSEGV, SIGBUS) is not a request to stop."""
    import signal

    from .files import deferrable

    @deferrable
    def terminated(signum, frame):
        raise SystemExit(128 + signum)

    for name in TERMINATION_SIGNALS:              # one the caller ignores (nohup, a background job) stays so
        if hasattr(signal, name) and signal.getsignal(getattr(signal, name)) is not signal.SIG_IGN:
            signal.signal(getattr(signal, name), terminated)
            _TERMINATION_HANDLERS[getattr(signal, name)] = terminated


#: the handlers :func:`_exit_cleanly_on_termination` installed, by signal number
_TERMINATION_HANDLERS: dict = {}


def _reclaim_termination_signals() -> None:
    """Install again the handlers :func:`_exit_cleanly_on_termination` installed: OpenCL's compiler
    (LLVM, as PoCL starts it) puts its own on SIGQUIT, SIGXCPU and SIGUSR1 (it would dump core or print
    and go on), under Python's back, so those would end the command without its cleanup."""
    import signal

    for signum, handler in _TERMINATION_HANDLERS.items():
        signal.signal(signum, handler)


if __name__ == "__main__":
    _exit_cleanly_on_termination()
    raise SystemExit(main())
