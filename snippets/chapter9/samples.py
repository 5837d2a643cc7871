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
share = {}
for name, kwargs in policies.items():
    words = []
    for i, prompt in enumerate(prompts):
        ids = tok.encode_ordinary(prompt)
        for seed in range(3 if "top-p" in name else 1):
            out = model.generate(ids, 40, seed=seed, **kwargs)
            text = tok.decode(out[len(ids):].tolist())
            words += re.findall(r"\w+", text)
            if seed == 0:
                print(f"--- {name}: {prompt!r}")
                print(prompt + text)
    share[name] = sum(w in known for w in words) / len(words)
print()
for name, value in share.items():
    print(f"{name:28s} {value:.1%} of the generated words occur in the training text")
