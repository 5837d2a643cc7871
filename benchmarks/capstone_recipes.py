"""Chapter 9's recipe table: the committed recipe against variants of its schedule, on validation.

    python benchmarks/capstone_recipes.py [--only NAME ...]

Each variant changes only ``capstone.TRAINING`` (seed 0, the same data, tokenizer and model
shape) and is scored as the page scores its run on the validation split: the whole
validation text, windows every ``EVAL_STRIDE`` tokens. The test split is not read. Runs are
deterministic, so the bits per byte do not depend on the machine's load; the seconds do.
Prints one Markdown row per variant for ``benchmarks/results/capstone.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path


def variants(training) -> dict:
    """name: TrainConfig, the committed recipe first."""
    after_warmup = training.max_steps - training.warmup_steps
    return {
        "committed": training,
        "decay over the last 20 %": dataclasses.replace(training, decay_steps=round(0.2 * after_warmup)),
        "a straight line to 0 from the end of warmup": dataclasses.replace(training, decay_steps=0),
        "a cosine to a tenth of the peak": dataclasses.replace(training, decay="cosine", decay_steps=0,
                                                               min_lr=training.learning_rate / 10),
    }


def main() -> None:
    from netcl_lite import capstone
    from netcl_lite.core.device import manager
    from netcl_lite.nn import DecoderLM
    from netcl_lite.text import BPETokenizer

    table = variants(capstone.TRAINING)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", choices=sorted(table), default=sorted(table))
    args = ap.parse_args()
    queue = manager.default().queue
    d = capstone.data()
    print(f"machine: {capstone.machine(queue)}; recipe {capstone.recipe_hash()}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in [n for n in table if n in args.only]:
            folder = Path(tmp) / "run"
            capstone._train_into(folder, d, queue, progress=True, training=table[name])
            tok = BPETokenizer.load(folder / "tokenizer.json")
            model = DecoderLM.from_pretrained(folder, queue=queue)
            ids = [int(i) for i in tok.encode_ordinary(d.validation_text)]
            bpb = capstone.bits_per_byte(model, ids, tok, table[name].block_size, stride=capstone.EVAL_STRIDE)
            log = json.loads((folder / "log.json").read_text(encoding="utf-8"))
            print(f"| {name} | {table[name].max_steps} | {bpb:.4f} | {log['train'][-1]['seconds']:.0f} s |",
                  flush=True)


if __name__ == "__main__":
    main()
