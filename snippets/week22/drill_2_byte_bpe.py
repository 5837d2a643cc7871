# Step 2 — byte-level BPE: tokens per word depend on the tokenizer and the text
from netcl_lite.text import GPT4_PATTERN, BPETokenizer

training = ["the river and the road", "the quick brown fox", "the river flows"]
# pattern=None: no pre-split, so merges may cross spaces (a deliberately small toy).
# No normalizer and no special tokens either. min_frequency=1: a pair seen once may
# still be merged, so training stops only at the budget of 12 merges.
tok = BPETokenizer(pattern=None)
trace = tok.train_from_iterator(training, vocab_size=256 + 12, min_frequency=1)
print(f"min_frequency=1: {len(trace)} merges")
print([tok.vocab[left] + tok.vocab[right] for (left, right), _ in trace])
# The library's default, min_frequency=2, stops where every remaining pair occurs once.
strict = BPETokenizer(pattern=None)
stopped = strict.train_from_iterator(training, vocab_size=256 + 12)
assert (
    stopped == trace[: len(stopped)]
)  # the same merges, in the same order, up to the stop
assert all(n == 1 for _, n in trace[len(stopped) :])
once = [strict.vocab[a] + strict.vocab[b] for (a, b), _ in trace[len(stopped) :]]
print(
    f"min_frequency=2: {len(stopped)} merges; it leaves out {once}, each seen once;",
    f"prose then takes {len(strict.encode(training[0]))} tokens",
)
# The same data pre-split with the GPT-4 pattern: merges stay inside word-like chunks.
split = BPETokenizer(pattern=GPT4_PATTERN)
split.train_from_iterator(training, vocab_size=256 + 12, min_frequency=1)

samples = {
    "prose": "the river and the road",
    "JSON": '{"userId":"a3f9-2c1b","amountCents":12995}',
    "code": "def get_user(id): return db.get(id)",
    "UUID": "550e8400-e29b-41d4-a716-446655440000",
    "Telugu": "నమస్కారం ప్రపంచం",
}
print("prose ->", [tok.vocab[i] for i in tok.encode(samples["prose"])])
print("sample  words tokens tokens/word words per 8192 tokens GPT-4 split tokens")
for label, text in samples.items():
    ids = tok.encode(text)
    assert tok.decode(ids) == text, "every sample round-trips exactly"
    assert tok.decode_bytes(ids) == text.encode("utf-8")
    assert split.decode(split.encode(text)) == text
    words = len(text.split())
    ratio = len(ids) / words
    print(
        f"{label:<7} {words:>5} {len(ids):>6} {ratio:>11.2f} {int(8192 / ratio):>21}",
        f"{len(split.encode(text)):>18}",
    )

# No merge was learned for Telugu, so every UTF-8 byte is one token,
# and the text still round-trips.
telugu = samples["Telugu"]
assert len(tok.encode(telugu)) == len(telugu.encode("utf-8"))
print("Telugu characters", len(telugu), "UTF-8 bytes", len(telugu.encode("utf-8")))
assert tok.encode("") == [] and tok.decode([]) == ""
