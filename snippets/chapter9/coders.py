# needs `pip install 'netcl_lite[compare]'` (pyppmd, zstandard, brotli, zpaq)
import importlib.util

for package in ("pyppmd", "zstandard", "brotli", "zpaq"):
    if importlib.util.find_spec(package) is None:
        raise SystemExit(f"{package} is missing: pip install 'netcl_lite[compare]'")

from netcl_lite import capstone

MARGIN = 0.04  # the model needs at least 4% fewer bits than primed xz

run = capstone.run()
m = capstone.measures(run)  # computed once per run, kept beside it
test, valid = m["test"], m["validation"]
order = {g: valid[g]["ppmd order"] for g in ("alone", "primed")}  # chosen on validation
speed = capstone.coder_speeds(run.data.test_text, ppmd_order=order["alone"])
names = {"zlib": "zlib -9", "bz2": "bz2 -9", "xz": "xz -9e", "zstd": "zstd -22 --long",
         "brotli": "brotli q11 w24", "zpaq": "zpaq -m5",
         "ppmd": "PPMd order {}"}
rows = [("DecoderLM (its cross-entropy)", "trained on it", test["model"], None),
        ("bigram", "counted on its tokens", test["bigram"], None),
        ("unigram", "counted on its tokens", test["unigram"], None)]
for name in capstone.COMPRESSORS:
    for given, label in (("primed", "primed with it"), ("alone", "not given")):
        rate = speed[name] if given == "alone" else None
        rows.append((names[name].format(order[given]), label, test[given][name], rate))

n_train = len(run.data.train_text.encode("utf-8"))
print(f"The test split, {test['bytes']:,} bytes, against the {n_train:,} bytes of"
      f" training text; speeds on {capstone.machine()}.")
print()
print("| coder | the training text | bits per byte | compress kB/s | decompress kB/s |")
print("|---|---|---:|---:|---:|")
for name, given, bpb, s in sorted(rows, key=lambda r: r[2]):
    rates = [f"{s[k] / 1e3:,.0f}" if s else "" for k in ("compress", "decompress")]
    print("| " + " | ".join([name, given, f"{bpb:.3f}", *rates]) + " |")

xz = test["primed"]["xz"]
assert test["model"] <= (1 - MARGIN) * xz
weaker = (test["primed"]["bz2"], test["primed"]["zlib"], test["bigram"])
assert test["model"] < min(weaker)
assert test["model, windows side by side"] > test["model"]  # context beyond the stride
