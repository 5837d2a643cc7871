import re

from netcl_lite import capstone

run = capstone.run()
tok, model = run.tokenizer, run.model
known = set(re.findall(r"\w+", run.data.train_text))  # every word of the training text
prompts = ["Return the", "This module provides", "If the file"]
policies = {  # name: generate's keyword arguments
    "greedy": dict(temperature=0),
    "greedy, no repeated 3-gram": dict(temperature=0, no_repeat_ngram_size=3),
    "temperature 0.8, top-p 0.9": dict(temperature=0.8, top_p=0.9),
    "temperature 1.0, top-p 0.9": dict(temperature=1.0, top_p=0.9),
}
share, repeats = {}, {}
for name, kwargs in policies.items():
    words, repeats[name] = [], 0
    for i, prompt in enumerate(prompts):
        ids = tok.encode_ordinary(prompt)
        for seed in range(3 if "top-p" in name else 1):
            out = model.generate(ids, 40, seed=seed, **kwargs).tolist()
            text = tok.decode(out[len(ids):])
            words += re.findall(r"\w+", text)
            grams = [tuple(out[j:j + 3]) for j in range(len(out) - 2)]
            repeats[name] += len(grams) > len(set(grams))  # a 3-gram occurs twice
            if seed == 0:
                print(f"--- {name}: {prompt!r}")
                print(prompt + text)
    share[name] = sum(w in known for w in words) / len(words)
print()
for name in ("greedy", "greedy, no repeated 3-gram"):
    print(f"{name}: {repeats[name]} of {len(prompts)} outputs repeat a 3-gram")
assert repeats["greedy"] >= 1, "greedy decoding repeats a 3-gram"
assert repeats["greedy, no repeated 3-gram"] == 0, "with the rule no 3-gram repeats"
for name, value in share.items():
    print(f"{name:28s} {value:.1%} of the generated words occur in the training text")
