"""Chapter 9's training step with its forward and backward in micro-batches, against the step as it is,
alternating in one process.

    python benchmarks/microbatch_step.py [--chunks 2 4] [--rounds 10 --steps 5]

The question: the recipe's products at K = 128 run 1.4-1.6x slower inside the step than alone, part
of it their operands arriving from beyond L2 (``results/tried.md``). A step whose batch of 32 windows
runs as ``n`` chunks of 32 / n windows, each chunk's forward then its backward, keeps each chunk's
activations (a 2048 x 128 float32 activation is 1 MiB; at 4 chunks 256 KiB) closer to L2 while its
backward reads them. The weight gradients add up across chunks in the products that accumulate into
``.grad`` (``autograd``'s fused accumulation); each chunk's loss gradient is 1 / n (exact for a power
of two), so the gradient is the whole batch's mean up to the order of the sums. Then clipping and
AdamW as in the step. Both steps are recorded and replayed as ``train`` runs them
(``ChunkedStep`` subclasses ``train.RecordedStep``).

First a check (``check``): one batch's gradients through both steps on one model, then both steps
from the same initial weights on the same batches for ``--check-steps`` steps; the largest relative
differences of the gradients, the losses and the parameters after them are printed and recorded
(rounding only: float32 sums in another order). Then the timing, as ``ffn_fusion.py`` times: the
steps take turns going first, round by round; each round runs ``--steps`` steps of each and charges
each its median wall time and the process's CPU time per step. Reported: medians over rounds,
per-round ratios chunked / whole, and each step's launches. Writes
``benchmarks/results/microbatch_step.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernels import pocl_target  # noqa: E402
from ffn_fusion import alternating_rounds  # noqa: E402
from machine import cpu_name  # noqa: E402
from profile_step import build_step  # noqa: E402
from step_ceiling import launches_per_step  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "microbatch_step.json"


def chunked_step(chunks: int):
    """A ``RecordedStep`` subclass running the batch as ``chunks`` micro-batches."""
    from netcl_lite import autograd as ag
    from netcl_lite import ops
    from netcl_lite.core.replay import Replay
    from netcl_lite.core.stream import stream_of
    from netcl_lite.core.tensor import Tensor
    from netcl_lite.optim import clip_grad_norm
    from netcl_lite.train import RecordedStep

    class ChunkedStep(RecordedStep):
        def __init__(self, model, grad_clip, batch_size, block_size):
            super().__init__(model, grad_clip, batch_size, block_size)
            if batch_size % chunks:
                raise ValueError(f"batch_size={batch_size} must be a multiple of chunks={chunks}")
            queue, rows = model.queue, batch_size // chunks
            self.rows = rows
            self.xs = [Tensor.empty(queue, (rows, block_size), np.int32) for _ in range(chunks)]
            self.ys = [Tensor.empty(queue, (rows, block_size), np.int32) for _ in range(chunks)]
            self.share = Tensor.from_host(queue, np.full((), 1.0 / chunks, np.float32))

        def _eager(self):
            total = None
            for xc, yc in zip(self.xs, self.ys):
                with ag.Tape() as tape:
                    loss = self.model.loss(xc, yc)
                tape.backward(loss, grad=self.share)
                part = ops.scale(loss.value, 1.0 / chunks)
                total = part if total is None else ops.add(total, part)
            return total, clip_grad_norm(self.params, self.grad_clip, wait=False)

        def __call__(self, x, y):
            stream = stream_of(self.x.queue)
            for name, host, devs in (("x", x, self.xs), ("y", y, self.ys)):
                host = np.asarray(host)
                if host.shape != self.x.shape or host.dtype.kind not in "iu":
                    raise ValueError(f"{name} must be integer ids of shape {self.x.shape}, got {host.dtype} {host.shape}")
                if host.min() < 0 or host.max() >= self.vocab:
                    raise ValueError(f"{name} must lie in [0, {self.vocab})")
                host = np.ascontiguousarray(host, dtype=np.int32)
                for i, dev in enumerate(devs):
                    stream.write(dev.buffer, host[i * self.rows:(i + 1) * self.rows])
            bound = tuple(p.value.buffer.int_ptr for p in self.params.values())
            if self.replay is not None and bound == self._bound:
                loss, clip, *grads = self.replay.run()
                for p, g in zip(self.params.values(), grads):
                    p.grad = g
                return loss, clip
            with stream.record() as recording:
                loss, clip = self._eager()
            grads = [p.grad for p in self.params.values()]
            self.replay = Replay(self.x.queue, recording, bound=[p.value for p in self.params.values()]
                                 + self.xs + self.ys + [self.share], outputs=[loss, clip, *grads])
            self._bound = bound
            return loss, clip

    return ChunkedStep


def check(queue, chunks: int, steps: int) -> dict:
    """Chunked against whole, from the same weights on the same batches: the largest difference of the
    first step's gradients, relative to each tensor's largest gradient; of the losses over ``steps``
    steps; of the parameters after them, relative to each tensor's largest weight (AdamW divides by
    the gradients' running size, so a rounding-sized change of a near-zero gradient moves its weight
    by up to a learning rate's step)."""
    from netcl_lite import capstone
    from netcl_lite.nn import DecoderLM, LMConfig
    from netcl_lite.train import RecordedStep

    cfg = capstone.TRAINING
    model = DecoderLM(LMConfig(vocab_size=capstone.VOCAB_SIZE, **capstone.MODEL), queue=queue, seed=0)
    ids = np.random.default_rng(1).integers(0, capstone.VOCAB_SIZE, (cfg.batch_size, cfg.block_size + 1))
    grads = {}
    for name, cls in (("whole", RecordedStep), ("chunked", chunked_step(chunks))):
        step = cls(model, cfg.grad_clip, cfg.batch_size, cfg.block_size)
        for _ in range(2):                                   # the eager run, then a replay
            for p in model.parameters().values():
                p.grad = None
            step(ids[:, :-1], ids[:, 1:])
        grads[name] = {k: p.grad.numpy() for k, p in model.parameters().items()}
    for p in model.parameters().values():
        p.grad = None
    grad_rel = max(float(np.abs(grads["whole"][k] - grads["chunked"][k]).max() / np.abs(grads["whole"][k]).max())
                   for k in grads["whole"])
    whole, model_w, _ = build_step(queue)
    part, model_c, _ = build_step(queue, step_class=chunked_step(chunks))
    losses = [(whole(), part()) for _ in range(steps)]
    loss_rel = max(abs(a - b) / abs(a) for a, b in losses)
    pw, pc = model_w.parameters(), model_c.parameters()
    param_rel = max(float(np.abs(pw[k].value.numpy() - pc[k].value.numpy()).max()
                          / np.abs(pw[k].value.numpy()).max()) for k in pw)
    return {"steps": steps, "max_rel_grad_first_step": grad_rel, "losses": losses, "max_rel_loss": loss_rel,
            "max_rel_param": param_rel}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--check-steps", type=int, default=5)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.rounds < 1 or args.steps < 1 or any(c < 2 for c in args.chunks):
        raise ValueError("--rounds and --steps must be >= 1, --chunks >= 2")

    import netcl_lite as nl

    device = nl.device()
    queue = device.queue
    checks = {str(c): check(queue, c, args.check_steps) for c in args.chunks}
    for c, res in checks.items():
        print(f"{c} chunks: largest relative difference: first step's gradients {res['max_rel_grad_first_step']:.2e}; "
              f"over {res['steps']} steps, loss {res['max_rel_loss']:.2e}, parameters {res['max_rel_param']:.2e}",
              flush=True)

    steps = {"whole": build_step(queue)[0]}
    for c in args.chunks:
        steps[f"{c} chunks"] = build_step(queue, step_class=chunked_step(c))[0]
    launches = {}
    for name, step in steps.items():
        for _ in range(3):
            step()
        launches[name] = launches_per_step(queue, step)
    names = list(steps)
    load_before = os.getloadavg()[0]
    wall, cpu = alternating_rounds(steps, args.rounds, args.steps)
    load_after = os.getloadavg()[0]
    ratio = {n: {"wall": [a / b for a, b in zip(wall[n], wall["whole"])],
                 "cpu": [a / b for a, b in zip(cpu[n], cpu["whole"])]} for n in names if n != "whole"}
    report = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": device.name, "cpu": cpu_name(), "pocl_target": pocl_target(device.cl_device),
        "cpus": os.cpu_count(), "loadavg_1min_before_after": [round(load_before, 2), round(load_after, 2)],
        "under_load": max(load_before, load_after) > (os.cpu_count() or 1),
        "rounds": args.rounds, "steps_per_round": args.steps,
        "statistic": "medians over rounds; a round's wall figure is the median step of its burst, its CPU "
                     "figure the burst's process CPU per step; ratios chunked / whole per round",
        "check": checks, "launches_per_step": launches,
        "median": {"wall_ms": {k: statistics.median(v) for k, v in wall.items()},
                   "cpu_ms": {k: statistics.median(v) for k, v in cpu.items()},
                   "ratio_wall": {k: statistics.median(v["wall"]) for k, v in ratio.items()},
                   "ratio_cpu": {k: statistics.median(v["cpu"]) for k, v in ratio.items()}},
        "per_round": {"wall_ms": wall, "cpu_ms": cpu, "ratio": ratio},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    med = report["median"]
    print(f"{device.name} ({report['cpu']}, PoCL target {report['pocl_target']}); load "
          f"{report['loadavg_1min_before_after']}; {args.rounds} rounds of {args.steps} steps each")
    for n in names:
        extra = "" if n == "whole" else (f"; ratio wall {med['ratio_wall'][n]:.3f} (rounds {min(ratio[n]['wall']):.3f}-"
                                         f"{max(ratio[n]['wall']):.3f}), CPU {med['ratio_cpu'][n]:.3f} (rounds "
                                         f"{min(ratio[n]['cpu']):.3f}-{max(ratio[n]['cpu']):.3f})")
        print(f"{n:>9}: {launches[n]} launches, wall {med['wall_ms'][n]:.1f} ms, CPU {med['cpu_ms'][n]:.1f} ms{extra}")


if __name__ == "__main__":
    main()
