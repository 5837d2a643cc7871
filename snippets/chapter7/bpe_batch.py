from netcl_lite.text import BPETokenizer

tok = BPETokenizer()
tok.train_from_iterator(["hello there, the theory of the other thing"] * 50, 300)

# joined, these would split and merge across the boundaries: "hello", "1234", "don't"
docs = ["hel", "lo", "hello", " there", "", "12", "34", "don", "'t"]
single = [tok.encode_ordinary(doc) for doc in docs]
host = tok.encode_ordinary_batch(docs)  # a short batch: single calls, one cache
tok.kernel_text_min_bytes = 0  # from here on every batch goes to the device whole
device = tok.encode_ordinary_batch(docs)  # one call; the split restarts per document
assert host == device == single
assert tok.decode_batch(device) == docs
for doc, ids in zip(docs, device):
    print(f"{doc!r:>9} -> {ids}")
