from netcl_lite.text import BPETokenizer, WordBPE

training = ["the river and the road", "the quick brown fox", "the river flows"]
unseen = "naïve café 🚀 नमस्ते"

byte_level = BPETokenizer(pattern=None)
# The library's default min_frequency=2: training stops once every pair is unique.
merges = byte_level.train_from_iterator(training, vocab_size=256 + 12)
ids = byte_level.encode(unseen)
assert byte_level.decode(ids) == unseen, "text it never saw round-trips"  # bytes have ids
print(f"byte-level BPE ({len(merges)} merges):", len(ids), "ids for",
      len(unseen.encode("utf-8")), "UTF-8 bytes; exact round trip")

words = WordBPE()
words.train(" ".join(training), 12)
print("word BPE:", words.segment("🚀"),
      "- a character it never saw, with no byte alphabet behind it")
