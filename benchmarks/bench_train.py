"""One training step of Chapter 9's model on the OpenCL device vs the same model in PyTorch CPU;
KV-cached generation vs rerunning the full forward.

    python benchmarks/bench_train.py [--rounds 5 --new-tokens 256]

The step is forward, loss, backward, global-norm clipping and AdamW, for the capstone
recipe's model and batch (``netcl_lite.capstone``: B=32 windows of T=64 tokens).
The PyTorch anchor is transformers' ``LlamaForCausalLM`` (SDPA attention) built from
our checkpoint, so both start from the same weights, with ``torch.optim.AdamW`` and
``clip_grad_norm_``, on as many threads as PoCL uses (every core). Before timing, the
two losses on the same batch are compared. Rounds alternate ours and torch's; medians
are reported with tokens/s and the load average (a shared machine: rerun when quiet). Each timed
call follows a 0.3 s pause, so neither library's spinning threads run into the other's call.

Generation: greedy, one prompt of ``--prompt`` tokens (16), ``--new-tokens`` new ones, with the KV
cache and with ``use_cache=False`` (the whole prefix rerun for every token); the two
must give the same tokens. The model is the same but for max_position_embeddings,
raised to fit the prompt and the new tokens (RoPE has no parameters).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time

import numpy as np
from machine import cpu_name

#: idle time before each timed call, so one library's spinning worker threads are not still
#: holding the cores when the other's call starts (as in bench_kernels.py).
PAUSE_S = 0.3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--prompt", type=int, default=16, help="prompt length for the generation timing")
    args = ap.parse_args()

    import torch
    from transformers import LlamaForCausalLM

    from netcl_lite import autograd as ag
    from netcl_lite import capstone
    from netcl_lite.core.device import manager
    from netcl_lite.core.tensor import read
    from netcl_lite.nn import DecoderLM, LMConfig
    from netcl_lite.optim import AdamW, clip_grad_norm
    from netcl_lite.train import WindowLoader, parameter_groups

    threads = os.cpu_count()
    torch.set_num_threads(threads)
    device = manager.default()
    cfg = capstone.TRAINING
    config = LMConfig(vocab_size=capstone.VOCAB_SIZE, **capstone.MODEL)
    ours = DecoderLM(config, queue=device.queue, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        ours.save_pretrained(tmp)
        theirs = LlamaForCausalLM.from_pretrained(tmp, attn_implementation="sdpa")
    theirs.train()
    ids = np.random.default_rng(0).integers(0, config.vocab_size, 200_000)
    x, y = WindowLoader(ids, cfg.batch_size, cfg.block_size, seed=0).next_batch()
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    groups = parameter_groups(ours, cfg.weight_decay)
    opt = AdamW(groups, lr=1e-4, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
    params = ours.parameters()
    decay = [p for n, p in theirs.named_parameters() if p.ndim == 2 and "embed_tokens" not in n]
    plain = [p for n, p in theirs.named_parameters() if not (p.ndim == 2 and "embed_tokens" not in n)]
    topt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                              {"params": plain, "weight_decay": 0.0}], lr=1e-4, betas=(cfg.beta1, cfg.beta2),
                             eps=cfg.eps)

    def step_ours() -> float:                       # as netcl_lite.train.train runs a step
        with ag.Tape() as tape:
            loss = ours.loss(x, y)
        tape.backward(loss)
        clip = clip_grad_norm(params, cfg.grad_clip, wait=False)
        opt.step(norm=clip)
        opt.zero_grad()
        return float(read(loss.value, clip)[0])

    def step_torch() -> float:
        logits = theirs(tx).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, config.vocab_size), ty.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(theirs.parameters(), cfg.grad_clip)
        topt.step()
        topt.zero_grad()
        return loss.item()

    first = step_ours(), step_torch()   # also the warm-up: kernels compiled, allocators primed
    print(f"loss on the same batch from the same weights: ours {first[0]:.5f}, torch {first[1]:.5f}")
    assert abs(first[0] - first[1]) < 1e-3 * abs(first[1]), "the two models disagree: not the same model"

    load_before = os.getloadavg()[0]
    times = {"ours": [], "torch": []}
    for _ in range(args.rounds):
        for name, fn in (("ours", step_ours), ("torch", step_torch)):
            time.sleep(PAUSE_S)
            began = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - began)
    tokens = cfg.batch_size * cfg.block_size
    med = {k: statistics.median(v) for k, v in times.items()}

    # Generation: the same weights, a context long enough for the prompt and the new tokens.
    n_new, prompt = args.new_tokens, ids[:args.prompt]
    gen_config = dataclasses.replace(config, max_position_embeddings=len(prompt) + n_new)
    gen = DecoderLM(gen_config, queue=device.queue, seed=0)
    gen.load_state_dict(ours.state_dict())
    gen.generate(prompt, 4, temperature=0)   # warm-up
    gen_times = {True: [], False: []}
    outs = {}
    for _ in range(max(1, args.rounds // 2)):
        for use_cache in (True, False):
            time.sleep(PAUSE_S)
            began = time.perf_counter()
            outs[use_cache] = gen.generate(prompt, n_new, temperature=0, use_cache=use_cache)
            gen_times[use_cache].append(time.perf_counter() - began)
    assert np.array_equal(outs[True], outs[False]), "cached and uncached greedy generation differ"
    cached, full = (statistics.median(gen_times[c]) for c in (True, False))

    # The same weights in transformers, generating the same way: what the cache buys a library
    # whose per-op cost is torch's, at this model size.
    with tempfile.TemporaryDirectory() as tmp:
        gen.save_pretrained(tmp)
        their_gen = LlamaForCausalLM.from_pretrained(tmp, attn_implementation="sdpa").eval()
    t_prompt = torch.tensor(np.asarray(prompt)[None, :])
    t_kwargs = {"max_new_tokens": n_new, "min_new_tokens": n_new, "do_sample": False, "pad_token_id": 0}
    torch_times = {True: [], False: []}
    with torch.no_grad():
        their_gen.generate(t_prompt, max_new_tokens=4, do_sample=False, pad_token_id=0)   # warm-up
        for _ in range(max(1, args.rounds // 2)):
            for use_cache in (True, False):
                time.sleep(PAUSE_S)
                began = time.perf_counter()
                their_out = their_gen.generate(t_prompt, use_cache=use_cache, **t_kwargs)
                torch_times[use_cache].append(time.perf_counter() - began)
    same = int(np.sum(their_out[0, len(prompt):].numpy() == np.asarray(outs[True]).reshape(-1)[-n_new:]))
    t_cached, t_full = (statistics.median(torch_times[c]) for c in (True, False))
    load_after = os.getloadavg()[0]

    print(f"device: {device.name} ({device.queue.device.platform.version}); CPU: {cpu_name()}, {threads} threads "
          f"for PoCL and torch {torch.__version__}; load average {load_before:.2f} -> {load_after:.2f}")
    print(f"model: {ours.num_parameters():,} parameters; step: B={cfg.batch_size} x T={cfg.block_size} = {tokens} "
          f"tokens; medians of {args.rounds} interleaved rounds")
    print("| training step (fwd + bwd + clip + AdamW) | ms | tokens/s |")
    print("| --- | --- | --- |")
    for name in ("ours", "torch"):
        print(f"| {name} | {1000 * med[name]:.0f} | {tokens / med[name]:,.0f} |")
    print(f"ours / torch step time: {med['ours'] / med['torch']:.2f}x (floor 2.0x, goal 1.0x)")
    print(f"generation, {n_new} new tokens after {len(prompt)}: KV cache {1000 * cached / n_new:.1f} ms/token, "
          f"full forward {1000 * full / n_new:.1f} ms/token: cache {full / cached:.1f}x faster (target >= 5x)")
    print(f"  torch (transformers generate, same weights): KV cache {1000 * t_cached / n_new:.1f} ms/token, "
          f"full forward {1000 * t_full / n_new:.1f} ms/token: cache {t_full / t_cached:.1f}x faster; "
          f"{same} of {n_new} greedy tokens equal to ours")


if __name__ == "__main__":
    main()
