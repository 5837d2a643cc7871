"""How much each part of the compressor's mix is worth, on Chapter 9's trained model.

:func:`mixing_measures` takes :mod:`netcl_lite.compression`'s prediction apart: the model
alone, an n-gram counted on the training text (adaptive or not, of order K), and the two
mixed by the compressor's online mixer, each as a cross-entropy on a held-out split of
:func:`netcl_lite.capstone.data`. A module of its own: it reads both the capstone (the run)
and the compressor (its streams, n-gram and mixer), and the compressor reads the capstone.
"""

from __future__ import annotations


import numpy as np

from . import capstone
from . import compression as cz
from .ngram import Mixer, NGram

MIXES = {                           # name: (n-gram order K, counts grow as the text is coded, mixed)
    "the model alone": (None, False, False),
    "n-gram from the training counts only (K = 4)": (4, False, False),
    "the same, mixed with the model": (4, False, True),
    "adaptive n-gram alone (K = 4)": (4, True, False),
    "adaptive, mixed, K = 4": (4, True, True),
    "adaptive, mixed, K = 8": (8, True, True),
}


def mixing_measures(run: capstone.Run, split: str = "test") -> dict:
    """Bits per byte of ``split`` under each of :data:`MIXES`: the model's predictions exactly as
    :func:`netcl_lite.compression.compress` computes them (parallel streams of cached decode
    steps), an n-gram of order K counted on the training ids (:class:`~netcl_lite.ngram.NGram`),
    adaptive or not (counting every coded token, as the compressor does), and the two mixed by
    the compressor's online mixer (:class:`~netcl_lite.ngram.Mixer`: the model, the n-gram's
    distributions after several orders, a cache model and its final one). The mixed K = 8 row is
    the compressor's own mix. These are cross-entropies; the compressor's file adds the
    coder's overhead. Kept as ``mixing-<split>.json`` in the run's folder."""
    if split not in ("validation", "test"):
        raise ValueError(f"split must be 'validation' or 'test', got {split!r}")
    kept_as = f"mixing-{split}.json"
    stored = capstone.load_result(run, kept_as)
    if stored is not None:
        return stored
    ids = capstone.split_ids(run, split)
    vocab, primer = run.model.config.vocab_size, run.train_ids
    lengths = cz.segments(ids.size, int(max(1, min(cz.STREAMS, ids.size // cz.MIN_SEGMENT))))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    model = cz.make_predictor(run.model, run.tokenizer, lengths, cz.kept_positions(run.model), False, primer)
    ngrams = {k: NGram(primer, vocab, lengths.size, orders=k[0]) for k in {v[:2] for v in MIXES.values() if v[0]}}
    mixers = {name: Mixer(k) for name, (k, _, mixed) in MIXES.items() if mixed}
    bits = dict.fromkeys(MIXES, 0.0)
    for step in range(int(lengths[0])):
        p_model = model.probabilities()
        rows = p_model.shape[0]
        tokens = ids[offsets[:rows] + step]
        active = model.active
        full = np.zeros(lengths.size, np.int64)
        full[:rows] = tokens
        predicted = {key: (*ng.predict(), list(ng.snapshots)) for key, ng in ngrams.items()}
        for name, (k, adaptive, mixed) in MIXES.items():
            if k is None:
                p = p_model
            else:
                q, reached, total, snapshots = predicted[(k, adaptive)]
                p = q[:rows]
                if mixed:
                    pm = np.zeros_like(q)
                    pm[:rows] = p_model
                    p_all = mixers[name].mix([pm, *snapshots, q], reached, total)
                    mixers[name].update(full, p_all, active)
                    p = p_all[:rows]
            bits[name] -= float(np.log2(p[np.arange(rows), tokens]).sum())
        for (k, adaptive), ng in ngrams.items():
            if adaptive:
                ng.update(full, active)
            else:                       # the context moves on; the counts stay the training text's
                r = np.flatnonzero(active)
                ng.history[r] = np.concatenate([ng.history[r, 1:], full[r, None]], axis=1)
                ng.seen[r] += 1
        model.advance(tokens)
    n_bytes = len(getattr(run.data, f"{split}_text").encode("utf-8"))
    out = {name: b / n_bytes for name, b in bits.items()}
    capstone.store_result(run, kept_as, out)
    return out
