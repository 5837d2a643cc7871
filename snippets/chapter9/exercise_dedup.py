from collections import Counter

from netcl_lite import capstone, corpus

d = capstone.data()
held = corpus.join(d.validation_documents)
bound = capstone.DEDUP_MIN_CHARS
found = {}
for b in (bound, 8):
    _, found[b] = corpus.drop_repeated_lines(held, d.train_text, b)
    size = sum(len(line.encode("utf-8")) for line in found[b])
    print(f"lines of >= {b:2d} characters: {len(found[b]):4d} dropped, {size:,} bytes")
lines = Counter(line.strip() for line in found[8])
new = lines - Counter(line.strip() for line in found[bound])
top = [line for line, _ in new.most_common(5)]
print("most common of the newly dropped:", top)
assert all(line.endswith((":", ".")) for line in top), \
    "the most common are headings or ends of sentences"
