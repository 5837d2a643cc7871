from netcl_lite import capstone

run = capstone.run()
ids = capstone.split_ids(run, "validation")
T = capstone.TRAINING.block_size
for stride in (T, capstone.EVAL_STRIDE, capstone.EVAL_STRIDE // 2):
    bpb = capstone.bits_per_byte(run.model, ids, run.tokenizer, T, stride=stride)
    print(f"windows every {stride:2d} tokens (context >= {T - stride:2d} after the first):"
          f" {bpb:.4f} bits per byte on validation")
