"""How much each technique of the compressor's mix is worth, on Chapter 9's trained model.

:func:`ablation` takes :mod:`netcl_lite.compression`'s prediction apart: the model alone, then
the mix with one technique of :mod:`netcl_lite.context_mixing` added per row, then dynamic
evaluation (:mod:`netcl_lite.adaptation`), each as the cross-entropy the compressor's file
would reach on a held-out split of :func:`netcl_lite.capstone.data`. A module of its own: it
reads the capstone (the run), the compressor (its streams and predictor) and the mixer, and the
compressor reads the capstone.
"""

from __future__ import annotations

import numpy as np

from . import capstone
from . import compression as cz
from .adaptation import AdaptConfig
from .context_mixing import ContextMixer

_ALL = ("geometric", "sse", "match", "words", "streams", "bias")

#: the rows: (name, the mixer's techniques (None: the model alone), dynamic evaluation); each
#: "+" row adds one technique to the row above, each "without" row leaves one out of the whole mix
ROWS = (
    ("the model alone", None, False),
    ("linear mix: the model, the n-gram after orders 1, 2, 4 and 8, the cache", (), False),
    ("+ geometric mixing in the log domain", ("geometric",), False),
    ("+ secondary estimation (APM on the vocabulary's tree)", ("geometric", "sse"), False),
    ("+ match model (each order's last successor, the longest match)", ("geometric", "sse", "match"), False),
    ("+ word n-gram", ("geometric", "sse", "match", "words"), False),
    ("+ each stream's own recent tokens", ("geometric", "sse", "match", "words", "streams"), False),
    ("+ bias per previous token", ("geometric", "sse", "match", "words", "streams", "bias"), False),
    ("the model alone, with dynamic evaluation", None, True),
    ("+ dynamic evaluation (the whole mix)", _ALL, True),
    *((f"the whole mix without {name}", tuple(t for t in _ALL if t != left), False) for left, name in (
        ("sse", "secondary estimation"), ("match", "the match model"), ("words", "the word n-gram"),
        ("streams", "each stream's own recent tokens"), ("bias", "the bias per previous token"))),
)


def ablation(run: capstone.Run, split: str = "validation") -> dict:
    """Bits per byte of ``split`` under each of :data:`ROWS`: the model's predictions exactly
    as :func:`netcl_lite.compression.compress` computes them (parallel streams of cached decode
    steps, the same predictor), then each mix fed those predictions step by step, as the
    compressor's mixed mode is; the rows with dynamic evaluation run the model once more,
    adapting as the compressor does. These are cross-entropies: the file adds its header and
    the range coder's few bytes. Kept as ``ablation-<split>.json`` in the run's folder."""
    if split not in ("validation", "test"):
        raise ValueError(f"split must be 'validation' or 'test', got {split!r}")
    kept_as = f"ablation-{split}.json"
    stored = capstone.load_result(run, kept_as)
    if stored is not None and list(stored) == [name for name, _, _ in ROWS]:
        return stored
    ids = capstone.split_ids(run, split)
    bits = {}
    for adapt in (False, True):
        rows = [(name, techniques) for name, techniques, a in ROWS if a == adapt]
        bits.update(_coded_bits(run, ids, rows, adapt))
    n_bytes = len(getattr(run.data, f"{split}_text").encode("utf-8"))
    out = {name: bits[name] / n_bytes for name, _, _ in ROWS}
    capstone.store_result(run, kept_as, out)
    return out


def _coded_bits(run: capstone.Run, ids: np.ndarray, rows, adapt: bool) -> dict:
    """Σ −log2 p of ``ids`` under each row's prediction, one pass of the model for all rows."""
    lengths = cz.segments(ids.size, cz.stream_count(ids.size))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    pieces = run.tokenizer.vocab
    vocab = run.model.config.vocab_size
    mixers = {name: ContextMixer(run.train_ids, vocab, lengths, pieces, techniques)
              for name, techniques in rows if techniques is not None}
    predictor = cz.make_predictor(run.model, run.tokenizer, lengths, cz.kept_positions(run.model), False,
                                  run.train_ids, adapt=AdaptConfig() if adapt else None)
    bits = dict.fromkeys((name for name, _ in rows), 0.0)
    try:
        for step in range(int(lengths[0])):
            p_model = predictor.probabilities()
            n = p_model.shape[0]
            tokens = ids[offsets[:n] + step]
            full = np.zeros(lengths.size, np.int64)
            full[:n] = tokens
            model_full = np.repeat(p_model[:1], lengths.size, axis=0)     # finished streams: any distribution
            model_full[:n] = p_model
            for name, techniques in rows:
                if techniques is None:
                    p = p_model
                else:
                    p = mixers[name].predict(model_full)[:n]
                    mixers[name].update(full, predictor.active)
                bits[name] -= float(np.log2(p[np.arange(n), tokens]).sum())
            predictor.advance(tokens)
    finally:
        predictor.close()
    return bits
