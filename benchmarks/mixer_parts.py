"""The mixed mode's host work per part, in CPU time: Chapter 9's model predicts a split once (its
probabilities kept in a temporary file), then :class:`netcl_lite.context_mixing.ContextMixer` is
built (the primer's counting included) and fed them step by step, as the compressor feeds it,
each part's methods timed by the thread's CPU clock (what a loaded machine disturbs least).

    python benchmarks/mixer_parts.py [--model DIR] [--split validation] [--steps N] [--digests FILE] [--out ...]

To compare two checkouts of the library on one model, run this once with each on PYTHONPATH,
alternating, with ``--model`` naming the same run's folder; ``--digests FILE`` writes each step's
SHA-1 of the coded distributions the first time and compares with them afterwards, so a change
meant to keep the probabilities shows whether it kept every bit. The parts nest (``prepare``
holds the n-gram's ``predict``, which holds ``lookup`` and ``_chain``): their times overlap.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from netcl_lite import match, ngram
from netcl_lite import context_mixing as cm

from bench_kernels import cpu_name  # noqa: E402  (benchmarks/ is the script's folder)
from mixer_host_time import model_probabilities, parser, replay_inputs  # noqa: E402

#: (label prefix, owner, method names) of the parts timed
PARTS = (("mixer.", cm.ContextMixer, ("prepare", "predict", "update")),
         ("ngram.", ngram.NGram, ("predict", "update")), ("words.", ngram.WordNGram, ("predict", "update")),
         ("counts.", ngram._Counts, ("lookup", "add")), ("linear.", ngram.Mixer, ("mix", "update")),
         ("streams.", cm.StreamCache, ("predict", "update")), ("match.", match.MatchModel, ("predict", "update")),
         ("geometric.", cm.GeometricMixer, ("mix", "update")), ("sse.", cm.TreeSSE, ("__call__", "update")))


def _timed(seconds: dict, label: str, f):
    def timed(*args, **kwargs):
        began = time.thread_time()
        try:
            return f(*args, **kwargs)
        finally:
            seconds[label] = seconds.get(label, 0.0) + time.thread_time() - began
    return timed


def main() -> None:
    ap = parser(__doc__, "mixer_parts.json")
    ap.add_argument("--digests", help="a file of each step's digest: written if absent, else compared")
    a = ap.parse_args()
    run, ids, lengths, offsets, steps, vocab = replay_inputs(a)
    seconds: dict[str, float] = {}
    digests = []
    with tempfile.TemporaryDirectory() as tmp:
        kept = model_probabilities(run, ids, lengths, steps, os.path.join(tmp, "p.npy"))
        for prefix, owner, names in PARTS:
            for name in names:
                setattr(owner, name, _timed(seconds, prefix + name, getattr(owner, name)))
        ngram.forget_primed_counts()
        began = time.thread_time()
        mixer = cm.ContextMixer(run.train_ids, vocab, lengths, run.tokenizer.vocab)
        built = time.thread_time() - began
        p_model = np.empty((lengths.size, vocab))
        loop = 0.0
        for step in range(steps):
            p_model[...] = kept[step]
            active = lengths > step
            tokens = np.zeros(lengths.size, np.int64)
            n = int(active.sum())
            tokens[:n] = ids[offsets[active] + step]
            began = time.thread_time()
            p = mixer.predict(p_model)
            mixer.update(tokens, active)
            loop += time.thread_time() - began
            digests.append(hashlib.sha1(np.ascontiguousarray(p[:n]).tobytes()).hexdigest()[:16])
    same = None
    if a.digests:
        path = Path(a.digests)
        if path.is_file():
            before = json.loads(path.read_text())
            same = before[:steps] == digests
        else:
            path.write_text(json.dumps(digests))
    out = {"split": a.split, "steps": steps, "streams": int(lengths.size), "cpu": cpu_name(),
           "load average": list(os.getloadavg()), "mixer built, CPU s (the primer counted)": built,
           "loop, CPU ms per step": 1e3 * loop / steps,
           "CPU ms per step by part (nested)": {k: round(1e3 * v / steps, 3) for k, v in
                                                 sorted(seconds.items(), key=lambda kv: -kv[1])},
           "same digests as --digests": same}
    print(json.dumps(out, indent=1))
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
