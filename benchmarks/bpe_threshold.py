"""Where the merge kernel starts to pay: one ``encode_ordinary`` call, Python loop against kernel,
as a function of the new bytes the call brings (``BPETokenizer.kernel_min_bytes``).

    python benchmarks/bpe_threshold.py          # ~1 min; cl100k_base on the held-out texts

Two copies of cl100k_base encode the same windows of held-out text (English prose, code,
multilingual) in turn, one with ``kernel_min_bytes=None`` (the Python loop), one with ``0``
(every call's new chunks to the kernel). Both have seen the same earlier windows, so each
call finds the same chunks new. Windows grow from a few characters to 128 kilobytes;
each call is timed (CPU time, the kernel's worker threads included, and wall), the order
of the two alternating. Calls are grouped by their new bytes (powers of two); the table
gives each group's median time per call and the ratio. The threshold is the smallest group
from which the kernel's median CPU time is at most ``MARGIN`` (95 %) of the loop's in every group
above it, for every kind (CPU time, as ``bench_tokenizer.py`` compares; wall time on a shared machine adds the wait
for PoCL's worker threads to be scheduled, and is shown beside it).
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="windows per kind")
    parser.add_argument("--out", type=Path, default=corpus.DATA / "bpe_threshold.json")
    args = parser.parse_args()
    path = cl100k_path()
    base = BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN, expected_sha256=CL100K_SHA256)
    dev = nl.device()
    env = {"cpu": cpu_name(), "device": dev.name, "compiler_cpu": dev.compiler_cpu, "loadavg_start": load_average(),
           "date": time.strftime("%Y-%m-%d %H:%M")}
    print(f"CPU: {env['cpu']}; device {env['device']} (PoCL target {env['compiler_cpu']}); "
          f"load average {env['loadavg_start']}")
    rng = np.random.default_rng(0)
    rows = {}
    for kind in KINDS:
        docs = corpus.load("heldout", kind)
        python = BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN)
        kernel = BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN)
        python.kernel_min_bytes, kernel.kernel_min_bytes = None, 0
        kernel.encode_ordinary(" zqxqzjkv vkqvkqwz")      # the tables and the program, outside the timing
        groups: dict[int, dict[str, list[float]]] = {}
        for i, text in enumerate(windows(docs, rng, args.calls)):
            n = new_bytes(python, text)
            if n == 0:
                continue
            runs = {}
            for name, tok in ((("python", python), ("kernel", kernel)) if i % 2 else
                              (("kernel", kernel), ("python", python))):
                cpu, wall, ids = timed(lambda t=tok: t.encode_ordinary(text))
                runs[name] = (cpu, wall, ids)
            assert runs["python"][2] == runs["kernel"][2], "the two paths disagree"
            group = groups.setdefault(1 << (n.bit_length() - 1), {k: [] for k in
                                                                   ("python_cpu", "kernel_cpu", "python_wall", "kernel_wall")})
            for name in ("python", "kernel"):
                group[f"{name}_cpu"].append(runs[name][0])
                group[f"{name}_wall"].append(runs[name][1])
        rows[kind] = {g: {k: statistics.median(v) for k, v in d.items()} | {"calls": len(d["python_cpu"])}
                      for g, d in sorted(groups.items())}
    print("\nOne encode_ordinary call, median µs per call by new bytes (CPU time; wall in parentheses)")
    print(f"{'kind':<13} {'new bytes':>10} {'calls':>5} {'python':>16} {'kernel':>16} {'kernel/python':>14}")
    threshold = 0
    for kind, groups in rows.items():   # CPU time, as bench_tokenizer.py's ratios; wall is shown
        losing = [g for g, r in groups.items() if r["kernel_cpu"] > MARGIN * r["python_cpu"]]
        threshold = max(threshold, 2 * max(losing) if losing else 0)
        for g, r in groups.items():
            print(f"{kind:<13} {g:>10} {r['calls']:>5} {r['python_cpu'] * 1e6:>7.0f} ({r['python_wall'] * 1e6:>6.0f}) "
                  f"{r['kernel_cpu'] * 1e6:>7.0f} ({r['kernel_wall'] * 1e6:>6.0f}) "
                  f"{r['kernel_cpu'] / r['python_cpu']:>6.2f} ({r['kernel_wall'] / r['python_wall']:.2f})")
    env["loadavg_end"] = load_average()
    print(f"\nthe kernel takes at most {MARGIN:.0%} of the loop's CPU time in every group from {threshold} new "
          f"bytes up, for every kind; "
          f"load average at the end {env['loadavg_end']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"environment": env, "threshold": threshold,
                                    "groups": {k: {str(g): r for g, r in v.items()} for k, v in rows.items()}},
                                   indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
