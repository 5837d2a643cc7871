"""Chapter 9's model as a compressor: how fast it codes the test split, and where a coding step's time goes.

    python benchmarks/compress_speed.py [--model DIR] [--split test] [--rounds 3] [--no-mixed]
                                        [--out benchmarks/results/compress_speed.json]

With Chapter 9's trained model (:func:`netcl_lite.capstone.run`, or a run's folder given as
``--model``), the split's text is compressed and decompressed with
:func:`netcl_lite.compression.compress` and ``decompress``, model-only (``mix=False``) and mixed
with the n-gram (``mix=True``), in ``--rounds`` interleaved rounds (each round runs the four calls
in turn); kB/s is the original's bytes over one call's wall-clock seconds (the tokenizing, the
n-gram's counting and the header included; the model's load and the training ids' encoding not),
quoted as the median over the rounds with every round kept. Each decompressed file is checked
against the original.

Each of the four calls then runs once more instrumented, to say where a coding step (one token of
every stream) goes: the decoding step (:meth:`DecoderLM.decode_step`, wall and host-thread CPU), its
kernels' device time from OpenCL profiling events and its launches, the float64 softmax, the
refills of the model's window (``model.hidden`` on the kept positions, waited for), the range
coder (``constriction``), with ``mix`` the n-gram's and the mixer's predict and update, and the
rest (the loop's bookkeeping, tokenizing, the header). The instrumented passes are slower than
the timed ones by the timers' cost, so their parts are shares, not speeds.

The JSON names the machine (CPU, OpenCL device, PoCL's compiler target) and the load average
around the run: on a shared machine the figures move with what else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from netcl_lite import capstone
from netcl_lite import compression as cz
from netcl_lite.core.stream import stream_of
from netcl_lite.nn import DecoderLM
from netcl_lite.text import BPETokenizer

from machine import cpu_name  # noqa: E402  (benchmarks/ is the script's folder)

CALLS = (("model only", False), ("mixed", True))


def _load(folder):
    if folder:
        return DecoderLM.from_pretrained(folder), BPETokenizer.load(Path(folder) / "tokenizer.json")
    run = capstone.run()
    return run.model, run.tokenizer


def round_trip(text: bytes, model, tok, mix: bool) -> tuple[bytes, float, float]:
    """(the file, seconds to compress, seconds to decompress), the decompressed bytes checked."""
    began = time.perf_counter()
    blob = cz.compress(text, model, tok, mix=mix)
    mid = time.perf_counter()
    back = cz.decompress(blob, model, tok)
    end = time.perf_counter()
    assert back == text, "the round trip failed"
    return blob, mid - began, end - mid


def timed_rounds(text: bytes, model, tok, rounds: int, modes) -> dict:
    """kB/s of each (mode, direction) over interleaved rounds; the files' sizes."""
    speeds = {f"{name} {way}": [] for name, _ in modes for way in ("compress", "decompress")}
    sizes = {}
    for _ in range(rounds):
        for name, mix in modes:
            blob, packing, unpacking = round_trip(text, model, tok, mix)
            speeds[f"{name} compress"].append(len(text) / 1e3 / packing)
            speeds[f"{name} decompress"].append(len(text) / 1e3 / unpacking)
            sizes[name] = len(blob)
    return {key: {"median kB/s": statistics.median(v), "rounds kB/s": v} for key, v in speeds.items()}, sizes


class _TimedCoder:
    """A constriction range coder whose encode/decode calls add their seconds to ``totals``."""

    def __init__(self, coder, totals, key):
        self._coder, self._totals, self._key = coder, totals, key

    def _timed(self, name):
        method = getattr(self._coder, name)

        def call(*args):
            began = time.perf_counter()
            try:
                return method(*args)
            finally:
                self._totals[self._key] = self._totals.get(self._key, 0.0) + time.perf_counter() - began
        return call

    def __getattr__(self, name):
        return self._timed(name) if name in ("encode", "decode") else getattr(self._coder, name)


def step_parts(text: bytes, model, tok, mix: bool, direction: str, blob: bytes | None = None) -> dict:
    """One instrumented compression or decompression: seconds per coding step of each part."""
    import constriction

    from netcl_lite.ngram import Mixer, NGram

    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    stream = stream_of(model.queue)

    def wrap(owner, attr, key, cpu=False, wait=False):
        inner = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)

        def timed(*args, **kwargs):
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                result = inner(*args, **kwargs)
                if wait:
                    stream.sync()
                return result
            finally:
                totals[key] = totals.get(key, 0.0) + time.perf_counter() - t0
                counts[key] = counts.get(key, 0) + 1
                if cpu:
                    totals[key + " host CPU"] = totals.get(key + " host CPU", 0.0) + time.thread_time() - c0

        setattr(owner, attr, timed)
        return owner, attr, inner

    queue_module = constriction.stream.queue
    coders = (queue_module.RangeEncoder, queue_module.RangeDecoder)
    key = "range coder (constriction)"
    queue_module.RangeEncoder = lambda *a: _TimedCoder(coders[0](*a), totals, key)
    queue_module.RangeDecoder = lambda *a: _TimedCoder(coders[1](*a), totals, key)
    originals = [wrap(model, "decode_step", "decode step", cpu=True),
                 wrap(model, "hidden", "refill (model.hidden, waited)", wait=True),
                 wrap(cz, "_softmax", "softmax (float64)")]
    if mix:
        originals += [wrap(NGram, "predict", "n-gram predict"), wrap(NGram, "update", "n-gram update"),
                      wrap(Mixer, "mix", "mixer mix"), wrap(Mixer, "update", "mixer update")]
    stream.sync()
    stream.profile = []
    try:
        began = time.perf_counter()
        if direction == "compress":
            cz.compress(text, model, tok, mix=mix)
        else:
            assert cz.decompress(blob, model, tok) == text, "the round trip failed"
        total = time.perf_counter() - began
        stream.sync()
    finally:
        records, stream.profile = stream.profile, None
        queue_module.RangeEncoder, queue_module.RangeDecoder = coders
        for owner, attr, inner in originals:
            if owner is model:
                del model.__dict__[attr]                 # the bound method again
            else:
                setattr(owner, attr, inner)
    steps = counts["decode step"]
    kernels = [(event.profile.end - event.profile.start) * 1e-9 for _, op, event in records if op == "decode_step"]
    refill_kernels = sum((event.profile.end - event.profile.start) * 1e-9 for _, op, event in records
                         if op != "decode_step")
    parts = {key: value / steps for key, value in totals.items()}
    parts["decode step kernels (events)"] = sum(kernels) / steps
    parts["refill kernels (events)"] = refill_kernels / steps
    parts["rest of the loop (bookkeeping, tokenizing, header)"] = (
        total - sum(v for k, v in totals.items() if not k.endswith("host CPU"))) / steps
    return {"steps": steps, "refills": counts.get("refill (model.hidden, waited)", 0), "seconds": total,
            "launches per step": len(kernels) / steps,
            "ms per step": {key: round(1e3 * value, 4) for key, value in parts.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="a Chapter 9 run's folder (default: capstone.run())")
    ap.add_argument("--split", choices=("test", "validation"), default="test")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-mixed", action="store_true", help="model-only calls alone")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "compress_speed.json"))
    a = ap.parse_args()
    model, tok = _load(a.model)
    text = getattr(capstone.data(), f"{a.split}_text").encode("utf-8")
    modes = CALLS[:1] if a.no_mixed else CALLS
    if not a.no_mixed:
        cz.default_primer(tok)                        # the training ids, encoded once per process
    cz.compress(text[:20_000], model, tok, mix=False)   # kernels built, buffers made
    load_before = os.getloadavg()
    speeds, sizes = timed_rounds(text, model, tok, a.rounds, modes)
    parts = {}
    for name, mix in modes:
        blob = cz.compress(text, model, tok, mix=mix)
        for direction in ("compress", "decompress"):
            parts[f"{name} {direction}"] = step_parts(text, model, tok, mix, direction, blob)
    out = {"split": a.split, "bytes": len(text), "rounds": a.rounds,
           "machine": capstone.machine(model.queue), "cpu": cpu_name(), "arithmetic": cz.arithmetic(model),
           "model": a.model or "capstone.run()", "load average before": load_before,
           "load average after": os.getloadavg(), "speed": speeds,
           "bits per byte": {name: 8 * size / len(text) for name, size in sizes.items()},
           "file bytes": sizes, "one instrumented call each, per coding step": parts}
    for key, value in speeds.items():
        rounds = ", ".join(f"{v:.1f}" for v in value["rounds kB/s"])
        print(f"{key:26s} {value['median kB/s']:6.1f} kB/s (median of {rounds})")
    for name, size in sizes.items():
        print(f"{name}: {8 * size / len(text):.4f} bits per byte ({size} bytes)")
    for call, part in parts.items():
        print(f"{call}, instrumented, per coding step of {part['steps']} ({part['launches per step']:.0f} "
              f"launch each, {part['refills']} refills):")
        for key, value in part["ms per step"].items():
            print(f"  {key:50s} {value:7.3f} ms")
    print(f"{out['machine']}; load average {load_before[0]:.1f} before, {out['load average after'][0]:.1f} after")
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
