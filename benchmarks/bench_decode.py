"""Cost of one cached decode step as the cache fills: flat per token, O(1) allocations.

    python benchmarks/bench_decode.py [--layers 4 --dim 256 --heads 4 --kv-heads 2 --hidden 704 --max-len 2048]
                                      [--batch 1] [--out benchmarks/results/decode.json]

Two ways to decode one token of each of ``--batch`` streams at a time into a KVCache
(appended in place; attention reads the filled prefix through its length), with the same shapes:

* ``blocks``: a stack of pre-norm DecoderBlocks called on the one new position, the
  training path's ops (~17 launches per layer);
* ``fused``: a DecoderLM of the same widths (vocabulary ``--vocab``) whose
  ``decode_step`` runs the embedding, the layers and the head as one kernel per four layers
  (:class:`netcl_lite.ops.decode.StepLaunch`); its step includes the logits read back.

At each cache length T the step is timed (median of ``--runs`` steps, each ending with
the token's output read back) and its device allocations counted; the fused step's launches
and kernel time come from OpenCL profiling events. Attention's own work grows as O(T) per
step, which at these widths is small next to the projections and the feed-forward, so the
time per token should stay nearly flat from T = 128 to 2048; the allocations must not
change at all.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

import netcl_lite as nl
from netcl_lite import capstone
from netcl_lite.core.stream import profile_kernels
from netcl_lite.core.tensor import track_allocations
from netcl_lite.nn import DecoderLM, LMConfig
from netcl_lite.nn.transformer import DecoderBlock, KVCache


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("layers", 4), ("dim", 256), ("heads", 4), ("kv-heads", 2), ("hidden", 704),
                          ("max-len", 2080), ("runs", 9), ("vocab", 2048), ("batch", 1)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "decode.json"))
    a = ap.parse_args()
    dev = nl.device()
    q = dev.queue
    blocks = [DecoderBlock(q, a.dim, a.heads, a.kv_heads, a.hidden, a.max_len, seed=i) for i in range(a.layers)]
    cache = KVCache(q, a.layers, a.batch, a.kv_heads, a.dim // a.heads, a.max_len)
    rng = np.random.default_rng(0)
    tokens = rng.standard_normal((a.max_len, a.batch, 1, a.dim)).astype(np.float32)

    def block_step(position):
        h = tokens[position]
        for layer, block in enumerate(blocks):
            h = block(h, cache, layer).value
        return h.numpy()

    config = LMConfig(vocab_size=a.vocab, hidden_size=a.dim, intermediate_size=a.hidden, num_hidden_layers=a.layers,
                      num_attention_heads=a.heads, num_key_value_heads=a.kv_heads, max_position_embeddings=a.max_len)
    model = DecoderLM(config, queue=q, seed=0)
    lm_cache = KVCache(q, a.layers, a.batch, a.kv_heads, a.dim // a.heads, a.max_len)
    ids = rng.integers(0, a.vocab, (a.max_len, a.batch))

    def fused_step(position):
        return model.decode_step(ids[position], lm_cache)

    marks = [t for t in (128, 256, 512, 1024, 2048) if t + 2 * a.runs < a.max_len] or [a.max_len // 2]
    results = {"blocks": [], "fused": []}
    kernel_ms = []
    for name, step in (("blocks", block_step), ("fused", fused_step)):
        position = 0
        for mark in marks:
            while position < mark:                      # fill the cache up to the mark
                step(position)
                position += 1
            times = []
            for _ in range(a.runs):
                with track_allocations() as seen:
                    t0 = time.perf_counter()
                    step(position)
                    times.append(time.perf_counter() - t0)
                position += 1
            results[name].append((mark, statistics.median(times) * 1e3, seen.buffers, seen.bytes))
            if name == "fused":
                with profile_kernels(q) as prof:
                    for _ in range(a.runs):
                        step(position)
                        position += 1
                launches = sum(row[2] for row in prof.table()) / a.runs
                kernel_ms.append((launches, sum(row[3] for row in prof.table()) / a.runs))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{capstone.machine(q)}; {a.layers} layers D={a.dim} h={a.heads} g={a.kv_heads} hidden={a.hidden}, "
          f"{a.batch} stream(s), fused with vocabulary {a.vocab}; load average {load}")
    print(f"{'cache length':>13}{'blocks ms':>11}{'allocations':>13}{'bytes':>10}"
          f"{'fused ms':>10}{'allocations':>13}{'bytes':>10}{'launches':>10}{'kernels ms':>12}")
    for (mark, ms, buffers, nbytes), (_, fms, fbuf, fbytes), (launches, kms) in zip(results["blocks"],
                                                                                    results["fused"], kernel_ms):
        print(f"{mark:>13}{ms:>11.2f}{buffers:>13}{nbytes:>10}{fms:>10.2f}{fbuf:>13}{fbytes:>10}"
              f"{launches:>10.0f}{kms:>12.3f}")
    for name, rows in results.items():
        first, last = rows[0], rows[-1]
        print(f"{name}: T = {last[0]} vs T = {first[0]}: {last[1] / first[1]:.2f}x the time per token, "
              f"{'the same' if last[2:] == first[2:] else 'different'} allocations")
    print(f"fused / blocks at T = {marks[0]}: {results['fused'][0][1] / results['blocks'][0][1]:.2f}x the time")
    out = {"machine": capstone.machine(q), "load average": os.getloadavg(), "config": vars(a),
           "rows": [{"cache length": mark, "blocks ms": ms, "blocks allocations": buffers, "fused ms": fms,
                     "fused allocations": fbuf, "fused launches per step": launches, "fused kernels ms": kms}
                    for (mark, ms, buffers, _), (_, fms, fbuf, _), (launches, kms)
                    in zip(results["blocks"], results["fused"], kernel_ms)]}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
