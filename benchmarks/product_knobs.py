"""The training step's slow product shapes alone, under other values of ``ops/matmul.py``'s limits.

    python benchmarks/product_knobs.py [--rounds 3 --repeats 15]
    python benchmarks/product_knobs.py --in-step "LAYOUT_EFFICIENCY 0.95" [--rounds 10 --steps 5]

Chapter 9's step (``profile_block.py --step``) runs its K = 128 and K = 320 products and its
weight gradients (K = 2048, the tokens) at 150-250 GFLOP/s. This times each of those shapes alone,
operands hot, on device tensors: each round tries every variant of the layout and K-split limits in
turn (the module's values set, then restored), each shape the fastest of ``--repeats`` calls by
kernel events (the K split's join included). A variant that is not faster here is not a lever for
the step. A last row, "as is, cold", times the present limits with a pass over 64 MiB (a product
of two 4096 x 4096 tensors, element by element, untimed) before each call, so the operands come from
memory as they do in the step, where each launch follows others' passes. Writes
``benchmarks/results/product_knobs.json``.

``--in-step VARIANT`` instead runs Chapter 9's training step (``profile_step.build_step``) in bursts of
``--steps``, the present limits and the variant alternating in one process (the order flipped each
round), and prints each burst's process CPU and wall ms per step and the per-round CPU ratios
(variant / present): on a machine shared with other work the CPU ratio is the guide. Prints only.
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

#: the row of the present limits with the operands evicted from the caches before each call
COLD = "as is, cold"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=15, help="calls per shape and variant in a round (fastest kept)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--in-step", choices=[v for v in VARIANTS if VARIANTS[v]], metavar="VARIANT",
                    help="time Chapter 9's step with this variant against the present limits")
    ap.add_argument("--steps", type=int, default=5, help="steps per burst with --in-step")
    args = ap.parse_args()
    if args.rounds < 1 or args.repeats < 1 or args.steps < 1:
        ap.error("--rounds, --repeats and --steps must be at least 1")

    import netcl_lite as nl
    from netcl_lite import ops
    from netcl_lite.core.stream import profile_kernels

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from machine import cpu_name  # noqa: E402

    mm = sys.modules["netcl_lite.ops.matmul"]     # the module (``ops.matmul`` is the function)
    device = nl.device()
    if args.in_step:
        in_step(args, mm, device.queue)
        return
    rng = np.random.default_rng(0)
    operands = [(nl.tensor(rng.standard_normal(sa).astype(np.float32)),
                 nl.tensor(rng.standard_normal(sb).astype(np.float32))) for _, sa, sb, _, _ in SHAPES]
    own = {name: getattr(mm, name) for limits in VARIANTS.values() for name in limits}

    evict = nl.tensor(rng.standard_normal((4096, 4096)).astype(np.float32))      # 64 MiB, past the caches

    def fastest(a, b, ta, tb, cold=False) -> float:
        best = float("inf")
        for _ in range(args.repeats):
            if cold:
                ops.mul(evict, evict)
            with profile_kernels(device.queue) as prof:
                ops.matmul(a, b, transpose_a=ta, transpose_b=tb)
            best = min(best, sum(row[3] for row in prof.rows))
        return best

    load_before = os.getloadavg()[0]
    ms: dict[str, dict[str, list[float]]] = {v: {s[0]: [] for s in SHAPES} for v in [*VARIANTS, COLD]}
    try:
        for _ in range(args.rounds):
            for variant, limits in VARIANTS.items():
                for name, value in {**own, **limits}.items():
                    setattr(mm, name, value)
                for (shape, _, _, ta, tb), (a, b) in zip(SHAPES, operands):
                    ms[variant][shape].append(fastest(a, b, ta, tb))
            for name, value in own.items():
                setattr(mm, name, value)
            for (shape, _, _, ta, tb), (a, b) in zip(SHAPES, operands):
                ms[COLD][shape].append(fastest(a, b, ta, tb, cold=True))
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


def in_step(args, mm, queue) -> None:
    """``--in-step``: the step's process CPU and wall ms per step, present limits against the variant."""
    import time

    from profile_step import build_step  # noqa: E402

    variants = {"as is": {name: getattr(mm, name) for name in VARIANTS[args.in_step]},
                args.in_step: VARIANTS[args.in_step]}
    step, _, _ = build_step(queue)
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    wall: dict[str, list[float]] = {v: [] for v in variants}
    try:
        for r in range(args.rounds + 1):                 # round 0 warms both (builds, plans), untimed
            for variant in (list(variants) if r % 2 else list(variants)[::-1]):
                for name, value in variants[variant].items():
                    setattr(mm, name, value)
                step()
                queue.finish()
                began_cpu, began = time.process_time(), time.perf_counter()
                for _ in range(args.steps):
                    step()
                queue.finish()
                if r:
                    cpu[variant].append((time.process_time() - began_cpu) / args.steps * 1e3)
                    wall[variant].append((time.perf_counter() - began) / args.steps * 1e3)
    finally:
        for name, value in variants["as is"].items():
            setattr(mm, name, value)
    ratios = [b / a for a, b in zip(cpu["as is"], cpu[args.in_step])]
    median = lambda v: sorted(v)[len(v) // 2]
    print(f"load {os.getloadavg()[0]:.2f}; {args.rounds} rounds of {args.steps} steps; ms per step (median)")
    for variant in variants:
        print(f"{variant}: CPU {median(cpu[variant]):.1f}, wall {median(wall[variant]):.1f}")
    print(f"CPU ratio {args.in_step} / as is: median {median(ratios):.3f}, rounds "
          + " ".join(f"{x:.3f}" for x in ratios))


if __name__ == "__main__":
    main()
