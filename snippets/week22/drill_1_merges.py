# Step 1 — word-BPE merges on a twelve-word corpus
from collections import Counter

from netcl_lite.text import WordBPE

corpus = "low low low low low lower lower newest newest newest widest widest"

# Before any merge: adjacent symbol pairs (characters and the end-of-word marker),
# each weighted by how often its word occurs.
pairs = Counter()
for word, n in Counter(corpus.split()).items():
    symbols = tuple(word) + ("</w>",)
    for pair in zip(symbols, symbols[1:]):
        pairs[pair] += n
top = max(pairs.values())
tied = sorted(p for p, c in pairs.items() if c == top)
print("most frequent pairs before merge 1:", tied, "count", top)

bpe = WordBPE()
trace = bpe.train(corpus, 6)  # [((left, right), weighted count), ...]
for step, (pair, count) in enumerate(trace, 1):
    print(f"merge {step}: {pair} weighted count {count}")
# ('l','o') and ('o','w') tie at 7: the tie rule takes the lexically smallest pair.
assert trace[0] == (("l", "o"), 7)

# Merges regroup symbols inside words; every word of the corpus is still there.
assert sum(bpe.vocab.values()) == len(corpus.split()) == 12, "all 12 words survive"
for symbols, count in bpe.vocab.items():
    print(count, symbols)

# New words reuse the learned pieces.
for word in ["lowest", "slow", "wider"]:
    print(word, "->", bpe.segment(word))

# Merges join adjacent *symbols*, never a substring inside a symbol already merged.
small = WordBPE()
print("merges learned from 'ab ab ab bc bc':", small.train("ab ab ab bc bc", 3))
print(
    "'bc' is a substring of 'abc':",
    "bc" in "abc",
    "| segment('abc') ->",
    small.segment("abc"),
)
print("segment('abcab') ->", small.segment("abcab"))
