"""Chapter 9's recipe trained in PyTorch, as a cross-check of the OpenCL run's held-out bits per byte.

    python benchmarks/capstone_torch.py [--steps N]

The same text, tokenizer, initial weights (our seed-0 model, opened by transformers as a
``LlamaForCausalLM``), windows (``WindowLoader`` with the recipe's seed), schedule,
clipping and AdamW parameter groups as ``netcl_lite.capstone``; ``torch.optim.AdamW`` and
``clip_grad_norm_`` do the update. The held-out evaluation is the page's: windows of
``block_size`` every ``EVAL_STRIDE`` tokens (``capstone.sliding_windows``). Prints the
training seconds, the held-out bits per byte and the primed coders for comparison. The
two runs differ only in float32 summation order, so their numbers should agree to about
a hundredth of a bit; a larger gap points at a bug in one of them.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import tempfile
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=None, help="training steps (default: the recipe's)")
    args = ap.parse_args()

    import torch
    from transformers import LlamaForCausalLM

    from netcl_lite import capstone
    from netcl_lite.nn import DecoderLM
    from netcl_lite.train import WindowLoader, learning_rate_at

    torch.set_num_threads(os.cpu_count())
    cfg = capstone.TRAINING
    steps = args.steps or cfg.max_steps
    d = capstone.data()
    tok = capstone.train_tokenizer(d.train_text)
    train_ids = np.asarray(tok.encode_ordinary(d.train_text), np.int64)
    held_ids = np.asarray(tok.encode_ordinary(d.evaluation_text), np.int64)
    with tempfile.TemporaryDirectory() as tmp:
        DecoderLM(capstone.model_config(tok), seed=0).save_pretrained(tmp)
        model = LlamaForCausalLM.from_pretrained(tmp, attn_implementation="sdpa")
    model.train()
    decay = [p for n, p in model.named_parameters() if p.ndim == 2 and "embed_tokens" not in n]
    plain = [p for n, p in model.named_parameters() if not (p.ndim == 2 and "embed_tokens" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": plain, "weight_decay": 0.0}],
                            lr=cfg.learning_rate, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
    loader = WindowLoader(train_ids, cfg.batch_size, cfg.block_size, cfg.seed)
    vocab = model.config.vocab_size
    # another step count keeps the schedule's shape: the decay takes the same share of the steps
    share = cfg.decay_steps / (cfg.max_steps - cfg.warmup_steps)
    schedule = dataclasses.replace(cfg, max_steps=steps, decay_steps=max(1, round(share * (steps - cfg.warmup_steps)))
                                   if cfg.decay_steps and steps > cfg.warmup_steps else 0)
    began = time.perf_counter()
    for step in range(steps):
        lr = learning_rate_at(step, schedule)
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = loader.next_batch()
        logits = model(torch.from_numpy(x)).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), torch.from_numpy(y).reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        opt.zero_grad()
    seconds = time.perf_counter() - began

    model.eval()
    x, y = capstone.sliding_windows(held_ids, cfg.block_size, capstone.EVAL_STRIDE)
    nats = 0.0
    with torch.no_grad():
        for i in range(0, len(x), cfg.batch_size):
            logits = model(torch.from_numpy(x[i:i + cfg.batch_size])).logits
            nats += torch.nn.functional.cross_entropy(
                logits.reshape(-1, vocab), torch.from_numpy(y[i:i + cfg.batch_size]).reshape(-1),
                ignore_index=capstone.IGNORE, reduction="sum").item()
    bpb = nats / math.log(2) / len(tok.decode_bytes(held_ids[1:].tolist()))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads: {steps} steps in {seconds:.0f} s, "
          f"final training loss {loss.item():.3f}; held-out {bpb:.3f} bits per byte")


if __name__ == "__main__":
    main()
