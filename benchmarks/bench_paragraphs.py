"""Tokenizer on many short documents: paragraphs, one call each and as one batch, against tiktoken.

    python benchmarks/bench_paragraphs.py              # ~3 min; builds benchmarks/data/ first if needed

The workload: the held-out English prose, code and multilingual files of ``corpus.py`` (the
ones ``bench_tokenizer.py`` encodes whole), cut into paragraphs. A paragraph ends at a blank
line, or at the first line end once it holds ``--cut`` (128) UTF-8 bytes (the translation
catalogs, one message a line, have no blank lines); joined back, the paragraphs are the files.
Two sets per kind: all paragraphs in file order (``all``), and the first ``--first`` (300),
where most words are new to a fresh tokenizer (``first``).

Each round, per kind and set, in turn, with cl100k_base:

* ``single cold``: a freshly loaded ``BPETokenizer``, ``encode_ordinary`` on each paragraph in
  order; ``single warm``: the same tokenizer again; ``tiktoken single``: tiktoken's
  ``encode_ordinary`` on each paragraph;
* ``batch cold``: another freshly loaded tokenizer, one ``encode_ordinary_batch`` of the set
  (its first device call builds the device's tables, so cold includes that);
  ``batch warm``: again; ``tiktoken batch``: tiktoken's ``encode_ordinary_batch`` of the set
  (its default, 8 threads).

Ratios are tiktoken's time over ours (above 1: ours is faster), of medians over the rounds:
CPU time (``time.process_time``, every thread of the process: PoCL's and tiktoken's), which
other processes on a shared machine disturb less, and wall time. Every result is checked
identical to tiktoken's. Loading (the file read, the tables) is timed apart.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import tiktoken
import tiktoken.load

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus
from bench_tokenizer import CL100K_SHA256, Runs, cl100k_path, cpu_name, load_average, timed

import netcl_lite as nl
from netcl_lite.text import GPT4_PATTERN, BPETokenizer

KINDS = ("prose", "code", "multilingual")
CONTENDERS = ("single cold", "single warm", "tiktoken single", "batch cold", "batch warm", "tiktoken batch")


def paragraphs(text: str, cut: int = 128) -> list[str]:
    """``text`` cut at blank lines, and at the first line end past ``cut`` bytes; joined, ``text``.

    >>> paragraphs("a\\nb\\n\\nc\\n", cut=100)
    ['a\\nb\\n\\n', 'c\\n']
    """
    out, lines, size = [], [], 0
    for line in text.splitlines(keepends=True):
        lines.append(line)
        size += len(line.encode())
        if (not line.strip() and len(lines) > 1) or size >= cut:
            out.append("".join(lines))
            lines, size = [], 0
    if lines:
        out.append("".join(lines))
    return out


def bench_set(docs: list[str], load, enc, rounds: int) -> dict:
    runs, identical = Runs(), True
    for _ in range(rounds):
        cpu, wall, tok = timed(load)
        runs.add("load", cpu, wall)
        results = {}
        calls = {
            "single cold": lambda: [tok.encode_ordinary(d) for d in docs],
            "single warm": lambda: [tok.encode_ordinary(d) for d in docs],
            "tiktoken single": lambda: [enc.encode_ordinary(d) for d in docs],
        }
        for name, call in calls.items():
            cpu, wall, results[name] = timed(call)
            runs.add(name, cpu, wall)
        fresh = load()
        calls = {
            "batch cold": lambda: fresh.encode_ordinary_batch(docs),
            "batch warm": lambda: fresh.encode_ordinary_batch(docs),
            "tiktoken batch": lambda: enc.encode_ordinary_batch(docs),
        }
        for name, call in calls.items():
            cpu, wall, results[name] = timed(call)
            runs.add(name, cpu, wall)
        identical &= all(got == results["tiktoken single"] for got in results.values())
    mine = {"single cold": "tiktoken single", "single warm": "tiktoken single",
            "batch cold": "tiktoken batch", "batch warm": "tiktoken batch"}
    return {"documents": len(docs), "bytes": sum(len(d.encode()) for d in docs),
            "median_bytes": statistics.median(len(d.encode()) for d in docs), "identical_ids": identical,
            "ms": {k: runs.cpu_median(k) * 1e3 for k in ("load", *CONTENDERS)},
            "ratio_cpu": {k: runs.cpu_median(a) / runs.cpu_median(k) for k, a in mine.items()},
            "ratio_wall": {k: runs.wall_median(a) / runs.wall_median(k) for k, a in mine.items()},
            "batch_vs_tiktoken_single_cpu": runs.cpu_median("tiktoken single") / runs.cpu_median("batch cold"),
            "runs_cpu_s": runs.cpu, "runs_wall_s": runs.wall}


def print_rows(rows: list[dict]) -> None:
    print("\nParagraphs of the held-out files, cl100k_base; tiktoken's time / ours (above 1: ours is faster),\n"
          "CPU time (wall in parentheses), medians of interleaved rounds")
    print(f"{'text':<13} {'set':<6} {'docs':>6} {'median B':>8} {'single cold':>13} {'single warm':>13} "
          f"{'batch cold':>13} {'batch warm':>13} {'same ids':>8}")
    for r in rows:
        cells = [f"{r['ratio_cpu'][k]:5.2f} ({r['ratio_wall'][k]:4.2f})" for k in
                 ("single cold", "single warm", "batch cold", "batch warm")]
        print(f"{r['kind']:<13} {r['set']:<6} {r['documents']:>6} {r['median_bytes']:>8.0f} "
              + " ".join(f"{c:>13}" for c in cells) + f" {'yes' if r['identical_ids'] else 'NO':>8}")
    print("\nCPU ms per pass (medians): load, then " + ", ".join(CONTENDERS))
    for r in rows:
        print(f"  {r['kind']:<13} {r['set']:<6} " + "  ".join(f"{r['ms'][k]:7.1f}" for k in ("load", *CONTENDERS)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (median)")
    parser.add_argument("--first", type=int, default=300, help="paragraphs in the 'first' set")
    parser.add_argument("--cut", type=int, default=128, help="bytes after which a line end ends a paragraph")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--out", type=Path, default=corpus.DATA / "bench_paragraphs.json")
    args = parser.parse_args()

    path = cl100k_path()
    ranks = tiktoken.load.load_tiktoken_bpe(str(path), CL100K_SHA256)
    enc = tiktoken.Encoding("bench_paragraphs", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={})
    load = lambda: BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN, expected_sha256=CL100K_SHA256)  # noqa: E731
    dev = nl.device()
    env = {"cpu": cpu_name(), "device": dev.name, "pocl_target": dev.compiler_cpu,
           "python": platform.python_version(), "tiktoken": tiktoken.__version__,
           "loadavg_start": load_average(), "date": time.strftime("%Y-%m-%d %H:%M"), "args": vars(args) | {"out": str(args.out)}}
    print(f"CPU: {env['cpu']}; OpenCL device {env['device']}, PoCL compiles for {env['pocl_target']}; "
          f"Python {env['python']}; tiktoken {env['tiktoken']}; load average {env['loadavg_start']}")
    rows = []
    for kind in args.kinds:
        docs = [p for text in corpus.load("heldout", kind) for p in paragraphs(text, args.cut)]
        for name, subset in (("all", docs), ("first", docs[:args.first])):
            rows.append({"kind": kind, "set": name, **bench_set(subset, load, enc, args.rounds)})
            print(f"  {kind} {name}: done", flush=True)
    env["loadavg_end"] = load_average()
    print_rows(rows)
    print(f"\nload average at the end: {env['loadavg_end']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"environment": env, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
