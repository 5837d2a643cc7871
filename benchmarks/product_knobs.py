"""The training step's slow product shapes alone, under other values of ``ops/matmul.py``'s limits.

    python benchmarks/product_knobs.py [--rounds 3 --repeats 15]

Chapter 9's step (``profile_block.py --step``) runs its K = 128 and K = 320 products and its
weight gradients (K = 2048, the tokens) at 150-250 GFLOP/s. This times each of those shapes alone,
operands hot, on device tensors: each round tries every variant of the layout and K-split limits in
turn (the module's values set, then restored), each shape the fastest of ``--repeats`` calls by
kernel events (the K split's join included). A variant that is not faster here is not a lever for
the step; the gap between these times and the step's own per-launch times is what the operands'
trips through memory between launches cost. Writes ``benchmarks/results/product_knobs.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "product_knobs.json"

#: (name, A's shape, B's shape, transpose_a, transpose_b): the step's products, as profile_block names them
SHAPES = [
    ("2048x320x128 (W2's input gradient)", (2048, 128), (320, 128), False, True),
    ("2048x128x128 (attention projections)", (2048, 128), (128, 128), False, False),
    ("2048x128x320 (W2)", (2048, 320), (320, 128), False, False),
    ("128x320x2048 (W1, W3 gradients)", (2048, 128), (2048, 320), True, False),
    ("320x128x2048 (W2's gradient)", (2048, 320), (2048, 128), True, False),
    ("128x256x2048 (K, V gradients)", (2048, 128), (2048, 256), True, False),
]

#: variant name -> the module limits it sets (the rest keep their values)
VARIANTS = {
    "as is": {},
    "LAYOUT_EFFICIENCY 0.95": {"LAYOUT_EFFICIENCY": 0.95},
    "LAYOUT_EFFICIENCY 0.8": {"LAYOUT_EFFICIENCY": 0.8},
    "MAX_GROUP_PANELS 2": {"MAX_GROUP_PANELS": 2},
    "MAX_GROUP_PANELS 1": {"MAX_GROUP_PANELS": 1},
    "SPLIT_SLICE 1024": {"SPLIT_SLICE": 1024},
    "SPLIT_SLICE 256, MAX_SPLITS 8": {"SPLIT_SLICE": 256, "MAX_SPLITS": 8},
    "no K split": {"MAX_SPLITS": 1},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=15, help="calls per shape and variant in a round (fastest kept)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()

    import netcl_lite as nl
    from netcl_lite import ops
    from netcl_lite.core.stream import profile_kernels

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from machine import cpu_name  # noqa: E402

    mm = sys.modules["netcl_lite.ops.matmul"]     # the module (``ops.matmul`` is the function)
    device = nl.device()
    rng = np.random.default_rng(0)
    operands = [(nl.tensor(rng.standard_normal(sa).astype(np.float32)),
                 nl.tensor(rng.standard_normal(sb).astype(np.float32))) for _, sa, sb, _, _ in SHAPES]
    own = {name: getattr(mm, name) for limits in VARIANTS.values() for name in limits}

    def fastest(a, b, ta, tb) -> float:
        best = float("inf")
        for _ in range(args.repeats):
            with profile_kernels(device.queue) as prof:
                ops.matmul(a, b, transpose_a=ta, transpose_b=tb)
            best = min(best, sum(row[3] for row in prof.rows))
        return best

    load_before = os.getloadavg()[0]
    ms: dict[str, dict[str, list[float]]] = {v: {s[0]: [] for s in SHAPES} for v in VARIANTS}
    try:
        for _ in range(args.rounds):
            for variant, limits in VARIANTS.items():
                for name, value in {**own, **limits}.items():
                    setattr(mm, name, value)
                for (shape, _, _, ta, tb), (a, b) in zip(SHAPES, operands):
                    ms[variant][shape].append(fastest(a, b, ta, tb))
    finally:
        for name, value in own.items():
            setattr(mm, name, value)

    print(f"{device.name} ({cpu_name()}); load {load_before:.2f} -> {os.getloadavg()[0]:.2f}; "
          f"{args.rounds} rounds, fastest of {args.repeats} calls; ms (fastest round), ratio to 'as is'")
    print("| variant | " + " | ".join(s[0] for s in SHAPES) + " |")
    print("|---" * (len(SHAPES) + 1) + "|")
    for variant, per_shape in ms.items():
        cells = [f"{min(v):.3f} ({min(v) / min(ms['as is'][s]):.2f})" for s, v in per_shape.items()]
        print(f"| {variant} | " + " | ".join(cells) + " |")
    args.out.write_text(json.dumps({
        "device": device.name, "cpu": cpu_name(), "load": [load_before, os.getloadavg()[0]],
        "rounds": args.rounds, "repeats": args.repeats,
        "shapes": {s[0]: {"a": s[1], "b": s[2], "transpose_a": s[3], "transpose_b": s[4]} for s in SHAPES},
        "variants": VARIANTS, "ms": ms,
    }, indent=1) + "\n")


if __name__ == "__main__":
    main()
