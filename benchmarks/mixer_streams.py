"""The mixed mode's cost and bits against the number of streams coded side by side: for each count,
Chapter 9's model predicts the split in that many streams (its probabilities kept in a temporary
file, the process's CPU seconds counted), then :class:`netcl_lite.context_mixing.ContextMixer` is
fed them step by step, as the compressor feeds it, timed by the thread's CPU clock, and the coded
tokens' probabilities give the mixed cross-entropy in bits per byte (the file is within 0.2% of
it, ``capstone.md``).

    python benchmarks/mixer_streams.py [--model DIR] [--split validation] [--streams 32 48 64] [--rounds N] [--out ...]

With ``--rounds N`` (N > 0) it also times whole ``compress`` and ``decompress`` calls (mixed,
each counting the training ids afresh) with ``compression.STREAMS`` set to each count, the counts
interleaved round by round: wall-clock and process CPU seconds, and each file's size.

More streams share each step's fixed host work among more tokens, and start more of them from
little context. The CPU seconds are the process's (the model, with PoCL's worker threads) and the
mixer thread's: on a loaded machine compare them within one run only.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from netcl_lite import capstone, ngram
from netcl_lite import compression as cz
from netcl_lite.context_mixing import ContextMixer

from bench_kernels import cpu_name  # noqa: E402  (benchmarks/ is the script's folder)
from mix_ablation import load_run  # noqa: E402
from mixer_host_time import model_probabilities, parser  # noqa: E402


def one_count(run, ids: np.ndarray, streams: int, n_bytes: int, folder: str) -> dict:
    """The model's and the mixer's CPU seconds and the mixed bits per byte with ``streams`` streams."""
    lengths = cz.segments(ids.size, max(1, min(streams, ids.size // cz.MIN_SEGMENT)))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    steps, vocab = int(lengths[0]), run.model.config.vocab_size
    began = time.process_time()
    kept = model_probabilities(run, ids, lengths, steps, os.path.join(folder, f"p{streams}.npy"))
    model_cpu = time.process_time() - began
    ngram.forget_primed_counts()
    began = time.thread_time()
    mixer = ContextMixer(run.train_ids, vocab, lengths, run.tokenizer.vocab)
    built = time.thread_time() - began
    p_model = np.empty((lengths.size, vocab))
    bits, loop = 0.0, 0.0
    for step in range(steps):
        p_model[...] = kept[step]
        active = lengths > step
        n = int(active.sum())
        tokens = np.zeros(lengths.size, np.int64)
        tokens[:n] = ids[offsets[active] + step]
        began = time.thread_time()
        p = mixer.predict(p_model)
        mixer.update(tokens, active)
        loop += time.thread_time() - began
        bits -= float(np.log2(p[np.arange(n), tokens[:n]]).sum())
    del kept
    return {"streams": int(lengths.size), "steps": steps, "bits per byte (mixed cross-entropy)": bits / n_bytes,
            "model, process CPU s": model_cpu, "mixer built, CPU s": built, "mixer loop, CPU s": loop,
            "mixer loop, CPU ms per step": 1e3 * loop / steps,
            "model + mixer CPU, kB/s": n_bytes / 1e3 / (model_cpu + built + loop)}


def whole_calls(run, data: bytes, counts: list[int], rounds: int) -> dict:
    """Wall and process CPU seconds of ``compress`` and ``decompress`` (mixed) with each stream count."""
    out = {str(c): {"compress wall s": [], "compress CPU s": [], "decompress wall s": [], "decompress CPU s": []}
           for c in counts}
    kept = cz.STREAMS
    try:
        cz.STREAMS = counts[0]
        cz.compress(data, run.model, run.tokenizer)      # untimed: a process's first call touches its memory first
        for _ in range(rounds):
            for c in counts:
                cz.STREAMS = c
                row = out[str(c)]
                ngram.forget_primed_counts()
                wall, cpu = time.perf_counter(), time.process_time()
                blob = cz.compress(data, run.model, run.tokenizer)
                row["compress wall s"].append(time.perf_counter() - wall)
                row["compress CPU s"].append(time.process_time() - cpu)
                ngram.forget_primed_counts()
                wall, cpu = time.perf_counter(), time.process_time()
                back = cz.decompress(blob, run.model, run.tokenizer)
                row["decompress wall s"].append(time.perf_counter() - wall)
                row["decompress CPU s"].append(time.process_time() - cpu)
                if back != data:
                    raise AssertionError(f"{c} streams: the file does not decode to its input")
                row["file bytes"] = len(blob)
                print(c, json.dumps({k: v[-1] if isinstance(v, list) else v for k, v in row.items()}), flush=True)
    finally:
        cz.STREAMS = kept
    for row in out.values():
        for k in [k for k in row if k.endswith(" s")]:
            row[k.replace(" s", " kB/s (median)")] = len(data) / 1e3 / float(np.median(row[k]))
    return out


def main() -> None:
    ap = parser(__doc__, "mixer_streams.json")
    ap.add_argument("--streams", type=int, nargs="+", default=[32, 48, 64])
    ap.add_argument("--rounds", type=int, default=0, help="also time whole calls, this many interleaved rounds")
    ap.add_argument("--no-replay", action="store_true", help="only the whole calls")
    a = ap.parse_args()
    run = load_run(a.model)
    ids = capstone.split_ids(run, a.split)
    n_bytes = len(run.tokenizer.decode_bytes(ids.tolist()))
    out = {"split": a.split, "bytes": n_bytes, "cpu": cpu_name(), "load average before": list(os.getloadavg()),
           "note": "CPU seconds on a shared 2-core machine; compare counts within one run", "counts": []}
    if not a.no_replay:
        # untimed: a process's first mixer touches its memory first (page faults), which later ones reuse
        ContextMixer(run.train_ids, run.model.config.vocab_size, cz.segments(ids.size, cz.stream_count(ids.size)),
                     run.tokenizer.vocab)
        with tempfile.TemporaryDirectory() as tmp:
            for streams in a.streams:
                row = one_count(run, ids, streams, n_bytes, tmp)
                print(json.dumps(row), flush=True)
                out["counts"].append(row)
    if a.rounds > 0:
        out["whole calls"] = whole_calls(run, run.tokenizer.decode_bytes(ids.tolist()), a.streams, a.rounds)
    out["load average after"] = list(os.getloadavg())
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
