from netcl_lite.text import GPT4_PATTERN, BPETokenizer
from netcl_lite.text.patterns import compile_splitter

corpus = [
    "the transformer transforms tokens",
    "a transformer attends to tokens",
    "tokens attend to tokens",
] * 20

tok = BPETokenizer()  # byte-level: ids 0..255 are the bytes; GPT-4's split pattern
trace = tok.train_from_iterator(corpus, vocab_size=256 + 30)
for (left, right), count in trace[:5]:
    print(
        f"merge {tok.vocab[left]!r:>8} + {tok.vocab[right]!r:<8} seen {count:3d} times"
    )
print("pieces:", [tok.vocab[i] for i in tok.encode("the transformers attend")])

text = "transformers attend 🙂 నమస్కారం"  # unseen words, an emoji, Telugu
ids = tok.encode(text)
print(
    f"{len(text)} characters -> {len(text.encode('utf-8'))} bytes -> {len(ids)} tokens"
)
# Where they come from: the split pattern cuts the text into chunks, and each
# chunk's UTF-8 bytes are merged on their own.
for chunk in compile_splitter(GPT4_PATTERN)(text):
    n_bytes, n_ids = len(chunk.encode("utf-8")), len(tok.encode(chunk))
    print(
        f"  chunk {chunk!r:14} {len(chunk)} chars {n_bytes:2d} bytes {n_ids:2d} tokens"
    )
    if not chunk.isascii():
        assert n_ids == n_bytes, "each byte of the emoji and Telugu is a token"
assert tok.decode(ids) == text  # exact round trip: every byte has an id
