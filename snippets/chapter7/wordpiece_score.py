from collections import Counter
from fractions import Fraction

import regex

from netcl_lite.text import GPT4_PATTERN

# The corpus of the BPE example above, cut into the same chunks, as bytes.
corpus = [
    "the transformer transforms tokens",
    "a transformer attends to tokens",
    "tokens attend to tokens",
] * 20
chunks = Counter(c.encode() for t in corpus for c in regex.findall(GPT4_PATTERN, t))
units, pairs = Counter(), Counter()        # count(a) of each byte; count(ab) of a pair
for chunk, n in chunks.items():
    for a in chunk:
        units[bytes([a])] += n
    for a, b in zip(chunk, chunk[1:]):
        pairs[bytes([a]), bytes([b])] += n


def score(pair):                            # WordPiece: count(ab) / (count(a) count(b))
    a, b = pair
    return Fraction(pairs[pair], units[a] * units[b])


def show(pair):
    a, b = pair
    return (f"{a + b!r:6} count(ab) {pairs[pair]:3d}  count(a) {units[a]:3d}"
            f"  count(b) {units[b]:3d}  score {float(score(pair)):.5f}")


print("BPE merges the most frequent pair:")
print("  " + show(max(pairs, key=pairs.get)))
print("WordPiece merges the highest score:")
for pair in sorted(pairs, key=lambda p: (-score(p), p))[:3]:  # ties: smallest bytes
    print("  " + show(pair))
