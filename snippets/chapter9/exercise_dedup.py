from collections import Counter

from netcl_lite import capstone, corpus

d = capstone.data()
for bound in (20, 8):
    kept, dropped = corpus.drop_repeated_lines(d.held_out_text, d.train_text, bound)
    size = sum(len(line.encode("utf-8")) for line in dropped)
    print(f"lines of >= {bound:2d} characters: {len(dropped):4d} dropped, {size:,} bytes")
_, at_20 = corpus.drop_repeated_lines(d.held_out_text, d.train_text, 20)
_, at_8 = corpus.drop_repeated_lines(d.held_out_text, d.train_text, 8)
new = Counter(line.strip() for line in at_8) - Counter(line.strip() for line in at_20)
print("most common of the newly dropped:", [line for line, _ in new.most_common(5)])
