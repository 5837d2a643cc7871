"""Dynamic evaluation of Chapter 9's model, measured as the compressor predicts: the validation grid.

    python benchmarks/dynamic_evaluation.py               # the grid on validation (resumes) -> results/dynamic_evaluation.{json,md}
    python benchmarks/dynamic_evaluation.py --costs       # one update, refill and decoding step, timed in interleaved rounds
    python benchmarks/dynamic_evaluation.py --test        # the chosen setting and the baseline on the test split, once

Every row codes the whole validation split with the model alone (no n-gram) exactly as
:func:`netcl_lite.compression.compress` predicts it, 32 streams of cached decoding steps with
refills (:func:`netcl_lite.adaptation.coded_bits`), and reports the cross-entropy in bits per
byte of the split's text, with dynamic evaluation under the row's
:class:`~netcl_lite.adaptation.AdaptConfig` or, for the baseline, without. The grid's rows
are kept in the JSON as they finish (the model's fingerprint and each row's config are
checked before a row is reused), so an interrupted run resumes. The setting chosen is the
row with the fewest bits on validation; ``--test`` then codes the test split once with it and
with the baseline, records the date, and refuses to run again.

Bits are deterministic (any load, any compute-unit count, one PoCL target); seconds are not:
each row's ``coding s`` is one pass on a machine shared with other work. ``--costs`` times one
adaptation gradient step (forward, backward, the host's update and the weights' upload), one
refill and one decoding step of the 32 streams in the same rounds, alternating, and the
tables turn each row's counts of gradient steps and refills into seconds and kB/s with those
medians, so that rows compare at one load.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from netcl_lite import capstone
from netcl_lite import compression as cz
from netcl_lite.adaptation import AdaptConfig, Adapter
from netcl_lite.dynamic_evaluation import coded_bits
from netcl_lite.nn import KVCache
from netcl_lite.train import read_optimizer_state

RESULTS = Path(__file__).parent / "results"
OUT = RESULTS / "dynamic_evaluation.json"

#: every row's settings start from these (written out, so that a row does not change meaning
#: when AdaptConfig's defaults do)
BASE = dict(optimizer="rms", chunk=16, lr=1e-3, steps=1, decay=0.0, adapted="all", window=None, targets="chunk",
            refill=True, rms_floor=0.1, ms_batches=8, beta1=0.9, beta2=0.999, eps=1e-8)
# name -> what differs from BASE; "run moments" rows start from the training run's AdamW state
# (its moments for Adam, its second moment as RMS's MS) instead of fresh moments or MS
GRID = {
    "rms, chunk 32, lr 1e-3": dict(optimizer="rms", chunk=32, lr=1e-3),
    "rms, chunk 16, lr 5e-4": dict(optimizer="rms", chunk=16, lr=5e-4),
    "rms, chunk 16, lr 1e-3": dict(optimizer="rms", chunk=16, lr=1e-3),
    "rms, chunk 16, lr 1e-3, keep the cache": dict(optimizer="rms", chunk=16, lr=1e-3, refill=False),
    "rms, chunk 16, lr 5e-4, 2 steps": dict(optimizer="rms", chunk=16, lr=5e-4, steps=2),
    "rms, chunk 16, lr 1e-3, decay 0.01": dict(optimizer="rms", chunk=16, lr=1e-3, decay=0.01),
    "rms, chunk 16, lr 1e-3, every window target": dict(optimizer="rms", chunk=16, lr=1e-3, targets="window"),
    "rms, chunk 16, lr 1e-3, no embedding": dict(optimizer="rms", chunk=16, lr=1e-3, adapted="no-embedding"),
    "rms, chunk 16, lr 1e-3, last 2 blocks": dict(optimizer="rms", chunk=16, lr=1e-3, adapted="last-2"),
    "rms, chunk 16, lr 1e-2, norms only": dict(optimizer="rms", chunk=16, lr=1e-2, adapted="norms"),
    "rms, chunk 16, lr 1e-3, floor 1": dict(optimizer="rms", chunk=16, lr=1e-3, rms_floor=1.0),
    "rms, chunk 16, lr 1e-3, run moments": dict(optimizer="rms", chunk=16, lr=1e-3, run_state=True),
    "rms, chunk 8, lr 2.5e-4": dict(optimizer="rms", chunk=8, lr=2.5e-4),
    "rms, chunk 8, lr 5e-4": dict(optimizer="rms", chunk=8, lr=5e-4),
    "rms, chunk 8, lr 5e-4, keep the cache": dict(optimizer="rms", chunk=8, lr=5e-4, refill=False),
    "rms, chunk 8, lr 5e-4, window 32": dict(optimizer="rms", chunk=8, lr=5e-4, window=32),
    "rms, chunk 8, lr 5e-4, decay 0.01": dict(optimizer="rms", chunk=8, lr=5e-4, decay=0.01),
    "rms, chunk 4, lr 2.5e-4, window 32": dict(optimizer="rms", chunk=4, lr=2.5e-4, window=32),
    "adam, chunk 16, lr 1e-3": dict(optimizer="adam", chunk=16, lr=1e-3),
    "adam, chunk 16, lr 3e-4, run moments": dict(optimizer="adam", chunk=16, lr=3e-4, run_state=True),
    "sgd, chunk 16, lr 1": dict(optimizer="sgd", chunk=16, lr=1.0),
    # a second round, around the best of the first (shorter windows, smaller chunks)
    "rms, chunk 16, lr 5e-4, window 32": dict(optimizer="rms", chunk=16, lr=5e-4, window=32),
    "rms, chunk 8, lr 2.5e-4, window 32": dict(optimizer="rms", chunk=8, lr=2.5e-4, window=32),
    "rms, chunk 8, lr 5e-4, window 16": dict(optimizer="rms", chunk=8, lr=5e-4, window=16),
    "rms, chunk 8, lr 5e-4, window 32, decay 0.01": dict(optimizer="rms", chunk=8, lr=5e-4, window=32, decay=0.01),
    "rms, chunk 8, lr 5e-4, window 32, keep the cache": dict(optimizer="rms", chunk=8, lr=5e-4, window=32,
                                                             refill=False),
    "rms, chunk 8, lr 5e-4, window 32, floor 1": dict(optimizer="rms", chunk=8, lr=5e-4, window=32, rms_floor=1.0),
    "rms, chunk 8, lr 5e-4, window 32, run moments": dict(optimizer="rms", chunk=8, lr=5e-4, window=32,
                                                          run_state=True),
    "rms, chunk 4, lr 1.25e-4, window 32": dict(optimizer="rms", chunk=4, lr=1.25e-4, window=32),
    "rms, chunk 4, lr 2.5e-4, window 16": dict(optimizer="rms", chunk=4, lr=2.5e-4, window=16),
}


def _config(fields: dict) -> tuple[AdaptConfig, bool]:
    fields = {**BASE, **fields}
    return AdaptConfig(**{k: v for k, v in fields.items() if k != "run_state"}), bool(fields.get("run_state"))


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _save(out: dict, path: Path) -> None:
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    (path.with_suffix(".md")).write_text(report(out), encoding="utf-8")


def _row(run, ids, n_bytes: int, fields: dict | None, state) -> dict:
    config, use_state = _config(fields) if fields is not None else (None, False)
    bits, info = coded_bits(run.model, run.tokenizer, ids, config, train_ids=None if config is None else run.train_ids,
                            state=state if use_state else None)
    return {"config": fields, "settings": None if config is None else config.to_dict(),
            "run moments": use_state, "bits per byte": float(bits.sum() / n_bytes), "tokens": int(ids.size), **info}


def _run_from(folder: Path) -> capstone.Run:
    """A finished run's folder as :func:`netcl_lite.capstone.run` returns it."""
    from netcl_lite.nn import DecoderLM
    from netcl_lite.text import BPETokenizer

    if not (folder / "done.json").is_file():
        raise SystemExit(f"{folder}: not a finished capstone run (no done.json)")
    with np.load(folder / "ids.npz") as stored:
        train_ids, held_out_ids = stored["train"], stored["held_out"]
    log = json.loads((folder / "log.json").read_text(encoding="utf-8"))
    return capstone.Run(DecoderLM.from_pretrained(folder), BPETokenizer.load(folder / "tokenizer.json"),
                        capstone.data(), train_ids, held_out_ids, log, folder)


WINDOWS = (64, 32, 16)
#: rows within this fraction of the fewest bits count as tied: the cheapest of them is chosen
TIE = 0.001
RULE = (f"the fewest validation bits per byte; among the rows within {100 * TIE:g}% of them, the one with the "
        "fewest estimated seconds (est. s, below)")


def estimated_seconds(row: dict, per: dict, decoding_steps: int) -> float:
    """A row's seconds at the ``--costs`` medians: the split's decoding steps, the row's gradient
    steps and, for RMS with mean squares of its own, the ``ms_batches`` gradient passes that
    measure them (each at its window's cost), and its refills."""
    settings = row["settings"] or {}
    window = settings.get("window") or WINDOWS[0]
    passes = row["gradient_steps"]
    if settings.get("optimizer") == "rms" and not row["run moments"]:
        passes += settings["ms_batches"]
    return (decoding_steps * per["decoding step"] + passes * per[f"gradient step, window {window}"]
            + row["refills"] * per["refill (32 positions)"])


def choose(out: dict) -> str | None:
    """The row :data:`RULE` picks (None before ``--costs`` has run or while no row adapts)."""
    rows, per = out.get("validation", {}).get("rows", {}), out.get("costs")
    adapted = {name: row for name, row in rows.items() if name != "none"}
    if not adapted or not per:
        return None
    best = min(row["bits per byte"] for row in adapted.values())
    steps = -(-rows["none"]["tokens"] // cz.STREAMS)
    tied = [name for name, row in adapted.items() if row["bits per byte"] <= best * (1 + TIE)]
    return min(tied, key=lambda name: (estimated_seconds(adapted[name], per, steps), name))


def costs(run, rounds: int) -> dict:
    """Medians over ``rounds`` alternating rounds: one gradient step of an update for each of
    :data:`WINDOWS` (32 windows of that many tokens, the last 8 targets counted: forward,
    backward, the host's RMS update, the weights written back), one refill of 32 positions per
    stream, and one decoding step of the 32 streams."""
    model, c = run.model, run.model.config
    streams, full = cz.STREAMS, c.max_position_embeddings
    rows = run.held_out_ids[:streams * (full + 1)].reshape(streams, full + 1)
    adapters = {}
    for w in WINDOWS:
        adapter = Adapter(model, streams, 0, AdaptConfig(chunk=8, lr=5e-4, window=w), train_ids=run.train_ids)
        adapter.history = rows.copy()                           # each stream a full window coded
        adapter.seen[:] = full + 1
        adapters[w] = adapter
    twin = adapters[WINDOWS[0]].model
    cache = KVCache(model.queue, c.num_hidden_layers, streams, c.num_key_value_heads, c.head_dim, full)
    names = [f"gradient step, window {w}" for w in WINDOWS] + ["refill (32 positions)", "decoding step"]
    times = {name: [] for name in names}
    for r in range(rounds + 1):                                 # round 0 compiles and warms up
        took = []
        for adapter in adapters.values():
            adapter.trained_upto[:] = full + 1 - adapter.config.chunk   # the last chunk not yet trained on
            began = time.perf_counter()
            adapter.update()
            took.append(time.perf_counter() - began)
        cache.reset()
        twin.hidden(rows[:, :cz.KEEP], cache).numpy()
        began = time.perf_counter()
        adapters[WINDOWS[0]].refill(cache, rows)
        took.append(time.perf_counter() - began)
        began = time.perf_counter()
        twin.decode_step(rows[:, cz.KEEP], cache)
        took.append(time.perf_counter() - began)
        if r:
            for name, value in zip(names, took):
                times[name].append(value)
    return {name: statistics.median(v) for name, v in times.items()} | {"rounds": rounds}


def report(out: dict) -> str:
    """The Markdown tables of ``out``: the validation grid and, once read, the test split."""
    lines = ["# Dynamic evaluation of Chapter 9's model (validation grid)", "",
             "Written by `python benchmarks/dynamic_evaluation.py` from `dynamic_evaluation.json`; "
             "the model alone, predicted as `compression.compress(mix=False)` predicts (32 streams of "
             "cached decoding steps with refills), in bits per byte of the split's text.", "",
             f"- machine: {out.get('machine', {}).get('cpu', '?')}; {out.get('machine', {}).get('note', '')}",
             f"- model: Chapter 9's run, weights fingerprint {out.get('model', {}).get('fingerprint', '?')} "
             f"(its training steps took {out.get('model', {}).get('train seconds', 0):.0f} s when this copy "
             "was trained, on the shared machine)", ""]
    val = out.get("validation", {})
    base = val.get("rows", {}).get("none")
    per = out.get("costs")
    if base is None:
        return "\n".join(lines) + "\n"
    if per:
        steps_ms = ", ".join(f"window {w} {per[f'gradient step, window {w}'] * 1e3:.0f} ms" for w in WINDOWS)
        lines += [f"Per-step costs (`--costs`, medians of {per['rounds']} alternating rounds, same load): "
                  f"one gradient step of 32 windows ({steps_ms}), one refill "
                  f"{per['refill (32 positions)'] * 1e3:.0f} ms, one decoding step of the 32 streams "
                  f"{per['decoding step'] * 1e3:.1f} ms.", ""]
    n_bytes = val["bytes"]
    steps = -(-base["tokens"] // cz.STREAMS)
    lines += ["| setting | bits per byte | vs none | gradient steps | refills | coding s (one pass) |"
              + (" est. s | est. kB/s |" if per else ""),
              "|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if per else "")]
    ranked = sorted(val["rows"].items(), key=lambda kv: kv[1]["bits per byte"])
    for name, row in ranked:
        gain = row["bits per byte"] / base["bits per byte"] - 1
        cells = [name + (" **(chosen)**" if name == out.get("chosen") else ""), f"{row['bits per byte']:.4f}",
                 f"{100 * gain:+.2f}%", str(row["gradient_steps"]), str(row["refills"]), f"{row['coding_seconds']:.1f}"]
        if per:
            est = estimated_seconds(row, per, steps)
            cells += [f"{est:.1f}", f"{n_bytes / 1e3 / est:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    if out.get("chosen"):
        lines += ["", f"Chosen: {RULE}."]
    if per:
        cost = {name: estimated_seconds(row, per, steps) for name, row in val["rows"].items()}
        frontier = [name for name, row in ranked
                    if not any(other["bits per byte"] < row["bits per byte"] and cost[o] < cost[name]
                               for o, other in val["rows"].items())]
        lines += ["", "Rows no other row beats in both bits and est. s (the trade-off, cheapest first): "
                  + "; ".join(f"{name} ({val['rows'][name]['bits per byte']:.4f}, {cost[name]:.1f} s)"
                              for name in sorted(frontier, key=cost.get)) + "."]
    if per:
        lines += ["", "est. s: the split's decoding steps (one per token of the longest stream) plus the row's "
                  "gradient steps, its refills and, for RMS with mean squares of its own, the 8 gradient "
                  "passes that measure them, at the medians above; the compressor's own window refills and "
                  "the range coder are left out. est. kB/s: the split's bytes over est. s."]
    test = out.get("test")
    if test:
        lines += ["", f"## Test split, read once ({test['date']})", "",
                  "| setting | bits per byte | vs none |", "|---|---:|---:|"]
        for name, row in test["rows"].items():
            gain = row["bits per byte"] / test["rows"]["none"]["bits per byte"] - 1
            lines.append(f"| {name} | {row['bits per byte']:.4f} | {100 * gain:+.2f}% |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--costs", action="store_true", help="time one update, refill and decoding step")
    ap.add_argument("--rounds", type=int, default=15, help="rounds of --costs (default 15)")
    ap.add_argument("--test", action="store_true", help="code the test split once with the chosen setting")
    ap.add_argument("--only", nargs="*", help="grid rows to run (default: all)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--run", type=Path, help="a finished Chapter 9 run's folder (default: capstone.run(), which "
                    "trains it when this checkout's key has none); rows are tied to the model's fingerprint")
    a = ap.parse_args()
    from machine import cpu_name      # benchmarks/ is the script's folder

    run = capstone.run() if a.run is None else _run_from(a.run)
    fingerprint = cz.model_fingerprint(run.model).hex()
    out = _load(a.out)
    if out.get("model", {}).get("fingerprint") not in (None, fingerprint):
        print(f"{a.out} holds another model's rows ({out['model']['fingerprint']}); move it away first",
              file=sys.stderr)
        return 1
    done = json.loads((run.directory / "done.json").read_text(encoding="utf-8"))
    out["model"] = {"fingerprint": fingerprint, "train seconds": done["train_seconds"],
                    "run seconds": done["seconds"]}
    out["machine"] = {"cpu": cpu_name(), "arithmetic": cz.arithmetic(run.model),
                      "note": "seconds on a shared 2-core machine, other jobs running"}
    state = read_optimizer_state(run.directory)
    if a.costs:
        out["costs"] = costs(run, a.rounds)
        out["rule"], out["chosen"] = RULE, choose(out)
        print(out["costs"], flush=True)
        _save(out, a.out)
        return 0
    if a.test:
        return _test(run, out, state, a.out)
    ids = capstone.split_ids(run, "validation")
    n_bytes = len(run.data.validation_text.encode("utf-8"))
    val = out.setdefault("validation", {"bytes": n_bytes, "rows": {}})
    todo = {"none": None, **GRID}
    for name, fields in todo.items():
        if a.only and name not in a.only and name != "none":
            continue
        if name in val["rows"] and val["rows"][name]["config"] == fields:
            continue
        val["rows"][name] = _row(run, ids, n_bytes, fields, state)
        print(f"{name}: {val['rows'][name]['bits per byte']:.4f}", flush=True)
        _save(out, a.out)
    out["rule"], out["chosen"] = RULE, choose(out)
    _save(out, a.out)
    return 0


def _test(run, out: dict, state, path: Path) -> int:
    """The test split, once: the baseline and the setting chosen on validation."""
    if out.get("test"):
        print(f"the test split was read on {out['test']['date']}; it is read once", file=sys.stderr)
        return 1
    chosen = out.get("chosen")
    if chosen is None or set(out["validation"]["rows"]) - {"none"} != set(GRID):
        print("run the whole validation grid first: the setting is chosen there", file=sys.stderr)
        return 1
    ids = capstone.split_ids(run, "test")
    n_bytes = len(run.data.test_text.encode("utf-8"))
    rows = {name: _row(run, ids, n_bytes, out["validation"]["rows"][name]["config"], state)
            for name in ("none", chosen)}
    out["test"] = {"date": datetime.date.today().isoformat(), "bytes": n_bytes, "read": "once", "rows": rows}
    _save(out, path)
    print(json.dumps(out["test"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
