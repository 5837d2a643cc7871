# --8<-- [start:algorithm]
from collections import Counter
import regex  # GPT-4's split pattern needs \p{L} and \p{N}: the `regex` package

def merge(parts, a, b):                         # every a b, left to right, as one token
    out, k = [], 0
    while k < len(parts):
        pair = tuple(parts[k:k + 2]) == (a, b)
        out, k = out + [a + b if pair else parts[k]], k + 1 + pair
    return out

def train(text, vocab_size, pattern, min_frequency=2):
    """Byte-level BPE: returns ranks {token bytes: id}; ids 0..255 are the bytes."""
    ranks = {bytes([b]): b for b in range(256)}
    chunks = Counter(tuple(bytes([b]) for b in c.encode())
                     for c in regex.findall(pattern, text))
    while len(ranks) < vocab_size:
        pairs = Counter()                       # pair -> occurrences, over all chunks
        for chunk, n in chunks.items():
            for pair in zip(chunk, chunk[1:]):
                pairs[pair] += n
        fresh = [p for p in pairs if p[0] + p[1] not in ranks]
        best = min(fresh, key=lambda p: (-pairs[p], p), default=None)  # ties: bytes
        if best is None or pairs[best] < min_frequency:
            break
        ranks[best[0] + best[1]] = len(ranks)
        chunks = Counter({tuple(merge(c, *best)): n for c, n in chunks.items()})
    return ranks

def encode(text, ranks, pattern):  # per chunk: merge the lowest-ranked pair, repeat
    ids = []
    for chunk in regex.findall(pattern, text):
        parts = [bytes([b]) for b in chunk.encode()]
        while len(parts) > 1:
            k = min(range(len(parts) - 1),
                    key=lambda k: ranks.get(parts[k] + parts[k + 1], len(ranks)))
            if parts[k] + parts[k + 1] not in ranks:
                break                           # no adjacent pair is a token
            parts[k:k + 2] = [parts[k] + parts[k + 1]]
        ids += [ranks[p] for p in parts]
    return ids
# --8<-- [end:algorithm]


# The same text, vocabulary size and pattern in netcl_lite's tokenizer.
from netcl_lite.text import GPT4_PATTERN, BPETokenizer  # noqa: E402

corpus = ("the transformer transforms tokens. a transformer attends to tokens; "
          "tokens attend to tokens 12345 times. hahah ha! ") * 8
vocab_size = 256 + 40  # the 256 bytes and up to 40 merges
ranks = train(corpus, vocab_size, GPT4_PATTERN)
tok = BPETokenizer(pattern=GPT4_PATTERN)
tok.train_from_iterator([corpus], vocab_size=vocab_size)
library = {tok.vocab[i]: i for i in range(len(tok.vocab))}
print(f"{len(ranks) - 256} merges; first five:",
      [t for t, i in sorted(ranks.items(), key=lambda kv: kv[1])][256:261])
print("same merges, same ids:", ranks == library)
counts = Counter(count for _, count in tok.train_from_iterator([corpus], vocab_size))
print("merges learned at the same count (the tie rule orders them):",
      {c: n for c, n in sorted(counts.items()) if n > 1})
assert sum(n for n in counts.values() if n > 1) > (len(ranks) - 256) / 2, \
    "most merges share their count with another merge"

sample = "the transformers attend to 1234567 unseen tokens 🙂"
ids = encode(sample, ranks, GPT4_PATTERN)
print(f"{len(ids)} ids; same as BPETokenizer.encode: {ids == tok.encode(sample)}")
assert ranks == library and ids == tok.encode(sample)
