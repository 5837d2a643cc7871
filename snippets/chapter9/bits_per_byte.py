from netcl_lite import capstone

run = capstone.run()
m = capstone.held_out_measures(run)  # computed once per run, kept beside it
n_bytes = len(run.data.evaluation_text.encode("utf-8"))
n_train = len(run.data.train_text.encode("utf-8"))
print(f"held-out evaluation text: {n_bytes:,} bytes; training text: {n_train:,} bytes")
rows = [
    ("DecoderLM", "trained on the training text", m["model"]),
    ("bigram", "counted on the training tokens", m["bigram"]),
    ("unigram", "counted on the training tokens", m["unigram"]),
]
for name, label in (("lzma", "xz -9e"), ("bz2", "bz2 -9"), ("zlib", "zlib -9"),
                    ("ppmd", f"PPMd order {m['primed']['ppmd order']}")):
    rows.append((label, "primed with the training text", m["primed"][name]))
    rows.append((label, "the held-out text alone", m["alone"][name]))
for name, given, bpb in sorted(rows, key=lambda r: r[2]):
    print(f"{bpb:6.3f}  {name:16s} {given}")

ours, xz, ppmd = m["model"], m["primed"]["lzma"], m["primed"]["ppmd"]
print(f"the model: {1 - ours / xz:.1%} fewer bits than primed xz,"
      f" {ours / ppmd:.3f} times primed PPMd's")
print(f"windows side by side instead of every {capstone.EVAL_STRIDE} tokens:"
      f" {m['model, windows side by side']:.3f}")
assert ours <= 0.95 * xz  # at least 5% fewer bits than primed xz
assert ours < min(m["primed"]["bz2"], m["primed"]["zlib"], m["bigram"])
assert m["model, windows side by side"] > ours  # context beyond the stride is worth something
