from netcl_lite.text import BPETokenizer

tok = BPETokenizer()
tok.train_from_iterator(["hello there, the theory of the other thing"] * 50, 300)

# "hel" and "lo" joined would be the one token "hello"; the others test the split at a
# document's start: digits, a contraction, an empty document
docs = ["hel", "lo", "hello", " there", "", "12", "34", "don", "'t"]
single = [tok.encode_ordinary(doc) for doc in docs]
assert tok.encode_ordinary("hel" + "lo") != single[0] + single[1], \
    "joined, hel and lo would merge"
host = tok.encode_ordinary_batch(docs)  # a short batch: single calls, one cache
tok.kernel_text_min_bytes = 0  # from here on every batch goes to the device whole
device = tok.encode_ordinary_batch(docs)  # one call; the split restarts per document
assert host == device == single, "the batch returns what single calls return"
assert tok.decode_batch(device) == docs
for doc, ids in zip(docs, device):
    print(f"{doc!r:>9} -> {ids}")
