from netcl_lite import capstone, scaling

run = capstone.run()
cfg, log = capstone.TRAINING, run.log
steps = len(log["train"])
tokens = steps * log["tokens_per_step"]
per_step = capstone.step_flops(run.model.config, cfg.batch_size, cfg.block_size)
window = (per_step["matmul forward"] + per_step["attention forward"]) // cfg.batch_size
# Forward only: the validation loss on eval_windows windows every eval_interval
# steps, and at each curve checkpoint the whole validation text, in sliding
# windows, for section 7's figure, and section 6's windows of both texts; besides,
# two steps of a throwaway model compile the kernels before the run.
x, _ = capstone.sliding_windows(capstone.split_ids(run, "validation"), cfg.block_size,
                                capstone.EVAL_STRIDE)
curve = len(capstone.training_curve(run))
extra = {"validation loss": len(log["eval"]) * cfg.eval_windows * window,
         "figure's measures": curve * len(x) * window,
         "section 6's windows": curve * 2 * capstone.GAP_WINDOWS * window,
         "2 warm-up steps": 2 * sum(per_step.values())}
executed = steps * sum(per_step.values()) + sum(extra.values())
estimate = scaling.training_compute(log["parameters"], tokens)
print(f"6 N N_tok = 6 x {log['parameters']:,} x {tokens:,} = {estimate:.3e} FLOPs")
for part, flops in per_step.items():
    print(f"  {part:19s} {steps * flops:.3e}")
for part, flops in extra.items():
    print(f"  {part:19s} {flops:.3e}")
print(f"executed {executed:.3e} FLOPs = {executed / estimate:.2f} x 6 N N_tok")
assert executed > estimate, "the run executed more than 6 N N_tok"
seconds = log["train"][-1]["seconds"]
rate = steps * sum(per_step.values()) / seconds
print(f"training steps ran at {rate / 1e9:.1f} GFLOP/s ({seconds:.0f} s) on")
print(f"  {capstone.machine()}")
