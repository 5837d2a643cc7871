"""The mixed mode's host time alone: Chapter 9's model predicts a split once (its probabilities
kept in a temporary file), then :class:`netcl_lite.context_mixing.ContextMixer` is fed them step
by step, as the compressor feeds it, and timed, with each part's share from cProfile.

    python benchmarks/mixer_host_time.py [--model DIR] [--split validation] [--steps N] [--out ...]

It reports milliseconds per step (32 streams), the mixed cross-entropy in bits per byte (so a
change that should keep the coded probabilities can be checked: the same bits), and the
cumulative seconds of each part's predict and update. The seconds are wall-clock on whatever
machine runs it: compare two versions only in one session, interleaved.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import tempfile
import time
from pathlib import Path

import numpy as np

from netcl_lite import capstone
from netcl_lite import compression as cz
from netcl_lite.context_mixing import ContextMixer

from bench_kernels import cpu_name  # noqa: E402  (benchmarks/ is the script's folder)
from mix_ablation import load_run  # noqa: E402

#: the parts whose cumulative time is reported: (file suffix, function name)
PARTS = (("ngram.py", "predict"), ("ngram.py", "update"), ("ngram.py", "mix"), ("ngram.py", "lookup"),
         ("ngram.py", "_chain"), ("context_mixing.py", "mix"), ("context_mixing.py", "update"),
         ("context_mixing.py", "__call__"), ("context_mixing.py", "predict"), ("match.py", "predict"),
         ("match.py", "update"))


def model_probabilities(run, ids: np.ndarray, lengths: np.ndarray, steps: int, path: str) -> np.ndarray:
    """The model's distributions (steps, streams, vocab) for the first ``steps`` coding steps of
    ``ids`` in streams of ``lengths``, as the compressor computes them, in a memory-mapped file at
    ``path`` (a finished stream's rows: the first stream's, any distribution)."""
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    kept = np.lib.format.open_memmap(path, "w+", np.float64, (steps, lengths.size, run.model.config.vocab_size))
    predictor = cz.make_predictor(run.model, run.tokenizer, lengths, cz.kept_positions(run.model), False,
                                  run.train_ids)
    try:
        for step in range(steps):
            p = predictor.probabilities()
            kept[step] = p[:1]
            kept[step, :p.shape[0]] = p
            predictor.advance(ids[offsets[:p.shape[0]] + step])
    finally:
        predictor.close()
    return kept


def parser(doc: str, out_name: str) -> argparse.ArgumentParser:
    """The arguments of a replay of the mixer: --model, --split, --steps, --out (results/``out_name``)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--model", help="a Chapter 9 run's folder (default: capstone.run())")
    ap.add_argument("--split", choices=("validation", "test"), default="validation")
    ap.add_argument("--steps", type=int, default=0, help="only the first N steps (0: all)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / out_name))
    return ap


def replay_inputs(a: argparse.Namespace):
    """(the run, the split's ids, the streams' lengths and offsets, the steps replayed, the vocabulary) of ``a``."""
    run = load_run(a.model)
    ids = capstone.split_ids(run, a.split)
    lengths = cz.segments(ids.size, cz.stream_count(ids.size))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return run, ids, lengths, offsets, min(a.steps or int(lengths[0]), int(lengths[0])), run.model.config.vocab_size


def main() -> None:
    a = parser(__doc__, "mixer_host_time.json").parse_args()
    run, ids, lengths, offsets, steps, vocab = replay_inputs(a)
    with tempfile.TemporaryDirectory() as tmp:
        kept = model_probabilities(run, ids, lengths, steps, os.path.join(tmp, "p.npy"))
        mixer = ContextMixer(run.train_ids, vocab, lengths, run.tokenizer.vocab)
        coded = np.zeros((steps, lengths.size))

        def replay():
            for step in range(steps):
                active = lengths > step
                tokens = np.zeros(lengths.size, np.int64)
                tokens[:int(active.sum())] = ids[offsets[active] + step]
                p = mixer.predict(np.array(kept[step]))
                coded[step] = p[np.arange(lengths.size), tokens]
                mixer.update(tokens, active)

        profile = cProfile.Profile()
        began = time.perf_counter()
        profile.runcall(replay)
        seconds = time.perf_counter() - began
    live = lengths[None, :] > np.arange(steps)[:, None]
    bits = float(-np.log2(coded[live]).sum())
    n_bytes = len(run.tokenizer.decode_bytes(ids[np.concatenate([np.arange(o, o + min(n, steps))
                                                                  for o, n in zip(offsets, lengths)])].tolist()))
    stats = pstats.Stats(profile).stats
    parts = {f"{f}:{line} {name}": round(v[3], 3) for (path, line, name), v in sorted(stats.items())
             for f, fn in PARTS if path.endswith(f) and name == fn}          # line: which class's method
    out = {"split": a.split, "steps": steps, "streams": int(lengths.size), "cpu": cpu_name(),
           "load average": list(os.getloadavg()), "seconds (profiled)": seconds,
           "ms per step (profiled)": 1e3 * seconds / steps, "bits per byte": bits / n_bytes,
           "cumulative seconds by part": parts}
    print(json.dumps(out, indent=1))
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
