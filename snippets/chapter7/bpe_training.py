from netcl_lite.text import BPETokenizer

corpus = [
    "the transformer transforms tokens",
    "a transformer attends to tokens",
    "tokens attend to tokens",
] * 20

tok = BPETokenizer()  # byte-level: ids 0..255 are the bytes
trace = tok.train_from_iterator(corpus, vocab_size=256 + 30)
for (left, right), count in trace[:5]:
    print(
        f"merge {tok.vocab[left]!r:>8} + {tok.vocab[right]!r:<8} seen {count:3d} times"
    )

text = "transformers attend 🙂 నమస్కారం"  # unseen words, an emoji, Telugu
ids = tok.encode(text)
print("pieces:", [tok.vocab[i] for i in tok.encode("the transformers attend")])
print(
    f"{len(text)} characters -> {len(text.encode('utf-8'))} bytes -> {len(ids)} tokens"
)
assert tok.decode(ids) == text  # exact round trip: every byte has an id
