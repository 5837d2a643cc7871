from netcl_lite.text import BPETokenizer

tok = BPETokenizer(pattern=None)  # no pre-split: the string is one chunk
trace = tok.train_from_iterator(["hahah ha"], vocab_size=256 + 2, min_frequency=1)
for (left, right), count in trace:
    print(
        f"{tok.vocab[left]!r} + {tok.vocab[right]!r}"
        f" -> {tok.vocab[left] + tok.vocab[right]!r}, count {count}"
    )
