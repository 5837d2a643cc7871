from netcl_lite import capstone

NEW, SIZES = 48, (0, 2, 3, 4)  # greedy tokens; no_repeat_ngram_size values
run = capstone.run()
prompt = run.tokenizer.encode_ordinary("Return the")
distinct = {}
for n in SIZES:
    out = run.model.generate(prompt, NEW, temperature=0, no_repeat_ngram_size=n)
    new = out[len(prompt):].tolist()
    distinct[n] = len({tuple(new[i:i + 3]) for i in range(len(new) - 2)})
    print(f"n={n}: {distinct[n]:2d} distinct 3-grams in {len(new) - 2}")
    print("   ", run.tokenizer.decode(new)[:100].replace("\n", " "))
total = len(new) - 2
assert distinct[0] < total, "without the rule some 3-gram repeats"
assert distinct[2] == distinct[3] == total, "with n = 2 or 3 every 3-gram is distinct"
