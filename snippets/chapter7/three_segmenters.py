import math
from collections import Counter

from netcl_lite.text import BPETokenizer, Unigram, WordPiece

# A tiny training corpus: each word and how often it occurs.
words = Counter({"played": 6, "player": 4, "red": 4, "plays": 3,
                 "display": 2, "replay": 2, "dislike": 2, "liked": 2})

# BPE: up to 20 merges (it stops when no pair occurs twice), each word one chunk
# (no pre-split); encoding replays the merges in the order learned.
bpe = BPETokenizer(pattern=None)
bpe.train_from_iterator([w for w, n in words.items() for _ in range(n)], 256 + 20)
merged = [bpe.vocab[i].decode() for i in range(256, len(bpe.vocab))]
pieces = set("".join(words)) | set(merged)  # the letters and every piece a merge made

# WordPiece gets the same pieces, each also as a ## continuation.
wordpiece = WordPiece(pieces | {"##" + p for p in pieces})

# Unigram gets the same pieces with log-probabilities: here each piece's share of
# all occurrences of pieces inside the corpus words (a crude estimate; see the text).
occurs = Counter({p: sum(n * sum(w.startswith(p, i) for i in range(len(w)))
                         for w, n in words.items()) for p in pieces})
logp = {p: math.log(k / sum(occurs.values())) for p, k in occurs.items()}


def viterbi(word):
    """The segmentation with the largest total log-probability (dynamic programming)."""
    best = [(0.0, ())] + [(-math.inf, ())] * len(word)  # best[i]: for word[:i]
    for end in range(1, len(word) + 1):
        for start in range(end):
            piece = word[start:end]
            if piece in logp and best[start][0] + logp[piece] > best[end][0]:
                best[end] = (best[start][0] + logp[piece], best[start][1] + (piece,))
    return best[-1][1]


def every_segmentation(word):
    if not word:
        return [()]
    return [(word[:k],) + rest for k in range(1, len(word) + 1)
            if word[:k] in pieces for rest in every_segmentation(word[k:])]


def score(cut):
    return sum(logp[p] for p in cut)


print(f"{len(merged)} merges, in order:", " ".join(merged[:10]))
print(" " * 21, " ".join(merged[10:]))
print(f"{'word':10} {'BPE (merge replay)':19} {'WordPiece (longest)':21}",
      "Unigram (Viterbi)")
table = {}
for word in ["played", "players", "displays", "disliked", "redisplay"]:
    table[word] = (tuple(bpe.vocab[i].decode() for i in bpe.encode(word)),
                   tuple(wordpiece.tokenize(word)), viterbi(word))
    bpe_cut, wp_cut, uni_cut = (" ".join(cut) for cut in table[word])
    print(f"{word:10} {bpe_cut:19} {wp_cut:21} {uni_cut}")
for cut in (table["redisplay"][2], table["redisplay"][0]):
    print(f"log-probability of {' + '.join(cut)}: {score(cut):.2f}")

for word, (_, _, best) in table.items():
    assert best == max(every_segmentation(word), key=score), "Viterbi finds the best"
    assert best == Unigram(logp).segment(word), "netcl_lite.text.Unigram agrees"
cuts = {w: [tuple(p.removeprefix("##") for p in cut) for cut in three]
        for w, three in table.items()}  # without the ## marks
assert all(len(set(cuts[w])) == 1 for w in ("played", "players")), \
    "the three rules agree on played and players"
assert all(cuts[w][0] != cuts[w][1] == cuts[w][2] for w in ("displays", "disliked")), \
    "on displays and disliked BPE alone differs"
assert cuts["redisplay"][0] == cuts["redisplay"][1] != cuts["redisplay"][2], \
    "on redisplay Unigram alone differs"
rank = merged.index  # a merge's place in the learned order
assert rank("plays") < rank("display") and rank("ed") < rank("dislike"), \
    "the merges that make plays and ed come before those that make display and dislike"
assert score(table["redisplay"][2]) > score(table["redisplay"][0]), \
    "r + e + display is more probable than red + i + s + play"
