"""The compressor's mix taken apart on the validation split: one row per technique, and the designs not kept.

    python benchmarks/mix_ablation.py [--model DIR] [--split validation] [--designs] [--speed]

Rows (``netcl_lite.mixing.ablation``): the model alone, the linear mix, then each technique of
``netcl_lite.context_mixing`` added in turn, then dynamic evaluation; cross-entropies exactly as
the compressor predicts (its streams, its model steps, its mixer), in bits per byte of the split.

``--designs`` adds the design compared with the one kept: each token a path of 10 binary
decisions down the vocabulary's tree, every input's distribution giving each node's probability
(subtree sums), mixed per node in the stretch domain with weights per (depth, order reached),
then an APM per node; over the model, the n-gram's distributions and the cache (as the linear mix
takes them), and again over the linear mix itself.

``--speed`` times each row's mixer alone (no model, the model's probabilities read from memory):
the host's milliseconds per coding step of the 32 streams, medians of interleaved rounds.

Writes ``benchmarks/results/mix_ablation.json`` and ``.md`` (the JSON's rows merge with what an
earlier run wrote, so ``--designs`` or ``--speed`` alone adds to it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from netcl_lite import capstone, mixing
from netcl_lite import compression as cz
from netcl_lite.context_mixing import ContextMixer, squash
from netcl_lite.ngram import ORDERS, Mixer, NGram
from netcl_lite.nn import DecoderLM
from netcl_lite.text import BPETokenizer

from bench_kernels import cpu_name  # noqa: E402  (benchmarks/ is the script's folder)

RESULTS = Path(__file__).parent / "results"


def load_run(folder: str | None) -> capstone.Run:
    """Chapter 9's run (trained if needed), or the run kept in ``folder`` as it is."""
    if folder is None:
        return capstone.run()
    folder = Path(folder)
    with np.load(folder / "ids.npz") as ids:
        train, held = ids["train"], ids["held_out"]
    log = json.loads((folder / "log.json").read_text())
    return capstone.Run(DecoderLM.from_pretrained(folder), BPETokenizer.load(folder / "tokenizer.json"),
                        capstone.data(), train, held, log, folder)


# -- the design not kept: binary decomposition with logistic mixing per node -----------------------

class BinaryMix:
    """Each input's distribution as node probabilities of the vocabulary's tree, mixed per node:
    p = squash(Σ w[depth, order reached] · st(p_i) + bias), then an APM per (depth, order reached)
    averaged with it in the stretch domain; the weights move by (bit − p) · st(p_i), the APM's
    entries toward the bit, on the coded token's path only."""

    def __init__(self, inputs: int, vocab: int, lr: float = 0.005, apm_rate: float = 0.02):
        self.bits = int(vocab - 1).bit_length()
        self.depth_of = np.repeat(np.arange(self.bits), 1 << np.arange(self.bits))
        self.w = np.zeros((self.bits, ORDERS + 1, inputs + 1))
        self.w[..., 0] = 1.0
        self.apm = np.tile(np.linspace(-8, 8, 33), (self.bits * (ORDERS + 1), 1))
        self.lr, self.apm_rate = lr, apm_rate

    def node_stretch(self, p: np.ndarray) -> np.ndarray:
        """(B, inputs, vocab) -> (B, inputs, nodes): log(right subtree) − log(left subtree)."""
        levels = [np.maximum(p, 1e-300)]
        for _ in range(self.bits - 1):
            levels.append(levels[-1][..., ::2] + levels[-1][..., 1::2])
        logs = [np.log(level) for level in reversed(levels)]
        return np.clip(np.concatenate([lg[..., 1::2] - lg[..., ::2] for lg in logs], axis=-1), -12, 12)

    def cost(self, parts: list, reached: np.ndarray, tokens: np.ndarray, active: np.ndarray) -> np.ndarray:
        """Bits of each stream's ``tokens`` under the mix, then learn from them."""
        b = tokens.size
        st = self.node_stretch(np.stack(parts, axis=1))
        st = np.concatenate([st, np.ones((b, 1, st.shape[2]))], axis=1)
        w = self.w[self.depth_of[None, :], reached[:, None]]                     # (B, nodes, inputs)
        x = np.einsum("bin,bni->bn", st, w)
        ctx = self.depth_of[None, :] * (ORDERS + 1) + reached[:, None]
        pos = (np.clip(x, -8, 8) + 8) * 2
        i = np.minimum(pos.astype(np.int64), 31)
        f = pos - i
        a = (1 - f) * self.apm[ctx, i] + f * self.apm[ctx, i + 1]
        q = np.clip(squash((x + a) / 2), 1e-9, 1 - 1e-9)
        d = np.arange(self.bits)
        nodes = (1 << d) - 1 + (tokens[:, None] >> (self.bits - d))
        bit = (tokens[:, None] >> (self.bits - 1 - d)) & 1
        r = np.arange(b)[:, None]
        bits = -np.log2(np.where(bit == 1, q[r, nodes], 1 - q[r, nodes])).sum(axis=1)
        rows = np.flatnonzero(active)
        rr, nn, yy = rows[:, None], nodes[rows], bit[rows]
        err = yy - squash(x[rr, nn])
        np.add.at(self.w, (np.broadcast_to(d, nn.shape), np.broadcast_to(reached[rows, None], nn.shape)),
                  self.lr * err[..., None] * st[rr, :, nn])
        g = self.apm_rate * (yy - squash(a[rr, nn]))
        np.add.at(self.apm, (ctx[rr, nn], i[rr, nn]), g * (1 - f[rr, nn]))
        np.add.at(self.apm, (ctx[rr, nn], i[rr, nn] + 1), g * f[rr, nn])
        return bits


def binary_designs(run: capstone.Run, split: str) -> dict:
    """Bits per byte of the binary decomposition over the linear mix's inputs, and over the linear mix."""
    ids = capstone.split_ids(run, split)
    lengths = cz.segments(ids.size, cz.stream_count(ids.size))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    vocab = run.model.config.vocab_size
    ngram, linear = NGram(run.train_ids, vocab, lengths.size), Mixer(ORDERS)
    designs = {"binary decomposition over the model, the n-gram's distributions and the cache": BinaryMix(6, vocab),
               "binary decomposition over the linear mix, the model, the n-gram and the cache": BinaryMix(4, vocab)}
    bits = dict.fromkeys(designs, 0.0)
    predictor = cz.make_predictor(run.model, run.tokenizer, lengths, cz.kept_positions(run.model), False,
                                  np.zeros(0, np.int64))
    try:
        for step in range(int(lengths[0])):
            p_model = predictor.probabilities()
            n = p_model.shape[0]
            full = np.zeros(lengths.size, np.int64)
            full[:n] = ids[offsets[:n] + step]
            pm = np.repeat(p_model[:1], lengths.size, axis=0)
            pm[:n] = p_model
            q, reached, total = ngram.predict()
            lin = linear.mix([pm, *ngram.snapshots, q], reached, total)
            linear.update(full, lin, predictor.active)
            inputs = ([pm, *ngram.snapshots[:-1], q, ngram.snapshots[-1]], [lin, pm, q, ngram.snapshots[-1]])
            for (name, design), parts in zip(designs.items(), inputs):
                bits[name] += float(design.cost(parts, reached, full, predictor.active)[:n].sum())
            ngram.update(full, predictor.active)
            predictor.advance(full[:n])
    finally:
        predictor.close()
    n_bytes = len(getattr(run.data, f"{split}_text").encode("utf-8"))
    return {name: b / n_bytes for name, b in bits.items()}


def mixer_speed(run: capstone.Run, split: str, steps: int = 200, rounds: int = 5) -> dict:
    """Host milliseconds per coding step of each row's mixer (predict and update), the model's
    probabilities read from memory; medians of interleaved rounds."""
    ids = capstone.split_ids(run, split)
    lengths = cz.segments(ids.size, cz.stream_count(ids.size))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    predictor = cz.make_predictor(run.model, run.tokenizer, lengths, cz.kept_positions(run.model), False,
                                  np.zeros(0, np.int64))
    model_p = []
    try:
        for step in range(steps):
            model_p.append(predictor.probabilities().copy())
            predictor.advance(ids[offsets[:model_p[-1].shape[0]] + step])
    finally:
        predictor.close()
    rows = {name: t for name, t, adapt in mixing.ROWS if t is not None and not adapt}
    times = {name: [] for name in rows}
    vocab = run.model.config.vocab_size
    for _ in range(rounds):
        for name, techniques in rows.items():
            mixer = ContextMixer(run.train_ids, vocab, lengths, run.tokenizer.vocab, techniques)
            began = time.perf_counter()
            for step, p in enumerate(model_p):
                mixer.predict(p)
                mixer.update(ids[offsets + step], lengths > step)
            times[name].append((time.perf_counter() - began) / steps * 1e3)
    return {name: {"median ms per step": statistics.median(t), "rounds": t} for name, t in times.items()}


def reference_of(name: str, names: list[str]) -> str | None:
    """The row a row is measured against: the row above for each technique added, the whole mix
    for dynamic evaluation added to it and for each technique left out of it, the model alone for
    the model adapting and for the linear mix."""
    whole = next(n for n in names if n.startswith("+ bias"))
    if name == "the model alone":
        return None
    if name.startswith("linear") or name == "the model alone, with dynamic evaluation":
        return "the model alone"
    if name.startswith("the whole mix without") or name.startswith("+ dynamic evaluation"):
        return whole
    return names[names.index(name) - 1]


def write_markdown(out: dict, path: Path) -> None:
    lines = [f"# The compressor's mix, technique by technique ({out['split']} split)", "",
             f"Written by `python benchmarks/mix_ablation.py` from `{path.with_suffix('.json').name}`: "
             "cross-entropies exactly as `compression.compress` predicts, in bits per byte of the split's text "
             f"({out['bytes']:,} bytes); each row adds one technique to the row above it.", "",
             f"- machine: {out['machine']}", f"- model: {out['model']}", ""]
    rows = out.get("rows", {})
    if rows:
        lines += ["| mix | bits per byte | change | against |", "|---|---:|---:|---|"]
        for name, bpb in rows.items():
            ref = reference_of(name, list(rows))
            change = f"{bpb / rows[ref] - 1:+.2%}" if ref else ""
            lines.append(f"| {name} | {bpb:.4f} | {change} | {ref or ''} |")
        lines.append("")
    if out.get("designs"):
        lines += ["Designs compared with the one kept (binary decomposition, logistic mixing per node):", "",
                  "| design | bits per byte |", "|---|---:|"]
        lines += [f"| {name} | {bpb:.4f} |" for name, bpb in out["designs"].items()] + [""]
    if out.get("speed"):
        lines += [f"Host time of each row's mixer, ms per coding step of {out['streams']} streams "
                  f"(medians of {len(next(iter(out['speed'].values()))['rounds'])} interleaved rounds; "
                  f"{out['speed note']}):", "", "| mix | ms per step |", "|---|---:|"]
        lines += [f"| {name} | {v['median ms per step']:.2f} |" for name, v in out["speed"].items()] + [""]
    path.write_text("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="a Chapter 9 run's folder (default: capstone.run())")
    ap.add_argument("--split", choices=("validation", "test"), default="validation")
    ap.add_argument("--designs", action="store_true", help="also the binary-decomposition designs (minutes)")
    ap.add_argument("--speed", action="store_true", help="also each mixer's host time per step")
    ap.add_argument("--no-rows", action="store_true", help="skip the ablation rows (kept from an earlier run)")
    ap.add_argument("--out", default=str(RESULTS / "mix_ablation.json"))
    a = ap.parse_args()
    run = load_run(a.model)
    path = Path(a.out)
    out = json.loads(path.read_text()) if path.is_file() else {}
    if out.get("split", a.split) != a.split:
        out = {}
    ids = capstone.split_ids(run, a.split)
    out.update({"split": a.split, "bytes": len(getattr(run.data, f"{a.split}_text").encode("utf-8")),
                "streams": int(cz.stream_count(ids.size)), "machine": f"{cpu_name()}; {cz.arithmetic(run.model)}",
                "model": f"Chapter 9's run, weights fingerprint {cz.model_fingerprint(run.model).hex()}"})
    if not a.no_rows:
        out["rows"] = mixing.ablation(run, a.split)
        print(json.dumps(out["rows"], indent=1), flush=True)
    if a.designs:
        out["designs"] = binary_designs(run, a.split)
        print(json.dumps(out["designs"], indent=1), flush=True)
    if a.speed:
        load = list(__import__("os").getloadavg())
        out["speed"] = mixer_speed(run, a.split)
        out["speed note"] = (f"a shared 2-core machine, load average {load[0]:.1f} before; "
                             "compare rows of one run, not runs")
        print(json.dumps(out["speed"], indent=1), flush=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    write_markdown(out, path.with_suffix(".md"))


if __name__ == "__main__":
    main()
