"""Peak memory of compress and decompress against the input's size, with Chapter 9's model.

    python benchmarks/compress_memory.py [--sizes 65536 262144 1048576] [--refused 20000000]
                                         [--model DIR] [--out benchmarks/results/compress_memory.json]

Each call runs in a fresh process: it loads the model (``capstone.run()`` or a run's folder),
warms up (the tokenizer's tables built, the n-gram's primer counted, the kernels compiled for
a full batch of streams, which PoCL does once per shape), hands
freed memory back (``malloc_trim``), takes its resident memory as the baseline, resets the kernel's high-water mark
(``/proc/self/clear_refs``) and reads it (``VmHWM``) after one call: ``compress`` of that many
bytes of Chapter 9's text (validation, test, then training text, repeated as needed), or, in
a process of its own, ``decompress`` of the blob the first wrote; mixed with the n-gram and
with the model alone. The peak over the baseline, and that per input byte, is what a call
costs beyond the model and the primer's counts; ``MAX_INPUT_BYTES`` is the largest size a
call accepts. ``--refused`` sizes are past that limit: the JSON records that ``compress``
refuses them, how long that took and what it cost.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import cpu_name  # noqa: E402  (benchmarks/ is the script's folder)


def _status(field: str) -> int:
    """A ``/proc/self/status`` field in bytes (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")        # VmHWM back to the current VmRSS


def child(size: int, mix: bool, phase: str, blob_path: str, model_dir: str | None) -> dict:
    """One measured call in this fresh process: ``compress`` (the blob written to ``blob_path``)
    or ``decompress`` (of the blob there, checked against the original)."""
    from netcl_lite import capstone
    from netcl_lite import compression as cz

    model, tok = cz._load(model_dir)
    d = capstone.data()
    text = (d.validation_text + d.test_text + d.train_text).encode("utf-8")
    data = (text * (size // len(text) + 1))[:size]
    # warm-up: the tokenizer's device tables built, the primer counted, and the kernels compiled for
    # the batch of STREAMS streams, each refilling its window (a few kB coded with short segments)
    cz.tokenize(text[:cz.MAX_INPUT_BYTES], tok)
    segment, cz.MIN_SEGMENT = cz.MIN_SEGMENT, 1
    cz.decompress(cz.compress(text[:12_000], model, tok, mix=mix), model, tok)
    cz.MIN_SEGMENT = segment
    blob = Path(blob_path).read_bytes() if phase == "decompress" else None
    gc.collect()
    ctypes.CDLL(None).malloc_trim(0)        # freed memory back to the system: reusing it is growth too
    base = _status("VmRSS")
    _reset_peak()
    began = time.perf_counter()
    row = {"bytes": size, "mix": mix, "call": phase, "baseline rss": base}
    try:
        if phase == "compress":
            result = cz.compress(data, model, tok, mix=mix)
        else:
            result = cz.decompress(blob, model, tok)
    except ValueError as exc:
        return {**row, "refused": str(exc), "seconds": time.perf_counter() - began,
                "peak over baseline": _status("VmHWM") - base}
    row.update({"seconds": time.perf_counter() - began, "peak over baseline": _status("VmHWM") - base})
    row["per input byte"] = row["peak over baseline"] / size
    if phase == "compress":
        Path(blob_path).write_bytes(result)
        row["blob bytes"] = len(result)
    else:
        assert result == data, "the round trip failed"
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[65536, 262144, 1 << 20])
    ap.add_argument("--refused", type=int, nargs="*", default=[20_000_000])
    ap.add_argument("--model", help="a Chapter 9 run's folder (default: capstone.run())")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "compress_memory.json"))
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        size, mix, phase, blob_path = a.child
        print(json.dumps(child(int(size), mix == "mixed", phase, blob_path, a.model)))
        return
    from netcl_lite import compression as cz

    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in [*a.sizes, *a.refused]:
            for mix in ("mixed", "model only"):
                blob_path = str(Path(scratch) / "blob")
                for phase in ("compress", "decompress"):
                    cmd = [sys.executable, __file__, "--child", str(size), mix, phase, blob_path]
                    done = subprocess.run(cmd + (["--model", a.model] if a.model else []), capture_output=True,
                                          text=True)
                    if done.returncode:
                        raise SystemExit(f"{size} bytes, {mix}, {phase}: the child failed\n{done.stderr[-3000:]}")
                    rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
                    print(rows[-1], flush=True)
                    if "refused" in rows[-1]:
                        break
    out = {"device": {"cpu": cpu_name()}, "date": time.strftime("%Y-%m-%d"), "max input bytes": cz.MAX_INPUT_BYTES,
           "model": a.model or "capstone.run()",
           "note": "VmHWM over the resident memory after loading and warming up, one fresh process per row; "
                   "seconds taken on a shared 2-core machine, other jobs running",
           "rows": rows}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", a.out)


if __name__ == "__main__":
    main()
