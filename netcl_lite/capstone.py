"""The language model that Chapter 9 trains, end to end: data, tokenizer, model, training run, measures.

Everything is fixed here, in one recipe: the text (the standard library's docstrings,
split by module), a byte-level BPE trained on the training split, a small Llama-shaped
:class:`~netcl_lite.nn.DecoderLM` and its :class:`~netcl_lite.train.TrainConfig`.

:func:`run` trains the model once and reuses the result while nothing that could change
it has changed: the run lives in a folder named by a hash of the recipe, the text, every
source file of ``netcl_lite`` and its kernels, the library versions and the OpenCL
device. The training is deterministic (no atomics, seeded windows), so the folder holds
exactly what running the recipe again would produce; any edit trains anew. The hash is
:func:`netcl_lite.fingerprint.key`, the key the site build uses too, so it covers the device's
compute units and compiler target and the variables that change results just as the build does.
The folder's ``done.json`` records the key the run was trained for and a SHA-256 of each file
that is loaded from it; a file that no longer matches, or a record of another key (a run folder
copied or renamed under this one's name) or of none, trains the run again. In a source checkout the folder is under
``.cache/`` in the checkout (a fresh clone trains), elsewhere under the user's cache;
``NETCL_LITE_CACHE`` overrides both.
"""

from __future__ import annotations

import bz2
import fcntl
import hashlib
import io
import json
import lzma
import math
import numbers
import os
import platform
import shutil
import stat
import statistics
import time
import warnings
import zipfile
import zlib
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import corpus, fingerprint
from .checks import int_in, not_masked, positive_int
from .core.device import manager
from .fingerprint import cache_root
from .files import CacheEntryError, folder_entry_error, kind_of, make_entry_folder, read_regular, replace_entry
from .nn import DecoderLM, LMConfig
from .text import BPETokenizer
from .train import TrainConfig, WindowLoader, eval_windows, evaluate, train

# --8<-- [start:recipe]
VOCAB_SIZE = 1024              # 256 bytes + 768 merges learned on the training split
HELD_OUT_FRACTION = 0.1        # of the modules for validation, and as many for test (by name hash)
DEDUP_MIN_CHARS = 20           # held-out lines this long that occur in training are dropped
EVAL_STRIDE = 32               # scored windows start every 32 tokens: after the first window,
                               # each prediction sees at least block_size - 32 tokens of context
CURVE_INTERVAL = 40            # steps between measures of the whole validation text in training

MODEL = dict(                  # LMConfig fields (transformers' LlamaConfig names)
    hidden_size=128,
    intermediate_size=320,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,     # grouped-query attention: 2 K/V heads serve 4 query heads
    max_position_embeddings=64,  # the context it trains on (RoPE could run longer, on distances never trained)
    tie_word_embeddings=True,
    initializer_range=0.05,    # initial weights' std (one comparison: benchmarks/results/capstone.md)
)

TRAINING = TrainConfig(
    batch_size=32,
    block_size=64,             # 32 windows x 64 tokens = 2,048 tokens per step
    max_steps=960,             # sized for TRAINING_BUDGET_SECONDS (benchmarks/training_budget.py checks it)
    learning_rate=6e-3,
    min_lr=0.0,
    decay="linear",            # warmup, then the peak held, then a straight line to min_lr ...
    decay_steps=282,           # ... over the last 282 steps (30% of the 940 after warmup)
    warmup_steps=20,
    weight_decay=0.1,
    beta1=0.9,
    beta2=0.95,
    grad_clip=1.0,
    eval_interval=100,
    eval_windows=64,           # 64 x 64 held-out tokens for the curve
    seed=0,
)
TRAINING_BUDGET_SECONDS = 300  # sizing target: training steps' seconds on the slowest test machine
# --8<-- [end:recipe]


def recipe() -> dict:
    """Every constant of the recipe above, as plain data (JSON-ready)."""
    return {"vocab": VOCAB_SIZE, "held_out": HELD_OUT_FRACTION, "dedup": DEDUP_MIN_CHARS,
            "eval_stride": EVAL_STRIDE, "curve_interval": CURVE_INTERVAL, "model": MODEL,
            "training": asdict(TRAINING)}


def recipe_hash() -> str:
    """A short hash of :func:`recipe`: what ``benchmarks/results/capstone_seeds.json`` is keyed by."""
    return hashlib.sha256(json.dumps(recipe(), sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Data:
    """The text, split by whole module into training, validation and test documents.

    ``validation_text`` and ``test_text`` are their documents joined, without the lines
    they share with the training text (:func:`netcl_lite.corpus.drop_repeated_lines`,
    ``DEDUP_MIN_CHARS``); ``validation_dropped``/``test_dropped`` are the lines taken out.
    Every choice of the recipe (and of a coder's settings) is made on validation, and
    the test split is measured once, for the result. Validation holds the modules that
    earlier versions of the recipe were tuned on; the test modules had been training text.

    ``held_out_documents``, ``held_out_text`` (joined, not de-duplicated),
    ``evaluation_text`` and ``dropped_lines`` are the validation split under the names
    it had when it was the only held-out side.
    """

    train_documents: dict
    validation_documents: dict
    test_documents: dict
    train_text: str
    validation_text: str
    test_text: str
    validation_dropped: tuple
    test_dropped: tuple

    @property
    def held_out_documents(self) -> dict:
        return self.validation_documents

    @property
    def held_out_text(self) -> str:
        return corpus.join(self.validation_documents)

    @property
    def evaluation_text(self) -> str:
        return self.validation_text

    @property
    def dropped_lines(self) -> tuple:
        return self.validation_dropped


@lru_cache(maxsize=1)
def data() -> Data:
    """The standard library's docstrings (:mod:`netcl_lite.corpus`), split by module name hash
    into training, validation and test documents (``HELD_OUT_FRACTION`` of the modules each),
    validation and test de-duplicated against training; computed once per process."""
    train_docs, valid_docs, test_docs = corpus.split_by_hash(corpus.stdlib_documents(),
                                                             (HELD_OUT_FRACTION, HELD_OUT_FRACTION))
    train_text = corpus.join(train_docs)
    valid, valid_dropped = corpus.drop_repeated_lines(corpus.join(valid_docs), train_text, DEDUP_MIN_CHARS)
    test, test_dropped = corpus.drop_repeated_lines(corpus.join(test_docs), train_text, DEDUP_MIN_CHARS)
    return Data(train_docs, valid_docs, test_docs, train_text, valid, test,
                tuple(valid_dropped), tuple(test_dropped))


def text_digest(d: Data | None = None) -> str:
    """A short SHA-256 of the training, validation and test texts (of :func:`data` by default): what the
    committed results in ``benchmarks/results/`` record, so a reader of one can check it was trained and
    scored on the text this Python's library gives now (the text depends on the Python version)."""
    d = data() if d is None else d
    text = d.train_text + "\0" + d.validation_text + "\0" + d.test_text
    return hashlib.sha256(text.encode()).hexdigest()[:16]


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
    """A hash of everything the run depends on: the recipe and ``text`` as the executed source,
    with the context of :func:`netcl_lite.fingerprint.key` for the device of ``queue`` (the
    library, the package versions, the device with its compute units, local memory and compiler
    target, and the variables that change results): one key function for the build and the run."""
    source = "capstone training run\n" + json.dumps(recipe(), sort_keys=True) + "\n" + text
    return fingerprint.key(source, shared=fingerprint.context(queue.device, fingerprint.RUN_PACKAGES))


#: the files of a run folder that :func:`run` loads; ``done.json`` holds the SHA-256 of each
RUN_FILES = ("config.json", "model.safetensors", "tokenizer.json", "log.json", "curve.json")


def run(queue=None, progress: bool | None = None) -> Run:
    """Train the recipe once (sized for a target of ``TRAINING_BUDGET_SECONDS`` of training steps on
    the slowest test machine) or load the identical earlier run.

    A stored run is loaded only when its ``done.json`` names this run's key and each of
    :data:`RUN_FILES` matches the digest it recorded; a missing, emptied or edited file (or a folder
    without ``done.json``), or a ``done.json`` of another key or of none (a run folder copied or renamed
    under this key, one kept from before runs recorded their key), trains the run again, with a warning
    naming the file."""
    queue = manager.default().queue if queue is None else queue
    d = data()
    key = run_key(queue, d.train_text + "\0" + d.held_out_text)
    root = cache_root() / "capstone"
    make_entry_folder(root, "Chapter 9's trained runs")
    folder = root / key
    with _lock_file(root / f"{key}.lock") as lock:
        _wait_for_lock(lock, root / f"{key}.lock")   # a second process waits for the first to finish training
        problem = _run_problem(folder, key)
        if problem is not None:
            if (folder / "done.json").exists():
                warnings.warn(f"capstone: {problem}; training the run again", stacklevel=2)
            _train_into(folder, d, queue, progress, key=key)
            problem = _run_problem(folder, key)
            if problem is not None:
                raise RuntimeError(f"capstone: the run just trained fails its own check: {problem}")
        tok = BPETokenizer.load(folder / "tokenizer.json")
        model = DecoderLM.from_pretrained(folder, queue=queue)
        log = _read_log(folder)
        train_ids, held_out_ids = _stored_ids(folder, tok, d)
    return Run(model, tok, d, train_ids, held_out_ids, log, folder)


def _wait_for_lock(lock, path: Path) -> None:
    """``flock`` the open lock file ``lock`` (at ``path``) exclusively: at once when no other process holds
    it, else after saying on standard error that this process waits for the one that does (training the
    default model, or reading it; one stopped with Ctrl-Z holds it until it goes on), then waiting."""
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    import sys

    from .files import shown_path

    if sys.stderr is not None:               # started with it closed (2>&-): wait without a word
        try:
            print(f"capstone: waiting for another process that holds {shown_path(path)} (training or reading "
                  f"Chapter 9's default model); a process stopped with Ctrl-Z holds it until it goes on",
                  file=sys.stderr, flush=True)
        except (OSError, ValueError):         # a standard error that cannot be written
            pass
    fcntl.flock(lock, fcntl.LOCK_EX)


def _lock_file(path: Path):
    """The lock file ``path`` open for :func:`fcntl.flock` (a file object): made if missing, never
    truncated (a lock is only locked, not written), opened without following a symlink and without
    waiting on a named pipe. Anything but a regular file there, a symlink or a folder included, is refused
    with a ``ValueError`` that names it: a link could name another file, a pipe would never be locked.
    A lock file that this user may only read (a cache shared by another user, or on a read-only file
    system) is opened for reading: ``flock`` needs no more."""
    import errno

    from .files import kind_of, shown_path

    flags = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    refusal = ("; it is the lock of Chapter 9's training run in the cache, where only a regular file belongs: "
               "remove it and run again")

    def refused() -> CacheEntryError:       # a ValueError, naming the lock (not the cache folder)
        if os.path.islink(path):             # O_NOFOLLOW: ELOOP (EMLINK on some systems)
            return CacheEntryError(f"{shown_path(path)} is {kind_of(path)}, which a lock is never opened through"
                                   f"{refusal}")
        return CacheEntryError(f"{shown_path(path)} is {kind_of(path)}, not a regular file{refusal}")

    writable = True
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o666)
    except OSError as exc:
        # EISDIR for a folder, ENXIO for a socket: the entry at fault, not the cache
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isfile(path)):
            raise refused() from None
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS) or not os.path.lexists(path):
            raise
        try:                                 # there, but not ours to write: reading is enough to lock it
            fd = os.open(path, os.O_RDONLY | flags)
            writable = False
        except OSError:
            if os.path.islink(path) or os.path.isdir(path):
                raise refused() from None
            raise exc from None              # the first refusal says why it could not be written
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise refused()
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "r+b" if writable else "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def _read_log(folder: Path) -> dict:
    """The run's ``log.json`` (its digest already matched ``done.json``'s): ``ValueError`` naming it when
    it is not a log's JSON (not a dict, or nested past the parser's depth)."""
    path = folder / "log.json"
    try:
        log = json.loads(read_regular(path, 256 << 20, "a run's log.json"))
    except RecursionError:
        log = None
    if not isinstance(log, dict):
        raise ValueError(f"{path} is not a training log (JSON of an object)")
    return log


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check_run_folder(folder: Path, key: str | None = None) -> str | None:
    """None when ``folder`` holds a finished run whose files match ``done.json``'s digests (and, for a
    ``key``, whose ``done.json`` says it was trained for that key), else what is wrong, naming the file."""
    done = folder / "done.json"
    if not done.is_file():
        if os.path.lexists(done):                # a named pipe, a folder, a dangling link: never opened
            return f"{done} is {kind_of(done)}, not a regular file (no run's record)"
        return f"{done} is missing (the run never finished)"
    try:
        record = json.loads(read_regular(done, 1 << 20, "a run's done.json"))
        recorded = record["files"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, RecursionError):
        return f"{done} is not a run's record (no digests of its files)"
    if key is not None and record.get("key") != key:
        if "key" not in record:
            return f"{done} records no key (kept from before runs recorded theirs, or copied from elsewhere)"
        return (f"{done} records the run of another key ({record['key']!r:.80}, not {key}): a run folder copied "
                f"or renamed under this one's name")
    for name in RUN_FILES:
        path = folder / name
        if not path.is_file():
            return f"{path} is {kind_of(path)}, not a regular file" if os.path.lexists(path) else f"{path} is missing"
        if not isinstance(recorded, dict) or recorded.get(name) != _sha256(path):
            return f"{path} does not match the digest in {done} (emptied, truncated or edited)"
    return None


def _run_problem(folder: Path, key: str | None = None) -> str | None:
    """:func:`_check_run_folder`'s answer, and then whether ``log.json``, which matches its digest, is a
    log :func:`run` can read (a ``done.json`` updated to match an edited log would pass the digests)."""
    problem = _check_run_folder(folder, key)
    if problem is None:
        try:
            _read_log(folder)
        except (OSError, ValueError) as exc:
            return str(exc)
    return problem


def run_digest(run: Run) -> str:
    """The SHA-256 of the run folder's ``done.json``, which holds the digests of the weights,
    tokenizer, config and log: what a result derived from the trained model is tied to."""
    return _sha256(run.directory / "done.json")


def _stored_ids(folder: Path, tok: BPETokenizer, d: Data) -> tuple[np.ndarray, np.ndarray]:
    """The training and validation token ids, encoded once per run and kept in its folder
    (the folder's name already covers the text and the tokenizer's code) with a digest of the
    ids and of the run they belong to; a file that does not match is encoded again, and so is one that
    cannot be read as the arrays it should hold (a damaged zip, or an array's header claiming more than
    the file holds: NumPy would allocate the claimed array first, a MemoryError that is not this
    machine's fault)."""
    path = folder / "ids.npz"
    tie = _sha256(folder / "done.json")
    if path.is_file():
        try:
            _check_ids_sizes(path)
            with np.load(path, allow_pickle=False) as stored:
                train_ids, held_out_ids, digest = stored["train"], stored["held_out"], str(stored["sha256"])
            if digest == _ids_digest(tie, train_ids, held_out_ids):
                return train_ids, held_out_ids
        except (OSError, ValueError, KeyError, EOFError, MemoryError, OverflowError, zipfile.BadZipFile,
                NotImplementedError, RuntimeError):    # zipfile: an unknown compression, a bad CRC or header
            pass
        warnings.warn(f"capstone: {path} does not match its digest; encoding the text again", stacklevel=3)
    train_ids, held_out_ids = _ids(tok, d.train_text), _ids(tok, d.validation_text)
    buffer = io.BytesIO()
    np.savez(buffer, train=train_ids, held_out=held_out_ids,
             sha256=np.array(_ids_digest(tie, train_ids, held_out_ids)))
    try:
        replace_entry(path, buffer.getvalue())
    except OSError:                              # this one entry at fault, not the cache folder: named
        refusal = folder_entry_error(path, "the run's encoded text")
        if refusal is not None:
            raise refusal from None
        raise
    return train_ids, held_out_ids


#: the arrays ``ids.npz`` holds
_IDS_ARRAYS = ("train", "held_out", "sha256")


def _check_ids_sizes(path: Path) -> None:
    """``ValueError`` unless ``path`` is a zip of :data:`_IDS_ARRAYS`' ``.npy`` files, each as long as its
    header says its array is (a header's shape alone makes ``np.load`` allocate the array, before any of
    it is read)."""
    from .files import npy_header

    with zipfile.ZipFile(path) as z:
        for name in _IDS_ARRAYS:
            info = z.getinfo(f"{name}.npy")          # KeyError when missing
            with z.open(info) as member:
                try:
                    shape, dtype = npy_header(member)
                except ValueError as err:
                    raise ValueError(f"{name}.npy: {err}") from None
                if dtype.hasobject:
                    raise ValueError(f"{name}.npy holds Python objects")
                need = math.prod(shape) * dtype.itemsize
                if need > info.file_size - member.tell():
                    raise ValueError(f"{name}.npy: its header claims {need:,} bytes, more than the file holds")


def _ids_digest(tie: str, *arrays: np.ndarray) -> str:
    h = hashlib.sha256(tie.encode())
    for a in arrays:
        a = np.ascontiguousarray(a, np.int64)
        h.update(len(a).to_bytes(8, "little") + a.tobytes())
    return h.hexdigest()


def _ids(tok: BPETokenizer, text: str) -> np.ndarray:
    return np.asarray(tok.encode_ordinary(text), np.int64)


#: evenly spread windows per text scored at each curve checkpoint for the generalization gap
GAP_WINDOWS = 128


def _train_into(folder: Path, d: Data, queue, progress, seed: int = 0, training: TrainConfig | None = None,
                curve: bool = True, key: str | None = None) -> None:
    """Train into ``folder``: the recipe, or with another ``seed`` (the initial weights and the
    windows' order) or ``training`` config (the benchmarks' seeds and recipe table). ``curve=False``
    skips the measures between steps (``curve.json`` then holds only the final one), for a benchmark
    that needs only the finished model: they train nothing, so the weights are the same. ``key``: the
    :func:`run_key` the run is trained for, recorded in ``done.json`` (:func:`run` loads a run only for
    the key it records)."""
    if os.path.islink(folder) or (os.path.lexists(folder) and not folder.is_dir()):
        os.unlink(folder)                    # the name itself: never train into (or remove) what a link names
    shutil.rmtree(folder, ignore_errors=True)
    began = time.perf_counter()
    tok = train_tokenizer(d.train_text)
    model = DecoderLM(model_config(tok), queue=queue, seed=seed)
    base = TRAINING if training is None else training
    config = base if seed == base.seed else replace(base, seed=seed)
    validation = _ids(tok, d.validation_text)
    train_ids = _ids(tok, d.train_text)
    points = []
    # The generalization gap: the same evenly spread windows of each text at every checkpoint, and
    # which training targets the loader has drawn so far (a loader over positions instead of ids
    # draws the same windows as train's, from the same seed).
    gap_train = spread_windows(train_ids, GAP_WINDOWS, config.block_size)
    gap_validation = spread_windows(validation, GAP_WINDOWS, config.block_size)
    drawn = np.zeros(len(train_ids), bool)
    replay = WindowLoader(np.arange(len(train_ids)), config.batch_size, config.block_size, config.seed)

    def measure(step: int, seconds: float) -> None:
        bpb = bits_per_byte(model, validation, tok, TRAINING.block_size, stride=EVAL_STRIDE)
        nats = token_losses(model, *gap_train[:2])
        seen = drawn[gap_train[2]]
        points.append({"step": step, "seconds": seconds, "bits_per_byte": bpb,
                       "validation_loss": float(token_losses(model, *gap_validation[:2]).mean()),
                       "train_loss": float(nats.mean()),
                       "train_loss_drawn": float(nats[seen].mean()) if seen.any() else None,
                       "train_loss_undrawn": float(nats[~seen].mean()) if not seen.all() else None,
                       "drawn": float(seen.mean())})

    def after_step(step: int, record: dict) -> None:     # outside the timed part of a step
        _, targets = replay.next_batch()
        drawn[targets.ravel()] = True
        if curve and step % CURVE_INTERVAL == 0 or step == config.max_steps:
            measure(step, record["seconds"])

    # Two steps of a throwaway model first: the kernels compile here, not in the timed steps.
    warm = replace(config, max_steps=2, warmup_steps=1, decay_steps=0, eval_interval=0)
    train(DecoderLM(model_config(tok), queue=queue, seed=seed + 1), train_ids, validation, warm,
          progress=False)
    if curve:
        measure(0, 0.0)
    load = os.getloadavg()[0]
    log = train(model, train_ids, validation, config, folder, progress=progress, callback=after_step)
    load = [load, os.getloadavg()[0]]
    tok.save(folder / "tokenizer.json")
    replace_entry(folder / "curve.json", (json.dumps(points, indent=1) + "\n").encode())
    files = {name: _sha256(folder / name) for name in RUN_FILES}
    record = {"seconds": time.perf_counter() - began, "train_seconds": log["train"][-1]["seconds"],
              "load_average": load, "files": files}
    if key is not None:
        record["key"] = key
    replace_entry(folder / "done.json", (json.dumps(record) + "\n").encode())


def training_load(run: Run) -> list | None:
    """The 1-minute load average of the machine when the run's training began and when it ended
    (``os.getloadavg``, as ``done.json`` recorded it; None for a run that did not record it): other
    work on the machine slows the training steps, so their seconds are read beside it."""
    done = json.loads(read_regular(run.directory / "done.json", 1 << 20, "a run's done.json"))
    return done.get("load_average")


def _integer_ids(ids) -> np.ndarray:
    """``ids`` as the plain array the window helpers cut: TypeError naming ``ids`` for a masked array
    (the values under its mask would be cut into windows) or an array of anything but integers (token
    ids are integers: floats or strings would only fail later, inside the model)."""
    not_masked("ids", ids)
    arr = np.asarray(ids)
    if arr.size and (arr.dtype.kind not in "iu" or arr.dtype == np.bool_):
        raise TypeError(f"ids must hold integer token ids, got an array of {arr.dtype}")
    if arr.size and arr.dtype.kind in "iu" and (arr.min() < 0 or arr.max() > np.iinfo(np.int64).max):
        # -100 is IGNORE, a target never scored, and NumPy reads -5 as vocab_size - 5
        raise ValueError(f"ids must hold token ids >= 0 (and within int64), got values from {arr.min()} "
                         f"to {arr.max()}")
    return arr


def spread_windows(ids, n: int, block_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` windows of ``block_size`` tokens spread evenly over ``ids``, the first at its start and
    the last at its end: (x, y, positions), y the targets (x shifted by one) and positions their
    indices in ``ids``.

    >>> x, y, at = spread_windows(np.arange(10, 20), n=3, block_size=4)
    >>> x.tolist(), at[:, 0].tolist()
    ([[10, 11, 12, 13], [12, 13, 14, 15], [15, 16, 17, 18]], [1, 3, 6])

    ``ids`` holds ``ids.size - block_size`` distinct windows; ``n`` may not ask for more.
    """
    ids = _integer_ids(ids)
    positive_int("n", n)
    positive_int("block_size", block_size)
    if ids.ndim != 1 or ids.size < block_size + 1:
        raise ValueError(f"ids must be 1-D with at least block_size + 1 = {block_size + 1} tokens, got shape {ids.shape}")
    if n > ids.size - block_size:        # checked before the (n, block_size) arrays are allocated
        raise ValueError(f"n={n} windows asked for, but {ids.size} ids hold only ids.size - block_size = "
                         f"{ids.size - block_size} distinct windows of block_size={block_size}")
    starts = np.linspace(0, ids.size - block_size - 1, n).astype(int)
    at = starts[:, None] + 1 + np.arange(block_size)
    return ids[at - 1], ids[at], at


def token_losses(model: DecoderLM, x, y, batch_size: int = 32) -> np.ndarray:
    """The cross-entropy in nats of each target ``y[b, t]`` given ``x[b, :t+1]`` (float64, shape of
    ``y``): the terms whose mean ``model.loss`` returns, kept apart so that any subset can be averaged.
    Every target must be a token id in [0, vocab_size): there is no ``IGNORE`` here (a loss for each target
    is asked for; :func:`sliding_windows`' targets are for ``model.loss(..., ignore_index=IGNORE)``), and
    NumPy would read -100 as token ``vocab_size - 100``."""
    not_masked("x", x)
    not_masked("y", y)
    x, y = np.asarray(x), np.asarray(y)
    positive_int("batch_size", batch_size)
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError(f"x and y must be 2-D of one shape, got {x.shape} and {y.shape}")
    vocab = model.config.vocab_size
    if y.size and (y.dtype.kind not in "iu" or y.min() < 0 or y.max() >= vocab):
        shown = (f"values from {y.min()} to {y.max()}" if y.dtype.kind in "iu" else f"an array of {y.dtype}")
        raise ValueError(f"y must hold target token ids in [0, {vocab}) (IGNORE targets are for model.loss's "
                         f"ignore_index, not token_losses), got {shown}")
    out = np.empty(y.shape)
    for i in range(0, len(x), batch_size):
        logits = model(x[i:i + batch_size]).numpy().astype(np.float64)
        logits -= logits.max(axis=-1, keepdims=True)
        target = np.take_along_axis(logits, y[i:i + batch_size, :, None], axis=-1)[..., 0]
        out[i:i + batch_size] = np.log(np.exp(logits).sum(axis=-1)) - target
    return out


def training_curve(run: Run) -> list[dict]:
    """The whole validation text's bits per byte (as :func:`measures` computes them) at step 0,
    every ``CURVE_INTERVAL`` steps and at the end, with the seconds of training steps so far
    (the time of these measures, and of everything before the first step, left out).

    Each point also holds the generalization gap's measures: the mean cross-entropy (nats per
    token) of ``GAP_WINDOWS`` windows spread evenly over the validation text
    (``validation_loss``) and over the training text (``train_loss``), the latter also over
    the targets some batch had drawn by then and over those none had (``train_loss_drawn``,
    ``train_loss_undrawn``; None when there are none), and ``drawn``, their share."""
    return json.loads((run.directory / "curve.json").read_text(encoding="utf-8"))


#: the most bytes a run's stored split ids (``ids-<split>.npy``) are read up to
_SPLIT_IDS_MAX_BYTES = 1 << 32


def split_ids(run: Run, split: str) -> np.ndarray:
    """The token ids of ``run.data``'s ``"validation"`` or ``"test"`` text, kept in the run's folder as
    ``ids-<split>.npy`` with the SHA-256 of its bytes and of what they are tied to (:func:`_split_tie`: the
    run's ``done.json``, the split and its text) in ``ids-<split>.sha256``, as ``ids.npz`` is kept: a file
    that does not match (emptied, truncated, edited, copied from another run, anything but a regular file)
    is encoded again, with a warning naming it, and replaced; one kept without a digest (by an older
    version) is encoded again quietly."""
    if split not in ("validation", "test"):
        raise ValueError(f"split must be 'validation' or 'test', got {split!r}")
    path = run.directory / f"ids-{split}.npy"
    record = run.directory / f"ids-{split}.sha256"
    text = getattr(run.data, f"{split}_text")
    tie = _split_tie(run, split, text)
    if os.path.lexists(path) or os.path.lexists(record):
        ids = _stored_split_ids(path, record, tie)
        if ids is not None:
            return ids
        if os.path.lexists(record):
            warnings.warn(f"capstone: {path} does not match its digest; encoding the text again", stacklevel=2)
    ids = _ids(run.tokenizer, text)
    buffer = io.BytesIO()
    np.save(buffer, ids)
    data = buffer.getvalue()
    for entry, content in ((path, data), (record, _split_ids_digest(tie, data).encode() + b"\n")):
        try:                                     # the ids first, then their digest: never a digest of other ids
            replace_entry(entry, content)
        except OSError:                          # this one entry at fault, not the cache folder: named
            refusal = folder_entry_error(entry, "the run's encoded text")
            if refusal is not None:
                raise refusal from None
            raise
    return ids


def _split_tie(run: Run, split: str, text: str) -> str:
    """What a run's stored split ids are tied to: the SHA-256 of its ``done.json`` (which holds those of
    its tokenizer and weights; a folder without one, such as a test's, is tied to none), the split, and
    the SHA-256 of the text encoded."""
    done = run.directory / "done.json"
    try:
        run_part = hashlib.sha256(read_regular(done, 1 << 20, "a run's done.json")).hexdigest()
    except (OSError, ValueError):                # none there (or no regular file): tied to the text alone
        run_part = "no done.json"
    return f"{run_part} ids-{split} {hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"


def _split_ids_digest(tie: str, data: bytes) -> str:
    """The SHA-256 of ``tie`` and of the ``.npy`` bytes ``data`` kept under it."""
    return hashlib.sha256(tie.encode() + b"\0" + data).hexdigest()


def _stored_split_ids(path: Path, record: Path, tie: str) -> np.ndarray | None:
    """The ids kept at ``path`` when its bytes match the digest in ``record`` for ``tie``, else None: read
    only as regular files (a named pipe never waited on, a device never read), and loaded only once they
    match, so a header claiming more than the file holds is never allocated."""
    try:
        data = read_regular(path, _SPLIT_IDS_MAX_BYTES, "a run's encoded text")
        recorded = read_regular(record, 1024, "the digest of a run's encoded text").decode("ascii").strip()
    except (OSError, ValueError):                # missing, no regular file, unreadable, not ASCII
        return None
    if recorded != _split_ids_digest(tie, data):
        return None
    try:
        ids = np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    return ids if ids.dtype == np.int64 and ids.ndim == 1 else None


def measures(run: Run) -> dict:
    """Every coder of the validation and test texts, in bits per byte, computed once per run.

    Choices are made on ``"validation"`` (PPMd's order, alone and primed); ``"test"``
    reports each coder once with those choices. Per split: ``model``, the trained model
    with windows of ``TRAINING.block_size`` every ``EVAL_STRIDE`` tokens
    (:func:`bits_per_byte`); ``model, windows side by side``, the same without overlap;
    ``unigram``/``bigram``, counted on the training tokens; ``alone``/``primed``,
    :func:`compressor_bits_per_byte` without and with the training text; ``bytes``, the
    text's length. Kept as ``measures.json`` in the run's folder, which is named by
    everything the numbers depend on.
    """
    stored = load_result(run, "measures.json")
    if stored is not None:
        return stored
    d, block, out, orders = run.data, TRAINING.block_size, {}, {}
    primers = {"alone": b"", "primed": d.train_text.encode("utf-8")}
    primer_sizes = {given: _compressed_sizes(head) for given, head in primers.items()}   # once, not per split
    for split in ("validation", "test"):
        text, ids = getattr(d, f"{split}_text"), split_ids(run, split)
        n_bytes = len(text.encode("utf-8"))
        coders = {}
        for given, head in primers.items():
            coders[given] = _coder_bits(text.encode("utf-8"), head, primer_sizes[given],
                                        orders.get(given, PPMD_ORDERS))
            orders.setdefault(given, [coders[given]["ppmd order"]])   # chosen on validation
        out[split] = {"bytes": n_bytes,
                      "model": bits_per_byte(run.model, ids, run.tokenizer, block, stride=EVAL_STRIDE),
                      "model, windows side by side": bits_per_byte(run.model, ids, run.tokenizer, block),
                      **ngram_bits_per_byte(run.train_ids, ids, run.model.config.vocab_size, n_bytes),
                      **coders}
    store_result(run, "measures.json", out)
    return out


def _result_digest(run: Run, result: dict) -> str:
    text = json.dumps(result, sort_keys=True)
    return hashlib.sha256(f"{run_digest(run)}\n{text}".encode()).hexdigest()


def load_result(run: Run, name: str) -> dict | None:
    """The result kept as ``name`` (a JSON file) in the run's folder when it was computed from this
    run's trained model (its ``run`` is :func:`run_digest`) and its numbers match the digest stored
    with them; else None (with a warning naming the file when one was there), so the caller
    computes it again. ``measures.json`` and the mixing measures are kept this way."""
    path = run.directory / name
    if not path.is_file():
        return None
    try:
        stored = json.loads(read_regular(path, 16 << 20, name))
        result = stored["measures"]
        ok = (stored["run"] == run_digest(run) and isinstance(result, dict)
              and stored["sha256"] == _result_digest(run, result))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, RecursionError):
        ok = False
    if not ok:
        warnings.warn(f"capstone: {path} was not computed from this run's model, or was edited; "
                      f"computing the measures again", stacklevel=3)
        return None
    return result


def store_result(run: Run, name: str, result: dict) -> None:
    """Keep ``result`` as ``name`` in the run's folder, tied to the run's weights (:func:`load_result`)."""
    record = {"run": run_digest(run), "sha256": _result_digest(run, result), "measures": result}
    replace_entry(run.directory / name, (json.dumps(record, indent=1) + "\n").encode())


def seeds_file() -> Path:
    """Where :func:`seed_results` reads from: the wheel carries the file beside this module; a source
    checkout has it in ``benchmarks/results/``. Raises ``FileNotFoundError`` when neither has it."""
    here = Path(__file__).resolve()
    for path in (here.with_name("capstone_seeds.json"),
                 here.parents[1] / "benchmarks" / "results" / "capstone_seeds.json"):
        if path.is_file():
            return path
    raise FileNotFoundError("capstone_seeds.json is missing: run python benchmarks/capstone_seeds.py")


def seed_results() -> dict:
    """What ``benchmarks/capstone_seeds.py`` measured: the recipe trained with several seeds, each
    scored on validation and test as :func:`measures` scores the page's run, with their mean and
    standard deviation, the machine, and the :func:`recipe_hash` they were made with
    (:func:`seeds_file`)."""
    return json.loads(seeds_file().read_text(encoding="utf-8"))


def machine(queue=None) -> str:
    """The CPU and the OpenCL device that timings ran on, for every printed timing: the CPU's
    model, the device, and the CPU PoCL compiles the kernels for."""
    queue = manager.default().queue if queue is None else queue
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from .core import compiler_target

    dev = queue.device
    target = compiler_target.target_of(dev)
    compiled = f", kernels compiled for {target}" if target else ""
    return (f"{cpu} ({os.cpu_count()} logical CPUs); OpenCL: {dev.name.strip()} on "
            f"{dev.platform.name.strip()}{compiled}")


# -- measures ---------------------------------------------------------------------------------------

IGNORE = -100                       # a target the loss leaves out (transformers' convention)


def sliding_windows(ids, block_size: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Windows of ``block_size`` tokens every ``stride`` tokens, with targets that score each
    token after the first exactly once.

    Window i starts at i·stride (the last one ends at the last token); its targets that an
    earlier window already scored are ``IGNORE``. So every target after the first window
    is predicted from at least ``block_size - stride`` tokens of context, where windows
    that do not overlap (``stride = block_size``) give the first targets of each window
    almost none.

    >>> x, y = sliding_windows(np.arange(9), block_size=4, stride=2)
    >>> x.tolist(), y.tolist()
    ([[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7]], [[1, 2, 3, 4], [-100, -100, 5, 6], [-100, -100, 7, 8]])
    """
    ids = _integer_ids(ids)
    positive_int("block_size", block_size)
    positive_int("stride", stride)
    if stride > block_size:
        raise ValueError(f"stride={stride} exceeds block_size={block_size}: tokens between windows would go unscored")
    if ids.ndim != 1 or ids.size < block_size + 1:
        raise ValueError(f"ids must be 1-D with at least block_size + 1 = {block_size + 1} tokens, got shape {ids.shape}")
    targets = ids.size - 1
    starts = list(range(0, targets - block_size + 1, stride))
    if starts[-1] + block_size < targets:
        starts.append(targets - block_size)
    starts = np.asarray(starts)
    offsets = starts[:, None] + np.arange(block_size)
    x, y = ids[offsets], ids[offsets + 1].copy()
    if y.dtype.kind == "u":                          # unsigned ids: targets in a type that holds IGNORE
        y = y.astype(np.int64)
    scored = np.concatenate([[0], starts[:-1] + block_size])       # targets scored before window i
    y[offsets < scored[:, None]] = IGNORE
    return x, y


def bits_per_byte(model: DecoderLM, ids, tokenizer: BPETokenizer, block_size: int, batch_size: int = 16,
                  stride: int | None = None) -> float:
    """Cross-entropy of ``ids`` in bits per byte of the text the predicted tokens spell.

    Every token after the first is predicted once, in windows of ``block_size``
    (:func:`sliding_windows`): ``stride=None`` takes them side by side, a smaller
    stride gives each prediction at least ``block_size - stride`` tokens of context
    at the cost of more forward passes.
    """
    if not isinstance(tokenizer, BPETokenizer):
        raise TypeError(f"tokenizer must be a BPETokenizer, got {type(tokenizer).__name__}")
    positive_int("batch_size", batch_size)
    if stride is None:
        nats, _ = evaluate(model, ids, block_size, batch_size)
        _, targets = eval_windows(ids, block_size)
        return nats / math.log(2) / len(tokenizer.decode_bytes(targets.ravel().tolist()))
    x, y = sliding_windows(ids, block_size, stride)
    nats = 0.0
    for i in range(0, len(x), batch_size):
        xb, yb = x[i:i + batch_size], y[i:i + batch_size]
        nats += float(model.loss(xb, yb, ignore_index=IGNORE).numpy()) * int((yb != IGNORE).sum())
    return nats / math.log(2) / len(tokenizer.decode_bytes(np.asarray(ids)[1:].tolist()))


#: the largest vocabulary :func:`ngram_bits_per_byte` counts (its tables are float64 of vocab_size entries each)
NGRAM_MAX_VOCAB = 1 << 24


def ngram_bits_per_byte(train_ids, held_ids, vocab_size: int, n_bytes: int) -> dict[str, float]:
    """Unigram and bigram models counted on the training ids, in bits per byte of the held-out text.

    Unigram: add-one counts. Bigram: Witten–Bell interpolation with the unigram,
    P(b | a) = (c(a, b) + t(a) · P(b)) / (c(a) + t(a)), t(a) = distinct successors of a.
    ``vocab_size`` is an int in [1, :data:`NGRAM_MAX_VOCAB`]: the counts are tables of that many entries.
    """
    vocab_size = int_in("vocab_size", vocab_size, 1, NGRAM_MAX_VOCAB + 1, "the counts are tables of that size")
    not_masked("train_ids", train_ids)
    not_masked("held_ids", held_ids)
    train_ids, held = np.asarray(train_ids), np.asarray(held_ids)
    for name, arr in (("train_ids", train_ids), ("held_ids", held)):
        if arr.ndim != 1 or arr.size < 2 or arr.dtype.kind not in "iu" or arr.min() < 0 or arr.max() >= vocab_size:
            raise ValueError(f"{name} must be a 1-D array of at least 2 token ids in [0, {vocab_size})")
    positive_int("n_bytes", n_bytes, "the held-out text's length in bytes")
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


COMPRESSORS = ("zlib", "bz2", "xz", "zstd", "brotli", "ppmd", "zpaq")
PPMD_ORDERS = range(2, 65)          # PPMd's context orders tried on the validation text
PPMD_MEMORY = 256 << 20             # bytes of model memory PPMd may use
COMPARE_EXTRA = "pip install 'netcl_lite[compare]'"   # pyppmd, zstandard, brotli, zpaq


def _import(name: str):
    """One of the ``[compare]`` extra's packages, or an ImportError that says how to install it."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError(f"the {name} package is missing: {COMPARE_EXTRA}") from e


def _compress(name: str, data: bytes, ppmd_order: int = 6) -> bytes:
    """``data`` coded by the classical coder ``name`` at its strongest settings."""
    if name == "zlib":
        return zlib.compress(data, 9)
    if name == "bz2":
        return bz2.compress(data, 9)
    if name == "xz":
        return lzma.compress(data, preset=9 | lzma.PRESET_EXTREME)
    if name == "zstd":           # level 22 with a 128 MiB window and long-distance matching
        zstd = _import("zstandard")
        params = zstd.ZstdCompressionParameters.from_level(22, window_log=27, enable_ldm=True)
        return zstd.ZstdCompressor(compression_params=params).compress(data)
    if name == "brotli":         # quality 11, a 16 MiB window
        return _import("brotli").compress(data, quality=11, lgwin=24)
    if name == "zpaq":           # -m5, one thread: one block, so the model sees all of the input
        return _import("zpaq").compress(data, level=5, threads=1)
    if name == "ppmd":
        return _import("pyppmd").compress(data, max_order=ppmd_order, mem_size=PPMD_MEMORY)
    raise ValueError(f"unknown coder {name!r}; choose one of {COMPRESSORS}")


def _decompress(name: str, blob: bytes, ppmd_order: int = 6) -> bytes:
    """The inverse of :func:`_compress`."""
    if name == "zlib":
        return zlib.decompress(blob)
    if name == "bz2":
        return bz2.decompress(blob)
    if name == "xz":
        return lzma.decompress(blob)
    if name == "zstd":
        return _import("zstandard").ZstdDecompressor().decompress(blob)
    if name == "brotli":
        return _import("brotli").decompress(blob)
    if name == "zpaq":
        return _import("zpaq").decompress(blob)
    if name == "ppmd":
        return _import("pyppmd").decompress(blob, max_order=ppmd_order, mem_size=PPMD_MEMORY)
    raise ValueError(f"unknown coder {name!r}; choose one of {COMPRESSORS}")


def _ppmd_bytes(data: bytes, primer: bytes, order: int) -> int:
    """Bytes PPMd writes while coding ``data`` right after ``primer`` (its end marker included)."""
    coder = _import("pyppmd").PpmdCompressor(max_order=order, mem_size=PPMD_MEMORY)
    if primer:
        coder.compress(primer)           # builds the statistics; its output is not charged
    return len(coder.compress(data)) + len(coder.flush())


def compressor_bits_per_byte(text: str, primer: str = "", ppmd_orders=PPMD_ORDERS) -> dict:
    """Bits per byte of ``text`` that each of :data:`COMPRESSORS` reaches at its strongest settings.

    With a ``primer`` (the training split), a coder is charged only for ``text`` after it
    has coded the primer: bits = 8 · (|C(primer + text)| − |C(primer)|), so it may copy
    from, and keep statistics of, the same text the model trained on. Alone, it learns
    from ``text`` as it goes. A coder remembers the primer only as far as its window
    reaches: zlib's 32 KiB, bz2's blocks of 900 kB; xz (64 MiB), zstd (128 MiB), brotli
    (16 MiB) and zpaq hold all of a primer of a few MB, and PPMd keeps statistics of every
    context up to its order. PPMd codes one stream, so it is charged the bytes it writes
    for ``text`` after coding the primer (the same count up to its few bytes of pending
    state). PPMd's order is the best of ``ppmd_orders`` on ``text`` (``"ppmd order"`` in
    the result, the smallest order on a tie): pass the order chosen on the validation
    text when ``text`` is the test text.
    """
    if not isinstance(text, str) or not text:
        raise ValueError("text must be a non-empty str")
    if not isinstance(primer, str):
        raise TypeError(f"primer must be a str (the training text, or '' for none), got {type(primer).__name__}")
    orders = list(ppmd_orders)
    if not orders or any(isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 2 <= k <= 64
                         for k in orders):
        raise ValueError(f"ppmd_orders must be a non-empty list of ints in 2..64, got {ppmd_orders!r}")
    head = primer.encode("utf-8")
    return _coder_bits(text.encode("utf-8"), head, _compressed_sizes(head), orders)


def _compressed_sizes(head: bytes) -> dict[str, int]:
    """|C(head)| for each coder but PPMd (which is charged its own output after ``head``); 0 for
    no primer."""
    return {name: len(_compress(name, head)) if head else 0 for name in COMPRESSORS if name != "ppmd"}


def _coder_bits(raw: bytes, head: bytes, head_sizes: dict[str, int], orders) -> dict:
    """:func:`compressor_bits_per_byte` of ``raw`` after ``head``, given ``head``'s compressed
    sizes (:func:`_compressed_sizes`), so that texts coded after the same primer compress it once."""
    out = {name: 8 * (len(_compress(name, head + raw)) - size) / len(raw) for name, size in head_sizes.items()}
    ppmd = {k: 8 * _ppmd_bytes(raw, head, k) / len(raw) for k in orders}
    out["ppmd order"] = min(ppmd, key=lambda k: (ppmd[k], k))
    out["ppmd"] = ppmd[out["ppmd order"]]
    return out


def coder_speeds(text: str, names=COMPRESSORS, repeats: int = 3, ppmd_order: int = 6, primer: str = "") -> dict:
    """Each coder's compress and decompress speed on ``text``, in bytes of ``text`` per second
    (the median of ``repeats`` interleaved rounds, the machine may be shared); each decompressed
    output is checked. With a ``primer``, each coder is timed as it codes ``text`` primed, on
    ``primer + text`` (a primed decoder decodes the primer's part too): the speed compares with
    a compressor that reads its own primer as it starts."""
    if not isinstance(text, str) or not text:
        raise ValueError("text must be a non-empty str")
    if not isinstance(primer, str):
        raise TypeError(f"primer must be a str (the text the coders are primed with), got {type(primer).__name__}")
    positive_int("repeats", repeats)
    raw = (primer + text).encode("utf-8")
    times = {name: ([], []) for name in names}
    for _ in range(repeats):
        for name in names:
            began = time.perf_counter()
            blob = _compress(name, raw, ppmd_order)
            middle = time.perf_counter()
            back = _decompress(name, blob, ppmd_order)
            times[name][0].append(middle - began)
            times[name][1].append(time.perf_counter() - middle)
            if back != raw:
                raise RuntimeError(f"{name} did not round-trip the text")
    size = len(text.encode("utf-8"))
    return {name: {"compress": size / statistics.median(c), "decompress": size / statistics.median(d)}
            for name, (c, d) in times.items()}


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
