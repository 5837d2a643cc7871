"""Where the BPE kernels start to pay: one ``encode_ordinary`` call, host against device, by size.

    python benchmarks/bpe_threshold.py          # ~2 min; cl100k_base on the held-out texts

Two thresholds of ``BPETokenizer``, each measured by two copies of cl100k_base encoding the
same windows of held-out text (English prose, code, multilingual) in turn, the order of the
two alternating. Windows grow from a few characters to 128 kilobytes; each call is timed (CPU
time, the kernel's worker threads included, and wall). Both copies have seen the same earlier
windows, so the host's chunk cache is as warm as a tokenizer's that has encoded them: the
situation of a tokenizer working through a dataset.

* ``text`` (``kernel_text_min_bytes``): the whole call on the device (split, merges, gather;
  ``0``) against the host path (the regex split, the chunk cache, new chunks merged by the
  Python loop or the merge kernel; ``None``). Calls are grouped by their UTF-8 bytes. The
  windows (~13k characters on average) cover each kind's ~1 MB many times over, so after the
  first few dozen calls the host's cache holds most of a window's chunks: the threshold is where
  the device beats a mostly warm cache. ``--fresh`` empties the cache before every call instead
  (text never seen), for comparison.
* ``chunks`` (``kernel_min_bytes``, with the whole-call path off in both copies): a call's new
  chunks merged by the kernel (``0``) against the Python loop (``None``). Calls are grouped by
  the new bytes they bring.

Groups are powers of two; the table gives each group's median time per call and the ratio.
A threshold is the smallest group from which the device's median CPU time is at most
``MARGIN`` (95 %) of the host's in every group above it, for every kind (CPU time, as
``bench_tokenizer.py`` compares; wall time on a shared machine adds the wait for PoCL's worker
threads to be scheduled, and is shown beside it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from itertools import filterfalse
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus
from bench_tokenizer import CL100K_SHA256, cl100k_path, cpu_name, load_average  # noqa: E402

import netcl_lite as nl
from netcl_lite.text import GPT4_PATTERN, BPETokenizer
from netcl_lite.text.chunk_cache import ChunkCache

KINDS = ("prose", "code", "multilingual")
#: The kernel must take at most this fraction of the loop's CPU time to count as a win: a tie is
#: not worth a launch, whose wall time on a shared machine also waits for PoCL's workers to wake.
MARGIN = 0.95


def new_bytes(tok: BPETokenizer, text: str) -> int:
    cache = tok._cache
    return sum(len(c.encode()) for c in dict.fromkeys(filterfalse(cache.__contains__, tok._split(text))))


def windows(docs: list[str], rng, count: int):
    """``count`` windows of the text, log-uniform in length from 8 to 128k characters."""
    text = "\n".join(docs)
    for _ in range(count):
        size = int(2 ** rng.uniform(3, 17))
        start = int(rng.integers(0, max(1, len(text) - size)))
        yield text[start:start + size]


def timed(fn):
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - cpu, time.perf_counter() - wall, out


def measure(kind: str, docs: list[str], which: str, rng, calls: int, path: Path, fresh: bool = False
            ) -> dict[int, dict]:
    """Median CPU and wall seconds per call of the host and the device copy, by size group.
    ``fresh``: the host copy's chunk cache starts empty (its seed only) before every call."""
    host = BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN)
    device = BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN)
    if which == "text":
        host.kernel_text_min_bytes, device.kernel_text_min_bytes = None, 0
    else:
        host.kernel_text_min_bytes = device.kernel_text_min_bytes = None
        host.kernel_min_bytes, device.kernel_min_bytes = None, 0
    device.encode_ordinary(" zqxqzjkv vkqvkqwz")      # the tables and the programs, outside the timing
    host.encode_ordinary(" zqxqzjkv vkqvkqwz")
    groups: dict[int, dict[str, list[float]]] = {}
    for i, text in enumerate(windows(docs, rng, calls)):
        n = len(text.encode()) if which == "text" else new_bytes(host, text)
        if n == 0:
            continue
        if fresh:   # outside the timing: a cache that has seen nothing
            host._cache = ChunkCache(host._seed, host._encode_piece)
        runs = {}
        for name, tok in ((("host", host), ("device", device)) if i % 2 else (("device", device), ("host", host))):
            cpu, wall, ids = timed(lambda t=tok: t.encode_ordinary(text))
            runs[name] = (cpu, wall, ids)
        assert runs["host"][2] == runs["device"][2], f"{kind}: the two paths disagree"
        group = groups.setdefault(1 << (n.bit_length() - 1),
                                  {k: [] for k in ("host_cpu", "device_cpu", "host_wall", "device_wall")})
        for name in ("host", "device"):
            group[f"{name}_cpu"].append(runs[name][0])
            group[f"{name}_wall"].append(runs[name][1])
    return {g: {k: statistics.median(v) for k, v in d.items()} | {"calls": len(d["host_cpu"])}
            for g, d in sorted(groups.items())}


def report(which: str, rows: dict[str, dict[int, dict]]) -> int:
    """Print one table; return its threshold."""
    unit = "bytes" if which == "text" else "new bytes"
    print(f"\n{which}: one encode_ordinary call, median µs per call by {unit} (CPU time; wall in parentheses)")
    print(f"{'kind':<13} {unit:>10} {'calls':>5} {'host':>16} {'device':>16} {'device/host':>14}")
    threshold = 0
    for kind, groups in rows.items():   # CPU time, as bench_tokenizer.py's ratios; wall is shown
        losing = [g for g, r in groups.items() if r["device_cpu"] > MARGIN * r["host_cpu"]]
        threshold = max(threshold, 2 * max(losing) if losing else 0)
        for g, r in groups.items():
            print(f"{kind:<13} {g:>10} {r['calls']:>5} {r['host_cpu'] * 1e6:>7.0f} ({r['host_wall'] * 1e6:>6.0f}) "
                  f"{r['device_cpu'] * 1e6:>7.0f} ({r['device_wall'] * 1e6:>6.0f}) "
                  f"{r['device_cpu'] / r['host_cpu']:>6.2f} ({r['device_wall'] / r['host_wall']:.2f})")
    print(f"{which}: the device takes at most {MARGIN:.0%} of the host's CPU time in every group from "
          f"{threshold} {unit} up, for every kind")
    return threshold


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="windows per kind")
    parser.add_argument("--which", choices=("text", "chunks", "both"), default="both")
    parser.add_argument("--fresh", action="store_true", help="text: the host's cache emptied before every call "
                        "(text it has never seen; the default keeps what the earlier windows left)")
    parser.add_argument("--out", type=Path, default=corpus.DATA / "bpe_threshold.json")
    args = parser.parse_args()
    path = cl100k_path()
    BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN, expected_sha256=CL100K_SHA256)   # the file checks out
    dev = nl.device()
    env = {"cpu": cpu_name(), "device": dev.name, "compiler_cpu": dev.compiler_cpu, "loadavg_start": load_average(),
           "date": time.strftime("%Y-%m-%d %H:%M")}
    print(f"CPU: {env['cpu']}; device {env['device']} (PoCL target {env['compiler_cpu']}); "
          f"load average {env['loadavg_start']}")
    out = {"environment": env, "fresh": args.fresh}
    for which in ("text", "chunks") if args.which == "both" else (args.which,):
        rng = np.random.default_rng(0)
        rows = {kind: measure(kind, corpus.load("heldout", kind), which, rng, args.calls, path,
                              args.fresh and which == "text") for kind in KINDS}
        out[which] = {"threshold": report(which, rows),
                      "groups": {k: {str(g): r for g, r in v.items()} for k, v in rows.items()}}
    env["loadavg_end"] = load_average()
    print(f"\nload average at the end {env['loadavg_end']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
