"""Chapter 9's model as a compressor, on the test split: real files against primed classical coders.

    python benchmarks/bench_compression.py [--model DIR] [--split test] [--zpaq] [--out benchmarks/results/compression.json]

With Chapter 9's trained model (:func:`netcl_lite.capstone.run`, or a run's folder given as
``--model``), the split's text (``capstone.data().test_text`` by default) is compressed with
:func:`netcl_lite.compression.compress` twice, ``mix=False`` (the model alone) and ``mix=True``
(mixed with the adaptive n-gram), each file is decompressed and compared with the original,
and every size is reported in bits per byte of the original, beside:

* the model's own cross-entropy on the same ids (:func:`netcl_lite.capstone.bits_per_byte`,
  windows of the model's context every ``context - compression.KEEP`` tokens, the coder's
  refill), so the file's overhead over the cross-entropy shows;
* primed PPMd (``pyppmd``), at the order among 2-64 that is best on the validation split;
* primed xz (``lzma``, preset 9 extreme), and with ``--zpaq`` primed zpaq -m5 (``zpaq``,
  ``threads=1``, level 5), both charged 8·(|C(train + text)| − |C(train)|).

Seconds are wall-clock seconds of one ``compress`` and one ``decompress`` call (startup,
the model's load and the n-gram's counting of the training ids included), on whatever
else the machine runs; the JSON names the CPU, PoCL's target and the vector lanes.
"""

from __future__ import annotations

import argparse
import json
import lzma
from pathlib import Path


from netcl_lite import capstone
from netcl_lite import compression as cz
from netcl_lite.nn import DecoderLM
from netcl_lite.text import BPETokenizer

from bench_kernels import cpu_name  # noqa: E402  (benchmarks/ is the script's folder)
from compress_speed import round_trip  # noqa: E402

PPMD_ORDERS = (2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64)


def _primed(compress, text: bytes, primer: bytes) -> float:
    return 8 * (len(compress(primer + text)) - len(compress(primer))) / len(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="a Chapter 9 run's folder (default: capstone.run())")
    ap.add_argument("--split", choices=("test", "validation"), default="test")
    ap.add_argument("--zpaq", action="store_true", help="also primed zpaq -m5 (minutes)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "compression.json"))
    a = ap.parse_args()
    d = capstone.data()
    if a.model:
        model = DecoderLM.from_pretrained(a.model)
        tok = BPETokenizer.load(Path(a.model) / "tokenizer.json")
    else:
        run = capstone.run()
        model, tok = run.model, run.tokenizer
    text = getattr(d, f"{a.split}_text").encode("utf-8")
    train = d.train_text.encode("utf-8")
    n = len(text)
    out = {"split": a.split, "bytes": n, "device": {"cpu": cpu_name(), "arithmetic": cz.arithmetic(model)},
           "model": {"folder": Path(a.model).name if a.model else "capstone.run()",
                     "fingerprint": cz.model_fingerprint(model).hex()},
           "note": "seconds on a shared 2-core machine, other jobs running"}
    cz.default_primer(tok)                                   # the training ids, encoded once per process
    for mix in (False, True):
        blob, packing, unpacking = round_trip(text, model, tok, mix)
        key = "mixed" if mix else "model only"
        out[key] = {"file bytes": len(blob), "bits per byte": 8 * len(blob) / n,
                    "compress s": packing, "decompress s": unpacking,
                    "compress kB/s": n / 1e3 / packing, "decompress kB/s": n / 1e3 / unpacking}
        print(key, out[key], flush=True)
    ids = cz.tokenize(text, tok)
    context = model.config.max_position_embeddings
    out["cross-entropy"] = capstone.bits_per_byte(model, ids, tok, context, stride=context - cz.KEEP)
    out["model only / cross-entropy"] = out["model only"]["bits per byte"] / out["cross-entropy"]
    validation = d.validation_text.encode("utf-8")
    on_validation = {k: 8 * capstone._ppmd_bytes(validation, train, k) / len(validation) for k in PPMD_ORDERS}
    order = min(on_validation, key=on_validation.get)
    out["ppmd"] = {"order (chosen on validation)": order, "bits per byte": 8 * capstone._ppmd_bytes(text, train, order) / n}
    xz = lambda b: lzma.compress(b, preset=9 | lzma.PRESET_EXTREME)   # noqa: E731
    out["xz"] = {"bits per byte": _primed(xz, text, train)}
    if a.zpaq:
        import zpaq

        out["zpaq -m5"] = {"bits per byte": _primed(lambda b: zpaq.compress(b, level=5, threads=1), text, train)}
    mixed = out["mixed"]["bits per byte"]
    out["mixed / ppmd"] = mixed / out["ppmd"]["bits per byte"]
    out["mixed / xz"] = mixed / out["xz"]["bits per byte"]
    if a.zpaq:
        out["mixed / zpaq"] = mixed / out["zpaq -m5"]["bits per byte"]
    print(json.dumps(out, indent=1))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
