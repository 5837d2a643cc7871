from netcl_lite import capstone

run = capstone.run()
text = run.data.held_out_text
V = run.model.config.vocab_size
n_bytes = len(text.encode("utf-8"))
ours = capstone.bits_per_byte(
    run.model, run.held_out_ids, run.tokenizer, capstone.TRAINING.block_size
)
# Baselines on the same held-out text: n-gram models counted on the same
# training tokens, and compressors that see only the held-out text itself.
rows = {"DecoderLM": ours}
rows.update(capstone.ngram_bits_per_byte(run.train_ids, run.held_out_ids, V, n_bytes))
rows.update(capstone.compressor_bits_per_byte(text))
for name, bpb in sorted(rows.items(), key=lambda r: r[1]):
    print(f"{name:10s} {bpb:.3f} bits per byte")
print(f"held-out bits per byte {ours:.3f}: {1 - ours / rows['lzma']:.1%} below lzma")
assert ours < rows["lzma"]
