"""Tokenizer benchmark: netcl_lite's BPETokenizer against tiktoken and Hugging Face ``tokenizers``.

    python benchmarks/bench_tokenizer.py        # builds benchmarks/data/ first if needed

Prints three tables and writes ``benchmarks/data/bench_tokenizer.json``:

1. encode throughput (MB/s of UTF-8 input) on held-out prose and code, against
   tiktoken ``encode_ordinary`` with *identical* ranks and pattern, one thread;
   ``cold`` = a freshly loaded tokenizer's first pass (its construction is timed
   separately), ``warm`` = its second pass; the ids are checked identical;
2. training time to 4,096 and 16,384 tokens on ~8 MB of mixed text, against
   ``tokenizers``' byte-level BPE trainer with the same pattern, vocabulary size,
   ``min_frequency`` and ``RAYON_NUM_THREADS=1``;
3. compression (bytes per token) on held-out text of each kind for both trainers.

Medians over rounds that interleave the contenders (the machine is shared).
"""

from __future__ import annotations

import os

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers starts its thread pool

import argparse
import gc
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import tiktoken
import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus

from netcl_lite.text import GPT4_PATTERN, BPETokenizer

# Oniguruma (tokenizers' regex engine) reads "{1,3}+" as a repeated interval, not a possessive
# one, and "$" as end of line: spell the same splits its way. Checked equal on the held-out set.
HF_PATTERN = GPT4_PATTERN.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}").replace(r"\s++$", r"\s++\z")
VOCAB_SIZES = (4096, 16384)
KINDS = ("prose", "code", "multilingual")


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} logical CPUs)"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} ({os.cpu_count()} logical CPUs)"


def timed(fn):
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def train_ours(texts, vocab_size):
    tok = BPETokenizer(pattern=GPT4_PATTERN)
    tok.train_from_iterator(iter(texts), vocab_size, min_frequency=2, progress=False)
    return tok


def train_hf(texts, vocab_size):
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(HF_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    hf.train_from_iterator(iter(texts), trainer)
    return hf


def bench_training(texts, rounds):
    rows, trained = [], {}
    for vocab_size in VOCAB_SIZES:
        ours, hf = [], []
        for _ in range(rounds):  # interleaved
            seconds, trained[("ours", vocab_size)] = timed(lambda v=vocab_size: train_ours(texts, v))
            ours.append(seconds)
            seconds, trained[("hf", vocab_size)] = timed(lambda v=vocab_size: train_hf(texts, v))
            hf.append(seconds)
        rows.append({"vocab_size": vocab_size, "ours_s": statistics.median(ours), "hf_s": statistics.median(hf),
                     "ours_runs_s": ours, "hf_runs_s": hf,
                     "ours_vocab": trained[("ours", vocab_size)].n_vocab,
                     "hf_vocab": trained[("hf", vocab_size)].get_vocab_size()})
    return rows, trained


def bench_encoding(tok, held, rounds, model_path):
    ranks = tok.mergeable_ranks()
    rows = []
    for kind in ("prose", "code"):
        docs = held[kind]
        n_bytes = sum(len(d.encode()) for d in docs)
        runs = {"load": [], "cold": [], "warm": [], "tiktoken": []}
        identical = True
        for _ in range(rounds):
            load_s, fresh = timed(lambda: BPETokenizer.load(model_path))
            enc = tiktoken.Encoding(name=f"bench{id(fresh)}", pat_str=tok.pattern, mergeable_ranks=ranks,
                                    special_tokens={})
            cold_s, cold_ids = timed(lambda t=fresh, ds=docs: [t.encode_ordinary(d) for d in ds])
            warm_s, warm_ids = timed(lambda t=fresh, ds=docs: [t.encode_ordinary(d) for d in ds])
            tk_s, tk_ids = timed(lambda e=enc, ds=docs: [e.encode_ordinary(d) for d in ds])
            identical &= cold_ids == warm_ids == tk_ids
            for name, seconds in (("load", load_s), ("cold", cold_s), ("warm", warm_s), ("tiktoken", tk_s)):
                runs[name].append(seconds)
        med = {name: statistics.median(v) for name, v in runs.items()}
        rows.append({"vocab_size": len(ranks), "kind": kind, "mb": n_bytes / 1e6, "identical_ids": identical,
                     "load_ms": med["load"] * 1e3,
                     **{f"{name}_mb_s": n_bytes / 1e6 / med[name] for name in ("cold", "warm", "tiktoken")},
                     "cold_ratio": med["tiktoken"] / med["cold"], "warm_ratio": med["tiktoken"] / med["warm"],
                     "runs_s": runs})
    return rows


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="encode rounds (median)")
    parser.add_argument("--train-rounds", type=int, default=3, help="training rounds (median)")
    parser.add_argument("--out", type=Path, default=corpus.DATA / "bench_tokenizer.json")
    args = parser.parse_args()

    train = corpus.load("train")
    held = {kind: corpus.load("heldout", kind) for kind in KINDS}
    train_mb = sum(len(t.encode()) for t in train) / 1e6
    env = {"cpu": cpu_name(), "python": platform.python_version(), "tiktoken": tiktoken.__version__,
           "tokenizers": tokenizers.__version__, "threads": "1 (RAYON_NUM_THREADS=1; tiktoken encode_ordinary)",
           "train_mb": train_mb}
    print(f"CPU: {env['cpu']}; Python {env['python']}; tiktoken {env['tiktoken']}; "
          f"tokenizers {env['tokenizers']}; one thread each")

    training, trained = bench_training(train, args.train_rounds)
    with tempfile.TemporaryDirectory() as tmp:
        encoding = []
        for vocab_size in VOCAB_SIZES:
            path = Path(tmp) / f"ours_{vocab_size}.json"
            trained[("ours", vocab_size)].save(path)
            encoding += bench_encoding(trained[("ours", vocab_size)], held, args.rounds, path)
    compression = bench_compression(trained, held)

    print(f"\nEncode throughput, MB/s of held-out UTF-8 (median of {args.rounds} interleaved rounds)")
    print(f"{'vocab':>6} {'text':<6} {'MB':>5} {'cold':>6} {'warm':>6} {'tiktoken':>8} {'cold/tk':>8} "
          f"{'warm/tk':>8} {'load ms':>8} {'same ids':>8}")
    for r in encoding:
        print(f"{r['vocab_size']:>6} {r['kind']:<6} {r['mb']:>5.2f} {r['cold_mb_s']:>6.1f} {r['warm_mb_s']:>6.1f} "
              f"{r['tiktoken_mb_s']:>8.1f} {r['cold_ratio']:>8.2f} {r['warm_ratio']:>8.2f} {r['load_ms']:>8.1f} "
              f"{'yes' if r['identical_ids'] else 'NO':>8}")
    print(f"\nTraining time on {train_mb:.1f} MB of mixed text, seconds (median of {args.train_rounds})")
    print(f"{'vocab':>6} {'ours':>7} {'HF':>7} {'ours/HF':>8}")
    for r in training:
        print(f"{r['vocab_size']:>6} {r['ours_s']:>7.2f} {r['hf_s']:>7.2f} {r['ours_s'] / r['hf_s']:>8.2f}")
    print("\nCompression on held-out text, bytes per token (higher: fewer tokens)")
    print(f"{'vocab':>6} {'text':<13} {'ours':>6} {'HF':>6}")
    for r in compression:
        print(f"{r['vocab_size']:>6} {r['kind']:<13} {r['ours_bytes_per_token']:>6.3f} {r['hf_bytes_per_token']:>6.3f}")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"environment": env, "encoding": encoding, "training": training,
                                    "compression": compression}, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
