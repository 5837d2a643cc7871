"""Dynamic evaluation measured as the compressor predicts: the bits of every token of a text.

:func:`coded_bits` runs :mod:`netcl_lite.compression`'s prediction (its streams, cached decoding
steps and refills) with an :class:`~netcl_lite.adaptation.Adapter` driven in the order the
compressor's predictor drives it, and returns each token's cost. A module of its own, as
:mod:`netcl_lite.mixing` is: it reads both the compressor and the adaptation, and the
compressor may read the adaptation.
"""

from __future__ import annotations

import time

import numpy as np

from . import compression as cz
from .adaptation import AdaptConfig, Adapter, check_ids, check_model, copy_model
from .nn import DecoderLM
from .text import BPETokenizer


#: the least probability the range coder gives a token (constriction's Categorical, 24-bit precision,
#: perfect=False: every token keeps some): a token the model gives 0 costs compress about 24 bits, not inf
LEAST_PROBABILITY = 2.0 ** -24


def coded_bits(model: DecoderLM, tokenizer, ids, config: AdaptConfig | None = None, *,
               train_ids=None, state: dict | None = None) -> tuple[np.ndarray, dict]:
    """(bits of each token of ``ids``, what the adaptation did): ``-log2 p`` of every token as
    :func:`netcl_lite.compression.compress` with ``mix=False`` predicts it, ``p`` at least
    :data:`LEAST_PROBABILITY` as the coder's are (the same streams,
    cached decoding steps and refills, :func:`~netcl_lite.compression.make_predictor`), with
    dynamic evaluation under ``config`` (None: without; ``train_ids`` and ``state`` go to the
    :class:`~netcl_lite.adaptation.Adapter`, and without a config are refused by name: nothing would read them).

    After each step but the last, the predictor's ``advance`` takes the step's tokens, then
    ``Adapter.observe`` does; when that returns True (an update ran) and ``config.refill``,
    ``Adapter.refill`` recomputes the predictor's KV cache from its inputs. ``model`` is not
    changed: a copy adapts. The dict holds ``updates``, ``gradient_steps``, ``refills``,
    ``resets``, ``seconds`` (updates and refills), ``setup_seconds`` (the mean squares) and
    ``coding_seconds`` (the copy, the setup and the whole loop)."""
    check_model(model)
    if not isinstance(tokenizer, BPETokenizer):
        raise TypeError(f"tokenizer must be a netcl_lite.text.BPETokenizer, got {type(tokenizer).__name__}")
    if config is not None and not isinstance(config, AdaptConfig):
        raise TypeError(f"config must be an AdaptConfig or None, got {type(config).__name__}")
    if config is None:                               # no Adapter reads them: bits unadapted, silently
        for name, value in (("train_ids", train_ids), ("state", state)):
            if value is not None:
                raise ValueError(f"{name} is given but config is None, so nothing would adapt and {name} would be "
                                 f"ignored; pass an AdaptConfig to adapt, or leave {name} out")
    ids = check_ids("ids", ids, model.config.vocab_size, 1)
    began = time.perf_counter()
    streams = int(max(1, min(cz.STREAMS, ids.size // cz.MIN_SEGMENT)))
    lengths = cz.segments(ids.size, streams)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    twin = copy_model(model) if config is not None else model
    predictor = cz.make_predictor(twin, tokenizer, lengths, cz.kept_positions(model), False, np.zeros(0, np.int64))
    lock = cz.device_lock(twin)                      # the device's work, one thread at a time, as compress does
    adapter = None
    bits = np.empty(ids.size, np.float64)
    try:
        if config is not None:
            with lock:
                adapter = Adapter(twin, streams, int(predictor.next_input[0]), config, train_ids=train_ids,
                                  state=state, copy=False)
        for step in range(int(lengths[0])):
            p = predictor.probabilities()
            at = offsets[:p.shape[0]] + step
            tokens = ids[at]
            bits[at] = -np.log2(np.maximum(p[np.arange(tokens.size), tokens], LEAST_PROBABILITY))
            predictor.advance(tokens)
            last = step == int(lengths[0]) - 1       # nothing is left to predict with an update
            if adapter is not None and not last:
                with lock:
                    if adapter.observe(tokens) and config.refill:
                        adapter.refill(predictor.cache, predictor.window)
    finally:
        predictor.close()                            # its buffers go back whatever ended the loop
    info = {"updates": 0, "gradient_steps": 0, "refills": 0, "resets": 0, "seconds": 0.0, "setup_seconds": 0.0}
    if adapter is not None:
        info = {"updates": adapter.updates, "gradient_steps": adapter.gradient_steps, "refills": adapter.refills,
                "resets": adapter.resets, "seconds": adapter.seconds, "setup_seconds": adapter.setup_seconds}
    info["coding_seconds"] = time.perf_counter() - began
    return bits, info
