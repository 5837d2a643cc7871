"""The language model that Chapter 9 trains, end to end: data, tokenizer, model, training run, measures.

Everything is fixed here, in one recipe: the text (the standard library's docstrings,
split by module), a byte-level BPE trained on the training split, a small Llama-shaped
:class:`~netcl_lite.nn.DecoderLM` and its :class:`~netcl_lite.train.TrainConfig`.

:func:`run` trains the model once and reuses the result while nothing that could change
it has changed: the run lives in a folder named by a hash of the recipe, the text, every
source file of ``netcl_lite`` and its kernels, the library versions and the OpenCL
device. The training is deterministic (no atomics, seeded windows), so the folder holds
exactly what running the recipe again would produce; any edit trains anew. In a source
checkout the folder is under ``.cache/`` in the checkout (a fresh clone trains), elsewhere
under the user's cache; ``NETCL_LITE_CACHE`` overrides both.
"""

from __future__ import annotations

import bz2
import fcntl
import hashlib
import json
import lzma
import math
import numbers
import shutil
import time
import zlib
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import corpus
from .core.device import manager
from .execution_cache import cache_root, device_description, library_sources
from .nn import DecoderLM, LMConfig
from .text import BPETokenizer
from .train import TrainConfig, eval_windows, evaluate, train

# --8<-- [start:recipe]
VOCAB_SIZE = 2048              # 256 bytes + 1,792 merges learned on the training split
HELD_OUT_FRACTION = 0.1        # of the modules, by a hash of their names

MODEL = dict(                  # LMConfig fields (transformers' LlamaConfig names)
    hidden_size=128,
    intermediate_size=320,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,     # grouped-query attention: 2 K/V heads serve 4 query heads
    max_position_embeddings=128,
    tie_word_embeddings=True,
    initializer_range=0.05,    # std of the initial weights (measured: 0.02 learns far slower here)
)

TRAINING = TrainConfig(
    batch_size=16,
    block_size=128,            # 16 windows x 128 tokens = 2,048 tokens per step
    max_steps=1000,
    learning_rate=6e-3,
    min_lr=6e-4,
    warmup_steps=20,
    weight_decay=0.1,
    beta1=0.9,
    beta2=0.95,
    grad_clip=1.0,
    eval_interval=100,
    eval_windows=32,
    seed=0,
)
# --8<-- [end:recipe]


@dataclass(frozen=True)
class Data:
    """The text, split by module: training and held-out documents, each joined into one string."""

    train_documents: dict
    held_out_documents: dict
    train_text: str
    held_out_text: str


@lru_cache(maxsize=1)
def data() -> Data:
    """The standard library's docstrings (:mod:`netcl_lite.corpus`), split by module into training
    and held-out documents; computed once per process."""
    train_docs, held_docs = corpus.split_documents(corpus.stdlib_documents(), HELD_OUT_FRACTION)
    return Data(train_docs, held_docs, corpus.join(train_docs), corpus.join(held_docs))


def train_tokenizer(text: str) -> BPETokenizer:
    """A byte-level BPE with ``VOCAB_SIZE`` tokens, trained on ``text`` (the training split)."""
    tok = BPETokenizer()
    tok.train_from_iterator([text], VOCAB_SIZE, progress=False)
    return tok


def model_config(tokenizer: BPETokenizer) -> LMConfig:
    """The recipe's model shape (``MODEL``) with the vocabulary size of ``tokenizer``."""
    return LMConfig(vocab_size=tokenizer.n_vocab, **MODEL)


@dataclass
class Run:
    """A finished training run: the trained model, its tokenizer, the token ids, the log."""

    model: DecoderLM
    tokenizer: BPETokenizer
    data: Data
    train_ids: np.ndarray
    held_out_ids: np.ndarray
    log: dict
    directory: Path


def run_key(queue, text: str) -> str:
    """A hash of everything the run depends on (see the module docstring)."""
    import pyopencl as cl

    h = hashlib.sha256()
    recipe = {"vocab": VOCAB_SIZE, "held_out": HELD_OUT_FRACTION, "model": MODEL, "training": asdict(TRAINING)}
    h.update(json.dumps(recipe, sort_keys=True).encode())
    h.update(hashlib.sha256(text.encode()).digest())
    for path in library_sources():
        h.update(path.name.encode() + path.read_bytes())
    h.update(f"{np.__version__} {cl.VERSION_TEXT} {device_description(queue.device)}".encode())
    return h.hexdigest()[:16]


def run(queue=None, progress: bool | None = None) -> Run:
    """Train the recipe once (two to three minutes on two CPU cores) or load the identical earlier run."""
    queue = manager.default().queue if queue is None else queue
    d = data()
    key = run_key(queue, d.train_text + "\0" + d.held_out_text)
    root = cache_root() / "capstone"
    root.mkdir(parents=True, exist_ok=True)
    folder = root / key
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)     # a second process waits for the first to finish training
        if not (folder / "done.json").is_file():
            _train_into(folder, d, queue, progress)
    tok = BPETokenizer.load(folder / "tokenizer.json")
    model = DecoderLM.from_pretrained(folder, queue=queue)
    log = json.loads((folder / "log.json").read_text(encoding="utf-8"))
    return Run(model, tok, d, _ids(tok, d.train_text), _ids(tok, d.held_out_text), log, folder)


def _ids(tok: BPETokenizer, text: str) -> np.ndarray:
    return np.asarray(tok.encode_ordinary(text), np.int64)


def _train_into(folder: Path, d: Data, queue, progress) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    began = time.perf_counter()
    tok = train_tokenizer(d.train_text)
    model = DecoderLM(model_config(tok), queue=queue, seed=0)
    log = train(model, _ids(tok, d.train_text), _ids(tok, d.held_out_text), TRAINING, folder, progress=progress)
    tok.save(folder / "tokenizer.json")
    (folder / "done.json").write_text(json.dumps({"seconds": time.perf_counter() - began,
                                                  "train_seconds": log["train"][-1]["seconds"]}) + "\n")


# -- measures ---------------------------------------------------------------------------------------

def bits_per_byte(model: DecoderLM, ids, tokenizer: BPETokenizer, block_size: int, batch_size: int = 16) -> float:
    """Held-out cross-entropy in bits per byte of the text the predicted tokens spell.

    Non-overlapping windows of ``block_size``: every token after the first is
    predicted once, from up to ``block_size`` tokens of context.
    """
    if not isinstance(tokenizer, BPETokenizer):
        raise TypeError(f"tokenizer must be a BPETokenizer, got {type(tokenizer).__name__}")
    nats, count = evaluate(model, ids, block_size, batch_size)
    _, targets = eval_windows(ids, block_size)
    n_bytes = len(tokenizer.decode_bytes(targets.ravel().tolist()))
    return nats / math.log(2) / n_bytes


def ngram_bits_per_byte(train_ids, held_ids, vocab_size: int, n_bytes: int) -> dict[str, float]:
    """Unigram and bigram models counted on the training ids, in bits per byte of the held-out text.

    Unigram: add-one counts. Bigram: Witten–Bell interpolation with the unigram,
    P(b | a) = (c(a, b) + t(a) · P(b)) / (c(a) + t(a)), t(a) = distinct successors of a.
    """
    train_ids, held = np.asarray(train_ids), np.asarray(held_ids)
    for name, arr in (("train_ids", train_ids), ("held_ids", held)):
        if arr.ndim != 1 or arr.size < 2 or arr.dtype.kind not in "iu" or arr.min() < 0 or arr.max() >= vocab_size:
            raise ValueError(f"{name} must be a 1-D array of at least 2 token ids in [0, {vocab_size})")
    if isinstance(n_bytes, bool) or not isinstance(n_bytes, numbers.Integral) or n_bytes < 1:
        raise ValueError(f"n_bytes must be an int >= 1 (the held-out text's length in bytes), got {n_bytes!r}")
    uni = (np.bincount(train_ids, minlength=vocab_size) + 1.0) / (train_ids.size + vocab_size)
    pairs = train_ids[:-1] * vocab_size + train_ids[1:]
    codes, counts = np.unique(pairs, return_counts=True)
    context = np.bincount(train_ids[:-1], minlength=vocab_size).astype(np.float64)
    types = np.bincount(codes // vocab_size, minlength=vocab_size).astype(np.float64)
    a, b = held[:-1], held[1:]
    found = np.searchsorted(codes, a * vocab_size + b)
    found = np.minimum(found, codes.size - 1)
    pair_count = np.where(codes[found] == a * vocab_size + b, counts[found], 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        bigram = np.where(context[a] > 0, (pair_count + types[a] * uni[b]) / (context[a] + types[a]), uni[b])
    first = -np.log2(uni[held[0]])
    return {"unigram": float(-np.log2(uni[held]).sum() / n_bytes),
            "bigram": float((first - np.log2(bigram).sum()) / n_bytes)}


def compressor_bits_per_byte(text: str) -> dict[str, float]:
    """Bits per byte that Python's compressors reach on ``text`` alone, at their strongest settings."""
    if not isinstance(text, str) or not text:
        raise ValueError("text must be a non-empty str")
    raw = text.encode("utf-8")
    sizes = {"zlib": len(zlib.compress(raw, 9)), "bz2": len(bz2.compress(raw, 9)),
             "lzma": len(lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME))}
    return {name: 8 * size / len(raw) for name, size in sizes.items()}


def step_flops(config: LMConfig, batch: int, block: int) -> dict[str, int]:
    """Floating-point operations of one training step, by part (a multiply-add counts 2).

    Matrix products: every projection and the LM head, forward, and twice that
    backward (the gradients of both operands). Attention: the allowed causal
    (query, key) pairs, T(T+1)/2 per head, at 4·d per pair forward (scores and
    weighted values) and 14·d backward (the flash kernels recompute the scores:
    6·d in the dQ pass, 8·d in the dK/dV pass). Norms, activations, the loss and
    AdamW (~10 per parameter) are left out: each is O(parameters or tokens · D).
    """
    c = config
    tokens, d, groups = batch * block, c.head_dim, c.num_key_value_heads
    per_token = c.num_hidden_layers * (2 * c.hidden_size ** 2 + 2 * c.hidden_size * groups * d
                                       + 3 * c.hidden_size * c.intermediate_size) + c.hidden_size * c.vocab_size
    pairs = c.num_hidden_layers * batch * c.num_attention_heads * block * (block + 1) // 2
    return {"matmul forward": 2 * tokens * per_token, "matmul backward": 4 * tokens * per_token,
            "attention forward": 4 * d * pairs, "attention backward": 14 * d * pairs}
