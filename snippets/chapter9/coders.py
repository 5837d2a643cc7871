import netcl_lite as nl

nl.extras.require("compare")  # stops here with the pip command if it is missing

import time

from netcl_lite import capstone, ngram
from netcl_lite.compression import compress, decompress

MARGIN = 0.04  # the model needs at least 4% fewer bits than primed xz (set 2026-12-03)
BOUND = 0.97   # the mixed file needs at most this fraction of primed zpaq's bits

run = capstone.run()
m = capstone.measures(run)  # computed once per run, kept beside it
test, valid = m["test"], m["validation"]
data = run.data.test_text.encode("utf-8")


def timed(**mode):
    """A real file of the test text, decoded back; each call counts the training ids
    anew, as a primed classical coder reads the training text on every call."""
    ngram.forget_primed_counts()
    began = time.perf_counter()
    blob = compress(data, run.model, run.tokenizer, primer=run.train_ids, **mode)
    middle = time.perf_counter()
    ngram.forget_primed_counts()
    back = decompress(blob, run.model, run.tokenizer, primer=run.train_ids)
    done = time.perf_counter()
    assert back == data  # the decompressed file is the test text, byte for byte
    return len(blob), {"compress": len(data) / (middle - began),
                       "decompress": len(data) / (done - middle)}


files = {"adapting": timed(adapt=True), "mixed": timed(), "alone": timed(mix=False)}
bpb = {name: 8 * size / len(data) for name, (size, _) in files.items()}
weights = sum(w.nbytes for w in run.model.state_dict().values())  # float32
print(f"the files decompress to the original; the model alone {bpb['alone']:.4f} bits"
      f" per byte against its cross-entropy {test['model']:.4f}"
      f" ({bpb['alone'] / test['model'] - 1:+.1%})")
zpaq, ppmd = test["primed"]["zpaq"], test["primed"]["ppmd"]
print(f"the model alone's file is {bpb['alone'] / ppmd:.2f}x primed PPMd's file and"
      f" {bpb['alone'] / zpaq:.2f}x primed zpaq's; the mixed file"
      f" {bpb['mixed'] / zpaq:.3f}x zpaq's, adapting {bpb['adapting'] / zpaq:.3f}x")
print(f"a decoder holds the weights ({weights / 1e6:.2f} MB) and the training ids"
      f" ({run.train_ids.size:,}), or retrains the weights"
      f" ({capstone.training_curve(run)[-1]['seconds']:.0f} s of training steps here);"
      f" a primed coder's decoder holds the training text"
      f" ({len(run.data.train_text.encode('utf-8')):,} bytes)")
print()

order = {g: valid[g]["ppmd order"] for g in ("alone", "primed")}  # chosen on validation
text = run.data.test_text
speed = {"alone": capstone.coder_speeds(text, ppmd_order=order["alone"]),
         "primed": capstone.coder_speeds(text, ppmd_order=order["primed"], repeats=1,
                                         primer=run.data.train_text)}
names = {"zlib": "zlib -9", "bz2": "bz2 -9", "xz": "xz -9e", "zstd": "zstd -22 --long",
         "brotli": "brotli q11 w24", "zpaq": "zpaq -m5", "ppmd": "PPMd I, order {}"}
rows = [("**DecoderLM + counts, adapting, the file**", "trained, primed",
         bpb["adapting"], files["adapting"][1]),
        ("**DecoderLM + counts, the file**", "trained, primed", bpb["mixed"],
         files["mixed"][1]),
        ("DecoderLM + counts, the file and the weights", "trained, primed",
         bpb["mixed"] + 8 * weights / len(data), None),
        ("**DecoderLM alone, the file**", "trained on it", bpb["alone"],
         files["alone"][1]),
        ("DecoderLM, its cross-entropy", "trained on it", test["model"], None),
        ("bigram, its cross-entropy", "counted", test["bigram"], None),
        ("unigram, its cross-entropy", "counted", test["unigram"], None)]
for name in capstone.COMPRESSORS:
    for given, label in (("primed", "primed with it"), ("alone", "not given")):
        rows.append((names[name].format(order[given]), label, test[given][name],
                     speed[given][name]))

n_train = len(run.data.train_text.encode("utf-8"))
print(f"The test split, {len(data):,} bytes, with {n_train:,} bytes of training text;"
      f" speeds on {capstone.machine()}, each coder primed or not as its row says.")
print()
print("| coder | the training text | bytes | bits per byte | compress kB/s"
      " | decompress kB/s |")
print("|---|---|---:|---:|---:|---:|")
for name, given, rate, s in sorted(rows, key=lambda r: r[2]):
    size = "" if "entropy" in name else f"{round(rate * len(data) / 8):,}"
    rates = [f"{s[k] / 1e3:,.1f}" if s else "" for k in ("compress", "decompress")]
    print("| " + " | ".join([name, given, size, f"{rate:.3f}", *rates]) + " |")

assert test["model"] <= (1 - MARGIN) * test["primed"]["xz"]
weaker = (test["primed"]["bz2"], test["primed"]["zlib"], test["bigram"])
assert test["model"] < min(weaker)
assert test["model, windows side by side"] > test["model"]  # context beyond the stride
assert abs(bpb["alone"] / test["model"] - 1) < 0.01  # coding costs under 1% here
assert bpb["alone"] > max(ppmd, zpaq), "the model alone needs more bits than PPMd, zpaq"
primed_or_not = [(test["primed"][c], test["alone"][c]) for c in capstone.COMPRESSORS]
assert all(a != b for a, b in primed_or_not), "priming changes every coder's result"
assert bpb["mixed"] <= BOUND * zpaq, \
    "the mixed file is at most BOUND times primed zpaq's"
assert bpb["adapting"] < bpb["mixed"], "adapting makes the mixed file smaller"
assert bpb["mixed"] + 8 * weights / len(data) > 8, "file and weights outgrow the text"
