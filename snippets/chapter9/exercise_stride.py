from netcl_lite import capstone

TIMES = 10  # the first step must be more than TIMES the second
run = capstone.run()
ids = capstone.split_ids(run, "validation")
T = capstone.TRAINING.block_size
bpb = {}
for stride in (T, capstone.EVAL_STRIDE, capstone.EVAL_STRIDE // 2):
    bpb[stride] = capstone.bits_per_byte(run.model, ids, run.tokenizer, T,
                                         stride=stride)
    print(f"windows every {stride:2d} tokens (context >= {T - stride:2d} after the"
          f" first): {bpb[stride]:.4f} bits per byte on validation")
step_1 = bpb[T] - bpb[capstone.EVAL_STRIDE]
half = capstone.EVAL_STRIDE // 2
step_2 = bpb[capstone.EVAL_STRIDE] - bpb[half]
print(f"side by side -> every {capstone.EVAL_STRIDE}: {step_1:.4f};"
      f" every {capstone.EVAL_STRIDE} -> every {half}: {step_2:.4f}")
assert bpb[T] == max(bpb.values()), "side by side costs the most bits"
assert TIMES * abs(step_2) < step_1, "the first step is more than ten times the second"
