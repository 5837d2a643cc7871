import netcl_lite as nl

nl.extras.require("compare")  # stops here with the pip command if it is missing

import time

from netcl_lite import capstone
from netcl_lite.compression import compress, decompress

MARGIN = 0.04  # the model needs at least 4% fewer bits than primed xz

run = capstone.run()
m = capstone.measures(run)  # computed once per run, kept beside it
test, valid = m["test"], m["validation"]
data = run.data.test_text.encode("utf-8")

# The model as a real compressor: a file, decoded back, both ways timed.
files = {}
for mix in (False, True):
    began = time.perf_counter()
    blob = compress(data, run.model, run.tokenizer, mix=mix)
    middle = time.perf_counter()
    back = decompress(blob, run.model, run.tokenizer)
    done = time.perf_counter()
    assert back == data  # the decompressed file is the test text, byte for byte
    files[mix] = (len(blob), {"compress": len(data) / (middle - began),
                              "decompress": len(data) / (done - middle)})
print(f"the file decompresses to the original: {back == data}")
print(f"  original     {data[:64]!r}")
print(f"  decompressed {back[:64]!r}")
alone = 8 * files[False][0] / len(data)
print(f"the model alone: {files[False][0]:,} bytes, {alone:.4f} bits per byte against"
      f" its cross-entropy {test['model']:.4f} ({alone / test['model'] - 1:+.1%})")
print()

order = {g: valid[g]["ppmd order"] for g in ("alone", "primed")}  # chosen on validation
speed = capstone.coder_speeds(run.data.test_text, ppmd_order=order["alone"])
names = {"zlib": "zlib -9", "bz2": "bz2 -9", "xz": "xz -9e", "zstd": "zstd -22 --long",
         "brotli": "brotli q11 w24", "zpaq": "zpaq -m5", "ppmd": "PPMd order {}"}
rows = [("**DecoderLM + n-gram counts, the file**", "trained, counted",
         8 * files[True][0] / len(data), files[True][1]),
        ("**DecoderLM alone, the file**", "trained on it", alone, files[False][1]),
        ("DecoderLM, its cross-entropy", "trained on it", test["model"], None),
        ("bigram, its cross-entropy", "counted", test["bigram"], None),
        ("unigram, its cross-entropy", "counted", test["unigram"], None)]
for name in capstone.COMPRESSORS:
    for given, label in (("primed", "primed with it"), ("alone", "not given")):
        rate = speed[name] if given == "alone" else None
        rows.append((names[name].format(order[given]), label, test[given][name], rate))

n_train = len(run.data.train_text.encode("utf-8"))
print(f"The test split, {len(data):,} bytes, with {n_train:,} bytes of training text;"
      f" speeds on {capstone.machine()}.")
print()
print("| coder | the training text | bytes | bits per byte | compress kB/s"
      " | decompress kB/s |")
print("|---|---|---:|---:|---:|---:|")
for name, given, bpb, s in sorted(rows, key=lambda r: r[2]):
    size = "" if "entropy" in name else f"{round(bpb * len(data) / 8):,}"
    rates = [f"{s[k] / 1e3:,.1f}" if s else "" for k in ("compress", "decompress")]
    print("| " + " | ".join([name, given, size, f"{bpb:.3f}", *rates]) + " |")

assert test["model"] <= (1 - MARGIN) * test["primed"]["xz"]
weaker = (test["primed"]["bz2"], test["primed"]["zlib"], test["bigram"])
assert test["model"] < min(weaker)
assert test["model, windows side by side"] > test["model"]  # context beyond the stride
assert abs(alone / test["model"] - 1) < 0.01  # coding costs under 1% here
