from netcl_lite import capstone

run = capstone.run()
prompt = run.tokenizer.encode_ordinary("Return the")
for n in (0, 2, 3, 4):
    out = run.model.generate(prompt, 48, temperature=0, no_repeat_ngram_size=n)
    new = out[len(prompt):].tolist()
    trigrams = {tuple(new[i:i + 3]) for i in range(len(new) - 2)}
    print(f"n={n}: {len(trigrams):2d} distinct 3-grams in {len(new) - 2}")
    print("   ", run.tokenizer.decode(new)[:100].replace("\n", " "))
