"""Chapter 9's model as a compressor on one split: real files against primed classical coders.

    python benchmarks/bench_compression.py [--model DIR] [--split test] [--zpaq] [--adapt] [--out ...]

With Chapter 9's trained model (:func:`netcl_lite.capstone.run`, or a run's folder given as
``--model``), the split's text is compressed with :func:`netcl_lite.compression.compress`:
``mix=False`` (the model alone), ``mix=True`` (the context mixer), and with ``--adapt`` also
``adapt=True`` (dynamic evaluation on top); each file is decompressed and compared with the
original, and every size is reported in bits per byte of the original, beside:

* the mixed mode's cross-entropy as the compressor predicts it (the same predictor, no coder),
  so the file's overhead over it shows (its header and the range coder's rounding);
* primed PPMd (``pyppmd``, variant I), at the order among 2-64 that is best on the validation split;
* primed xz (``lzma``, preset 9 extreme), and with ``--zpaq`` primed zpaq -m5, both through the
  ``zpaq`` package (``threads=1``, level 5) and through Debian's ``zpaq`` command (``a ... -m5
  -threads 1``, an archive of one file); each charged 8·(|C(train + text)| − |C(train)|).

Seconds are wall-clock seconds of a ``compress`` and a ``decompress`` call, each counting the
training ids afresh (``ngram.forget_primed_counts``), as a primed classical coder reads the
training text on every call; with ``--rounds N`` each mode is coded N times, the modes
interleaved round by round, the blobs of every round must be the same bytes, and the speeds
are medians (every round's seconds are kept). The JSON names the CPU, PoCL's target, the vector
lanes and the load average. The speeds alone, on a quiet machine:

    python benchmarks/bench_compression.py --adapt --rounds 3 --out benchmarks/results/compression_speed.json

``--speeds-only`` skips the cross-entropy pass and the classical coders: the files and their
seconds alone, e.g. to time two versions of the library one after the other on the validation split.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from netcl_lite import capstone, ngram
from netcl_lite import compression as cz

from bench_kernels import cpu_name  # noqa: E402  (benchmarks/ is the script's folder)
from mix_ablation import load_run  # noqa: E402

PPMD_ORDERS = (2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64)


def _primed(compress, text: bytes, primer: bytes) -> float:
    return 8 * (len(compress(primer + text)) - len(compress(primer))) / len(text)


def _zpaq_cli(data: bytes) -> int:
    """The size of Debian's zpaq archive of ``data`` as one file, -m5 on one thread."""
    with tempfile.TemporaryDirectory() as tmp:
        src, archive = Path(tmp) / "data", Path(tmp) / "data.zpaq"
        src.write_bytes(data)
        subprocess.run(["zpaq", "a", str(archive), str(src), "-m5", "-threads", "1"], check=True,
                       capture_output=True, cwd=tmp)
        return archive.stat().st_size


def cross_entropy(run: capstone.Run, ids: np.ndarray) -> float:
    """Σ −log2 p of ``ids`` under the mixed mode's predictions, as compress computes them."""
    lengths = cz.segments(ids.size, cz.stream_count(ids.size))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    predictor = cz.make_predictor(run.model, run.tokenizer, lengths, cz.kept_positions(run.model), True,
                                  run.train_ids)
    bits = 0.0
    try:
        for step in range(int(lengths[0])):
            p = predictor.probabilities()
            tokens = ids[offsets[:p.shape[0]] + step]
            bits -= float(np.log2(p[np.arange(tokens.size), tokens]).sum())
            predictor.advance(tokens)
    finally:
        predictor.close()
    return bits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="a Chapter 9 run's folder (default: capstone.run())")
    ap.add_argument("--split", choices=("test", "validation"), default="test")
    ap.add_argument("--zpaq", action="store_true", help="also primed zpaq -m5, package and command (minutes)")
    ap.add_argument("--adapt", action="store_true", help="also the mixed file with dynamic evaluation (minutes)")
    ap.add_argument("--rounds", type=int, default=1, help="code each mode this many times (medians; same blob)")
    ap.add_argument("--speeds-only", action="store_true", help="only the files and their seconds: no "
                    "cross-entropy pass, no classical coders (to compare two versions of the code, interleaved)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "compression.json"))
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {a.rounds}")
    run = load_run(a.model)
    model, tok, d = run.model, run.tokenizer, run.data
    text = getattr(d, f"{a.split}_text").encode("utf-8")
    train = d.train_text.encode("utf-8")
    n = len(text)
    out = {"split": a.split, "bytes": n, "device": {"cpu": cpu_name(), "arithmetic": cz.arithmetic(model)},
           "model": {"folder": Path(a.model).name if a.model else "capstone.run()",
                     "fingerprint": cz.model_fingerprint(model).hex()},
           "load average before": list(os.getloadavg()),
           "note": "seconds on a shared 2-core machine (the load averages before and after are recorded); each call counts the training ids",
           "rounds": a.rounds}
    modes = {"model only": dict(mix=False), "mixed": {}}
    if a.adapt:
        modes["mixed, adapting"] = dict(adapt=True)
    blobs = {key: None for key in modes}
    seconds = {key: {"compress": [], "decompress": []} for key in modes}
    for _ in range(a.rounds):
        for key, mode in modes.items():
            ngram.forget_primed_counts()
            began = time.perf_counter()
            blob = cz.compress(text, model, tok, primer=run.train_ids, **mode)
            mid = time.perf_counter()
            ngram.forget_primed_counts()
            back = cz.decompress(blob, model, tok, primer=run.train_ids)
            end = time.perf_counter()
            assert back == text, "the round trip failed"
            assert blobs[key] in (None, blob), f"{key}: the same input gave another blob"
            blobs[key] = blob
            seconds[key]["compress"].append(mid - began)
            seconds[key]["decompress"].append(end - mid)
            print(key, f"{mid - began:.2f} s, {end - mid:.2f} s", flush=True)
    for key, blob in blobs.items():
        comp, dec = (float(np.median(seconds[key][w])) for w in ("compress", "decompress"))
        out[key] = {"file bytes": len(blob), "header bytes": cz.read_header(blob)["end"],
                    "bits per byte": 8 * len(blob) / n, "compress s": comp, "decompress s": dec,
                    "compress kB/s": n / 1e3 / comp, "decompress kB/s": n / 1e3 / dec,
                    "rounds, s": seconds[key]}
        print(key, out[key], flush=True)
    if a.speeds_only:
        out["load average after"] = list(os.getloadavg())
        print(json.dumps(out, indent=1))
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
        return
    ids = cz.tokenize(text, tok)
    bits = cross_entropy(run, ids)
    out["mixed"]["cross-entropy, bits per byte"] = bits / n
    out["mixed"]["file / cross-entropy"] = 8 * out["mixed"]["file bytes"] / bits
    validation = d.validation_text.encode("utf-8")
    on_validation = {k: 8 * capstone._ppmd_bytes(validation, train, k) / len(validation) for k in PPMD_ORDERS}
    order = min(on_validation, key=on_validation.get)
    out["ppmd"] = {"order (chosen on validation)": order, "bits per byte": 8 * capstone._ppmd_bytes(text, train, order) / n}
    xz = lambda b: lzma.compress(b, preset=9 | lzma.PRESET_EXTREME)   # noqa: E731
    out["xz"] = {"bits per byte": _primed(xz, text, train)}
    if a.zpaq:
        import zpaq

        out["zpaq -m5"] = {"bits per byte": _primed(lambda b: zpaq.compress(b, level=5, threads=1), text, train)}
        if shutil.which("zpaq"):
            out["zpaq -m5, Debian's command"] = {"bits per byte": _primed(lambda b: b"\0" * _zpaq_cli(b), text, train)}
    for key in ("mixed", "mixed, adapting", "model only"):
        if key in out:
            for coder in ("ppmd", "xz", "zpaq -m5", "zpaq -m5, Debian's command"):
                if coder in out:
                    out[f"{key} / {coder}"] = out[key]["bits per byte"] / out[coder]["bits per byte"]
    out["load average after"] = list(os.getloadavg())
    print(json.dumps(out, indent=1))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
