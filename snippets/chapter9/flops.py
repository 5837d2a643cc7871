from netcl_lite import capstone, scaling

run = capstone.run()
cfg, log = capstone.TRAINING, run.log
steps = len(log["train"])
tokens = steps * log["tokens_per_step"]
per_step = capstone.step_flops(run.model.config, cfg.batch_size, cfg.block_size)
# Held-out evaluations run the forward only, on eval_windows windows each.
fwd = per_step["matmul forward"] + per_step["attention forward"]
evaluation = len(log["eval"]) * fwd * cfg.eval_windows // cfg.batch_size
executed = steps * sum(per_step.values()) + evaluation
estimate = scaling.training_compute(log["parameters"], tokens)
print(f"6ND = 6 x {log['parameters']:,} x {tokens:,} = {estimate:.3e} FLOPs")
for part, flops in per_step.items():
    print(f"  {part:19s} {steps * flops:.3e}")
print(f"  {'held-out forwards':19s} {evaluation:.3e}")
print(f"executed {executed:.3e} FLOPs = {executed / estimate:.2f} x 6ND")
assert executed > estimate  # attention and evaluation are not in 6ND
seconds = log["train"][-1]["seconds"]
rate = steps * sum(per_step.values()) / seconds
print(f"training steps ran at {rate / 1e9:.1f} GFLOP/s ({seconds:.0f} s)")
